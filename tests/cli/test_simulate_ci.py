"""`simulate` for CI and for a first scenario: `--fail-on-pending` exits 1 when pods are pending
at the end or some pod never became Ready; `--init FILES` writes a starter scenario that runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
STORIES = ROOT / "tests" / "sim" / "stories"
WORKSHOP = ROOT / "src" / "gpucap" / "data" / "examples" / "workshop"
runner = CliRunner()


def test_fail_on_pending_exits_1_when_a_pod_never_became_ready() -> None:
    story = str(STORIES / "no-plugin.yaml")  # no device plugin: the GPU pod never starts
    plain = runner.invoke(app, ["simulate", story])
    failing = runner.invoke(app, ["simulate", story, "--fail-on-pending"])
    assert plain.exit_code == 0
    assert failing.exit_code == 1
    assert failing.stdout == plain.stdout


def test_fail_on_pending_exits_0_when_every_pod_became_ready() -> None:
    result = runner.invoke(
        app, ["simulate", str(STORIES / "spot-ice.yaml"), "--fail-on-pending", "-o", "json"]
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["pendingAtEnd"] == []


def test_simulate_takes_one_scenario() -> None:
    result = runner.invoke(app, ["simulate", "a.yaml", "b.yaml"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: SCENARIO: one scenario file, not 2 (--init writes a starter scenario over "
        "manifest files)"
    )


def test_init_writes_a_starter_scenario_that_runs_and_shows_the_spot_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(WORKSHOP / "nodepool.yaml", tmp_path / "nodepool.yaml")
    shutil.copy(STORIES / "nodeclass.yaml", tmp_path / "nodeclass.yaml")
    shutil.copy(WORKSHOP / "vllm.yaml", tmp_path / "vllm.yaml")
    monkeypatch.chdir(tmp_path)
    init = runner.invoke(
        app, ["simulate", "--init", "nodepool.yaml", "nodeclass.yaml", "vllm.yaml"]
    )
    assert init.exit_code == 0, init.stderr
    assert "# " in init.stdout  # commented
    (tmp_path / "scenario.yaml").write_text(init.stdout)
    result = runner.invoke(app, ["simulate", "scenario.yaml", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    events = json.loads(result.stdout)["events"]
    kinds = [e["kind"] for e in events if e["type"] == "ScenarioEvent"]
    assert kinds == ["apply", "capacity", "capacity", "scale", "scale"]
    gone = {e["zone"] for e in events if e["type"] == "OfferingUnavailable"}
    launched = [e for e in events if e["type"] == "NodeClaimLaunched"]
    assert gone == {"us-east-1a"}
    assert launched[-1]["zone"] != "us-east-1a"  # the scale-up fell back to another zone
    assert json.loads(result.stdout)["summary"]["nodes"]  # and the run billed nodes
