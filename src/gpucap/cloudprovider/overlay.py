"""NodeOverlays as a decoration of the cloud provider's answer (kubernetes-sigs/karpenter
`pkg/cloudprovider/overlay/cloudprovider.go: Decorate`, read at 2266468).

Karpenter wraps its CloudProvider: `GetInstanceTypes(nodePool)` asks the wrapped provider and
applies the overlays its NodeOverlay controller accepted (`pkg/controllers/nodeoverlay/
controller.go`: each pass lists every NodeOverlay and every NodePool, judges each overlay
against all the pools, rejects conflicts and fills an instance-type store; it runs again
whenever a NodeOverlay or a NodePool changes; the decorator reads the store). Every other call
goes to the wrapped provider unchanged: `Create` launches from the provider's own instance
types and prices.

Here `decorate(cp, overlays, nodepools)` returns that wrapper. `overlays` and `nodepools` are
each a fixed sequence or an accessor (the simulator passes the Cluster's `nodeoverlays` and
`nodepools`): the controller's pass (`evaluate`: which overlays are accepted, the conflicts, how
many types each pool's overlays change) is kept until an accessor answers with other objects
(compared by identity: a re-applied object is a new one), and then runs again over every
NodePool, so the pool asked about first, or a pool added later, does not change the verdict.
`evaluate(pools)` judges against the pools given instead (`plan` judges its Ready pools), until
the inputs change. Without `nodepools` (the form the simulator's World used), the pools judged
are those given to `evaluate` and those asked about so far, each new one judging them again.
`get_instance_types` applies the accepted overlays to what the wrapped provider answers now (so
insufficient-capacity marks on its offerings show through), reusing the result for as long as
the provider answers with the same type list; a new answer (a mark, a changed EC2NodeClass) is
overlaid again but not judged again (Karpenter's controller also re-runs on a NodeClass change;
gpucap does on the next overlay or NodePool change). The overlay semantics themselves are
`scheduling/nodeoverlay.py`'s. Karpenter applies overlays only with the `NodeOverlay` feature
gate on (off by default); gpucap applies them always and `plan` says so in a note.

Called by `plan`'s composition root and by the simulator's (`sim/world.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias, TypeVar

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

__all__ = ["OverlaidCloudProvider", "OverlayEvaluation", "Source", "decorate"]


@dataclass(frozen=True, slots=True)
class OverlayEvaluation:
    """What the NodeOverlay controller decided for a set of NodePools: the conflicts it
    rejected (in order) and, per NodePool in the order given, how many of its instance types
    the accepted overlays change."""

    conflicts: tuple[OverlayConflict, ...]
    changed: tuple[tuple[str, int], ...]


_T = TypeVar("_T")
# A fixed sequence of objects, or an accessor asked for the current ones at every use.
Source: TypeAlias = Sequence[_T] | Callable[[], Sequence[_T]]


def _accessor(source: Source[_T]) -> Callable[[], Sequence[_T]]:
    if callable(source):
        return source
    fixed = tuple(source)
    return lambda: fixed


def _same(held: tuple[object, ...], now: Sequence[object]) -> bool:
    """Whether `now` holds the very objects of `held`, in order (a fixed source answers with
    the same tuple, so that check is one comparison)."""
    return now is held or (
        len(now) == len(held) and all(x is y for x, y in zip(now, held, strict=True))
    )


class OverlaidCloudProvider:
    """A CloudProvider whose instance types carry the accepted NodeOverlays (see the module
    docstring); everything else is the wrapped provider's."""

    def __init__(
        self,
        inner: CloudProvider,
        overlays: Source[NodeOverlay],
        nodepools: Source[NodePool] | None = None,
    ) -> None:
        self.inner = inner
        self._overlays = _accessor(overlays)
        # Without a source of NodePools (the call form the simulator's World had), the pools
        # judged are those asked about so far: each new one makes the pass run again.
        self._seen: dict[str, NodePool] | None = None if nodepools is not None else {}
        self._seen_pools: tuple[NodePool, ...] = ()
        self._nodepools = _accessor(nodepools) if nodepools is not None else self._asked
        # The overlays and NodePools the accepted overlays and the store were judged from.
        self._inputs: tuple[tuple[NodeOverlay, ...], tuple[NodePool, ...]] | None = None
        self._accepted: tuple[NodeOverlay, ...] = ()
        # NodePool name -> (the provider's types it was computed from, the overlaid types)
        self._store: dict[str, tuple[Sequence[InstanceType], tuple[InstanceType, ...]]] = {}

    def _asked(self) -> tuple[NodePool, ...]:
        return self._seen_pools

    def _ask(self, nodepool: NodePool) -> None:
        assert self._seen is not None
        if self._seen.get(nodepool.name) is not nodepool:
            self._seen[nodepool.name] = nodepool
            self._seen_pools = tuple(self._seen.values())

    @property
    def overlays(self) -> tuple[NodeOverlay, ...]:
        """The NodeOverlays as the source answers now."""
        return tuple(self._overlays())

    def evaluate(self, nodepools: Sequence[NodePool] | None = None) -> OverlayEvaluation:
        """The NodeOverlay controller's pass: validate the overlays against `nodepools` (by
        default every NodePool of the source; a conflict is rejected everywhere) and fill the
        store with each pool's overlaid types. The verdict stands until the overlays or the
        NodePools the sources answer with change."""
        if self._seen is not None and nodepools is not None:
            self._seen = {np.name: np for np in nodepools}
            self._seen_pools = tuple(self._seen.values())
        overlays, pools = tuple(self._overlays()), tuple(self._nodepools())
        self._inputs = (overlays, pools)
        return self._judge(overlays, pools if nodepools is None else nodepools)

    def _judge(
        self, overlays: Sequence[NodeOverlay], nodepools: Sequence[NodePool]
    ) -> OverlayEvaluation:
        inner = [(np, self.inner.get_instance_types(np)) for np in nodepools]
        views = [PoolTypes(np.name, np.spec.template.metadata.labels, ts) for np, ts in inner]
        accepted, conflicts = evaluate_overlays(overlays, views)
        self._accepted = tuple(accepted)
        self._store.clear()
        changed = []
        for (np, types), (overlaid, n) in zip(inner, apply_overlays(accepted, views), strict=True):
            self._store[np.name] = (types, overlaid)
            changed.append((np.name, n))
        return OverlayEvaluation(tuple(conflicts), tuple(changed))

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        types = self.inner.get_instance_types(nodepool)
        overlays = self._overlays()
        if not overlays:
            return types
        if self._seen is not None:
            self._ask(nodepool)
        # On the hot path (every provisioning pass and consolidation simulation asks for every
        # pool): the controller's pass runs again only when the sources answer with other
        # objects; otherwise this is two accessor calls and an identity check.
        pools = self._nodepools()
        held = self._inputs
        if held is None or not (_same(held[0], overlays) and _same(held[1], pools)):
            self.evaluate()
        stored = self._store.get(nodepool.name)
        if stored is not None and stored[0] is types:
            return stored[1]
        # The provider answers anew (a mark, a changed node class), or a pool the pass did not
        # judge: the accepted overlays applied to this answer.
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


def decorate(
    cp: CloudProvider,
    overlays: Source[NodeOverlay],
    nodepools: Source[NodePool] | None = None,
) -> OverlaidCloudProvider:
    """`cp` with `overlays` applied to its instance types, judged against every NodePool of
    `nodepools` (Karpenter's `overlay.Decorate` with its NodeOverlay controller); each a fixed
    sequence or an accessor (see the module docstring). Without `nodepools`, the pools judged
    are those given to `evaluate` and those asked about so far."""
    return OverlaidCloudProvider(cp, overlays, nodepools)
