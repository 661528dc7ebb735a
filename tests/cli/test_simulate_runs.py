"""`gpucap simulate SCENARIO --runs N [--seed S] [--workers W]` (`cli/simulate_runs.py`): the
set's table and JSON, the same bytes whatever the number of workers, the options a set refuses,
Ctrl-C, and the set's HTML report."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import typer
from rich.console import Console

from gpucap.cli.simulate_runs import NO_RANDOM_WORLD, RunsProgress, run_set
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.runtime.executor import InlineExecutor
from gpucap.runtime.terminal import Terminal
from gpucap.sim.scenario import load_scenario
from tests.cli.test_simulate_cli import gpucap, ok

STORIES = Path(__file__).resolve().parents[1] / "sim" / "stories"
INTERRUPT = str(STORIES / "interrupt.yaml")
PENDING = str(STORIES / "pending-only.yaml")

T = TypeVar("T")
R = TypeVar("R")


# ---- what a person reads -------------------------------------------------------------------------
def test_the_table_gives_each_measure_across_the_runs_and_says_when_every_run_is_the_same(
    capsys: Any, monkeypatch: Any
) -> None:
    out = ok(["simulate", INTERRUPT, "--runs", "3", "--workers", "1"], capsys, monkeypatch)
    lines = out.splitlines()
    assert lines[0].endswith("Kubernetes 1.36, seeds 1 to 3 (3 runs)")
    assert lines[2].split() == ["ACROSS", "RUNS", "P5", "P50", "P95", "MEAN"]
    labels = [line[:28].strip() for line in lines[3:11]]
    assert labels == [
        "Cost",
        "Node-hours",
        "GPU-hours",
        "Time to ready (a run's p95)",
        "Serving lost (evictions)",
        "Interruptions",
        "Disruptions (all reasons)",
        "Pods pending at the end",
    ]
    assert lines[8].split()[-4:] == ["1", "1", "1", "1"]  # the story's one interruption
    # Nothing in today's world draws from the seed: the runs agree, and the set says so.
    assert lines[-1] == NO_RANDOM_WORLD


def test_seed_replaces_the_scenarios_seed_for_one_run(capsys: Any, monkeypatch: Any) -> None:
    out = ok(["simulate", INTERRUPT, "--seed", "7"], capsys, monkeypatch)
    assert out.splitlines()[0].endswith(", seed 7")


def test_runs_start_at_the_given_seed(capsys: Any, monkeypatch: Any) -> None:
    args = ["simulate", INTERRUPT, "--runs", "2", "--seed", "40", "--workers", "1", "-o", "json"]
    doc = json.loads(ok(args, capsys, monkeypatch))
    assert [r["seed"] for r in doc["runs"]] == [40, 41]


# ---- what a script reads -------------------------------------------------------------------------
def test_json_holds_every_runs_seed_and_summary_and_the_sets_summary(
    capsys: Any, monkeypatch: Any
) -> None:
    args = ["simulate", INTERRUPT, "--runs", "3", "--workers", "1", "-o", "json"]
    doc = json.loads(ok(args, capsys, monkeypatch))
    assert list(doc) == ["apiVersion", "kind", "scenario", "runs", "summary"]
    assert (doc["apiVersion"], doc["kind"]) == ("gpucap.dev/v1alpha1", "SimulationSet")
    assert doc["scenario"] == {"name": "interrupt", "path": INTERRUPT}
    assert [r["seed"] for r in doc["runs"]] == [1, 2, 3]
    single = json.loads(ok(["simulate", INTERRUPT, "-o", "json"], capsys, monkeypatch))
    assert doc["runs"][0]["summary"] == single["summary"]  # a run of the set is the run
    summary = doc["summary"]
    assert (summary["runs"], summary["requested"], summary["identical"]) == (3, 3, True)
    assert summary["percentiles"] == "nearest-rank"
    cost = single["summary"]["costUSD"]
    assert summary["costUSD"] == {"p5": cost, "p50": cost, "p95": cost, "mean": cost, "count": 3}
    assert summary["interruptions"]["p50"] == 1


def test_yaml_is_the_same_document(capsys: Any, monkeypatch: Any) -> None:
    import yaml  # noqa: PLC0415

    base = ["simulate", INTERRUPT, "--runs", "2", "--workers", "1"]
    as_json = json.loads(ok([*base, "-o", "json"], capsys, monkeypatch))
    assert yaml.safe_load(ok([*base, "-o", "yaml"], capsys, monkeypatch)) == as_json


def test_the_same_seeds_give_the_same_bytes_whatever_the_number_of_workers(
    capsys: Any, monkeypatch: Any
) -> None:
    base = ["simulate", str(STORIES / "spot-ice.yaml"), "--runs", "4", "--seed", "9", "-o", "json"]
    one = ok([*base, "--workers", "1"], capsys, monkeypatch)
    two = ok([*base, "--workers", "2"], capsys, monkeypatch)
    assert one == two


def test_fail_on_pending_exits_1_when_some_run_left_pods_pending(
    capsys: Any, monkeypatch: Any
) -> None:
    args = ["simulate", PENDING, "--runs", "2", "--workers", "1", "--fail-on-pending"]
    code, out, _ = gpucap(args, capsys, monkeypatch)
    assert code == 1
    assert "Pods pending at the end" in out


# ---- what a set refuses --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--runs", "0"], "error: --runs 0: give a number of runs from 1 to 10,000"),
        (["--runs", "-3"], "error: --runs -3: give a number of runs from 1 to 10,000"),
        (["--runs", "10001"], "error: --runs 10001: give a number of runs from 1 to 10,000"),
        (["--runs", "2", "--workers", "0"], "error: --workers 0: give at least 1 worker"),
        (["--workers", "2"], "error: --workers: runs in parallel only with --runs N"),
        (
            ["--runs", "2", "--events", "e.jsonl"],
            "error: --events: the events are one run's; with --runs run one seed (--seed S) "
            "to see them",
        ),
        (
            ["--runs", "2", "--watch"],
            "error: --watch: the watch pane follows one run; it cannot go with --runs",
        ),
    ],
)
def test_what_makes_no_sense_for_a_set_is_one_line_and_exit_2(
    extra: list[str], message: str, capsys: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = gpucap(["simulate", INTERRUPT, *extra], capsys, monkeypatch)
    assert (code, out, err) == (2, "", [message])
    assert not (tmp_path / "e.jsonl").exists()


# ---- Ctrl-C --------------------------------------------------------------------------------------
class InterruptedAfter:
    """An executor on which the user presses Ctrl-C after `n` runs have finished."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.closed = False

    @property
    def workers(self) -> int:
        return 1

    def map(self, work: Callable[[T], R], items: Iterable[T]) -> Generator[tuple[T, R], None, None]:
        try:
            for i, item in enumerate(items):
                if i == self.n:
                    raise KeyboardInterrupt
                yield item, work(item)
        finally:
            self.closed = True


