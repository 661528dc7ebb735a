"""Karpenter's AWS launch decision, rule by rule (aws `pkg/providers/instance/`).

Most rules run on tiny hand-made instance types (`it(...)`); the last ones on the bundled
catalog, with the expected answer computed from the catalog's own offerings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest

from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.aws.instance.launch import (
    MAX_LAUNCH_INSTANCE_TYPES,
    FleetOverride,
    InsufficientCapacityError,
    Launch,
    choose_capacity_type,
    choose_launch,
    choose_node_claim_launch,
    launch_filter,
)
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.cloudprovider.aws.instancetype.resolve import scheduling_requirements
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirement, Requirements

GIB = 2**30
AWS = "karpenter.k8s.aws/"
CT = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
FAMILY = AWS + "instance-family"
SIZE = AWS + "instance-size"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONES = ("us-east-1a", "us-east-1b")
ALL_UNAVAILABLE = (
    "insufficient capacity, all requested instance types were unavailable during launch"
)
MIN_VALUES_TRUNCATED = (
    "insufficient capacity, truncating instance types based on the passed-in requirements, "
    "validating minValues, minValues requirement is not met for label(s)"
)


# ---- builders ---------------------------------------------------------------------------------


def it(
    name: str = "m5.large",
    *,
    od: float | None = 0.10,
    spot: float | None = 0.04,
    reserved: float | None = None,
    zones: tuple[str, ...] = ZONES,
    ice: Iterable[str] = (),
    cpu: int = 2,
    memory_gib: int = 8,
    **capacity: int,
) -> InstanceType:
    """A type with one offering per zone and priced capacity type (`od`/`spot`/`reserved` None:
    no such offering). `ice` marks offerings unavailable: `"spot"` (every zone) or
    `"spot@us-east-1a"`. Extra keywords are capacity (`nvidia_com_gpu=1`), allocatable = capacity.
    """
    family, size = name.split(".", 1)
    prices = {"on-demand": od, "spot": spot, "reserved": reserved}
    iced = set(ice)
    offerings = tuple(
        Offering(zone, ct, price, ct not in iced and f"{ct}@{zone}" not in iced)
        for zone in zones
        for ct, price in prices.items()
        if price is not None
    )
    labels: dict[str, tuple[str, ...]] = {
        INSTANCE_TYPE: (name,),
        FAMILY: (family,),
        SIZE: (size,),
        ZONE: zones,
        CT: tuple(ct for ct, price in prices.items() if price is not None),
        "kubernetes.io/arch": ("amd64",),
    }
    resources = {"cpu": cpu * 1000, "memory": memory_gib * GIB, "pods": 110}
    resources.update({_resource(k): v for k, v in capacity.items()})
    return InstanceType(
        name, scheduling_requirements(labels), resources, dict(resources), offerings
    )


def _resource(keyword: str) -> str:
    # nvidia_com_gpu -> nvidia.com/gpu, aws_amazon_com_neuron -> aws.amazon.com/neuron
    *domain, name = keyword.split("_")
    return ".".join(domain) + "/" + name


def req(key: str, op: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement.new(key, op, values, min_values)


def claim(
    *requirements: Requirement, capacity_types: tuple[str, ...] | None = None
) -> Requirements:
    """A NodeClaim's requirements; `capacity_types` adds `karpenter.sh/capacity-type In`."""
    extra = [req(CT, "In", *capacity_types)] if capacity_types is not None else []
    return Requirements.of(*requirements, *extra)


BOTH = ("spot", "on-demand")


def picked(launch: Launch) -> tuple[str, str, str, float]:
    return (launch.instance_type, launch.zone, launch.capacity_type, launch.price)


