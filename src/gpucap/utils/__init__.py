"""What several controllers ask of the cluster's objects, below all of them, as Karpenter keeps
it in `pkg/utils/` (kubernetes-sigs/karpenter @ 2266468104f3): the pod predicates (`pod.py`,
Karpenter's `pkg/utils/pod` and `pkg/utils/disruption`) and the PodDisruptionBudget limits
(`pdb.py`, `pkg/utils/pdb`). Provisioning, disruption and termination each import these, never
each other for them (the layers and forbidden contracts in `pyproject.toml`)."""
