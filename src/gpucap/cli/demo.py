"""`gpucap demo`: the bundled EKS GPU workshop, checked, planned, then told as a story.

Part one is what `validate`, `lint` and `plan` say about the workshop's manifests (placeholders
filled with `DEMO_VALUES`). Part two runs the bundled scenarios of
`data/examples/story/` on the simulator over those manifests and tells each as an act: a header
saying what it shows, the timeline (`cli/simulate_render.format_timeline`), and a few plain
sentences whose every number is computed from the run's events and summary (`act1_sentences`,
`act2_sentences`), never written in advance.

- Act 1: the GPU Operator installed, vLLM scaled 1 -> 3 while spot g5/g6 is gone in its zone
  (the on-demand fallback and what it costs), then scaled to 0 (what empty nodes cost).
- Act 2: a GPU pod before any device plugin: the node registers, never initializes, is billed;
  the plugin arrives 30 minutes later and the pod starts. The price of the wrong order.
- Act 3: the workshop's fleet for a day in a world that does things by itself (spot pools
  reclaimed at the measured rates, an HPA following a day of requests), 20 runs spot first and
  20 on-demand only, compared in one table (`cli/demo_world.py`).

The scenarios name the workshop files by relative path (`../workshop/nodepool.yaml`); the demo
writes both folders, placeholders filled, into a temporary directory (removed afterwards) and
loads the scenarios from there with `sim/scenario.load_scenario`, as `gpucap simulate` would.
`demo` is the command (registered by `cli/app.py`); the sentence functions are pure, for the
tests.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from gpucap.apis.nodepool import NodePool
from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import LoadResult, Manifest, load_text
from gpucap.apis.workloads import Deployment
from gpucap.cli import terminals
from gpucap.cli.demo_world import (
    RUNS,
    Design,
    act3_sentences,
    design_table,
    on_demand_only,
    run_designs,
)
from gpucap.cli.options import ReportOption
from gpucap.cli.render import describe, format_issue, plan_lines
from gpucap.cli.reporting import check_report_path, write_report_or_exit
from gpucap.cli.simulate_render import clock_time, format_duration, format_timeline
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.controllers.provisioning import Plan
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.output import format_text as format_lint_text
from gpucap.lint.runner import run as run_lint
from gpucap.operator.plan import plan as make_plan
from gpucap.runtime.clock import EPOCH
from gpucap.runtime.executor import default_workers, executor_for
from gpucap.runtime.terminal import Terminal
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import LoadedScenario, load_scenario
from gpucap.sim.timeline import plural
from gpucap.sim.world import SimulationResult, simulate

if TYPE_CHECKING:
    from gpucap.report.page import PlanSection, SimulationSection, SimulationSetSection

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:  # Python 3.10 has it in importlib.abc only
        from importlib.abc import Traversable

__all__ = [
    "ACTS",
    "DEMO_VALUES",
    "Act",
    "act1_sentences",
    "act2_sentences",
    "demo",
    "demo_sections",
    "run_act",
    "run_demo",
    "story_tree",
    "workshop_texts",
]

# Values the demo fills the workshop's placeholders with (a pinned AMI, never @latest).
DEMO_VALUES = {
    "CLUSTER_NAME": "gpucap-demo",
    "KARPENTER_NODE_ROLE": "KarpenterNodeRole-gpucap-demo",
    "AMI_VERSION": "v20260827",
}

_REGION = "us-east-1"


def _examples(name: str) -> Traversable:
    return resources.files("gpucap.data") / "examples" / name


def workshop_texts() -> list[tuple[str, str]]:
    """The workshop's manifests as (`workshop/NAME.yaml`, text), placeholders not filled."""
    return sorted(
        (f"workshop/{p.name}", p.read_text(encoding="utf-8"))
        for p in _examples("workshop").iterdir()
        if p.name.endswith(".yaml")
    )


def story_tree(dest: Path) -> None:
    """Write `workshop/` and `story/` under `dest`, every placeholder filled with DEMO_VALUES,
    so that the story's relative paths (`../workshop/...`) resolve."""
    for folder in ("workshop", "story"):
        (dest / folder).mkdir()
        for p in _examples(folder).iterdir():
            if p.name.endswith(".yaml"):
                text = substitute(p.read_text(encoding="utf-8"), DEMO_VALUES).text
                (dest / folder / p.name).write_text(text, encoding="utf-8")


