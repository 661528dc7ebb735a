"""The report's charts as Plotly figures: plain JSON-ready dicts (`data`, `layout`) that the
page hands to `Plotly.newPlot` (plotly.js, inlined by `report/page.py`).

- `simulation_figure(view, start=...)`: one figure, four panels on one shared time axis (zoom one,
  all follow): the NodeClaims as horizontal bars, one row each, coloured by capacity type, a
  segment per phase (lighter while launching, hatched while registered without GPUs, solid once
  initialized, cross-hatched while draining) with a hover naming the instance type, zone, price,
  AMI, why it was created and why it went away; pods Pending / Bound / Ready; GPUs requested,
  advertised and physical against the NodePools' limits; cumulative cost by capacity type.
- `plan_figure(view)`: each NodeClaim's instance-type options at their cheapest allowed offering's
  price, a dot each on a log $/h axis (a $0.04/h CPU node stays visible beside a $12/h GPU
  node), the launched one marked, the cheaper ones not taken coloured apart.

Figures are dicts rather than `plotly.graph_objects` so the CLI pays no import of the plotly
package for them; `tests/report/` validates them against plotly's schema. Called by
`report/page.py`. Pure and deterministic.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from gpucap.report.plan import PlanView
from gpucap.report.simulation import PHASES, NodeBar, SimulationView
from gpucap.runtime.clock import EPOCH
from gpucap.sim.timeline import clock_time, format_duration

__all__ = [
    "CAPACITY_COLORS",
    "dollars_per_hour",
    "plan_figure",
    "price_ticks",
    "simulation_figure",
    "trace_names",
]

CAPACITY_COLORS = {
    "spot": "#2a9d8f",
    "on-demand": "#e76f51",
    "reserved": "#6a4c93",
    "": "#8d99ae",  # never launched
}
_PHASE_STYLE = {  # opacity, pattern
    "launching": (0.35, ""),
    "registered": (0.6, "/"),
    "initialized": (1.0, ""),
    "draining": (0.6, "x"),
}
_SERIES_COLORS = {
    "pending": "#e9c46a",
    "bound": "#8ab17d",
    "ready": "#264653",
    "requested": "#e76f51",
    "advertised": "#2a9d8f",
    "physical": "#264653",
    "limit": "#9b2226",
}
# Hover labels dark on white, left-aligned: readable over any bar colour.
_HOVERLABEL = {"bgcolor": "#ffffff", "font": {"color": "#1d2731", "size": 12}, "align": "left"}
_ROW_PX = 26
_SHORTEST_BAR = 0.004  # of the run: the narrowest bar drawn
_PANEL_PX = 170
_GAP_PX = 56


def _at(start: dt.datetime, t: float) -> str:
    """Plotly's date string for `start` + t seconds (milliseconds kept)."""
    return (start + dt.timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _row_label(bar: NodeBar) -> str:
    return f"{bar.name} · {bar.instance_type}" if bar.instance_type else bar.name


def _hover(bar: NodeBar, phase: str, start: float, end: float, t0: dt.datetime) -> str:
    price = f"${bar.price_per_hour:.4f}/h" if bar.price_per_hour is not None else "-"
    lines = [
        f"<b>{bar.name}</b> ({bar.node_pool})",
        f"type: {bar.instance_type or '-'}",
        f"zone: {bar.zone or '-'}",
        f"capacity: {bar.capacity_type or '-'}",
        f"price: {price}",
        f"AMI: {bar.ami or '-'}",
        f"created: {bar.why_created}",
        f"removed: {bar.why_removed or 'still running at the end'}",
        f"{phase}: {clock_time(start, t0)} - {clock_time(end, t0)} "
        f"({format_duration(end - start)})",
        f"cost: ${bar.cost:.2f}",
    ]
    return "<br>".join(_html(line) if i else line for i, line in enumerate(lines))


def _html(text: str) -> str:
    """Plotly renders hover text as a small HTML subset: names from manifests are escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _node_traces(view: SimulationView, t0: dt.datetime) -> list[dict[str, Any]]:
    traces = []
    shortest = view.end * _SHORTEST_BAR
    known = list(CAPACITY_COLORS)
    caps = {b.capacity_type or "" for b in view.nodes}
    for cap in sorted(caps, key=lambda c: (known.index(c) if c in known else len(known), c)):
        for phase in PHASES:
            ys, xs, bases, texts = [], [], [], []
            for bar in view.nodes:
                if (bar.capacity_type or "") != cap:
                    continue
                for p in bar.phases:
                    if p.name != phase:
                        continue
                    ys.append(_row_label(bar))
                    # An instant (a launch that failed at once) still gets a bar to hover on.
                    xs.append(round(max(p.end - p.start, shortest) * 1000))
                    bases.append(_at(t0, p.start))
                    texts.append(_hover(bar, phase, p.start, p.end, t0))
            if not ys:
                continue
            opacity, pattern = _PHASE_STYLE[phase]
            color = CAPACITY_COLORS.get(cap, "#8d99ae")
            marker: dict[str, Any] = {"color": color, "opacity": opacity, "line": {"width": 0}}
            if pattern:
                marker["pattern"] = {
                    "shape": pattern,
                    "fillmode": "overlay",
                    "fgcolor": "#ffffff",
                    "size": 6,
                }
            traces.append(
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": f"{cap or 'not launched'} · {phase}",
                    "legendgroup": "nodes",
                    "y": ys,
                    "x": xs,
                    "base": bases,
                    "hovertext": texts,
                    "hovertemplate": "%{hovertext}<extra></extra>",
                    "marker": marker,
                    "xaxis": "x",
                    "yaxis": "y",
                    "width": 0.7,
                }
            )
    return traces


def _step(
    name: str, key: str, xs: list[str], ys: list[float], *, axis: str, end: str
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": [*xs, end],
        "y": [*ys, ys[-1] if ys else 0],
        "line": {"shape": "hv", "color": _SERIES_COLORS[key], "width": 2},
        "hovertemplate": f"%{{x|%H:%M:%S}} {name}: %{{y}}<extra></extra>",
        "xaxis": "x",
        "yaxis": axis,
    }


def simulation_figure(view: SimulationView, *, start: dt.datetime = EPOCH) -> dict[str, Any]:
    """The run's figure (see the module docstring)."""
    t_end = _at(start, view.end)
    traces = _node_traces(view, start)
    pod_x = [_at(start, t) for t, *_ in view.pods]
    pod_labels = {
        "pending": "pods Pending",
        "bound": "pods Bound (not Ready)",
        "ready": "pods Ready",
    }
    for i, key in enumerate(pod_labels, 1):
        ys = [row[i] for row in view.pods]
        traces.append(_step(pod_labels[key], key, pod_x, ys, axis="y2", end=t_end))
    gpu_x = [_at(start, t) for t, *_ in view.gpus]
    for i, key in enumerate(("requested", "advertised", "physical"), 1):
        label = {
            "requested": "GPUs requested by pods",
            "advertised": "GPUs advertised by nodes",
            "physical": "physical GPUs launched",
        }[key]
        ys = [row[i] for row in view.gpus]
        traces.append(_step(label, key, gpu_x, ys, axis="y3", end=t_end))
    for label, limit in view.limits.items():
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": [_at(start, 0.0), t_end],
                "y": [limit, limit],
                "line": {"color": _SERIES_COLORS["limit"], "dash": "dash", "width": 2},
                "hovertemplate": f"{_html(label)}: %{{y}}<extra></extra>",
                "xaxis": "x",
                "yaxis": "y3",
            }
        )
    for cap, series in view.cost.items():
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"cost, {cap}",
                "x": [_at(start, t) for t, _ in series],
                "y": [d for _, d in series],
                "line": {"color": CAPACITY_COLORS.get(cap, "#8d99ae"), "width": 2},
                "hovertemplate": f"%{{x|%H:%M:%S}} {cap}: $%{{y:.2f}}<extra></extra>",
                "xaxis": "x",
                "yaxis": "y4",
            }
        )
    rows = max(1, len(view.nodes))
    heights = [rows * _ROW_PX + 20, _PANEL_PX, _PANEL_PX, _PANEL_PX]
    total = sum(heights) + _GAP_PX * len(heights)
    domains, top = [], total
    for h in heights:
        top -= _GAP_PX
        domains.append([round((top - h) / total, 4), round(top / total, 4)])
        top -= h
    titles = [
        "NodeClaims (one row each; colour: capacity type; shade: phase)",
        "Pods",
        "GPUs: requested, advertised, physical; NodePool limits",
        "Cumulative cost ($) by capacity type",
    ]
    annotations = [
        {
            "text": f"<b>{title}</b>",
            "xref": "paper",
            "yref": "paper",
            "x": 0,
            "y": d[1],
            "xanchor": "left",
            "yanchor": "bottom",
            "showarrow": False,
            "font": {"size": 13},
        }
        for title, d in zip(titles, domains, strict=True)
    ]
    axis = {"zeroline": False, "gridcolor": "#eeeeee"}
    layout: dict[str, Any] = {
        "height": total,
        "margin": {"l": 190, "r": 20, "t": 10, "b": 40},
        "barmode": "overlay",
        "hovermode": "closest",
        "hoverlabel": _HOVERLABEL,
        "showlegend": True,
        "legend": {"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 11}},
        "plot_bgcolor": "#ffffff",
        "annotations": annotations,
        "xaxis": {
            "type": "date",
            "range": [_at(start, 0.0), t_end],
            "anchor": "y4",
            "tickformat": "%H:%M",
            "showspikes": True,
            "spikemode": "across",
            "spikethickness": 1,
            "gridcolor": "#eeeeee",
        },
        "yaxis": {
            **axis,
            "domain": domains[0],
            "type": "category",
            "autorange": "reversed",
            "categoryorder": "array",
            "categoryarray": [_row_label(b) for b in view.nodes],
            "automargin": True,
        },
        "yaxis2": {**axis, "domain": domains[1], "rangemode": "tozero", "title": {"text": "pods"}},
        "yaxis3": {**axis, "domain": domains[2], "rangemode": "tozero", "title": {"text": "GPUs"}},
        "yaxis4": {**axis, "domain": domains[3], "rangemode": "tozero", "title": {"text": "$"}},
    }
    return {"data": traces, "layout": layout}


def trace_names(figure: dict[str, Any]) -> list[str]:
    """The names of a figure's traces, in order (what its legend lists)."""
    return [str(t.get("name", "")) for t in figure["data"]]


def plan_figure(view: PlanView) -> dict[str, Any]:
    """Each NodeClaim's options by price (see the module docstring): one dot per option on a
    logarithmic $/h axis. Prices in one plan span three orders of magnitude (a $0.04/h CPU node
    beside a $12.59/h g6e.48xlarge); on a linear axis the cheap ones collapse onto zero, so the
    axis is log, its ticks at 1-2-5 steps labelled in $/h, and every option is a dot of the same
    size that stays visible and hoverable. An option without a price has no place on a price
    axis: it is left off the chart and listed in the tables under it."""
    groups = {"launched": [], "cheaper, not taken": [], "dearer": []}  # type: dict[str, list[Any]]
    colors = {"launched": "#2a9d8f", "cheaper, not taken": "#e9c46a", "dearer": "#adb5bd"}
    order: list[str] = []
    unpriced = 0
    for claim in view.claims:
        for option in claim.options:
            label = f"{claim.name} · {option.instance_type}"
            order.append(label)
            if option.price is None or option.price <= 0:
                unpriced += 1
                continue
            hover = [
                f"<b>{_html(claim.name)}</b>: {_html(option.instance_type)}",
                _html(f"cheapest allowed offering: {option.offering}"),
                f"${option.price:.4f}/h",
                _html(option.why),
            ]
            groups[option.status].append((label, option.price, "<br>".join(hover)))
    traces = []
    for status, rows in groups.items():
        if not rows:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": status,
                "y": [r[0] for r in rows],
                "x": [r[1] for r in rows],
                "hovertext": [r[2] for r in rows],
                "hovertemplate": "%{hovertext}<extra></extra>",
                "marker": {
                    "color": colors[status],
                    "size": 14 if status == "launched" else 11,
                    "symbol": "diamond" if status == "launched" else "circle",
                    "line": {"color": "#1d2731", "width": 1},
                },
            }
        )
    prices = [r[1] for rows in groups.values() for r in rows]
    title = "$ per hour, log scale (equal distances are equal price ratios)"
    if unpriced:
        title += f"; {unpriced} option(s) without a price are not drawn"
    xaxis: dict[str, Any] = {"title": {"text": title}, "type": "log", "showgrid": True}
    if prices:
        lo, hi = min(prices), max(prices)
        ticks = price_ticks(lo, hi)
        xaxis.update(
            tickmode="array",
            tickvals=ticks,
            ticktext=[dollars_per_hour(t) for t in ticks],
            # log axes take their range in powers of ten; a margin either side keeps the
            # cheapest and the dearest dots whole
            range=[math.log10(lo) - 0.15, math.log10(hi) + 0.15],
        )
    layout = {
        "height": max(160, 24 * len(order) + 80),
        "margin": {"l": 220, "r": 20, "t": 30, "b": 50},
        "hoverlabel": _HOVERLABEL,
        "xaxis": xaxis,
        "yaxis": {
            "type": "category",
            "autorange": "reversed",
            "categoryorder": "array",
            "categoryarray": order,
            "automargin": True,
            "showgrid": True,
        },
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        "plot_bgcolor": "#ffffff",
    }
    return {"data": traces, "layout": layout}


def price_ticks(lo: float, hi: float) -> list[float]:
    """The price axis's ticks: 1, 2 and 5 times each power of ten from just below `lo` to just
    above `hi` (both > 0)."""
    if not 0 < lo <= hi:
        raise ValueError("price_ticks needs 0 < lo <= hi")
    ticks: list[float] = []
    exponent = math.floor(math.log10(lo)) - 1
    while True:
        for step in (1, 2, 5):
            tick = round(step * 10.0**exponent, 10)
            if tick < lo / 2.5:
                continue
            ticks.append(tick)
            if tick >= hi:
                return ticks
        exponent += 1


def dollars_per_hour(price: float) -> str:
    """A tick's label: `$0.05/h`, `$0.002/h`, `$20/h`."""
    if price >= 1:
        return f"${price:,.0f}/h"
    decimals = max(2, -math.floor(math.log10(price)))
    return f"${price:.{decimals}f}/h"
