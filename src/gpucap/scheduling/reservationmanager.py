"""The reservations a scheduling pass hands out: how many instances of each capacity
reservation its planned NodeClaims may still count on (kubernetes-sigs/karpenter @ 2266468104f3
`pkg/controllers/provisioning/scheduling/reservationmanager.go`).

Built once per pass from the instance types' reserved offerings: a reservation starts at the
free count its offerings carry (`Offering.reservation_capacity`, the cloud provider's cache),
the smallest when several offerings name it (NodePools sharing a node class each see it). A
planned NodeClaim (by its placeholder hostname) holds at most one slot of a reservation:
`reserve` is idempotent per (hostname, reservation), `release` gives the slot back.
`can_reserve` is true when the host already holds it or a slot is left. Karpenter panics on a
reservation it was not built with and on reserving past zero; here both are `ValueError`s
(a bug, never input). Built by the scheduler (`scheduler.py`); asked by its NodeClaims
(`nodeclaim.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from gpucap.scheduling.instancetypes import InstanceType, Offering

__all__ = ["ReservationManager", "with_reservations_used"]

_RESERVED = "reserved"


class ReservationManager:
    """Karpenter's `ReservationManager` (see the module docstring)."""

    def __init__(self, instance_types: Iterable[Iterable[InstanceType]]) -> None:
        self._left: dict[str, int] = {}
        # NodePools of one node class share their types' sequence: each is read once (the
        # minimum below is the same however often an offering is seen).
        unique = {id(types): types for types in instance_types}
        for types in unique.values():
            for it in types:
                for o in it.offerings:
                    if o.capacity_type != _RESERVED or not o.reservation_id:
                        continue
                    known = self._left.get(o.reservation_id)
                    capacity = max(0, o.reservation_capacity)
                    self._left[o.reservation_id] = (
                        capacity if known is None else min(known, capacity)
                    )
        self._held: dict[str, set[str]] = {}  # hostname -> reservation ids it holds

    def __bool__(self) -> bool:
        """Whether the pass has any reservation at all (nothing to do otherwise)."""
        return bool(self._left)

    def _known(self, offering: Offering) -> str:
        rid = offering.reservation_id
        if rid not in self._left:
            raise ValueError(f"reservation {rid!r} is not one this pass was built with")
        return rid

    def can_reserve(self, hostname: str, offering: Offering) -> bool:
        rid = self._known(offering)
        return rid in self._held.get(hostname, ()) or self._left[rid] > 0

    def reserve(self, hostname: str, *offerings: Offering) -> None:
        held = self._held.setdefault(hostname, set())
        for offering in offerings:
            rid = self._known(offering)
            if rid in held:
                continue
            if self._left[rid] <= 0:
                raise ValueError(f"reservation {rid!r} has no instance left to reserve")
            self._left[rid] -= 1
            held.add(rid)

    def release(self, hostname: str, *offerings: Offering) -> None:
        held = self._held.get(hostname)
        if not held:
            return
        for offering in offerings:
            rid = offering.reservation_id
            if rid in held:
                held.discard(rid)
                self._left[rid] += 1

    def remaining(self, reservation_id: str) -> int:
        """How many instances of the reservation no planned NodeClaim holds (0 when unknown)."""
        return self._left.get(reservation_id, 0)

    def held(self, hostname: str) -> frozenset[str]:
        """The reservation ids `hostname` holds."""
        return frozenset(self._held.get(hostname, ()))


def with_reservations_used(
    types: Sequence[InstanceType], used: Mapping[str, int]
) -> Sequence[InstanceType]:
    """`types` as a later pass sees them after `used` launches into each reservation (the
    capacity-reservation provider's `MarkLaunched`: the free count goes down, and an offering
    whose count reaches zero is unavailable). `types` itself when no reserved offering of theirs
    was used. Called by `plan`'s provisioning loop between passes (the simulator's provider
    keeps the counts itself)."""
    out: list[InstanceType] = []
    changed = False
    for it in types:
        offerings = tuple(
            replace(
                o,
                reservation_capacity=max(0, o.reservation_capacity - used[o.reservation_id]),
                available=o.available and o.reservation_capacity - used[o.reservation_id] > 0,
            )
            if o.reservation_id and used.get(o.reservation_id)
            else o
            for o in it.offerings
        )
        if offerings == it.offerings:
            out.append(it)
            continue
        changed = True
        out.append(InstanceType(it.name, it.requirements, it.capacity, it.allocatable, offerings))
    return tuple(out) if changed else types
