"""The expiration controller's fast path (`Expiration.indexed`: expiries kept per NodeClaim
object, scans before the soonest expiry skipped while the NodeClaims are unchanged) decides what
its plain scan decides over whole runs: every event of the run, time, type and fields, is the
same with it off, on the stories that expire, consolidate and interrupt, and on small fleets of
the disruption scale bench's scenario (one NodePool consolidating and expiring after 2h, a
Deployment going up and down) over seeds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import World
from tests.sim.disruption_bench import disruption_bench

STORIES = Path(__file__).parent / "stories"


def _events(path: Path, *, fast: bool) -> list[tuple[float, str, object]]:
    world = World(load_scenario(str(path), load_catalog), load_catalog("us-east-1"))
    world.expiration.indexed = fast
    result = world.run()
    return [(e.t, e.type, dict(e.fields)) for e in result.events]


@pytest.mark.parametrize(
    "story", ["expire-zero-budget", "underutilized", "interrupt", "budget-10pct", "spot-ice"]
)
def test_a_story_runs_the_same_with_the_plain_expiry_scan(story: str) -> None:
    path = STORIES / f"{story}.yaml"
    fast = _events(path, fast=True)
    assert fast
    assert fast == _events(path, fast=False)


@settings(max_examples=4, deadline=None)
@given(n=st.integers(3, 25), seed=st.integers(0, 1000))
def test_an_expiring_fleet_runs_the_same_with_the_plain_expiry_scan(
    tmp_path_factory: pytest.TempPathFactory, n: int, seed: int
) -> None:
    out = tmp_path_factory.mktemp("fleet")
    path = disruption_bench().generate(out, n, hours=3, seed=seed)
    fast = _events(path, fast=True)
    assert any(e[1] == "DisruptionDecision" and e[2].get("reason") == "Expired" for e in fast)  # type: ignore[attr-defined]
    assert fast == _events(path, fast=False)
