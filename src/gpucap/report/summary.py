"""The summary of a simulated run as tables and facts: one view, rendered twice.

`summary_view(summary, start=...)` turns the summary dict of `sim/summary.py` into a
`SummaryView` of strings: a headline, the tables (cost by instance type and capacity type, GPU-hours
advertised vs requested, time from creation to bound/ready) and the facts below them
(disruptions, serving lost, NodeClaims, limits reached, nodes never initialized, pods pending at
the end and why, pods never Ready). Every number is formatted here, once, so the terminal and the
HTML report cannot disagree on a digit or a word:

- `cli/simulate_render.py`'s `format_summary` lays the view out as text (`render.format_table`);
- `report/templates/report.html.j2` lays the same view out as HTML tables and paragraphs.

A `Listing` (nodes never initialized, pods pending at the end, ...) carries both its rows as
columns (for the HTML table) and each row's sentence (the terminal's indented line), built from
the same values side by side. Pure; called by those two and by the tests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.runtime.clock import EPOCH
from gpucap.sim.timeline import clock_time, format_duration, node_words, plural

__all__ = ["NEAREST_RANK", "Listing", "Sentence", "SummaryTable", "SummaryView", "summary_view"]

NEAREST_RANK = "(percentiles are nearest-rank: an observed time, not interpolated)"


@dataclass(frozen=True, slots=True)
class SummaryTable:
    """A table: its header, its rows (strings, as printed), the columns holding numbers (right-
    aligned in HTML), whether its last row is a total, and a note printed under it."""

    key: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...] = ()
    total: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True)
class Sentence:
    """One line of prose (the terminal's line, the page's paragraph)."""

    key: str
    text: str


@dataclass(frozen=True, slots=True)
class Listing:
    """A heading line and one entry per row: `rows` as columns under `header` for the page,
    `lines` the same rows as the terminal's indented sentences."""

    key: str
    heading: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    lines: tuple[str, ...]


Fact = Sentence | Listing


@dataclass(frozen=True, slots=True)
class SummaryView:
    headline: str
    tables: tuple[SummaryTable, ...]
    facts: tuple[Fact, ...]


def _hours(h: float) -> str:
    return f"{h:.2f}"


def _stat(value: float | None) -> str:
    return "-" if value is None else format_duration(value)


def summary_view(summary: Mapping[str, Any], *, start: dt.datetime = EPOCH) -> SummaryView:
    """The summary's tables and facts, every value formatted (see the module docstring)."""
    s = summary
    headline = (
        f"Simulated {format_duration(s['durationSeconds'])}: ${s['costUSD']:.2f} for "
        f"{plural(s['nodeClaims']['launched'], 'node')}"
    )
    tables = [t for t in (_cost(s), _reservations(s), _gpu_hours(s)) if t is not None]
    tables.append(_latency(s))
    return SummaryView(headline, tuple(tables), tuple(_facts(s, start)))


def _cost(s: Mapping[str, Any]) -> SummaryTable | None:
    if not s["nodeHours"]:
        return None
    rows: list[tuple[str, ...]] = []
    for it, row in s["nodeHours"].items():
        for cap, hours in row.items():
            rows.append(
                (
                    it,
                    cap,
                    str(s["nodes"][it][cap]),
                    _hours(hours),
                    _hours(s["gpuHours"][it][cap]),
                    f"${s['costUSDByType'][it][cap]:.2f}",
                )
            )
    nodes = sum(n for row in s["nodes"].values() for n in row.values())
    node_hours = sum(h for row in s["nodeHours"].values() for h in row.values())
    gpu_hours = sum(h for row in s["gpuHours"].values() for h in row.values())
    rows.append(
        ("total", "", str(nodes), _hours(node_hours), _hours(gpu_hours), f"${s['costUSD']:.2f}")
    )
    return SummaryTable(
        "cost",
        ("INSTANCE TYPE", "CAPACITY", "NODES", "NODE-HOURS", "GPU-HOURS", "COST"),
        tuple(rows),
        numeric=(2, 3, 4, 5),
        total=True,
    )


