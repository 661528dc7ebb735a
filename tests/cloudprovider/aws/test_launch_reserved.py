"""The launch's reservation filters, mirroring aws/karpenter-provider-aws
`pkg/providers/instance/filter/filter_test.go` (CapacityReservationTypeFilter,
CapacityBlockFilter, ReservedOfferingFilter) and the reserved launch through the simulated EC2
(`pkg/providers/instance/suite_test.go`: a reservation that is full fails the launch as
insufficient capacity and is marked as having no instance left)."""

from __future__ import annotations

import datetime as dt

import pytest

from gpucap.apis.capacityreservation import parse_reservations
from gpucap.cloudprovider.aws.instance.filters import (
    capacity_blocks,
    capacity_reservation_types,
    reserved_offerings,
)
from gpucap.cloudprovider.aws.instance.launch import choose_launch
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.reserved import ReservedCapacity, with_reserved_offerings
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.runtime.clock import EPOCH, FakeClock
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirement, Requirements
from tests.cloudprovider.aws.test_launch import it

CT = "karpenter.sh/capacity-type"
ANY = Requirements.of()
RESERVED_ONLY = Requirements.of(Requirement.new(CT, "In", ["reserved"]))
ON_DEMAND_ONLY = Requirements.of(Requirement.new(CT, "In", ["on-demand"]))


def with_reservations(*specs: tuple[str, str, str, str, bool, int]) -> list[InstanceType]:
    """m5.large and c5.large (on-demand 0.10 and 0.05) with reservations (id, type, zone, kind,
    interruptible, free)."""
    base = [it("m5.large", od=0.10, spot=0.04), it("c5.large", od=0.05, spot=0.02)]
    return list(
        with_reserved_offerings(
            base, [ReservedCapacity(i, t, z, k, x, n) for i, t, z, k, x, n in specs]
        )
    )


def reserved_ids(types: list[InstanceType]) -> list[tuple[str, list[str]]]:
    return [(t.name, [o.reservation_id or o.capacity_type for o in t.offerings]) for t in types]


def test_the_reservation_kind_with_the_cheapest_offering_is_chosen() -> None:
    """ "should prioritize the capacity reservation type with the cheapest offering"."""
    types = with_reservations(
        ("cr-m5", "m5.large", "us-east-1a", "default", False, 1),
        ("cr-c5", "c5.large", "us-east-1a", "capacity-block", False, 1),
    )
    kept = capacity_reservation_types(types, ANY, {}).kept
    assert reserved_ids(kept) == [("c5.large", ["cr-c5"])]


def test_equal_prices_prefer_default_then_capacity_blocks_then_interruptible() -> None:
    """ "should break ties by priority" (the code's order; the design note said otherwise)."""
    types = with_reservations(
        ("cr-block", "m5.large", "us-east-1a", "capacity-block", False, 1),
        ("cr-odcr", "m5.large", "us-east-1b", "default", False, 1),
        ("cr-int", "m5.large", "us-east-1a", "default", True, 1),
    )
    kept = capacity_reservation_types(types, ANY, {}).kept
    assert reserved_ids(kept) == [("m5.large", ["cr-odcr"])]


def test_a_claim_that_does_not_allow_reserved_keeps_its_types_whole() -> None:
    """ "should not filter instance types when the nodeclaim is not compatible with capacity
    type reserved"."""
    types = with_reservations(("cr-m5", "m5.large", "us-east-1a", "default", False, 1))
    for step in (capacity_reservation_types, capacity_blocks, reserved_offerings):
        result = step(types, ON_DEMAND_ONLY, {})
        assert result.kept == types
        assert result.rejected == []


def test_a_capacity_block_launch_keeps_one_type_with_its_cheapest_block() -> None:
    """ "should select the instance type with the cheapest capacity-block offering"."""
    types = with_reservations(
        ("cr-m5", "m5.large", "us-east-1a", "capacity-block", False, 1),
        ("cr-c5", "c5.large", "us-east-1b", "capacity-block", False, 1),
    )
    after_kind = capacity_reservation_types(types, ANY, {}).kept
    result = capacity_blocks(after_kind, ANY, {})
    assert reserved_ids(result.kept) == [("c5.large", ["cr-c5"])]
    assert [t.name for t in result.rejected] == ["m5.large"]


def test_one_reservation_per_type_and_zone_the_one_with_the_most_free() -> None:
    """ "should only include one reserved offering per instance pool"."""
    types = with_reservations(
        ("cr-small", "m5.large", "us-east-1a", "default", False, 1),
        ("cr-big", "m5.large", "us-east-1a", "default", False, 5),
        ("cr-other-zone", "m5.large", "us-east-1b", "default", False, 1),
    )
    kept = reserved_offerings(types, ANY, {}).kept
    assert reserved_ids(kept) == [("m5.large", ["cr-big", "cr-other-zone"])]


