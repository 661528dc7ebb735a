"""The MILP of `plan --optimal` and its LP relaxation (the cost floor), solved by HiGHS.

Variables: `n[b]`, how many nodes of bin `b` launch (integer, at most a reservation's free
count); `x[c, b]`, how many pods of class `c` go to bin `b` (integer; only the compatible
pairs). Minimise the fleet's price, sum of `price[b] * n[b]`, subject to:
- every pod placed: `sum_b x[c, b] = |c|`;
- capacity per bin and resource (cpu, memory, GPUs as the catalog counts them, `pods`, ...):
  `sum_c requests[c, k] * x[c, b] <= capacity[b, k] * n[b]`, capacity being allocatable less
  the DaemonSet overhead of the type;
- hostname groups: `sum_{c in g} x[c, b] <= cap[g] * n[b]` (one per node for self
  anti-affinity, maxSkew for a hostname spread);
- per class and bin, `x[c, b] <= m[c, b] * n[b]`, `m` being how many of the class one node
  holds alone (a cut every real fleet meets, which the summed capacity rows miss);
- NodePool limits: `sum_{b of pool} capacity[b, k] * n[b] <= what is left of limit k`
  (`nodes` counts 1 per node).

The capacity rows add the pods of all nodes of a bin, so the model is a relaxation of packing
node by node: its optimum is a lower bound on the cheapest real fleet, and `fleet.py` decodes a
solution into nodes and checks each one. Dominated bins are dropped first (same NodePool, no
dearer, at least the capacity, no more against the limits, every class the other takes), which
keeps the catalog's thousands of offerings to a few dozen columns without changing the optimum.
Called by `fleet.optimise`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpucap.controllers.provisioning.optimal.instance import Instance

__all__ = ["MilpSolution", "kept_bins", "solve"]

_INFEASIBLE = 2  # `scipy.optimize.milp`'s status for an infeasible model


@dataclass(slots=True)
class MilpSolution:
    """What HiGHS answered: `status` ("optimal", "time limit", "infeasible", "no pods"), the
    objective of the best solution found (`objective`, None without one), the proven lower
    bound (`bound`), the LP relaxation's value (`floor`), the nodes per bin (`nodes`) and the
    pods per (class, bin) (`assign`), bins as indices into `Instance.bins`."""

    status: str
    objective: float | None
    bound: float
    floor: float
    nodes: dict[int, int]
    assign: dict[tuple[int, int], int]
    columns: int
    rows: int


def kept_bins(inst: Instance) -> list[int]:
    """The bins left after dropping the dominated ones (see the module docstring)."""
    used = _cheapest_alike(inst, sorted({b for c in inst.classes for b in c.bins}))
    if not used:
        return []
    res = inst.resources
    cls = np.zeros((len(inst.classes), len(used)), dtype=np.bool_)
    col = {b: j for j, b in enumerate(used)}
    for i, c in enumerate(inst.classes):
        for b in c.bins:
            if b in col:  # not one `_cheapest_alike` dropped
                cls[i, col[b]] = True
    bins = [inst.bins[b] for b in used]
    cap = np.array([[b.capacity.get(k, 0) for k in res] for b in bins], dtype=np.float64)
    price = np.array([b.price for b in bins], dtype=np.float64)
    bounded = np.array([b.most is not None for b in bins], dtype=np.bool_)
    pool = np.array([b.nodepool for b in bins], dtype=object)
    keep = np.ones(len(bins), dtype=np.bool_)
    for name in sorted(set(pool.tolist())):
        idx = np.flatnonzero(pool == name)
        keys = sorted(inst.limits.get(name, {}))
        lim = np.array(
            [
                [1.0 if k == "nodes" else bins[j].limit_capacity.get(k, 0) for k in keys]
                for j in idx
            ],
            dtype=np.float64,
        ).reshape(len(idx), len(keys))
        for a, j in enumerate(idx.tolist()):
            # Bins that do all `j` does, at no more cost: unbounded, cheaper or equal, as
            # roomy, no heavier on the limits, taking every class `j` takes.
            better = (
                ~bounded[idx]
                & (price[idx] <= price[j])
                & (cap[idx] >= cap[j]).all(axis=1)
                & (lim <= lim[a]).all(axis=1)
                & (cls[:, idx] >= cls[:, [j]]).all(axis=0)
                & keep[idx]
            )
            better[a] = False
            if not better.any():
                continue
            # A strictly better one, or an equal one listed earlier, replaces `j`.
            same = (
                (price[idx] == price[j])
                & (cap[idx] == cap[j]).all(axis=1)
                & (lim == lim[a]).all(axis=1)
                & (cls[:, idx] == cls[:, [j]]).all(axis=0)
            )
            if (better & ~same).any() or (better & same & (idx < j)).any():
                keep[j] = False
    return [used[j] for j in np.flatnonzero(keep).tolist()]


def solve(
    inst: Instance, time_limit: float, *, integer: bool = True, bins: Sequence[int] | None = None
) -> MilpSolution:
    """The MILP of `inst` within `time_limit` seconds, and its LP relaxation (only the
    relaxation without `integer`: the floor alone, status "floor"). `bins`: `kept_bins(inst)`
    when the caller has it (the simulator's floor keeps it per set of bins)."""
    if not inst.classes:
        return MilpSolution("no pods", 0.0, 0.0, 0.0, {}, {}, 0, 0)
    # Imported here: scipy costs a few hundred milliseconds to import, which `gpucap plan`
    # without --optimal (and every other command) must not pay.
    from scipy.optimize import (  # type: ignore[import-untyped]  # noqa: PLC0415
        Bounds,
        LinearConstraint,
        milp,
    )
    from scipy.sparse import coo_matrix  # type: ignore[import-untyped]  # noqa: PLC0415

    bins = list(bins) if bins is not None else kept_bins(inst)
    bcol = {b: j for j, b in enumerate(bins)}
    pairs = [(i, b) for i, c in enumerate(inst.classes) for b in c.bins if b in bcol]
    nb, nx = len(bins), len(pairs)
    xcol = {p: nb + j for j, p in enumerate(pairs)}
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(entries: Sequence[tuple[int, float]], low: float, high: float) -> None:
        r = len(lo)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lo.append(low)
        hi.append(high)

    for i, c in enumerate(inst.classes):
        n = float(len(c.pods))
        row([(xcol[i, b], 1.0) for b in c.bins if b in bcol], n, n)
    by_bin: dict[int, list[int]] = {}
    for i, b in pairs:
        by_bin.setdefault(b, []).append(i)
    for b, members in by_bin.items():
        node = inst.bins[b]
        for k in inst.resources:
            users = [i for i in members if inst.classes[i].requests.get(k, 0) > 0]
            if not users:
                continue
            scale = float(max(node.capacity.get(k, 0), 1))
            entries = [(xcol[i, b], inst.classes[i].requests[k] / scale) for i in users]
            row([*entries, (bcol[b], -node.capacity.get(k, 0) / scale)], -np.inf, 0.0)
        for i in members:
            # At most this many pods of the class fit one node of the bin: a valid cut (each
            # node holds no more) that the summed capacity rows alone miss (three 1-CPU pods
            # "fit" two 1.9-CPU nodes in total, never on them).
            most = _per_node(inst, i, b)
            if most < len(inst.classes[i].pods):
                row([(xcol[i, b], 1.0), (bcol[b], -float(most))], -np.inf, 0.0)
        groups: dict[int, list[int]] = {}
        for i in members:
            for g in inst.classes[i].groups:
                groups.setdefault(g, []).append(i)
        for g, gm in sorted(groups.items()):
            cap = float(inst.group_caps[g])
            row([*((xcol[i, b], 1.0) for i in gm), (bcol[b], -cap)], -np.inf, 0.0)
    for name, left in sorted(inst.limits.items()):
        for k, v in sorted(left.items()):
            entries = [
                (bcol[b], 1.0 if k == "nodes" else float(inst.bins[b].limit_capacity.get(k, 0)))
                for b in bins
                if inst.bins[b].nodepool == name
            ]
            entries = [e for e in entries if e[1] > 0]
            if entries:
                scale = float(max(v, 1))
                row([(c, w / scale) for c, w in entries], -np.inf, max(v, 0) / scale)
    total = [sum(len(inst.classes[i].pods) for i in by_bin.get(b, [])) for b in bins]
    upper = np.array(
        [
            *(float(_most(t, inst.bins[b].most)) for b, t in zip(bins, total, strict=True)),
            *(float(len(inst.classes[i].pods)) for i, _ in pairs),
        ]
    )
    cost = np.array([*(inst.bins[b].price for b in bins), *([0.0] * nx)])
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), nb + nx)).tocsr()
    constraints = LinearConstraint(matrix, np.array(lo), np.array(hi))
    bounds = Bounds(np.zeros(nb + nx), upper)
    relaxed = milp(cost, constraints=constraints, bounds=bounds, integrality=np.zeros(nb + nx))
    if relaxed.status == _INFEASIBLE:
        return MilpSolution("infeasible", None, 0.0, 0.0, {}, {}, nb + nx, len(lo))
    floor = float(relaxed.fun) if relaxed.fun is not None else 0.0
    if not integer:
        return MilpSolution("floor", None, floor, floor, {}, {}, nb + nx, len(lo))
    res = milp(
        cost,
        constraints=constraints,
        bounds=bounds,
        integrality=np.ones(nb + nx),
        options={"time_limit": time_limit, "disp": False},
    )
    bound = getattr(res, "mip_dual_bound", None)
    bound = floor if bound is None or not np.isfinite(bound) else max(float(bound), floor)
    if res.x is None:
        status = "infeasible" if res.status == _INFEASIBLE else "time limit"
        return MilpSolution(status, None, bound, floor, {}, {}, nb + nx, len(lo))
    x = np.rint(res.x).astype(np.int64)
    nodes = {b: int(x[bcol[b]]) for b in bins if x[bcol[b]] > 0}
    assign = {(i, b): int(x[xcol[i, b]]) for i, b in pairs if x[xcol[i, b]] > 0}
    objective = float(sum(inst.bins[b].price * n for b, n in nodes.items()))
    status = "optimal" if res.status == 0 else "time limit"
    bound = min(bound, objective)
    return MilpSolution(status, objective, bound, floor, nodes, assign, nb + nx, len(lo))


