"""Karpenter AWS's instance provider (aws `pkg/providers/instance/`), in four files:

- `filters.py`: the launch filters as named steps, each with its kept and rejected types
  (`filter/filter.go`), one type at a time: the reference;
- `launch.py`: the launch decision for one NodeClaim on tables (the filters, the capacity type,
  the CreateFleet overrides; `instance.go: filterInstanceTypes`), its `LaunchTrace`, and
  `fleet_pick`;
- `launchtable.py`: the instance types as numpy arrays, so those filters run as array operations;
- `provider.py`: the `InstanceProvider`: the CreateFleet request, the launch template, subnets,
  and EC2 instances to NodeClaims (`instance.go`).
"""