# ---- capacity type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("types", "capacity_types", "expected"),
    [
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04)],
            BOTH,
            ("m5.large", "us-east-1a", "spot", 0.04),
            id="spot is chosen over on-demand when both are allowed and available",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04)],
            None,
            ("m5.large", "us-east-1a", "spot", 0.04),
            id="a claim without a capacity-type requirement allows spot",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04, ice=["spot"])],
            BOTH,
            ("m5.large", "us-east-1a", "on-demand", 0.10),
            id="on-demand is chosen when every spot offering is ICE'd",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=None), it("c5.large", od=0.09, spot=0.03, ice=["spot"])],
            BOTH,
            ("c5.large", "us-east-1a", "on-demand", 0.09),
            id="on-demand is chosen when no type has an available spot offering",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04, ice=["spot@us-east-1a"])],
            BOTH,
            ("m5.large", "us-east-1b", "spot", 0.04),
            id="spot in another zone is still spot",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04)],
            ("on-demand",),
            ("m5.large", "us-east-1a", "on-demand", 0.10),
            id="a claim allowing only on-demand launches on-demand although spot is cheaper",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04)],
            ("spot",),
            ("m5.large", "us-east-1a", "spot", 0.04),
            id="a claim allowing only spot launches spot",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04, reserved=0.07)],
            ("reserved", "spot", "on-demand"),
            ("m5.large", "us-east-1a", "reserved", 0.07),
            id="reserved is chosen before spot when the claim allows it",
        ),
        pytest.param(
            [it("m5.large", od=0.10, spot=0.04, reserved=0.07, ice=["reserved"])],
            ("reserved", "spot", "on-demand"),
            ("m5.large", "us-east-1a", "spot", 0.04),
            id="spot is chosen when every reserved offering is used up",
        ),
    ],
)
def test_capacity_type_rules(
    types: list[InstanceType],
    capacity_types: tuple[str, ...] | None,
    expected: tuple[str, str, str, float],
) -> None:
    assert picked(choose_launch(types, claim(capacity_types=capacity_types))) == expected


def test_reserved_offerings_replace_every_other_offering_of_the_types_that_have_one() -> None:
    types = [
        it("m5.large", od=0.10, spot=0.04, reserved=0.20),
        it("c5.large", od=0.05, spot=0.01),
    ]
    kept = launch_filter(types, claim(capacity_types=("reserved", "on-demand"))).offered()
    assert [(t.name, {o.capacity_type for o in t.offerings}) for t in kept] == [
        ("m5.large", {"reserved"})
    ]


def test_the_capacity_type_is_the_first_of_reserved_and_spot_some_type_offers() -> None:
    types = [it("m5.large", spot=None), it("c5.large", od=None, spot=0.05)]
    assert choose_capacity_type(types, claim(capacity_types=BOTH)) == "spot"
    assert choose_capacity_type(types[:1], claim(capacity_types=BOTH)) == "on-demand"


# ---- price order ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        pytest.param(
            [it("m5.large", od=0.10), it("c5.large", od=0.09), it("r5.large", od=0.13)],
            ("c5.large", "us-east-1a"),
            id="the cheapest offering wins",
        ),
        pytest.param(
            [it("m5.large", od=0.10), it("c5.large", od=0.10), it("a1.large", od=0.11)],
            ("c5.large", "us-east-1a"),
            id="equal prices are broken by instance type name",
        ),
        pytest.param(
            [it("m5.large", od=0.10, zones=("us-east-1c", "us-east-1b"))],
            ("m5.large", "us-east-1b"),
            id="equal prices of one type are broken by zone",
        ),
        pytest.param(
            [it("m5.large", od=0.10, ice=["on-demand@us-east-1a"])],
            ("m5.large", "us-east-1b"),
            id="an unavailable offering is never picked",
        ),
    ],
)
def test_the_cheapest_offering_wins_ties_by_name_then_zone(
    types: list[InstanceType], expected: tuple[str, str]
) -> None:
    launch = choose_launch(types, claim(capacity_types=("on-demand",)))
    assert (launch.instance_type, launch.zone) == expected
    assert launch.overrides[0] == FleetOverride(launch.instance_type, launch.zone, launch.price)
    keys = [(o.price, o.instance_type, o.zone) for o in launch.overrides]
    assert keys == sorted(keys)


def test_overrides_are_every_available_allowed_offering_of_the_chosen_capacity_type() -> None:
    types = [
        it("m5.large", od=0.10, spot=0.05, ice=["spot@us-east-1b"]),
        it("c5.large", od=0.09, spot=0.04, zones=("us-east-1a", "us-east-1b", "us-east-1c")),
    ]
    launch = choose_launch(types, claim(req(ZONE, "NotIn", "us-east-1c"), capacity_types=BOTH))
    assert launch.overrides == (
        FleetOverride("c5.large", "us-east-1a", 0.04),
        FleetOverride("c5.large", "us-east-1b", 0.04),
        FleetOverride("m5.large", "us-east-1a", 0.05),
    )


