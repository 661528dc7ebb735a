"""Pod equivalence classes, and which placement targets have already refused each class.

Karpenter tries every pending pod against every existing node and every planned NodeClaim in
order, and takes the first that accepts it. Most pods of a fleet are replicas: pods of one
class (the same namespace, labels, requests, node requirements, tolerations and topology
groups) get the same answer from a target in the same state. The scheduler (`solver.py`) keeps
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

Pods with host ports are left out (a refusal there depends on the pod's own key).
Called by the scheduler; the equivalence property test (`tests/scheduling/
test_podclasses.py`) solves random workloads with and without classes and compares.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
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
) -> tuple[Hashable, Hashable] | None:
    """What the scheduler reads of a pod when it tries it on a target, as two hashable keys:
    the topology part (what topology groups read: namespace, labels, node requirements, the
    groups the pod owns) and the whole (plus requests and tolerations). None for a pod that
    gets no class (host ports; a negative request, which could make a target's room grow)."""
    if any(p.host_port for c in pod.spec.containers for p in c.ports):
        return None
    if any(v < 0 for v in requests.values()):
        return None
    meta = pod.metadata
    topology = (
        meta.namespace or "default",
        frozenset(meta.labels.items()),
        requirements,
        strict_requirements,
        tuple(id(g) for g in groups),
    )
    whole = (
        topology,
        frozenset(requests.items()),
        tuple((t.key, t.operator, t.value, t.effect) for t in pod.spec.tolerations),
    )
    return topology, whole


@dataclass(slots=True, eq=False)
class Refusals:
    """The targets that refused one pod class, and why (see the module docstring).

    `held` maps a target to (its reason, the version the reason was seen at: the group's
    epoch for TOPOLOGY, the target's version for TARGET, 0 for PERMANENT). The prefixes say
    how many leading existing nodes (in the scheduler's order) and planned NodeClaims (in
    creation order) are known to refuse the class for reasons that survive their taking
    pods (PERMANENT, or a non-spread TOPOLOGY group still at the epoch in `prefix_groups`),
    so a scan can start after them.
    """

    held: dict[int, tuple[Hold, int]] = field(default_factory=dict)
    # Refusals that only topology decided (a group found no domain, or a hostname spread or
    # anti-affinity is at its limit): shared by the classes with the same topology part.
    shared: dict[int, tuple[Hold, int]] = field(default_factory=dict)
    existing_prefix: int = 0
    claim_prefix: int = 0
    prefix_groups: dict[int, tuple[TopologyGroup, int]] = field(default_factory=dict)

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
        elif hold is TARGET:
            self.held[id(target)] = (hold, target.version)
        else:
            assert isinstance(hold, TopologyGroup)
            self.shared[id(target)] = (hold, hold.epoch)

    def note_topology(self, target: Target) -> None:
        """Remember that a hostname spread or anti-affinity at its limit refused the class's
        topology part on `target` (for good: counts only grow)."""
        self.shared[id(target)] = (PERMANENT, 0)

    def revalidate(self) -> None:
        """Forget the prefixes when a group they rely on has changed."""
        for group, at in self.prefix_groups.values():
            if group.epoch != at:
                self.existing_prefix = self.claim_prefix = 0
                self.prefix_groups.clear()
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
            # A spread group's epoch moves with every pod it counts: not worth a prefix.
            if hold.epoch != at:
                return False
            self.prefix_groups[id(hold)] = (hold, at)
            return True
        return False

    def extend(self, existing: Sequence[Target], claims: Sequence[Target]) -> None:
        """Grow both prefixes over the targets whose refusals last."""
        n = self.existing_prefix
        while n < len(existing) and self._lasting(existing[n]):
            n += 1
        self.existing_prefix = n
        n = self.claim_prefix
        while n < len(claims) and self._lasting(claims[n]):
            n += 1
        self.claim_prefix = n
