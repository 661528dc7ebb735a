"""One model of EC2 Fleet's choice (`launch.fleet_pick`): `plan`'s launch column and the
simulated CreateFleet pick the same override."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.cloudprovider.aws.instance.launch import FleetOverride, fleet_pick
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.runtime.clock import FakeClock

CATALOG = load_catalog("us-east-1")
A = FleetOverride("g5.xlarge", "us-east-1a", 0.5)
B = FleetOverride("g5.xlarge", "us-east-1b", 0.5)
C = FleetOverride("g6.xlarge", "us-east-1a", 0.5)
CHEAP = FleetOverride("g6.xlarge", "us-east-1c", 0.4)


def test_the_lowest_priority_number_is_picked() -> None:
    assert fleet_pick([A, CHEAP, B]).chosen == CHEAP


@pytest.mark.parametrize(
    ("overrides", "chosen"),
    [([C, B, A], A), ([B, C], B), ([C, A], A)],
    ids=["type-then-zone", "zone", "type"],
)
def test_ties_go_by_instance_type_then_zone(
    overrides: list[FleetOverride], chosen: FleetOverride
) -> None:
    assert fleet_pick(overrides).chosen == chosen


def test_pools_without_capacity_are_passed_over_in_order() -> None:
    pick = fleet_pick([A, B, C, CHEAP], has_capacity=lambda o: o.zone == "us-east-1b")
    assert pick.chosen == B
    assert pick.passed_over == (CHEAP, A)


def test_nothing_is_picked_when_no_pool_has_capacity() -> None:
    pick = fleet_pick([A, B], has_capacity=lambda o: False)
    assert pick.chosen is None
    assert pick.passed_over == (A, B)


def fleet(*overrides: dict[str, Any]) -> dict[str, Any]:
    return {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "DefaultTargetCapacityType": "on-demand",
            "TotalTargetCapacity": 1,
        },
        "LaunchTemplateConfigs": [{"Overrides": list(overrides)}],
    }


def test_simulated_create_fleet_honours_the_requests_priorities() -> None:
    api = SimulatedEC2(CATALOG, FakeClock())
    # g5.48xlarge costs far more than g5.xlarge; its lower Priority number still wins.
    response = api.create_fleet(
        **fleet(
            {"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a", "Priority": 2.0},
            {"InstanceType": "g5.48xlarge", "AvailabilityZone": "us-east-1a", "Priority": 1.0},
        )
    )
    assert response["Instances"][0]["InstanceType"] == "g5.48xlarge"
    assert response["Errors"] == []


def test_simulated_create_fleet_reports_each_passed_over_pool() -> None:
    api = SimulatedEC2(CATALOG, FakeClock())
    api.set_capacity("g5.xlarge", "us-east-1a", "on-demand", available=False)
    response = api.create_fleet(
        **fleet(
            {"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a", "Priority": 1.0},
            {"InstanceType": "g9.huge", "AvailabilityZone": "us-east-1a", "Priority": 2.0},
            {"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1b", "Priority": 3.0},
        )
    )
    assert [e["ErrorCode"] for e in response["Errors"]] == [
        "InsufficientInstanceCapacity",
        "Unsupported",
    ]
    chosen = response["Instances"][0]["LaunchTemplateAndOverrides"]["Overrides"]
    assert (chosen["InstanceType"], chosen["AvailabilityZone"]) == ("g5.xlarge", "us-east-1b")


def test_without_priorities_the_simulated_fleet_goes_by_its_own_prices() -> None:
    api = SimulatedEC2(CATALOG, FakeClock())
    response = api.create_fleet(
        **fleet(
            {"InstanceType": "g5.48xlarge", "AvailabilityZone": "us-east-1a"},
            {"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a"},
        )
    )
    assert response["Instances"][0]["InstanceType"] == "g5.xlarge"
