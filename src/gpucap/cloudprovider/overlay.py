"""NodeOverlays as a decoration of the cloud provider's answer (kubernetes-sigs/karpenter
`pkg/cloudprovider/overlay/cloudprovider.go: Decorate`, read at 2266468).

Karpenter wraps its CloudProvider: `GetInstanceTypes(nodePool)` asks the wrapped provider and
applies the overlays its NodeOverlay controller accepted (`pkg/controllers/nodeoverlay/`: the
controller validates every overlay against every NodePool, rejects conflicts and fills an
instance-type store; the decorator reads the store). Every other call goes to the wrapped
provider unchanged: `Create` launches from the provider's own instance types and prices.

Here `decorate(cp, overlays)` returns that wrapper. `evaluate(nodepools)` is the controller's
pass (which overlays are accepted, the conflicts, how many types each pool's overlays change);
`get_instance_types` applies the accepted overlays to what the wrapped provider answers now (so
insufficient-capacity marks on its offerings show through), reusing the result for as long as
the provider answers with the same type list. The overlay semantics themselves are
`scheduling/nodeoverlay.py`'s. Karpenter applies overlays only with the `NodeOverlay` feature
gate on (off by default); gpucap applies them always and `plan` says so in a note.

Called by `plan`'s composition root and by the simulator's (`sim/world.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.types import CloudProvider
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeoverlay import (
    OverlayConflict,
    PoolTypes,
    apply_overlays,
    evaluate_overlays,
)

__all__ = ["OverlaidCloudProvider", "OverlayEvaluation", "decorate"]


@dataclass(frozen=True, slots=True)
class OverlayEvaluation:
    """What the NodeOverlay controller decided for a set of NodePools: the conflicts it
    rejected (in order) and, per NodePool in the order given, how many of its instance types
    the accepted overlays change."""

    conflicts: tuple[OverlayConflict, ...]
    changed: tuple[tuple[str, int], ...]


class OverlaidCloudProvider:
    """A CloudProvider whose instance types carry the accepted NodeOverlays (see the module
    docstring); everything else is the wrapped provider's."""

    def __init__(self, inner: CloudProvider, overlays: Sequence[NodeOverlay]) -> None:
        self.inner = inner
        self.overlays = tuple(overlays)
        self._accepted: tuple[NodeOverlay, ...] | None = None
        # NodePool name -> (the provider's types it was computed from, the overlaid types)
        self._store: dict[str, tuple[Sequence[InstanceType], tuple[InstanceType, ...]]] = {}

    def evaluate(self, nodepools: Sequence[NodePool]) -> OverlayEvaluation:
        """Validate the overlays against `nodepools` (conflicts are rejected everywhere) and
        fill the store with each pool's overlaid types."""
        inner = [(np, self.inner.get_instance_types(np)) for np in nodepools]
        views = [PoolTypes(np.name, np.spec.template.metadata.labels, ts) for np, ts in inner]
        accepted, conflicts = evaluate_overlays(self.overlays, views)
        self._accepted = tuple(accepted)
        self._store.clear()
        changed = []
        for (np, types), (overlaid, n) in zip(inner, apply_overlays(accepted, views), strict=True):
            self._store[np.name] = (types, overlaid)
            changed.append((np.name, n))
        return OverlayEvaluation(tuple(conflicts), tuple(changed))

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        types = self.inner.get_instance_types(nodepool)
        if not self.overlays:
            return types
        stored = self._store.get(nodepool.name)
        if stored is not None and stored[0] is types:
            return stored[1]
        if self._accepted is None:
            self.evaluate([nodepool])
            return self._store[nodepool.name][1]
        view = PoolTypes(nodepool.name, nodepool.spec.template.metadata.labels, types)
        overlaid, _ = apply_overlays(self._accepted, [view])[0]
        self._store[nodepool.name] = (types, overlaid)
        return overlaid

    def create(self, node_claim: NodeClaim) -> NodeClaim:
        return self.inner.create(node_claim)

    def delete(self, node_claim: NodeClaim) -> None:
        self.inner.delete(node_claim)

    def get(self, provider_id: str) -> NodeClaim:
        return self.inner.get(provider_id)

    def list(self) -> list[NodeClaim]:
        return self.inner.list()

    def is_drifted(self, node_claim: NodeClaim) -> str:
        return self.inner.is_drifted(node_claim)

    def name(self) -> str:
        return self.inner.name()


def decorate(cp: CloudProvider, overlays: Sequence[NodeOverlay]) -> OverlaidCloudProvider:
    """`cp` with `overlays` applied to its instance types (Karpenter's `overlay.Decorate`)."""
    return OverlaidCloudProvider(cp, overlays)
