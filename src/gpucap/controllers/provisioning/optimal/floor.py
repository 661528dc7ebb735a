"""The cost floor of a population of pods: the LP relaxation of `plan --optimal`'s model for
every pod Karpenter's NodePools serve at one moment, packed anew (docs/design/optimal.md).

`cost_floor(pools, daemonsets, pods, counts, options=...)` is the plain path: a scheduler over
the Ready dynamic NodePools (`pools`, as the provisioner asks for them) and their DaemonSet
overhead, with preferences ignored and `pods` as its pending pods, gives the instance
(`instance.pack_instance`: `pods[i]` stands for `counts[i]` alike pods), whose LP relaxation
(`milp.solve(integer=False)`, HiGHS without a time limit: the same input, the same answer) is
the floor in $/hour. Three things are relaxed beyond `plan --optimal`'s model, so the floor
stays a lower bound on any fleet serving the pods: a reservation's count (its free instances
exclude the ones these pods hold: every reserved bin is unbounded), when the NodePools' limits
cannot hold every pod (pods pending at a limit) the limits, and in `CostFloors` the offerings an
insufficient-capacity mark closed (`CostFloors._opened`: a running node keeps its offering).

`CostFloors` is the memo in front of it: per population (the multiset of pod classes, as the
caller keys them) under one context (the same NodePool, instance-type and DaemonSet objects,
which are replaced, never edited), so a population seen before costs no LP. A law in
tests/optimal/test_floor.py holds it to the plain path. Called by the simulator's cost-floor
actor (`sim/costfloor.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from gpucap.apis.core import Pod
from gpucap.apis.workloads import DaemonSet
from gpucap.controllers.provisioning.optimal.instance import Instance, PackMemo, pack_instance
from gpucap.controllers.provisioning.optimal.milp import kept_bins, solve
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.passcache import PassCache
from gpucap.scheduling.scheduler import PoolInput, Scheduler

__all__ = ["CostFloors", "cost_floor"]

# Populations remembered per context before the memo starts again (a day of churn over a
# few workloads sees hundreds; the bound only caps a pathological run's memory).
_MEMO_MAX = 65_536


def cost_floor(
    pools: Sequence[PoolInput],
    daemonsets: Sequence[DaemonSet],
    pods: Sequence[Pod],
    counts: Sequence[int],
    *,
    options: SchedulingOptions,
    cache: PassCache | None = None,
) -> float:
    """The floor ($/hour, 6 decimals) of `counts[i]` pods like `pods[i]` over `pools` (see the
    module docstring); 0 without pods or without a NodePool that takes one."""
    if not any(counts):
        return 0.0
    sched = _scheduler(pools, daemonsets, pods, options, cache)
    inst = pack_instance(sched, pods, sched.remaining_resources, counts)
    inst.bins = [b if b.most is None else replace(b, most=None) for b in inst.bins]
    return _relaxed_floor(inst, kept_bins(inst))


class CostFloors:
    """`cost_floor` remembered per population under the current context (module docstring).
    Within a context one scheduler and one `PackMemo` serve every population (a new class is
    worked out once), and the bins kept for the LP are kept per classes' bins and resources."""

    def __init__(self, options: SchedulingOptions, cache: PassCache | None = None) -> None:
        self.options = options
        self.cache = cache
        self._context: tuple[object, ...] = ()
        self._memo: dict[frozenset[tuple[str, int]], float] = {}
        self._pack: PackMemo | None = None
        self._kept: dict[tuple[frozenset[tuple[int, ...]], tuple[str, ...]], list[int]] = {}
        self.solved = 0  # LPs built and solved (tests and the bench read it)
        # (NodePool, type) -> the type with the most offerings available seen (see `_opened`);
        # a pool's type tuple -> its opened tuple; opened tuples by their types, to reuse.
        self._types: dict[tuple[str, str], InstanceType] = {}
        self._pool_types: dict[int, tuple[Sequence[InstanceType], tuple[InstanceType, ...]]] = {}
        self._tuples: dict[tuple[int, ...], tuple[InstanceType, ...]] = {}

    def _opened(self, pool: PoolInput) -> tuple[InstanceType, ...]:
        """`pool`'s instance types with the offerings an insufficient-capacity mark closed open
        again: each type as last seen with those offerings available (a marked copy has the
        same requirements, capacity and allocatable objects and the same offerings but for
        `available`). So a capacity outage does not raise the floor of pods already running
        (their nodes keep their offering): the bill's excess over the floor shows what the
        fallback cost. The same opened tuple object for the same types (the memo's context)."""
        types = pool.instance_types
        held = self._pool_types.get(id(types))
        if held is not None and held[0] is types:
            return held[1]
        out: list[InstanceType] = []
        for it in types:
            key = (pool.nodepool.name, it.name)
            seen = self._types.get(key)
            if seen is None or (seen is not it and not _marked_copy(it, seen)):
                self._types[key] = seen = it
            out.append(seen)
        ids = tuple(id(it) for it in out)
        opened = self._tuples.get(ids)
        if opened is None:
            if len(self._tuples) >= _MEMO_MAX:
                self._tuples.clear()
            opened = self._tuples[ids] = tuple(out)
        if len(self._pool_types) >= _MEMO_MAX:
            self._pool_types.clear()
        self._pool_types[id(types)] = (types, opened)
        return opened

    def floor(
        self,
        pools: Sequence[PoolInput],
        daemonsets: Sequence[DaemonSet],
        population: Mapping[str, tuple[Pod, int]],
    ) -> float:
        """The floor of `population` (class key -> a pod of the class and how many there are;
        equal keys mean alike pods) over `pools` and `daemonsets`."""
        pools = [PoolInput(p.nodepool, self._opened(p)) for p in pools]
        context = (
            *(x for p in pools for x in (p.nodepool, p.instance_types)),
            *daemonsets,
        )
        if len(context) != len(self._context) or any(
            a is not b for a, b in zip(context, self._context, strict=True)
        ):
            self._context, self._memo, self._pack, self._kept = context, {}, None, {}
        key = frozenset((k, n) for k, (_, n) in population.items() if n > 0)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if len(self._memo) >= _MEMO_MAX:
            self._memo.clear()
        order = sorted(k for k, _ in key)
        pods = [population[k][0] for k in order]
        counts = [population[k][1] for k in order]
        if self._pack is None:
            self._pack = PackMemo(_scheduler(pools, daemonsets, pods, self.options, self.cache))
        sched = self._pack.sched
        inst = pack_instance(sched, pods, sched.remaining_resources, counts, memo=self._pack)
        # What `kept_bins` reads besides the bins themselves: which bins each class takes.
        used = (frozenset(c.bins for c in inst.classes), tuple(inst.resources))
        kept = self._kept.get(used)
        if kept is None:
            kept = self._kept[used] = kept_bins(inst)
        value = _relaxed_floor(inst, kept)
        self.solved += 1
        self._memo[key] = value
        return value


