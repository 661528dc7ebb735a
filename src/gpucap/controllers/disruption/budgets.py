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

`blocking_budgets` names the NodePools with nodes whose budgets allow 0 for a reason (Karpenter
then publishes `NodePoolBlockedForDisruptionReason`, "No allowed disruptions for disruption
reason X due to blocking budget", from `BuildDisruptionBudgetMapping`).

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
from gpucap.runtime.memo import Memo
from gpucap.scheduling.existingnode import StateNode
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot

__all__ = [
    "UNLIMITED",
    "BudgetError",
    "PoolCounts",
    "allowed_disruptions",
    "blocking_budgets",
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


# Per Node / NodeClaim object (frozen: an update is a new object), the run's
# (`Cluster.memos`); a pass reads every node.
_READY = Memo.identity(_node_facts, size=4096)
_CLAIM = Memo.identity(_claim_facts, size=4096)


def pool_counts(cluster: Cluster, snap: Snapshot | None = None) -> PoolCounts:
    """What `budget_mapping` counts per NodePool (see `PoolCounts` and the module
    docstring), over `snap` (the cluster's snapshot when the caller has it). The last count
    is handed out again while the snapshot is the same object and still the cluster's: it
    reads nothing else (the same snapshot means the same Nodes, NodeClaims and marks) and no
    clock. A new snapshot that is the cluster's is counted from the last count's rows (see
    `_Row`): only its new state nodes are looked at. Read-only to callers."""
    current = cluster.snapshot() if snap is None else None
    snap = snap if snap is not None else current
    assert snap is not None
    kept = cluster.memos[_LAST_COUNT]
    last = kept.last
    is_current = current is not None or cluster.snapshot() is snap
    if last is not None and last[0] is snap and is_current:
        return last[1]
    if not is_current:
        # A snapshot taken before a change: its state nodes are not the cluster's objects'
        # now, so no row applies (and the cluster's count is kept).
        return _count(cluster, snap, None)[0]
    counts, rows = _count(cluster, snap, last[2] if last is not None else None)
    kept.last = (snap, counts, rows)
    return counts


# One state node's part of the count, computed from the objects (see `_row`): the state
# node, whether it looked the Node and NodeClaim up (managed and initialized), the Node and
# NodeClaim it found, its NodePool name (None: not
# counted: unmanaged, not initialized or its instance terminating), whether its Node is
# Ready, and whether it is being deleted by what it carries itself (its mark, the NodeClaim's
# or an unclaimed Node's deletionTimestamp). The cluster's marks are read per count.
_Row = tuple[StateNode, bool, Node | None, NodeClaim | None, str | None, bool, bool]


class _LastCount:
    """The cluster's last count (one per run, `Cluster.memos[_LAST_COUNT]`): its snapshot,
    that snapshot's count and rows (by the state node's id: the row holds the state node, so
    the id is not reused while it is kept). A disruption pass whose cluster did not change
    since the last one, and validation 15 s later, count the same nodes again; after a change
    most state nodes are the last snapshot's objects (`Cluster.snapshot` reuses a state node
    while its Node, NodeClaim, pods, nominations and mark are the same objects)."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple[Snapshot, PoolCounts, dict[int, _Row]] | None = None


_LAST_COUNT: Memo[_LastCount] = Memo(_LastCount)


def _row(cluster: Cluster, sn: StateNode) -> _Row:
    """A state node's row, from the cluster's objects (what `_count` always read)."""
    if not sn.managed or not sn.initialized:
        return (sn, False, None, None, None, False, False)
    node = cluster.node(sn.name)
    claim: NodeClaim | None = (
        cluster.node_claim_for_node(node) if node is not None else cluster.node_claim(sn.name)
    )
    memos = cluster.memos
    terminating, claim_deleted = (
        memos[_CLAIM].lookup(claim) if claim is not None else (False, False)
    )
    if terminating:
        return (sn, True, node, claim, None, False, False)
    ready = node is not None and memos[_READY].lookup(node)
    deleting = (
        sn.marked_for_deletion
        or claim_deleted
        or (claim is None and node is not None and node.metadata.deletion_timestamp is not None)
    )
    return (sn, True, node, claim, sn.labels.get(NODEPOOL, ""), ready, deleting)


def _count(
    cluster: Cluster, snap: Snapshot, before: dict[int, _Row] | None
) -> tuple[PoolCounts, dict[int, _Row]]:
    """`pool_counts` over the snapshot's nodes, each from its row in `before` (the last count
    of a snapshot that was the cluster's) when that row is of the same state node object and
    the Node and NodeClaim it read are still the cluster's, else from the objects (`_row`).
    `snap` must be the cluster's snapshot when `before` is given: a reused state node then
    has the same Node and the same matching NodeClaim (the snapshot builds a new one when
    either changes or the match does), which the identity checks below also confirm."""
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    marked = cluster.marked_for_deletion()
    node_named = cluster.node
    claim_named = cluster.node_claim
    rows: dict[int, _Row] = {}
    for sn in snap.nodes:
        row = before.get(id(sn)) if before is not None else None
        if (
            row is None
            or row[0] is not sn
            or (
                row[1]
                and (
                    node_named(sn.name) is not row[2]
                    or (row[3] is not None and claim_named(row[3].name) is not row[3])
                )
            )
        ):
            row = _row(cluster, sn)
        rows[id(sn)] = row
        pool = row[4]
        if pool is None:
            continue
        totals[pool] = totals.get(pool, 0) + 1
        claim = row[3]
        if (
            not row[5]
            or row[6]
            or sn.name in marked
            or (claim is not None and claim.name in marked)
        ):
            disrupting[pool] = disrupting.get(pool, 0) + 1
    return PoolCounts(totals, disrupting), rows


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


def blocking_budgets(
    cluster: Cluster, reason: str, *, now: dt.datetime, counts: PoolCounts
) -> list[str]:
    """The applied NodePools, in order, that have counted nodes (`counts`) and whose budgets
    allow none of them to be disrupted for `reason` (`BuildDisruptionBudgetMapping` publishes
    its NodePool event for these: the allowance itself is 0, before the nodes already
    disrupting are taken off)."""
    return [
        pool.name
        for pool in cluster.nodepools()
        if counts.totals.get(pool.name, 0)
        and pool_allowance(pool, reason, now=now, total_nodes=counts.totals[pool.name]) == 0
    ]