# ---- compatible and available -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirements", "requests"),
    [
        pytest.param(claim(req(FAMILY, "In", "p5")), {}, id="no type has the required family"),
        pytest.param(
            claim(capacity_types=("reserved",)), {}, id="no offering of the capacity type"
        ),
        pytest.param(claim(req(ZONE, "In", "us-east-1f")), {}, id="no offering in the zone"),
        pytest.param(claim(), {"cpu": 64_000}, id="the requests fit no type"),
        pytest.param(claim(), {"nvidia.com/gpu": 1}, id="no type has the requested resource"),
        pytest.param(claim(req("kubernetes.io/arch", "In", "arm64")), {}, id="another arch"),
        pytest.param(
            claim(req(AWS + "instance-gpu-count", "Exists")), {}, id="a GPU label no type has"
        ),
    ],
)
def test_a_claim_no_available_offering_can_serve_is_insufficient_capacity(
    requirements: Requirements, requests: dict[str, int]
) -> None:
    types = [it("m5.large"), it("c5.large", ice=["on-demand", "spot"]), it("m5.4xlarge", cpu=16)]
    with pytest.raises(InsufficientCapacityError) as raised:
        choose_launch(types, requirements, requests)
    assert str(raised.value) == ALL_UNAVAILABLE
    assert raised.value.reason == "all requested instance types were unavailable during launch"


def test_custom_labels_of_the_claim_do_not_restrict_the_instance_types() -> None:
    # The claim carries its NodePool's labels; only keys the *type* defines must match.
    launch = choose_launch([it("m5.large")], claim(req("example.com/team", "In", "ml")))
    assert launch.instance_type == "m5.large"


def test_every_offering_ice_d_is_insufficient_capacity() -> None:
    with pytest.raises(InsufficientCapacityError, match="unavailable during launch"):
        choose_launch([it("m5.large", ice=["on-demand", "spot"])], claim(capacity_types=BOTH))


def test_types_too_small_for_the_requests_are_skipped_even_when_cheaper() -> None:
    types = [it("m5.large", cpu=2, od=0.10), it("m5.xlarge", cpu=4, od=0.20)]
    launch = choose_launch(types, claim(capacity_types=("on-demand",)), {"cpu": 3000})
    assert launch.instance_type == "m5.xlarge"


# ---- exotic types -----------------------------------------------------------------------------

EXOTIC = [
    pytest.param(it("g5.large", od=0.01, spot=None, nvidia_com_gpu=1), id="nvidia.com/gpu"),
    pytest.param(it("g4ad.large", od=0.01, spot=None, amd_com_gpu=1), id="amd.com/gpu"),
    pytest.param(it("dl1.large", od=0.01, spot=None, habana_ai_gaudi=1), id="habana.ai/gaudi"),
    pytest.param(it("inf2.large", od=0.01, spot=None, aws_amazon_com_neuron=1), id="neuron"),
    pytest.param(
        it("trn1.large", od=0.01, spot=None, aws_amazon_com_neuroncore=2), id="neuroncore"
    ),
    pytest.param(it("m5.metal", od=0.01, spot=None), id="metal"),
    pytest.param(it("m7i.metal-24xl", od=0.01, spot=None), id="metal-24xl"),
]


@pytest.mark.parametrize("exotic", EXOTIC)
def test_gpu_accelerator_and_metal_types_are_not_launched_when_a_plain_type_fits(
    exotic: InstanceType,
) -> None:
    plain = it("m5.large", od=0.10, spot=None)
    launch = choose_launch([exotic, plain], claim())
    assert launch.instance_type == "m5.large"
    assert {o.instance_type for o in launch.overrides} == {"m5.large"}


@pytest.mark.parametrize("exotic", EXOTIC)
def test_exotic_types_are_launched_when_nothing_else_fits(exotic: InstanceType) -> None:
    too_small = it("m5.large", cpu=1, od=0.10, spot=None)
    launch = choose_launch([exotic, too_small], claim(), {"cpu": 1500})
    assert launch.instance_type == exotic.name


