"""`gpucap sweep SWEEP.yaml`: the designs of a scenario over many seeds, and which is worth it
(issue 26).

Thin like `simulate --runs`: check the options, load the sweep (`sim/sweep.load_sweep`: the
Sweep document, its scenario, every variant applied and validated; every problem one `error:`
line, exit 2, before any run), run every (variant, seed) on an executor (`runtime/executor.py`:
local processes, `--workers`; or Ray, `--ray [ADDRESS]`), with `simulate --runs`'s progress
bar and Ctrl-C (`cli/simulate_runs.collect_runs`), then print, ordered by (variant, seed) so
the bytes do not depend on the engine or the number of workers:
- the table (`format_sweep`): one row per variant, the axes' values, then cost, time to ready
  (a run's p95), serving lost, interruptions and disruptions as `p50 (p5-p95)` over its runs,
  `*` on the Pareto front of cost vs serving lost (p50s), and with `--max-serving-lost` the
  cheapest variant within the bound;
- `-o json|yaml`: the `SweepResult` document (`sweep_document`), every run's summary kept;
- `--report FILE`: the Pareto scatter and each variant's cost distribution (`report/sweep.py`).

`--max-serving-lost` reads `1%` as a share of the replica-time the HPA asked for
(`servingLostFraction`, a scenario with an HPA) and a duration (`10m`) as pod-seconds of serving
pods evicted (`servingLostSeconds`); either is compared with a variant's p50 over its runs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from gpucap.apis.duration import DurationError, parse_go_duration
from gpucap.cli import terminals
from gpucap.cli.catalogs import catalog_from_options
from gpucap.cli.errors import BadInputError
from gpucap.cli.options import (
    CatalogOption,
    OutputOption,
    PricesOption,
    RayOption,
    ReportOption,
    ZonesOption,
    check_output,
)
from gpucap.cli.reporting import (
    check_report_path,
    refuse_overwriting_inputs,
    write_report_or_exit,
)
from gpucap.cli.simulate_runs import EXIT_INTERRUPTED, check_engine_usage, collect_runs
from gpucap.cli.table import format_table
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.report.runset import band
from gpucap.report.sweep import UNITS, sweep_rows
from gpucap.runtime.clock import Clock
from gpucap.runtime.engines import EngineUnavailableError
from gpucap.runtime.executor import Executor, default_workers, executor_for
from gpucap.runtime.terminal import Terminal, plain_console
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.sweep import (
    LoadedSweep,
    SweepRun,
    VariantResult,
    cheapest_within,
    load_sweep,
    variant_results,
)
from gpucap.sim.timeline import format_duration, plural

__all__ = [
    "Bound",
    "SweepOptions",
    "format_sweep",
    "parse_bound",
    "run",
    "sweep",
    "sweep_document",
]

OUTPUTS = ("table", "json", "yaml")
_SAYS = {
    "servingLostFraction": "the share of the replica-time the HPA asked for that was not Ready",
    "servingLostSeconds": "pod-seconds of serving pods evicted until Ready again",
}


@dataclass(frozen=True, slots=True)
class Bound:
    """`--max-serving-lost`: as given, the measure it bounds, and the bound in its unit."""

    given: str
    measure: str
    value: float


@dataclass(frozen=True, slots=True)
class SweepOptions:
    sweep: str
    output: str = "table"
    report: str | None = None
    workers: int | None = None
    only_first: int | None = None
    max_serving_lost: str | None = None
    ray: str | None = None
    cost_floor: bool = False  # `--cost-floor`: each run records the cost floor


def parse_bound(text: str) -> Bound:
    """`1%` (a fraction of the HPA's replica-time) or a Go duration (pod-seconds evicted)."""
    where = f"--max-serving-lost {text}"
    if text.endswith("%"):
        try:
            percent = float(text[:-1])
        except ValueError:
            raise BadInputError(f"{where}: not a percentage (like 1%)") from None
        if not 0 <= percent <= 100:
            raise BadInputError(f"{where}: a percentage from 0% to 100%")
        return Bound(text, "servingLostFraction", percent / 100)
    try:
        seconds = parse_go_duration(text)
    except DurationError:
        raise BadInputError(
            f"{where}: give a share of the replica-time the HPA asked for (1%) or a duration of "
            "serving pods evicted (10m)"
        ) from None
    if seconds < 0:
        raise BadInputError(f"{where}: must not be negative")
    return Bound(text, "servingLostSeconds", seconds)


def _check_usage(opts: SweepOptions) -> Bound | None:
    check_engine_usage(opts.workers, opts.ray)
    if opts.only_first is not None and opts.only_first < 1:
        raise BadInputError(f"--only-first {opts.only_first}: give at least 1 variant")
    if opts.report is not None:
        check_report_path(opts.report)
        refuse_overwriting_inputs("--report", opts.report, [opts.sweep])
    if opts.sweep == "-":
        raise BadInputError("SWEEP: a sweep is read from a file (its scenario is relative to it)")
    return None if opts.max_serving_lost is None else parse_bound(opts.max_serving_lost)


def _has_hpa(scenario: LoadedScenario) -> bool:
    kind = "HorizontalPodAutoscaler"
    return any(m.obj.kind == kind for m in scenario.initial) or any(
        m.obj.kind == kind for a in scenario.actions for m in a.manifests
    )


def run(
    opts: SweepOptions,
    *,
    catalog_for: Callable[[str], Catalog],
    out: Terminal,
    err: Terminal,
    executor: Executor | None = None,
    clock: Clock | None = None,
    stderr_console: Console | None = None,
) -> None:
    """Run `gpucap sweep` (see the module docstring); `executor`, `clock` and the console are
    injected by tests."""
    bound = _check_usage(opts)
    loaded = load_sweep(opts.sweep, catalog_for)
    for warning in loaded.scenario.warnings:
        err.line(f"warning: {warning}", style="yellow")
    if opts.report is not None:
        refuse_overwriting_inputs("--report", opts.report, loaded.scenario.inputs)
    if (
        bound is not None
        and bound.measure == "servingLostFraction"
        and not _has_hpa(loaded.scenario)
    ):
        raise BadInputError(
            f"--max-serving-lost {bound.given}: a share of serving needs a "
            "HorizontalPodAutoscaler in the scenario; without one give a duration of serving "
            "pods evicted (10m)"
        )
    items = loaded.items(opts.only_first)
    chosen = loaded.variants[: opts.only_first] if opts.only_first else loaded.variants
    engine = executor or _engine(opts, len(items))
    try:
        outcomes, interrupted = collect_runs(
            engine,
            _work(loaded, cost_floor=opts.cost_floor),
            items,
            console=stderr_console or plain_console(stderr=True),
            clock=clock,
        )
    except EngineUnavailableError as e:
        raise BadInputError(str(e)) from None
    results, measure = variant_results(loaded, outcomes, variants=chosen)
    choice = None if bound is None else cheapest_within(results, bound.measure, bound.value)
    if interrupted:
        err.line(f"interrupted: {len(outcomes)} of {len(items)} runs finished", style="yellow")
    if opts.report is not None and outcomes:
        from gpucap.report.sweep import sweep_section  # noqa: PLC0415 - figures: only with --report

        words = choice_lines(results, measure, bound, choice)
        section = sweep_section(
            f"Sweep {loaded.name}",
            results,
            axes=loaded.axes,
            measure=measure,
            subtitle=header(loaded, results),
            sentences=words,
        )
        write_report_or_exit(opts.report, f"gpucap sweep {loaded.name}", [section])
    if opts.output == "table":
        out.lines(format_sweep(loaded, results, measure, bound, choice))
    else:
        doc = sweep_document(loaded, results, measure, bound, choice)
        if opts.output == "json":
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    if interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


def _work(loaded: LoadedSweep, *, cost_floor: bool) -> SweepRun:
    """What every run shares; with `--cost-floor`, each variant's runs record the floor."""
    work = loaded.work()
    if not cost_floor:
        return work
    scenarios = tuple(dataclasses.replace(s, cost_floor=True) for s in work.scenarios)
    return dataclasses.replace(work, scenarios=scenarios)


def _engine(opts: SweepOptions, runs: int) -> Executor:
    workers = opts.workers or default_workers()
    try:
        if opts.ray is not None:
            return executor_for(workers, ray=opts.ray)
        return executor_for(min(workers, runs))
    except EngineUnavailableError as e:
        raise BadInputError(str(e)) from None


# ---- what it prints ------------------------------------------------------------------------------
def header(sweep: LoadedSweep, results: Sequence[VariantResult]) -> str:
    """The first line: the sweep, the variants and seeds run, and the scenario."""
    s = sweep.scenario
    first, last = sweep.first_seed, sweep.first_seed + sweep.seeds - 1
    seeds = f"seed {first}" if first == last else f"seeds {first} to {last}"
    runs = sum(len(r.outcomes) for r in results)
    asked = len(results) * sweep.seeds
    done = f", {runs} of {asked} runs finished" if runs < asked else ""
    return (
        f"Sweep {sweep.name} ({sweep.path}): {plural(len(results), 'variant')} x "
        f"{plural(sweep.seeds, 'seed')} "
        f"({seeds}){done}; scenario {s.name} ({s.path}): {format_duration(s.duration)} in "
        f"{s.region}, Kubernetes {s.kubernetes_version}"
    )


def choice_lines(
    results: Sequence[VariantResult],
    measure: str,
    bound: Bound | None,
    choice: VariantResult | None,
) -> list[str]:
    """What the table means in words: the front, and the choice under the bound."""
    front = [r.variant.name for r in results if r.pareto]
    words = []
    if front:
        words.append(f"On the Pareto front of cost vs serving lost (p50s): {'; '.join(front)}.")
    if bound is None:
        return words
    b_unit = UNITS[bound.measure]
    shown = band_p50(bound.value, b_unit)
    if choice is None:
        words.append(
            f"No variant keeps serving lost at most {shown} (p50 of its runs, {bound.measure})."
        )
        return words
    s = choice.summary
    lost = s[bound.measure]
    words.append(
        f"Cheapest with serving lost at most {shown} (p50 of its runs): {choice.variant.name}, "
        f"{band_p50(s['costUSD']['p50'], 'dollars')} (p95 "
        f"{band_p50(s['costUSD']['p95'], 'dollars')}), serving lost "
        f"{band_p50(lost['p50'], b_unit)} (p95 {band_p50(lost['p95'], b_unit)})."
    )
    return words


def band_p50(value: float | None, unit: str) -> str:
    return band({"p5": value, "p50": value, "p95": value}, unit).split(" (", 1)[0]


def format_sweep(
    sweep: LoadedSweep,
    results: Sequence[VariantResult],
    measure: str,
    bound: Bound | None,
    choice: VariantResult | None,
) -> list[str]:
    """The sweep as text: the header, one row per variant, what the cells are, the answer."""
    lines = [header(sweep, results), ""]
    lines += format_table(sweep_rows(sweep.axes, results, measure))
    lines += [
        "(p50 over each variant's runs, p5-p95 in brackets, nearest-rank; FRONT *: on the "
        "Pareto front of",
        f" cost vs serving lost, p50s; serving lost: {_SAYS[measure]})",
        "",
        *choice_lines(results, measure, bound, choice),
    ]
    return lines


def sweep_document(
    sweep: LoadedSweep,
    results: Sequence[VariantResult],
    measure: str,
    bound: Bound | None,
    choice: VariantResult | None,
) -> dict[str, Any]:
    """The `-o json|yaml` document, `kind: SweepResult` (README "Sweeps")."""
    return {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "SweepResult",
        "sweep": sweep.name,
        "path": sweep.path,
        "scenario": {"name": sweep.scenario.name, "path": sweep.scenario.path},
        "seeds": {"first": sweep.first_seed, "count": sweep.seeds},
        "axes": list(sweep.axes),
        "servingLost": measure,
        "variants": [
            {
                "name": r.variant.name,
                "values": dict(r.variant.values),
                "summary": r.summary,
                "runs": [{"seed": o.seed, "summary": o.summary} for o in r.outcomes],
                "pareto": r.pareto,
            }
            for r in results
        ],
        "choice": None
        if bound is None
        else {
            "maxServingLost": bound.given,
            "measure": bound.measure,
            "statistic": "p50",
            "bound": bound.value,
            "variant": None if choice is None else choice.variant.name,
        },
    }


# ---- the command ---------------------------------------------------------------------------------
def sweep(  # noqa: PLR0917 - typer maps parameters to options
    sweep_file: Annotated[
        str, typer.Argument(help="A Sweep file (gpucap.dev/v1alpha1).", metavar="SWEEP")
    ],
    output: OutputOption = "table",
    report: ReportOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="How many runs go at once (default: the CPU count): local processes, or "
            "with --ray alone the CPUs of the local Ray. The output is the same whatever the "
            "number.",
            metavar="W",
        ),
    ] = None,
    only_first: Annotated[
        int | None,
        typer.Option("--only-first", help="Run only the first N variants.", metavar="N"),
    ] = None,
    max_serving_lost: Annotated[
        str | None,
        typer.Option(
            "--max-serving-lost",
            help="Name the cheapest variant (p50 cost) whose p50 serving lost is at most this: "
            "a share of the HPA's replica-time (1%) or a duration of serving pods evicted "
            "(10m).",
            metavar="BOUND",
        ),
    ] = None,
    ray: RayOption = None,
    cost_floor: Annotated[
        bool,
        typer.Option(
            "--cost-floor",
            help="Also record each run's cost floor (the cheapest fleet the NodePools allow for "
            "the pods they serve; an LP per new population of pods): a COST FLOOR column.",
        ),
    ] = False,
    zones: ZonesOption = None,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
) -> None:
    """Compare designs of a scenario (NodePool requirements, any field) over many seeds: one
    row per variant with cost, time to ready, serving lost, interruptions and disruptions, the
    Pareto front of cost vs serving lost, and the cheapest variant within a serving bound; on
    local processes or a Ray cluster."""
    check_output(output, OUTPUTS)

    def catalog_for(region: str) -> Catalog:
        where = f"{sweep_file}: the scenario's spec.region"
        return catalog_from_options(region, zones, catalog, prices, where=where)

    run(
        SweepOptions(
            sweep_file,
            output=output,
            report=report,
            workers=workers,
            only_first=only_first,
            max_serving_lost=max_serving_lost,
            ray=ray,
            cost_floor=cost_floor,
        ),
        catalog_for=catalog_for,
        out=terminals.out,
        err=terminals.err,
    )
