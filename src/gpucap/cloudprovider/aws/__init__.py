"""The AWS cloud provider: EC2 instance types as Karpenter's AWS provider sees them.

`instancetype/` turns the bundled instance-type data (or a user `--catalog` file) plus prices
and zone offerings into `InstanceType` values for one region and one EC2NodeClass, with
Karpenter's capacity model (`instancetype/capacity.py`: every constant, every formula). Pure.
"""
