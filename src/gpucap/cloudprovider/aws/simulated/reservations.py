"""EC2's side of capacity reservations, for `SimulatedEC2` (a mixin it inherits).

`reservations` (a reservations file): DescribeCapacityReservations answers from it at the
clock's time (`capacityreservation/describe.py`: a scheduled one turns active at its start, one
with an end expires then), with the free count EC2 would report: the file's
`AvailableInstanceCount` less the instances launched into it that are not terminated. A fleet
whose launch template targets a reservation (`capacity-reservations-only`) launches only into
it: `ReservationCapacityExceeded` when it has no instance free, `InsufficientInstanceCapacity`
when it is not active or is another type or zone. An instance in a reservation is described
with its `CapacityReservationId` while the reservation lasts (an ODCR's instances run on as
on-demand after its end; EC2 clears the ID) and, for a Capacity Block, with the
`capacity-block` lifecycle; EC2 takes a Capacity Block's instances back from 30 minutes before
its end (`CAPACITY_BLOCK_RECLAIM`), and an interruptible reservation's two minutes after
`reclaim` (`INTERRUPTIBLE_NOTICE`). `reservation_times` lists when any of that happens, for
the simulator's timers. The instance side (`reservation_id`, `reclaim_at`) is on
`SimulatedInstance` (`ec2.py`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gpucap.apis.capacityreservation import CapacityReservationItem, Reservations
from gpucap.cloudprovider.aws.capacityreservation.describe import FileReservationsAPI, state_at
from gpucap.cloudprovider.aws.capacityreservation.status import (
    CAPACITY_BLOCK_EXPIRATION_PERIOD as CAPACITY_BLOCK_EXPIRING,
)
from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.runtime.clock import Clock

if TYPE_CHECKING:
    from gpucap.cloudprovider.aws.simulated.instance import SimulatedInstance

__all__ = ["CAPACITY_BLOCK_RECLAIM", "INTERRUPTIBLE_NOTICE", "ReservationsEC2"]

# EC2 starts terminating a Capacity Block's instances this long before its end (the EC2 user
# guide, "Capacity Blocks"; 60 minutes for UltraServer types, not modelled).
CAPACITY_BLOCK_RECLAIM = dt.timedelta(minutes=30)
# An interruptible reservation's owner reclaims it: its instances get this warning first (the
# EC2 user guide, "interruptible Capacity Reservations").
INTERRUPTIBLE_NOTICE = dt.timedelta(minutes=2)


class ReservationsEC2:
    """The capacity-reservation calls and state of `SimulatedEC2` (see the module docstring);
    the attributes below are the simulated EC2's own."""

    clock: Clock
    instances: dict[str, SimulatedInstance]
    calls: list[str]
    reservations: Reservations
    template_data: dict[str, dict[str, Any]]
    _reclaimed: dict[str, dt.datetime]
    _touch: Callable[[str], None]
    _changed: Callable[[str], None]

    def describe_capacity_reservations(self, **kwargs: Any) -> Response:
        """EC2's answer from `reservations` at the clock's time (capacityreservation/describe),
        each with the free count it has now (`reservation_available`)."""
        self.calls.append("DescribeCapacityReservations")
        live = Reservations(
            capacity_reservations=tuple(
                item.model_copy(
                    update={"available_instance_count": self.reservation_available(item)}
                )
                for item in self.reservations.capacity_reservations
            )
        )
        api = FileReservationsAPI(live, self.clock)
        return api.describe_capacity_reservations(**kwargs)

    # ---- capacity reservations -----------------------------------------------------------------
    def _reservation(self, reservation_id: str) -> CapacityReservationItem | None:
        return next(
            (
                r
                for r in self.reservations.capacity_reservations
                if r.capacity_reservation_id == reservation_id
            ),
            None,
        )

    def reservation_available(self, item: CapacityReservationItem) -> int:
        """The instances `item` has free now: the file's count less the instances launched
        into it that EC2 has not terminated (a reclaimed interruptible reservation: none)."""
        if item.capacity_reservation_id in self._reclaimed:
            return 0
        now = self.clock.now()
        used = sum(
            1
            for inst in self.instances.values()
            if inst.reservation_id == item.capacity_reservation_id
            and inst.advance(now) not in ("terminated", "shutting-down")
        )
        return max(0, item.available_instance_count - used)

    def reservation_state(self, item: CapacityReservationItem) -> str:
        """EC2's state of `item` now (`describe.state_at`)."""
        return state_at(item, self.clock.now())

    def reclaim(self, reservation_id: str) -> dt.datetime:
        """The owner of an interruptible reservation takes it back: its instances get the
        two-minute warning and are terminated then, and it has no instance free from now on.
        Returns when the instances go. Called by a scenario's `reclaim` event."""
        item = self._reservation(reservation_id)
        if item is None:
            raise EC2APIError(
                "InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{reservation_id}' does not exist",
            )
        if not item.interruptible:
            raise EC2APIError(
                "InvalidParameterValue", f"{reservation_id} is not an interruptible reservation"
            )
        now = self.clock.now()
        self._reclaimed[reservation_id] = now
        end = now + INTERRUPTIBLE_NOTICE
        for inst in self.instances.values():
            if inst.reservation_id == reservation_id and inst.terminated_at is None:
                inst.reclaim_at = end
                self._touch(inst.instance_id)
        self._changed("reservations")
        return end

    def reservation_interruptions(self) -> list[tuple[str, dt.datetime]]:
        """Instances of reclaimed interruptible reservations under their warning and not yet
        gone: (id, when EC2 takes them)."""
        now = self.clock.now()
        return [
            (i.instance_id, i.reclaim_at)
            for i in sorted(self.instances.values(), key=lambda i: i.instance_id)
            if i.reservation_id in self._reclaimed
            and i.reclaim_at is not None
            and i.advance(now) not in ("terminated", "shutting-down")
        ]

    def reservation_times(self) -> list[dt.datetime]:
        """Every time after now at which a reservation changes by itself (a start, an end, a
        Capacity Block's reclaim 30 minutes before its end, a Capacity Block's 40-minute
        `expiring` mark Karpenter reads): the simulator sets a timer for each (`ended`)."""
        now = self.clock.now()
        out: set[dt.datetime] = set()
        for r in self.reservations.capacity_reservations:
            for t in (r.start_date, r.end_date):
                if t is not None and t > now:
                    out.add(t)
            if r.reservation_type == "capacity-block" and r.end_date is not None:
                for lead in (CAPACITY_BLOCK_RECLAIM, CAPACITY_BLOCK_EXPIRING):
                    if r.end_date - lead > now:
                        out.add(r.end_date - lead)
        return sorted(out)

    def _target_reservation(self, config: Mapping[str, Any]) -> CapacityReservationItem | None:
        """The reservation a launch template config's template targets (preference
        `capacity-reservations-only`), None for an ordinary one; an ID the account does not
        have is EC2's error."""
        spec = config.get("LaunchTemplateSpecification") or {}
        data = self.template_data.get(spec.get("LaunchTemplateName", ""), {})
        crs = data.get("CapacityReservationSpecification") or {}
        if crs.get("CapacityReservationPreference") != "capacity-reservations-only":
            return None
        rid = (crs.get("CapacityReservationTarget") or {}).get("CapacityReservationId", "")
        item = self._reservation(rid)
        if item is None:
            raise EC2APIError(
                "InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{rid}' does not exist",
                operation="CreateFleet",
            )
        return item

    def _reservation_refusal(
        self, item: CapacityReservationItem, instance_type: str, zone: str
    ) -> tuple[str, str] | None:
        """Why EC2 cannot launch `instance_type` in `zone` into `item` now (error code and
        message), None when it can."""
        rid = item.capacity_reservation_id
        if (item.instance_type, item.availability_zone) != (instance_type, zone):
            return (
                "InsufficientInstanceCapacity",
                f"The capacity reservation {rid} is for {item.instance_type} in "
                f"{item.availability_zone}.",
            )
        if self.reservation_state(item) != "active" or rid in self._reclaimed:
            return (
                "InsufficientInstanceCapacity",
                f"The capacity reservation {rid} is not active.",
            )
        if self.reservation_available(item) <= 0:
            return (
                "ReservationCapacityExceeded",
                f"The capacity reservation {rid} has no available capacity.",
            )
        return None
