"""Which nodes a disruption method may consider, and what each would cost to disrupt
(kubernetes-sigs/karpenter @ 2266468104f3: `pkg/controllers/disruption/helpers.go:
GetCandidatesWithTotals`, `types.go: NewCandidate`, `pkg/controllers/state/statenode.go:
ValidateNodeDisruptable` / `ValidatePodsDisruptable`, `pkg/utils/disruption/disruption.go:
IsUnderConsolidateAfter`, `balanced.go: computeNodePoolTotals`).

A NodeClaim is a candidate when, in this order:
- it is not in a command the orchestration queue is carrying out;
- it has a Node, the Node is initialized (`karpenter.sh/initialized=true`), neither is being
  deleted (deletionTimestamp, `Cluster.mark_for_deletion`, or InstanceTerminating), no pod is
  nominated to it, the Node is not annotated `karpenter.sh/do-not-disrupt: "true"`, and it
  carries `karpenter.sh/nodepool`;
- its NodePool exists and the cloud provider offers it instance types;
- no active pod on it has an active do-not-disrupt annotation (for the eventual class, drift,
  this is waived when the NodeClaim has a terminationGracePeriod).
Its price is the first offering of its instance type in its zone and capacity type (0 when
unknown, as `resolveNodePrice`); its reschedulable pods are `pods.is_reschedulable`; its
disruption cost is the eviction cost of all its pods times the lifetime remaining.

`consolidatable` is Karpenter's `Consolidatable` condition, derived instead of stored: the
NodePool's consolidateAfter is not `Never`, the NodeClaim is Initialized, and consolidateAfter
has passed since `status.lastPodEventTime` (or, without one, since Initialized turned True).

Not modelled: PodDisruptionBudgets in candidate selection (`CanEvictPods`; the drain honours
them, `controllers/termination.py`), CapacityBuffer pods. Called by the methods and the
controller (`controller.py`) once per method per pass, and again by validation.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis.core import Node, Pod
from gpucap.apis.duration import parse_karpenter_duration
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, ZONE
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.disruption.pods import (
    DO_NOT_DISRUPT,
    do_not_disrupt_active,
    eviction_cost,
    is_reschedulable,
    lifetime_remaining,
)
from gpucap.controllers.disruption.types import (
    EVENTUAL,
    PER_NODE_BASE_DISRUPTION_COST,
    Candidate,
    PoolTotals,
)
from gpucap.controllers.nodeclaim.conditions import INITIALIZED, INSTANCE_TERMINATING, condition
from gpucap.runtime.memo import IdentityMemo
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.solver import StateNode
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot

__all__ = [
    "DRIFTED",
    "consolidatable",
    "consolidate_after",
    "consolidate_after_start",
    "drifted_reason",
    "get_candidates",
    "node_price",
    "under_consolidate_after",
]

DRIFTED = "Drifted"


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def consolidate_after_start(claim: NodeClaim) -> dt.datetime | None:
    """Where consolidateAfter counts from: the NodeClaim's last pod event, else when it became
    Initialized; None while it is not Initialized. Memoised per NodeClaim object (frozen):
    every pass asks for every candidate, and again per held-back node."""
    return _START(claim)


def _consolidate_after_start(claim: NodeClaim) -> dt.datetime | None:
    init = condition(claim, INITIALIZED)
    if init is None or init.status != "True":
        return None
    return _when(claim.status.last_pod_event_time) or _when(init.last_transition_time)


def under_consolidate_after(claim: NodeClaim, nodepool: NodePool | None, now: dt.datetime) -> bool:
    """`IsUnderConsolidateAfter`: consolidateAfter is set and non-zero, the NodeClaim is
    Initialized, and less than consolidateAfter has passed since its last pod event (or its
    initialization)."""
    if nodepool is None:
        return False
    after = consolidate_after(nodepool)
    if not after:
        return False
    start = consolidate_after_start(claim)
    if start is None:
        return False
    return (now - start).total_seconds() < after


def consolidatable(claim: NodeClaim, nodepool: NodePool, now: dt.datetime) -> bool:
    """Karpenter's `Consolidatable=True` (see the module docstring)."""
    if consolidate_after(nodepool) is None:
        return False
    init = condition(claim, INITIALIZED)
    if init is None or init.status != "True":
        return False
    return not under_consolidate_after(claim, nodepool, now)


def drifted_reason(claim: NodeClaim) -> str:
    """The Drifted condition's reason when it is True, else "" (memoised per NodeClaim
    object, as `consolidate_after_start`)."""
    return _DRIFTED(claim)


