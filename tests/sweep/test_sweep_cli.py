"""`gpucap sweep SWEEP.yaml` (`cli/sweep.py`, `sim/sweep.py`): the grid and explicit variants,
the same bytes whatever the number of workers, `--only-first`, `--max-serving-lost`, Ctrl-C,
the engine refusing, and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer

from gpucap.cli import sweep as sweep_cli
from gpucap.cli.sweep import SweepOptions, run
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.runtime.engines import EngineUnavailableError
from gpucap.runtime.terminal import Terminal
from tests.cli.test_simulate_cli import gpucap, ok
from tests.cli.test_simulate_runs import InterruptedAfter

DATA = Path(__file__).resolve().parent / "data"
GRID = str(DATA / "grid.yaml")
SCENARIO = str(DATA / "scenario.yaml")


def sweep_file(tmp_path: Path, spec: str, name: str = "s.yaml") -> str:
    """A Sweep over the tests' scenario with `spec` (YAML lines under `spec:`)."""
    body = "\n".join(f"  {line}" for line in spec.strip("\n").splitlines())
    text = (
        "apiVersion: gpucap.dev/v1alpha1\nkind: Sweep\nmetadata: {name: t}\nspec:\n"
        f"  scenario: {SCENARIO}\n{body}\n"
    )
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def as_json(args: list[str], capsys: Any, monkeypatch: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ok(["sweep", *args, "-o", "json"], capsys, monkeypatch))
    return doc


# ---- the grid and the engines --------------------------------------------------------------------
def test_a_2x2_grid_of_3_seeds_gives_the_same_json_on_one_worker_and_on_two(
    capsys: Any, monkeypatch: Any
) -> None:
    one = ok(["sweep", GRID, "--workers", "1", "-o", "json"], capsys, monkeypatch)
    two = ok(["sweep", GRID, "--workers", "2", "-o", "json"], capsys, monkeypatch)
    assert one == two
    doc = json.loads(one)
    assert (doc["apiVersion"], doc["kind"], doc["sweep"]) == (
        "gpucap.dev/v1alpha1",
        "SweepResult",
        "grid",
    )
    assert len(doc["variants"]) == 4
    for v in doc["variants"]:
        assert [r["seed"] for r in v["runs"]] == [1, 2, 3]
        assert v["summary"]["runs"] == 3
    # The spot market draws from the seed: the spot-first variants' runs differ.
    spot = doc["variants"][0]
    assert len({r["summary"]["costUSD"] for r in spot["runs"]}) > 1


def test_the_grid_is_the_product_of_the_axes_in_the_order_written_the_last_varying_fastest(
    capsys: Any, monkeypatch: Any
) -> None:
    doc = as_json([GRID, "--workers", "1"], capsys, monkeypatch)
    assert [v["values"] for v in doc["variants"]] == [
        {"capacity": ["spot", "on-demand"], "consolidateAfter": "5m"},
        {"capacity": ["spot", "on-demand"], "consolidateAfter": "2h"},
        {"capacity": ["on-demand"], "consolidateAfter": "5m"},
        {"capacity": ["on-demand"], "consolidateAfter": "2h"},
    ]
    assert doc["variants"][0]["name"] == "capacity=spot,on-demand consolidateAfter=5m"
    assert doc["axes"] == ["capacity", "consolidateAfter"]


