"""Reserved capacity in the scheduler, mirroring kubernetes-sigs/karpenter's
`pkg/controllers/provisioning/scheduling/suite_test.go` Describe "Reserved Instance Types" and
`reservationmanager_test.go` (@ 2266468104f3): a planned NodeClaim holds a slot of every
reservation it could launch into; the provisioner's strict mode keeps a pod waiting rather than
sending it to spot or on-demand while a compatible reservation is held by other claims."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.cloudprovider.aws.instancetype.reserved import (
    RESERVED_PRICE_DIVISOR,
    ReservedCapacity,
    with_reserved_offerings,
)
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.refusal import Cause
from gpucap.scheduling.reservationmanager import ReservationManager
from tests.builders import edit
from tests.scheduling.builders import GPU_TYPES, gpu_pod, gpu_pool, instance_type, run

STRICT = SchedulingOptions(reserved_offering_mode="Strict")
G5 = instance_type("g5.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006)
G5_2X = instance_type("g5.2xlarge", cpu=8, memory_gib=32, gpu=1, price=1.212)
REQS = "spec.template.spec.requirements"


def reserved(
    types: list[InstanceType], *reservations: tuple[str, str, str, int]
) -> list[InstanceType]:
    """`types` with reservations (id, instance type, zone, free count)."""
    return list(
        with_reserved_offerings(
            types, [ReservedCapacity(i, t, z, available=n) for i, t, z, n in reservations]
        )
    )


def capacity_types(result: Any) -> list[tuple[str, ...]]:
    return [
        tuple(sorted(c.requirements.get_or_exists("karpenter.sh/capacity-type").values))
        for c in result.new_node_claims
    ]


def test_a_reserved_offering_costs_the_on_demand_price_over_ten_million() -> None:
    (it,) = reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 2))
    (offering,) = [o for o in it.offerings if o.capacity_type == "reserved"]
    assert offering.price == pytest.approx(1.006 / RESERVED_PRICE_DIVISOR)
    assert (offering.reservation_id, offering.reservation_capacity, offering.available) == (
        "cr-1",
        2,
        True,
    )
    assert it.requirements["karpenter.sh/capacity-type"].has("reserved")


def test_a_full_or_expiring_reservation_gives_an_unavailable_offering() -> None:
    types = with_reserved_offerings(
        [G5],
        [
            ReservedCapacity("cr-full", "g5.xlarge", "us-east-1a", available=0),
            ReservedCapacity(
                "cr-end", "g5.xlarge", "us-east-1b", "capacity-block", available=3, expiring=True
            ),
        ],
    )
    assert [o.available for o in types[0].offerings if o.capacity_type == "reserved"] == [
        False,
        False,
    ]


def test_a_pod_goes_to_a_reservation_before_spot_and_on_demand() -> None:
    result = run([gpu_pool(), gpu_pod("a")], reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1)))
    (claim,) = result.new_node_claims
    assert capacity_types(result) == [("reserved",)]
    assert claim.requirements["karpenter.k8s.aws/capacity-reservation-id"].values == {"cr-1"}


def test_the_strict_mode_does_not_fall_back_to_on_demand_or_spot_while_a_reservation_is_held() -> (
    None
):
    """ "shouldn't fallback to on-demand or spot when compatible reserved offerings are
    available": the second pod finds the one slot held by the first claim and waits."""
    types = reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1))
    result = run([gpu_pool(), gpu_pod("a"), gpu_pod("b")], types, options=STRICT)
    assert capacity_types(result) == [("reserved",)]
    ((_, error),) = result.pod_errors.items()
    assert error.cause is Cause.RESERVED_OFFERING
    assert "could not be reserved" in str(error)


def test_the_fallback_mode_sends_the_pod_the_reservation_cannot_take_to_spot_or_on_demand() -> None:
    types = reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1))
    result = run([gpu_pool(), gpu_pod("a"), gpu_pod("b")], types)
    assert result.pod_errors == {}
    held = [
        c.requirements.get("karpenter.k8s.aws/capacity-reservation-id")
        for c in result.new_node_claims
    ]
    # The first claim is pinned to the reservation; the second holds none and keeps every
    # capacity type its offerings have (at launch it may still try the reservation: full at
    # EC2 by then, it falls back after the error).
    assert [h.values if h is not None else None for h in held] == [{"cr-1"}, None]
    assert capacity_types(result)[0] == ("reserved",)