def _reservations(s: Mapping[str, Any]) -> SummaryTable | None:
    """Per capacity reservation (only when the run had some, `sim/reservations.py`): what it
    cost, and its instance-hours used and idle within the run."""
    found = s.get("reservations")
    if not found:
        return None
    rows = tuple(
        (
            r["reservation"],
            r["reservationType"],
            f"{r['instances']} x {r['instanceType']} {r['zone']}",
            f"${r['paid']:.2f}",
            _hours(r["usedHours"]),
            _hours(r["idleHours"]),
        )
        for r in found
    )
    return SummaryTable(
        "reservations",
        ("RESERVATION", "TYPE", "RESERVES", "PAID", "USED INSTANCE-HOURS", "IDLE INSTANCE-HOURS"),
        rows,
        numeric=(3, 4, 5),
        note="a Capacity Block is paid up front for its whole duration (on-demand price x "
        "instances x hours, gpucap's assumption); an ODCR costs the on-demand price of every "
        "reserved instance while active; the cost table above bills the instances themselves",
    )


def _gpu_hours(s: Mapping[str, Any]) -> SummaryTable | None:
    resources = sorted(set(s["gpuHoursAdvertised"]) | set(s["gpuHoursRequested"]))
    if not resources:
        return None
    rows = []
    for r in resources:
        adv = s["gpuHoursAdvertised"].get(r, 0.0)
        req = s["gpuHoursRequested"].get(r, 0.0)
        share = f"{100 * req / adv:.0f}%" if adv else "-"
        rows.append((r, _hours(adv), _hours(req), share))
    return SummaryTable(
        "gpu-hours",
        ("GPU RESOURCE", "ADVERTISED GPU-HOURS", "REQUESTED GPU-HOURS", "REQUESTED/ADVERTISED"),
        tuple(rows),
        numeric=(1, 2, 3),
    )


def _latency(s: Mapping[str, Any]) -> SummaryTable:
    rows = []
    for label, key in (("bound", "timeToBound"), ("ready", "timeToReady")):
        st = s[key]
        rows.append((label, str(st["count"]), _stat(st["p50"]), _stat(st["p95"]), _stat(st["max"])))
    return SummaryTable(
        "latency",
        ("TIME FROM CREATION TO", "PODS", "P50", "P95", "MAX"),
        tuple(rows),
        numeric=(1, 2, 3, 4),
        note=NEAREST_RANK,
    )


def _floor(s: Mapping[str, Any]) -> Sentence | None:
    """The cost floor and how far above it the bill is; no line without a floor (no pod served,
    or a log recorded before the floor existed, `sim/costfloor.py`)."""
    floor = s.get("costFloorUSD")
    if not floor:
        return None
    over = 100 * (s["costUSD"] - floor) / floor
    how = (
        f"the bill is {over:.1f}% above"
        if over >= 0
        else f"the bill is {-over:.1f}% below: the floor counts pending pods and sees no "
        "time-slicing"
    )
    return Sentence("cost-floor", f"Cost floor: ${floor:.2f} ({how})")


