"""`gpucap plan --optimal`'s output: the optimum's fleet, the four costs and what to change, as
lines for a terminal (`optimal_lines`) and as the plan document's `optimal` section
(`optimal_document`, README "Cost floor"). Called by `cli/plan.py`; formats only.
"""

from __future__ import annotations

from typing import Any

import typer

from gpucap.apis.duration import DurationError, parse_go_duration
from gpucap.apis.reading import os_reason
from gpucap.apis.serde import Manifests
from gpucap.cli.errors import BadInputError
from gpucap.cli.table import format_table
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.controllers.provisioning.loop import Plan
from gpucap.controllers.provisioning.optimal import FleetNode
from gpucap.operator.changes import OptimalReport

__all__ = [
    "check_optimal_time",
    "optimal_document",
    "optimal_lines",
    "optimal_time",
    "write_optimal_report",
]


def optimal_time(value: str) -> float:
    """`--optimal-time`: a Go duration (`10s`, `1m`, `500ms`) or plain seconds, positive."""
    try:
        seconds = float(value) if value.replace(".", "", 1).isdigit() else parse_go_duration(value)
    except (DurationError, ValueError):
        raise typer.BadParameter(f"{value!r} is not a duration such as 10s") from None
    if seconds <= 0:
        raise typer.BadParameter(f"{value!r} must be more than 0")
    return seconds


def check_optimal_time(value: str) -> str:
    """The option's callback: refuses a bad `--optimal-time` before anything is read."""
    optimal_time(value)
    return value


def _node(n: FleetNode) -> dict[str, Any]:
    return {
        "nodePool": n.nodepool,
        "instanceType": n.instance_type,
        "zone": n.zone,
        "capacityType": n.capacity_type,
        "pricePerHour": n.price,
        "pods": list(n.pods),
    }


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def optimal_document(rep: OptimalReport) -> dict[str, Any]:
    """The `optimal` section of `plan -o json|yaml --optimal`."""
    f = rep.fleet
    return {
        "pods": f.pods,
        "status": f.status,
        "source": f.source,
        "exact": f.exact,
        "karpenterPricePerHour": f.karpenter_cost,
        "optimumPricePerHour": f.cost,
        "floorPricePerHour": f.floor,
        "lowerBoundPricePerHour": f.bound,
        "gap": round(f.gap, 6),
        "excessOverOptimum": round(f.excess(f.cost), 6),
        "excessOverOptimumPercent": _pct(f.excess(f.cost), f.cost),
        "excessOverFloor": round(f.excess(f.floor), 6),
        "excessOverFloorPercent": _pct(f.excess(f.floor), f.floor),
        "nodes": [_node(n) for n in f.nodes],
        "notes": list(f.notes),
        "changes": [
            {
                "object": c.object,
                "field": c.field,
                "value": c.value,
                "description": c.what,
                "pricePerHour": c.cost,
                "savingPerHour": round(c.saving, 6),
                "savingPercent": round(c.percent, 2),
            }
            for c in rep.changes
        ],
    }


def optimal_lines(rep: OptimalReport) -> list[str]:
    """The same for a terminal, printed after the plan."""
    f = rep.fleet
    lines = ["", f"OPTIMAL FLEET ({f.pods} pod(s) Karpenter placed on new nodes)"]
    if f.nodes and f.source == "optimum":
        rows = [["NODEPOOL", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/HOUR", "PODS"]]
        rows += [
            [
                n.nodepool,
                n.instance_type,
                n.zone,
                n.capacity_type,
                # A reserved node's cost is the reservation's (as plan's $/HOUR says).
                "reserved" if n.capacity_type == "reserved" else f"{n.price:.4f}",
                ", ".join(n.pods),
            ]
            for n in f.nodes
        ]
        lines += format_table(rows)
    elif f.source == "karpenter" and f.pods:
        lines.append("(no cheaper fleet found: Karpenter's is the best known)")
    proven = (
        "proven optimal"
        if f.status == "optimal" and f.gap < 1e-3
        else f"best found, within {100 * f.gap:.1f} % of the best possible ({f.status})"
    )
    lines.append(f"Karpenter's plan: ${f.karpenter_cost:.4f}/hour")
    lines.append(f"optimum:          ${f.cost:.4f}/hour ({proven})")
    lines.append(f"cost floor:       ${f.floor:.4f}/hour (LP relaxation: no fleet costs less)")
    over_opt, over_floor = f.excess(f.cost), f.excess(f.floor)
    lines.append(
        f"Karpenter's excess: ${over_opt:.4f}/hour over the optimum "
        f"(+{_pct(over_opt, f.cost):.0f} %), ${over_floor:.4f}/hour over the floor "
        f"(+{_pct(over_floor, f.floor):.0f} %)"
    )
    lines += [f"note: {n}" for n in f.notes]
    if rep.changes:
        lines.append("")
        lines.append("WHAT TO CHANGE (each re-planned with Karpenter's algorithm):")
        lines += [f"  {c.line()}" for c in rep.changes]
    return lines


def write_optimal_report(
    path: str,
    made: Plan,
    manifests: Manifests,
    catalog: Catalog,
    rep: OptimalReport,
    *,
    title: str,
) -> None:
    """`plan --optimal --report`: the plan's section, then both fleets side by side."""
    from gpucap.report.optimal import OptimalSection, optimal_view  # noqa: PLC0415 - --report
    from gpucap.report.page import PlanSection, write_report  # noqa: PLC0415
    from gpucap.report.plan import plan_view  # noqa: PLC0415

    plan_section = PlanSection("Plan", plan_view(made, manifests, catalog))
    optimal_section = OptimalSection("Optimal fleet", optimal_view(rep))
    try:
        write_report(path, title, [plan_section, optimal_section])
    except OSError as e:
        raise BadInputError(f"--report {path}: cannot write: {os_reason(e)}") from None
