"""Reserved offerings: one per capacity reservation a node class selected, on its instance type
(aws/karpenter-provider-aws `pkg/providers/instancetype/offering/reserved_capacity_resolver.go`
and the reservation part of `pkg/providers/instancetype/types.go: computeRequirements`).

For each reservation of the type (its instance type), one offering in the reservation's zone:
capacity type `reserved`, its id, type (`default` | `capacity-block`) and whether it is
interruptible as the offering's reservation labels, priced at the type's on-demand price divided
by 10,000,000 (so reserved capacity is all but free and types keep their on-demand order; 0 when
the type has no on-demand price), carrying the reservation's free count
(`reservation_capacity`), and available only when that count is not zero, the type is offered in
the zone and the reservation is not `expiring` (a capacity block in its last 40 minutes). A type
with reservations also gets `reserved` among its capacity types and the reservations' values on
the three reservation labels. Types without one are returned as they are (Karpenter gives them
`DoesNotExist` on the reservation labels; their spot and on-demand offerings refuse a
requirement on those labels all the same, `Offering.reservation_allowed`, so only the words of
an incompatibility differ).

Called by the instance-type provider (`provider.py`) with the node class's resolved
reservations and the capacity-reservation provider's counts; pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_TYPE,
    ZONE,
)
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirement

__all__ = ["RESERVED_PRICE_DIVISOR", "ReservedCapacity", "with_reserved_offerings"]

# reserved_capacity_resolver.go: a reserved offering costs the on-demand price over this.
RESERVED_PRICE_DIVISOR: Final = 10_000_000.0
RESERVED: Final = "reserved"


@dataclass(frozen=True, slots=True)
class ReservedCapacity:
    """What an offering reads of one resolved reservation (the node class's
    `status.capacityReservations` entry and the provider's free count)."""

    id: str
    instance_type: str
    zone: str
    reservation_type: str = "default"  # "default" | "capacity-block"
    interruptible: bool = False
    available: int = 0  # free instances (the capacity-reservation provider's count)
    expiring: bool = False  # a capacity block in its last 40 minutes


def _on_demand_price(it: InstanceType) -> float:
    prices = [o.price for o in it.offerings if o.capacity_type == "on-demand"]
    return min(prices) if prices else 0.0


def with_reserved_offerings(
    types: Sequence[InstanceType], reservations: Sequence[ReservedCapacity]
) -> tuple[InstanceType, ...]:
    """`types` with a reserved offering per reservation of theirs (see the module docstring),
    in the reservations' order; a type without reservation is the same object."""
    by_type: dict[str, list[ReservedCapacity]] = {}
    for r in reservations:
        by_type.setdefault(r.instance_type, []).append(r)
    out: list[InstanceType] = []
    for it in types:
        mine = by_type.get(it.name)
        if not mine:
            out.append(it)
            continue
        zones = it.requirements.get(ZONE)
        price = _on_demand_price(it) / RESERVED_PRICE_DIVISOR
        reserved = tuple(
            Offering(
                r.zone,
                RESERVED,
                price,
                r.available != 0 and not r.expiring and (zones is None or zones.has(r.zone)),
                reservation_id=r.id,
                reservation_type=r.reservation_type,
                interruptible=r.interruptible,
                reservation_capacity=r.available,
            )
            for r in mine
        )
        ct = it.requirements.get_or_exists(CAPACITY_TYPE)
        capacity_types = sorted({*ct.values, RESERVED}) if not ct.complement else None
        reqs = it.requirements.without(
            CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE, CAPACITY_RESERVATION_INTERRUPTIBLE
        ).add(
            Requirement.new(CAPACITY_RESERVATION_ID, "In", sorted({r.id for r in mine})),
            Requirement.new(
                CAPACITY_RESERVATION_TYPE, "In", sorted({r.reservation_type for r in mine})
            ),
            Requirement.new(
                CAPACITY_RESERVATION_INTERRUPTIBLE,
                "In",
                sorted({"true" if r.interruptible else "false" for r in mine}),
            ),
        )
        if capacity_types is not None:
            reqs = reqs.without(CAPACITY_TYPE).add(
                Requirement.new(CAPACITY_TYPE, "In", capacity_types)
            )
        out.append(
            InstanceType(it.name, reqs, it.capacity, it.allocatable, (*it.offerings, *reserved))
        )
    return tuple(out)