def _facts(s: Mapping[str, Any], start: dt.datetime) -> list[Fact]:
    facts: list[Fact] = []
    floor = _floor(s)
    if floor is not None:
        facts.append(floor)
    disruptions = ", ".join(f"{r} {n}" for r, n in s["disruptions"].items())
    facts.append(Sentence("disruptions", f"Disruptions: {disruptions or 'none'}"))
    if s.get("servingPodsEvicted"):
        n = s["servingPodsEvicted"]
        facts.append(
            Sentence(
                "serving-lost",
                f"Serving lost: {format_duration(s['servingLostSeconds'])} of pod time, "
                f"{plural(n, 'eviction')} of a Ready pod (each until it was Ready again: "
                "pull and model load included)",
            )
        )
    serving = s.get("serving")  # only with a HorizontalPodAutoscaler (`sim/summary.py`)
    if serving:
        asked, lost = serving["requestedReplicaSeconds"], serving["lostReplicaSeconds"]
        facts.append(
            Sentence(
                "serving",
                f"Serving (HPA targets): {asked / 3600:.2f} replica-hours requested, "
                f"{lost / 3600:.2f} not Ready ({100 * serving['lostFraction']:.1f}% lost to "
                f"cold starts, evictions and pending pods); "
                f"{plural(serving['hpaRescales'], 'HPA rescale')}",
            )
        )
    spot = (s.get("world") or {}).get("spot")  # only with a spot market (`sim/spotmarket.py`)
    if spot:
        quiet = spot["poolReclaims"] - spot.get("poolReclaimsWithInstances", 0)
        facts.append(
            Sentence(
                "spot-market",
                f"Spot market ({spot['model']}, {plural(spot['pools'], 'pool')}): EC2 reclaimed "
                f"{plural(spot['poolReclaims'], 'spot pool')}, warning "
                f"{plural(spot['instancesWarned'], 'instance')}"
                + (f" ({quiet} of them empty, left out of the timeline)" if quiet else ""),
            )
        )
    c = s["nodeClaims"]
    facts.append(
        Sentence(
            "nodeclaims",
            f"NodeClaims: {c['created']} created, {c['launched']} launched, {c['failed']} failed "
            f"to launch, {c['initialized']} initialized, {c['terminated']} terminated",
        )
    )
    if s["limitReached"]:
        facts.append(
            Sentence("limits", f"NodePool limits reached: {plural(s['limitReached'], 'time')}")
        )
    stuck = s["uninitializedAtEnd"]
    if stuck:
        facts.append(_uninitialized(stuck, start))
    pending = s["pendingAtEnd"]
    if pending:
        facts.append(_waiting("pending", f"Pending at the end ({len(pending)}):", pending, start))
    else:
        facts.append(Sentence("pending", "Pending at the end: none"))
    served = s.get("notPlanned") or []
    if served:
        heading = f"Not simulated, another Karpenter serves them ({len(served)}):"
        facts.append(_waiting("not-planned", heading, served, start))
    never = _never_ready(s, start)
    if never is not None:
        facts.append(never)
    return facts


def _uninitialized(stuck: Sequence[Mapping[str, Any]], start: dt.datetime) -> Listing:
    rows, lines = [], []
    for n in stuck:
        what = f"{n['instanceType']}, " if n["instanceType"] else ""
        why = "GPU never advertised"
        if n.get("gpus") == 0:  # a node without GPUs waits for no device plugin
            why = "not initialized by the end of the run"
        elif "devicePlugin" in n and n["devicePlugin"] is None:
            why += ": no device plugin in the cluster"
        elif "devicePlugin" in n:
            why = f"GPU not advertised yet ({n['devicePlugin']} still starting)"
        node = node_words(n["node"], n["nodeClaim"])
        registered = clock_time(n["registered"], start)
        rows.append((node, n["instanceType"] or "-", registered, why))
        lines.append(f"{node} ({what}registered {registered}): {why}")
    return Listing(
        "never-initialized",
        f"Nodes never initialized ({len(stuck)}):",
        ("NODE", "INSTANCE TYPE", "REGISTERED", "WHY"),
        tuple(rows),
        tuple(lines),
    )


def _waiting(
    key: str, heading: str, pods: Sequence[Mapping[str, Any]], start: dt.datetime
) -> Listing:
    rows, lines = [], []
    for p in pods:
        since = clock_time(p["since"], start)
        rows.append((p["pod"], since, p["reason"]))
        lines.append(f"{p['pod']} (since {since}): {p['reason']}")
    return Listing(key, heading, ("POD", "SINCE", "WHY"), tuple(rows), tuple(lines))


def _never_ready(s: Mapping[str, Any], start: dt.datetime) -> Listing | None:
    """How many pods never became Ready, and those deleted before they were (a workload scaled
    to 0 before its pods ran is not hidden by "Pending at the end: none")."""
    never = s["pods"].get("neverReady", 0)
    if not never:
        return None
    deleted = s.get("deletedBeforeReady") or []
    heading = f"Never Ready: {never} of {plural(s['pods']['created'], 'pod')} created" + (
        f" ({len(deleted)} deleted before they were Ready)" if deleted else ""
    )
    rows, lines = [], []
    for d in deleted:
        created, gone = clock_time(d["created"], start), clock_time(d["deleted"], start)
        rows.append((d["pod"], created, gone, d["reason"]))
        lines.append(f"{d['pod']} (created {created}, deleted {gone}): {d['reason']}")
    return Listing(
        "never-ready",
        heading,
        ("POD", "CREATED", "DELETED", "WHY IT WAITED"),
        tuple(rows),
        tuple(lines),
    )
