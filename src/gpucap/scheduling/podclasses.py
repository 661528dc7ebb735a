"""Pod equivalence classes, and which placement targets have already refused each class.

Karpenter tries every pending pod against every existing node and every planned NodeClaim in
order, and takes the first that accepts it. Most pods of a fleet are replicas: pods of one
class (the same namespace, labels, requests, node requirements, tolerations and topology
groups) get the same answer from a target in the same state. The scheduler (`scheduler.py`) keeps
one `Refusals` per class and skips, for the next pod of the class, the targets whose refusal
provably still holds. A skipped target would have refused the pod anyway, so the first target
that accepts it, and everything after, is exactly Karpenter's (the messages of refusals by
existing nodes and planned NodeClaims are never shown).

A refusal still holds when (see `Hold`):
- PERMANENT: the reason can only get worse as targets take pods: an untolerated taint (taints
  never change), resources (a target's requests only grow and its instance types only
  narrow), a hostname spread or anti-affinity already at its limit on the target (counts only
  grow);
- TOPOLOGY: a topology group found no domain for the pod on the target. A target's
  requirements only narrow as it takes pods, and with fewer domains a group that found none
  still finds none, so the refusal holds until the group itself changes in a way that can
  matter (its `epoch`, see `topology.TopologyGroup`);
- TARGET: anything else computed only from the pod class and the target's own state (no
  topology): it holds until the target takes a pod (its `version`).

Pods with host ports are left out (a refusal there depends on the pod's own key). A refusal
raised without a `Hold` (`SchedulingError`'s default) is never remembered: that is how a target
that refuses for a reason of the pod's own (the disruption simulation's node inside its
consolidateAfter refuses the pods moving off candidates, by key) stays exact.
Called by the scheduler; the equivalence property test (`tests/scheduling/
test_podclasses.py`) solves random workloads with and without classes and compares.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpucap.apis.core import Pod
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources
from gpucap.scheduling.topology import TopologyGroup, TopologyType

__all__ = ["PERMANENT", "TARGET", "Hold", "Refusals", "Target", "class_key"]


class Target(Protocol):
    """An existing node or a planned NodeClaim: `version` counts the pods it has taken."""

    version: int


class _Kind:
    """A refusal that holds without a topology group (PERMANENT or TARGET)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


PERMANENT = _Kind("PERMANENT")
TARGET = _Kind("TARGET")
# What a refusal's reason is: one of the two kinds above, or the topology group that found
# no domain (TOPOLOGY); None: the refusal is not remembered.
Hold = _Kind | TopologyGroup | None


def class_key(
    pod: Pod,
    requests: Resources,
    requirements: Requirements,
    strict_requirements: Requirements,
    groups: Sequence[TopologyGroup],
    *,
    host_ports: bool | None = None,
) -> tuple[Hashable, Hashable] | None:
    """What the scheduler reads of a pod when it tries it on a target, as two hashable keys:
    the topology part (what topology groups read: namespace, labels, node requirements, the
    groups the pod owns) and the whole (plus requests and tolerations). None for a pod that
    gets no class (host ports; a negative request, which could make a target's room grow).
    `host_ports`: whether the pod has any, when the caller knows (read from the pod else)."""
    if host_ports is None:
        host_ports = any(p.host_port for c in pod.spec.containers for p in c.ports)
    if host_ports:
        return None
    if requests and min(requests.values()) < 0:
        return None
    meta = pod.metadata
    tolerations = pod.spec.tolerations
    topology = (
        meta.namespace,
        frozenset(meta.labels.items()),
        requirements,
        strict_requirements,
        tuple(id(g) for g in groups),
    )
    whole = (
        topology,
        frozenset(requests.items()),
        tuple((t.key, t.operator, t.value, t.effect) for t in tolerations) if tolerations else (),
    )
    return topology, whole


