"""kube-scheduler's bind queue (`KubeScheduler.retry_changed`: a pass tries only the nominations
whose pod, NodeClaim, Node or used requests changed since their last try, `sim/bindqueue.py`)
binds what the plain pass (every nomination on every pass) binds over whole runs: every event of
the run, time, type and fields, is the same with it off, on stories that bind through the device
plugin's delay (or its absence), time-slicing, interruptions, drift, consolidation and expiry, and on
small fleets of the disruption scale bench's scenario over seeds."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.binder import KubeScheduler
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import World
from tests.sim.disruption_bench import disruption_bench

STORIES = Path(__file__).parent / "stories"


def _events(path: Path, *, fast: bool) -> list[tuple[float, str, object]]:
    with patch.object(KubeScheduler, "retry_changed", fast):
        world = World(load_scenario(str(path), load_catalog), load_catalog("us-east-1"))
    assert (world.binder.queue is not None) is fast
    result = world.run()
    return [(e.t, e.type, dict(e.fields)) for e in result.events]


@pytest.mark.parametrize(
    "story",
    [
        "no-plugin",
        "timeslicing",
        "interrupt",
        "spot-ice",
        "underutilized",
        "underutilized-spot",
        "expire-zero-budget",
        "budget-10pct",
        "do-not-disrupt",
        "drift-budget-2",
        "nodepool-taint-drift",
        "when-empty",
        "ami-rollout",
    ],
)
def test_a_story_binds_the_same_with_the_plain_bind_pass(story: str) -> None:
    path = STORIES / f"{story}.yaml"
    fast = _events(path, fast=True)
    assert any(e[1] == "NodeRegistered" for e in fast)  # pods nominated, nodes up
    assert fast == _events(path, fast=False)


@settings(max_examples=4, deadline=None)
@given(n=st.integers(3, 25), seed=st.integers(0, 1000))
def test_a_scaling_fleet_binds_the_same_with_the_plain_bind_pass(
    tmp_path_factory: pytest.TempPathFactory, n: int, seed: int
) -> None:
    out = tmp_path_factory.mktemp("fleet")
    path = disruption_bench().generate(out, n, hours=3, seed=seed)
    fast = _events(path, fast=True)
    assert sum(e[1] == "PodBound" for e in fast) > n
    assert fast == _events(path, fast=False)
