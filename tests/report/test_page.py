"""The report's page (`report/page.py`, `report/figures.py`): figures plotly accepts, one figure
row per NodeClaim, nothing that would be fetched when the file is opened, and names from
manifests that cannot break out of the page."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import plotly.graph_objects as go
import pytest

from gpucap.report.figures import plan_figure, simulation_figure, trace_names
from gpucap.report.page import PlanSection, SimulationSection, figure_json, plotly_js, render_page
from gpucap.report.plan import plan_view
from gpucap.report.simulation import gpu_limits, simulation_view
from gpucap.sim.recorder import Recorder
from tests.report.runs import catalog, story, workshop_plan


def sim_view(name: str) -> Any:
    scenario, result = story(name)
    return simulation_view(
        result.events, result.summary, end=result.end, limits=gpu_limits(scenario)
    )


@pytest.fixture(scope="module")
def page() -> str:
    loaded, made = workshop_plan(8)
    return render_page(
        "a report",
        [
            SimulationSection("spot ice", sim_view("spot-ice.yaml")),
            PlanSection("plan", plan_view(made, loaded.objects, catalog())),
        ],
    )


@pytest.mark.parametrize("name", ["underutilized.yaml", "spot-ice.yaml", "timeslicing.yaml"])
def test_plotly_accepts_the_simulation_figure(name: str) -> None:
    go.Figure(simulation_figure(sim_view(name)))  # raises on a property plotly does not know


def test_plotly_accepts_the_plan_figure() -> None:
    loaded, made = workshop_plan(8)
    go.Figure(plan_figure(plan_view(made, loaded.objects, catalog())))


def test_the_node_panel_has_one_row_per_nodeclaim_in_creation_order() -> None:
    view = sim_view("spot-ice.yaml")
    fig = simulation_figure(view)
    rows = fig["layout"]["yaxis"]["categoryarray"]
    assert len(rows) == len(view.nodes) == 4
    assert [r.split(" · ")[0] for r in rows] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]


def test_the_figure_has_a_series_for_pods_gpus_limits_and_each_capacity_types_cost() -> None:
    names = trace_names(simulation_figure(sim_view("timeslicing.yaml")))
    for name in (
        "pods Pending",
        "pods Bound (not Ready)",
        "pods Ready",
        "GPUs requested by pods",
        "GPUs advertised by nodes",
        "physical GPUs launched",
        "NodePool gpu limit (nvidia.com/gpu)",
        "cost, spot",
    ):
        assert name in names


def test_bars_are_coloured_by_capacity_type_and_shaded_by_phase() -> None:
    names = trace_names(simulation_figure(sim_view("spot-ice.yaml")))
    bars = [n for n in names if " · " in n]
    assert "spot · initialized" in bars
    assert "on-demand · initialized" in bars
    assert "not launched · launching" in bars  # gpu-2, whose launch found no spot


def test_the_page_fetches_nothing_when_opened(page: str) -> None:
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)\s*=", page, re.I)
    assert "@import" not in page
    assert plotly_js() in page  # plotly.js inlined, whole


def test_a_name_that_closes_a_script_is_escaped_in_the_figure_json() -> None:
    text = figure_json({"data": [{"name": "</script><script>alert(1)</script>"}]})
    assert "</script" not in text
    assert json.loads(text)["data"][0]["name"] == "</script><script>alert(1)</script>"


def test_a_hostile_pod_name_stays_text_in_the_event_table() -> None:
    rec = Recorder()
    rec.emit(0, "PodCreated", pod="default/<img src=x onerror=alert(1)>", gpus={})
    html = render_page(
        "t", [SimulationSection("s", simulation_view(rec.events, {**_empty_summary()}, end=1))]
    )
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def _empty_summary() -> dict[str, Any]:
    from gpucap.sim.summary import summarize  # noqa: PLC0415

    return summarize([], end=1)


def test_the_template_ships_inside_the_package() -> None:
    template = resources.files("gpucap.report").joinpath("templates", "report.html.j2")
    assert template.is_file()