def test_a_gpu_request_launches_the_cheapest_gpu_type() -> None:
    types = [
        it("m5.large", od=0.10),
        it("g5.xlarge", od=1.006, spot=0.45, nvidia_com_gpu=1),
        it("g6.xlarge", od=0.805, spot=0.36, nvidia_com_gpu=1),
    ]
    launch = choose_launch(types, claim(capacity_types=BOTH), {"nvidia.com/gpu": 1})
    assert picked(launch) == ("g6.xlarge", "us-east-1a", "spot", 0.36)


def test_a_type_advertising_zero_gpus_is_not_exotic() -> None:
    # Fractional-GPU types are labelled with a GPU but advertise nvidia.com/gpu: 0.
    fractional = it("g6f.large", od=0.05, spot=None, nvidia_com_gpu=0)
    launch = choose_launch([fractional, it("m5.large", od=0.10, spot=None)], claim())
    assert launch.instance_type == "g6f.large"


# ---- spot offerings above on-demand -----------------------------------------------------------


def test_spot_offerings_pricier_than_the_cheapest_on_demand_are_dropped() -> None:
    # Without the filter getCapacityType would pick spot at 0.50; the cheapest on-demand is 0.30.
    types = [it("m5.large", od=1.00, spot=0.50), it("c5.large", od=0.30, spot=0.60)]
    launch = choose_launch(types, claim(capacity_types=BOTH))
    assert picked(launch) == ("c5.large", "us-east-1a", "on-demand", 0.30)


def test_spot_offerings_at_or_below_the_cheapest_on_demand_are_kept() -> None:
    types = [
        it("m5.large", od=1.00, spot=0.30),
        it("r5.large", od=1.00, spot=0.20),
        it("c5.large", od=0.30, spot=0.60),
    ]
    launch = choose_launch(types, claim(capacity_types=BOTH))
    assert picked(launch) == ("r5.large", "us-east-1a", "spot", 0.20)
    assert {o.instance_type for o in launch.overrides} == {"m5.large", "r5.large"}


def test_the_spot_filter_needs_both_capacity_types_allowed() -> None:
    types = [it("m5.large", od=1.00, spot=0.50), it("c5.large", od=0.30, spot=None)]
    launch = choose_launch(types, claim(capacity_types=("spot",)))
    assert picked(launch) == ("m5.large", "us-east-1a", "spot", 0.50)


def test_a_type_left_with_only_unavailable_offerings_is_kept_but_never_picked() -> None:
    types = [it("m5.large", od=1.00, spot=0.50, ice=["on-demand"]), it("c5.large", od=0.30)]
    kept = launch_filter(types, claim(capacity_types=BOTH)).offered()
    assert [t.name for t in kept] == ["c5.large", "m5.large"]
    assert {o.capacity_type for o in kept[1].offerings} == {"on-demand"}
    assert types[0].offerings != kept[1].offerings  # the input type is left unchanged
    assert choose_launch(types, claim(capacity_types=BOTH)).instance_type == "c5.large"


# ---- minValues --------------------------------------------------------------------------------


def test_min_values_disables_the_exotic_filter() -> None:
    types = [it("g5.large", od=0.01, spot=None, nvidia_com_gpu=1), it("m5.large", spot=None)]
    flexible = req(FAMILY, "In", "g5", "m5", min_values=2)
    assert choose_launch(types, claim()).instance_type == "m5.large"
    assert choose_launch(types, claim(flexible)).instance_type == "g5.large"


def test_min_values_disables_the_spot_filter() -> None:
    types = [it("m5.large", od=1.00, spot=0.50), it("c5.large", od=0.30, spot=0.60)]
    flexible = req(FAMILY, "In", "m5", "c5", min_values=2)
    assert choose_launch(types, claim(capacity_types=BOTH)).capacity_type == "on-demand"
    launch = choose_launch(types, claim(flexible, capacity_types=BOTH))
    assert picked(launch) == ("m5.large", "us-east-1a", "spot", 0.50)


# ---- truncation -------------------------------------------------------------------------------


def _many(count: int, family: str = "m5", start: float = 0.10) -> list[InstanceType]:
    return [
        it(f"{family}.s{i:03d}", od=round(start + i / 1000, 6), spot=None) for i in range(count)
    ]


