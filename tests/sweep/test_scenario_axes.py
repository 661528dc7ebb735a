"""Sweep axes on the scenario itself (`target: {kind: Scenario, name: ...}`): its world, its
timings and the rest of its spec are designs too, read again from the file with each value and
checked as `simulate` checks them; `spec.manifests` and `spec.seed` are not axes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.runset import SeedRun
from gpucap.sim.scenario import load_scenario
from gpucap.sim.sweep import load_sweep
from tests.cli.test_simulate_cli import gpucap, ok
from tests.sweep.test_sweep_cli import SCENARIO, sweep_file

SELF = "target: {kind: Scenario, name: sweep-small}"


def _variants(tmp_path: Path, spec: str) -> list[Any]:
    return list(load_sweep(sweep_file(tmp_path, spec), load_catalog).variants)


def test_a_scenario_axis_changes_the_scenarios_world_and_nothing_else(tmp_path: Path) -> None:
    variants = _variants(
        tmp_path,
        f"axes: [{{name: market, {SELF}, path: spec.world.spot.model, "
        "values: [advisor, measured]}]",
    )
    base = load_scenario(SCENARIO, load_catalog)
    assert base.world is not None
    for v, model in zip(variants, ("advisor", "measured"), strict=True):
        world = v.scenario.world
        assert world is not None
        assert world.spot.model == model
        # The rest of spec.world.spot is the file's: only the one field changed.
        assert world.spot.rates == base.world.spot.rates
        assert [m.obj for m in v.scenario.initial] == [m.obj for m in base.initial]
        assert v.scenario.path == base.path


def test_a_timing_axis_moves_the_time_to_ready_by_the_difference(tmp_path: Path) -> None:
    variants = _variants(
        tmp_path,
        f"axes: [{{name: registration, {SELF}, path: spec.timings.registration, "
        "values: [30s, 3m]}]",
    )
    fast, slow = (SeedRun(v.scenario, load_catalog(v.scenario.region))(1).summary for v in variants)
    assert slow["timeToReady"]["p50"] - fast["timeToReady"]["p50"] == pytest.approx(150)


def test_scenario_and_object_axes_combine_in_one_variant(tmp_path: Path) -> None:
    (v,) = _variants(
        tmp_path,
        f"axes:\n- {{name: d, {SELF}, path: spec.duration, values: [1h]}}\n"
        "- {name: c, target: {kind: NodePool, name: gpu}, "
        "requirement: karpenter.sh/capacity-type, values: [[on-demand]]}",
    )
    assert v.scenario.duration == 3600
    pool = next(m.obj for m in v.scenario.initial if m.obj.kind == "NodePool")
    reqs = {r.key: r.values for r in pool.spec.template.spec.requirements}  # type: ignore[union-attr]
    assert reqs["karpenter.sh/capacity-type"] == ["on-demand"]


def test_the_json_names_the_scenario_axis_values(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    path = sweep_file(
        tmp_path,
        # The whole of spec.world.spot: the file's explicit rates go with it.
        f"axes: [{{name: market, {SELF}, path: spec.world.spot, "
        "values: [{model: none}, {model: measured}]}]",
    )
    doc = json.loads(ok(["sweep", path, "--workers", "1", "-o", "json"], capsys, monkeypatch))
    assert [v["values"] for v in doc["variants"]] == [
        {"market": {"model": "none"}},
        {"market": {"model": "measured"}},
    ]
    calm, stormy = (v["summary"]["interruptions"]["p50"] for v in doc["variants"])
    assert calm < stormy


@pytest.mark.parametrize(
    ("axis", "line"),
    [
        (
            "{name: a, target: {kind: Scenario, name: small}, path: spec.duration, values: [1h]}",
            f"error: S: axes[0].target.name: the sweep's scenario ({SCENARIO}) is named "
            "'sweep-small', not 'small'",
        ),
        (
            f"{{name: a, {SELF}, path: spec.world.spot.model, values: [none, mesured]}}",
            f"error: S: axes[0].values[1]: {SCENARIO}: world.spot.model: 'mesured' is not one "
            "of none, advisor, measured",
        ),
        (
            f"{{name: a, {SELF}, path: 'spec.manifests[0]', values: [x.yaml]}}",
            "error: S: axes[0].path: spec.manifests[0]: a sweep changes the objects of "
            "spec.manifests (target them by kind and name), not which files the scenario applies",
        ),
        (
            f"{{name: a, {SELF}, path: spec.seed, values: [3]}}",
            "error: S: axes[0].path: spec.seed: the runs' seeds are the sweep's (spec.seeds, "
            "from the scenario's seed on)",
        ),
        (
            f"{{name: a, {SELF}, path: spec.duration.x, values: [3]}}",
            "error: S: axes[0].values[0]: Scenario/sweep-small: spec.duration is not an object; "
            "cannot set 'x' in it",
        ),
        (
            f"{{name: a, {SELF}, path: spec.timings.registraton, values: [3m]}}",
            f"error: S: axes[0].values[0]: {SCENARIO}: timings.registraton: unknown timing "
            "'registraton' (did you mean 'registration'?)",
        ),
        (
            f"{{name: a, {SELF}, path: duration, values: [3m]}}",
            "error: S: axes[0].path: duration: a Scenario axis changes a field under spec "
            "(spec.world.spot.model)",
        ),
    ],
)
def test_a_bad_scenario_axis_is_one_line_naming_the_field_and_exit_2(
    axis: str, line: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    path = sweep_file(tmp_path, f"axes: [{axis}]")
    code, out, err = gpucap(["sweep", path], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert [e.replace(path, "S") for e in err] == [line]
