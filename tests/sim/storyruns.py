"""The bundled disruption stories (tests/sim/stories/*.yaml), each run once per process, and the
readers of their event logs: shared by the story tests (not a test module)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.controllers.nodeclaim.constants import MIN_DRAIN_TIME
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import SimulationResult, simulate

STORIES = Path(__file__).parent / "stories"
HOUR = 3600.0

# The reasons of the disruption controller's voluntary methods: the only ones budgets govern.
VOLUNTARY = ("Empty", "Drifted", "Underutilized")


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    return load_catalog(region)


@cache
def run(name: str) -> SimulationResult:
    return simulate(load_scenario(str(STORIES / f"{name}.yaml"), _catalog), _catalog())


def of_type(result: SimulationResult, type_: str, **match: Any) -> list[Event]:
    return [
        e for e in result.events if e.type == type_ and all(e.get(k) == v for k, v in match.items())
    ]


def decisions(result: SimulationResult, **match: Any) -> list[Event]:
    return of_type(result, "DisruptionDecision", **match)


def _ends(result: SimulationResult, *, until_drained: bool) -> dict[str, float]:
    """When each NodeClaim stops counting against its NodePool's budget. Strictly: when it is
    deleted. As Karpenter counts (`BuildDisruptionBudgetMapping` skips a node whose NodeClaim is
    InstanceTerminating): once drained, i.e. `MIN_DRAIN_TIME` after its last eviction, when the
    instance is being terminated; no later than its deletion."""
    deleted = {e.get("nodeClaim"): e.t for e in of_type(result, "NodeClaimDeleted")}
    if not until_drained:
        return deleted
    evicted: dict[str, float] = {}
    for e in of_type(result, "PodEvicted"):
        evicted[e.get("node")] = e.t
    return {
        name: min(t, evicted[name] + MIN_DRAIN_TIME) if name in evicted else t
        for name, t in deleted.items()
    }


def most_disrupted_at_once(
    result: SimulationResult, nodepool: str, *, until_drained: bool = False
) -> int:
    """The most NodeClaims of `nodepool` decided by a voluntary method and not yet gone (see
    `_ends`) at any point of the event log: each decision counted at the moment it is made."""
    ends = _ends(result, until_drained=until_drained)
    in_flight: dict[str, float] = {}
    most = 0
    for e in decisions(result, nodePool=nodepool):
        if e.get("reason") not in VOLUNTARY:
            continue
        in_flight = {n: end for n, end in in_flight.items() if end > e.t}
        in_flight[e.get("nodeClaim")] = ends.get(e.get("nodeClaim"), float("inf"))
        most = max(most, len(in_flight))
    return most


def commands(result: SimulationResult) -> list[list[str]]:
    """The candidates of each voluntary command, in order (one DisruptionDecision per candidate)."""
    seen: list[list[str]] = []
    for e in decisions(result):
        if e.get("reason") in VOLUNTARY and e.get("candidates") not in seen:
            seen.append(e.get("candidates"))
    return seen


# ---- WhenEmpty, consolidateAfter 2h ---------------------------------------------------------------