def test_a_run_of_a_variant_is_the_scenario_run_with_the_variants_values(
    capsys: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    # The on-demand-only variant, as a scenario of its own: the same summary for the same seed.
    nodepool = (DATA.parents[1] / "sim" / "stories" / "nodepool.yaml").read_text()
    (tmp_path / "nodepool.yaml").write_text(
        nodepool.replace("values: [spot, on-demand]", "values: [on-demand]")
    )
    scenario = (
        Path(SCENARIO).read_text().replace("../../sim/stories/nodepool.yaml", "nodepool.yaml")
    )
    scenario = scenario.replace(
        "../../sim/stories/", str(DATA.parents[1] / "sim" / "stories") + "/"
    )
    (tmp_path / "od.yaml").write_text(scenario)
    alone = json.loads(
        ok(["simulate", str(tmp_path / "od.yaml"), "-o", "json"], capsys, monkeypatch)
    )
    doc = as_json([GRID, "--workers", "1"], capsys, monkeypatch)
    on_demand = doc["variants"][3]  # capacity on-demand, consolidateAfter 2h as written
    assert on_demand["runs"][0]["summary"] == alone["summary"]


def test_explicit_variants_replace_the_grid_and_may_leave_an_axis_as_written(
    capsys: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    path = sweep_file(
        tmp_path,
        """
seeds: 1
axes:
- {name: capacity, target: {kind: NodePool, name: gpu}, requirement: karpenter.sh/capacity-type, values: [[spot, on-demand]]}
- {name: after, target: {kind: NodePool, name: gpu}, path: spec.disruption.consolidateAfter, values: [5m]}
variants:
- {name: od-fast, values: {capacity: [on-demand], after: 1m}}
- {values: {after: 30m}}
""",
    )
    doc = as_json([path, "--workers", "1"], capsys, monkeypatch)
    assert [(v["name"], v["values"]) for v in doc["variants"]] == [
        ("od-fast", {"capacity": ["on-demand"], "after": "1m"}),
        ("after=30m", {"after": "30m"}),
    ]
    table = ok(["sweep", path, "--workers", "1"], capsys, monkeypatch).splitlines()
    assert table[4].split()[:3] == ["as", "written", "30m"]  # capacity: the NodePool's own


def test_only_first_runs_the_first_n_variants(capsys: Any, monkeypatch: Any) -> None:
    doc = as_json([GRID, "--workers", "1", "--only-first", "1"], capsys, monkeypatch)
    assert [v["name"] for v in doc["variants"]] == ["capacity=spot,on-demand consolidateAfter=5m"]
    assert [r["seed"] for r in doc["variants"][0]["runs"]] == [1, 2, 3]


# ---- the answer ----------------------------------------------------------------------------------
def test_the_table_marks_the_front_and_names_the_cheapest_variant_within_the_bound(
    capsys: Any, monkeypatch: Any
) -> None:
    out = ok(["sweep", GRID, "--workers", "2", "--max-serving-lost", "1m"], capsys, monkeypatch)
    lines = out.splitlines()
    assert lines[0].startswith("Sweep grid (")
    assert lines[2].split()[:3] == ["CAPACITY", "CONSOLIDATEAFTER", "COST"]
    assert lines[2].endswith("FRONT")
    assert all(line.endswith("*") for line in lines[3:7])  # none dominates another here
    assert lines[-1].startswith(
        "Cheapest with serving lost at most 1m00s (p50 of its runs): capacity=on-demand "
        "consolidateAfter=5m, $"
    )
    doc = as_json([GRID, "--workers", "2", "--max-serving-lost", "1m"], capsys, monkeypatch)
    assert doc["choice"] == {
        "maxServingLost": "1m",
        "measure": "servingLostSeconds",
        "statistic": "p50",
        "bound": 60.0,
        "variant": "capacity=on-demand consolidateAfter=5m",
    }


def test_no_variant_within_the_bound_is_said(capsys: Any, monkeypatch: Any) -> None:
    args = ["sweep", GRID, "--workers", "1", "--only-first", "1", "--max-serving-lost", "1m"]
    out = ok(args, capsys, monkeypatch)
    assert out.splitlines()[-1] == (
        "No variant keeps serving lost at most 1m00s (p50 of its runs, servingLostSeconds)."
    )


# ---- Ctrl-C, the engine, the report --------------------------------------------------------------
def test_ctrl_c_stops_the_sweep_and_prints_the_runs_that_finished(capsys: Any) -> None:
    engine = InterruptedAfter(4)
    with pytest.raises(typer.Exit) as stopped:
        run(
            SweepOptions(GRID, output="json"),
            catalog_for=load_catalog,
            out=Terminal(),
            err=Terminal(stderr=True),
            executor=engine,
        )
    assert stopped.value.exit_code == 130
    assert engine.closed
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [len(v["runs"]) for v in doc["variants"]] == [3, 1, 0, 0]
    assert [v["summary"]["requested"] for v in doc["variants"]] == [3, 3, 3, 3]
    assert captured.err.splitlines() == ["interrupted: 4 of 12 runs finished"]


def test_an_engine_that_cannot_run_is_one_line_and_exit_2(capsys: Any, monkeypatch: Any) -> None:
    def refuse(workers: int, *, ray: str | None = None) -> Any:
        raise EngineUnavailableError(f"--ray {ray}: Ray is not installed")

    monkeypatch.setattr(sweep_cli, "executor_for", refuse)
    code, out, err = gpucap(["sweep", GRID, "--ray"], capsys, monkeypatch)
    assert (code, out, err) == (2, "", ["error: --ray local: Ray is not installed"])
    code, out, err = gpucap(["sweep", "--ray", "ray://head:10001", GRID], capsys, monkeypatch)
    assert err == ["error: --ray ray://head:10001: Ray is not installed"]


def test_the_report_draws_the_front_and_each_variants_costs(
    capsys: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    page = tmp_path / "sweep.html"
    ok(["sweep", GRID, "--workers", "1", "--report", str(page)], capsys, monkeypatch)
    html = page.read_text()
    assert 'data-kind="sweep"' in html
    assert html.count('data-chart="sweep"') == 2
    assert "capacity=on-demand consolidateAfter=2h" in html
    assert '"type":"box"' in html


def test_the_progress_bar_says_runs_per_second_and_the_time_left() -> None:
    import io  # noqa: PLC0415

    from rich.console import Console  # noqa: PLC0415

    from gpucap.cli.simulate_runs import RunsProgress  # noqa: PLC0415
    from tests.cli.test_simulate_runs import FakeWall  # noqa: PLC0415

    screen = io.StringIO()
    wall = FakeWall()
    bar = RunsProgress(20, console=Console(file=screen, force_terminal=True, width=150), clock=wall)
    for done in range(1, 11):
        wall.t += 2.0  # a run finishes every 2 s
        bar.step(done)
    assert bar.progress is not None
    task = bar.progress.tasks[0]
    assert task.speed == pytest.approx(0.5)
    assert task.time_remaining == pytest.approx(20.0)  # 10 runs left at 0.5 runs/s
    bar.progress.refresh()
    bar.close()
    assert "0.50 runs/s" in screen.getvalue()


def test_a_2x2_grid_of_3_seeds_gives_the_same_json_on_a_local_ray_instance(
    capsys: Any, monkeypatch: Any
) -> None:
    # The "done when": locally and on Ray, the same bytes. Runs where Ray is installed
    # (`pip install 'gpucap[ray]'`; CI), on a Ray instance the engine starts for the sweep.
    pytest.importorskip("ray")
    local = ok(["sweep", GRID, "--workers", "1", "-o", "json"], capsys, monkeypatch)
    on_ray = ok(["sweep", GRID, "--ray", "--workers", "2", "-o", "json"], capsys, monkeypatch)
    assert on_ray == local
