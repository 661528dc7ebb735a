"""The scheduling simulation behind every disruption decision (kubernetes-sigs/karpenter
`pkg/controllers/disruption/helpers.go: SimulateScheduling` @ 2266468104f3): the same
scheduler the provisioner runs (`Provisioner.scheduler`), over the cluster as it would be
without the candidates.

- Nodes: every state node not being deleted, minus the candidates. If a candidate is being
  deleted meanwhile, there is nothing to simulate (`errCandidateDeleting`): None.
- Pods: the pending pods, and the currently reschedulable pods (`IsCurrentlyReschedulable`,
  `pdb.Limits.is_currently_reschedulable`) of the candidates and of the nodes already being
  deleted, unbound. A pod with an active do-not-disrupt annotation, or one a fully blocking
  PodDisruptionBudget keeps (`maxUnavailable: 0`, ...), will not be evicted, or not before the
  node's terminationGracePeriod runs out: no capacity is made for it ahead of time.
- For consolidation (`IsConsolidationSimulation`, a scheduler option: `SchedulingOptions`): a
  node still inside its NodePool's consolidateAfter takes no pod that is moving off a candidate
  (pending pods and pods of deleting nodes still may); new NodeClaims are never held back.
- A consolidation simulation stops solving once it plans a second new NodeClaim and answers
  None: consolidation acts on no plan with more than one (`computeConsolidation` and the
  validator both give up on `len(NewNodeClaims) > 1`, consolidation.go and validation.go
  @ 2266468104f3), and a solve only adds claims (see `Scheduler.solve`'s `stop_past`). Drift
  may replace a node with several NodeClaims: it always runs the whole solve.
- A pod placed on an existing node that is not initialized is an error, unless it comes from a
  deleting node (`UninitializedNodeError`): a decision must not rest on a node still coming up.
`errors` are the scheduling errors of the pods that are not pending (candidates' and deleting
nodes'): any error there means the candidates cannot go. Called by consolidation, emptiness's
neighbours and drift (`consolidation.py`, `methods.py`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpucap.apis.core import Pod
from gpucap.apis.labels import NODEPOOL
from gpucap.apis.nodepool import NodePool
from gpucap.apis.workloads import DaemonSet
from gpucap.controllers.disruption.candidates import CONSOLIDATION_FACTS, under_consolidate_after
from gpucap.controllers.disruption.types import Candidate
from gpucap.controllers.provisioning.provisioner import Provisioner, deleting_node_pods
from gpucap.runtime.memo import Memo
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.scheduler import PoolInput, Results
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot
from gpucap.utils.pdb import Limits

__all__ = ["PassInputs", "Simulation", "held_back", "pass_inputs", "simulate_scheduling"]


@dataclass(slots=True)
class Simulation:
    """One simulation's results and the errors of the pods that must move."""

    results: Results
    errors: dict[str, str]

    @property
    def all_non_pending_scheduled(self) -> bool:
        return not self.errors


def _unbound(pod: Pod) -> Pod:
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": None})})


@dataclass(slots=True)
class PassInputs:
    """What every simulation of one disruption pass shares (the cluster does not change while a
    method computes: simulations only read it): the snapshot, the dynamic NodePools with their
    instance types, the DaemonSets, the nodes inside their consolidateAfter and the PDBs.
    Built once by `pass_inputs` and handed to each `simulate_scheduling` of the pass."""

    snap: Snapshot
    pools: list[PoolInput]
    daemonsets: list[DaemonSet]
    held_back: frozenset[str]
    limits: Limits


def pass_inputs(
    cluster: Cluster,
    provisioner: Provisioner,
    *,
    nodepools: Callable[[], Sequence[NodePool]],
    now: dt.datetime,
    snap: Snapshot | None = None,
) -> PassInputs:
    """The inputs `simulate_scheduling` would gather itself, gathered once (see `PassInputs`);
    `snap`: the cluster's snapshot when the caller has it."""
    current = cluster.snapshot()
    snap = snap if snap is not None else current
    if snap is current:
        held = frozenset(
            name
            for name, start, after in _watched(cluster, snap)
            if (now - start).total_seconds() < after
        )
    else:
        held = held_back(cluster, [n for n in snap.nodes if not n.marked_for_deletion], now)
    return PassInputs(
        snap,
        provisioner.pools([np for np in nodepools() if not np.is_static]),
        cluster.daemonsets(),
        held,
        Limits.of(cluster),
    )


# Per snapshot object, the nodes `_watched` found (the last few snapshots), the run's
# (`Cluster.memos`).
_WATCHED: Memo[dict[int, tuple[Snapshot, tuple[tuple[str, dt.datetime, int], ...]]]] = Memo(dict)
_WATCHED_MAX = 8


