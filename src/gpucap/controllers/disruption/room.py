"""Consolidation's pre-check: whether the pods of some candidates could possibly move, decided
without a scheduling simulation. Single-node consolidation asks it for every candidate and
multi-node for every prefix it tries (`consolidation.py`); a candidate set it rules out is one
whose simulation would lead `computeConsolidation` to no command, so skipping the simulation
changes no decision (gpucap's, not Karpenter's: Karpenter simulates every candidate).

A command needs every pod moving off the candidates (`movers`: the reschedulable pods without
an active do-not-disrupt) placed either on an existing node or on at most one new NodeClaim
(`computeConsolidation`: two or more new NodeClaims is no command), that NodeClaim cheaper than
the candidates. So for every resource the movers request, their sum is at most:
- the room left on the existing nodes a mover can take: not a candidate, not being deleted,
  initialized (a mover placed on an uninitialized node is an error), outside its NodePool's
  consolidateAfter (those refuse movers), with taints some mover tolerates; each node's room is
  its allocatable minus what its pods request, the scheduler's upper bound (it also subtracts
  DaemonSets not yet running), and none at all when that is negative somewhere (`fits`);
- plus the most any instance type the replacement could become has allocatable: a type of a
  dynamic NodePool whose cheapest available offering (under the NodePool's requirements) costs
  less than the candidates together (a replacement keeps only types whose worst launch price is
  below that, and the worst is never below the cheapest).
Spot candidates with spot-to-spot consolidation off narrow the second term further: a
replacement that may launch as spot is no command, so the replacement must be one the scheduler
pinned to on-demand (or reserved). When no pod in the cluster names a zone or capacity type
(nodeSelector, node affinity, required or preferred) and none has pod (anti-)affinity or
topology spread, a new NodeClaim's zone and capacity-type requirements are its NodePool's, and
the scheduler drops spot from them only when none of its instance types has an available spot
offering the NodePool allows: only such types count. Otherwise every type counts, priced by its
cheapest offering. The same holds per mover kind, counted in whole pods: a node holds at most
floor(room / request) of a kind (`NodeRoom.holds`), the new NodeClaim at most what the most
allocatable of the types that count allows.
Built once per pass from the pass's `PassInputs`; the per-kind answers (which nodes take a
kind, their room, how many pods of a kind they hold) are carried to the next pass's `Room`
and corrected for the nodes that changed (`RoomCache`); a candidate's movers are kept per
candidate object while none carries do-not-disrupt (`RoomMemo.steady`). What is kept per pod
spec, state node or candidate object lives in the run's `RoomMemo` (`ROOM_MEMO`, held by the
run's `Cluster.memos`), never in the process.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
from collections.abc import Iterable, Mapping, Sequence

from gpucap.apis.core import Pod, PodSpec, Toleration
from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.controllers.disruption.simulation import PassInputs
from gpucap.controllers.disruption.types import Candidate
from gpucap.runtime.memo import IdentityMemo, Memo
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import add, pod_requests, subtract
from gpucap.scheduling.scheduler import PoolInput
from gpucap.scheduling.taints import untolerated
from gpucap.utils.pod import DO_NOT_DISRUPT, do_not_disrupt_active

__all__ = [
    "ROOM_MEMO",
    "NodeRoom",
    "OfferCache",
    "PodKind",
    "Room",
    "RoomCache",
    "RoomMemo",
    "offering_neutral",
]

_OFFERING_KEYS = frozenset({ZONE, CAPACITY_TYPE})
_SPOT = "spot"


def offering_neutral(pod: Pod) -> bool:
    """Whether `pod` can never narrow a NodeClaim's zone or capacity type: no nodeSelector or
    node-affinity term (required or preferred) names them, and it has no pod affinity,
    anti-affinity or topology spread (which narrow domains, its own or other pods')."""
    return _offering_neutral(pod.spec)


def _offering_neutral(spec: PodSpec) -> bool:
    if spec.topology_spread_constraints:
        return False
    if _OFFERING_KEYS & spec.node_selector.keys():
        return False
    aff = spec.affinity
    if aff is None:
        return True
    if aff.pod_affinity is not None or aff.pod_anti_affinity is not None:
        return False
    na = aff.node_affinity
    if na is None:
        return True
    terms = [t.preference for t in na.preferred_during_scheduling_ignored_during_execution]
    required = na.required_during_scheduling_ignored_during_execution
    if required is not None:
        terms.extend(required.node_selector_terms)
    return not any(
        e.key in _OFFERING_KEYS for t in terms for e in (*t.match_expressions, *t.match_fields)
    )


class _Offers:
    """Instance types by price, ascending, with the running per-resource maximum of their
    allocatable: the most any type cheaper than a price has, in one bisection."""

    def __init__(self, offers: Iterable[tuple[float, Mapping[str, int]]]) -> None:
        ordered = sorted(offers, key=lambda o: o[0])
        self.prices = [price for price, _ in ordered]
        self.most: list[dict[str, int]] = []
        running: dict[str, int] = {}
        for _, allocatable in ordered:
            running = dict(running)
            for k, v in allocatable.items():
                if v > running.get(k, 0):
                    running[k] = v
            self.most.append(running)

    def below(self, price: float) -> Mapping[str, int]:
        """Per resource, the most allocatable of the types priced strictly below `price`."""
        i = bisect.bisect_left(self.prices, price)
        return self.most[i - 1] if i else {}


class OfferCache:
    """The two price ladders of `Room` (every type; the types a replacement pinned off spot
    could be), per list of pools: the same NodePool objects with the same instance-type tuples
    (the cloud provider keeps one tuple per node class and set of capacity marks, and types are
    immutable) give the same ladders, so a consolidation method builds them once, not once per
    pass. Each entry holds its pools, so their ids are not reused while it lives."""

    _SIZE = 16

    def __init__(self) -> None:
        self._entries: dict[tuple[object, ...], tuple[Sequence[PoolInput], _Offers, _Offers]] = {}

    def get(self, pools: Sequence[PoolInput], *, neutral: bool) -> tuple[_Offers, _Offers]:
        key = (neutral, *((id(p.nodepool), id(p.instance_types)) for p in pools))
        hit = self._entries.get(key)
        if hit is not None and all(
            a.nodepool is b.nodepool and a.instance_types is b.instance_types
            for a, b in zip(hit[0], pools, strict=True)
        ):
            return hit[1], hit[2]
        everything: list[tuple[float, Mapping[str, int]]] = []
        pinned: list[tuple[float, Mapping[str, int]]] = []
        for pool in pools:
            reqs = NodeClaimTemplate.from_nodepool(pool.nodepool).requirements
            for it in pool.instance_types:
                price = it.cheapest_price(reqs)
                if price is None:
                    continue
                everything.append((price, it.allocatable))
                if not neutral or _lacks_spot(it, reqs):
                    pinned.append((price, it.allocatable))
        if len(self._entries) >= self._SIZE:
            self._entries.clear()
        entry = (tuple(pools), _Offers(everything), _Offers(pinned))
        self._entries[key] = entry
        return entry[1], entry[2]


# What the pre-check asks of a mover: its requests (with `pods: 1`) and its tolerations. Bound
# pods each have their own spec (with their node's name) but few kinds among them.
PodKind = tuple[tuple[tuple[str, int], ...], tuple[Toleration, ...]]

# What the pre-check asks of a candidate's movers: their summed requests, their kinds by
# number, the set of those numbers (the key of `Room._room`) and how many movers are of each
# kind; all read-only to callers.
_Movers = tuple[dict[str, int], dict[int, PodKind], frozenset[int], dict[int, int]]

_KINDS_SIZE = 4096
_LEFT_SIZE = 4096


def _charged(spec: PodSpec) -> Mapping[str, int]:
    return add(pod_requests(spec), {"pods": 1})


def _annotated(pods: Sequence[Pod]) -> bool:
    return any(DO_NOT_DISRUPT in p.metadata.annotations for p in pods)


def _how_many(requests: Iterable[tuple[str, int]], room: Mapping[str, int]) -> int:
    """How many pods requesting `requests` fit whole in `room` (each resource bounds it)."""
    return min((room.get(r, 0) // v for r, v in requests if v > 0), default=0)


class RoomMemo:
    """What the pre-check keeps of one run's objects from pass to pass, each answer per
    object (frozen models, state nodes and candidates handed out again while unchanged; each
    entry holds its object, so ids are not reused while it lives). One per run (`ROOM_MEMO`
    in `Cluster.memos`), so two runs in one process share nothing; a `Room` built on its own
    (tests) gets a fresh one. The lookups are plain functions (`IdentityMemo.lookup`) for the
    hot loops; all read-only to callers."""

    def __init__(self) -> None:
        # Per PodSpec: what the scheduler charges for a pod of it (its requests plus `pods:
        # 1`), its kind and number (`kind`), and whether it is offering-neutral.
        self.charged = IdentityMemo(_charged, size=8192).lookup
        self.kind = IdentityMemo(self._kind, size=8192).lookup
        self.neutral = IdentityMemo(_offering_neutral, size=8192).lookup
        # Kind -> its number (numbers are never reused, so caches keyed on them stay right
        # when the table is cleared).
        self._numbers: dict[PodKind, int] = {}
        self._counter = itertools.count()
        # Node name -> (allocatable, pods, what is left): see `left`.
        self._left: dict[str, tuple[Mapping[str, int], tuple[Pod, ...], dict[str, int] | None]]
        self._left = {}
        # Per state node object: what the pre-check reads of it (`NodeRoom`).
        self.node_room = IdentityMemo(self._node_room, size=4096).lookup
        # Per pending-pods tuple of a snapshot (the same tuple while the snapshot is the same
        # object): whether every pending pod is offering-neutral.
        self.all_neutral = IdentityMemo(self._all_neutral, size=64).lookup
        # Per reschedulable-pods tuple of a candidate (one per state node object, kept from
        # pass to pass by candidate selection): whether one carries a do-not-disrupt
        # annotation (the clock decides only for those), and the movers of one without.
        self._annotated = IdentityMemo(_annotated, size=4096).lookup
        self._all_move = IdentityMemo(self.movers_of, size=4096).lookup
        # Per candidate object (candidate selection hands the same one out pass after pass
        # while its node is the same): single-node consolidation asks for every candidate of
        # every pass.
        self.steady = IdentityMemo(self._steady, size=4096).lookup

    def _kind(self, spec: PodSpec) -> tuple[int, PodKind]:
        """The spec's kind and a number standing for it (cheap to hash)."""
        kind = (tuple(sorted(self.charged(spec).items())), tuple(spec.tolerations))
        number = self._numbers.get(kind)
        if number is None:
            if len(self._numbers) >= _KINDS_SIZE:
                self._numbers.clear()
            number = self._numbers[kind] = next(self._counter)
        return number, kind

    def left(self, node: StateNode) -> dict[str, int] | None:
        """The node's allocatable minus what its pods request; None when short of something.
        Kept per node name while the node has the same allocatable and pod objects (every
        snapshot rebuilds its state nodes from the same frozen objects); read-only."""
        hit = self._left.get(node.name)
        if (
            hit is not None
            and hit[0] is node.allocatable
            and len(hit[1]) == len(node.pods)
            and all(a is b for a, b in zip(hit[1], node.pods, strict=True))
        ):
            return hit[2]
        charged = self.charged
        left: dict[str, int] | None = subtract(
            dict(node.allocatable), add(*(charged(p.spec) for p in node.pods))
        )
        if left is not None and any(v < 0 for v in left.values()):
            left = None
        if len(self._left) >= _LEFT_SIZE:
            self._left.clear()
        self._left[node.name] = (node.allocatable, node.pods, left)
        return left

    def _node_room(self, node: StateNode) -> NodeRoom:
        return NodeRoom(node, self)

    def _all_neutral(self, pending: tuple[Pod, ...]) -> bool:
        neutral = self.neutral
        return all(neutral(p.spec) for p in pending)

    def movers_of(self, movers: Sequence[Pod]) -> _Movers:
        """The movers' summed requests and their kinds (see `_Movers`)."""
        kinds: dict[int, PodKind] = {}
        counts: dict[int, int] = {}
        kind_of = self.kind
        for p in movers:
            number, kind = kind_of(p.spec)
            kinds[number] = kind
            counts[number] = counts.get(number, 0) + 1
        charged = self.charged
        return add(*(charged(p.spec) for p in movers)), kinds, frozenset(kinds), counts

    def _steady(self, c: Candidate) -> _Movers | None:
        """The candidate's movers when none of its reschedulable pods carries a do-not-disrupt
        annotation (then all move, whatever the time); None otherwise."""
        pods = c.reschedulable_pods
        return None if self._annotated(pods) else self._all_move(pods)


# The run's pre-check memo (`Cluster.memos[ROOM_MEMO]`).
ROOM_MEMO: Memo[RoomMemo] = Memo(RoomMemo)


class NodeRoom:
    """What the pre-check reads of one `StateNode` object, kept while the snapshot hands out
    that object (the same Node, pods and mark): whether its pods are offering-neutral, what it
    has left (`RoomMemo.left`), its taints, and per mover kind (by number) whether the kind fits.
    Nothing here reads the clock or the pass, so the answers hold from pass to pass."""

    __slots__ = ("_holds", "_takes", "left", "neutral", "taints")

    def __init__(self, node: StateNode, memo: RoomMemo) -> None:
        neutral = memo.neutral
        self.neutral = all(neutral(p.spec) for p in node.pods)
        self.left = memo.left(node)
        self.taints = tuple(node.taints)
        self._takes: dict[int, bool] = {}
        self._holds: dict[int, int] = {}

    def holds(self, number: int, kind: PodKind) -> int:
        """How many pods of `kind` the node could take, were they the only ones to come
        (0 when one does not fit or its taints are not tolerated): an upper bound on how
        many of them any schedule places here."""
        hit = self._holds.get(number)
        if hit is None:
            hit = _how_many(kind[0], self.room) if self.takes(number, kind) else 0
            if len(self._holds) >= _KINDS_SIZE:
                self._holds.clear()
            self._holds[number] = hit
        return hit

    @property
    def room(self) -> dict[str, int]:
        """What the node has left (only asked of nodes with room: `Room.free`)."""
        assert self.left is not None
        return self.left

    def takes(self, number: int, kind: PodKind) -> bool:
        """Whether a pod of `kind` fits whole right now: its requests within what is left,
        its taints tolerated (numbers are never reused, so the answer per number holds)."""
        hit = self._takes.get(number)
        if hit is None:
            requests, tolerations = kind
            left = self.room
            hit = all(v <= left.get(r, 0) for r, v in requests) and (
                untolerated(self.taints, tolerations) is None
            )
            if len(self._takes) >= _KINDS_SIZE:
                self._takes.clear()
            self._takes[number] = hit
        return hit


def _lacks_spot(it: InstanceType, reqs: Requirements) -> bool:
    """No available spot offering `reqs` allows (then a NodeClaim of only such types is
    pinned to the other capacity types by the scheduler)."""
    return not any(
        o.available and o.capacity_type == _SPOT and o.allowed_by(reqs) for o in it.offerings
    )


# A `_room` answer: the names of the nodes taking one of some kinds, their room summed.
_Taken = tuple[frozenset[str], dict[str, int]]


class RoomCache:
    """The last `Room` a consolidation state built, so that the next pass's `Room` starts from
    its per-kinds answers and corrects them for the nodes whose `NodeRoom` changed (a node's
    answer depends on nothing else: see `Room._room`). Kept by `ConsolidationState`."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: Room | None = None


class Room:
    """The pre-check of one consolidation pass (see the module docstring)."""

    def __init__(
        self,
        inputs: PassInputs,
        now: dt.datetime,
        *,
        spot_to_spot: bool,
        offers: OfferCache | None = None,
        cache: RoomCache | None = None,
        memo: RoomMemo | None = None,
    ) -> None:
        """`offers`, `cache`: the consolidation method's (`PassMemo`); `memo`: the run's
        (`ROOM_MEMO`; None: a fresh one)."""
        self.now = now
        self.memo = memo = memo if memo is not None else RoomMemo()
        self.spot_to_spot = spot_to_spot
        # What each node a mover may go to has left, with its taints (`NodeRoom`).
        self.free: dict[str, NodeRoom] = {}
        free = self.free
        held = inputs.held_back
        node_room = memo.node_room
        neutral = memo.all_neutral(inputs.snap.pending)
        for n in inputs.snap.nodes:
            node = node_room(n)
            if neutral and not node.neutral:
                neutral = False
            # `fits` refuses every pod on a node short of something (`left` None).
            if n.marked_for_deletion or not n.initialized or node.left is None or n.name in held:
                continue
            free[n.name] = node
        self.any_type, self.non_spot = (offers or OfferCache()).get(inputs.pools, neutral=neutral)
        # Per set of mover kinds: the nodes taking at least one of them, and their room summed.
        self._rooms: dict[frozenset[int], _Taken] = {}
        # Per mover kind (number): how many such pods the free nodes hold together.
        self._holds: dict[int, int] = {}
        # Candidate name -> (the candidate, its movers), for candidates with do-not-disrupt pods
        # (the others: `RoomMemo.steady`).
        self._of: dict[str, tuple[Candidate, _Movers]] = {}
        # The previous pass's answers, valid for its `free`, and the names whose node changed
        # since (added, gone or another `NodeRoom`).
        self._carried: dict[frozenset[int], _Taken] = {}
        self._carried_holds: dict[int, int] = {}
        self._before: dict[str, NodeRoom] = {}
        self._changed: tuple[str, ...] = ()
        if cache is not None:
            last = cache.last
            if last is not None:
                before = last.free
                self._carried = last._rooms
                self._carried_holds = last._holds
                self._before = before
                changed = [n for n, node in self.free.items() if before.get(n) is not node]
                changed.extend(n for n in before if n not in self.free)
                self._changed = tuple(changed)
            cache.last = self

    def _takes(self, node: NodeRoom, kinds: Mapping[int, PodKind]) -> bool:
        return any(node.takes(number, kind) for number, kind in kinds.items())

    def _room(self, key: frozenset[int], kinds: Mapping[int, PodKind]) -> _Taken:
        """The nodes that can take a pod of one of `kinds` (each: its requests within what the
        node has left, its taints tolerated), and what they have left together. A node's
        part depends only on its `NodeRoom`: an answer carried from the last pass is
        corrected for the changed nodes alone (integer sums: the same values)."""
        hit = self._rooms.get(key)
        if hit is not None:
            return hit
        carried = self._carried.get(key)
        if carried is None:
            names = frozenset(n for n, node in self.free.items() if self._takes(node, kinds))
            hit = (names, add(*(self.free[n].room for n in names)))
        else:
            kept, room = set(carried[0]), dict(carried[1])
            for name in self._changed:
                if name in kept:
                    kept.discard(name)
                    for k, v in self._before[name].room.items():
                        room[k] -= v
                node = self.free.get(name)
                if node is not None and self._takes(node, kinds):
                    kept.add(name)
                    for k, v in node.room.items():
                        room[k] = room.get(k, 0) + v
            hit = (frozenset(kept), room)
        self._rooms[key] = hit
        return hit

    def _held(self, number: int, kind: PodKind) -> int:
        """How many pods of `kind` the free nodes hold together (`NodeRoom.holds` summed;
        carried from the last pass and corrected for the changed nodes, as `_room`)."""
        hit = self._holds.get(number)
        if hit is not None:
            return hit
        carried = self._carried_holds.get(number)
        if carried is None:
            hit = sum(node.holds(number, kind) for node in self.free.values())
        else:
            hit = carried
            for name in self._changed:
                before = self._before.get(name)
                if before is not None:
                    hit -= before.holds(number, kind)
                node = self.free.get(name)
                if node is not None:
                    hit += node.holds(number, kind)
        self._holds[number] = hit
        return hit

    def movers(self, c: Candidate) -> _Movers:
        """What the candidate's movers (reschedulable pods without an active do-not-disrupt)
        request together, their kinds and the kinds' key: kept per candidate object when no
        mover carries a do-not-disrupt annotation (`RoomMemo.steady`), else once per candidate and
        pass (the clock decides; multi-node asks again for every prefix)."""
        steady = self.memo.steady(c)
        if steady is not None:
            return steady
        hit = self._of.get(c.name)
        if hit is None or hit[0] is not c:
            movers = self.memo.movers_of(
                tuple(p for p in c.reschedulable_pods if not do_not_disrupt_active(p, self.now))
            )
            hit = self._of[c.name] = (c, movers)
        return hit[1]

    def may_move(self, candidates: Sequence[Candidate]) -> bool:
        """False only when the candidates' pods provably cannot all move to the other nodes
        plus one cheaper NodeClaim (see the module docstring)."""
        if len(candidates) == 1:
            return self.may_move_one(candidates[0])
        return self._may_move_many(candidates)

    def _may_move_many(self, candidates: Sequence[Candidate]) -> bool:
        """`may_move` of any number of candidates (see the module docstring)."""
        movers = [self.movers(c) for c in candidates]
        need = add(*(m[0] for m in movers))
        kinds = {k: v for m in movers for k, v in m[1].items()}
        key = frozenset(kinds)
        counts: dict[int, int] = {}
        for m in movers:
            for number, n in m[3].items():
                counts[number] = counts.get(number, 0) + n
        takers, room = self._room(key, kinds)
        for c in candidates:
            if c.name in takers:
                room = subtract(room, self.free[c.name].room)
        price = sum(c.price for c in candidates)
        spot = all(c.capacity_type == _SPOT for c in candidates)
        offers = self.non_spot if spot and not self.spot_to_spot else self.any_type
        best = offers.below(price)
        if not all(v <= 0 or v <= room.get(k, 0) + best.get(k, 0) for k, v in need.items()):
            return False
        # Per kind, the movers of that kind must fit whole: on the other free nodes, each
        # holding at most `holds` of them, or on the new NodeClaim, which holds no more than
        # the most allocatable of each resource among the types it could be allows.
        for number, n in counts.items():
            kind = kinds[number]
            held = self._held(number, kind)
            for c in candidates:
                node = self.free.get(c.name)
                if node is not None:
                    held -= node.holds(number, kind)
            if n > held + (_how_many(kind[0], best) if best else 0):
                return False
        return True

    def may_move_one(self, c: Candidate) -> bool:
        """`_may_move_many([c])`, the same comparisons written for one (single-node
        consolidation asks it of every candidate of every pass): the room of the nodes
        taking its kinds less its own, plus the cheaper types' most."""
        need, kinds, key, counts = self.movers(c)
        takers, room = self._room(key, kinds)
        name = c.state_node.name
        node = self.free.get(name)
        offers = (
            self.non_spot if c.capacity_type == _SPOT and not self.spot_to_spot else self.any_type
        )
        best = offers.below(c.price)
        if name in takers:
            assert node is not None  # the takers are free nodes
            own = node.room
            for k, v in need.items():
                if v > 0 and v > (room[k] - own.get(k, 0) if k in room else 0) + best.get(k, 0):
                    return False
        else:
            for k, v in need.items():
                if v > 0 and v > room.get(k, 0) + best.get(k, 0):
                    return False
        for number, n in counts.items():
            kind = kinds[number]
            held = self._held(number, kind)
            if node is not None:
                held -= node.holds(number, kind)
            if n > held + (_how_many(kind[0], best) if best else 0):
                return False
        return True
