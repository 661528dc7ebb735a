"""The cost floor over a simulated run (`sim/costfloor.py`): the README's two-pod g5 case checked
by hand against `plan --optimal`'s floor, DaemonSet pods left out, events only on a change, and
the same bytes for the same seed."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from functools import cache
from pathlib import Path

import pytest

from gpucap.apis.serde import load_paths
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.controllers.provisioning.optimal import optimise
from gpucap.operator.plan import plan
from gpucap.sim.scenario import LoadedScenario, load_scenario
from gpucap.sim.world import SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "g5-batch-2-pods.yaml"
STORIES = Path(__file__).parent / "stories"


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    return load_catalog(region)


def _floored(path: str) -> LoadedScenario:
    """The scenario as `simulate --cost-floor` runs it."""
    return dataclasses.replace(load_scenario(path, _catalog), cost_floor=True)


def _two_pods(tmp: Path, *, delete_at: str = "30m") -> SimulationResult:
    shutil.copy(EXAMPLE, tmp / "g5.yaml")
    (tmp / "scenario.yaml").write_text(
        "apiVersion: gpucap.dev/v1alpha1\n"
        "kind: Scenario\n"
        "metadata: {name: g5-batch-2-pods}\n"
        "spec:\n"
        "  duration: 1h\n"
        "  manifests: [g5.yaml]\n"
        "  events:\n"
        f"    - {{at: {delete_at}, delete: {{kind: Deployment, name: batch, "
        "namespace: default}}\n"
    )
    return simulate(_floored(str(tmp / "scenario.yaml")), _catalog())


def _floors(result: SimulationResult) -> list[tuple[float, float]]:
    return [(e.t, e.fields["usdPerHour"]) for e in result.events if e.type == "CostFloor"]


def test_the_two_pod_g5_run_floor_is_plan_optimals_floor_for_as_long_as_the_pods_live(
    tmp_path: Path,
) -> None:
    # By hand: `plan --optimal` on the same manifests says two g5.xlarge ($/h: `floor`); the
    # run has both pods from the first provisioning pass (the batch window after 0s: the
    # floor is over that pass's NodePools and offerings) to 30m, then none.
    floor = optimise(plan(load_paths([str(EXAMPLE)]).objects, _catalog())).floor
    assert floor > 0
    result = _two_pods(tmp_path)
    first = next(e.t for e in result.events if e.type == "NodeClaimCreated")
    assert 0 < first < 30
    # The first sample is always said (no pod yet: 0), then each change.
    assert _floors(result) == [
        (0.0, 0.0),
        (first, pytest.approx(floor, abs=1e-6)),
        (1800.0, 0.0),
    ]
    summary = result.summary
    assert summary["costFloorUSD"] == pytest.approx(floor * (1800 - first) / 3600, abs=1e-6)
    # Karpenter's g5.12xlarge costs more than two g5.xlarge while the pods run.
    assert summary["costUSD"] > summary["costFloorUSD"]


def test_the_same_run_records_the_same_floor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, two = _two_pods(tmp_path / "a"), _two_pods(tmp_path / "b")
    assert one.events == two.events
    assert one.summary == two.summary


def test_daemonset_pods_are_overhead_not_pods_and_a_floor_is_told_once_per_change() -> None:
    # The underutilized story: the 6-CPU pod alone until 30m (the device plugin's pod binds
    # when the node registers, without changing the floor), then the small GPU pod alone.
    result = simulate(_floored(str(STORIES / "underutilized.yaml")), _catalog())
    floors = _floors(result)
    assert floors[0] == (0.0, 0.0)  # the first sample: no pod yet
    floors = floors[1:]
    assert [t for t, _ in floors] == [
        next(e.t for e in result.events if e.type == "NodeClaimCreated"),
        1800.0,
    ]
    assert floors[1][1] < floors[0][1]
    assert all(a[1] != b[1] for a, b in itertools.pairwise(floors))


def test_without_cost_floor_a_run_records_no_floor_and_its_summary_has_none() -> None:
    path = str(STORIES / "underutilized.yaml")
    plain = simulate(load_scenario(path, _catalog), _catalog())
    floored = simulate(_floored(path), _catalog())
    assert not _floors(plain)
    assert "costFloorUSD" not in plain.summary
    assert "costFloorUSD" in floored.summary
    # The floor only records: every other event is the same.
    assert [e for e in floored.events if e.type != "CostFloor"] == plain.events
