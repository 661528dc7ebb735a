"""Karpenter AWS's instance provider (aws `pkg/providers/instance/`), in three files:

- `launch.py`: the launch filters, the capacity type and the CreateFleet overrides for one
  NodeClaim (`instance.go: filterInstanceTypes`, `filter/filter.go`), and `fleet_pick`;
- `launchtable.py`: the instance types as numpy arrays, so those filters run as array operations;
- `provider.py`: the `InstanceProvider`: the CreateFleet request, the launch template, subnets,
  and EC2 instances to NodeClaims (`instance.go`).
"""
