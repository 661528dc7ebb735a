"""AWSCloudProvider with capacity reservations over SimulatedEC2, mirroring
aws/karpenter-provider-aws `pkg/cloudprovider/suite_test.go` Context "Capacity Reservations"
("should mark capacity reservations as launched", "should include capacity reservation labels")
and `pkg/providers/instance/suite_test.go` ("should return an ICE error when all attempted
instance types return a ReservedCapacityReservation error")."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.capacityreservation import parse_reservations
from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_TYPE,
)
from gpucap.cloudprovider.types import InsufficientCapacityError
from tests.cloudprovider.aws.test_cloudprovider import gpu_claim, provider

RESERVED_FIRST = ("reserved", "spot", "on-demand")


def reserved_provider(available: int = 2, kind: str = "default") -> tuple[Any, Any]:
    cp, api, _ = provider(spec__capacityReservationSelectorTerms=[{"id": "cr-0123456789abcdef0"}])
    api.reservations = parse_reservations(
        {
            "CapacityReservations": [
                {
                    "CapacityReservationId": "cr-0123456789abcdef0",
                    "InstanceType": "g5.xlarge",
                    "AvailabilityZone": "us-east-1b",
                    "OwnerId": "123456789012",
                    "TotalInstanceCount": 2,
                    "AvailableInstanceCount": available,
                    "InstanceMatchCriteria": "targeted",
                    "ReservationType": kind,
                    "State": "active",
                }
            ]
        },
        source="r.yaml",
    )
    return cp, api


def test_a_claim_that_allows_reserved_launches_into_the_reservation_with_its_labels() -> None:
    cp, api = reserved_provider()
    launched = cp.create(gpu_claim("gpu-1", RESERVED_FIRST))
    labels = launched.metadata.labels
    assert labels[CAPACITY_TYPE] == "reserved"
    assert labels[CAPACITY_RESERVATION_ID] == "cr-0123456789abcdef0"
    assert labels[CAPACITY_RESERVATION_TYPE] == "default"
    assert labels[CAPACITY_RESERVATION_INTERRUPTIBLE] == "false"
    request = api.requests[-1]
    (config,) = request["LaunchTemplateConfigs"]
    assert [o["InstanceType"] for o in config["Overrides"]] == ["g5.xlarge"]
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"


def test_a_launch_counts_the_reservation_down() -> None:
    """ "should mark capacity reservations as launched"."""
    cp, _ = reserved_provider()
    cp.create(gpu_claim("gpu-1", RESERVED_FIRST))
    assert cp.capacity_reservations.get_available_instance_count("cr-0123456789abcdef0") == 1


def test_a_capacity_block_launch_targets_the_capacity_block_market() -> None:
    cp, api = reserved_provider(kind="capacity-block")
    launched = cp.create(gpu_claim("gpu-1", RESERVED_FIRST))
    assert launched.metadata.labels[CAPACITY_RESERVATION_TYPE] == "capacity-block"
    request = api.requests[-1]
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "capacity-block"
    assert "OnDemandOptions" not in request


def test_a_reservation_full_at_ec2_fails_the_launch_and_is_marked_unavailable() -> None:
    """A reservation the provider still counts as free but EC2 has filled (another account
    user launched into it) fails the launch as insufficient capacity, and the provider marks it
    as having no instance left, so the next offerings do not offer it."""
    cp, api = reserved_provider(available=1)
    cp.instance_types_for(cp.nodeclasses["gpu"])  # the provider lists it: 1 free
    api.reservations = parse_reservations(
        {
            "CapacityReservations": [
                {
                    **api.reservations.capacity_reservations[0].to_ec2(),
                    "AvailableInstanceCount": 0,
                }
            ]
        },
        source="r.yaml",
    )
    with pytest.raises(InsufficientCapacityError):
        cp.create(gpu_claim("gpu-1", ("reserved",)))
    assert cp.capacity_reservations.get_available_instance_count("cr-0123456789abcdef0") == 0
    reserved = [
        o
        for it in cp.instance_types_for(cp.nodeclasses["gpu"])
        for o in it.offerings
        if o.capacity_type == "reserved"
    ]
    assert reserved
    assert not any(o.available for o in reserved)


def test_a_spot_launch_of_a_type_with_one_reservation_carries_no_reservation_label() -> None:
    """aws `instanceToNodeClaim` never takes the reservation labels from the type."""
    cp, _ = reserved_provider()
    launched = cp.create(gpu_claim("gpu-1", ("spot",)))
    assert launched.metadata.labels[CAPACITY_TYPE] == "spot"
    assert CAPACITY_RESERVATION_ID not in launched.metadata.labels
