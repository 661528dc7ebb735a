"""Capacity reservations in the simulated world: EC2's side on the clock and Karpenter's
capacity-reservation controllers (issue 24).

The world builds a `ReservationActor` only when the scenario has reservations, so a run without
them does no work here. It
- sets a timer at every instant a reservation changes by itself (`SimulatedEC2.
  reservation_times`: a start, an end, a Capacity Block's `expiring` mark 40 minutes before its
  end and EC2's reclaim 30 minutes before it) and calls `ec2.ended("reservations")` there, so
  the provisioner and the disruption loop look again; the node classes' reserved offerings
  then appear or disappear as the capacity-reservation provider's 1-minute query cache lets
  them (Karpenter's cache, kept);
- runs Karpenter's two singletons every minute (`controllers/capacityreservation/`):
  `expiration` (deletes the NodeClaims of an expiring Capacity Block) and `capacitytype`
  (demotes a reserved NodeClaim whose instance left its reservation to on-demand);
- plays a scenario `reclaim` event (`SimulatedEC2.reclaim`): each instance of the reservation
  gets EC2's two-minute warning, which Karpenter's interruption controller handles as
  `capacity_reservation_interrupted` (`controllers/interruption.py`: the reservation marked
  unavailable, the NodeClaim deleted), and EC2 takes the instances back at its end;
- tells the kubelet when EC2 took an instance back (a Capacity Block's end, a reclaim).
Events: `CapacityReservationChanged` (a reservation's state, gpucap's), `CapacityReservation
InstanceInterrupted` (Karpenter's event name), `DisruptionDecision` with the controllers'
reasons, `CapacityTypeDemoted`. Called by `sim/world.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping

from gpucap.apis.capacityreservation import CapacityReservationItem
from gpucap.apis.ec2nodeclass import CapacityReservationSelectorTerm
from gpucap.cloudprovider.aws.capacityreservation.provider import CapacityReservationProvider
from gpucap.cloudprovider.aws.capacityreservation.status import (
    CAPACITY_BLOCK_EXPIRATION_PERIOD,
    CapacityReservationStatus,
)
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.aws.simulated.reservations import CAPACITY_BLOCK_RECLAIM
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.capacityreservation.capacitytype import CapacityTypeDemotion
from gpucap.controllers.capacityreservation.expiration import (
    REQUEUE_SECONDS,
    CapacityReservationExpiration,
)
from gpucap.controllers.interruption import CAPACITY_RESERVATION_INTERRUPTED, Interruption
from gpucap.controllers.nodeclaim.termination import Termination, TerminationResult
from gpucap.runtime.clock import Clock
from gpucap.sim.bus import PRIORITY_CONTROLLER, PRIORITY_KUBELET, PRIORITY_SCENARIO, Bus
from gpucap.state.cluster import Cluster

__all__ = ["ReservationActor", "ReservationStatesOf"]


class ReservationStatesOf:
    """The capacity-reservation provider as the expiration controller reads it: Karpenter's
    state of each reservation it still discovers by ID (through its query cache)."""

    def __init__(self, provider: CapacityReservationProvider, clock: Clock) -> None:
        self.provider = provider
        self.clock = clock

    def states(self, ids: Collection[str]) -> Mapping[str, str]:
        found = self.provider.list([CapacityReservationSelectorTerm(id=i) for i in ids])
        now = self.clock.now()
        return {r.id: CapacityReservationStatus.of(r, now).state for r in found}


class ReservationActor:
    """Reservations on the clock and Karpenter's controllers for them (see the module
    docstring)."""

    name = "capacityreservation"

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        ec2: SimulatedEC2,
        *,
        cloud: CloudProvider,
        provider: CapacityReservationProvider,
        termination: Termination,
        interruption: Interruption,
        clock: Clock,
        until: float,
        terminated: Callable[[str, TerminationResult], None],
        reconcile_claim: Callable[[str], None],
        reclaimed: Callable[[str, str], None],
    ) -> None:
        self.bus = bus
        self.cluster = cluster
        self.ec2 = ec2
        self.clock = clock
        self.until = until
        self.interruption = interruption
        self.terminated = terminated
        self.reconcile_claim = reconcile_claim
        self.reclaimed = reclaimed
        self.expiration = CapacityReservationExpiration(
            cluster, termination, ReservationStatesOf(provider, clock)
        )
        self.demotion = CapacityTypeDemotion(cluster, cloud)
        self._told_gone: set[str] = set()
        # Reservation ID -> when a scenario's `reclaim` took it back (for the bill).
        self.reclaimed_at: dict[str, dt.datetime] = {}

    # ---- the clock ----------------------------------------------------------------------------
    def start(self) -> None:
        """Set the timers (called once, when the run starts)."""
        engine = self.bus.engine
        start = engine.clock_at(0.0)
        for r in self.ec2.reservations.capacity_reservations:
            for when, state in _changes(r):
                t = (when - start).total_seconds()
                if 0 < t <= self.until:
                    engine.at(
                        t,
                        lambda r=r, state=state: self._changed(r, state),  # type: ignore[misc]
                        priority=PRIORITY_SCENARIO,
                        label=f"reservation {r.capacity_reservation_id} {state}",
                    )
        engine.every(self, priority=PRIORITY_CONTROLLER + 4)

    def _changed(self, item: CapacityReservationItem, state: str) -> None:
        self.bus.emit(
            "CapacityReservationChanged",
            reservation=item.capacity_reservation_id,
            reservationType=item.reservation_type,
            instanceType=item.instance_type,
            zone=item.availability_zone,
            state=state,
        )
        self.ec2.ended("reservations")
        if state == "reclaiming":
            self._gone("CapacityBlockEnded")
        self.bus.trigger_provisioning()
        self.bus.engine.trigger(self)

    def _gone(self, reason: str) -> None:
        """Tell the kubelet of every NodeClaim whose instance EC2 has now taken back."""
        now = self.clock.now()
        for inst in sorted(self.ec2.instances.values(), key=lambda i: i.instance_id):
            if (
                inst.reclaim_at is not None
                and inst.reclaim_at <= now
                and inst.instance_id not in self._told_gone
            ):
                self._told_gone.add(inst.instance_id)
                claim = self._claim_of(inst.instance_id)
                if claim is not None:
                    self.ec2.ended("instances")
                    self.reclaimed(claim, reason)

    def _claim_of(self, instance_id: str) -> str | None:
        for c in self.cluster.node_claims():
            if (c.status.provider_id or "").rsplit("/", 1)[-1] == instance_id:
                return c.name
        return None

    # ---- the controllers (one reconciler: both run every minute) --------------------------
    def reconcile(self) -> float | None:
        for name in self.expiration.reconcile():
            self.bus.emit(
                "DisruptionDecision",
                nodeClaim=name,
                reason="CapacityBlockExpiring",
                method="capacityreservation.expiration",
            )
            self.reconcile_claim(name)
        for name in self.demotion.reconcile():
            self.bus.emit("CapacityTypeDemoted", nodeClaim=name, capacityType="on-demand")
        return REQUEUE_SECONDS

    # ---- a scenario's reclaim ----------------------------------------------------------------
    def reclaim(self, index: int, reservation_id: str) -> None:
        """The owner of interruptible reservation `reservation_id` takes it back."""
        self.bus.emit(
            "ScenarioEvent", index=index, kind="reclaim", detail=f"reclaim {reservation_id}"
        )
        end = self.ec2.reclaim(reservation_id)
        self.reclaimed_at[reservation_id] = self.clock.now()
        warned = [i for i, _ in self.ec2.reservation_interruptions()]
        for result in self.interruption.handle(CAPACITY_RESERVATION_INTERRUPTED, warned):
            self.bus.emit(
                "CapacityReservationInstanceInterrupted",
                nodeClaim=result.node_claim,
                node=result.node,
                reservation=reservation_id,
            )
            self.bus.emit(
                "DisruptionDecision",
                nodeClaim=result.node_claim,
                reason="CapacityReservationInterrupted",
            )
            if result.termination is not None:
                self.terminated(result.node_claim, result.termination)
        self.bus.trigger_provisioning()
        self.bus.engine.after(
            (end - self.clock.now()).total_seconds(),
            lambda: self._gone("CapacityReservationInterrupted"),
            priority=PRIORITY_KUBELET,
            label=f"EC2 reclaims {reservation_id}",
        )


def _changes(r: CapacityReservationItem) -> list[tuple[dt.datetime, str]]:
    """When `r` changes by itself and its state from then on (gpucap's words)."""
    out: list[tuple[dt.datetime, str]] = []
    if r.start_date is not None:
        out.append((r.start_date, "active"))
    if r.end_date is not None:
        if r.reservation_type == "capacity-block":
            out.append((r.end_date - CAPACITY_BLOCK_EXPIRATION_PERIOD, "expiring"))
            out.append((r.end_date - CAPACITY_BLOCK_RECLAIM, "reclaiming"))
        out.append((r.end_date, "expired"))
    return out


# ---- the bill ------------------------------------------------------------------------------------
def reservation_summary(
    ec2: SimulatedEC2,
    reclaimed: Mapping[str, dt.datetime],
    *,
    start: dt.datetime,
    end: float,
) -> list[dict[str, object]]:
    """Per reservation, over the run: what it cost (`paid`), the instance-hours it held
    (`capacityHours`, within the run), those its instances used (`usedHours`) and those left
    idle (`idleHours`). A Capacity Block is paid up front for its whole duration at the instance
    type's on-demand price x its instance count x its hours (gpucap's assumption: EC2 prices
    each block when it is bought; the file does not say); an ODCR costs the on-demand price of
    every reserved instance while it is active within the run, used or not. The nodes' own bill
    (the summary's cost) is unchanged: EC2 records an instance in a reservation at the
    on-demand price, so a used ODCR slot is counted there too; `idle` is what the reservation
    cost beyond the instances that ran in it. `reclaimed`: when a `reclaim` event took an
    interruptible reservation back (it holds nothing from then on)."""
    run_end = start + dt.timedelta(seconds=end)
    prices = ec2.catalog.available_prices("on-demand")
    out: list[dict[str, object]] = []
    for r in ec2.reservations.capacity_reservations:
        rid = r.capacity_reservation_id
        price = prices.get((r.instance_type, r.availability_zone), 0.0)
        lo = max(start, r.start_date) if r.start_date is not None else start
        hi = min(run_end, r.end_date) if r.end_date is not None else run_end
        if rid in reclaimed:
            hi = min(hi, reclaimed[rid])  # its owner took it back
        window = max(0.0, (hi - lo).total_seconds()) / 3600
        capacity = window * r.total_instance_count
        used = 0.0
        for inst in ec2.instances.values():
            if inst.reservation_id != rid:
                continue
            until = min(
                t for t in (inst.terminated_at, inst.reservation_until, run_end) if t is not None
            )
            used += max(0.0, (until - max(inst.launched_at, start)).total_seconds()) / 3600
        if r.reservation_type == "capacity-block" and r.start_date and r.end_date:
            block = (r.end_date - r.start_date).total_seconds() / 3600
            paid = price * r.total_instance_count * block
        else:
            paid = price * capacity
        used = min(used, capacity)
        out.append(
            {
                "reservation": rid,
                "reservationType": r.reservation_type,
                "instanceType": r.instance_type,
                "zone": r.availability_zone,
                "instances": r.total_instance_count,
                "paid": round(paid, 2),
                "capacityHours": round(capacity, 2),
                "usedHours": round(used, 2),
                "idleHours": round(capacity - used, 2),
            }
        )
    return out
