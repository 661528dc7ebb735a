"""One instance of the simulated EC2 and its lifecycle on the clock (`SimulatedEC2` holds them).

`pending` for `LAUNCH_LATENCY`, then `running`; a spot instance under an interruption warning
is reclaimed when the two-minute notice runs out, an instance EC2 takes back by itself (a
Capacity Block's end, a reclaimed interruptible reservation) at its `reclaim_at`; a terminated
one is `shutting-down` for `TERMINATION_LATENCY`, then `terminated`. Read by the simulated
EC2's describe and fleet paths (`ec2.py`, `reservations.py`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

__all__ = [
    "LAUNCH_LATENCY",
    "SPOT_INTERRUPTION_NOTICE",
    "TERMINATION_LATENCY",
    "SimulatedInstance",
]

# Time from CreateFleet to a running instance; EC2 typically reports 10-30 s. The node still
# has to boot and join (the simulator's kubelet model adds that).
LAUNCH_LATENCY = dt.timedelta(seconds=15)
# EC2 spot: the interruption warning comes two minutes before the instance is reclaimed.
SPOT_INTERRUPTION_NOTICE = dt.timedelta(minutes=2)
TERMINATION_LATENCY = dt.timedelta(seconds=30)


@dataclass(slots=True)
class SimulatedInstance:
    instance_id: str
    instance_type: str
    zone: str
    subnet_id: str
    image_id: str
    capacity_type: str
    price: float
    launched_at: dt.datetime
    tags: dict[str, str]
    terminated_at: dt.datetime | None = None
    interrupted_at: dt.datetime | None = None
    # The capacity reservation it runs in, and until when EC2 describes it there (None: the
    # reservation has no end); `reservation_type` "default" | "capacity-block".
    reservation_id: str = ""
    reservation_type: str = ""
    interruptible: bool = False
    reservation_until: dt.datetime | None = None
    # When EC2 takes it back by itself (a Capacity Block's end, a reclaimed interruptible
    # reservation); None: never.
    reclaim_at: dt.datetime | None = None

    def in_reservation(self, now: dt.datetime) -> bool:
        """Whether EC2 describes it in its reservation at `now`."""
        return bool(self.reservation_id) and (
            self.reservation_until is None or now < self.reservation_until
        )

    def advance(self, now: dt.datetime) -> str:
        """Bring the instance to `now` and return its EC2 state: an interrupted spot instance
        is reclaimed (its `terminated_at` set) when the two-minute notice runs out, which is why
        this is not a pure read. Called by the simulated EC2 API's describe and fleet paths."""
        if (
            self.interrupted_at is not None
            and now >= self.interrupted_at + SPOT_INTERRUPTION_NOTICE
        ):
            # EC2 reclaims the instance when the two-minute notice runs out.
            end = self.interrupted_at + SPOT_INTERRUPTION_NOTICE
            if self.terminated_at is None or self.terminated_at > end:
                self.terminated_at = end
        reclaim = self.reclaim_at
        if (
            reclaim is not None
            and now >= reclaim
            and (self.terminated_at is None or self.terminated_at > reclaim)
        ):
            self.terminated_at = reclaim
        if self.terminated_at is not None:
            return (
                "terminated" if now >= self.terminated_at + TERMINATION_LATENCY else "shutting-down"
            )
        return "running" if now >= self.launched_at + LAUNCH_LATENCY else "pending"