def _watched(cluster: Cluster, snap: Snapshot) -> tuple[tuple[str, dt.datetime, int], ...]:
    """The snapshot's live nodes that `held_back` may hold back, none of it the clock's: each
    with where its consolidateAfter counts from and how long it is (a node is held back while
    less than that has passed). `snap` is the cluster's current snapshot: the cluster hands
    out a new snapshot object whenever anything changes (its version moves with every
    NodeClaim, NodePool and pod), so the same object means the same NodeClaims and NodePools,
    and the answer is kept per snapshot object; only the clock part is left to each pass."""
    watched = cluster.memos[_WATCHED]
    hit = watched.get(id(snap))
    if hit is not None and hit[0] is snap:
        return hit[1]
    claims = {c.status.node_name or c.name: c for c in cluster.node_claims()}
    # Each NodePool's consolidateAfter, looked up once per name (a fleet has few pools).
    afters: dict[str, int | None] = {}
    facts = cluster.memos[CONSOLIDATION_FACTS].lookup
    out: list[tuple[str, dt.datetime, int]] = []
    for node in snap.nodes:
        if node.marked_for_deletion:
            continue
        claim = claims.get(node.name)
        if claim is None:
            continue
        name = node.labels.get(NODEPOOL)
        if name is None:
            continue  # not managed
        if name in afters:
            after = afters[name]
        else:
            nodepool = cluster.nodepool(name)
            after = afters[name] = (
                nodepool.spec.disruption.consolidate_after_seconds if nodepool is not None else None
            )
        if not after:
            continue  # `under_consolidate_after` is False at any time
        start = facts(claim)[1]
        if start is None:
            continue
        out.append((node.name, start, after))
    if len(watched) >= _WATCHED_MAX:
        watched.clear()
    watched[id(snap)] = (snap, tuple(out))
    return tuple(out)


def simulate_scheduling(
    cluster: Cluster,
    provisioner: Provisioner,
    candidates: Sequence[Candidate],
    *,
    nodepools: Callable[[], Sequence[NodePool]],
    now: dt.datetime,
    consolidation: bool,
    inputs: PassInputs | None = None,
) -> Simulation | None:
    """Simulate the candidates gone (see the module docstring); None when one of them is
    being deleted already, or (`consolidation`) when more than one new NodeClaim would be
    needed. `inputs`: the pass's shared inputs (else gathered here)."""
    snap = inputs.snap if inputs is not None else cluster.snapshot()
    names = {c.name for c in candidates}
    deleting = [n for n in snap.nodes if n.marked_for_deletion]
    if any(n.name in names for n in deleting):
        return None
    active = [n for n in snap.nodes if not n.marked_for_deletion and n.name not in names]
    limits = inputs.limits if inputs is not None else Limits.of(cluster)
    movers = [
        _unbound(p)
        for c in candidates
        for p in c.reschedulable_pods
        if limits.is_currently_reschedulable(p, now)
    ]
    # The provisioner's own pods of deleting nodes (`deleting` are those of `snap.nodes`).
    from_deleting = deleting_node_pods(snap.nodes, now, limits)
    pending = list(snap.pending)
    pods = [*pending, *movers, *from_deleting]
    if inputs is not None:
        pools, daemonsets = inputs.pools, inputs.daemonsets
    else:
        pools = provisioner.pools([np for np in nodepools() if not np.is_static])
        daemonsets = cluster.daemonsets()
    options = None
    if consolidation:
        # Karpenter's `IsConsolidationSimulation`: the nodes under consolidateAfter take no
        # pod moving off a candidate (see `SchedulingOptions`).
        options = replace(
            provisioner.options,
            consolidation=True,
            held_back=inputs.held_back if inputs is not None else held_back(cluster, active, now),
            movers=frozenset(p.key for p in movers),
        )
    scheduler = provisioner.scheduler(
        pools,
        state_nodes=active,
        daemonsets=daemonsets,
        pending=pods,
        options=options,
    )
    results = scheduler.solve(pods, stop_past=1 if consolidation else None)
    if results.stopped:
        return None
    must_move = {p.key for p in movers} | {p.key for p in from_deleting}
    from_deleting_keys = {p.key for p in from_deleting}
    errors = {k: str(v) for k, v in results.pod_errors.items() if k in must_move}
    for existing in results.existing_nodes:
        if existing.state.initialized:
            continue
        for pod in existing.pods:
            if pod.key in must_move and pod.key not in from_deleting_keys:
                errors[pod.key] = f"would schedule against uninitialized node/{existing.name}"
    return Simulation(results, errors)


def held_back(cluster: Cluster, nodes: Sequence[StateNode], now: dt.datetime) -> frozenset[str]:
    """The names of `nodes` inside their NodePool's consolidateAfter (Karpenter NodeClaims
    only): a consolidation simulation gives them no pod moving off a candidate."""
    claims = {c.status.node_name or c.name: c for c in cluster.node_claims()}
    out: set[str] = set()
    for node in nodes:
        claim = claims.get(node.name)
        if claim is None or not node.managed:
            continue
        pool = cluster.nodepool(node.nodepool or "")
        if under_consolidate_after(claim, pool, now, memos=cluster.memos):
            out.add(node.name)
    return frozenset(out)
