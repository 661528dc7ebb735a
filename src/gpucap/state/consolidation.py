"""Karpenter's consolidation state: a time that moves whenever the cluster was marked
unconsolidated, and at least every 5 minutes (kubernetes-sigs/karpenter
`pkg/controllers/state/cluster.go` @ 2266468104f3: `MarkUnconsolidated`, `ConsolidationState`
and the timestamp they share, which Karpenter keeps on its `Cluster`; gpucap keeps them in this
object, one per `Cluster`, `Cluster.consolidation`).

The cluster marks it from its own mutations (`Cluster.mark_unconsolidated`: where Karpenter's
cluster state does); the disruption controller reads it once per pass (`PassMemo.current`): a
consolidation method that found nothing remembers the state and is skipped while it stays
(`IsConsolidated`). The simulator reads `resets_at` to wake a pass whose skipped methods run
again then.
"""

from __future__ import annotations

import math
from collections.abc import Set

from gpucap.apis.core import Node
from gpucap.apis.labels import INITIALIZED
from gpucap.apis.nodepool import NodeClaim

__all__ = ["CONSOLIDATION_STATE_RESET_S", "ConsolidationState", "same_view", "state_node_view"]

# The NodeClaim condition `controllers/nodeclaim/conditions.py` names INSTANCE_TERMINATING (a
# controller's module, which this layer does not import).
_INSTANCE_TERMINATING = "InstanceTerminating"

# pkg/controllers/state/cluster.go `ConsolidationState`: the state moves at least this often.
CONSOLIDATION_STATE_RESET_S = 300.0


class ConsolidationState:
    """The consolidation state of one cluster (see the module docstring)."""

    __slots__ = ("_at", "_marks", "_seen")

    def __init__(self) -> None:
        # How many times the cluster was marked unconsolidated.
        self._marks = 0
        # What `state` last returned, and the count of marks it had seen.
        self._seen = -1
        self._at = -math.inf

    def mark(self) -> None:
        """`MarkUnconsolidated`: something changed that may let consolidation act."""
        self._marks += 1

    @property
    def version(self) -> int:
        """How many times the cluster was marked unconsolidated; read by tests."""
        return self._marks

    def state(self, now: float) -> float:
        """`ConsolidationState`: a time (clock seconds) that moves whenever the cluster was
        marked since the last call, and at least every `CONSOLIDATION_STATE_RESET_S`, so that
        what the cluster cannot see (an offering available again) is looked at now and then.
        `now` is the caller's clock (the disruption controller's). Where Karpenter keeps the
        time of the mark, gpucap keeps the time of the first call after it: the same moves,
        the reset counted from that call (docs/design/controllers.md, "Disruption controller and
        consolidation")."""
        if self._marks != self._seen or now - self._at >= CONSOLIDATION_STATE_RESET_S:
            self._seen = self._marks
            self._at = now
        return self._at

    def resets_at(self) -> float:
        """When (clock seconds) `state` moves by itself, the cluster unchanged: 5 minutes after
        it last moved."""
        return self._at + CONSOLIDATION_STATE_RESET_S


def state_node_view(
    claim: NodeClaim | None, node: Node | None, marked: Set[str]
) -> tuple[bool, bool] | None:
    """A state node (its NodeClaim and Node, either may be missing) as Karpenter's
    `triggerConsolidationOnChange` compares it before and after a change:
    `(Initialized(), MarkedForDeletion())`, or None when there is no state node. `marked`: the
    names marked for deletion. Called by `Cluster` around each NodeClaim and Node write."""
    if claim is None and node is None:
        return None
    if claim is None:
        assert node is not None
        # StateNode.Initialized: a Node Karpenter does not manage always is.
        return True, node.metadata.name in marked or node.metadata.deletion_timestamp is not None
    initialized = node is not None and node.metadata.labels.get(INITIALIZED) == "true"
    deleting = (
        claim.name in marked
        or (node is not None and node.metadata.name in marked)
        or claim.metadata.deletion_timestamp is not None
        or _terminating(claim)
    )
    return initialized, deleting


def same_view(old: NodeClaim | Node | None, new: NodeClaim | Node) -> bool:
    """Whether writing `new` over `old` (the same NodeClaim or Node, same provider ID) leaves
    its state node's `state_node_view` as it was: none of what the view reads of it changed
    (deletion timestamp; a NodeClaim's InstanceTerminating, a Node's initialized label). The
    fast path of `Cluster`'s writes, which then skip the view before and after (the law in
    tests/state/test_consolidation_marks.py compares the marks with a scan of the objects)."""
    if old is None or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp:
        return False
    if isinstance(old, NodeClaim):
        assert isinstance(new, NodeClaim)
        same_terminating = _terminating(old) == _terminating(new)
        return old.status.provider_id == new.status.provider_id and same_terminating
    assert isinstance(new, Node)
    same_initialized = old.metadata.labels.get(INITIALIZED) == new.metadata.labels.get(INITIALIZED)
    return old.spec.provider_id == new.spec.provider_id and same_initialized


def _terminating(claim: NodeClaim) -> bool:
    return any(
        c.type == _INSTANCE_TERMINATING and c.status == "True" for c in claim.status.conditions
    )
