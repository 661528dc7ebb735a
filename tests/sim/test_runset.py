"""Many runs of one scenario (`sim/runset.py`): each run is the scenario with its seed in place
of spec.seed and depends on that seed alone; the set's summary gives each measure's p5, p50,
p95 (nearest-rank) and mean over the runs."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.runset import RunOutcome, SeedRun, cost_fan, distribution, set_summary
from gpucap.sim.scenario import LoadedScenario, load_scenario
from gpucap.sim.summary import nearest_rank
from gpucap.sim.world import World

STORIES = Path(__file__).resolve().parent / "stories"


@functools.cache
def _interrupt() -> tuple[LoadedScenario, Catalog]:
    scenario = load_scenario(str(STORIES / "interrupt.yaml"), load_catalog)
    return scenario, load_catalog(scenario.region)


def _summary(**over: Any) -> dict[str, Any]:
    """A run's summary with the keys the set reads (and what `over` changes)."""
    base: dict[str, Any] = {
        "costUSD": 1.0,
        "nodeHours": {"g5.xlarge": {"spot": 1.0}},
        "gpuHours": {"g5.xlarge": {"spot": 1.0}},
        "timeToReady": {"p50": 60.0, "p95": 90.0, "max": 90.0, "count": 1},
        "servingLostSeconds": 0.0,
        "disruptions": {},
        "pendingAtEnd": [],
    }
    return base | over


def _outcome(seed: int, **over: Any) -> RunOutcome:
    return RunOutcome(seed, _summary(**over), (0.0, float(seed)))


def test_a_run_is_the_scenario_with_its_seed_in_place_of_spec_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario, catalog = _interrupt()
    seeds: list[int] = []
    real_init = World.__init__

    def init(self: World, s: LoadedScenario, c: Catalog, **kw: Any) -> None:
        seeds.append(s.seed)
        assert (s.path, s.actions) == (scenario.path, scenario.actions)
        real_init(self, s, c, **kw)

    monkeypatch.setattr(World, "__init__", init)
    outcome = SeedRun(scenario, catalog)(42)
    assert (seeds, outcome.seed) == ([42], 42)
    assert scenario.seed == 1  # the loaded scenario is shared, never changed


def test_a_runs_outcome_depends_on_its_seed_alone_not_on_what_ran_before() -> None:
    scenario, catalog = _interrupt()
    work = SeedRun(scenario, catalog)
    first = work(5)
    for seed in (6, 7):
        work(seed)
    assert work(5) == first


def test_the_measures_are_nearest_rank_percentiles_and_the_mean_over_the_runs() -> None:
    costs = [float(c) for c in range(1, 21)]  # $1 .. $20
    outcomes = [_outcome(i, costUSD=c) for i, c in enumerate(costs)]
    stats = set_summary(outcomes, requested=20)["costUSD"]
    assert stats == {"p5": 1.0, "p50": 10.0, "p95": 19.0, "mean": 10.5, "count": 20}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=40))
def test_each_percentile_is_an_observed_value_in_order(samples: list[float]) -> None:
    stats = distribution(samples)
    assert {stats["p5"], stats["p50"], stats["p95"]} <= set(samples)
    assert stats["p5"] <= stats["p50"] <= stats["p95"]
    assert min(samples) - 1e-6 <= stats["mean"] <= max(samples) + 1e-6
    assert stats["p50"] == nearest_rank(samples, 50)


def test_interruptions_disruptions_and_pending_pods_are_counted_per_run() -> None:
    outcomes = [
        _outcome(
            1, disruptions={"Interrupted": 2, "Underutilized": 1}, pendingAtEnd=[{"pod": "a"}]
        ),
        _outcome(2),
    ]
    summary = set_summary(outcomes, requested=2)
    assert summary["interruptions"]["p95"] == 2
    assert summary["disruptions"]["p95"] == 3
    assert summary["pendingAtEnd"]["p95"] == 1
    assert isinstance(summary["pendingAtEnd"]["p5"], int)  # a count stays a whole number
    assert summary["nodeHours"]["p50"] == 1.0


def test_a_run_where_no_pod_became_ready_has_no_time_to_ready() -> None:
    none_ready = {"p50": None, "p95": None, "max": None, "count": 0}
    summary = set_summary([_outcome(1), _outcome(2, timeToReady=none_ready)], requested=2)
    assert summary["timeToReadyP95Seconds"]["count"] == 1
    assert summary["timeToReadyP95Seconds"]["p50"] == 90.0


def test_serving_lost_of_an_autoscaled_run_appears_only_when_a_run_has_it() -> None:
    assert "servingLostFraction" not in set_summary([_outcome(1)], requested=1)
    serving = {"lostReplicaSeconds": 120.0, "lostFraction": 0.01}
    summary = set_summary([_outcome(1, serving=serving), _outcome(2)], requested=2)
    assert summary["servingLostReplicaSeconds"]["p50"] == 120.0
    assert summary["servingLostFraction"]["count"] == 1


def test_runs_that_all_say_the_same_are_marked_identical() -> None:
    assert set_summary([_outcome(1), _outcome(2)], requested=2)["identical"] is True
    assert set_summary([_outcome(1), _outcome(2, costUSD=2.0)], requested=2)["identical"] is False
    assert set_summary([_outcome(1)], requested=1)["identical"] is False  # one run says nothing


def test_the_fan_is_the_percentiles_of_the_runs_cost_at_each_instant() -> None:
    outcomes = [RunOutcome(i, _summary(), (0.0, float(i))) for i in range(1, 21)]
    fan = cost_fan(outcomes)
    assert fan == {"p5": [0.0, 1.0], "p50": [0.0, 10.0], "p95": [0.0, 19.0]}
