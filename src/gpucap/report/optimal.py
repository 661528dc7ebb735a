"""What the report shows of `plan --optimal`: Karpenter's fleet and the optimum side by side
(nodes grouped by NodePool, instance type, zone and capacity type, with their count and price),
the four costs (Karpenter's, the optimum or best found with its proven gap, the floor, and
Karpenter's excess over each), the notes on what the model relaxes, and the changes whose
re-plan saves.

`optimal_view(report)` reads the `OptimalReport` of `operator/changes.py`; nothing is decided
here. Rendered by `report/page.py` (`OptimalSection`); called by `gpucap plan --optimal
--report`. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucap.controllers.provisioning.optimal import FleetNode
from gpucap.operator.changes import OptimalReport

__all__ = ["FleetRow", "OptimalSection", "OptimalView", "optimal_view"]


@dataclass(frozen=True, slots=True)
class FleetRow:
    """Nodes of one kind in a fleet: how many, their price each and together, their pods."""

    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    count: int
    price: float
    total: float
    pods: int


@dataclass(frozen=True, slots=True)
class OptimalView:
    karpenter: tuple[FleetRow, ...]
    optimum: tuple[FleetRow, ...]
    karpenter_cost: float
    optimum_cost: float
    floor: float
    gap: float
    status: str
    source: str
    pods: int
    notes: tuple[str, ...]
    changes: tuple[str, ...]

    @property
    def excess_over_optimum(self) -> float:
        return self.karpenter_cost - self.optimum_cost

    @property
    def excess_over_floor(self) -> float:
        return self.karpenter_cost - self.floor


@dataclass(frozen=True, slots=True)
class OptimalSection:
    title: str
    view: OptimalView
    sentences: Sequence[str] = ()


def _rows(nodes: Sequence[FleetNode]) -> tuple[FleetRow, ...]:
    groups: dict[tuple[str, str, str, str, float], list[FleetNode]] = {}
    for n in nodes:
        key = (n.nodepool, n.instance_type, n.zone, n.capacity_type, n.price)
        groups.setdefault(key, []).append(n)
    return tuple(
        FleetRow(
            pool,
            it,
            zone,
            ct,
            len(ns),
            price,
            round(price * len(ns), 6),
            sum(len(n.pods) for n in ns),
        )
        for (pool, it, zone, ct, price), ns in sorted(
            groups.items(), key=lambda kv: (-kv[0][4] * len(kv[1]), kv[0])
        )
    )


def optimal_view(report: OptimalReport) -> OptimalView:
    """The section's view of `report` (see the module docstring)."""
    f = report.fleet
    return OptimalView(
        karpenter=_rows(f.karpenter),
        optimum=_rows(f.nodes),
        karpenter_cost=f.karpenter_cost,
        optimum_cost=f.cost,
        floor=f.floor,
        gap=f.gap,
        status=f.status,
        source=f.source,
        pods=f.pods,
        notes=tuple(f.notes),
        changes=tuple(c.line() for c in report.changes),
    )
