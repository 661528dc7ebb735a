"""What the report shows of a simulated run, computed from its event log and summary alone.

`simulation_view(events, summary, end=..., limits=...)` reads the events (`sim/recorder.py`), the
summary (`sim/summary.py`) and the NodePools' GPU limits, and returns plain data, no HTML:

- `NodeBar`: one per NodeClaim, in creation order, with its offering (type, zone, capacity type,
  price), its AMI, its phases and why it was created and why it went away. Phases: `launching`
  (created until its node registers, or until the launch failed), `registered` (registered, GPU
  not advertised yet: not initialized), `initialized` (until the NodeClaim is deleted or a
  disruption decision names it; a decision later abandoned does not count), `draining` (from
  that moment to termination). A phase still
  open at the end of the run ends there; a NodeClaim whose launch failed has one phase,
  `launching`, until the failure.
- `pods`: pods Pending / Bound (not Ready yet) / Ready after each instant that changed them.
- `gpus`: GPUs requested by the pods that exist (pending or bound), GPUs advertised by
  initialized nodes, and physical GPUs of launched nodes, after each instant; time-slicing shows
  as advertised above physical. The NodePools' GPU limits are flat lines.
- `cost`: cumulative dollars by capacity type, exact at every launch and termination (billing is
  linear in between), billed as `sim/summary.py` bills (launch to termination at the launch's
  price), so each series ends at the summary's cost for that capacity type.
- `timeline`: the lines of `sim/timeline.py` (the terminal's words), each with a category
  (`pods`, `nodes`, `disruption`, `scenario`) for the table's filter.

Called by `report/figures.py` (the charts), `report/page.py` (the page) and the CLI's
`simulate --report` and `demo --report`. Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucap.apis.gpu import GPU_RESOURCES
from gpucap.apis.nodepool import NodePool
from gpucap.apis.quantity import base_units
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.summary import billed_seconds
from gpucap.sim.timeline import names_words, timeline

__all__ = [
    "PHASES",
    "NodeBar",
    "Phase",
    "SimulationView",
    "TimelineRow",
    "gpu_limits",
    "removal_words",
    "simulation_view",
]

PHASES = ("launching", "registered", "initialized", "draining")

# What each disruption reason means to a person (Karpenter's reasons, `DisruptionDecision`).
_REASONS = {
    "Empty": "consolidation: the node was empty",
    "Underutilized": "consolidation: its pods fit elsewhere for less",
    "Drifted": "drift: it no longer matches its NodePool or EC2NodeClass",
    "Expired": "expiration: it reached its NodePool's expireAfter",
    "Interrupted": "spot interruption: EC2 reclaimed the instance",
    "GarbageCollected": "garbage collection: its instance was gone",
    "CapacityBlockExpiring": "capacity reservation: its Capacity Block ends in 40 minutes",
    "CapacityReservationInterrupted": "capacity reservation: its owner reclaimed it",
}

_CATEGORY = {
    "PodCreated": "pods",
    "PodUnschedulable": "pods",
    "PodBound": "pods",
    "PodReady": "pods",
    "PodEvicted": "pods",
    "PodDeleted": "pods",
    "NodeClaimCreated": "nodes",
    "NodeClaimLaunched": "nodes",
    "LaunchFailed": "nodes",
    "NodeRegistered": "nodes",
    "NodeInitialized": "nodes",
    "NodeClaimDeleted": "nodes",
    "NodeTerminated": "nodes",
    "InstanceTerminated": "nodes",
    "NodeNotReady": "nodes",
    "AMIResolved": "nodes",
    "NodePoolNotReady": "nodes",
    "NodePoolReady": "nodes",
    "DisruptionDecision": "disruption",
    "DisruptionAbandoned": "disruption",
    "NodeClaimDrifted": "disruption",
    "SpotInterruptionWarning": "disruption",
    "DisruptionBlocked": "disruption",
    "DisruptionUnblocked": "disruption",
    "Unconsolidatable": "disruption",
    "EvictionBlocked": "disruption",
    "CapacityReservationInstanceInterrupted": "disruption",
    "CapacityTypeDemoted": "nodes",
}


@dataclass(frozen=True, slots=True)
class Phase:
    name: str  # one of PHASES
    start: float
    end: float


@dataclass(slots=True)
class NodeBar:
    """One NodeClaim's life (see the module docstring); times in seconds since the start."""

    name: str
    node_pool: str
    created: float
    node: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    price_per_hour: float | None = None
    ami: str | None = None
    gpus: int = 0
    advertised: int = 0
    launched: float | None = None
    registered: float | None = None
    initialized: float | None = None
    draining: float | None = None  # the decision or deletion that started its end
    terminated: float | None = None
    failed: float | None = None
    why_created: str = ""
    why_removed: str | None = None  # None: still there at the end of the run
    phases: list[Phase] = field(default_factory=list)
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class TimelineRow:
    t: float
    category: str
    text: str


