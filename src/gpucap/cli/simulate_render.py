"""Pure formatting for `gpucap simulate`: the event log and its summary in, text out.

- `format_timeline(events, start=...)`: the notable events in plain words, one line each, at
  wall-clock-style virtual times (`start` + t); the wording lives in `sim/timeline.py`, shared
  with the HTML report's event table, and is re-exported here with its time and duration words.
- `format_summary(summary)`: the summary of `sim/summary.py` as tables: the view of
  `report/summary.py` (which the HTML report renders too) laid out as text.
- `format_watch(t, rows, pending=..., cost=...)`: the live watch pane; `watch_rows(events, now)`
  builds its rows from the event log alone.
- `simulation_document(events, summary)`: the `-o json` document.

Called by the simulate and demo commands (`cli/simulate.py`, `cli/demo.py`). As in
`cli/render.py`, text is returned as lines, never escaped here: the CLI's `Terminal` escapes
each line whole, so a name holding a newline or an escape sequence shows escaped inside its line
(tables pad to the escaped width)."""

from __future__ import annotations

import datetime as dt
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.cli.render import format_table
from gpucap.report.summary import Sentence, summary_view
from gpucap.runtime.clock import EPOCH
from gpucap.sim.recorder import Event
from gpucap.sim.summary import summarize
from gpucap.sim.timeline import (
    clock_time,
    format_age,
    format_duration,
    format_timeline,
    plural,
)

__all__ = [
    "NodeRow",
    "clock_time",
    "fit_lines",
    "format_age",
    "format_duration",
    "format_summary",
    "format_timeline",
    "format_watch",
    "simulation_document",
    "watch_lines",
    "watch_rows",
]


# ---- the summary --------------------------------------------------------------------------------
def format_summary(summary: Mapping[str, Any], *, start: dt.datetime = EPOCH) -> list[str]:
    """The summary as tables and sentences (see `sim/summary.py` for what each number is): the
    view of `report/summary.py`, which the HTML report renders too, laid out as text."""
    view = summary_view(summary, start=start)
    lines = [view.headline]
    for table in view.tables:
        lines += ["", *format_table([list(table.header), *map(list, table.rows)])]
        if table.note:
            lines.append(table.note)
    lines.append("")
    for fact in view.facts:
        if isinstance(fact, Sentence):
            lines.append(fact.text)
        else:
            lines += [fact.heading, *(f"  {line}" for line in fact.lines)]
    return lines


# ---- the watch pane -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NodeRow:
    """One line of the watch pane: a NodeClaim and its node as of now."""

    name: str
    instance_type: str
    capacity_type: str
    zone: str
    age_s: float
    status: str
    gpus_advertised: int
    gpus_used: int


# The watch table's columns, and the order in which they go when the terminal is too narrow
# (the name and the status stay).
_WATCH_COLUMNS = ("NAME", "TYPE", "CAPACITY", "ZONE", "AGE", "STATUS", "GPUS (ADVERTISED/USED)")
_DROPPED_FIRST = ("AGE", "ZONE", "CAPACITY", "GPUS (ADVERTISED/USED)", "TYPE")


def format_watch(
    t: float,
    rows: Sequence[NodeRow],
    *,
    pending: int | Sequence[str],
    cost: float,
    start: dt.datetime = EPOCH,
    width: int | None = None,
) -> list[str]:
    """The watch pane: a header (virtual time, pending pods, cost so far), the pending pods by
    name, and the node table. `width` (the terminal's): columns that do not fit are dropped,
    least needed first, and the pending pods' line names as many as fit; never a word cut."""
    names = [] if isinstance(pending, int) else list(pending)
    count = pending if isinstance(pending, int) else len(names)
    header = (
        f"{clock_time(t, start)}  {plural(len(rows), 'node')}  {plural(count, 'pod')} pending  "
        f"${cost:.2f} so far"
    )
    lines = [header]
    if names:
        lines.append(_fitted_names("pending: ", names, width))
    if not rows:
        return [*lines, "No nodes."]
    table = [list(_WATCH_COLUMNS)]
    table += [
        [
            r.name,
            r.instance_type,
            r.capacity_type,
            r.zone,
            format_age(r.age_s),
            r.status,
            f"{r.gpus_advertised}/{r.gpus_used}",
        ]
        for r in rows
    ]
    shown = format_table(table)
    for column in _DROPPED_FIRST:
        if width is None or max(len(x) for x in shown) <= width:
            break
        i = table[0].index(column)
        table = [row[:i] + row[i + 1 :] for row in table]
        shown = format_table(table)
    return [*lines, *shown]