@dataclass(slots=True, eq=False)
class Refusals:
    """The targets that refused one pod class, and why (see the module docstring).

    `held` maps a target to (its reason, the version the reason was seen at: the group's
    epoch for TOPOLOGY, the target's version for TARGET, 0 for PERMANENT). A refusal *lasts*
    when it survives the target taking pods: PERMANENT, or TOPOLOGY by a (non-spread) group
    still at its epoch; `groups` are the groups lasting refusals rely on, and when one moves
    what was built on them is dropped (`revalidate`). Built on lasting refusals:
    - `existing_prefix`: how many leading existing nodes (the scheduler's order, fixed) refuse
      the class, so a scan starts after them;
    - `candidates`: the planned NodeClaims that do not (kept once a scan met many refusals),
      so a scan can walk them alone, in the scheduler's order, instead of every claim;
      `seen` is how many claims (creation order) they account for. `order` is a heap of
      (pod count, creation number, id) over them; a claim's count only grows, so an entry
      whose count is behind is put back with the right one when it comes up (`walk`).
    """

    held: dict[int, tuple[Hold, int]] = field(default_factory=dict)
    # Refusals that only topology decided (a group found no domain, or a hostname spread or
    # anti-affinity is at its limit): shared by the classes with the same topology part.
    shared: dict[int, tuple[Hold, int]] = field(default_factory=dict)
    existing_prefix: int = 0
    candidates: dict[int, Target] | None = None
    seen: int = 0
    order: list[tuple[int, int, int]] = field(default_factory=list)
    groups: dict[int, tuple[TopologyGroup, int]] = field(default_factory=dict)

    def refused(self, target: Target) -> bool:
        """Whether `target` refused the class for a reason that still holds."""
        hit = self.held.get(id(target))
        if hit is not None:
            hold, at = hit
            if hold is PERMANENT:
                return True
            if hold is TARGET:
                if target.version == at:
                    return True
            else:
                assert isinstance(hold, TopologyGroup)
                if hold.epoch == at:
                    return True
        hit = self.shared.get(id(target))
        if hit is None:
            return False
        hold, at = hit
        if hold is PERMANENT:
            return True
        assert isinstance(hold, TopologyGroup)
        return hold.epoch == at

    def note(self, target: Target, hold: Hold) -> None:
        """Remember that `target` refused the class for `hold` (nothing for None)."""
        if hold is None:
            self.held.pop(id(target), None)
        elif hold is PERMANENT:
            self.held[id(target)] = (hold, 0)
            self._drop(target)
        elif hold is TARGET:
            self.held[id(target)] = (hold, target.version)
        else:
            assert isinstance(hold, TopologyGroup)
            self.shared[id(target)] = (hold, hold.epoch)
            if hold.type is not TopologyType.SPREAD:
                self.groups[id(hold)] = (hold, hold.epoch)
                self._drop(target)

    def note_topology(self, target: Target) -> None:
        """Remember that a hostname spread or anti-affinity at its limit refused the class's
        topology part on `target` (for good: counts only grow)."""
        self.shared[id(target)] = (PERMANENT, 0)
        self._drop(target)

    def _drop(self, target: Target) -> None:
        if self.candidates is not None:
            self.candidates.pop(id(target), None)

    def revalidate(self) -> None:
        """Forget what lasting refusals built when a group they rely on has changed."""
        for group, at in self.groups.values():
            if group.epoch != at:
                self.existing_prefix = 0
                self.candidates = None
                self.groups.clear()
                return

    def _lasting(self, target: Target) -> bool:
        return self._lasting_in(self.held, target) or self._lasting_in(self.shared, target)

    def _lasting_in(self, held: dict[int, tuple[Hold, int]], target: Target) -> bool:
        hit = held.get(id(target))
        if hit is None:
            return False
        hold, at = hit
        if hold is PERMANENT:
            return True
        if isinstance(hold, TopologyGroup) and hold.type is not TopologyType.SPREAD:
            # A spread group's epoch moves with every pod it counts: not worth keeping.
            if hold.epoch != at:
                return False
            self.groups[id(hold)] = (hold, at)
            return True
        return False

    def extend(self, existing: Sequence[Target], full: Callable[[Target], bool]) -> None:
        """Grow the existing-node prefix over the nodes whose refusals last."""
        n = self.existing_prefix
        size = len(existing)
        held, shared = self.held, self.shared
        # A node whose refusal does not last (or that the class has not tried) is asked
        # `full`: requests that cannot fit it never will. Inlined (the scheduler extends
        # after every pod): a PERMANENT refusal lasts without more ado, and a node the class
        # has no refusal from is asked `full` alone.
        while n < size:
            target = existing[n]
            key = id(target)
            hit = held.get(key)
            if hit is not None and hit[0] is PERMANENT:
                n += 1
                continue
            if (hit is not None or key in shared) and self._lasting(target):
                n += 1
                continue
            if not full(target):
                break
            held[key] = (PERMANENT, 0)
            n += 1
        self.existing_prefix = n

    def keep_candidates(self, claims: Sequence[Target], count: Callable[[Target], int]) -> None:
        """Start keeping the candidates: every claim whose refusal is not known to last (a
        full claim is found out when its turn comes)."""
        candidates: dict[int, Target] = {}
        order: list[tuple[int, int, int]] = []
        held_get, shared_get = self.held.get, self.shared.get
        for seq, claim in enumerate(claims):
            key = id(claim)
            # `_lasting` (held, then shared), inlined for the common answers: this walks every
            # claim for every class that keeps candidates, and most have a lasting refusal.
            hit = held_get(key)
            if hit is not None and (
                hit[0] is PERMANENT or (hit[0] is not TARGET and self._lasting_in(self.held, claim))
            ):
                continue
            hit = shared_get(key)
            if hit is not None and (hit[0] is PERMANENT or self._lasting_in(self.shared, claim)):
                continue
            candidates[key] = claim
            order.append((count(claim), seq, key))
        heapq.heapify(order)
        self.candidates, self.order = candidates, order
        self.seen = len(claims)

    def walk(
        self,
        claims: Sequence[Target],
        count: Callable[[Target], int],
        take: Callable[[Target], bool],
    ) -> bool | None:
        """Offer the candidates to `take` in the scheduler's order (pod count, then creation)
        until one takes the pod: True; False when none did; None when no candidates are kept.
        Claims created since the last walk join first."""
        candidates = self.candidates
        if candidates is None:
            return None
        order = self.order
        for seq in range(self.seen, len(claims)):
            new = claims[seq]
            candidates[id(new)] = new
            heapq.heappush(order, (count(new), seq, id(new)))
        self.seen = len(claims)
        offered: list[tuple[int, int]] = []
        took = False
        while order:
            n, seq, key = heapq.heappop(order)
            claim = candidates.get(key)
            if claim is None:
                continue  # its refusal lasts
            now = count(claim)
            if now != n:
                heapq.heappush(order, (now, seq, key))  # it took pods since: later in order
                continue
            offered.append((seq, key))
            if take(claim):
                took = True
                break
        for seq, key in offered:
            back = candidates.get(key)
            if back is not None:
                heapq.heappush(order, (count(back), seq, key))
        return took
