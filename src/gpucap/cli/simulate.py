"""`gpucap simulate SCENARIO`: the command (`simulate`, registered by `cli/app.py`) and its body
(`run`).

Thin like `plan`: check the options that depend on each other, load the scenario
(`sim/scenario.py`, every problem one `error:` line and exit 2), run it (`sim/world.py`), format
it (`cli/simulate_render.py`), print. The only wall clock of a simulation is here, in the shell:
`--watch` paces the run at `--speed` virtual seconds per wall second and the progress bar shows
itself once a run has taken half a second; both read `runtime.clock.RealClock` (injectable, so
tests pace with a fake one). The simulated world never sees it: a run's events are the same
whether it was watched, piped or written to a file.

What goes where:
- stdout: the table (a header, the timeline, the summary), or `-o json`/`-o yaml` (the document
  of `simulation_document`), or with `--events -` the JSON lines alone;
- `--events FILE`: the JSON lines, written and flushed as the run goes (`tail -f` follows it); a
  write that fails (a full disk) ends the run with one line;
- stderr: loader warnings, the one-line error, and the progress bar (a terminal only, table
  output only; transient: it leaves nothing behind);
- `--report FILE`: the HTML report of the run (`report/`), in addition to whatever stdout
  carries; its path is checked before the run (`cli/reporting.py`).

`--seed S` runs the scenario with seed S in place of its `spec.seed`. `--runs N` makes it a set
of runs, seeds S..S+N-1: the options are checked here, the scenario loaded once, and
`cli/simulate_runs.py` runs and prints the set.

Neither `--events` nor `--report` may name one of the run's inputs (the scenario, the files it
names): refused in one line before anything is written, rather than overwriting the input.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Annotated, TextIO, cast

import typer
import yaml
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from gpucap.apis.capacityreservation import load_reservations
from gpucap.apis.reading import os_reason
from gpucap.cli import loading, terminals
from gpucap.cli.catalogs import catalog_from_options
from gpucap.cli.errors import BadInputError
from gpucap.cli.options import (
    CatalogOption,
    OutputOption,
    PricesOption,
    RayOption,
    ReportOption,
    ReservationsOption,
    ZonesOption,
    check_output,
    kubernetes_minor,
    region_name,
)
from gpucap.cli.reporting import (
    check_report_path,
    refuse_overwriting_inputs,
    write_report_or_exit,
)
from gpucap.cli.simulate_render import (
    fit_lines,
    format_duration,
    format_summary,
    format_timeline,
    simulation_document,
    watch_lines,
)
from gpucap.cli.simulate_runs import check_set_usage, run_set
from gpucap.cli.terminals import EXIT_BAD_INPUT, EXIT_FINDINGS
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.runtime.clock import EPOCH, Clock, RealClock
from gpucap.runtime.errors import GpucapInputError
from gpucap.runtime.terminal import Terminal, escape, plain_console
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import LoadedScenario, load_scenario
from gpucap.sim.world import SimulationResult, World

__all__ = [
    "DEFAULT_SPEED",
    "OUTPUTS",
    "PROGRESS_AFTER_SECONDS",
    "ProgressBar",
    "SimulateOptions",
    "Watch",
    "run",
    "simulate",
]

OUTPUTS = ("table", "json", "yaml")
# Virtual seconds per wall second of `--watch`: a node comes up (~1.5 min) in about two seconds,
# an hour of scenario in a minute.
DEFAULT_SPEED = 60.0
# The progress bar appears only for a run still going after this long (most runs never show it).
PROGRESS_AFTER_SECONDS = 0.5
# The watch pane is redrawn at most this often (wall seconds): often enough to look live, rarely
# enough that drawing (a summary of the log so far) costs little next to the run.
FRAME_SECONDS = 0.1
# Timeline lines shown under the watch pane's node table.
RECENT_LINES = 6


@dataclass(frozen=True, slots=True)
class SimulateOptions:
    """The command line of `gpucap simulate`, as parsed by `simulate`."""

    scenario: str
    output: str = "table"
    events: str | None = None  # a file, or "-" for stdout
    watch: bool = False
    speed: float = DEFAULT_SPEED
    region: str | None = None  # must agree with the scenario's spec.region when given
    kubernetes_version: str | None = None  # likewise with spec.kubernetesVersion
    report: str | None = None  # an HTML file (`--report`)
    fail_on_pending: bool = False  # exit 1 when pods are pending at the end or never Ready
    reservations: str | None = None  # a reservations file; replaces spec.reservations
    seed: int | None = None  # `--seed`: replaces spec.seed (the first seed with --runs)
    runs: int | None = None  # `--runs N`: a set of N runs (`cli/simulate_runs.py`)
    workers: int | None = None  # `--workers W` of a set; None: the CPU count
    ray: str | None = None  # `--ray [ADDRESS]` of a set: its runs on Ray (`runtime/ray_executor`)
    cost_floor: bool = False  # `--cost-floor`: record the cost floor (`sim/costfloor.py`)


def _check_usage(opts: SimulateOptions) -> None:
    """Options that cannot go together, each refused in one line before anything is read."""
    check_set_usage(
        runs=opts.runs, workers=opts.workers, events=opts.events, watch=opts.watch, ray=opts.ray
    )
    machine = opts.output in ("json", "yaml")
    if opts.events == "-" and machine:
        raise BadInputError(
            f"--events -: stdout already carries the -o {opts.output} document; "
            "give --events a file name",
        )
    if opts.watch and machine:
        raise BadInputError(
            f"--watch: the watch pane is a table; it cannot go with -o {opts.output}"
        )
    if opts.watch and opts.events == "-":
        raise BadInputError("--watch: stdout shows the watch pane; give --events a file name")
    if not (math.isfinite(opts.speed) and opts.speed > 0):
        raise BadInputError(f"--speed: {opts.speed} is not a positive number of virtual seconds")
    if opts.report is not None:
        check_report_path(opts.report)
    if opts.scenario == "-":
        raise BadInputError(
            "SCENARIO: a scenario is read from a file (the manifests it names are relative to "
            "it), not from stdin",
        )
    _check_outputs(opts, [opts.scenario])


def _check_outputs(opts: SimulateOptions, inputs: Sequence[str]) -> None:
    """`--events` and `--report` name neither an input nor each other."""
    outputs = [("--events", opts.events), ("--report", opts.report)]
    for option, path in outputs:
        if path is not None:
            refuse_overwriting_inputs(option, path, inputs)
    if opts.events not in (None, "-") and opts.events == opts.report:
        raise BadInputError(f"--events {opts.events}: --report names the same file")


def _load(
    opts: SimulateOptions, catalog_for: Callable[[str], Catalog], err: Terminal
) -> tuple[LoadedScenario, Catalog]:
    loaded: list[Catalog] = []

    def catalog(region: str) -> Catalog:
        # The scenario's spec.region is what runs; --region can only confirm it.
        if opts.region is not None and opts.region != region:
            raise BadInputError(
                f"--region {opts.region}: the scenario runs in spec.region {region} "
                f"({opts.scenario}); drop --region or change spec.region",
            )
        loaded.append(catalog_for(region))
        return loaded[-1]

    # A ScenarioError (an InputError) is one line naming file and field: the app's boundary
    # prints it (cli/app.py).
    # `--reservations`, read as `plan --reservations` reads it, stands in for the scenario's
    # spec.reservations.
    given = None if opts.reservations is None else load_reservations(opts.reservations)
    scenario = load_scenario(opts.scenario, catalog, reservations=given)
    if opts.reservations is not None:
        scenario = dataclasses.replace(scenario, inputs=(*scenario.inputs, opts.reservations))
    for warning in scenario.warnings:
        err.line(f"warning: {warning}", style="yellow")
    wanted = opts.kubernetes_version
    if wanted is not None and wanted != scenario.kubernetes_version:
        raise BadInputError(
            f"--kubernetes-version {wanted}: the scenario runs Kubernetes "
            f"{scenario.kubernetes_version} (spec.kubernetesVersion in {opts.scenario}); drop "
            "the option or change the scenario",
        )
    return scenario, loaded[-1]


class EventsWriteError(GpucapInputError):
    """The `--events` file refused a write (a full disk): the message is the one line."""


class _EventsFile:
    """The `--events` file as the recorder writes it (`write`, `flush`): a write that fails
    becomes an `EventsWriteError` naming the option and the file, instead of an OSError from
    inside the simulation."""

    def __init__(self, path: str, stream: TextIO) -> None:
        self.path = path
        self.stream = stream
        self.failed = False

    def _failure(self, e: OSError) -> EventsWriteError:
        self.failed = True
        return EventsWriteError(f"--events {self.path}: cannot write: {os_reason(e)}")

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as e:
            raise self._failure(e) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as e:
            raise self._failure(e) from None

    def close(self) -> None:
        try:
            self.stream.close()
        except OSError as e:
            if not self.failed:  # the failure already said is not said twice
                raise self._failure(e) from None


def _open_events(path: str) -> _EventsFile:
    try:
        return _EventsFile(path, open(path, "w", encoding="utf-8", newline="\n"))
    except OSError as e:
        raise BadInputError(f"--events {path}: cannot write: {os_reason(e)}") from None
    except ValueError:  # a NUL in the name
        raise BadInputError(f"--events {path!r}: not a valid file name") from None


def run(
    opts: SimulateOptions,
    *,
    catalog_for: Callable[[str], Catalog],
    out: Terminal,
    err: Terminal,
    clock: Clock | None = None,
    sleep: Callable[[float], None] = time.sleep,
    stdout_console: Console | None = None,
    stderr_console: Console | None = None,
) -> None:
    """Run `gpucap simulate` (see the module docstring); bad input raises a `GpucapInputError`
    (`BadInputError` for the options), which the app's boundary prints as one `error:` line
    before it exits 2. `catalog_for(region)` is the CLI's catalog (bundled or
    `--catalog`, `--prices`, `--zones`); `clock`, `sleep` and the consoles are the wall clock and
    the terminal, injected by tests."""
    _check_usage(opts)
    scenario, catalog = _load(opts, catalog_for, err)
    _check_outputs(opts, scenario.inputs)  # the files the scenario named are known now
    if opts.seed is not None:
        # The run is the scenario's with another seed: the header says which.
        scenario = dataclasses.replace(scenario, seed=opts.seed)
    if opts.cost_floor:
        scenario = dataclasses.replace(scenario, cost_floor=True)
    if opts.runs is not None:
        run_set(
            scenario,
            catalog,
            runs=opts.runs,
            first_seed=scenario.seed,
            workers=opts.workers,
            ray=opts.ray,
            output=opts.output,
            report=opts.report,
            fail_on_pending=opts.fail_on_pending,
            out=out,
            err=err,
            clock=clock,
            stderr_console=stderr_console,
        )
        return
    wall = clock or RealClock()
    with ExitStack() as stack:
        sink: TextIO | None = sys.stdout if opts.events == "-" else None
        if opts.events is not None and opts.events != "-":
            events_file = _open_events(opts.events)
            stack.callback(events_file.close)
            sink = cast("TextIO", events_file)  # the recorder writes and flushes, nothing else
        world = World(scenario, catalog, sink=sink)
        on_step: Callable[[float], None] | None = None
        watch: Watch | None = None
        if opts.watch:
            watch = Watch(
                world.recorder.events,
                name=scenario.name,
                speed=opts.speed,
                clock=wall,
                sleep=sleep,
                console=stdout_console or plain_console(stderr=False),
                start=scenario.start,
            )
            stack.enter_context(watch)
            on_step = watch.step
        elif opts.output == "table" and opts.events != "-":
            console = stderr_console or plain_console(stderr=True)
            if console.is_terminal:
                bar = ProgressBar(scenario.duration, console=console, clock=wall)
                stack.callback(bar.close)
                on_step = bar.step
        # Input errors found at run time (a pod's gpucap.dev/startup-seconds, a full disk under
        # --events) leave here, after the watch and the progress bar are closed: one line.
        result = world.run(on_step=on_step)
        if watch is not None:
            watch.finish(result.end)
    if opts.report is not None:
        _write_report(opts.report, scenario, result)
    _print(opts, scenario, result, watch, out)
    if opts.fail_on_pending:
        pods = result.summary["pods"]
        if result.summary["pendingAtEnd"] or pods["neverReady"]:
            # After everything was printed: the summary above says which pods and why.
            raise typer.Exit(EXIT_FINDINGS)


def _print(
    opts: SimulateOptions,
    scenario: LoadedScenario,
    result: SimulationResult,
    watch: Watch | None,
    out: Terminal,
) -> None:
    """What stdout carries after the run: the document, or the table (see the module
    docstring); nothing more with `--events -`."""
    if opts.events == "-":
        return
    if opts.output == "json":
        sys.stdout.write(json.dumps(simulation_document(result.events, result.summary), indent=2))
        sys.stdout.write("\n")
        return
    if opts.output == "yaml":
        doc = simulation_document(result.events, result.summary)
        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
        return
    if watch is not None and not watch.live:
        out.lines(watch.frame(result.end))  # no terminal to redraw on: the last pane only
    if watch is not None:
        out.line()
    out.lines(
        [
            _header(scenario),
            "",
            *format_timeline(result.events, start=result.start),
            "",
            *format_summary(result.summary, start=result.start),
        ]
    )


def _write_report(path: str, scenario: LoadedScenario, result: SimulationResult) -> None:
    from gpucap.report.page import SimulationSection  # noqa: PLC0415 - only with --report
    from gpucap.report.simulation import gpu_limits, simulation_view  # noqa: PLC0415

    view = simulation_view(
        result.events, result.summary, end=result.end, limits=gpu_limits(scenario)
    )
    section = SimulationSection(
        f"Scenario {scenario.name}", view, subtitle=_header(scenario), start=result.start
    )
    write_report_or_exit(path, f"gpucap simulate {scenario.name}", [section])


def _header(scenario: LoadedScenario) -> str:
    return (
        f"Scenario {scenario.name} ({scenario.path}): {format_duration(scenario.duration)} in "
        f"{scenario.region}, Kubernetes {scenario.kubernetes_version}, seed {scenario.seed}"
    )


class ProgressBar:
    """The progress bar of a long run on stderr (a terminal only): virtual time done of the
    scenario's duration. It appears once the run has taken `after` wall seconds, so a run of a
    fraction of a second shows nothing, and it is transient (erased when the run ends)."""

    def __init__(
        self,
        duration: float,
        *,
        console: Console,
        clock: Clock,
        after: float = PROGRESS_AFTER_SECONDS,
    ) -> None:
        self.duration = duration
        self.console = console
        self.clock = clock
        self.after = after
        self.started = clock.monotonic()
        self.progress: Progress | None = None
        self._task = TaskID(0)
        self._last = -math.inf

    def step(self, t: float) -> None:
        """The engine's `on_step`: the run has reached virtual time `t`."""
        now = self.clock.monotonic()
        if self.progress is None:
            if now - self.started < self.after:
                return
            self.progress = Progress(
                TextColumn("simulating", markup=False),
                BarColumn(),
                TextColumn("{task.fields[at]}", markup=False),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._task = self.progress.add_task("simulate", total=self.duration or 1.0, at="")
            self.progress.start()
        if now - self._last >= FRAME_SECONDS / 2 or t >= self.duration:
            self._last = now
            at = f"{format_duration(t)} of {format_duration(self.duration)}"
            self.progress.update(self._task, completed=t, at=at)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


class Watch:
    """`--watch`: the run paced at `speed` virtual seconds per wall second, and on a terminal
    the watch pane (`simulate_render.watch_lines`: nodes, pods pending, cost so far) with the
    latest timeline lines under it, redrawn in place as virtual time passes. Off a terminal
    nothing is paced or drawn live; the caller prints the last pane (`frame`).

    The engine calls `step(t)` after the events of each instant; the events are in the world's
    log already, so the pane at a virtual time `v < t` shows exactly the events up to `v`."""

    def __init__(
        self,
        events: Sequence[Event],
        *,
        name: str,
        speed: float,
        clock: Clock,
        sleep: Callable[[float], None],
        console: Console,
        start: dt.datetime = EPOCH,
    ) -> None:
        self.events = events
        self.start = start  # the scenario's `spec.start`: what the clock times count from
        self.name = name
        self.speed = speed
        self.clock = clock
        self.sleep = sleep
        self.console = console
        self.live = console.is_terminal
        self._live: Live | None = None
        self._wall0 = 0.0
        self._drawn = -math.inf
        self.frames = 0  # how many panes were drawn (tests)

    def __enter__(self) -> Watch:
        self._wall0 = self.clock.monotonic()
        if self.live:
            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.start()
            self._draw(0.0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()

    def virtual_now(self) -> float:
        return (self.clock.monotonic() - self._wall0) * self.speed

    def step(self, t: float) -> None:
        """Wait until wall time catches up with virtual time `t`, redrawing on the way."""
        if not self.live:
            return
        while (v := self.virtual_now()) < t:
            if self.clock.monotonic() - self._drawn >= FRAME_SECONDS:
                self._draw(v)
            self.sleep(min(FRAME_SECONDS, (t - v) / self.speed))
        if self.clock.monotonic() - self._drawn >= FRAME_SECONDS:
            self._draw(t)

    def finish(self, t: float) -> None:
        """The last pane, at the end of the run, whatever the frame rate allowed."""
        if self._live is not None:
            self._draw(t)

    def frame(self, t: float) -> list[str]:
        """The pane at virtual time `t`: nodes, then the latest timeline lines."""
        shown = [e for e in self.events if e.t <= t]
        # On a terminal the pane fits its width (columns dropped, lines wrapped at words).
        width = self.console.width if self.live else None
        recent = fit_lines(format_timeline(shown, start=self.start)[-RECENT_LINES:], width)
        head = f"gpucap simulate {self.name}: {self.speed:g}x"
        return [head, *watch_lines(shown, now=t, start=self.start, width=width), "", *recent]

    def _draw(self, t: float) -> None:
        assert self._live is not None
        self._drawn = self.clock.monotonic()
        self.frames += 1
        text = Text("\n".join(escape(line) for line in self.frame(t)))
        self._live.update(text, refresh=True)


def simulate(  # noqa: PLR0917 - typer maps parameters to options
    scenario: Annotated[
        list[str],
        typer.Argument(
            help="A Scenario file (gpucap.dev/v1alpha1); with --init, manifest files.",
            metavar="SCENARIO",
        ),
    ],
    output: OutputOption = "table",
    events: Annotated[
        str | None,
        typer.Option(
            "--events",
            help="Write the events to FILE as JSON lines while the run goes (flushed per "
            "event; '-': stdout, instead of the table).",
            metavar="FILE",
        ),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="A live table of the nodes redrawn as virtual time passes, at --speed (on a "
            "terminal; elsewhere only the last one is printed), then the table.",
        ),
    ] = False,
    speed: Annotated[
        float,
        typer.Option("--speed", help="Virtual seconds per wall second for --watch."),
    ] = DEFAULT_SPEED,
    region: Annotated[
        str | None,
        typer.Option(
            help="The scenario's spec.region (default us-east-1) is the region that runs; "
            "given, this must equal it.",
            callback=region_name,
        ),
    ] = None,
    zones: ZonesOption = None,
    kubernetes_version: Annotated[
        str | None,
        typer.Option(
            "--kubernetes-version",
            help="The scenario's spec.kubernetesVersion (default 1.36) is what runs; given, "
            "this must equal it.",
            callback=kubernetes_minor,
        ),
    ] = None,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    report: ReportOption = None,
    reservations: ReservationsOption = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Run with this seed instead of the scenario's spec.seed (with --runs: the "
            "first seed).",
            metavar="S",
        ),
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option(
            "--runs",
            help="Run the scenario N times, seeds S..S+N-1 (S: --seed, else spec.seed), and "
            "print the distributions (p5/p50/p95/mean) of cost, time to ready, serving lost, "
            "disruptions.",
            metavar="N",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="With --runs: how many runs go at once, on local processes (default: the "
            "CPU count). The output is the same whatever the number.",
            metavar="W",
        ),
    ] = None,
    ray: RayOption = None,
    cost_floor: Annotated[
        bool,
        typer.Option(
            "--cost-floor",
            help="Also record the cost floor: what the cheapest fleet the NodePools allow "
            "would cost for the pods they serve at each moment (an LP per new population of "
            "pods; the summary's costFloorUSD).",
        ),
    ] = False,
    fail_on_pending: Annotated[
        bool,
        typer.Option(
            "--fail-on-pending",
            help="Exit 1 when pods are pending at the end or some pod never became Ready "
            "(everything is printed as usual): for CI.",
        ),
    ] = False,
    init: Annotated[
        bool,
        typer.Option(
            "--init",
            help="Print a starter scenario over the given manifest files instead of running "
            "one (gpucap simulate --init FILES... > scenario.yaml).",
        ),
    ] = False,
) -> None:
    """Run a scenario on a virtual clock: Karpenter provisioning GPU nodes over a simulated
    EC2 as pods come and go, capacity vanishes and spot is interrupted, and disrupting them
    (consolidation, drift, expiration, within budgets); print the timeline in plain words and
    the bill (-o json: the events and the summary)."""
    if init:
        _init(scenario, region or "us-east-1", zones, catalog, prices)
        return
    if len(scenario) != 1:
        raise BadInputError(
            f"SCENARIO: one scenario file, not {len(scenario)} "
            "(--init writes a starter scenario over manifest files)"
        )
    check_output(output, OUTPUTS)
    run(
        SimulateOptions(
            scenario[0],
            output=output,
            events=events,
            watch=watch,
            speed=speed,
            region=region,
            kubernetes_version=kubernetes_version,
            report=report,
            fail_on_pending=fail_on_pending,
            reservations=reservations,
            seed=seed,
            runs=runs,
            workers=workers,
            ray=ray,
            cost_floor=cost_floor,
        ),
        catalog_for=lambda r: catalog_from_options(
            r, zones, catalog, prices, where=f"{scenario[0]}: spec.region"
        ),
        out=terminals.out,
        err=terminals.err,
    )


def _init(
    files: list[str], region: str, zones: str | None, catalog: str | None, prices: str | None
) -> None:
    """`--init`: the starter scenario over `files` (`sim/starter.py`) on stdout."""
    from gpucap.sim.starter import starter_scenario  # noqa: PLC0415 - only with --init

    result = loading.load_paths(files)
    loading.report_issues(result)
    if not result.ok:
        raise typer.Exit(EXIT_BAD_INPUT)
    cat = catalog_from_options(region, zones, catalog, prices)
    sys.stdout.write(starter_scenario(files, result.objects, cat))
