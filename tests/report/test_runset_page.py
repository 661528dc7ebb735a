"""The set's report (`report/runset.py`): figures plotly accepts, a fan whose band holds its
median, and the page's table the same cells as the terminal's."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from gpucap.report.page import SimulationSetSection, render_page
from gpucap.report.runset import SET_HEADER, set_figures, set_table, set_view
from gpucap.sim.runset import RunOutcome


def _outcomes() -> list[RunOutcome]:
    def summary(seed: int) -> dict[str, Any]:
        return {
            "costUSD": float(seed),
            "nodeHours": {"g5.xlarge": {"spot": 1.0}},
            "gpuHours": {"g5.xlarge": {"spot": 1.0}},
            "timeToReady": {"p50": 60.0, "p95": 90.0, "max": 90.0, "count": 1},
            "servingLostSeconds": 10.0 * seed,
            "disruptions": {"Interrupted": seed % 2},
            "pendingAtEnd": [],
        }

    return [RunOutcome(s, summary(s), (0.0, s / 2, float(s))) for s in range(1, 11)]


def test_plotly_accepts_the_sets_figures() -> None:
    figures = set_figures(set_view(_outcomes(), requested=10, duration=3600))
    assert len(figures) == 3
    for figure in figures:
        go.Figure(figure)  # raises on a property plotly does not know


def test_the_fans_band_holds_its_median_at_every_instant() -> None:
    view = set_view(_outcomes(), requested=10, duration=3600)
    assert view.times == [0.0, 1800.0, 3600.0]
    for lo, mid, hi in zip(view.fan["p5"], view.fan["p50"], view.fan["p95"], strict=True):
        assert lo <= mid <= hi
    assert view.fan["p95"][-1] == 10.0


def test_the_page_shows_the_sets_table_and_its_charts() -> None:
    view = set_view(_outcomes(), requested=12, duration=3600)
    html = render_page("runs", [SimulationSetSection("a set", view, subtitle="seeds 1 to 10")])
    assert "runs: seeds 1 to 10" in html  # one section: the title says it
    assert html.count('data-chart="set"') == 3
    assert "of 12 asked for" in html
    for cell in [*SET_HEADER, *set_table(view.summary)[0]]:
        assert f">{cell}<" in html.replace("&#39;", "'")
