"""`plan --optimal --report`: both fleets side by side after the plan's section."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.controllers.provisioning.optimal import optimise
from gpucap.operator.changes import OptimalReport
from gpucap.report.optimal import OptimalSection, optimal_view
from gpucap.report.page import render_page
from tests.builders import nodeclass, to_yaml
from tests.optimal.instances import gpu_deployment, gpu_pool, planned


def test_the_view_groups_each_fleet_by_kind_of_node() -> None:
    _, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    view = optimal_view(OptimalReport(optimise(made), []))
    assert [(r.instance_type, r.count, r.pods) for r in view.karpenter] == [("g5.12xlarge", 1, 2)]
    assert [(r.instance_type, r.count, r.pods) for r in view.optimum] == [("g5.xlarge", 2, 2)]
    assert view.excess_over_optimum == view.karpenter_cost - view.optimum_cost > 0


def test_the_page_draws_both_fleets_and_the_costs() -> None:
    _, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    html = render_page(
        "t", [OptimalSection("Optimal fleet", optimal_view(OptimalReport(optimise(made), [])))]
    )
    assert html.count("data-fleet=") == 2
    assert "cost floor (LP relaxation)" in html
    assert "g5.12xlarge" in html
    assert "g5.xlarge" in html


def test_plan_optimal_report_writes_the_page(tmp_path: Path) -> None:
    f = tmp_path / "two.yaml"
    f.write_text(to_yaml(gpu_pool(), nodeclass(), gpu_deployment("batch", 2)))
    page = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["plan", str(f), "--optimal", "--report", str(page)])
    assert result.exit_code == 0, result.stderr
    html = page.read_text()
    assert "Optimal fleet" in html
    assert html.count("data-fleet=") == 2


def test_plan_optimal_explain_report_still_draws_both_fleets(tmp_path: Path) -> None:
    f = tmp_path / "two.yaml"
    f.write_text(to_yaml(gpu_pool(), nodeclass(), gpu_deployment("batch", 2)))
    page = tmp_path / "r.html"
    args = ["plan", str(f), "--optimal", "--report", str(page), "--explain", "batch-0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "Optimal fleet" not in result.stdout  # the terminal gets the pod's story alone
    html = page.read_text()
    assert "Optimal fleet" in html
    assert html.count("data-fleet=") == 2