def _fitted_names(head: str, names: Sequence[str], width: int | None) -> str:
    """`head` and the names, as many as fit in `width` with `and N more` after them."""
    for n in range(len(names), 0, -1):
        more = len(names) - n
        text = head + ", ".join(names[:n]) + (f" and {more} more" if more else "")
        if width is None or len(text) <= width:
            return text
    return head + f"{len(names)} pods"


def fit_lines(lines: Sequence[str], width: int | None, indent: int = 9) -> list[str]:
    """Each line wrapped at spaces to `width` (continuations indented `indent`, under a
    timeline line's words); a single word longer than the width is left whole."""
    if width is None:
        return list(lines)
    out: list[str] = []
    for line in lines:
        out.extend(
            textwrap.wrap(
                line,
                width=max(width, indent + 10),
                subsequent_indent=" " * indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
            or [""]
        )
    return out


def watch_rows(events: Sequence[Event], *, now: float) -> list[NodeRow]:
    """The nodes as of `now`, from the event log alone, in creation order: every NodeClaim not
    yet terminated and not failed. Status: Pending (created), Launched, Registered (GPU not
    advertised yet), Ready (initialized), Interrupted (spot warning), Deleting."""
    claims: dict[str, dict[str, Any]] = {}
    pod_gpus: dict[str, int] = {}
    pod_on: dict[str, str] = {}
    node_claim: dict[str, str] = {}
    for e in sorted(events, key=lambda e: e.t):
        if e.t > now:
            break
        f, claim = e.fields, e.get("nodeClaim")
        row = claims.get(claim) if claim is not None else None
        match e.type:
            case "NodeClaimCreated":
                claims[claim] = {"created": e.t, "status": "Pending", "advertised": 0}
            case "NodeClaimLaunched":
                row = claims.setdefault(claim, {"created": e.t, "advertised": 0})
                row.update(launch=f, status="Launched")
            case "LaunchFailed" | "NodeTerminated":
                claims.pop(claim, None)
            case "NodeRegistered" if row is not None:
                row["status"] = "Registered"
                node_claim[f["node"]] = claim
            case "NodeInitialized" if row is not None:
                row["status"] = "Ready"
                row["advertised"] = sum(f["gpusAdvertised"].values())
            case "SpotInterruptionWarning" if row is not None:
                row["status"] = "Interrupted"
            case "NodeClaimDeleted" if row is not None:
                row["status"] = "Deleting"
            case "PodCreated":
                pod_gpus[f["pod"]] = sum((f.get("gpus") or {}).values())
                pod_on.pop(f["pod"], None)
            case "PodBound":
                pod_on[f["pod"]] = claim or node_claim.get(f["node"], f["node"])
            case "PodEvicted" | "PodDeleted":
                pod_on.pop(f["pod"], None)
            case _:
                pass
    used: dict[str, int] = {}
    for pod, claim in pod_on.items():
        used[claim] = used.get(claim, 0) + pod_gpus.get(pod, 0)
    rows = []
    for name, row in claims.items():
        launch = row.get("launch") or {}
        rows.append(
            NodeRow(
                name=name,
                instance_type=launch.get("instanceType", "-"),
                capacity_type=launch.get("capacityType", "-"),
                zone=launch.get("zone", "-"),
                age_s=now - row["created"],
                status=row["status"],
                gpus_advertised=row["advertised"],
                gpus_used=used.get(name, 0),
            )
        )
    return rows


def watch_lines(
    events: Sequence[Event],
    *,
    now: float,
    start: dt.datetime = EPOCH,
    width: int | None = None,
) -> list[str]:
    """The watch pane at `now` from the event log: rows, pending pods (named) and cost so far,
    fitted to `width`."""
    summary = summarize(events, end=now)
    return format_watch(
        now,
        watch_rows(events, now=now),
        pending=[p["pod"] for p in summary["pendingAtEnd"]],
        cost=summary["costUSD"],
        start=start,
        width=width,
    )


# ---- -o json ------------------------------------------------------------------------------------
def simulation_document(events: Sequence[Event], summary: Mapping[str, Any]) -> dict[str, Any]:
    """The `-o json`/`-o yaml` document: contract.md's `{"events", "summary"}` with apiVersion
    and kind, like `plan`'s."""
    return {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Simulation",
        "events": [e.to_json() for e in events],
        "summary": dict(summary),
    }
