"""The EC2 API seam and its implementations, together (review-2026-12-b §3.4): `api.py` (the
`EC2API` protocol the AWS provider talks to, boto3-shaped), `simulated.py` (`SimulatedEC2`,
in memory over the catalog, on the simulator's clock) and `boto.py` (real AWS through boto3,
the only module that imports it). The CloudProvider contract runs the AWS provider over the
simulated API and over moto through the boto one (`tests/cloudprovider/test_contract.py`,
`test_contract_moto.py`).
"""
