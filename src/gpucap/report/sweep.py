"""The HTML report of a sweep (`gpucap sweep SWEEP.yaml --report FILE`) and the cells of its
table.

- `sweep_rows(axes, results, measure)`: the table, its header first: per variant the axes' values,
  then cost, the cost floor (`sim/costfloor.py`, with `--cost-floor`), time to ready (a run's p95),
  serving lost, interruptions and disruptions as `p50 (p5-p95)` over its runs
  (`report/runset.band`), and `*` on the Pareto front. The terminal prints these cells
  (`cli/sweep.py`) and the page shows them.
- `sweep_section(...)`: the page's section (`SweepSection`, rendered by `report/page.py`): the
  table, the sentences the terminal prints under it, and two figures (Plotly dicts, as
  `report/figures.py`): the Pareto scatter of p50 cost vs p50 serving lost (p5-p95 whiskers,
  the front joined by a line, hover naming the variant) and each variant's cost over its runs
  (a box per variant, every run a point, hover naming its seed).

Called by `cli/sweep.py` and `report/page.py`. Pure and deterministic: the same results give
the same page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucap.report.runset import band
from gpucap.sim.sweep import VariantResult, show_value

__all__ = ["COLUMNS", "UNITS", "SweepSection", "sweep_figures", "sweep_rows", "sweep_section"]

# The measures a table column shows, with their unit (`report/runset.band`); None: the
# sweep's serving measure (`sim/sweep.serving_measure`).
COLUMNS: tuple[tuple[str, str | None, str], ...] = (
    ("COST", "costUSD", "dollars"),
    ("COST FLOOR", "costFloorUSD", "dollars"),
    ("TIME TO READY (P95)", "timeToReadyP95Seconds", "seconds"),
    ("SERVING LOST", None, ""),
    ("INTERRUPTIONS", "interruptions", "count"),
    ("DISRUPTIONS", "disruptions", "count"),
)
UNITS = {"servingLostFraction": "fraction", "servingLostSeconds": "seconds"}
_AXIS_TITLE = {
    "servingLostFraction": "serving lost (share of the HPA's replica-time), p50",
    "servingLostSeconds": "serving lost (pod-seconds evicted), p50",
}
_FRONT = "#e76f51"
_OTHER = "#2a9d8f"
_HOVERLABEL = {"bgcolor": "#ffffff", "font": {"color": "#1d2731", "size": 12}, "align": "left"}


@dataclass(frozen=True, slots=True)
class SweepSection:
    """The sweep's part of the page: title, subtitle (the terminal's header), sentences, the
    table (`header`, `rows`) and the figures."""

    title: str
    header: list[str]
    rows: list[list[str]]
    figures: list[dict[str, Any]]
    sentences: Sequence[str] = ()
    subtitle: str = ""
    front: list[bool] = field(default_factory=list)


def sweep_rows(
    axes: Sequence[str], results: Sequence[VariantResult], measure: str
) -> list[list[str]]:
    """The table's rows, its header first (see the module docstring). The cost floor's column
    only when the runs recorded it (`--cost-floor`)."""
    floor = any("costFloorUSD" in r.summary for r in results)
    columns = [c for c in COLUMNS if floor or c[1] != "costFloorUSD"]
    head = [*(a.upper() for a in axes), *(c[0] for c in columns), "FRONT"]
    rows = [head]
    for r in results:
        given = dict(r.variant.values)
        cells = [show_value(given[a]) if a in given else "as written" for a in axes]
        for _, key, unit in columns:
            k, u = (measure, UNITS[measure]) if key is None else (key, unit)
            cells.append(band(r.summary.get(k), u) if r.summary["runs"] else "-")
        cells.append("*" if r.pareto else "")
        rows.append(cells)
    return rows


def _p(summary: Mapping[str, Any], key: str, p: int) -> float | None:
    value = (summary.get(key) or {}).get(f"p{p}")
    return None if value is None else float(value)


def _scale(measure: str) -> float:
    return 100.0 if measure == "servingLostFraction" else 1.0


def _pareto_figure(results: Sequence[VariantResult], measure: str) -> dict[str, Any]:
    scale = _scale(measure)
    shown = [r for r in results if _p(r.summary, "costUSD", 50) is not None]
    unit = "%" if measure == "servingLostFraction" else " s"
    traces: list[dict[str, Any]] = []
    for on_front in (False, True):
        group = [r for r in shown if r.pareto == on_front]
        if not group:
            continue
        x = [_p(r.summary, "costUSD", 50) for r in group]
        y = [(_p(r.summary, measure, 50) or 0.0) * scale for r in group]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "on the Pareto front" if on_front else "dominated",
                "x": x,
                "y": y,
                "text": [r.variant.name for r in group],
                "marker": {"size": 11, "color": _FRONT if on_front else _OTHER},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        (_p(r.summary, "costUSD", 95) or 0) - (v or 0)
                        for r, v in zip(group, x, strict=True)
                    ],
                    "arrayminus": [
                        (v or 0) - (_p(r.summary, "costUSD", 5) or 0)
                        for r, v in zip(group, x, strict=True)
                    ],
                    "color": "#bbbbbb",
                },
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        (_p(r.summary, measure, 95) or 0) * scale - v
                        for r, v in zip(group, y, strict=True)
                    ],
                    "arrayminus": [
                        v - (_p(r.summary, measure, 5) or 0) * scale
                        for r, v in zip(group, y, strict=True)
                    ],
                    "color": "#bbbbbb",
                },
                "hovertemplate": "%{text}<br>cost p50 $%{x:.2f}<br>serving lost p50 %{y:.3g}"
                + unit
                + "<extra></extra>",
            }
        )
    front = sorted(
        (x, y, r.variant.name)
        for r in shown
        if r.pareto
        for x, y in [(_p(r.summary, "costUSD", 50), (_p(r.summary, measure, 50) or 0.0) * scale)]
    )
    if len(front) > 1:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "front",
                "x": [f[0] for f in front],
                "y": [f[1] for f in front],
                "line": {"color": _FRONT, "width": 1, "dash": "dot"},
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
    layout = {
        "height": 420,
        "margin": {"l": 70, "r": 20, "t": 40, "b": 50},
        "title": {"text": "Cost vs serving lost per variant: p50, whiskers p5-p95"},
        "hovermode": "closest",
        "hoverlabel": _HOVERLABEL,
        "plot_bgcolor": "#ffffff",
        "xaxis": {"title": {"text": "cost, p50 ($)"}, "gridcolor": "#eeeeee"},
        "yaxis": {
            "title": {"text": _AXIS_TITLE[measure] + (" (%)" if scale != 1 else "")},
            "rangemode": "tozero",
            "gridcolor": "#eeeeee",
        },
    }
    return {"data": traces, "layout": layout}


def _cost_figure(results: Sequence[VariantResult]) -> dict[str, Any]:
    traces = [
        {
            "type": "box",
            "name": r.variant.name,
            "y": [float(o.summary["costUSD"]) for o in r.outcomes],
            "customdata": [o.seed for o in r.outcomes],
            "boxpoints": "all",
            "jitter": 0.3,
            "pointpos": 0,
            "marker": {"color": _FRONT if r.pareto else _OTHER, "size": 5},
            "line": {"color": _FRONT if r.pareto else _OTHER},
            "hovertemplate": r.variant.name + "<br>seed %{customdata}: $%{y:.2f}<extra></extra>",
        }
        for r in results
        if r.outcomes
    ]
    layout = {
        "height": 420,
        "margin": {"l": 70, "r": 20, "t": 40, "b": 120},
        "title": {"text": "Cost of each run, per variant"},
        "showlegend": False,
        "hoverlabel": _HOVERLABEL,
        "plot_bgcolor": "#ffffff",
        "xaxis": {"automargin": True},
        "yaxis": {"title": {"text": "$"}, "rangemode": "tozero", "gridcolor": "#eeeeee"},
    }
    return {"data": traces, "layout": layout}


def sweep_figures(results: Sequence[VariantResult], measure: str) -> list[dict[str, Any]]:
    """The Pareto scatter, then each variant's cost distribution."""
    return [_pareto_figure(results, measure), _cost_figure(results)]


def sweep_section(
    title: str,
    results: Sequence[VariantResult],
    *,
    axes: Sequence[str],
    measure: str,
    subtitle: str,
    sentences: Sequence[str],
) -> SweepSection:
    """The sweep's section of the page (see the module docstring)."""
    rows = sweep_rows(axes, results, measure)
    return SweepSection(
        title,
        header=rows[0],
        rows=rows[1:],
        figures=sweep_figures(results, measure),
        sentences=tuple(sentences),
        subtitle=subtitle,
        front=[r.pareto for r in results],
    )