def test_truncation_keeps_the_60_cheapest_types() -> None:
    types = list(reversed(_many(70)))
    kept = launch_filter(types, claim()).offered()
    assert len(kept) == MAX_LAUNCH_INSTANCE_TYPES
    assert [t.name for t in kept] == [f"m5.s{i:03d}" for i in range(60)]
    launch = choose_launch(types, claim())
    assert {o.instance_type for o in launch.overrides} == {t.name for t in kept}
    assert launch.instance_type == "m5.s000"


def test_truncation_fails_when_min_values_can_no_longer_be_met() -> None:
    # 60 cheaper m5 types push the only c5 type out of the 60 kept.
    types = [*_many(60), it("c5.large", od=5.0, spot=None)]
    two_families = claim(req(FAMILY, "Exists", min_values=2))
    with pytest.raises(InsufficientCapacityError) as raised:
        choose_launch(types, two_families)
    assert str(raised.value) == MIN_VALUES_TRUNCATED
    assert raised.value.unmet_min_values == {FAMILY: 1}
    # BestEffort launches from the truncated list instead.
    launch = choose_launch(types, two_families, min_values_policy="BestEffort")
    assert launch.instance_type == "m5.s000"
    # Within the limit the same requirement is met.
    assert choose_launch(types[-30:], two_families).instance_type.startswith("m5.")


# ---- a NodeClaim manifest ---------------------------------------------------------------------


def test_a_node_claim_manifest_is_read_as_its_requirements_and_requests() -> None:
    node_claim = NodeClaim.model_validate(
        {
            "metadata": {"name": "gpu-1"},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu",
                },
                "requirements": [
                    {"key": CT, "operator": "In", "values": ["on-demand"]},
                    {"key": ZONE, "operator": "In", "values": ["us-east-1b"]},
                ],
                "resources": {"requests": {"cpu": "3", "memory": "4Gi"}},
            },
        }
    )
    types = [it("m5.large", cpu=2), it("m5.xlarge", cpu=4, od=0.2)]
    assert picked(choose_node_claim_launch(node_claim, types)) == (
        "m5.xlarge",
        "us-east-1b",
        "on-demand",
        0.2,
    )


# ---- the bundled catalog ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


def _available(
    catalog: Catalog, names: Iterable[str], capacity_type: str
) -> list[tuple[float, str, str]]:
    """(price, name, zone) of every available offering of `capacity_type`, cheapest first."""
    return sorted(
        (o.price, name, o.zone)
        for name in names
        for o in catalog.instance_type(name).offerings
        if o.available and o.capacity_type == capacity_type
    )


def test_a_g5_or_g6_xlarge_claim_for_both_capacity_types_launches_the_cheapest_spot_offering(
    catalog: Catalog,
) -> None:
    requirements = claim(
        req(FAMILY, "In", "g5", "g6"), req(SIZE, "In", "xlarge"), capacity_types=BOTH
    )
    launch = choose_launch(catalog.instance_types(), requirements, {"nvidia.com/gpu": 1})
    names = ("g5.xlarge", "g6.xlarge")
    cheapest_on_demand = _available(catalog, names, "on-demand")[0][0]
    spot = [o for o in _available(catalog, names, "spot") if o[0] <= cheapest_on_demand]
    assert spot, "the data has spot offerings cheaper than on-demand for these types"
    price, name, zone = spot[0]
    assert picked(launch) == (name, zone, "spot", price)
    assert launch.instance_type in names
    assert {(o.price, o.instance_type, o.zone) for o in launch.overrides} == set(spot)


_EXOTIC_RESOURCES = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "habana.ai/gaudi",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
)


def _is_exotic(catalog: Catalog, name: str) -> bool:
    t = catalog.instance_type(name)
    return "metal" in catalog.info(name).size or any(
        t.capacity.get(r, 0) for r in _EXOTIC_RESOURCES
    )


def test_on_the_catalog_an_accelerated_type_is_passed_over_for_a_plain_one(
    catalog: Catalog,
) -> None:
    # Among the 24-vCPU types the cheapest on-demand one is exotic (an Inferentia type in the
    # bundled data); Karpenter launches the cheapest plain one instead.
    types = catalog.instance_types()
    names = [t.name for t in types if t.requirements[AWS + "instance-cpu"].has("24")]
    offerings = _available(catalog, names, "on-demand")
    assert _is_exotic(catalog, offerings[0][1]), "the data's cheapest 24-vCPU type is exotic"
    expected = next(o for o in offerings if not _is_exotic(catalog, o[1]))
    requirements = claim(req(AWS + "instance-cpu", "In", "24"), capacity_types=("on-demand",))
    launch = choose_launch(types, requirements)
    assert (launch.price, launch.instance_type, launch.zone) == expected
    assert not any(_is_exotic(catalog, o.instance_type) for o in launch.overrides)
    # Asking for the Inferentia device launches the exotic type after all.
    launch = choose_launch(types, requirements, {"aws.amazon.com/neuron": 1})
    assert launch.instance_type == offerings[0][1]


