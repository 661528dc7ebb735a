"""The sweep's answer (`sim/sweep.py`): the Pareto front of cost vs serving lost, the cheapest
variant within a serving bound, and how a value is put into an object."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.nodepool import NodePool
from gpucap.apis.sweep import SweepAxis, SweepTarget, parse_field_path
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.scenario import load_scenario
from gpucap.sim.sweep import (
    Variant,
    VariantResult,
    apply_values,
    cheapest_within,
    pareto_front,
    serving_measure,
)
from tests.sweep.test_sweep_cli import SCENARIO


def test_the_front_holds_the_variants_no_other_beats_on_both_cost_and_serving_lost() -> None:
    #            cheap, loses most | middle | dear, loses least | dominated | tie | no runs
    points = [(1.0, 5.0), (2.0, 2.0), (3.0, 1.0), (3.0, 3.0), (2.0, 2.0), None]
    assert pareto_front(points) == [True, True, True, False, True, False]
    # As cheap and losing less beats it; as cheap and losing as much does not.
    assert pareto_front([(1.0, 1.0), (1.0, 2.0)]) == [True, False]


def result(index: int, cost: float, lost: float | None, measure: str) -> VariantResult:
    summary: dict[str, Any] = {"runs": 3, "costUSD": {"p50": cost}}
    if lost is not None:
        summary[measure] = {"p50": lost}
    variant = Variant(index, f"v{index}", (), None)  # type: ignore[arg-type]
    return VariantResult(variant, (), summary, False)


def test_the_choice_is_the_cheapest_p50_cost_whose_p50_serving_lost_is_within_the_bound() -> None:
    m = "servingLostFraction"
    results = [result(0, 10.0, 0.05, m), result(1, 12.0, 0.01, m), result(2, 15.0, 0.0, m)]
    assert cheapest_within(results, m, 0.01) is results[1]  # at most: 1% is within 1%
    assert cheapest_within(results, m, 0.10) is results[0]
    assert cheapest_within(results, m, 0.0) is results[2]
    assert cheapest_within(results[:2], m, 0.001) is None


def test_serving_is_compared_as_the_hpas_share_when_every_variant_has_it() -> None:
    with_share = {"runs": 1, "servingLostFraction": {"p50": 0.1}}
    without = {"runs": 1, "servingLostFraction": None}
    assert serving_measure([with_share, with_share]) == "servingLostFraction"
    assert serving_measure([with_share, without]) == "servingLostSeconds"
    assert serving_measure([with_share, {"runs": 0}]) == "servingLostFraction"  # no runs: no say


points = st.lists(
    st.one_of(st.none(), st.tuples(st.integers(0, 20), st.integers(0, 20))), max_size=12
)


@given(points)
def test_every_variant_off_the_front_is_beaten_by_one_on_it(raw: list[Any]) -> None:
    pts = [None if p is None else (float(p[0]), float(p[1])) for p in raw]
    front = pareto_front(pts)

    def beats(q: tuple[float, float], p: tuple[float, float]) -> bool:
        return q[0] <= p[0] and q[1] <= p[1] and q != p

    on = [p for p, f in zip(pts, front, strict=True) if f and p is not None]
    for p, f in zip(pts, front, strict=True):
        if p is None:
            assert not f
        elif f:
            assert not any(beats(q, p) for q in on)
        else:
            assert any(beats(q, p) for q in on)
    assert bool(on) == any(p is not None for p in pts)


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=10),
    st.integers(0, 50),
)
def test_no_cheaper_variant_than_the_choice_keeps_within_the_bound(
    raw: list[tuple[int, int]], bound: int
) -> None:
    m = "servingLostSeconds"
    results = [result(i, float(c), float(lost), m) for i, (c, lost) in enumerate(raw)]
    chosen = cheapest_within(results, m, float(bound))
    fits = [r for r in results if r.summary[m]["p50"] <= bound]
    if chosen is None:
        assert not fits
    else:
        assert chosen.summary[m]["p50"] <= bound
        assert all(chosen.summary["costUSD"]["p50"] <= r.summary["costUSD"]["p50"] for r in fits)


# ---- putting values into objects -----------------------------------------------------------------
def axis(**fields: Any) -> SweepAxis:
    return SweepAxis(
        name="a", target=SweepTarget(kind="NodePool", name="gpu"), values=[0], **fields
    )


def nodepool(values: list[tuple[SweepAxis, Any]]) -> NodePool:
    scenario = load_scenario(SCENARIO, load_catalog)
    target = next(i for i, m in enumerate(scenario.initial) if m.obj.kind == "NodePool")
    made = apply_values(scenario, [(a, target, v) for a, v in values])
    pool = made.initial[target].obj
    assert isinstance(pool, NodePool)
    assert made.initial[target].source == scenario.initial[target].source
    return pool


def test_a_requirement_axis_makes_the_requirement_key_in_values_or_adds_it() -> None:
    pool = nodepool(
        [
            (axis(requirement="karpenter.sh/capacity-type"), ["on-demand"]),
            (axis(requirement="karpenter.k8s.aws/instance-family"), "g6"),
        ]
    )
    reqs = {r.key: (r.operator, r.values) for r in pool.spec.template.spec.requirements}
    assert reqs["karpenter.sh/capacity-type"] == ("In", ["on-demand"])
    assert reqs["karpenter.k8s.aws/instance-family"] == ("In", ["g6"])
    assert list(reqs)[-1] == "karpenter.k8s.aws/instance-family"  # added after the others


def test_a_path_sets_the_field_creating_maps_and_selecting_list_items() -> None:
    pool = nodepool(
        [
            (axis(path="spec.limits[nvidia.com/gpu]"), "2"),
            (axis(path="spec.template.metadata.labels.team"), "ml"),
            (
                axis(path="spec.template.spec.requirements[key=karpenter.sh/capacity-type].values"),
                ["spot"],
            ),
            (axis(path="spec.disruption.consolidateAfter"), "5m"),
        ]
    )
    assert str(pool.spec.limits["nvidia.com/gpu"]) == "2"
    assert pool.spec.template.metadata.labels == {"team": "ml"}
    assert pool.spec.template.spec.requirements[0].values == ["spot"]
    assert pool.spec.disruption.consolidate_after == "5m"


def test_a_path_reads_as_format_path_writes_it() -> None:
    assert parse_field_path("spec.limits[nvidia.com/gpu]") == ("spec", "limits", "nvidia.com/gpu")
    assert parse_field_path("spec.containers[name=vllm].image") == (
        "spec",
        "containers",
        ("name", "vllm"),
        "image",
    )
    assert parse_field_path("spec.items[2]") == ("spec", "items", 2)