def _drifted_reason(claim: NodeClaim) -> str:
    c = condition(claim, DRIFTED)
    if c is None or c.status != "True":
        return ""
    return c.reason or DRIFTED


_START: IdentityMemo[NodeClaim, dt.datetime | None] = IdentityMemo(
    _consolidate_after_start, size=4096
)
_DRIFTED: IdentityMemo[NodeClaim, str] = IdentityMemo(_drifted_reason, size=4096)


def node_price(instance_type: InstanceType | None, zone: str, capacity_type: str) -> float:
    """`resolveNodePrice`: the first offering in the node's zone and capacity type, available
    or not; 0 when there is none or its price is NaN."""
    if instance_type is None:
        return 0.0
    for o in instance_type.offerings:
        if o.zone == zone and o.capacity_type == capacity_type:
            return 0.0 if o.price != o.price else o.price
    return 0.0


def _node_of(cluster: Cluster, claim: NodeClaim, by_provider_id: Mapping[str, Node]) -> Node | None:
    node = by_provider_id.get(claim.status.provider_id or "")
    if node is not None:
        return node
    return cluster.node(claim.status.node_name) if claim.status.node_name else None


@functools.lru_cache(maxsize=256)
def _seconds(text: str) -> int | None:
    return parse_karpenter_duration(text)


def consolidate_after(nodepool: NodePool) -> int | None:
    """The NodePool's consolidateAfter in seconds (None: Never), parsed once per value."""
    return _seconds(nodepool.spec.disruption.consolidate_after)


def _terminating(claim: NodeClaim) -> bool:
    terminating = condition(claim, INSTANCE_TERMINATING)
    return terminating is not None and terminating.status == "True"


_TERMINATING: IdentityMemo[NodeClaim, bool] = IdentityMemo(_terminating, size=4096)


def _deleting(claim: NodeClaim, node: Node, marked: set[str]) -> bool:
    return (
        claim.metadata.deletion_timestamp is not None
        or node.metadata.deletion_timestamp is not None
        or claim.name in marked
        or node.metadata.name in marked
        or _TERMINATING(claim)
    )


@dataclass(frozen=True, slots=True)
class _OnNode:
    """What candidate selection reads of a state node's pods, computed once per (frozen)
    `StateNode` object: its bound pods, the reschedulable ones, the eviction cost sums (in
    the order the per-pass sums took) and the pods carrying a do-not-disrupt annotation (the
    only ones `do_not_disrupt_active` can find active, whatever the time)."""

    pods: tuple[Pod, ...]
    reschedulable: tuple[Pod, ...]
    eviction: float  # sum of eviction_cost over pods
    reschedule: float  # sum of max(0, eviction_cost) over the reschedulable pods
    annotated: tuple[Pod, ...]


def _on_node(state: StateNode) -> _OnNode:
    pods = tuple(p for p in state.pods if p.spec.node_name == state.name)
    return _OnNode(
        pods,
        tuple(p for p in pods if is_reschedulable(p)),
        sum(eviction_cost(p) for p in pods),
        sum(max(0.0, eviction_cost(p)) for p in pods if is_reschedulable(p)),
        tuple(p for p in pods if DO_NOT_DISRUPT in p.metadata.annotations),
    )


_ON_NODE: IdentityMemo[StateNode, _OnNode] = IdentityMemo(_on_node, size=4096)


def _by_name(offered: Sequence[InstanceType]) -> dict[str, InstanceType]:
    return {it.name: it for it in offered}


# Per instance-type sequence object (the cloud provider hands the same tuple out while its
# offerings are the same); callers only read the dict.
_BY_NAME: IdentityMemo[Sequence[InstanceType], dict[str, InstanceType]] = IdentityMemo(
    _by_name, size=64
)


