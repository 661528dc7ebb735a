"""The HTML report of a set of runs (`simulate --runs N --report FILE`): what the page shows of
the runs' distributions, and its charts as Plotly figures (plain dicts, as `report/figures.py`).

- `set_view(outcomes, requested=..., duration=...)`: the `SetView`: the set's summary
  (`sim/runset.set_summary`, the numbers the terminal's table prints), the fan of cumulative
  cost (p5, p50, p95 at each instant of the runs' common grid: `sim/runset.cost_fan`), and
  each run's cost and serving lost for the histograms.
- `set_figures(view, start=...)`: the fan chart (the p5-p95 band filled, the p50 line) over
  the scenario's clock, then a histogram of the runs' cost and one of their serving lost.
- `set_table(summary)`: the set summary's measures as rows (label, p5, p50, p95, mean), the
  cells the terminal prints (`cli/simulate_runs.py`) and the page shows.

Called by `report/page.py` (the page) and `cli/simulate_runs.py` (the view, the table). Pure and
deterministic: the same runs give the same page.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.runtime.clock import EPOCH
from gpucap.sim.costcurve import curve_times
from gpucap.sim.runset import MEASURES, PERCENTILES, RunOutcome, cost_fan, set_summary
from gpucap.sim.timeline import format_duration

__all__ = ["SET_HEADER", "SetView", "band", "set_figures", "set_table", "set_view"]

SET_HEADER = ("ACROSS RUNS", *(f"P{p}" for p in PERCENTILES), "MEAN")

_BAND = "rgba(42, 157, 143, 0.25)"  # the spot colour of figures.py, translucent
_LINE = "#264653"
_BARS = "#2a9d8f"
_HOVERLABEL = {"bgcolor": "#ffffff", "font": {"color": "#1d2731", "size": 12}, "align": "left"}


@dataclass(frozen=True, slots=True)
class SetView:
    """What the set's section of the page shows (see the module docstring)."""

    summary: dict[str, Any]
    times: list[float]  # the grid, seconds since the start
    fan: dict[str, list[float]]  # "p5", "p50", "p95": cumulative dollars at each instant
    seeds: list[int]
    costs: list[float]  # each run's cost, in seed order
    serving_lost: list[float]  # each run's servingLostSeconds, in seed order


def set_view(outcomes: Sequence[RunOutcome], *, requested: int, duration: float) -> SetView:
    done = sorted(outcomes, key=lambda o: o.seed)
    points = len(done[0].cost_curve) if done else 2
    return SetView(
        summary=set_summary(done, requested=requested),
        times=curve_times(duration, points),
        fan=cost_fan(done),
        seeds=[o.seed for o in done],
        costs=[float(o.summary["costUSD"]) for o in done],
        serving_lost=[float(o.summary["servingLostSeconds"]) for o in done],
    )


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    match unit:
        case "dollars":
            return f"${value:,.2f}"
        case "hours":
            return f"{value:,.2f}"
        case "seconds":
            return format_duration(value)
        case "fraction":
            return f"{value:.2%}"
        case _:
            return f"{value:g}" if float(value).is_integer() else f"{value:.1f}"


def band(stats: Mapping[str, Any] | None, unit: str) -> str:
    """A measure over the runs in one cell: `p50 (p5-p95)` (`gpucap sweep`'s table, and its
    report); `-` without a value."""
    if stats is None or stats.get("p50") is None:
        return "-"
    p5, p50, p95 = (_cell(stats[f"p{p}"], unit) for p in PERCENTILES)
    return f"{p50} ({p5}-{p95})"


def set_table(summary: Mapping[str, Any]) -> list[list[str]]:
    """The set summary's measures as rows under `SET_HEADER`: label, p5, p50, p95, mean. The
    terminal prints them (`cli/simulate_runs.py`) and the page shows them: the same cells."""
    rows = []
    for m in MEASURES:
        stats = summary.get(m.key)
        if stats is None:
            continue
        cells = [stats[f"p{p}"] for p in PERCENTILES] + [stats["mean"]]
        rows.append([m.label, *(_cell(v, m.unit) for v in cells)])
    return rows


def _at(start: dt.datetime, t: float) -> str:
    return (start + dt.timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _fan_figure(view: SetView, start: dt.datetime) -> dict[str, Any]:
    x = [_at(start, t) for t in view.times]
    runs = len(view.seeds)
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "p95",
            "x": x,
            "y": view.fan["p95"],
            "line": {"width": 0, "color": _BAND},
            "hovertemplate": "%{x|%H:%M:%S} p95: $%{y:.2f}<extra></extra>",
            "showlegend": False,
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"p5-p95 of {runs} runs",
            "x": x,
            "y": view.fan["p5"],
            "fill": "tonexty",
            "fillcolor": _BAND,
            "line": {"width": 0, "color": _BAND},
            "hovertemplate": "%{x|%H:%M:%S} p5: $%{y:.2f}<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "p50",
            "x": x,
            "y": view.fan["p50"],
            "line": {"width": 2, "color": _LINE},
            "hovertemplate": "%{x|%H:%M:%S} p50: $%{y:.2f}<extra></extra>",
        },
    ]
    layout = {
        "height": 360,
        "margin": {"l": 70, "r": 20, "t": 40, "b": 40},
        "title": {"text": "Cumulative cost over the runs ($): p50, and p5-p95 band"},
        "hovermode": "x unified",
        "hoverlabel": _HOVERLABEL,
        "plot_bgcolor": "#ffffff",
        "xaxis": {"type": "date", "tickformat": "%H:%M", "gridcolor": "#eeeeee"},
        "yaxis": {"rangemode": "tozero", "gridcolor": "#eeeeee", "title": {"text": "$"}},
    }
    return {"data": traces, "layout": layout}


def _histogram(values: list[float], seeds: list[int], *, title: str, axis: str) -> dict[str, Any]:
    trace = {
        "type": "histogram",
        "name": title,
        "x": values,
        "customdata": seeds,
        "marker": {"color": _BARS},
        "hovertemplate": "%{x}: %{y} runs<extra></extra>",
    }
    layout = {
        "height": 300,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "title": {"text": title},
        "bargap": 0.05,
        "hoverlabel": _HOVERLABEL,
        "plot_bgcolor": "#ffffff",
        "xaxis": {"title": {"text": axis}, "gridcolor": "#eeeeee"},
        "yaxis": {"title": {"text": "runs"}, "gridcolor": "#eeeeee"},
    }
    return {"data": [trace], "layout": layout}


def set_figures(view: SetView, *, start: dt.datetime = EPOCH) -> list[dict[str, Any]]:
    """The fan chart of cumulative cost, then the histograms of cost and serving lost."""
    return [
        _fan_figure(view, start),
        _histogram(view.costs, view.seeds, title="Cost of each run", axis="$"),
        _histogram(
            view.serving_lost,
            view.seeds,
            title="Serving lost to evictions in each run (pod-seconds)",
            axis="pod-seconds",
        ),
    ]
