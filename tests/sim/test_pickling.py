"""The work of `simulate --runs` pickles (issue 26): a Ray engine ships the loaded scenario and the
catalog (`sim/runset.SeedRun`) pickled to workers on other machines, so a run of the unpickled
work must be the run of the original, byte for byte. What used to stand in the way: the lazily
built line maps of the manifests (a closure), `Quantity` (its slot is set only by __init__), the
read-only views of `InstanceTypeInfo` (a mappingproxy does not pickle) and the catalog's cache of
resolved types."""

from __future__ import annotations

import dataclasses
import json
import pickle
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.quantity import Quantity
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.runset import RunOutcome, SeedRun
from gpucap.sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
STORIES = ROOT / "tests" / "sim" / "stories"
EXAMPLES = ROOT / "src" / "gpucap" / "data" / "examples" / "story"
SCENARIOS = sorted(
    p
    for p in [*STORIES.glob("**/*.yaml"), *EXAMPLES.glob("*.yaml")]
    if "kind: Scenario" in p.read_text(encoding="utf-8")
)


def _bytes(outcome: RunOutcome) -> str:
    return json.dumps([outcome.seed, outcome.summary, outcome.cost_curve], indent=2)


def _round_trip(work: SeedRun) -> SeedRun:
    copy = pickle.loads(pickle.dumps(work))
    assert isinstance(copy, SeedRun)
    return copy


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_loaded_scenario_pickles_and_comes_back_the_same(path: Path) -> None:
    scenario = load_scenario(str(path), load_catalog)
    back = pickle.loads(pickle.dumps(scenario))
    assert back == scenario
    # The line maps came along: a finding or an error shown after the trip names the same line.
    for ours, theirs in zip(back.initial, scenario.initial, strict=True):
        assert dict(ours.source.lines) == dict(theirs.source.lines)


def test_the_catalog_pickles_without_its_cache_and_resolves_the_same_types() -> None:
    catalog = load_catalog("us-east-1")
    resolved = catalog.instance_types()  # fills the cache, which holds read-only views
    back = pickle.loads(pickle.dumps(catalog))
    assert isinstance(back, Catalog)
    assert (back.region, back.zones, back.infos) == (catalog.region, catalog.zones, catalog.infos)
    assert repr(back.instance_types()) == repr(resolved)
    assert back.available_prices("spot") == catalog.available_prices("spot")


def test_a_quantity_pickles_to_itself() -> None:
    q = Quantity.parse("1536Mi")
    assert pickle.loads(pickle.dumps(q)) == q


@pytest.mark.parametrize(
    "name", ["interrupt.yaml", "ami-release.yaml", "reserved/reserved.yaml", "timeslicing.yaml"]
)
def test_a_run_of_the_unpickled_work_is_the_run_of_the_original(name: str) -> None:
    scenario = load_scenario(str(STORIES / name), load_catalog)
    work = SeedRun(scenario, load_catalog(scenario.region))
    assert _bytes(_round_trip(work)(scenario.seed)) == _bytes(work(scenario.seed))


@cache
def _day() -> SeedRun:
    """The demo's act 3 (a random world: measured spot reclaims, an HPA on a demand trace), cut
    to six hours to keep the law quick."""
    scenario = load_scenario(str(EXAMPLES / "act3-day.yaml"), load_catalog)
    short = dataclasses.replace(scenario, duration=6 * 3600.0)
    return SeedRun(short, load_catalog(short.region))


@settings(max_examples=4, deadline=None)
@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_a_random_worlds_run_is_the_same_after_a_pickle_round_trip(seed: int) -> None:
    work = _day()
    assert _bytes(_round_trip(work)(seed)) == _bytes(work(seed))
