"""The optimum as a real fleet: the MILP's node counts decoded into nodes, each pod on one.

`milp.py` counts capacity per bin, summed over its nodes; that is a relaxation of packing node
by node, so its solution is decoded here: per bin, its pods first-fit by node (largest first,
against each node's capacity and hostname caps) on as many nodes as the MILP launched, opening
another node of the same bin only when a pod fits none (`OptimalFleet.exact` says whether that
happened). `check` verifies any fleet against the instance (every pod once, on a bin its class
may use, within capacity, hostname caps and NodePool limits); a decoded fleet that fails it or
costs more than Karpenter's is not reported as the optimum: Karpenter's own fleet is the best
known then (`source`). Called by `gpucap plan --optimal` (through `operator/changes.py`), the
report and the bench.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpucap.controllers.provisioning.loop import Plan
from gpucap.controllers.provisioning.optimal.instance import (
    Bin,
    FleetNode,
    Instance,
    build_instance,
)
from gpucap.controllers.provisioning.optimal.milp import MilpSolution, solve

__all__ = ["DEFAULT_TIME_LIMIT", "FleetNode", "OptimalFleet", "check", "decode", "optimise"]

# `--optimal-time`'s default, seconds.
DEFAULT_TIME_LIMIT = 10.0
_EPS = 1e-9


@dataclass(slots=True)
class OptimalFleet:
    """`plan --optimal`'s answer for the pods Karpenter placed on new nodes.

    `karpenter_cost` is Karpenter's fleet ($/hour), `cost` the reported fleet's (`nodes`),
    `floor` the LP relaxation's value and `bound` the best proven lower bound (the MILP's dual
    bound, never below the floor): no fleet honouring the model costs less. `status` is the
    solver's ("optimal", "time limit", "infeasible", "no pods"); `source` says whether `nodes`
    is the MILP's decoded fleet ("optimum") or Karpenter's, kept as the best known ("karpenter");
    `exact` whether the decode needed no node beyond the MILP's counts."""

    status: str
    source: str
    nodes: list[FleetNode]
    cost: float
    floor: float
    bound: float
    karpenter_cost: float
    karpenter: list[FleetNode]
    pods: int
    exact: bool = True
    columns: int = 0
    rows: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def gap(self) -> float:
        """The proven gap of `cost`: how far above the lower bound it may be (0 when proven)."""
        return (self.cost - self.bound) / self.cost if self.cost > _EPS else 0.0

    def excess(self, over: float) -> float:
        """Karpenter's excess over `over` ($/hour)."""
        return self.karpenter_cost - over


def optimise(made: Plan, time_limit: float = DEFAULT_TIME_LIMIT) -> OptimalFleet:
    """The optimum, the floor and Karpenter's cost for `made` (see the module docstring)."""
    inst = build_instance(made)
    sol = solve(inst, time_limit)
    return fleet_of(inst, sol)


def fleet_of(inst: Instance, sol: MilpSolution) -> OptimalFleet:
    """The reported fleet of a solved instance (module docstring)."""
    notes = list(inst.notes)
    base = OptimalFleet(
        status=sol.status,
        source="karpenter",
        nodes=list(inst.karpenter),
        cost=inst.karpenter_cost,
        floor=round(sol.floor, 6),
        bound=round(min(sol.bound, inst.karpenter_cost), 6),
        karpenter_cost=inst.karpenter_cost,
        karpenter=list(inst.karpenter),
        pods=inst.pods,
        columns=sol.columns,
        rows=sol.rows,
        notes=notes,
    )
    if sol.objective is None:
        if sol.status != "no pods":
            notes.append(f"the solver found no fleet ({sol.status}); Karpenter's is the best known")
        return base
    nodes, exact = decode(inst, sol)
    cost = round(sum(n.price for n in nodes), 6)
    problems = check(inst, nodes)
    if problems or cost > inst.karpenter_cost + _EPS:
        why = problems[0] if problems else f"it costs ${cost:.4f}/h"
        notes.append(f"the decoded fleet is not used ({why}); Karpenter's is the best known")
        base.exact = exact
        return base
    base.source, base.nodes, base.cost, base.exact = "optimum", nodes, cost, exact
    if not exact:
        notes.append(
            "the decoded fleet needed nodes beyond the MILP's counts (its per-bin capacity "
            "sums are a relaxation of packing node by node)"
        )
    return base


