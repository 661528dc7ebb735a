"""Many runs of one scenario (`simulate --runs N`): one run per seed, and the distributions of
what the runs' summaries say.

- `SeedRun(scenario, catalog)`: the work an executor (`runtime/executor.py`) gives each worker
  once; called with a seed, it runs the scenario with that seed in place of `spec.seed` (a World
  of its own, built from the loaded scenario: `dataclasses.replace`) and returns a `RunOutcome`:
  the summary (`sim/summary.py`) and the cost curve (`sim/costcurve.py`). A run's outcome
  depends on the scenario and its seed alone: not on which worker ran it, nor on what ran
  before it in that process.
- `set_summary(outcomes, requested=N)`: per measure of `MEASURES`, the runs' p5, p50, p95
  (nearest-rank, as the summary's own percentiles: `nearest_rank`) and mean; and whether every
  run said the same (`identical`: a world without randomness).
- `cost_fan(outcomes)`: the p5, p50 and p95 of the runs' cumulative cost at each instant of
  the grid (the report's fan chart).

Called by `cli/simulate_runs.py` and the report (`report/runset.py`).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.sim.costcurve import COST_CURVE_POINTS, cost_curve
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.summary import nearest_rank
from gpucap.sim.world import World

__all__ = [
    "MAX_RUNS",
    "MEASURES",
    "Measure",
    "RunOutcome",
    "SeedRun",
    "cost_fan",
    "set_summary",
]

# `--runs` above this is refused: 10,000 runs of a small scenario is already hours of CPU, and
# every run's summary is kept for the JSON document.
MAX_RUNS = 10_000
_DIGITS = 6  # decimals of a mean, as the summary's hours and dollars
PERCENTILES = (5, 50, 95)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What one run of the set leaves (picklable: it crosses process boundaries)."""

    seed: int
    summary: dict[str, Any]
    cost_curve: tuple[float, ...]


@dataclass(frozen=True)
class SeedRun:
    """The scenario and the catalog every run shares; `run(seed)` is one run."""

    scenario: LoadedScenario
    catalog: Catalog
    points: int = COST_CURVE_POINTS

    def __call__(self, seed: int) -> RunOutcome:
        outcome = self._run(seed)
        # The run's world (cluster, controllers, events) is garbage now, much of it in
        # reference cycles, and a run holds the cyclic collector off while it goes: without a
        # collection here a worker running runs back to back grew ~8 MiB a run (a day of the
        # workshop's fleet; bench/sweep.py), ~500 MiB after 50 runs. Once per run, a few
        # per cent of a run's time.
        gc.collect()
        return outcome

    def _run(self, seed: int) -> RunOutcome:
        world = World(dataclasses.replace(self.scenario, seed=seed), self.catalog)
        result = world.run()
        curve = cost_curve(result.events, end=result.end, points=self.points)
        return RunOutcome(seed, result.summary, curve)


def _total(table: Mapping[str, Mapping[str, float]]) -> float:
    return round(sum(v for row in table.values() for v in row.values()), _DIGITS)


def _cost(s: Mapping[str, Any]) -> float:
    return float(s["costUSD"])


def _cost_floor(s: Mapping[str, Any]) -> float | None:
    value = s.get("costFloorUSD")  # None: a summary recorded before the floor existed
    return None if value is None else float(value)


def _node_hours(s: Mapping[str, Any]) -> float:
    return _total(s["nodeHours"])


def _gpu_hours(s: Mapping[str, Any]) -> float:
    return _total(s["gpuHours"])


def _ready_p95(s: Mapping[str, Any]) -> float | None:
    value = s["timeToReady"]["p95"]
    return None if value is None else float(value)


def _serving_lost(s: Mapping[str, Any]) -> float:
    return float(s["servingLostSeconds"])


def _serving(key: str) -> Callable[[Mapping[str, Any]], float | None]:
    def read(s: Mapping[str, Any]) -> float | None:
        value = (s.get("serving") or {}).get(key)
        return None if value is None else float(value)

    return read


def _interruptions(s: Mapping[str, Any]) -> float:
    return int(s["disruptions"].get("Interrupted", 0))


def _disruptions(s: Mapping[str, Any]) -> float:
    return int(sum(s["disruptions"].values()))


def _pending(s: Mapping[str, Any]) -> float:
    return len(s["pendingAtEnd"])


@dataclass(frozen=True, slots=True)
class Measure:
    """One number of a run's summary whose distribution over the runs the set reports.
    `unit`: how it is said (`dollars`, `hours`, `seconds`, `fraction`, `count`); `optional`:
    shown only when some run has it (the HPA's `serving` block)."""

    key: str
    label: str
    unit: str
    read: Callable[[Mapping[str, Any]], float | None]
    optional: bool = False


MEASURES: tuple[Measure, ...] = (
    Measure("costUSD", "Cost", "dollars", _cost),
    Measure("costFloorUSD", "Cost floor", "dollars", _cost_floor, optional=True),
    Measure("nodeHours", "Node-hours", "hours", _node_hours),
    Measure("gpuHours", "GPU-hours", "hours", _gpu_hours),
    Measure("timeToReadyP95Seconds", "Time to ready (a run's p95)", "seconds", _ready_p95),
    Measure("servingLostSeconds", "Serving lost (evictions)", "seconds", _serving_lost),
    Measure(
        "servingLostReplicaSeconds",
        "Serving lost (replica-time)",
        "seconds",
        _serving("lostReplicaSeconds"),
        optional=True,
    ),
    Measure(
        "servingLostFraction",
        "Serving lost (fraction)",
        "fraction",
        _serving("lostFraction"),
        optional=True,
    ),
    Measure("interruptions", "Interruptions", "count", _interruptions),
    Measure("disruptions", "Disruptions (all reasons)", "count", _disruptions),
    Measure("pendingAtEnd", "Pods pending at the end", "count", _pending),
)


def distribution(samples: Sequence[float]) -> dict[str, Any]:
    """p5, p50, p95 (nearest-rank: observed values) and the mean of `samples`, and how many
    there were; all None without samples."""
    if not samples:
        return {"p5": None, "p50": None, "p95": None, "mean": None, "count": 0}
    stats: dict[str, Any] = {f"p{p}": nearest_rank(samples, p) for p in PERCENTILES}
    stats["mean"] = round(sum(samples) / len(samples), _DIGITS)
    stats["count"] = len(samples)
    return stats


def set_summary(outcomes: Sequence[RunOutcome], *, requested: int) -> dict[str, Any]:
    """The set's summary (see the module docstring); `requested`: the runs asked for (more than
    the outcomes when the set was interrupted)."""
    summaries = [o.summary for o in sorted(outcomes, key=lambda o: o.seed)]
    doc: dict[str, Any] = {
        "runs": len(summaries),
        "requested": requested,
        "percentiles": "nearest-rank",
        "identical": len(summaries) > 1 and all(s == summaries[0] for s in summaries[1:]),
    }
    for m in MEASURES:
        values = [m.read(s) for s in summaries]
        samples = [v for v in values if v is not None]
        if m.optional and not samples:
            continue
        doc[m.key] = distribution(samples)
    return doc


def cost_fan(outcomes: Sequence[RunOutcome]) -> dict[str, list[float]]:
    """At each instant of the runs' common grid, the p5, p50 and p95 of their cumulative cost."""
    curves = [o.cost_curve for o in outcomes]
    if not curves:
        return {f"p{p}": [] for p in PERCENTILES}
    columns = list(zip(*curves, strict=True))
    return {f"p{p}": [nearest_rank(c, p) for c in columns] for p in PERCENTILES}
