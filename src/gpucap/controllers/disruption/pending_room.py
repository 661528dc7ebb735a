"""Consolidation's pre-check for the pending pods: whether the candidates' pods and the pods
waiting for a node could all stay on the existing nodes, when that is the only way a command
can come out of the simulation. Asked by `Consolidation.compute_consolidation` after `Room`
(`room.py`) let the candidates through; gpucap's, not Karpenter's (Karpenter simulates every
candidate; skipping a simulation that would end in no command changes no decision).

A consolidation simulation schedules the pending pods together with the pods moving off the
candidates (`simulation.py`). When no replacement could be cheap enough to be a command — the
types a replacement could be (`Room.non_spot` for spot candidates while spot-to-spot is off,
else `Room.any_type`) have none priced below the candidates — every new NodeClaim in the
simulation means no command (`computeConsolidation`: one NodeClaim is priced against the
candidates, more than one is no command), so a command needs zero new NodeClaims: every mover
on an existing node, and every pending pod on an existing node or failing outright. A pending
pod fails outright only when the scheduler cannot make a NodeClaim for it; when no NodePool has
limits that is a property of the pod alone (the templates, their instance types and the
DaemonSets; gpucap asks the scheduler once per pod and pass inputs: `_gets_a_node_claim`), so
a pending pod that can get one must then sit on an existing node. Every such pod and every
mover lands on an existing node that is not a candidate, is not being deleted and takes a pod
of its kind (its requests within what the node has left, its taints tolerated: `Room`'s
`NodeRoom.takes`); so, per resource, their requests together must fit in what those nodes have
left together. When they do not, the simulation would end in no command and is skipped.
Pending pods may go to uninitialized nodes and to nodes inside their consolidateAfter: those
count for them (and, as a bound, for the movers too). Built once per disruption pass; what
it keeps across passes (`_FEASIBLE`) is the run's (`Cluster.memos`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpucap.apis.core import Pod
from gpucap.controllers.disruption.room import NodeRoom, PodKind, Room
from gpucap.controllers.disruption.simulation import PassInputs
from gpucap.controllers.disruption.types import Candidate
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.memo import Memo, Memos
from gpucap.scheduling.resources import add

__all__ = ["PendingRoom"]

_SPOT = "spot"


class PendingRoom:
    """The pending pods' pre-check of one consolidation pass (see the module docstring)."""

    def __init__(
        self, inputs: PassInputs, provisioner: Provisioner, room: Room, memos: Memos | None = None
    ) -> None:
        """`memos`: the run's (`Cluster.memos`; None: nothing kept past this pass)."""
        self._inputs = inputs
        self._feasible = (memos if memos is not None else Memos())[_FEASIBLE]
        self._provisioner = provisioner
        self._room = room
        # The pending pods that can get a NodeClaim: their requests summed and their kinds
        # (None until first asked; empty when there is none or a NodePool has limits).
        self._demand: tuple[dict[str, int], dict[int, PodKind]] | None = None
        # The nodes a pod may stay on (not being deleted, not short of anything), by name.
        self._live: dict[str, NodeRoom] | None = None
        # Per kind (by number): the live nodes taking a pod of it, and what each has left.
        self._takers: dict[int, dict[str, Mapping[str, int]]] = {}

    def rules_out(self, candidates: Sequence[Candidate]) -> bool:
        """True only when the simulation of `candidates` gone provably ends in no command
        (see the module docstring)."""
        room = self._room
        price = sum(c.price for c in candidates)
        spot = all(c.capacity_type == _SPOT for c in candidates)
        offers = room.non_spot if spot and not room.spot_to_spot else room.any_type
        if offers.below(price):
            return False  # a replacement could be a command: new NodeClaims may be fine
        pending_need, pending_kinds = self._pending()
        if not pending_kinds:
            return False  # `Room` already asked the movers alone
        movers = [room.movers(c) for c in candidates]
        need = add(pending_need, *(m[0] for m in movers))
        kinds = dict(pending_kinds)
        for m in movers:
            kinds.update(m[1])
        gone = {c.state_node.name for c in candidates}
        taking: dict[str, Mapping[str, int]] = {}
        for number, kind in kinds.items():
            taking.update(self._takers_of(number, kind))
        left = add(*(r for name, r in taking.items() if name not in gone))
        return any(v > 0 and v > left.get(k, 0) for k, v in need.items())

    def _pending(self) -> tuple[dict[str, int], dict[int, PodKind]]:
        if self._demand is None:
            self._demand = ({}, {})
            pending = self._inputs.snap.pending
            headroom = self._headroom() if pending else None
            if headroom is not None:
                placed = [p for p in pending if self._gets_a_node_claim(p, headroom)]
                memo = self._room.memo
                kinds = dict(memo.kind(p.spec) for p in placed)
                self._demand = (add(*(memo.charged(p.spec) for p in placed)), kinds)
        return self._demand

    def _headroom(self) -> dict[str, dict[str, int]] | None:
        """What each NodePool's limits leave with every node not being deleted counted: at
        most what a simulation without some of them leaves before its first new NodeClaim.
        None when the shortcut does not hold: a pod or node that is not offering-neutral
        (topology or affinity could place a pod differently once nodes go), or minValues
        that finalizing a plan may drop a NodeClaim for (as `Scheduler.solve`'s stop)."""
        snap = self._inputs.snap
        if not self._room.memo.all_neutral(snap.pending):
            return None
        live = []
        lookup = self._room.memo.node_room
        for n in snap.nodes:
            if not lookup(n).neutral:
                return None
            if not n.marked_for_deletion:
                live.append(n)
        scheduler = self._provisioner.scheduler(
            self._inputs.pools, state_nodes=live, daemonsets=self._inputs.daemonsets
        )
        if not scheduler.relax_min_values and any(
            t.requirements.has_min_values() for t in scheduler.templates
        ):
            return None
        return scheduler.remaining_resources

    def _gets_a_node_claim(self, pod: Pod, headroom: Mapping[str, Mapping[str, int]]) -> bool:
        """Whether the scheduler makes a NodeClaim for `pod` alone, no node taking it, with
        the limits leaving `headroom` (what else it reads: the templates, their instance
        types and the DaemonSets; no topology, every pod being offering-neutral)."""
        key = (
            id(pod),
            tuple((id(p.nodepool), id(p.instance_types)) for p in self._inputs.pools),
            tuple(id(d) for d in self._inputs.daemonsets),
            tuple(sorted((name, tuple(sorted(r.items()))) for name, r in headroom.items())),
        )
        feasible = self._feasible
        hit = feasible.get(key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        scheduler = self._provisioner.scheduler(
            self._inputs.pools, daemonsets=self._inputs.daemonsets, pending=[pod]
        )
        scheduler.remaining_resources = {name: dict(r) for name, r in headroom.items()}
        results = scheduler.solve([pod])
        answer = any(q.key == pod.key for c in results.new_node_claims for q in c.pods)
        if len(feasible) >= _FEASIBLE_SIZE:
            feasible.clear()
        # The entry holds the pod (its id stays its own); the NodePools, their instance-type
        # tuples and the DaemonSets are frozen objects kept by the cluster and the provider.
        feasible[key] = (pod, answer, self._inputs.pools, self._inputs.daemonsets)
        return answer

    def _takers_of(self, number: int, kind: PodKind) -> Mapping[str, Mapping[str, int]]:
        hit = self._takers.get(number)
        if hit is None:
            if self._live is None:
                lookup = self._room.memo.node_room
                self._live = {}
                for n in self._inputs.snap.nodes:
                    if n.marked_for_deletion:
                        continue
                    node = lookup(n)
                    if node.left is not None:
                        self._live[n.name] = node
            hit = {name: node.room for name, node in self._live.items() if node.takes(number, kind)}
            self._takers[number] = hit
        return hit


# Per pod object and pass inputs (the NodePool, instance-type tuple and DaemonSet objects, the
# headroom): whether the scheduler makes a NodeClaim for the pod alone (`_gets_a_node_claim`).
_FEASIBLE: Memo[dict[tuple[object, ...], tuple[Pod, bool, object, object]]] = Memo(dict)
_FEASIBLE_SIZE = 1024