def _marked_copy(it: InstanceType, seen: InstanceType) -> bool:
    """Whether `it` is `seen` with some offerings closed (see `CostFloors._opened`)."""
    if (
        it.requirements is not seen.requirements
        or it.capacity is not seen.capacity
        or it.allocatable is not seen.allocatable
        or len(it.offerings) != len(seen.offerings)
    ):
        return False
    return all(
        o == s or (not o.available and s.available and replace(o, available=True) == s)
        for o, s in zip(it.offerings, seen.offerings, strict=True)
    )


def _scheduler(
    pools: Sequence[PoolInput],
    daemonsets: Sequence[DaemonSet],
    pods: Sequence[Pod],
    options: SchedulingOptions,
    cache: PassCache | None,
) -> Scheduler:
    return Scheduler(
        pools,
        daemonsets=daemonsets,
        pending_pods=pods,
        options=replace(options, preference_policy="Ignore", reserved_offering_mode="Strict"),
        cache=cache,
    )


def _relaxed_floor(inst: Instance, kept: Sequence[int]) -> float:
    """The LP relaxation of `inst` over the bins `kept` (`kept_bins`), reservations unbounded,
    and without the limits when they cannot hold every pod (module docstring)."""
    inst.bins = list(inst.bins)
    for b in kept:
        if inst.bins[b].most is not None:
            inst.bins[b] = replace(inst.bins[b], most=None)
    found = solve(inst, 0.0, integer=False, bins=kept)
    if found.status == "infeasible" and inst.limits:
        inst.limits = {}
        found = solve(inst, 0.0, integer=False, bins=kept)
    return round(max(found.floor, 0.0), 6)
