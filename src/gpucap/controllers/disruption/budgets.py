"""NodePool disruption budgets: how many of a pool's nodes the disruption controller may
disrupt right now, for one reason (kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go`:
`Budget.GetAllowedDisruptions`, `Budget.IsActive`, `NodePool.GetAllowedDisruptionsByReason`,
`MustGetAllowedDisruptions`; `pkg/controllers/disruption/helpers.go:
BuildDisruptionBudgetMapping`).

- A budget applies to a reason when it lists it, or lists none.
- A budget without `schedule` and `duration` is always active; otherwise it is active while
  some hit `h` of the UTC cron schedule satisfies `now - duration < h <= now` (robfig/cron's
  `Next(now - duration) <= now`). An inactive budget sets no limit.
- An active budget allows its `nodes`: a count taken literally (not capped by the pool's size),
  or a percentage rounded **up** (`ceil(total x pct / 100)`: 10% of 1..10 nodes is 1, of 11 is
  2; 0% is 0; any percentage of 0 nodes is 0).
- The pool's allowance for a reason is the minimum over the budgets that apply (unlimited when
  none does). A budget Karpenter cannot read (bad cron, bad duration, bad `nodes`, schedule
  without duration or the reverse) fails closed: the whole pool then allows 0, for every
  reason, even when that budget does not apply to the reason.
- `budget_mapping` counts a pool's managed, initialized nodes whose instance is not already
  terminating; those NotReady or marked for deletion (any cause: a command, expiration,
  interruption, a manual delete) are already disrupting and use up the allowance; the result
  never goes below 0.

Called by the disruption methods (emptiness, drift, consolidation) once per pass, for the
method's reason; the controller counts the nodes once per pass (`pool_counts`) for every
reason. Expiration, interruption and manual deletion never consult it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from gpucap.apis.core import Node
from gpucap.apis.cron import CronError, parse_cron
from gpucap.apis.duration import DurationError, parse_go_duration_ns
from gpucap.apis.goparse import atoi
from gpucap.apis.labels import NODEPOOL
from gpucap.apis.nodepool import Budget, NodeClaim, NodePool
from gpucap.controllers.nodeclaim.conditions import INSTANCE_TERMINATING, is_true
from gpucap.runtime.memo import IdentityMemo
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot

__all__ = [
    "UNLIMITED",
    "BudgetError",
    "PoolCounts",
    "allowed_disruptions",
    "budget_allows",
    "budget_is_active",
    "budget_mapping",
    "pool_allowance",
    "pool_counts",
]

# math.MaxInt32: what Karpenter returns for "no limit" (an inactive budget, no budget at all).
UNLIMITED = 2**31 - 1


class BudgetError(ValueError):
    """A budget Karpenter could not evaluate (it then fails closed)."""


def budget_is_active(budget: Budget, now: dt.datetime) -> bool:
    """Karpenter's `Budget.IsActive`: always without schedule and duration; else whether a
    schedule hit lies in (now - duration, now]. Raises `BudgetError` where Karpenter errors."""
    if budget.schedule is None and budget.duration is None:
        return True
    if budget.schedule is None:
        # Karpenter parses "TZ=UTC " + "" and the parser rejects the empty spec.
        raise BudgetError("duration without schedule")
    try:
        schedule = parse_cron(budget.schedule)
    except CronError as err:
        raise BudgetError(f"schedule: {err}") from err
    window_ns = 0
    if budget.duration is not None:
        try:
            window_ns = parse_go_duration_ns(budget.duration)
        except DurationError as err:
            raise BudgetError(f"duration: {err}") from err
    if window_ns <= 0:
        # cron.Next(now) is strictly after now: a zero window is never active.
        return False
    window = dt.timedelta(microseconds=window_ns // 1000)
    return schedule.last_hit_at_or_before(now, window) is not None


def budget_allows(budget: Budget, total_nodes: int, now: dt.datetime) -> int:
    """Karpenter's `Budget.GetAllowedDisruptions`: `UNLIMITED` while inactive, else `nodes`
    as a count or a percentage of `total_nodes` rounded up. Raises `BudgetError` on what
    Karpenter cannot read."""
    if not budget_is_active(budget, now):
        return UNLIMITED
    nodes = budget.nodes
    count = atoi(nodes)
    if count is not None:
        return count
    pct = atoi(nodes[:-1]) if nodes.endswith("%") else None
    if pct is None:
        raise BudgetError(f"nodes: {nodes!r} is neither a count nor a percentage")
    # intstr.GetScaledValueFromIntOrPercent(..., roundUp=true): ceil(pct x total / 100).
    return -(-pct * total_nodes // 100)


def pool_allowance(nodepool: NodePool, reason: str, *, now: dt.datetime, total_nodes: int) -> int:
    """Karpenter's `MustGetAllowedDisruptions`: the minimum over the budgets that apply to
    `reason` (`UNLIMITED` when none does), or 0 when any budget of the pool is unreadable."""
    allowed = UNLIMITED
    for budget in nodepool.spec.disruption.budgets:
        try:
            value = budget_allows(budget, total_nodes, now)
        except BudgetError:
            return 0
        if budget.reasons is None or reason in budget.reasons:
            allowed = min(allowed, value)
    return allowed


def allowed_disruptions(
    nodepool: NodePool, reason: str, *, now: dt.datetime, total_nodes: int, disrupting: int
) -> int:
    """How many more of `nodepool`'s nodes may be disrupted for `reason` now: the pool's
    allowance for `total_nodes` nodes less the `disrupting` ones, never below 0."""
    allowance = pool_allowance(nodepool, reason, now=now, total_nodes=total_nodes)
    return max(allowance - disrupting, 0)


@dataclass(frozen=True, slots=True)
class PoolCounts:
    """Per NodePool name: its managed, initialized nodes whose instance is not terminating
    (`totals`), and how many of them are NotReady or being deleted (`disrupting`). What
    `budget_mapping` counts; the same for every reason, so a pass counts once."""

    totals: Mapping[str, int]
    disrupting: Mapping[str, int]


def _node_facts(node: Node) -> bool:
    return node.is_ready


def _claim_facts(claim: NodeClaim) -> tuple[bool, bool]:
    """(instance terminating, deletionTimestamp set)."""
    return is_true(claim, INSTANCE_TERMINATING), claim.metadata.deletion_timestamp is not None


# Per Node / NodeClaim object (frozen: an update is a new object); a pass reads every node.
_READY: IdentityMemo[Node, bool] = IdentityMemo(_node_facts, size=4096)
_CLAIM: IdentityMemo[NodeClaim, tuple[bool, bool]] = IdentityMemo(_claim_facts, size=4096)


def pool_counts(cluster: Cluster, snap: Snapshot | None = None) -> PoolCounts:
    """What `budget_mapping` counts per NodePool (see `PoolCounts` and the module
    docstring), over `snap` (the cluster's snapshot when the caller has it). The last count
    is handed out again while the snapshot is the same object and still the cluster's: it
    reads nothing else (the same snapshot means the same Nodes, NodeClaims and marks) and no
    clock. Read-only to callers."""
    current = cluster.snapshot() if snap is None else None
    snap = snap if snap is not None else current
    assert snap is not None
    last = _LAST_COUNT.get(id(cluster))
    if (
        last is not None
        and last[0] is cluster
        and last[1] is snap
        and (current is not None or cluster.snapshot() is snap)
    ):
        return last[2]
    counts = _count(cluster, snap)
    if len(_LAST_COUNT) >= _LAST_COUNT_SIZE:
        _LAST_COUNT.clear()
    _LAST_COUNT[id(cluster)] = (cluster, snap, counts)
    return counts


# Per cluster (by id; each entry holds its cluster, so the id is not reused while it lives):
# its last snapshot and that snapshot's count. A disruption pass whose cluster did not change
# since the last one, and validation 15 s later, count the same nodes again.
_LAST_COUNT: dict[int, tuple[Cluster, Snapshot, PoolCounts]] = {}
_LAST_COUNT_SIZE = 16


def _count(cluster: Cluster, snap: Snapshot) -> PoolCounts:
    """`pool_counts` walking the snapshot's nodes."""
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    marked = cluster.marked_for_deletion()
    for sn in snap.nodes:
        if not sn.managed or not sn.initialized:
            continue
        node = cluster.node(sn.name)
        claim: NodeClaim | None = (
            cluster.node_claim_for_node(node) if node is not None else cluster.node_claim(sn.name)
        )
        terminating, claim_deleted = _CLAIM.lookup(claim) if claim is not None else (False, False)
        if terminating:
            continue
        pool = sn.labels.get(NODEPOOL, "")
        totals[pool] = totals.get(pool, 0) + 1
        ready = node is not None and _READY.lookup(node)
        deleting = (
            sn.marked_for_deletion
            or sn.name in marked
            or claim_deleted
            or (claim is not None and claim.name in marked)
            or (claim is None and node is not None and node.metadata.deletion_timestamp is not None)
        )
        if not ready or deleting:
            disrupting[pool] = disrupting.get(pool, 0) + 1
    return PoolCounts(totals, disrupting)


def budget_mapping(
    cluster: Cluster,
    reason: str,
    *,
    now: dt.datetime,
    snap: Snapshot | None = None,
    counts: PoolCounts | None = None,
) -> dict[str, int]:
    """Karpenter's `BuildDisruptionBudgetMapping`: NodePool name -> nodes still allowed to be
    disrupted for `reason`, for every applied NodePool (see the module docstring); `snap`: the
    cluster's snapshot when the caller (the controller's pass) has it; `counts`: its
    `pool_counts`, when the caller already counted (a pass asks for several reasons)."""
    if counts is None:
        counts = pool_counts(cluster, snap)
    return {
        pool.name: allowed_disruptions(
            pool,
            reason,
            now=now,
            total_nodes=counts.totals.get(pool.name, 0),
            disrupting=counts.disrupting.get(pool.name, 0),
        )
        for pool in cluster.nodepools()
    }
