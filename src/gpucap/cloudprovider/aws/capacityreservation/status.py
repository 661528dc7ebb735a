"""The EC2NodeClass's `status.capacityReservations`, as Karpenter writes it (aws
`pkg/controllers/nodeclass/capacityreservation.go`, types in `pkg/apis/v1/ec2nodeclass_status.go`).

The node class controller lists the selected reservations every minute (sooner when one ends
before then: `requeue_after`) and writes one entry per reservation, sorted by ID. An entry's
`state` is Karpenter's, not EC2's: `expiring` for a Capacity Block within 40 minutes of its end
(EC2 starts reclaiming its instances then; `CapacityReservationFromEC2`), `active` otherwise --
an ODCR with an end date never becomes `expiring`. `interruptible` is EC2's flag (false when
absent). With no reservation selected the status has no `capacityReservations`.
Called by whoever renders the node class status (the cloud provider's `nodeclass_status`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from gpucap.cloudprovider.aws.capacityreservation.provider import CapacityReservation
from gpucap.runtime.rfc3339 import format_rfc3339

__all__ = [
    "CAPACITY_BLOCK_EXPIRATION_PERIOD",
    "POLL_PERIOD",
    "CapacityReservationStatus",
    "nodeclass_capacity_reservations",
    "requeue_after",
]

# ec2nodeclass_status.go capacityReservationExpirationPeriod: a Capacity Block is `expiring`
# this long before its EndDate.
CAPACITY_BLOCK_EXPIRATION_PERIOD: Final = dt.timedelta(minutes=40)
# capacityreservation.go capacityReservationPollPeriod.
POLL_PERIOD: Final = dt.timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class CapacityReservationStatus:
    """One `status.capacityReservations` entry (Karpenter's `v1.CapacityReservation`)."""

    availability_zone: str
    end_time: dt.datetime | None
    id: str
    instance_match_criteria: str
    instance_type: str
    owner_id: str
    reservation_type: str  # default | capacity-block
    interruptible: bool
    state: Literal["active", "expiring"]

    @classmethod
    def of(cls, reservation: CapacityReservation, now: dt.datetime) -> CapacityReservationStatus:
        expiring = (
            reservation.is_capacity_block
            and reservation.end is not None
            and now >= reservation.end - CAPACITY_BLOCK_EXPIRATION_PERIOD
        )
        return cls(
            availability_zone=reservation.zone,
            end_time=reservation.end,
            id=reservation.id,
            instance_match_criteria=reservation.instance_match_criteria,
            instance_type=reservation.instance_type,
            owner_id=reservation.owner_id,
            reservation_type=reservation.reservation_type,
            interruptible=reservation.interruptible,
            state="expiring" if expiring else "active",
        )

    def to_status(self) -> dict[str, Any]:
        """The entry as the API server shows it (JSON field names; `endTime` omitted when the
        reservation never ends, RFC 3339 in UTC to the second as metav1.Time writes it)."""
        out: dict[str, Any] = {"availabilityZone": self.availability_zone}
        if self.end_time is not None:
            out["endTime"] = format_rfc3339(self.end_time)
        out.update(
            {
                "id": self.id,
                "instanceMatchCriteria": self.instance_match_criteria,
                "instanceType": self.instance_type,
                "ownerID": self.owner_id,
                "reservationType": self.reservation_type,
                "interruptible": self.interruptible,
                "state": self.state,
            }
        )
        return out


def nodeclass_capacity_reservations(
    reservations: Iterable[CapacityReservation], now: dt.datetime
) -> list[CapacityReservationStatus]:
    """The status entries for the listed reservations at `now`, sorted by ID."""
    return sorted((CapacityReservationStatus.of(r, now) for r in reservations), key=lambda s: s.id)


def requeue_after(reservations: Iterable[CapacityReservation], now: dt.datetime) -> dt.timedelta:
    """When the controller lists again: the poll period, or sooner when a reservation ends
    before then (at once if one has ended); Karpenter's `requeueAfter`."""
    ends = [r.end for r in reservations if r.end is not None]
    if not ends:
        return POLL_PERIOD
    until = min(ends) - now
    if until < POLL_PERIOD:
        return max(until, dt.timedelta(0))
    return POLL_PERIOD
