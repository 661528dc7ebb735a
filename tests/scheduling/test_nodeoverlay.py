"""scheduling/nodeoverlay.py: Karpenter's NodeOverlay order, matching, pricing and conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.scheduling.nodeoverlay import (
    adjusted_price,
    evaluate_overlays,
    ordered,
)
from tests.scheduling.overlays import (
    G5,
    GPU_COUNT_1,
    TYPES,
    applied,
    overlay,
    pool,
    spot_price,
)


@pytest.mark.parametrize(
    ("spec", "price", "expected"),
    [
        ({"priceAdjustment": "+10%"}, 1.0, 1.1),
        ({"priceAdjustment": "-25%"}, 2.0, 1.5),
        ({"priceAdjustment": "-100%"}, 2.0, 0.0),
        ({"priceAdjustment": "+0.5"}, 1.0, 1.5),
        ({"priceAdjustment": "-0.5"}, 0.2, 0.0),  # floored at 0
        ({"price": "5.00"}, 1.0, 5.0),
        ({"capacity": {"nvidia.com/gpu": "4"}}, 1.0, 1.0),  # no price field: unchanged
    ],
)
def test_price_and_price_adjustment_compute_the_offering_price(
    spec: dict[str, Any], price: float, expected: float
) -> None:
    assert adjusted_price(price, overlay("o", **spec)) == pytest.approx(expected)


def test_higher_weight_first_and_equal_weights_by_name_descending() -> None:
    names = ["a", "b", "c", "d"]
    weights = [None, 5, 5, 1]
    overlays = [overlay(n, weight=w) for n, w in zip(names, weights, strict=True)]
    assert [o.metadata.name for o in ordered(overlays)] == ["c", "b", "d", "a"]


def test_the_highest_weight_sets_the_price_and_adjustments_never_stack() -> None:
    types = applied(
        overlay("cheap", weight=10, priceAdjustment="-50%"),
        overlay("dear", weight=5, priceAdjustment="+100%"),
    )
    original = {it.name: it for it in TYPES}
    assert spot_price(types["g5.xlarge"]) == pytest.approx(spot_price(original["g5.xlarge"]) / 2)
    assert types["m5.large"] is original["m5.large"]  # not a g5: untouched, same object


def test_price_is_set_per_offering_so_a_capacity_type_requirement_leaves_the_others() -> None:
    spot_only = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
    types = applied(overlay("spot-price", G5, spot_only, price="0.01"))
    offerings = types["g5.xlarge"].offerings
    assert {o.price for o in offerings if o.capacity_type == "spot"} == {0.01}
    assert {o.price for o in offerings if o.capacity_type == "on-demand"} == {1.006}


def test_capacity_merges_per_resource_with_the_higher_weight_winning() -> None:
    types = applied(
        overlay("four", GPU_COUNT_1, weight=10, capacity={"nvidia.com/gpu": "4"}),
        overlay(
            "eight", GPU_COUNT_1, weight=5, capacity={"nvidia.com/gpu": "8", "example.com/x": "1"}
        ),
    )
    g5 = types["g5.xlarge"]
    assert (g5.capacity["nvidia.com/gpu"], g5.allocatable["nvidia.com/gpu"]) == (4, 4)
    assert (g5.capacity["example.com/x"], g5.allocatable["example.com/x"]) == (1, 1)
    assert types["g5.12xlarge"].capacity["nvidia.com/gpu"] == 4  # 4 GPUs: not in the overlay


def test_same_weight_overlays_on_the_same_resource_conflict_and_the_later_one_is_rejected() -> None:
    a = overlay("a-slices", GPU_COUNT_1, weight=3, capacity={"nvidia.com/gpu": "2"})
    b = overlay("b-slices", GPU_COUNT_1, weight=3, capacity={"nvidia.com/gpu": "4"})
    accepted, conflicts = evaluate_overlays([a, b], [pool()])
    # Names descending: b-slices is processed first and kept; a-slices conflicts with it.
    assert [o.metadata.name for o in accepted] == ["b-slices"]
    assert len(conflicts) == 1
    assert str(conflicts[0]).startswith(
        "NodeOverlay a-slices conflicts with b-slices (both weight 3) on the nvidia.com/gpu "
        "capacity of g5.xlarge in NodePool gpu"
    )


def test_same_weight_overlays_on_different_resources_do_not_conflict() -> None:
    a = overlay("a", GPU_COUNT_1, capacity={"example.com/a": "1"})
    b = overlay("b", GPU_COUNT_1, capacity={"example.com/b": "1"})
    accepted, conflicts = evaluate_overlays([a, b], [pool()])
    assert (len(accepted), conflicts) == (2, [])


def test_an_overlay_on_a_nodepool_name_applies_to_that_pool_only() -> None:
    only_gpu = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]}
    o = overlay("slices", only_gpu, GPU_COUNT_1, capacity={"nvidia.com/gpu": "4"})
    assert applied(o, on=pool("gpu"))["g5.xlarge"].capacity["nvidia.com/gpu"] == 4
    assert applied(o, on=pool("batch"))["g5.xlarge"].capacity["nvidia.com/gpu"] == 1


def test_a_custom_label_must_be_a_template_label_of_the_pool() -> None:
    team = {"key": "example.com/team", "operator": "In", "values": ["ml"]}
    o = overlay("slices", team, GPU_COUNT_1, capacity={"nvidia.com/gpu": "4"})
    labelled = pool(labels={"example.com/team": "ml"})
    assert applied(o, on=labelled)["g5.xlarge"].capacity["nvidia.com/gpu"] == 4
    assert applied(o, on=pool())["g5.xlarge"].capacity["nvidia.com/gpu"] == 1


def test_an_overlay_matching_no_offering_does_not_apply() -> None:
    nowhere = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1f"]}
    o = overlay("z", G5, nowhere, capacity={"nvidia.com/gpu": "4"})
    assert applied(o)["g5.xlarge"].capacity["nvidia.com/gpu"] == 1


def test_a_template_label_that_is_also_a_type_key_is_intersected_with_the_type() -> None:
    # The pool pins the family by label: an overlay for m5 cannot apply to any of its types,
    # and one for g5 applies to the g5 types only.
    labelled = pool(labels={"karpenter.k8s.aws/instance-family": "g5"})
    m5 = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}
    extra = {"example.com/x": "1"}
    assert (
        "example.com/x"
        not in applied(overlay("m5", m5, capacity=extra), on=labelled)["m5.large"].capacity
    )
    types = applied(overlay("g5", G5, capacity=extra), on=labelled)
    assert types["g5.xlarge"].capacity["example.com/x"] == 1
    assert "example.com/x" not in types["m5.large"].capacity
