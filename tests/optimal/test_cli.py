"""`gpucap plan --optimal`: its lines after the plan, the JSON `optimal` section, its option."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.builders import nodeclass, to_yaml
from tests.optimal.instances import gpu_deployment, gpu_pool

runner = CliRunner()


def _input(tmp_path: Path) -> str:
    f = tmp_path / "two.yaml"
    f.write_text(to_yaml(gpu_pool(), nodeclass(), gpu_deployment("batch", 2)))
    return str(f)


def test_without_optimal_the_plan_prints_what_it_always_printed(tmp_path: Path) -> None:
    f = _input(tmp_path)
    plain = runner.invoke(app, ["plan", f])
    with_optimal = runner.invoke(app, ["plan", f, "--optimal"])
    assert plain.exit_code == with_optimal.exit_code == 0
    assert with_optimal.stdout.startswith(plain.stdout.rstrip("\n"))
    assert "OPTIMAL FLEET" not in plain.stdout


def test_optimal_prints_karpenters_cost_the_optimum_the_floor_and_the_excess(
    tmp_path: Path,
) -> None:
    result = runner.invoke(app, ["plan", _input(tmp_path), "--optimal", "--optimal-time", "5s"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    tail = lines[lines.index("OPTIMAL FLEET (2 pod(s) Karpenter placed on new nodes)") :]
    assert "Karpenter's plan: $2.1370/hour" in tail
    assert "optimum:          $0.7878/hour (proven optimal)" in tail
    assert "cost floor:       $0.7878/hour (LP relaxation: no fleet costs less)" in tail
    assert any(
        line.startswith("Karpenter's excess: $1.3492/hour over the optimum") for line in tail
    )
    assert any("require instance-gpu-count 1" in line for line in tail)


def test_json_adds_an_optimal_section_with_the_changes(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", _input(tmp_path), "--optimal", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    opt = doc["optimal"]
    assert opt["status"] == "optimal"
    assert opt["karpenterPricePerHour"] == doc["summary"]["pricePerHour"]
    assert opt["floorPricePerHour"] <= opt["optimumPricePerHour"] < opt["karpenterPricePerHour"]
    assert [n["instanceType"] for n in opt["nodes"]] == ["g5.xlarge", "g5.xlarge"]
    change = next(c for c in opt["changes"] if c["object"] == "NodePool/gpu")
    assert change["field"] == "spec.template.spec.requirements"
    assert change["value"]["key"] == "karpenter.k8s.aws/instance-gpu-count"
    assert change["pricePerHour"] < opt["karpenterPricePerHour"]


def test_a_bad_optimal_time_is_refused_with_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", _input(tmp_path), "--optimal", "--optimal-time", "soon"])
    assert result.exit_code == 2
    # (`gpucap`'s entry point prints click's usage error as `error: --optimal-time: ...`.)
    assert "'--optimal-time': 'soon' is not a duration such as 10s" in result.stderr
