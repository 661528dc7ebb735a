"""`gpucap demo`, act 3: the workshop's fleet for a day in a world that does things by itself.

The scenario `data/examples/story/act3-day.yaml` runs the workshop's NodePool, EC2NodeClass,
device plugin and vLLM for 24 hours while EC2 reclaims spot pools at the measured rates
(`spec.world.spot.model: measured`, `sim/spotmarket.py`) and an HPA follows a synthetic day of
requests (`bundled:diurnal-24h`, `sim/podautoscaler.py`). It is run `RUNS` times (seeds 1 to
20) for each of two designs: the NodePool as written (spot first, on-demand when spot has none)
and the same NodePool allowing on-demand only (`on_demand_only`: the capacity-type requirement
narrowed, nothing else changed). What the demo prints is one table of the two designs' cost,
serving lost and interruptions over the runs (`design_table`) and a few sentences comparing
them (`act3_sentences`), every number computed from the runs' summaries.

The runs go through the same executor and work as `gpucap sweep` (`runtime/executor.py`,
`sim/sweep.SweepRun`: the two designs are a sweep's variants), so the answer does not depend on
how many workers ran it. Called by `cli/demo.py`; the functions but `run_designs` are pure,
for the tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.apis.labels import CAPACITY_TYPE
from gpucap.apis.nodepool import NodePool
from gpucap.apis.serde import Manifest
from gpucap.cli.simulate_render import format_duration
from gpucap.cli.table import format_table
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.runtime.executor import Executor, default_workers, executor_for
from gpucap.sim.runset import RunOutcome, set_summary
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.sweep import SweepRun

__all__ = [
    "RUNS",
    "Design",
    "act3_sentences",
    "design_table",
    "on_demand_only",
    "run_designs",
]

# Runs per design: enough for a p5-p95 band, few enough for a demo (~1 s of CPU each).
RUNS = 20


@dataclass(frozen=True)
class Design:
    """One design the act compares: its name, its scenario, its runs (ordered by seed) and
    their set summary (`sim/runset.set_summary`)."""

    name: str
    scenario: LoadedScenario
    outcomes: tuple[RunOutcome, ...]
    summary: Mapping[str, Any]


def on_demand_only(scenario: LoadedScenario) -> LoadedScenario:
    """`scenario` with every NodePool whose capacity-type requirement allows spot narrowed to
    on-demand only; every other object as it was."""

    def narrowed(m: Manifest) -> Manifest:
        obj = m.obj
        if not isinstance(obj, NodePool):
            return m
        reqs = obj.spec.template.spec.requirements
        if not any(r.key == CAPACITY_TYPE and "spot" in r.values for r in reqs):
            return m
        new_reqs = [
            r.model_copy(update={"values": ["on-demand"]}) if r.key == CAPACITY_TYPE else r
            for r in reqs
        ]
        tspec = obj.spec.template.spec.model_copy(update={"requirements": new_reqs})
        template = obj.spec.template.model_copy(update={"spec": tspec})
        spec = obj.spec.model_copy(update={"template": template})
        return Manifest(obj.model_copy(update={"spec": spec}), m.source)

    return dataclasses.replace(scenario, initial=tuple(narrowed(m) for m in scenario.initial))


def run_designs(
    designs: Sequence[tuple[str, LoadedScenario]],
    catalog: Catalog,
    *,
    runs: int = RUNS,
    executor: Executor | None = None,
) -> list[Design]:
    """Run each design `runs` times (its scenario's seed onwards) and summarize each set: the
    designs are a sweep's variants (`sim/sweep.SweepRun`), all their runs on one executor."""
    work = SweepRun(tuple(scenario for _, scenario in designs), catalog)
    items = [
        (i, seed)
        for i, (_, scenario) in enumerate(designs)
        for seed in range(scenario.seed, scenario.seed + runs)
    ]
    engine = executor or executor_for(min(default_workers(), len(items)))
    done = dict(engine.map(work, items))
    out: list[Design] = []
    for i, (name, scenario) in enumerate(designs):
        outcomes = tuple(done[item] for item in sorted(done) if item[0] == i)
        out.append(Design(name, scenario, outcomes, set_summary(outcomes, requested=runs)))
    return out


def _dollars(d: Mapping[str, Any]) -> str:
    return f"${d['p50']:.2f} (${d['p5']:.2f}-${d['p95']:.2f})"


def _percent(d: Mapping[str, Any] | None) -> str:
    if d is None or d["p50"] is None:
        return "-"
    return f"{100 * d['p50']:.1f}% ({100 * d['p5']:.1f}-{100 * d['p95']:.1f}%)"


def _count(d: Mapping[str, Any]) -> str:
    return f"{d['p50']:g} ({d['p5']:g}-{d['p95']:g})"


def _seconds(d: Mapping[str, Any]) -> str:
    if d["p50"] is None:
        return "-"
    return f"{format_duration(d['p50'])} ({format_duration(d['p5'])}-{format_duration(d['p95'])})"


def design_table(designs: Sequence[Design]) -> list[str]:
    """The designs side by side: each measure's p50 with its p5-p95 band over the runs."""
    rows = [
        [
            "DESIGN",
            "COST / DAY",
            "SERVING LOST",
            "INTERRUPTIONS",
            "TIME TO READY (A RUN'S P95)",
        ]
    ]
    for d in designs:
        s = d.summary
        rows.append(
            [
                d.name,
                _dollars(s["costUSD"]),
                _percent(s.get("servingLostFraction")),
                _count(s["interruptions"]),
                _seconds(s["timeToReadyP95Seconds"]),
            ]
        )
    return [
        *format_table(rows),
        "(p50 over the runs, p5-p95 in brackets; serving lost: the replica-time the HPA asked for",
        " that was not Ready: cold starts, evictions, pending pods)",
    ]


def act3_sentences(spot: Design, on_demand: Design) -> list[str]:
    """What the table means, in plain words: what spot saves against on-demand only, and what
    it costs in serving and interruptions."""
    s, o = spot.summary, on_demand.summary
    words: list[str] = []
    saving = o["costUSD"]["p50"] - s["costUSD"]["p50"]
    if o["costUSD"]["p50"] > 0:
        share = saving / o["costUSD"]["p50"]
        cheaper = "cheaper" if saving >= 0 else "dearer"
        words.append(
            f"Spot first cost ${s['costUSD']['p50']:.2f} a day (p50 of {s['runs']} runs) against "
            f"${o['costUSD']['p50']:.2f} on-demand only: {100 * abs(share):.0f}% {cheaper}, "
            f"${abs(saving) * 30:.0f} a month for this fleet."
        )
    lost_s, lost_o = s.get("servingLostFraction"), o.get("servingLostFraction")
    if lost_s and lost_o and lost_s["p50"] is not None and lost_o["p50"] is not None:
        words.append(
            f"The price: EC2 took spot nodes back {s['interruptions']['p50']:g} times a day "
            f"(p50; {s['interruptions']['p95']:g} at p95), and {100 * lost_s['p50']:.1f}% of the "
            f"replica-time the HPA asked for was not Ready ({100 * lost_s['p95']:.1f}% at p95) "
            f"against {100 * lost_o['p50']:.1f}% on-demand only, where only cold starts under "
            "the day's ramps lose serving."
        )
    return words