def test_no_available_reservation_leaves_the_types_as_they_are() -> None:
    """ "shouldn't filter instance types if there are no available reserved offerings"."""
    types = with_reservations(("cr-full", "m5.large", "us-east-1a", "default", False, 0))
    for step in (capacity_reservation_types, capacity_blocks, reserved_offerings):
        assert step(types, ANY, {}).kept == types


def test_a_launch_that_allows_reserved_goes_into_the_reservation() -> None:
    types = with_reservations(("cr-m5", "m5.large", "us-east-1b", "default", False, 2))
    launch = choose_launch(types, ANY)
    assert (launch.instance_type, launch.zone, launch.capacity_type, launch.reservation_id) == (
        "m5.large",
        "us-east-1b",
        "reserved",
        "cr-m5",
    )


# ---- the simulated EC2 ----------------------------------------------------------------------


def _ec2(available: int, *, end: dt.datetime | None = None, kind: str = "default") -> SimulatedEC2:
    ec2 = SimulatedEC2(load_catalog(), FakeClock())
    item = {
        "CapacityReservationId": "cr-0abc",
        "InstanceType": "g5.xlarge",
        "AvailabilityZone": "us-east-1a",
        "OwnerId": "123456789012",
        "TotalInstanceCount": max(available, 1),
        "AvailableInstanceCount": available,
        "InstanceMatchCriteria": "targeted",
        "ReservationType": kind,
        "State": "active",
    }
    if end is not None:
        item["EndDate"] = end.isoformat()
    ec2.reservations = parse_reservations({"CapacityReservations": [item]}, source="r.yaml")
    ec2.create_launch_template(
        LaunchTemplateName="lt-cr",
        LaunchTemplateData={
            "CapacityReservationSpecification": {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": "cr-0abc"},
            }
        },
    )
    return ec2


def _fleet(ec2: SimulatedEC2) -> dict[str, object]:
    return ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "DefaultTargetCapacityType": "on-demand",
            "TotalTargetCapacity": 1,
        },
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": "lt-cr",
                    "Version": "$Latest",
                },
                "Overrides": [{"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a"}],
            }
        ],
    )


def test_a_targeted_fleet_launches_into_its_reservation_and_counts_it_down() -> None:
    ec2 = _ec2(1)
    first = _fleet(ec2)
    assert first["Errors"] == []
    (item,) = ec2.reservations.capacity_reservations
    assert ec2.reservation_available(item) == 0
    described = ec2.describe_capacity_reservations()["CapacityReservations"]
    assert described[0]["AvailableInstanceCount"] == 0
    second = _fleet(ec2)
    assert second["Instances"] == []
    assert [e["ErrorCode"] for e in second["Errors"]] == ["ReservationCapacityExceeded"]


def test_an_instance_runs_on_as_on_demand_after_its_odcr_ends() -> None:
    end = EPOCH + dt.timedelta(hours=1)
    ec2 = _ec2(1, end=end)
    _fleet(ec2)
    (inst,) = ec2.describe_instances()["Reservations"][0]["Instances"]
    assert inst["CapacityReservationId"] == "cr-0abc"
    assert isinstance(ec2.clock, FakeClock)
    ec2.clock.advance(2 * 3600)
    (inst,) = ec2.describe_instances()["Reservations"][0]["Instances"]
    assert "CapacityReservationId" not in inst
    assert inst["State"]["Name"] == "running"


def test_ec2_takes_a_capacity_blocks_instances_back_thirty_minutes_before_its_end() -> None:
    end = EPOCH + dt.timedelta(hours=4)
    ec2 = _ec2(1, end=end, kind="capacity-block")
    _fleet(ec2)
    assert isinstance(ec2.clock, FakeClock)
    ec2.clock.advance(3 * 3600 + 29 * 60)
    (inst,) = ec2.describe_instances()["Reservations"][0]["Instances"]
    assert inst["State"]["Name"] == "running"
    assert inst["InstanceLifecycle"] == "capacity-block"
    ec2.clock.advance(120)
    (inst,) = ec2.describe_instances()["Reservations"][0]["Instances"]
    assert inst["State"]["Name"] in ("shutting-down", "terminated")


@pytest.mark.parametrize("kind", ["default", "capacity-block"])
def test_reservation_times_include_its_end_and_a_blocks_reclaim(kind: str) -> None:
    end = EPOCH + dt.timedelta(hours=4)
    ec2 = _ec2(1, end=end, kind=kind)
    times = ec2.reservation_times()
    assert end in times
    assert (end - dt.timedelta(minutes=30) in times) == (kind == "capacity-block")