@dataclass(slots=True)
class _Node:
    """A node being filled by `decode`: its bin, what its pods use, its hostname counts."""

    bin: int
    load: dict[str, int] = field(default_factory=dict)
    groups: dict[int, int] = field(default_factory=dict)
    pods: list[str] = field(default_factory=list)

    def takes(self, inst: Instance, i: int) -> bool:
        c, node = inst.classes[i], inst.bins[self.bin]
        return all(
            self.load.get(k, 0) + v <= node.capacity.get(k, 0) for k, v in c.requests.items()
        ) and all(self.groups.get(g, 0) < inst.group_caps[g] for g in c.groups)

    def add(self, inst: Instance, i: int, key: str) -> None:
        c = inst.classes[i]
        for k, v in c.requests.items():
            self.load[k] = self.load.get(k, 0) + v
        for g in c.groups:
            self.groups[g] = self.groups.get(g, 0) + 1
        self.pods.append(key)


def decode(inst: Instance, sol: MilpSolution) -> tuple[list[FleetNode], bool]:
    """The MILP's solution as nodes, and whether the MILP's node counts sufficed: per bin,
    its pods first-fit on its nodes, largest first; a pod that fits none of them goes, after
    every bin is filled, to the first node (by bin, then launch order) of a bin its class may
    use that takes it, else to a new node of the cheapest such bin within the limits."""
    nodes: list[_Node] = []
    overflow: list[tuple[float, str, int]] = []
    taken = [0] * len(inst.classes)
    for b in sorted(sol.nodes, key=lambda b: inst.bins[b].label):
        bin_nodes = [_Node(b) for _ in range(sol.nodes[b])]
        nodes.extend(bin_nodes)
        items: list[tuple[float, str, int]] = []
        for (i, bb), count in sorted(sol.assign.items()):
            if bb != b:
                continue
            c = inst.classes[i]
            size = _size(inst.bins[b], c.requests)
            items.extend((size, p.key, i) for p in c.pods[taken[i] : taken[i] + count])
            taken[i] += count
        items.sort(key=lambda t: (-t[0], t[1]))
        # Per class, the first node that may still take it: nodes only fill up, so one that
        # refused a class refuses it for good (first-fit without rescanning full nodes).
        first: dict[int, int] = {}
        for item in items:
            i = item[2]
            j = first.get(i, 0)
            while j < len(bin_nodes) and not bin_nodes[j].takes(inst, i):
                j += 1
            first[i] = j
            if j == len(bin_nodes):
                overflow.append(item)
            else:
                bin_nodes[j].add(inst, i, item[1])
    exact = not overflow
    used = _limits_used(inst, nodes)
    by_bin: dict[int, list[_Node]] = {}
    for n in nodes:
        by_bin.setdefault(n.bin, []).append(n)
    for _, key, i in sorted(overflow, key=lambda t: (-t[0], t[1])):
        ok = set(inst.classes[i].bins)
        at = next(
            (n for b in sorted(ok & by_bin.keys()) for n in by_bin[b] if n.takes(inst, i)), None
        )
        if at is None:
            b = min(
                (b for b in ok if _within(inst, used, b)),
                key=lambda b: (inst.bins[b].price, inst.bins[b].label),
                default=min(ok, key=lambda b: (inst.bins[b].price, inst.bins[b].label)),
            )
            at = _Node(b)
            nodes.append(at)
            by_bin.setdefault(b, []).append(at)
            _count(inst, used, b)
        at.add(inst, i, key)
    out = [
        FleetNode(
            inst.bins[n.bin].nodepool,
            inst.bins[n.bin].instance_type,
            inst.bins[n.bin].zone,
            inst.bins[n.bin].capacity_type,
            inst.bins[n.bin].price,
            tuple(sorted(n.pods)),
        )
        for n in nodes
        if n.pods
    ]
    return out, exact


