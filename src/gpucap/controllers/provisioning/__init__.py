"""Provisioning: Karpenter's provisioner over the CloudProvider seam, its batch window, and the
provisioning loop `plan` runs.

- `provisioner.py`: `Provisioner(cloud_provider, options=...)`: `schedule(...)` asks the provider
  for each Ready NodePool's instance types and solves; `node_claims(results)` gives the
  NodeClaims `CloudProvider.create` takes. `plan` and the simulator share it.
- `batcher.py`: the batch window (idle 1 s, at most 10 s), driven by the simulator's clock.
- `loop.py`: `plan`'s passes (static NodeClaims, in-flight NodeClaims, launch preview).

`plan` itself, which assembles the AWS provider stack over these, is `gpucap.operator.plan`.
"""

from gpucap.controllers.provisioning.batcher import Batcher
from gpucap.controllers.provisioning.loop import DEFAULT_MAX_PASSES, Plan, PlannedNodeClaim
from gpucap.controllers.provisioning.provisioner import Provisioner, to_node_claim

__all__ = [
    "DEFAULT_MAX_PASSES",
    "Batcher",
    "Plan",
    "PlannedNodeClaim",
    "Provisioner",
    "to_node_claim",
]