@dataclass(frozen=True, slots=True)
class SimulationView:
    """Everything the report draws of one run (series are (t, value...) after each instant)."""

    end: float
    nodes: list[NodeBar]
    pods: list[tuple[float, int, int, int]]  # t, pending, bound (not ready), ready
    gpus: list[tuple[float, int, int, int]]  # t, requested, advertised, physical
    limits: dict[str, int]  # "NodePool gpu (nvidia.com/gpu)" -> limit
    cost: dict[str, list[tuple[float, float]]]  # capacity type -> (t, dollars so far)
    timeline: list[TimelineRow]
    summary: Mapping[str, Any]


def removal_words(decision: Event | None, deleted: Event | None, failed: Event | None) -> str:
    """Why a NodeClaim went away, in words: its disruption decision (reason, method, message),
    else its deletion's reason, else its failed launch."""
    if decision is not None:
        reason = str(decision.get("reason"))
        words = _REASONS.get(reason, f"disrupted: {reason}")
        method = decision.get("method")
        if method and method not in words:
            words += f" ({method})"
        message = decision.get("message")
        return f"{words}; {message}" if message else words
    if failed is not None:
        message = failed.get("message")
        return f"launch failed: {failed.get('reason')}" + (f": {message}" if message else "")
    if deleted is not None:
        reason = deleted.get("reason")
        return f"deleted: {reason}" if reason else "deleted"
    return "deleted"


def gpu_limits(scenario: LoadedScenario) -> dict[str, int]:
    """The GPU limits of the scenario's NodePools (`spec.limits`), as chart labels."""
    out: dict[str, int] = {}
    for m in scenario.initial:
        obj = m.obj
        if isinstance(obj, NodePool) and obj.spec.limits:
            limits = base_units(obj.spec.limits)
            for resource in sorted(limits):
                if resource in GPU_RESOURCES or resource.startswith("nvidia.com/gpu"):
                    out[f"NodePool {obj.metadata.name} limit ({resource})"] = limits[resource]
    return out


def _phases(bar: NodeBar, end: float) -> list[Phase]:
    if bar.failed is not None:  # never launched: it was launching until the launch failed
        return [Phase("launching", bar.created, max(bar.created, min(bar.failed, end)))]
    stop = min(x for x in (bar.terminated, end) if x is not None)
    marks = [
        ("launching", bar.created),
        ("registered", bar.registered),
        ("initialized", bar.initialized),
        ("draining", bar.draining),
    ]
    starts = [(name, t) for name, t in marks if t is not None and t <= stop]
    phases = []
    for i, (name, t) in enumerate(starts):
        nxt = starts[i + 1][1] if i + 1 < len(starts) else stop
        if nxt > t or (i + 1 == len(starts) and t == stop):
            phases.append(Phase(name, t, max(nxt, t)))
    return phases


def _nodes(events: Sequence[Event], end: float) -> list[NodeBar]:
    bars: dict[str, NodeBar] = {}
    decisions: dict[str, Event] = {}
    deletions: dict[str, Event] = {}
    failures: dict[str, Event] = {}
    nominated: dict[tuple[float, str], list[str]] = {}  # (t, claim) -> pods
    replaces: dict[str, tuple[str, str]] = {}  # replacement -> (candidates, reason)
    resolved: list[Event] = []  # AMIResolved, in order
    for e in events:
        claim = e.get("nodeClaim")
        bar = bars.get(claim) if claim is not None else None
        match e.type:
            case "NodeClaimCreated":
                bars[claim] = NodeBar(claim, str(e.get("nodePool")), e.t)
            case "PodNominated":
                nominated.setdefault((e.t, claim), []).append(str(e.get("pod")))
            case "AMIResolved":
                resolved.append(e)
            case "NodeClaimLaunched" if bar is not None and bar.launched is None:
                bar.launched = e.t
                bar.instance_type = e.get("instanceType")
                bar.zone = e.get("zone")
                bar.capacity_type = e.get("capacityType")
                bar.price_per_hour = e.get("pricePerHour")
                bar.gpus = int(e.get("gpus") or 0)
                bar.ami = e.get("image")
            case "LaunchFailed" if bar is not None:
                bar.failed = e.t
                failures.setdefault(claim, e)
            case "NodeRegistered" if bar is not None and bar.registered is None:
                bar.registered, bar.node = e.t, e.get("node")
            case "NodeInitialized" if bar is not None and bar.initialized is None:
                bar.initialized = e.t
                bar.advertised = sum((e.get("gpusAdvertised") or {}).values())
            case "DisruptionDecision" | "SpotInterruptionWarning" if bar is not None:
                if e.type == "DisruptionDecision":
                    decisions.setdefault(claim, e)
                    named = [str(c) for c in e.get("candidates") or [claim]]
                    for r in e.get("replacements") or ():
                        replaces[str(r)] = (names_words(named), str(e.get("reason")))
                if bar.draining is None:
                    bar.draining = e.t
            case "DisruptionAbandoned" if bar is not None and bar.terminated is None:
                # The command was given up (its replacement failed, a pod came back): the node
                # serves on, as if never chosen.
                decisions.pop(claim, None)
                if claim not in deletions:
                    bar.draining = None
            case "NodeClaimDeleted" if bar is not None:
                deletions.setdefault(claim, e)
                if bar.draining is None:
                    bar.draining = e.t
            case "NodeTerminated" if bar is not None and bar.terminated is None:
                bar.terminated = e.t
            case _:
                pass
    # The AMI a launch got, when its event does not say: the image its node class had resolved
    # to by then. The launch event names no node class, so this is known only while one node
    # class resolves images (`AMIResolved` follows the first launch of each new image).
    one_class = len({e.get("nodeClass") for e in resolved}) == 1
    for bar in bars.values():
        if bar.launched is not None and bar.ami is None and one_class:
            before = [e for e in resolved if e.t <= bar.launched]
            bar.ami = str(before[-1].get("image")) if before else None
        pods = nominated.get((bar.created, bar.name), [])
        if bar.name in replaces:
            cands, reason = replaces[bar.name]
            bar.why_created = f"replacement for {cands} ({reason})"
        elif pods:
            bar.why_created = f"for pending pod{'s' if len(pods) > 1 else ''} {names_words(pods)}"
        else:
            bar.why_created = f"by NodePool {bar.node_pool}"
        removed = bar.terminated is not None or bar.failed is not None
        if removed or bar.name in decisions or bar.name in deletions:
            bar.why_removed = removal_words(
                decisions.get(bar.name), deletions.get(bar.name), failures.get(bar.name)
            )
        if bar.launched is not None and bar.price_per_hour is not None:
            seconds = billed_seconds(bar.launched, bar.terminated, end)
            bar.cost = seconds / 3600 * bar.price_per_hour
        bar.phases = _phases(bar, end)
    return list(bars.values())