def _size(node: Bin, requests: Mapping[str, int]) -> float:
    """A pod's largest share of the node's capacity (first-fit decreasing orders by it)."""
    return max(
        (v / node.capacity[k] for k, v in requests.items() if node.capacity.get(k)), default=0.0
    )


def _limits_used(inst: Instance, nodes: list[_Node]) -> dict[str, dict[str, int]]:
    used: dict[str, dict[str, int]] = {}
    for n in nodes:
        _count(inst, used, n.bin)
    return used


def _count(inst: Instance, used: dict[str, dict[str, int]], b: int) -> None:
    node = inst.bins[b]
    pool = used.setdefault(node.nodepool, {})
    for k in inst.limits.get(node.nodepool, {}):
        pool[k] = pool.get(k, 0) + (1 if k == "nodes" else node.limit_capacity.get(k, 0))


def _within(inst: Instance, used: dict[str, dict[str, int]], b: int) -> bool:
    """Whether one more node of bin `b` keeps its NodePool within its limits."""
    node = inst.bins[b]
    left = inst.limits.get(node.nodepool, {})
    pool = used.get(node.nodepool, {})
    return all(
        pool.get(k, 0) + (1 if k == "nodes" else node.limit_capacity.get(k, 0)) <= max(v, 0)
        for k, v in left.items()
    )


def check(inst: Instance, nodes: list[FleetNode]) -> list[str]:
    """What is wrong with `nodes` as a fleet for `inst` (empty: nothing): every modelled pod
    on exactly one node, of a bin its class may use, within the bin's capacity and hostname
    caps, and the NodePools' limits held."""
    problems: list[str] = []
    class_of = {p.key: i for i, c in enumerate(inst.classes) for p in c.pods}
    by_label: dict[tuple[str, str, str, str], list[int]] = {}
    for j, b in enumerate(inst.bins):
        by_label.setdefault((b.nodepool, b.instance_type, b.zone, b.capacity_type), []).append(j)
    seen: set[str] = set()
    used: dict[str, dict[str, int]] = {}
    for n in nodes:
        candidates = by_label.get((n.nodepool, n.instance_type, n.zone, n.capacity_type), [])
        load: dict[str, int] = {}
        groups: dict[int, int] = {}
        ok_bins = set(candidates)
        for key in n.pods:
            if key in seen:
                problems.append(f"pod {key} is on two nodes")
            seen.add(key)
            i = class_of.get(key)
            if i is None:
                problems.append(f"pod {key} is not one the model places")
                continue
            c = inst.classes[i]
            ok_bins &= set(c.bins)
            for k, v in c.requests.items():
                load[k] = load.get(k, 0) + v
            for g in c.groups:
                groups[g] = groups.get(g, 0) + 1
        if not ok_bins:
            problems.append(f"a {n.instance_type} node holds a pod that may not go there")
            continue
        node = inst.bins[min(ok_bins)]
        over = [k for k, v in load.items() if v > node.capacity.get(k, 0)]
        if over:
            problems.append(f"a {n.instance_type} node is over its {', '.join(sorted(over))}")
        if any(v > inst.group_caps[g] for g, v in groups.items()):
            problems.append(f"a {n.instance_type} node breaks a hostname constraint")
        pool = used.setdefault(n.nodepool, {})
        for k in inst.limits.get(n.nodepool, {}):
            pool[k] = pool.get(k, 0) + (1 if k == "nodes" else node.limit_capacity.get(k, 0))
    missing = set(class_of) - seen
    if missing:
        problems.append(f"{len(missing)} pod(s) on no node, e.g. {min(missing)}")
    for name, left in sorted(inst.limits.items()):
        for k, v in sorted(left.items()):
            if used.get(name, {}).get(k, 0) > max(v, 0):
                problems.append(f"NodePool {name}: over its {k} limit")
    return problems