def _cheapest_alike(inst: Instance, used: list[int]) -> list[int]:
    """`used` less the bins an alike one replaces (the same NodePool, capacity, weight on the
    limits and classes, unbounded, and cheaper or as cheap and earlier): what the dominance
    pass would drop among them, found in one look per bin (a type's offerings in every zone
    and capacity type are alike; a catalog NodePool has thousands)."""
    takers: dict[int, list[int]] = {}
    for i, c in enumerate(inst.classes):
        for b in c.bins:
            takers.setdefault(b, []).append(i)
    res = inst.resources
    best: dict[tuple[object, ...], int] = {}
    out: list[int] = []
    for b in used:
        node = inst.bins[b]
        if node.most is not None:
            out.append(b)
            continue
        key = (
            node.nodepool,
            tuple(node.capacity.get(k, 0) for k in res),
            tuple(sorted(node.limit_capacity.items())),
            tuple(takers.get(b, ())),
        )
        held = best.get(key)
        if held is None or node.price < inst.bins[held].price:
            best[key] = b
    return sorted([*out, *best.values()])


def _most(pods: int, most: int | None) -> int:
    """Nodes of a bin worth launching: no more than its pods, nor a reservation's free count."""
    return pods if most is None else min(pods, most)


def _per_node(inst: Instance, i: int, b: int) -> int:
    """How many pods of class `i` one node of bin `b` holds alone: its capacity over their
    requests, resource by resource, and each hostname group's cap."""
    c, node = inst.classes[i], inst.bins[b]
    most = min(
        (node.capacity.get(k, 0) // v for k, v in c.requests.items() if v > 0),
        default=len(c.pods),
    )
    return min([most, *(inst.group_caps[g] for g in c.groups)])