@pytest.mark.parametrize(
    "named",
    [
        ["g5.xlarge", "g6.12xlarge", "m5.large"],
        ["g5.xlarge", "no-such-type"],
        ["no-such-type"],
        [f"c6i.{s}" for s in ("large", "xlarge", "2xlarge", "metal")],
    ],
)
def test_a_claim_naming_its_types_gets_the_same_types_from_a_tuple_and_a_list(
    named: list[str],
) -> None:
    # For the provider's tuple the types a claim names are looked up by name; a list takes
    # the scan. Same types, same order, same error.
    types = load_catalog("us-east-1").instance_types()
    odd = InstanceType(  # a type whose own instance-type requirement is not one name
        "odd", Requirements.of(Requirement.new(INSTANCE_TYPE, "NotIn", ["x"])), {}, {}, ()
    )
    for given in (types, (*types, odd)):
        reqs = Requirements.of(Requirement.new(INSTANCE_TYPE, "In", named))
        for reference in (False, True):
            try:
                by_list = [
                    it.name
                    for it in launch_filter(list(given), reqs, reference=reference).offered()
                ]
            except InsufficientCapacityError as err:
                with pytest.raises(InsufficientCapacityError, match=re.escape(str(err))):
                    launch_filter(given, reqs, reference=reference).offered()
                continue
            offered = launch_filter(given, reqs, reference=reference).offered()
            assert [it.name for it in offered] == by_list


# ---- the trace: each filter's kept and rejected types ------------------------------------------


def test_each_launch_filter_names_the_types_it_rejected() -> None:
    types = [
        it("m5.large", od=0.10, spot=0.04),
        it("m5.xlarge", od=0.20, spot=None, cpu=1),  # does not fit 2 vCPU
        it("g5.xlarge", od=0.05, spot=None, nvidia_com_gpu=1),  # exotic
        it("c5.large", od=None, spot=0.50),  # only spot, above m5.large's on-demand
        *_many(60, family="r5", start=0.30),
    ]
    trace = launch_filter(types, claim(capacity_types=BOTH), {"cpu": 1500})
    steps = trace.steps()
    assert [s.name for s in steps] == [
        "compatible-available-filter",
        "capacity-reservation-type-filter",
        "capacity-block-filter",
        "reserved-offering-filter",
        "exotic-instance-filter",
        "spot-offering-filter",
        "truncate",
    ]
    assert trace.rejected_by("m5.xlarge") == "compatible-available-filter"
    assert trace.rejected_by("g5.xlarge") == "exotic-instance-filter"
    assert trace.rejected_by("c5.large") == "spot-offering-filter"
    assert trace.rejected_by("r5.s059") == "truncate"
    assert trace.rejected_by("m5.large") is None
    assert [t.name for t in steps[-1].kept] == [t.name for t in trace.offered()]


def test_a_failed_launch_keeps_its_error_and_the_step_that_left_nothing() -> None:
    trace = launch_filter([it("m5.large", cpu=1)], claim(), {"cpu": 2000})
    assert trace.types == []
    assert trace.capacity_type is None
    with pytest.raises(InsufficientCapacityError, match=re.escape(ALL_UNAVAILABLE)):
        trace.offered()
    (step,) = trace.steps()
    assert (step.name, step.kept) == ("compatible-available-filter", [])


def test_why_an_exotic_type_was_not_taken_comes_from_the_filters_trace() -> None:
    gpu = it("g5.xlarge", od=0.05, spot=None, nvidia_com_gpu=1)
    trace = launch_filter([gpu, it("m5.large", od=0.10, spot=None)], claim())
    assert trace.rejected_by("g5.xlarge") == "exotic-instance-filter"
    assert trace.why(gpu, gpu.offerings[0]).startswith(
        "dropped by Karpenter's launch filters before CreateFleet"
    )
