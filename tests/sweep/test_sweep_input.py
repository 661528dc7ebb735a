"""Bad sweeps (`apis/sweep.py`, `sim/sweep.load_sweep`, `cli/sweep.py`): each problem is one
line naming the sweep file and the field, exit 2, and no run starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpucap.cli import sweep as sweep_cli
from tests.cli.test_simulate_cli import gpucap
from tests.sweep.test_sweep_cli import GRID, sweep_file

NODEPOOL = "target: {kind: NodePool, name: gpu}"
CAPACITY = "requirement: karpenter.sh/capacity-type"


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any run starts."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a run started")

    monkeypatch.setattr(sweep_cli, "collect_runs", refuse)


def refused(spec: str, tmp_path: Path, capsys: Any, monkeypatch: Any) -> list[str]:
    path = sweep_file(tmp_path, spec)
    code, out, err = gpucap(["sweep", path], capsys, monkeypatch)
    assert (code, out) == (2, "")
    return [line.replace(path, "S") for line in err]


@pytest.mark.usefixtures("no_run")
@pytest.mark.parametrize(
    ("spec", "line"),
    [
        (
            f"axes: [{{name: a, target: {{kind: NodePoool, name: gpu}}, {CAPACITY}, values: [spot]}}]",
            "error: S: axes[0].target.kind: unknown kind 'NodePoool' (did you mean 'NodePool'?)",
        ),
        (
            f"axes: [{{name: a, target: {{kind: NodePool, name: gpus}}, {CAPACITY}, values: [spot]}}]",
            "error: S: axes[0].target: no NodePool/gpus in the scenario's spec.manifests "
            f"({Path(GRID).parent / 'scenario.yaml'}) (did you mean 'gpu'?)",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: spec.disruption.consolidateAfter, values: [5m, 5x]}}]",
            "error: S: axes[0].values[1]: NodePool/gpu spec.disruption.consolidateAfter: "
            "'5x' is not a duration like 30s, 5m, 1h30m or Never",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: spec.disruption.consolidateAftr, values: [5m]}}]",
            "error: S: axes[0].values[0]: NodePool/gpu spec.disruption.consolidateAftr: unknown "
            "field 'consolidateAftr' (did you mean 'consolidateAfter'?)",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: spec..x, values: [1]}}]",
            "error: S: axes[0].path: 'spec..x': a field name is missing before the '.' at "
            "character 6",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: spec.disruption.consolidateAfter.x, values: [1]}}]",
            "error: S: axes[0].values[0]: NodePool/gpu: spec.disruption.consolidateAfter is not "
            "an object; cannot set 'x' in it",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: 'spec.template.spec.requirements[9].key', values: [k]}}]",
            "error: S: axes[0].values[0]: NodePool/gpu: spec.template.spec.requirements has 2 "
            "item(s); there is no [9]",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: metadata.name, values: [other]}}]",
            "error: S: axes[0].path: metadata.name says which object this is; a sweep changes "
            "an object's fields, not its identity",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, path: spec.x, values: [spot]}}]",
            "error: S: axes[0]: give one of requirement (a NodePool requirement's key) or path "
            "(a field)",
        ),
        (
            "axes: [{name: a, target: {kind: Deployment, name: vllm}, "
            f"{CAPACITY}, values: [spot]}}]",
            "error: S: axes[0].requirement: a requirement axis changes a NodePool, not a "
            "Deployment; use path: for other kinds",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [[1]]}}]",
            "error: S: axes[0].values[0]: a requirement's values are a list of strings (or one "
            "string)",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [[gpu]]}}]",
            "error: S: axes[0].values[0]: NodePool/gpu spec.template.spec.requirements[0].values: "
            "no valid values found in ['gpu'] for karpenter.sh/capacity-type, expected one of: "
            "['on-demand', 'reserved', 'spot']",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [spot]}}, "
            f"{{name: a, {NODEPOOL}, {CAPACITY}, values: [spot]}}]",
            "error: S: axes[1].name: 'a' is also axes[0]'s name",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [spot]}}]\n"
            "variants: [{values: {b: 1}}]",
            "error: S: variants[0].values.b: not an axis (axes: a)",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: []}}]",
            "error: S: axes[0].values: List should have at least 1 item after validation, not 0",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, path: spec.template.metadata.labels.day, values: [2026-01-01]}}]",
            "error: S: axes[0].values[0]: 2026-01-01 is read as a date, not a string: quote it",
        ),
        (
            f"seeds: 0\naxes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [spot]}}]",
            "error: S: seeds: 0 is less than the minimum 1",
        ),
        (
            f"axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [spot]}}]\nseed: 3",
            "error: S: seed: unknown field 'seed' (did you mean 'seeds'?)",
        ),
    ],
)
def test_a_bad_sweep_is_one_line_naming_the_file_and_the_field_and_nothing_runs(
    spec: str, line: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    assert refused(spec, tmp_path, capsys, monkeypatch) == [line]


@pytest.mark.usefixtures("no_run")
def test_a_combination_the_field_rejects_names_the_variant(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    # Each value alone is fine; together minValues 2 meets one value.
    spec = f"""