def test_ctrl_c_stops_the_set_and_prints_the_runs_that_finished(capsys: Any) -> None:
    scenario = load_scenario(INTERRUPT, load_catalog)
    engine = InterruptedAfter(2)
    with pytest.raises(typer.Exit) as stopped:
        run_set(
            scenario,
            load_catalog(scenario.region),
            runs=5,
            first_seed=1,
            workers=None,
            output="json",
            report=None,
            fail_on_pending=False,
            out=Terminal(),
            err=Terminal(stderr=True),
            executor=engine,
        )
    assert stopped.value.exit_code == 130
    assert engine.closed
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [r["seed"] for r in doc["runs"]] == [1, 2]
    assert (doc["summary"]["runs"], doc["summary"]["requested"]) == (2, 5)
    assert captured.err.splitlines() == ["interrupted: 2 of 5 runs finished"]


# ---- the progress bar ----------------------------------------------------------------------------
class FakeWall:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> Any:
        raise AssertionError("the CLI measures progress on monotonic time only")

    def monotonic(self) -> float:
        return self.t


def test_the_progress_bar_counts_runs_done_once_the_set_has_taken_half_a_second() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    wall = FakeWall()
    bar = RunsProgress(10, console=console, clock=wall)
    bar.step(1)
    assert bar.progress is None  # a quick set shows nothing
    wall.t += 1.0
    bar.step(4)
    assert bar.progress is not None
    assert bar.progress.tasks[0].completed == 4
    assert bar.progress.tasks[0].total == 10
    bar.close()
    assert "runs" in screen.getvalue()


def test_the_progress_bar_never_reaches_stdout(capsys: Any) -> None:
    scenario = load_scenario(INTERRUPT, load_catalog)
    screen = io.StringIO()

    class Slow(FakeWall):
        def monotonic(self) -> float:
            self.t += 1.0
            return self.t

    run_set(
        scenario,
        load_catalog(scenario.region),
        runs=2,
        first_seed=1,
        workers=1,
        output="json",
        report=None,
        fail_on_pending=False,
        out=Terminal(),
        err=Terminal(stderr=True),
        executor=InlineExecutor(),
        clock=Slow(),
        stderr_console=Console(file=screen, force_terminal=True, width=120),
    )
    assert "simulating" in screen.getvalue()
    assert json.loads(capsys.readouterr().out)["kind"] == "SimulationSet"


# ---- the report ----------------------------------------------------------------------------------
def test_the_report_draws_the_cost_fan_and_the_histograms(
    capsys: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    page = tmp_path / "set.html"
    args = ["simulate", INTERRUPT, "--runs", "3", "--workers", "1", "--report", str(page)]
    ok(args, capsys, monkeypatch)
    html = page.read_text(encoding="utf-8")
    assert html.count('data-chart="set"') == 3
    assert 'data-table="set"' in html
    assert NO_RANDOM_WORLD in html
    assert "seeds 1 to 3 (3 runs)" in html
