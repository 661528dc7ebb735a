"""`gpucap demo`'s act 3 (`cli/demo_world.py`): the workshop's day under the measured spot market
and the diurnal HPA, spot first against on-demand only; what it says agrees with the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucap.apis.labels import CAPACITY_TYPE
from gpucap.apis.nodepool import NodePool
from gpucap.cli.demo import ACTS, story_tree
from gpucap.cli.demo_world import (
    Design,
    act3_sentences,
    design_table,
    on_demand_only,
    run_designs,
)
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.runtime.executor import InlineExecutor, ProcessExecutor
from gpucap.sim.scenario import LoadedScenario, load_scenario

ACT3 = ACTS[2]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> LoadedScenario:
    root = tmp_path_factory.mktemp("story")
    story_tree(root)
    return load_scenario(str(Path(root) / "story" / ACT3.file), catalog)


@pytest.fixture(scope="module")
def designs(day: LoadedScenario, catalog: Catalog) -> list[Design]:
    return run_designs(
        [("spot first", day), ("on-demand only", on_demand_only(day))],
        catalog,
        runs=3,
        executor=InlineExecutor(),
    )


def _capacity_types(scenario: LoadedScenario) -> list[list[str]]:
    return [
        r.values
        for m in scenario.initial
        if isinstance(m.obj, NodePool)
        for r in m.obj.spec.template.spec.requirements
        if r.key == CAPACITY_TYPE
    ]


def test_the_day_runs_the_measured_spot_market_and_an_hpa_on_the_diurnal_trace(
    day: LoadedScenario,
) -> None:
    assert day.world is not None
    assert day.world.spot.model == "measured"
    assert [(m.namespace, m.name) for m in day.metrics] == [("default", "vllm")]
    assert day.duration == 24 * 3600


def test_on_demand_only_narrows_the_capacity_type_and_nothing_else(day: LoadedScenario) -> None:
    narrowed = on_demand_only(day)
    assert _capacity_types(day) == [["spot", "on-demand"]]
    assert _capacity_types(narrowed) == [["on-demand"]]
    others = [m.obj for m in day.initial if not isinstance(m.obj, NodePool)]
    assert others == [m.obj for m in narrowed.initial if not isinstance(m.obj, NodePool)]
    pool, new_pool = (
        next(m.obj for m in sc.initial if isinstance(m.obj, NodePool)) for sc in (day, narrowed)
    )
    assert pool.spec.limits == new_pool.spec.limits
    assert pool.spec.disruption == new_pool.spec.disruption


def test_spot_first_is_cheaper_and_interrupted_on_demand_only_is_never_interrupted(
    designs: list[Design],
) -> None:
    spot, on_demand = designs
    assert spot.summary["costUSD"]["p95"] < on_demand.summary["costUSD"]["p5"]
    assert spot.summary["interruptions"]["p5"] > 0
    assert on_demand.summary["interruptions"]["p95"] == 0
    # Without spot nothing in the day is random: the HPA's trace is the same every run.
    assert on_demand.summary["identical"]
    assert not spot.summary["identical"]


def test_the_runs_do_not_depend_on_the_executor(
    day: LoadedScenario, catalog: Catalog, designs: list[Design]
) -> None:
    again = run_designs([("spot first", day)], catalog, runs=3, executor=ProcessExecutor(2))
    assert again[0].summary == designs[0].summary
    assert [o.seed for o in again[0].outcomes] == [day.seed, day.seed + 1, day.seed + 2]


def test_the_table_shows_each_designs_p50_and_band_from_its_runs(designs: list[Design]) -> None:
    lines = design_table(designs)
    for d in designs:
        row = next(line for line in lines if line.startswith(d.name))
        cost = d.summary["costUSD"]
        assert f"${cost['p50']:.2f} (${cost['p5']:.2f}-${cost['p95']:.2f})" in row
        lost = d.summary["servingLostFraction"]["p50"]
        assert f"{100 * lost:.1f}%" in row


def test_the_sentences_say_the_saving_and_its_price_from_the_runs(designs: list[Design]) -> None:
    spot, on_demand = designs
    words = act3_sentences(spot, on_demand)
    s, o = spot.summary["costUSD"]["p50"], on_demand.summary["costUSD"]["p50"]
    assert f"${s:.2f} a day" in words[0]
    assert f"${o:.2f} on-demand only" in words[0]
    assert f"{100 * (o - s) / o:.0f}% cheaper" in words[0]
    assert f"back {spot.summary['interruptions']['p50']:g} times a day" in words[1]
