"""Which nodes a disruption method may consider, and what each would cost to disrupt
(kubernetes-sigs/karpenter @ 2266468104f3: `pkg/controllers/disruption/helpers.go:
GetCandidatesWithTotals`, `types.go: NewCandidate`, `pkg/controllers/state/statenode.go:
ValidateNodeDisruptable` / `ValidatePodsDisruptable`, `pkg/utils/disruption/disruption.go:
IsUnderConsolidateAfter`, `balanced.go: computeNodePoolTotals`, `pkg/utils/pdb/pdb.go:
CanEvictPods`).

A NodeClaim is a candidate when, in this order:
- it is not in a command the orchestration queue is carrying out;
- it has a Node, the Node is initialized (`karpenter.sh/initialized=true`), neither is being
  deleted (deletionTimestamp, `Cluster.mark_for_deletion`, or InstanceTerminating), no pod is
  nominated to it, the Node is not annotated `karpenter.sh/do-not-disrupt: "true"`, and it
  carries `karpenter.sh/nodepool`;
- its NodePool exists and the cloud provider offers it instance types;
- its pods let it go (`ValidatePodsDisruptable`, over every pod bound to the node, DaemonSet and
  mirror pods included): none has an active do-not-disrupt annotation, and every evictable one
  may be evicted as far as its PodDisruptionBudget goes (`pdb.Limits.can_evict_pods`: no pod
  two PDBs select, none whose PDB allows no disruption now). For the eventual class, drift,
  both are waived when the NodeClaim has a terminationGracePeriod (its drain is bounded by
  it).
Every managed node held back but those in the queue is recorded with Karpenter's reason
(`Blocked`, the DisruptionBlocked event's message; `select_candidates`): `nodeclaim does not
have an associated node`, `node isn't initialized`, `node is deleting or marked for deletion`,
`node is nominated for a pending pod`, `disruption is blocked through the
"karpenter.sh/do-not-disrupt" annotation`, `node doesn't have required label`, `NodePool not
found (NodePool=...)`, and for its pods `pod has "karpenter.sh/do-not-disrupt" annotation`,
`pdb prevents pod evictions`, `eviction does not support multiple PDBs`. The node's own reasons
are kept in its row (`_Row.unfit`), the per-pass ones (marks, nominations) are set lookups.
Its price is the first offering of its instance type in its zone and capacity type (0 when
unknown, as `resolveNodePrice`); its reschedulable pods are `pods.is_reschedulable`; its
disruption cost (`disruption_cost`, asked with the time) is the eviction cost of all its pods
times the lifetime remaining.

`consolidatable` is Karpenter's `Consolidatable` condition, derived instead of stored: the
NodePool's consolidateAfter is not `Never`, the NodeClaim is Initialized, and consolidateAfter
has passed since `status.lastPodEventTime` (or, without one, since Initialized turned True).

`next_do_not_disrupt_expiry` is when a do-not-disrupt duration on a node's pod runs out next
(the simulator wakes its disruption loop then). Not modelled: CapacityBuffer pods. Called by the
controller (`controller.py`) once per disruption class per pass, and again by validation. What
does not read the clock, the queue, the marks, the nominations or the PDBs is kept per NodeClaim
from pass to pass (`_Row`, with its Candidate object); the last answer per disruption class is
handed out again while every input but the clock is the same objects (`_Selection`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis.core import Node, Pod, PodDisruptionBudget
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, ZONE
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.disruption.types import (
    EVENTUAL,
    PER_NODE_BASE_DISRUPTION_COST,
    Blocked,
    Candidate,
    PoolTotals,
)
from gpucap.controllers.nodeclaim.conditions import INITIALIZED, INSTANCE_TERMINATING, condition
from gpucap.runtime.memo import Memo, Memos
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot
from gpucap.utils.pdb import MULTIPLE_PDBS, Limits
from gpucap.utils.pod import (
    DO_NOT_DISRUPT,
    do_not_disrupt_active,
    do_not_disrupt_until,
    eviction_cost,
    expiry,
    is_reschedulable,
    lifetime_at,
)

__all__ = [
    "CONSOLIDATION_FACTS",
    "DELETING",
    "DO_NOT_DISRUPT_BLOCKS",
    "DRIFTED",
    "DRIFTED_REASON",
    "NODE_DO_NOT_DISRUPT",
    "NOMINATED",
    "NOT_INITIALIZED",
    "NO_NODE",
    "NO_NODEPOOL_LABEL",
    "Gate",
    "Selected",
    "consolidatable",
    "consolidatable_gate",
    "consolidate_after_start",
    "consolidation_facts",
    "disruption_cost",
    "drifted_reason",
    "gate_passed",
    "get_candidates",
    "next_do_not_disrupt_expiry",
    "node_price",
    "select_candidates",
    "under_consolidate_after",
]

DRIFTED = "Drifted"
# statenode.go `ValidateNodeDisruptable` and types.go `NewCandidate`: why a managed node is no
# candidate, as the errors say it (the DisruptionBlocked event's message is the sentence).
NO_NODE = "nodeclaim does not have an associated node"
NOT_INITIALIZED = "node isn't initialized"
DELETING = "node is deleting or marked for deletion"
NOMINATED = "node is nominated for a pending pod"
NODE_DO_NOT_DISRUPT = f'disruption is blocked through the "{DO_NOT_DISRUPT}" annotation'
NO_NODEPOOL_LABEL = "node doesn't have required label"
# statenode.go `ValidatePodsDisruptable`: the error of a pod whose do-not-disrupt is active.
DO_NOT_DISRUPT_BLOCKS = f'pod has "{DO_NOT_DISRUPT}" annotation'


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return parse_rfc3339(text)


def consolidate_after_start(claim: NodeClaim) -> dt.datetime | None:
    """Where consolidateAfter counts from: the NodeClaim's last pod event, else when it became
    Initialized; None while it is not Initialized (`CONSOLIDATION_FACTS` keeps it per
    NodeClaim object for a run)."""
    return consolidation_facts(claim)[1]


def consolidation_facts(claim: NodeClaim) -> tuple[bool, dt.datetime | None]:
    """(Initialized is True, where consolidateAfter counts from): what consolidatable and
    under_consolidate_after read of a NodeClaim, none of it the clock."""
    init = condition(claim, INITIALIZED)
    if init is None or init.status != "True":
        return False, None
    return True, _when(claim.status.last_pod_event_time) or _when(init.last_transition_time)


def under_consolidate_after(
    claim: NodeClaim, nodepool: NodePool | None, now: dt.datetime, *, memos: Memos | None = None
) -> bool:
    """`IsUnderConsolidateAfter`: consolidateAfter is set and non-zero, the NodeClaim is
    Initialized, and less than consolidateAfter has passed since its last pod event (or its
    initialization). `memos`: the run's, to read the NodeClaim's facts through
    (`CONSOLIDATION_FACTS`)."""
    if nodepool is None:
        return False
    after = nodepool.spec.disruption.consolidate_after_seconds
    if not after:
        return False
    facts = (
        memos[CONSOLIDATION_FACTS].lookup(claim)
        if memos is not None
        else consolidation_facts(claim)
    )
    start = facts[1]
    if start is None:
        return False
    return (now - start).total_seconds() < after


def consolidatable(claim: NodeClaim, nodepool: NodePool, now: dt.datetime) -> bool:
    """Karpenter's `Consolidatable=True` (see the module docstring): consolidateAfter not
    Never, Initialized, and not `under_consolidate_after`."""
    return gate_passed(consolidatable_gate(claim, nodepool), now)


# `consolidatable` without the clock: None (never), or (start, after): consolidatable once
# `after` seconds have passed since `start` (start None: at once).
Gate = tuple[dt.datetime | None, int] | None


def consolidatable_gate(claim: NodeClaim, nodepool: NodePool) -> Gate:
    """What `consolidatable` reads of the NodeClaim and NodePool, none of it the clock: the
    methods keep it per candidate (`Consolidation.should_disrupt`, `Emptiness`) and ask
    `gate_passed` each pass."""
    after = nodepool.spec.disruption.consolidate_after_seconds
    if after is None:
        return None
    initialized, start = consolidation_facts(claim)
    if not initialized:
        return None
    if not after or start is None:
        return (None, 0)
    return (start, after)


def gate_passed(gate: Gate, now: dt.datetime) -> bool:
    """`consolidatable` at `now` from its `consolidatable_gate` (the same comparison)."""
    if gate is None:
        return False
    start, after = gate
    return start is None or not (now - start).total_seconds() < after


def drifted_reason(claim: NodeClaim) -> str:
    """The Drifted condition's reason when it is True, else "" (`DRIFTED_REASON` keeps it per
    NodeClaim object for a run: the controller asks it of every NodeClaim of every pass)."""
    c = condition(claim, DRIFTED)
    if c is None or c.status != "True":
        return ""
    return c.reason or DRIFTED


# Per NodeClaim object (frozen), the run's (`Cluster.memos`): every pass asks for every
# NodeClaim, and again per held-back node.
CONSOLIDATION_FACTS = Memo.identity(consolidation_facts, size=4096)
DRIFTED_REASON = Memo.identity(drifted_reason, size=4096)


def node_price(instance_type: InstanceType | None, zone: str, capacity_type: str) -> float:
    """`resolveNodePrice`: the first offering in the node's zone and capacity type, available
    or not; 0 when there is none or its price is NaN."""
    if instance_type is None:
        return 0.0
    for o in instance_type.offerings:
        if o.zone == zone and o.capacity_type == capacity_type:
            return 0.0 if o.price != o.price else o.price
    return 0.0


def _terminating(claim: NodeClaim) -> bool:
    terminating = condition(claim, INSTANCE_TERMINATING)
    return terminating is not None and terminating.status == "True"


_TERMINATING = Memo.identity(_terminating, size=4096)


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
    name = state.name
    pods = tuple(p for p in state.pods if p.spec.node_name == name)
    costs = [eviction_cost(p) for p in pods]
    reschedulable = [is_reschedulable(p) for p in pods]
    return _OnNode(
        pods,
        tuple(p for p, r in zip(pods, reschedulable, strict=True) if r),
        # The same sums, in the same order, as one generator over the pods each.
        sum(costs),
        sum(max(0.0, c) for c, r in zip(costs, reschedulable, strict=True) if r),
        tuple(p for p in pods if DO_NOT_DISRUPT in p.metadata.annotations),
    )


_ON_NODE = Memo.identity(_on_node, size=4096)


def _by_name(offered: Sequence[InstanceType]) -> dict[str, InstanceType]:
    return {it.name: it for it in offered}


# Per instance-type sequence object (the cloud provider hands the same tuple out while its
# offerings are the same); callers only read the dict.
_BY_NAME = Memo.identity(_by_name, size=64)


@dataclass(slots=True, eq=False)
class _Row:
    """What candidate selection reads of one NodeClaim that does not depend on the clock, the
    queue, the marks or the nominations, kept while its NodeClaim, Node, state node, NodePool
    and instance-type index are the same objects (all frozen or read-only): its NodePool's
    name, what is on the node, its instance type and price, whether the rest of
    `ValidateNodeDisruptable` holds (`fixed`), and the last candidate built from it."""

    claim: NodeClaim
    node: Node
    state: StateNode
    nodepool: NodePool | None
    types: Mapping[str, InstanceType] | None
    pool_name: str | None
    on: _OnNode
    instance_type: InstanceType | None
    price: float
    fixed: bool
    drifted: str  # `drifted_reason` of the NodeClaim
    # Why `fixed` fails, as `ValidateNodeDisruptable` and `NewCandidate` say it, for the
    # checks that read nothing per pass (deleting, not initialized, ...); None when it holds.
    unfit: Blocked | None = None
    last: Candidate | None = None


def _row(
    claim: NodeClaim,
    node: Node,
    state: StateNode,
    pools: Mapping[str, NodePool],
    types: Mapping[str, Mapping[str, InstanceType]],
    *,
    memos: Memos,
) -> _Row:
    """The NodeClaim's row, from the run's `_ROWS` while its inputs are the same objects."""
    rows = memos[_ROWS]
    pool_name = state.labels.get(NODEPOOL)
    nodepool = pools.get(pool_name) if pool_name is not None else None
    by_name = types.get(pool_name) if pool_name is not None else None
    row = rows.get(claim.name)
    if (
        row is not None
        and row.claim is claim
        and row.node is node
        and row.state is state
        and row.nodepool is nodepool
        and row.types is by_name
    ):
        return row
    labels = state.labels
    it = (by_name or {}).get(labels.get(INSTANCE_TYPE, ""))
    fixed = (
        state.initialized
        and claim.metadata.deletion_timestamp is None
        and node.metadata.deletion_timestamp is None
        and not memos[_TERMINATING].lookup(claim)
        and node.metadata.annotations.get(DO_NOT_DISRUPT) != "true"
        and nodepool is not None
        and by_name is not None
    )
    row = _Row(
        claim,
        node,
        state,
        nodepool,
        by_name,
        pool_name,
        memos[_ON_NODE].lookup(state),
        it,
        node_price(it, labels.get(ZONE, ""), labels.get(CAPACITY_TYPE, "")),
        fixed,
        memos[DRIFTED_REASON].lookup(claim),
        None if fixed else _unfit(claim, node, state, pool_name, memos=memos),
    )
    if len(rows) >= _ROWS_SIZE:
        rows.clear()
    rows[claim.name] = row
    return row


def _unfit(
    claim: NodeClaim, node: Node, state: StateNode, pool_name: str | None, *, memos: Memos
) -> Blocked:
    """Why a row's `fixed` checks fail, in `ValidateNodeDisruptable`'s order (not initialized,
    deleting, the node's do-not-disrupt annotation, no NodePool label) and then `NewCandidate`'s
    (its NodePool or its instance types not found). Nominations and marks, read per pass, are
    `_why_held`'s."""
    if not state.initialized:
        return Blocked(NOT_INITIALIZED)
    if (
        claim.metadata.deletion_timestamp is not None
        or node.metadata.deletion_timestamp is not None
        or memos[_TERMINATING].lookup(claim)
    ):
        return Blocked(DELETING)
    if node.metadata.annotations.get(DO_NOT_DISRUPT) == "true":
        return Blocked(NODE_DO_NOT_DISRUPT)
    if pool_name is None:
        return Blocked(NO_NODEPOOL_LABEL, (("label", NODEPOOL),))
    return Blocked(f"NodePool not found (NodePool={pool_name})")


# NodeClaim name -> its row (see `_Row`), the run's; each row holds its objects, so identity
# checks on them stay right while it lives.
_ROWS: Memo[dict[str, _Row]] = Memo(dict)
_ROWS_SIZE = 4096


@dataclass(slots=True, eq=False)
class _Selection:
    """One `get_candidates` answer and every input it read but the clock and the cluster (it is
    kept in that cluster's memos): its snapshot (the same snapshot object means the same pods,
    Nodes, NodeClaims, nominations and marks: `Cluster.snapshot`), the PDB objects (applying
    one does not change the snapshot), the NodePool objects, each one's instance-type index
    (`None`: no types), the queue's NodeClaims and the disruption class. `rows`: the rows
    past the fixed, queue, mark and nomination checks, in NodeClaim order; of them only those
    with annotated pods (`clocked`) can answer differently at another time. `cost` and
    `disruption`: the NodePool sums over all managed rows. `limits`: the PDBs over the
    snapshot's pods."""

    snap: Snapshot
    pdbs: tuple[PodDisruptionBudget, ...]
    limits: Limits
    pools: tuple[NodePool, ...]
    types: tuple[Mapping[str, InstanceType] | None, ...]
    in_flight: frozenset[str]
    disruption_class: str
    rows: list[_Row]
    clocked: bool
    cost: dict[str, float]
    disruption: dict[str, float]
    found: list[Candidate]  # the answer when nothing is `clocked` (every row's candidate)
    totals: dict[str, PoolTotals]
    # NodeClaim name -> why it is held back: its node (`held_back`) or its pods (those only
    # when not `clocked`)
    blocked: dict[str, Blocked]
    held_back: dict[str, Blocked]

    def holds_for(
        self,
        snap: Snapshot,
        *,
        pdbs: Sequence[PodDisruptionBudget],
        pools: Sequence[NodePool],
        types: Sequence[Mapping[str, InstanceType] | None],
        in_flight: frozenset[str],
        disruption_class: str,
    ) -> bool:
        """Whether the answer was made from these inputs (all but the clock)."""
        return (
            self.snap is snap
            and self.disruption_class == disruption_class
            and len(self.pdbs) == len(pdbs)
            and all(a is b for a, b in zip(self.pdbs, pdbs, strict=True))
            and len(self.pools) == len(pools)
            and all(a is b for a, b in zip(self.pools, pools, strict=True))
            and all(a is b for a, b in zip(self.types, types, strict=True))
            and self.in_flight == in_flight
        )

    def answer(self, now: dt.datetime) -> Selected:
        """The answer at `now`: the rows' candidates again, the do-not-disrupt durations of
        the clocked ones asked anew."""
        if not self.clocked:
            return Selected(list(self.found), dict(self.totals), dict(self.blocked))
        out: list[Candidate] = []
        blocked: dict[str, Blocked] = dict(self.held_back)
        for row in self.rows:
            c = _candidate(row, now, self.disruption_class, self.limits)
            if isinstance(c, Blocked):
                blocked[row.claim.name] = c
            else:
                out.append(c)
        return Selected(out, _totals(out, self.cost, self.disruption), blocked)


@dataclass(frozen=True, slots=True)
class Selected:
    """`select_candidates`' answer (`GetCandidatesWithTotals`): the candidates in NodeClaim
    order (before a method's own filter), the NodePool totals over all managed nodes, and, per
    managed NodeClaim held back (by its node's state, its NodePool or its pods; not those the
    queue carries out), Karpenter's reason (the DisruptionBlocked event's; drift's waiver
    aside)."""

    found: list[Candidate]
    totals: dict[str, PoolTotals]
    blocked: dict[str, Blocked]


def _totals(
    out: Sequence[Candidate], cost: Mapping[str, float], disruption: Mapping[str, float]
) -> dict[str, PoolTotals]:
    return {
        name: PoolTotals(cost.get(name, 0.0), disruption.get(name, 0.0))
        for name in sorted({c.nodepool.name for c in out})
    }


# Disruption class -> the last `get_candidates` answer for it (see `_Selection`), the run's: a
# pass whose cluster did not change since the last one (the clock only, or a command's queue
# waiting) asks the same question again.
_LAST: Memo[dict[str, _Selection]] = Memo(dict)


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
    totals over all managed nodes: `select_candidates` without the reasons."""
    selected = select_candidates(
        cluster,
        cloud_provider,
        now,
        disruption_class=disruption_class,
        in_flight=in_flight,
        snap=snap,
        instance_types=instance_types,
    )
    return selected.found, selected.totals


def select_candidates(
    cluster: Cluster,
    cloud_provider: CloudProvider,
    now: dt.datetime,
    *,
    disruption_class: str,
    in_flight: Collection[str] = (),
    snap: Snapshot | None = None,
    instance_types: Mapping[str, Sequence[InstanceType]] | None = None,
) -> Selected:
    """Every candidate (before a method's own filter), in NodeClaim order, the NodePool totals
    over all managed nodes, and why the nodes their pods hold are held (`Selected`).
    `in_flight`: NodeClaim names the queue is carrying out; `instance_types`: per NodePool,
    when the caller already asked the cloud provider. The last answer per disruption class is
    handed out again (its clocked rows asked anew) while every other input is the same
    (`_Selection`)."""
    current = cluster.snapshot() if snap is None else None
    snap = snap if snap is not None else current
    assert snap is not None
    nodepools = cluster.nodepools()
    memos = cluster.memos
    by_name = memos[_BY_NAME].lookup
    by_pool: list[Mapping[str, InstanceType] | None] = []
    for np in nodepools:
        offered = (
            instance_types[np.name]
            if instance_types is not None and np.name in instance_types
            else cloud_provider.get_instance_types(np)
        )
        by_pool.append(by_name(offered) if offered else None)
    flight = frozenset(in_flight)
    pdbs = cluster.pdbs()
    answers = memos[_LAST]
    last = answers.get(disruption_class)
    if (
        last is not None
        and last.holds_for(
            snap,
            pdbs=pdbs,
            pools=nodepools,
            types=by_pool,
            in_flight=flight,
            disruption_class=disruption_class,
        )
        # A snapshot handed in is the cluster's current one only while nothing changed.
        and (current is not None or cluster.snapshot() is snap)
    ):
        return last.answer(now)
    selection = _select(
        cluster,
        snap,
        pdbs=pdbs,
        nodepools=nodepools,
        by_pool=by_pool,
        in_flight=flight,
        now=now,
        disruption_class=disruption_class,
    )
    answers[disruption_class] = selection
    return Selected(list(selection.found), dict(selection.totals), dict(selection.blocked))


def _select(
    cluster: Cluster,
    snap: Snapshot,
    *,
    pdbs: Sequence[PodDisruptionBudget],
    nodepools: Sequence[NodePool],
    by_pool: Sequence[Mapping[str, InstanceType] | None],
    in_flight: frozenset[str],
    now: dt.datetime,
    disruption_class: str,
) -> _Selection:
    """`get_candidates` from the rows (see `_Row`), with what it read (`_Selection`)."""
    by_name = {n.name: n for n in snap.nodes}
    pools = {np.name: np for np in nodepools}
    types = {np.name: t for np, t in zip(nodepools, by_pool, strict=True) if t is not None}
    marked = cluster.marked_for_deletion()
    by_provider_id: dict[str, Node] = {}
    for n in cluster.nodes():
        if n.spec.provider_id:
            by_provider_id.setdefault(n.spec.provider_id, n)
    # NodeClaims no candidate may come from: the queue's, the marked, those with a pod
    # nominated to them (a marked Node's name is checked on its own).
    nominated = set(cluster.nominations().values())
    held = in_flight | marked | nominated
    # The PDBs over the pods of this snapshot (`NewLimits`, once per selection as Karpenter's
    # `GetCandidatesWithTotals`); every row is asked anew while there is a PDB.
    limits = Limits(pdbs, cluster.pods() if pdbs else ())
    out: list[Candidate] = []
    held_back: dict[str, Blocked] = {}  # why the nodes that are no rows are held
    blocked: dict[str, Blocked] = {}
    rows: list[_Row] = []
    clocked = False
    cost: dict[str, float] = {}
    disruption: dict[str, float] = {}
    memos = cluster.memos
    kept = memos[_ROWS]
    for claim in cluster.node_claims():
        status = claim.status
        node = by_provider_id.get(status.provider_id or "")
        if node is None:
            node = cluster.node(status.node_name) if status.node_name else None
            if node is None:
                # Cluster state knows a NodeClaim by its provider ID: one launched whose Node
                # has not registered is a state node without a Node.
                if status.provider_id and claim.name not in in_flight:
                    held_back[claim.name] = _NO_NODE
                continue
        node_name = node.metadata.name
        state = by_name.get(node_name)
        if state is None:
            continue
        claim_name = claim.name
        row = kept.get(claim_name)
        if (
            row is None
            or row.claim is not claim
            or row.node is not node
            or row.state is not state
            or (row.pool_name is not None and pools.get(row.pool_name) is not row.nodepool)
            or (row.pool_name is not None and types.get(row.pool_name) is not row.types)
        ):
            row = _row(claim, node, state, pools, types, memos=memos)
        pool_name = row.pool_name
        if pool_name is not None:
            cost[pool_name] = cost.get(pool_name, 0.0) + row.price
            disruption[pool_name] = disruption.get(pool_name, 0.0) + (
                PER_NODE_BASE_DISRUPTION_COST + row.on.reschedule
            )
        if not row.fixed or claim_name in held or node_name in marked:
            # The queue's own are no candidates without a word (`NewCandidate`'s first check).
            if claim_name not in in_flight:
                held_back[claim_name] = _why_held(
                    row, claim_name in marked or node_name in marked, claim_name in nominated
                )
            continue
        rows.append(row)
        if row.on.annotated:
            clocked = True
        elif row.last is not None and not limits:
            out.append(row.last)  # `_candidate` would hand it out again
            continue
        candidate = _candidate(row, now, disruption_class, limits)
        if isinstance(candidate, Blocked):
            blocked[claim_name] = candidate
        else:
            out.append(candidate)
    return _Selection(
        snap,
        tuple(pdbs),
        limits,
        tuple(nodepools),
        tuple(by_pool),
        in_flight,
        disruption_class,
        rows,
        clocked,
        cost,
        disruption,
        out,
        _totals(out, cost, disruption),
        {**held_back, **blocked},
        held_back,
    )


_NO_NODE = Blocked(NO_NODE)
_DELETING = Blocked(DELETING)
_NOMINATED = Blocked(NOMINATED)


def _why_held(row: _Row, marked: bool, nominated: bool) -> Blocked:
    """Why a node that is not in the queue is no candidate before its pods are looked at:
    `ValidateNodeDisruptable`'s first failing check (not initialized, deleting or marked,
    nominated, then the row's own), else `NewCandidate`'s NodePool check (`_unfit`)."""
    unfit = row.unfit
    if unfit is not None and unfit.error in (NOT_INITIALIZED, DELETING):
        return unfit
    if marked:
        return _DELETING
    if nominated:
        return _NOMINATED
    assert unfit is not None  # `fixed` fails
    return unfit


def _candidate(
    row: _Row, now: dt.datetime, disruption_class: str, limits: Limits
) -> Candidate | Blocked:
    """`NewCandidate` for a row whose fixed checks hold: its pods (`_pods_hold`: the clock
    decides for do-not-disrupt durations, the PDBs over the selection's pods), then the
    candidate: the row's last one again (every field comes from the row's objects, none from
    the clock)."""
    claim, on = row.claim, row.on
    if on.annotated or limits:
        held = _pods_hold(on, now, limits)
        if held is not None and not (
            disruption_class == EVENTUAL and claim.spec.termination_grace_period is not None
        ):
            return held
    last = row.last
    if last is not None:
        return last
    nodepool = row.nodepool
    assert nodepool is not None  # `fixed` holds
    labels = row.state.labels
    out = Candidate(
        node_claim=claim,
        node=row.node,
        state_node=row.state,
        nodepool=nodepool,
        instance_type=row.instance_type,
        capacity_type=labels.get(CAPACITY_TYPE, ""),
        zone=labels.get(ZONE, ""),
        price=row.price,
        reschedulable_pods=on.reschedulable,
        drifted=row.drifted,
    )
    row.last = out
    return out


def _pods_hold(on: _OnNode, now: dt.datetime, limits: Limits) -> Blocked | None:
    """`ValidatePodsDisruptable`: the first of the node's pods with an active do-not-disrupt
    (only annotated pods can have one), else the first evictable pod its PDB keeps."""
    for p in on.annotated:
        if do_not_disrupt_active(p, now):
            return Blocked(DO_NOT_DISRUPT_BLOCKS, (("Pod", p.key),))
    verdict = limits.can_evict_pods(on.pods, now)
    if verdict is None:
        return None
    kind = "PodDisruptionBudget(s)" if verdict.message == MULTIPLE_PDBS else "PodDisruptionBudget"
    return Blocked(verdict.message, ((kind, ", ".join(verdict.pdbs)),))


def next_do_not_disrupt_expiry(cluster: Cluster, now: dt.datetime) -> dt.datetime | None:
    """The first instant after `now` at which a do-not-disrupt duration on a pod bound to one
    of the cluster's nodes runs out (`pods.do_not_disrupt_until`), None when none is running.
    A node its pods held may be a candidate from then on; the disruption loop, which the
    simulator does not poll while nothing changes, must look again then. Reads the annotated
    pods kept per state node object (`_OnNode`)."""
    nodes = cluster.snapshot().nodes
    on_node = cluster.memos[_ON_NODE].lookup
    ends = (do_not_disrupt_until(on_node(n).annotated, now) for n in nodes)
    return min((e for e in ends if e is not None), default=None)


def disruption_cost(candidate: Candidate, now: dt.datetime) -> float:
    """`NewCandidate`'s disruption cost at `now`: the eviction cost of all the node's pods
    times the NodeClaim's lifetime remaining (karpenter-disruption.md §1.4). A function of the
    clock rather than a field, so that the candidate object stays the same from pass to pass;
    no v1.14 method reads it (they sort by savings ratio), tests do."""
    on = _on_node(candidate.state_node)
    return on.eviction * lifetime_at(expiry(candidate.node_claim), now)