def get_candidates(
    cluster: Cluster,
    cloud_provider: CloudProvider,
    now: dt.datetime,
    *,
    disruption_class: str,
    in_flight: Collection[str] = (),
    snap: Snapshot | None = None,
    instance_types: Mapping[str, Sequence[InstanceType]] | None = None,
) -> tuple[list[Candidate], dict[str, PoolTotals]]:
    """Every candidate (before a method's own filter), in NodeClaim order, and the NodePool
    totals over all managed nodes. `in_flight`: NodeClaim names the queue is carrying out;
    `instance_types`: per NodePool, when the caller already asked the cloud provider."""
    snap = snap if snap is not None else cluster.snapshot()
    by_name = {n.name: n for n in snap.nodes}
    pools = {np.name: np for np in cluster.nodepools()}
    types: dict[str, dict[str, InstanceType]] = {}
    for name, np in pools.items():
        offered = (
            instance_types[name]
            if instance_types is not None and name in instance_types
            else cloud_provider.get_instance_types(np)
        )
        if offered:
            types[name] = _BY_NAME(offered)
    marked = cluster.marked_for_deletion()
    by_provider_id: dict[str, Node] = {}
    for n in cluster.nodes():
        if n.spec.provider_id:
            by_provider_id.setdefault(n.spec.provider_id, n)
    nominated = set(cluster.nominations().values())
    out: list[Candidate] = []
    cost: dict[str, float] = {}
    disruption: dict[str, float] = {}
    for claim in cluster.node_claims():
        node = _node_of(cluster, claim, by_provider_id)
        state = by_name.get(node.metadata.name) if node is not None else None
        pool_name = (state.labels if state is not None else claim.metadata.labels).get(NODEPOOL)
        on = _ON_NODE(state) if state is not None else None
        if state is not None and on is not None and pool_name is not None:
            it = types.get(pool_name, {}).get(state.labels.get(INSTANCE_TYPE, ""))
            cost[pool_name] = cost.get(pool_name, 0.0) + node_price(
                it, state.labels.get(ZONE, ""), state.labels.get(CAPACITY_TYPE, "")
            )
            disruption[pool_name] = disruption.get(pool_name, 0.0) + (
                PER_NODE_BASE_DISRUPTION_COST + on.reschedule
            )
        if claim.name in in_flight or node is None or state is None or on is None:
            continue
        candidate = _candidate(
            claim, node, state, on, pools, types, now, disruption_class, marked, nominated
        )
        if candidate is not None:
            out.append(candidate)
    totals = {
        name: PoolTotals(cost.get(name, 0.0), disruption.get(name, 0.0))
        for name in sorted({c.nodepool.name for c in out})
    }
    return out, totals


def _candidate(  # noqa: PLR0917 - the inputs of NewCandidate
    claim: NodeClaim,
    node: Node,
    state: StateNode,
    on: _OnNode,
    pools: Mapping[str, NodePool],
    types: Mapping[str, Mapping[str, InstanceType]],
    now: dt.datetime,
    disruption_class: str,
    marked: set[str],
    nominated: set[str],
) -> Candidate | None:
    if not state.initialized:
        return None
    if _deleting(claim, node, marked):
        return None
    if claim.name in nominated:
        return None
    if node.metadata.annotations.get(DO_NOT_DISRUPT) == "true":
        return None
    pool_name = state.labels.get(NODEPOOL)
    if pool_name is None:
        return None
    nodepool = pools.get(pool_name)
    if nodepool is None or pool_name not in types:
        return None
    blocked = any(do_not_disrupt_active(p, now) for p in on.annotated)
    waived = disruption_class == EVENTUAL and claim.spec.termination_grace_period is not None
    if blocked and not waived:
        return None
    instance_type = types[pool_name].get(state.labels.get(INSTANCE_TYPE, ""))
    disruption_cost = on.eviction * lifetime_remaining(claim, now)
    last = _LAST.get(claim.name)
    if (
        last is not None
        and last.node_claim is claim
        and last.node is node
        and last.state_node is state
        and last.nodepool is nodepool
        and last.instance_type is instance_type
        and last.reschedulable_pods is on.reschedulable
        and last.disruption_cost == disruption_cost
    ):
        return last  # every field the same: zone, capacity type, price and drift follow
    zone = state.labels.get(ZONE, "")
    capacity_type = state.labels.get(CAPACITY_TYPE, "")
    out = Candidate(
        node_claim=claim,
        node=node,
        state_node=state,
        nodepool=nodepool,
        instance_type=instance_type,
        capacity_type=capacity_type,
        zone=zone,
        price=node_price(instance_type, zone, capacity_type),
        reschedulable_pods=on.reschedulable,
        disruption_cost=disruption_cost,
        drifted=drifted_reason(claim),
    )
    if len(_LAST) >= _LAST_SIZE:
        _LAST.clear()
    _LAST[claim.name] = out
    return out


# NodeClaim name -> its last candidate (frozen), handed out again while every input is the
# same object and the clock-dependent disruption cost the same value: the methods then meet
# the same candidate objects pass after pass (building one sums its pods' eviction costs).
_LAST: dict[str, Candidate] = {}
_LAST_SIZE = 4096