def test_a_claim_holds_a_slot_in_every_reservation_it_could_launch_into() -> None:
    """nodeclaim.go `offeringsToReserve` is pessimistic: a claim that may be g5.xlarge or
    g5.2xlarge holds a slot of both types' reservations, so a second pod waits in strict mode
    although two reservations have one slot each."""
    types = reserved(
        [G5, G5_2X],
        ("cr-small", "g5.xlarge", "us-east-1a", 1),
        ("cr-big", "g5.2xlarge", "us-east-1a", 1),
    )
    result = run([gpu_pool(), gpu_pod("a"), gpu_pod("b")], types, options=STRICT)
    (claim,) = result.new_node_claims
    assert claim.requirements["karpenter.k8s.aws/capacity-reservation-id"].values == {
        "cr-small",
        "cr-big",
    }
    assert [e.cause for e in result.pod_errors.values()] == [Cause.RESERVED_OFFERING]


def test_a_reservation_shared_by_two_nodepools_is_counted_once() -> None:
    """ "should correctly track reservations shared across nodepools": the slot one pool's
    claim holds is not handed to the other pool's."""
    pools = [gpu_pool("a"), gpu_pool("b")]
    types = reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1))
    result = run([*pools, gpu_pod("x"), gpu_pod("y")], types, options=STRICT)
    assert capacity_types(result) == [("reserved",)]
    assert len(result.pod_errors) == 1


def test_a_pod_is_not_sent_to_a_lower_weight_nodepool_while_a_reservation_could_take_it() -> None:
    """ "shouldn't fallback to a lower weight NodePool if a reserved offering is available"."""
    heavy = edit(gpu_pool("reserved-first"), "spec.weight", 10)
    light = edit(
        gpu_pool("on-demand"),
        REQS,
        [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
    )
    types = {
        "reserved-first": reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1)),
        "on-demand": GPU_TYPES,
    }
    result = run([heavy, light, gpu_pod("a"), gpu_pod("b")], types, options=STRICT)
    assert [c.nodepool for c in result.new_node_claims] == ["reserved-first"]
    ((_, error),) = result.pod_errors.items()
    assert error.cause is Cause.RESERVED_OFFERING


def test_a_pod_refused_for_a_held_reservation_keeps_its_preferences() -> None:
    """ "shouldn't relax preferences when a pod fails to schedule due to a reserved offering
    error": the preferred zone stays, so the pod waits instead of going elsewhere."""
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": "karpenter.k8s.aws/capacity-reservation-id",
                                "operator": "In",
                                "values": ["cr-1"],
                            }
                        ]
                    },
                }
            ]
        }
    }
    types = reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1))
    result = run(
        [gpu_pool(), gpu_pod("a"), gpu_pod("b", affinity=preferred)], types, options=STRICT
    )
    assert capacity_types(result) == [("reserved",)]
    assert [e.cause for e in result.pod_errors.values()] == [Cause.RESERVED_OFFERING]


def test_the_reservation_manager_reserves_once_per_host_and_gives_back_on_release() -> None:
    """reservationmanager_test.go: Reserve is idempotent per hostname, Release restores."""
    (it,) = reserved([G5], ("cr-1", "g5.xlarge", "us-east-1a", 1))
    (offering,) = [o for o in it.offerings if o.capacity_type == "reserved"]
    manager = ReservationManager([[it]])
    manager.reserve("h1", offering)
    manager.reserve("h1", offering)
    assert manager.remaining("cr-1") == 0
    assert manager.can_reserve("h1", offering)
    assert not manager.can_reserve("h2", offering)
    manager.release("h1", offering)
    assert manager.remaining("cr-1") == 1
    manager.reserve("h2", offering)
    with pytest.raises(ValueError, match="no instance left"):
        manager.reserve("h3", offering)
