"""The cloud-provider seam: what gpucap knows about the machines Karpenter can launch.

`aws/` holds the AWS provider: the embedded EC2 instance-type catalog and Karpenter's
capacity/allocatable model (`aws/instancetype/`). Controllers, `plan` and
`simulate` reach instance types only through this package.
"""