axes:
- {{name: capacity, {NODEPOOL}, {CAPACITY}, values: [[spot], [spot, on-demand]]}}
- {{name: min, {NODEPOOL}, path: 'spec.template.spec.requirements[key=karpenter.sh/capacity-type].minValues', values: [2]}}
"""
    lines = refused(spec, tmp_path, capsys, monkeypatch)
    assert lines
    assert all(
        line.startswith("error: S: axes: (capacity=spot min=2) NodePool/gpu ") for line in lines
    )
    assert "minValues 2" in lines[-1]


@pytest.mark.usefixtures("no_run")
@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--workers", "0"], "error: --workers 0: give at least 1 worker"),
        (["--only-first", "0"], "error: --only-first 0: give at least 1 variant"),
        (
            ["--max-serving-lost", "lots"],
            "error: --max-serving-lost lots: give a share of the replica-time the HPA asked for "
            "(1%) or a duration of serving pods evicted (10m)",
        ),
        (
            ["--max-serving-lost", "120%"],
            "error: --max-serving-lost 120%: a percentage from 0% to 100%",
        ),
        (
            ["--max-serving-lost", "1%"],
            "error: --max-serving-lost 1%: a share of serving needs a HorizontalPodAutoscaler in "
            "the scenario; without one give a duration of serving pods evicted (10m)",
        ),
        (
            ["--ray", "head:6379"],
            "error: --ray: 'head:6379' is not a Ray address (local, auto or ray://HOST:PORT)",
        ),
        (["-o", "csv"], "error: --output 'csv' is not one of table, json, yaml"),
        (
            ["--ray", "auto", "--workers", "4"],
            "error: --workers: the cluster at --ray auto runs on its own CPUs; --workers sets "
            "the CPUs of a local Ray (--ray alone)",
        ),
    ],
)
def test_bad_options_are_one_line_and_exit_2_before_any_run(
    extra: list[str], line: str, capsys: Any, monkeypatch: Any
) -> None:
    code, out, err = gpucap(["sweep", GRID, *extra], capsys, monkeypatch)
    assert (code, out, err) == (2, "", [line])


@pytest.mark.usefixtures("no_run")
def test_a_file_that_is_not_a_sweep_is_refused(capsys: Any, monkeypatch: Any) -> None:
    scenario = str(Path(GRID).parent / "scenario.yaml")
    code, out, err = gpucap(["sweep", scenario], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert err == [
        f"error: {scenario}: a sweep file holds one document of kind Sweep (apiVersion "
        "gpucap.dev/v1alpha1); found Scenario"
    ]


@pytest.mark.usefixtures("no_run")
def test_a_scenario_that_does_not_load_is_the_scenarios_error(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Sweep\nmetadata: {name: t}\nspec:\n"
        "  scenario: missing.yaml\n"
        f"  axes: [{{name: a, {NODEPOOL}, {CAPACITY}, values: [spot]}}]\n"
    )
    code, out, err = gpucap(["sweep", str(path)], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert len(err) == 1
    assert err[0].startswith(f"error: {tmp_path / 'missing.yaml'}: cannot read")