def _pods(events: Sequence[Event]) -> list[tuple[float, int, int, int]]:
    state: dict[str, str] = {}  # pod -> pending | bound | ready
    out: list[tuple[float, int, int, int]] = [(0.0, 0, 0, 0)]
    for e in events:
        pod = e.get("pod")
        if pod is None:
            continue
        match e.type:
            case "PodCreated" | "PodEvicted":
                state[pod] = "pending"
            case "PodBound":
                state[pod] = "bound"
            case "PodReady":
                state[pod] = "ready"
            case "PodDeleted":
                state.pop(pod, None)
            case _:
                continue
        values = list(state.values())
        row = (e.t, values.count("pending"), values.count("bound"), values.count("ready"))
        if out[-1][0] == e.t:
            out[-1] = row
        else:
            out.append(row)
    return out


def _gpus(events: Sequence[Event]) -> list[tuple[float, int, int, int]]:
    requested: dict[str, int] = {}
    advertised: dict[str, int] = {}
    physical: dict[str, int] = {}
    out: list[tuple[float, int, int, int]] = [(0.0, 0, 0, 0)]
    for e in events:
        claim = e.get("nodeClaim")
        match e.type:
            case "PodCreated":
                requested[e.get("pod")] = sum((e.get("gpus") or {}).values())
            case "PodDeleted":
                requested.pop(e.get("pod"), None)
            case "NodeClaimLaunched":
                physical[claim] = int(e.get("gpus") or 0)
            case "NodeInitialized":
                advertised[claim] = sum((e.get("gpusAdvertised") or {}).values())
            case "NodeTerminated":
                physical.pop(claim, None)
                advertised.pop(claim, None)
            case _:
                continue
        row = (e.t, sum(requested.values()), sum(advertised.values()), sum(physical.values()))
        if out[-1][0] == e.t:
            out[-1] = row
        else:
            out.append(row)
    return out


def _cost(nodes: Sequence[NodeBar], end: float) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for cap in sorted({n.capacity_type for n in nodes if n.capacity_type}):
        mine = [n for n in nodes if n.capacity_type == cap and n.launched is not None]
        marks = {0.0, end}
        for n in mine:
            marks.add(min(n.launched or 0.0, end))
            marks.add(min(n.terminated if n.terminated is not None else end, end))
        series = []
        for t in sorted(marks):
            dollars = sum(
                billed_seconds(n.launched or 0.0, n.terminated, t) / 3600 * (n.price_per_hour or 0)
                for n in mine
            )
            series.append((t, round(dollars, 6)))
        out[cap] = series
    return out


def simulation_view(
    events: Sequence[Event],
    summary: Mapping[str, Any],
    *,
    end: float,
    limits: Mapping[str, int] | None = None,
) -> SimulationView:
    """The report's data for a run ending at `end` (the module docstring says what each is)."""
    log = sorted((e for e in events if e.t <= end), key=lambda e: e.t)
    nodes = _nodes(log, end)
    rows = [
        TimelineRow(line.t, _CATEGORY.get(line.type, "scenario"), line.text)
        for line in timeline(log)
    ]
    return SimulationView(
        end=end,
        nodes=nodes,
        pods=_pods(log),
        gpus=_gpus(log),
        limits=dict(limits or {}),
        cost=_cost(nodes, end),
        timeline=rows,
        summary=summary,
    )
