"""The AWS cloud provider: EC2 instance types as Karpenter's AWS provider sees them.

`capacity.py` is Karpenter's capacity model (every constant, every formula); `catalog.py` turns
the bundled instance-type data (or a user `--catalog` file) plus prices and zone offerings into
`InstanceType` values for one region and one EC2NodeClass. Both are pure.
"""
