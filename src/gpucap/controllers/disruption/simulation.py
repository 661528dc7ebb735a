"""The scheduling simulation behind every disruption decision (kubernetes-sigs/karpenter
`pkg/controllers/disruption/helpers.go: SimulateScheduling` @ 2266468104f3): the same
scheduler the provisioner runs (`Provisioner.scheduler`), over the cluster as it would be
without the candidates.

- Nodes: every state node not being deleted, minus the candidates. If a candidate is being
  deleted meanwhile, there is nothing to simulate (`errCandidateDeleting`): None.
- Pods: the pending pods, the candidates' reschedulable pods (minus those with an active
  do-not-disrupt annotation, which will not be evicted: no capacity is made for them), and the
  reschedulable pods of nodes already being deleted, unbound.
- For consolidation (`IsConsolidationSimulation`): a node still inside its NodePool's
  consolidateAfter takes no pod that is moving off a candidate (pending pods and pods of
  deleting nodes still may); new NodeClaims are never held back.
- A pod placed on an existing node that is not initialized is an error, unless it comes from a
  deleting node (`UninitializedNodeError`): a decision must not rest on a node still coming up.
`errors` are the scheduling errors of the pods that are not pending (candidates' and deleting
nodes'): any error there means the candidates cannot go. Called by consolidation, emptiness's
neighbours and drift (`consolidation.py`, `methods.py`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from gpucap.apis.core import Pod
from gpucap.apis.nodepool import NodePool
from gpucap.controllers.disruption.candidates import under_consolidate_after
from gpucap.controllers.disruption.pods import do_not_disrupt_active, is_reschedulable
from gpucap.controllers.disruption.types import Candidate
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.solver import (
    ExistingNode,
    PodData,
    Results,
    SchedulingError,
)
from gpucap.scheduling.topology import Topology
from gpucap.state.cluster import Cluster

__all__ = ["Simulation", "simulate_scheduling"]


@dataclass(slots=True)
class Simulation:
    """One simulation's results and the errors of the pods that must move."""

    results: Results
    errors: dict[str, str]

    @property
    def all_non_pending_scheduled(self) -> bool:
        return not self.errors


@dataclass(slots=True, eq=False)
class _UnderConsolidateAfter(ExistingNode):
    """An existing node inside its consolidateAfter: it refuses pods moving off candidates."""

    movers: frozenset[str] = frozenset()

    def can_add(self, pod: Pod, data: PodData, topology: Topology) -> Requirements:
        if pod.key in self.movers:
            raise SchedulingError("node is under its NodePool's consolidateAfter")
        return ExistingNode.can_add(self, pod, data, topology)


def _unbound(pod: Pod) -> Pod:
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": None})})


def simulate_scheduling(
    cluster: Cluster,
    provisioner: Provisioner,
    candidates: Sequence[Candidate],
    *,
    nodepools: Callable[[], Sequence[NodePool]],
    now: dt.datetime,
    consolidation: bool,
) -> Simulation | None:
    """Simulate the candidates gone (see the module docstring); None when one of them is
    being deleted already."""
    snap = cluster.snapshot()
    names = {c.name for c in candidates}
    deleting = [n for n in snap.nodes if n.marked_for_deletion]
    if any(n.name in names for n in deleting):
        return None
    active = [n for n in snap.nodes if not n.marked_for_deletion and n.name not in names]
    movers = [
        _unbound(p)
        for c in candidates
        for p in c.reschedulable_pods
        if not do_not_disrupt_active(p, now)
    ]
    from_deleting = [
        _unbound(p)
        for n in deleting
        for p in n.pods
        if is_reschedulable(p) and not do_not_disrupt_active(p, now)
    ]
    pending = list(snap.pending)
    pods = [*pending, *movers, *from_deleting]
    pools = [np for np in nodepools() if np.spec.replicas is None]
    scheduler = provisioner.scheduler(
        provisioner.pools(pools),
        state_nodes=active,
        daemonsets=cluster.daemonsets(),
        pending=pods,
    )
    if consolidation:
        _hold_back(cluster, scheduler.existing, frozenset(p.key for p in movers), now)
    results = scheduler.solve(pods)
    must_move = {p.key for p in movers} | {p.key for p in from_deleting}
    from_deleting_keys = {p.key for p in from_deleting}
    errors = {k: v for k, v in results.pod_errors.items() if k in must_move}
    for existing in results.existing_nodes:
        if existing.state.initialized:
            continue
        for pod in existing.pods:
            if pod.key in must_move and pod.key not in from_deleting_keys:
                errors[pod.key] = f"would schedule against uninitialized node/{existing.name}"
    return Simulation(results, errors)


def _hold_back(
    cluster: Cluster, existing: list[ExistingNode], movers: frozenset[str], now: dt.datetime
) -> None:
    """Swap the existing nodes inside their consolidateAfter for ones refusing `movers`."""
    claims = {c.status.node_name or c.name: c for c in cluster.node_claims()}
    for i, node in enumerate(existing):
        claim = claims.get(node.name)
        if claim is None or not node.state.managed:
            continue
        if not under_consolidate_after(claim, cluster.nodepool(node.state.nodepool or ""), now):
            continue
        values = {f.name: getattr(node, f.name) for f in fields(node)}
        existing[i] = _UnderConsolidateAfter(**values, movers=movers)
