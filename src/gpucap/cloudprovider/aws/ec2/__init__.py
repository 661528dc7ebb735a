"""The EC2 API seam: `api.py` (the `EC2API` protocol the AWS provider talks to, boto3-shaped)
and `boto.py` (real AWS through boto3, the only module that imports it). The simulated account,
in memory over the catalog on the simulator's clock, is `cloudprovider/aws/simulated/ec2.py`
(`SimulatedEC2`), apart as Karpenter AWS's `pkg/fake/` is. The CloudProvider contract runs the
AWS provider over the simulated API and over moto through the boto one
(`tests/cloudprovider/test_contract.py`, `test_contract_moto.py`).
"""
