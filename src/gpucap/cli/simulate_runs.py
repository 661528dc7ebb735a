"""`gpucap simulate SCENARIO --runs N [--seed S] [--workers W] [--ray [ADDRESS]]`: many runs of
per seed S..S+N-1, and the distributions of what they cost and lost (issue 25, "Many runs").

`cli/simulate.py` checks the options (`check_set_usage`: what makes no sense for a set is one
line, exit 2), loads the scenario once and hands over to `run_set`, which
- runs the seeds on an executor (`runtime/executor.py`: inline for one worker, local processes
  otherwise, Ray tasks with `--ray [ADDRESS]`: `runtime/ray_executor.py`), each run a World of
  its own (`sim/runset.SeedRun`);
- collects the outcomes as they finish, with a progress bar of runs done on stderr (a terminal
  only, once the set has taken half a second; transient);
- orders them by seed and prints: the table (`format_set`), or `-o json|yaml` (`set_document`),
  and with `--report` the set's HTML page (`report/runset.py`).

Ctrl-C stops handing out runs, lets the ones under way finish, prints what finished (the
document says how many of how many) and exits 130. The output depends on the seeds alone: the
same bytes whatever `--workers` (tests/cli/test_simulate_runs.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing
from typing import Any, TypeVar

import typer
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from gpucap.cli.errors import BadInputError, map_exceptions
from gpucap.cli.reporting import write_report_or_exit
from gpucap.cli.table import format_table
from gpucap.cli.terminals import EXIT_FINDINGS
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.report.runset import SET_HEADER, set_table
from gpucap.runtime.clock import Clock, RealClock
from gpucap.runtime.engines import LOCAL, EngineUnavailableError
from gpucap.runtime.executor import Executor, default_workers, executor_for
from gpucap.runtime.terminal import Terminal, plain_console
from gpucap.sim.runset import MAX_RUNS, RunOutcome, SeedRun, set_summary
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.timeline import format_duration

__all__ = [
    "EXIT_INTERRUPTED",
    "NO_RANDOM_WORLD",
    "RunsProgress",
    "check_set_usage",
    "collect_runs",
    "format_set",
    "run_set",
    "set_document",
]

# The exit status of a set stopped by Ctrl-C, after what finished is printed (the shell's 128+2).
EXIT_INTERRUPTED = 130
NO_RANDOM_WORLD = "The scenario has no random world: every run is the same."
# The progress bar appears once the set has taken this long (wall seconds), as simulate's own.
PROGRESS_AFTER_SECONDS = 0.5

T = TypeVar("T")
R = TypeVar("R")


def check_engine_usage(workers: int | None, ray: str | None) -> None:
    """`--workers` and `--ray` of a set of runs (`simulate --runs`, `sweep`): a worker count of
    at least 1, and none with a cluster's address (the cluster's CPUs decide)."""
    if workers is not None and workers < 1:
        raise BadInputError(f"--workers {workers}: give at least 1 worker")
    if workers is not None and ray not in (None, LOCAL):
        raise BadInputError(
            f"--workers: the cluster at --ray {ray} runs on its own CPUs; --workers sets the "
            "CPUs of a local Ray (--ray alone)"
        )


def check_set_usage(
    *,
    runs: int | None,
    workers: int | None,
    events: str | None,
    watch: bool,
    ray: str | None = None,
) -> None:
    """The options of a set, each refused in one line before anything is read."""
    if runs is None:
        if workers is not None:
            raise BadInputError("--workers: runs in parallel only with --runs N")
        if ray is not None:
            raise BadInputError("--ray: runs on Ray only with --runs N")
        return
    if not 1 <= runs <= MAX_RUNS:
        raise BadInputError(f"--runs {runs}: give a number of runs from 1 to {MAX_RUNS:,}")
    check_engine_usage(workers, ray)
    if events is not None:
        raise BadInputError(
            "--events: the events are one run's; with --runs run one seed (--seed S) to see them"
        )
    if watch:
        raise BadInputError("--watch: the watch pane follows one run; it cannot go with --runs")


def run_set(
    scenario: LoadedScenario,
    catalog: Catalog,
    *,
    runs: int,
    first_seed: int,
    workers: int | None,
    output: str,
    ray: str | None = None,
    report: str | None,
    fail_on_pending: bool,
    out: Terminal,
    err: Terminal,
    executor: Executor | None = None,
    clock: Clock | None = None,
    stderr_console: Console | None = None,
) -> None:
    """Run the set and print it (see the module docstring); `executor`, `clock` and the console
    are injected by tests. `ray`: `--ray ADDRESS` (an engine that cannot run is one line)."""
    seeds = range(first_seed, first_seed + runs)
    with map_exceptions({EngineUnavailableError: str}):
        engine = executor or executor_for(min(workers or default_workers(), runs), ray=ray)
        outcomes, interrupted = collect_runs(
            engine,
            SeedRun(scenario, catalog),
            list(seeds),
            console=stderr_console or plain_console(stderr=True),
            clock=clock,
        )
    done = [outcomes[s] for s in sorted(outcomes)]
    if interrupted:
        err.line(f"interrupted: {len(done)} of {runs} runs finished", style="yellow")
    if report is not None and done:
        _write_report(report, scenario, done, runs)
    _print(output, scenario, done, runs, out)
    if interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if fail_on_pending and any(
        o.summary["pendingAtEnd"] or o.summary["pods"]["neverReady"] for o in done
    ):
        raise typer.Exit(EXIT_FINDINGS)


def collect_runs(
    engine: Executor,
    work: Callable[[T], R],
    items: Sequence[T],
    *,
    console: Console,
    clock: Clock | None = None,
) -> tuple[dict[T, R], bool]:
    """Run `work` on every item on `engine`, with the progress bar on `console` (a terminal
    only): the results by item, and whether Ctrl-C stopped it (the runs under way finished, the
    ones not started were cancelled). Shared by `simulate --runs` and `gpucap sweep`."""
    results: dict[T, R] = {}
    interrupted = False
    with ExitStack() as stack:
        bar: RunsProgress | None = None
        if console.is_terminal:
            bar = RunsProgress(len(items), console=console, clock=clock or RealClock())
            stack.callback(bar.close)
        running = stack.enter_context(closing(engine.map(work, items)))
        try:
            for item, result in running:
                results[item] = result
                if bar is not None:
                    bar.step(len(results))
        except KeyboardInterrupt:
            # Closing `running` (on leaving the stack) cancels the runs not started.
            interrupted = True
    return results, interrupted


def _print(
    output: str,
    scenario: LoadedScenario,
    done: Sequence[RunOutcome],
    requested: int,
    out: Terminal,
) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(set_document(scenario, done, requested), indent=2))
        sys.stdout.write("\n")
    elif output == "yaml":
        doc = set_document(scenario, done, requested)
        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    else:
        out.lines(format_set(scenario, done, requested))


def set_document(
    scenario: LoadedScenario, done: Sequence[RunOutcome], requested: int
) -> dict[str, Any]:
    """The `-o json`/`-o yaml` document of a set: every run's seed and summary, in seed order,
    and the set's summary (`sim/runset.set_summary`), under the Simulation document's
    apiVersion."""
    return {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "SimulationSet",
        "scenario": {"name": scenario.name, "path": scenario.path},
        "runs": [{"seed": o.seed, "summary": o.summary} for o in done],
        "summary": set_summary(done, requested=requested),
    }


def set_header(scenario: LoadedScenario, done: Sequence[RunOutcome], requested: int) -> str:
    """The set's first line: the scenario as `simulate`'s header says it, and the seeds."""
    if not done:
        seeds = "no run finished"
    elif len(done) == 1:
        seeds = f"seed {done[0].seed} (1 run)"
    else:
        seeds = f"seeds {done[0].seed} to {done[-1].seed} ({len(done)} runs)"
    if len(done) < requested:
        seeds += f", {len(done)} of {requested} finished"
    return (
        f"Scenario {scenario.name} ({scenario.path}): {format_duration(scenario.duration)} in "
        f"{scenario.region}, Kubernetes {scenario.kubernetes_version}, {seeds}"
    )


def format_set(scenario: LoadedScenario, done: Sequence[RunOutcome], requested: int) -> list[str]:
    """The set as text: the header, a table of the measures' p5, p50, p95 and mean over the
    runs, and what the numbers are."""
    lines = [set_header(scenario, done, requested)]
    if not done:
        return lines
    summary = set_summary(done, requested=requested)
    lines += ["", *format_table([list(SET_HEADER), *set_table(summary)])]
    lines.append("(percentiles are nearest-rank over the runs: an observed run's value)")
    ready = summary["timeToReadyP95Seconds"]
    if ready["count"] < len(done):
        lines.append(
            f"Time to ready: {len(done) - ready['count']} of {len(done)} runs had no pod Ready"
        )
    if summary["identical"]:
        lines += ["", NO_RANDOM_WORLD]
    return lines


def _write_report(
    path: str, scenario: LoadedScenario, done: Sequence[RunOutcome], requested: int
) -> None:
    from gpucap.report.page import SimulationSetSection  # noqa: PLC0415 - only with --report
    from gpucap.report.runset import set_view  # noqa: PLC0415

    header = set_header(scenario, done, requested)
    view = set_view(done, requested=requested, duration=scenario.duration)
    notes = [NO_RANDOM_WORLD] if view.summary["identical"] else []
    section = SimulationSetSection(
        f"Scenario {scenario.name}: {len(done)} runs",
        view,
        subtitle=header,
        start=scenario.start,
        sentences=notes,
    )
    write_report_or_exit(path, f"gpucap simulate {scenario.name} --runs {requested}", [section])


class _RunsPerSecond(ProgressColumn):
    """Runs finished per wall second, as rich estimates it (blank until it can)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.2f} runs/s")


class RunsProgress:
    """The set's progress bar on stderr (a terminal only): runs done of the runs asked for,
    runs per second, the time taken and the time left (rich's estimates), shown once the set
    has taken `after` wall seconds, erased when it ends."""

    def __init__(
        self,
        total: int,
        *,
        console: Console,
        clock: Clock,
        after: float = PROGRESS_AFTER_SECONDS,
    ) -> None:
        self.total = total
        self.console = console
        self.clock = clock
        self.after = after
        self.started = clock.monotonic()
        self.progress: Progress | None = None
        self._task = TaskID(0)

    def step(self, done: int) -> None:
        """`done` runs have finished."""
        if self.progress is None:
            if self.clock.monotonic() - self.started < self.after:
                return
            self.progress = Progress(
                TextColumn("simulating", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs", markup=False),
                _RunsPerSecond(),
                TimeElapsedColumn(),
                TextColumn("left", markup=False),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
                get_time=self.clock.monotonic,  # speed and time left on the injected clock
            )
            self._task = self.progress.add_task("runs", total=self.total)
            self.progress.start()
        self.progress.update(self._task, completed=done)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