# ---- what the events say ------------------------------------------------------------------------
def _of(events: Sequence[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


def _at(t: float) -> str:
    return clock_time(t, EPOCH)


def _money(dollars: float) -> str:
    return f"${dollars:.2f}"


def _price(per_hour: float) -> str:
    return f"${per_hour:.4f}/h"


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _families(types: Sequence[str]) -> str:
    """`g5/g6` for g5.xlarge, g5.2xlarge, g6.xlarge: the families, as people name spot pools."""
    return "/".join(dict.fromkeys(t.split(".", 1)[0] for t in types))


def _scaled_to_zero(events: Sequence[Event]) -> float | None:
    """When the last scale event set 0 replicas, if it did."""
    scales = [e for e in _of(events, "ScenarioEvent") if e.get("kind") == "scale"]
    return scales[-1].t if scales and scales[-1].get("replicas") == 0 else None


def _consolidate_after(scenario: LoadedScenario, pool: str) -> str | None:
    for m in scenario.initial:
        if isinstance(m.obj, NodePool) and m.obj.metadata.name == pool:
            after = m.obj.spec.disruption.consolidate_after
            return None if after is None else str(after)
    return None


def act1_sentences(result: SimulationResult, scenario: LoadedScenario) -> list[str]:
    """Act 1 in plain words: where spot ran out and what Karpenter did instead, the bill, how
    long a replica took to be ready, and what the empty nodes cost after the scale to 0."""
    events, summary = result.events, result.summary
    words: list[str] = []
    gone = [e for e in _of(events, "CapacityChanged") if not e.get("available")]
    unavailable = _of(events, "OfferingUnavailable")
    launches = _of(events, "NodeClaimLaunched")
    if gone and unavailable:
        t_ice = unavailable[0].t
        zones = sorted({str(e.get("zone")) for e in gone if e.get("zone")})
        where = ", ".join(zones) if zones else "every zone"
        kind = gone[0].get("capacityType") or "all"
        fallback = [e for e in launches if e.t >= t_ice and e.get("capacityType") == "on-demand"]
        before = [e for e in launches if e.t < gone[0].t]
        said = (
            f"{kind.capitalize()} "
            f"{_families([str(e.get('instanceType') or e.get('instanceFamily')) for e in gone])}"
            f" ran out "
            f"in {where} at {_at(gone[0].t)}; at {_at(t_ice)} the scale-up found none there"
        )
        if fallback:
            f = fallback[0]
            said += (
                f" and Karpenter fell back to on-demand {f.get('instanceType')} in "
                f"{f.get('zone')}: {_nodes(len(fallback))} at {_price(f.get('pricePerHour'))}"
            )
            if before and before[0].get("capacityType") == "spot":
                ratio = f.get("pricePerHour") / before[0].get("pricePerHour")
                said += f", {ratio:.1f}x the {_price(before[0].get('pricePerHour'))} spot node"
        words.append(said + ".")
    by_capacity: dict[str, float] = {}
    for row in summary["costUSDByType"].values():
        for cap, dollars in row.items():
            by_capacity[cap] = by_capacity.get(cap, 0.0) + dollars
    split = ", ".join(f"{_money(d)} {cap}" for cap, d in sorted(by_capacity.items()))
    words.append(
        f"The fleet cost {_money(summary['costUSD'])} over {format_duration(result.end)} "
        f"({_nodes(len(summary['billing']))}: {split})."
    )
    ready = summary["timeToReady"]
    pulls = [e.get("pullSeconds") for e in _of(events, "PodReady") if e.get("pullSeconds")]
    if ready["count"]:
        sizes = [c for c, _ in scenario.images.values()]
        image = f"the {max(sizes) / 2**30:.0f} GiB image" if sizes else "the image"
        pull = f", {image} pulled in {format_duration(max(pulls))}" if pulls else ""
        words.append(
            f"A replica was ready {format_duration(ready['p50'])} after it was created "
            f"(p50; {format_duration(ready['max'])} at worst){pull}."
        )
    zero = _scaled_to_zero(events)
    if zero is not None:
        idle = [b for b in summary["billing"] if b["terminated"] is None or b["terminated"] > zero]
        if idle:
            stop = {b["nodeClaim"]: min(b["terminated"] or result.end, result.end) for b in idle}
            dollars = sum(b["pricePerHour"] * (stop[b["nodeClaim"]] - zero) / 3600 for b in idle)
            pools = sorted({str(b["nodePool"]) for b in idle})
            after = _consolidate_after(scenario, pools[0]) if len(pools) == 1 else None
            why = (
                f": NodePool {pools[0]}'s consolidateAfter of {after} keeps an empty node that long"
                if after
                else ""
            )
            removed = [
                e
                for e in _of(events, "DisruptionDecision")
                if e.t > zero and e.get("reason") == "Empty"
            ]
            if removed:
                times = ", ".join(_at(e.t) for e in removed)
                words.append(
                    f"After the scale to 0 at {_at(zero)}, {_nodes(len(idle))} stood empty and "
                    f"billed {_money(dollars)}{why}; then Karpenter's emptiness consolidation "
                    f"removed {_nodes(len(removed))} one by one, as the budget of "
                    f"{_budget(scenario, pools[0]) if len(pools) == 1 else 'the NodePool'} allows "
                    f"(decided at {times})."
                )
            else:
                words.append(
                    f"After the scale to 0 at {_at(zero)}, {_nodes(len(idle))} stood empty and "
                    f"billed {_money(dollars)} until the end{why}."
                )
    return words


def _budget(scenario: LoadedScenario, pool: str) -> str:
    """The NodePool's budgets as a person reads them (`nodes: "1"`)."""
    for m in scenario.initial:
        if isinstance(m.obj, NodePool) and m.obj.metadata.name == pool:
            budgets = m.obj.spec.disruption.budgets or []
            if budgets:
                return " and ".join(f'nodes: "{b.nodes}"' for b in budgets)
    return 'nodes: "10%" (the default)'


def act2_sentences(
    result: SimulationResult, scenario: LoadedScenario, *, plugin_first: float | None = None
) -> list[str]:
    """Act 2 in plain words: the node that registered with no device plugin, what it was billed
    before the plugin arrived, and how long the pod waited (against `plugin_first`, the time to
    ready with the plugin installed first, when given)."""
    events = result.events
    words: list[str] = []
    stuck = [e for e in _of(events, "NodeRegistered") if e.get("devicePlugin", "") is None]
    if not stuck:
        return words
    reg = stuck[0]
    claim = reg.get("nodeClaim")
    launch = next(e for e in _of(events, "NodeClaimLaunched") if e.get("nodeClaim") == claim)
    what = f"{launch.get('capacityType')} {launch.get('instanceType')}"
    words.append(
        f"Node {reg.get('node')} ({what}) registered at {_at(reg.t)} with no device plugin in the "
        "cluster: it advertised no GPU, so Karpenter did not count it initialized and the GPU "
        "pod stayed Pending."
    )
    init = next((e for e in _of(events, "NodeInitialized") if e.get("nodeClaim") == claim), None)
    # The plugin came with the last apply before the node initialized (none: it never came).
    applied = [
        e
        for e in _of(events, "ScenarioEvent")
        if e.get("kind") == "apply" and init is not None and reg.t < e.t <= init.t
    ][-1:]
    arrived = applied[0].t if applied else result.end
    billed = arrived - launch.t
    dollars = launch.get("pricePerHour") * billed / 3600
    if applied:
        said = (
            f"It was billed {format_duration(billed)} ({_money(dollars)}) before the device "
            f"plugin arrived at {_at(arrived)}"
        )
        if init is not None:
            said += f", and initialized {format_duration(init.t - arrived)} later"
        said += "."
    else:
        said = f"It was billed {format_duration(billed)} ({_money(dollars)}) for nothing."
    words.append(said)
    waited = _first_ready(events)
    if waited is not None:
        said = f"The pod waited {format_duration(waited)} to be ready"
        extra = waited - plugin_first if plugin_first is not None else None
        if plugin_first is not None and extra is not None and extra > 0:
            cost = launch.get("pricePerHour") * extra / 3600
            said += (
                f", against {format_duration(plugin_first)} with the plugin installed first "
                f"(act 1): the wrong order cost {format_duration(extra)} and {_money(cost)} "
                "of GPU node"
            )
        words.append(said + ".")
    return words


# ---- the acts -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Act:
    """One act of the story: its scenario (in `story/`), a title and what it shows."""

    file: str
    title: str
    shows: str


ACTS = (
    Act(
        "act1-spot-fallback.yaml",
        "Act 1: spot runs out, Karpenter falls back, the bill",
        "The GPU NodePool and pinned EC2NodeClass, the GPU Operator, vLLM (1 GPU, ~9 GB image) "
        "scaled 1 -> 3 while spot g5/g6 is gone in its zone, then scaled to 0.",
    ),
    Act(
        "act2-device-plugin-order.yaml",
        "Act 2: a GPU pod before the device plugin",
        "The same NodePool with no device plugin in the cluster; the plugin DaemonSet is "
        "applied 30 minutes later.",
    ),
    Act(
        "act3-day.yaml",
        "Act 3: a day in a world that does things by itself",
        f"The same fleet for 24 hours: EC2 reclaims spot pools at the rates measured in public "
        f"traces, and an HPA scales vLLM with a day of requests (16 to 104 per second). "
        f"{RUNS} runs spot first (the NodePool as written), {RUNS} with the NodePool "
        "on-demand only.",
    ),
)


def run_act(
    root: Path, act: Act, catalog: Catalog | Callable[[str], Catalog]
) -> tuple[LoadedScenario, SimulationResult]:
    """Load `act`'s scenario from the filled tree at `root` and run it."""
    scenario = load_scenario(str(root / "story" / act.file), catalog)
    region = catalog(scenario.region) if callable(catalog) else catalog
    return scenario, simulate(scenario, region)


def _print_act(out: Terminal, act: Act, result: SimulationResult, words: list[str]) -> None:
    out.line()
    out.line((act.title, "bold"))
    out.line(act.shows)
    out.lines(format_timeline(result.events))
    out.line()
    for sentence in words:
        out.line(sentence)


def _workshop() -> LoadResult:
    result = LoadResult()
    for name, text in workshop_texts():
        result.extend(load_text(substitute(text, DEMO_VALUES).text, name))
    return result


def _scaled(result: LoadResult, replicas: int) -> LoadResult:
    scaled = LoadResult(issues=list(result.issues))
    for m in result.manifests:
        obj = m.obj
        if isinstance(obj, Deployment) and obj.metadata.name == "vllm":
            spec = obj.spec.model_copy(update={"replicas": replicas})
            obj = obj.model_copy(update={"spec": spec})
        scaled.manifests.append(Manifest(obj, m.source))
    return scaled


def run_demo(out: Terminal, err: Terminal, *, report: str | None = None) -> int:
    """The whole demo on `out` (problems on `err`); the exit code (0, or 2 if the bundled files
    do not load, which would be gpucap's bug). With `report`, the same story is also written as
    an HTML report there (`demo_report`); a path that cannot take it is refused first."""
    if report is not None:
        check_report_path(report)
    out.line("gpucap demo: the EKS GPU workshop's manifests, placeholders filled with:")
    for k, v in DEMO_VALUES.items():
        out.line(f"  {k}={v}")
    result = _workshop()
    for issue in result.issues:
        err.line(format_issue(issue), style="red" if issue.severity == "error" else "yellow")
    if not result.ok:
        return 2
    out.line()
    out.line(("gpucap validate", "bold"), ": what gpucap understood")
    for m in result.manifests:
        out.line(f"{m.source} {m.ref}: {describe(m.obj)}")
    cat = load_catalog(_REGION)
    out.line()
    out.line(("gpucap lint", "bold"), ": what would bite (no errors: it is the good example)")
    linted = run_lint(LintContext(result.objects.items, cat), LintConfig(), issues=result.issues)
    out.lines(format_lint_text(linted))
    out.line()
    out.line(("gpucap plan", "bold"), ": what Karpenter would launch for the pending pods")
    plan1 = make_plan(result.objects, cat)
    out.lines(plan_lines(plan1))
    out.line()
    out.line(
        ("gpucap plan", "bold"), ", vLLM scaled to 8 replicas: the limit of 6 GPUs stops the rest"
    )
    scaled = _scaled(result, 8)
    plan8 = make_plan(scaled.objects, cat)
    out.lines(plan_lines(plan8))
    out.line()
    out.line(("gpucap simulate", "bold"), ": the same manifests over hours of virtual time")
    with tempfile.TemporaryDirectory(prefix="gpucap-demo-") as tmp:
        root = Path(tmp)
        story_tree(root)
        act1, act2, act3 = ACTS
        sc1, res1 = run_act(root, act1, cat)
        words1 = act1_sentences(res1, sc1)
        _print_act(out, act1, res1, words1)
        sc2, res2 = run_act(root, act2, cat)
        first = _first_ready(res1.events)
        words2 = act2_sentences(res2, sc2, plugin_first=first)
        _print_act(out, act2, res2, words2)
        designs, words3 = _act3(out, root, act3, cat)
    if report is not None:
        sections = demo_sections(
            [(act1, sc1, res1, words1), (act2, sc2, res2, words2)],
            [
                ("Plan: the workshop as written", plan1, result),
                ("Plan: vLLM scaled to 8 replicas (the 6-GPU limit)", plan8, scaled),
            ],
            cat,
            designs=(act3, designs, words3),
        )
        write_report_or_exit(report, "gpucap demo: the EKS GPU workshop", sections)
        out.line()
        out.line(f"wrote the report to {report}")
    return 0


def _act3(out: Terminal, root: Path, act: Act, catalog: Catalog) -> tuple[list[Design], list[str]]:
    """Act 3: the day's scenario run `RUNS` times as written and on-demand only, one table."""
    scenario = load_scenario(str(root / "story" / act.file), catalog)
    out.line()
    out.line((act.title, "bold"))
    out.line(act.shows)
    workers = min(default_workers(), RUNS)
    out.line(f"(running {2 * RUNS} simulated days on {plural(workers, 'worker')})")
    designs = run_designs(
        [("spot first (as written)", scenario), ("on-demand only", on_demand_only(scenario))],
        catalog,
        executor=executor_for(workers),
    )
    out.line()
    out.lines(design_table(designs))
    out.line()
    words = act3_sentences(*designs)
    for sentence in words:
        out.line(sentence)
    return designs, words


def demo_sections(
    acts: Sequence[tuple[Act, LoadedScenario, SimulationResult, list[str]]],
    plans: Sequence[tuple[str, Plan, LoadResult]],
    catalog: Catalog,
    *,
    designs: tuple[Act, Sequence[Design], list[str]] | None = None,
) -> list[SimulationSection | PlanSection | SimulationSetSection]:
    """The demo's report: each act as a simulation section (its sentences above the charts),
    act 3's designs as a set section each (the first with the act's sentences), then each plan."""
    from gpucap.report.page import (  # noqa: PLC0415
        PlanSection,
        SimulationSection,
        SimulationSetSection,
    )
    from gpucap.report.plan import plan_view  # noqa: PLC0415
    from gpucap.report.runset import set_view  # noqa: PLC0415
    from gpucap.report.simulation import gpu_limits, simulation_view  # noqa: PLC0415

    sections: list[SimulationSection | PlanSection | SimulationSetSection] = []
    for act, scenario, result, words in acts:
        view = simulation_view(
            result.events, result.summary, end=result.end, limits=gpu_limits(scenario)
        )
        sections.append(
            SimulationSection(act.title, view, words, start=result.start, subtitle=act.shows)
        )
    if designs is not None:
        act3, runs, words3 = designs
        for i, d in enumerate(runs):
            sections.append(
                SimulationSetSection(
                    f"{act3.title}: {d.name}",
                    set_view(d.outcomes, requested=len(d.outcomes), duration=d.scenario.duration),
                    words3 if i == 0 else (),
                    start=d.scenario.start,
                    subtitle=act3.shows,
                )
            )
    for title, made, loaded in plans:
        sections.append(PlanSection(title, plan_view(made, loaded.objects, catalog)))
    return sections


def _first_ready(events: Sequence[Event]) -> float | None:
    """How long the first pod of a run took from creation to ready."""
    created: Mapping[Any, float] = {e.get("pod"): e.t for e in reversed(_of(events, "PodCreated"))}
    ready = _of(events, "PodReady")
    if not ready or ready[0].get("pod") not in created:
        return None
    return ready[0].t - created[ready[0].get("pod")]


def demo(report: ReportOption = None) -> None:
    """Run gpucap on the bundled workshop example (a GPU NodePool, EC2NodeClass, device plugin,
    time-slicing config and a vLLM Deployment): validate it, lint it, plan it; then simulate
    three acts on it: spot running out and the fallback to on-demand, with the bill; a GPU pod
    created before the device plugin, with what the wrong order costs; and a day of a world
    that reclaims spot and changes demand by itself, 20 runs spot first against on-demand
    only."""
    code = run_demo(terminals.out, terminals.err, report=report)
    if code:
        raise typer.Exit(code)
