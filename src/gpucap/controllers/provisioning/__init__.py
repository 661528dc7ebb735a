"""Provisioning: Karpenter's provisioner over the CloudProvider seam, its batch window, and the
provisioning loop `plan` runs.

- `provisioner.py`: `Provisioner(cloud_provider, options=...)`: `schedule(...)` asks the provider
  for each Ready NodePool's instance types and solves; `node_claims(results)` gives the
  NodeClaims `CloudProvider.create` takes. `plan` and the simulator share it.
- `batcher.py`: the batch window (idle 1 s, at most 10 s), driven by the simulator's clock.
- `loop.py`: `plan`'s passes (static NodeClaims, in-flight NodeClaims, launch preview).
- `planning.py`: `plan`'s composition root (the AWS provider stack; the one module here that
  may import `cloudprovider.aws`).
"""

from gpucap.controllers.provisioning.batcher import Batcher
from gpucap.controllers.provisioning.loop import DEFAULT_MAX_PASSES, Plan, PlannedNodeClaim
from gpucap.controllers.provisioning.planning import (
    explain_pod,
    plan,
    plan_provider,
    pools_for,
    provision,
    ready_nodepools,
)
from gpucap.controllers.provisioning.provisioner import Provisioner, to_node_claim

__all__ = [
    "DEFAULT_MAX_PASSES",
    "Batcher",
    "Plan",
    "PlannedNodeClaim",
    "Provisioner",
    "explain_pod",
    "plan",
    "plan_provider",
    "pools_for",
    "provision",
    "ready_nodepools",
    "to_node_claim",
]
