"""The cost floor of a population (`optimal/floor.py`), the simulator's: hand-checked on the
README's two-pod g5 case, and laws on random plans: the plain path is `plan --optimal`'s floor
for the same pods, the memo gives what the plain path gives, and more pods never lower it."""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Pod
from gpucap.controllers.provisioning.loop import Plan
from gpucap.controllers.provisioning.optimal import build_instance, optimise
from gpucap.controllers.provisioning.optimal.floor import CostFloors, cost_floor
from gpucap.controllers.provisioning.optimal.milp import solve
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.scheduler import PoolInput
from tests.optimal.instances import (
    gpu_deployment,
    gpu_pool,
    planned,
    random_inputs,
)

_OPTIONS = SchedulingOptions()


def _pods(made: Plan) -> list[Pod]:
    return [p for c in made.node_claims if not c.static and c.launch is not None for p in c.pods]


def _floor(made: Plan, pods: list[Pod], counts: list[int]) -> float:
    first = made.first_pass
    assert first is not None
    return cost_floor(first.pools, first.daemonsets, pods, counts, options=_OPTIONS)


def _app(pod: Pod) -> str:
    return pod.metadata.labels["app"]


def test_the_two_pod_g5_floor_is_two_of_the_cheapest_one_gpu_node() -> None:
    # README "Cost floor": Karpenter takes one g5.12xlarge for the two 1-GPU pods; the floor is
    # two g5.xlarge, which is also the optimum (test_optimal.py).
    _, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    pods = _pods(made)
    fleet = optimise(made)
    assert sorted(n.instance_type for n in fleet.nodes) == ["g5.xlarge", "g5.xlarge"]
    assert _floor(made, pods, [1, 1]) == pytest.approx(fleet.cost, abs=1e-6)
    # One pod of the class standing for both: the same floor; for one, half of it.
    assert _floor(made, pods[:1], [2]) == pytest.approx(fleet.cost, abs=1e-6)
    assert _floor(made, pods[:1], [1]) == pytest.approx(fleet.cost / 2, abs=1e-6)
    assert _floor(made, pods[:1], [0]) == 0.0


def test_a_population_no_nodepool_takes_has_no_floor() -> None:
    _, made = planned(gpu_pool(), gpu_deployment("batch", 1))
    first = made.first_pass
    assert first is not None
    assert cost_floor([], first.daemonsets, _pods(made), [3], options=_OPTIONS) == 0.0


def test_pods_pending_at_a_limit_still_count_with_the_limit_relaxed() -> None:
    # The pool allows 2 GPUs; four 1-GPU pods cannot all be served within it: the floor is
    # the limit-free one, 4 g5.xlarge, not an infeasible model's 0.
    _, made = planned(gpu_pool(limits={"nvidia.com/gpu": "2"}), gpu_deployment("batch", 2))
    pods = _pods(made)
    two = _floor(made, pods[:1], [2])
    assert two > 0
    assert _floor(made, pods[:1], [4]) == pytest.approx(2 * two, abs=1e-6)


_FAMILIES = st.sampled_from([["g5"], ["g6"], ["g5", "g6"], ["g4dn", "g5"]])


_inputs = functools.partial(
    random_inputs, families=_FAMILIES, limits=st.just(1000), replicas=st.integers(1, 4)
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_inputs(), st.randoms(use_true_random=False))
def test_the_memo_gives_the_plain_floor_and_the_plain_floor_is_plan_optimals(
    docs: list[dict[str, Any]], rnd: Any
) -> None:
    _, made = planned(*docs)
    pods = _pods(made)
    if not pods:
        return
    first = made.first_pass
    assert first is not None
    plain = _floor(made, pods, [1] * len(pods))
    # `plan --optimal`'s LP relaxation over the same pods (no existing nodes: the same limits).
    assert plain == pytest.approx(solve(build_instance(made), 0.0, integer=False).floor, abs=1e-5)
    # The memo, on the pods grouped by workload (alike pods), twice and after another
    # population: the same value, and the second time without an LP.
    floors = CostFloors(_OPTIONS)
    by_app = Counter(_app(p) for p in pods)
    reps = {_app(p): p for p in pods}
    population = {a: (reps[a], n) for a, n in by_app.items()}
    assert floors.floor(first.pools, first.daemonsets, population) == pytest.approx(plain, abs=1e-5)
    smaller = {a: (p, max(1, n - 1)) for a, (p, n) in population.items()}
    less = floors.floor(first.pools, first.daemonsets, smaller)
    assert less == pytest.approx(
        _floor(made, [p for p, _ in smaller.values()], [n for _, n in smaller.values()]),
        abs=1e-6,
    )
    solved = floors.solved
    again = dict(rnd.sample(sorted(population.items()), len(population)))
    assert floors.floor(first.pools, first.daemonsets, again) == pytest.approx(plain, abs=1e-5)
    assert floors.solved == solved
    # More pods never lower the floor (the limits are out of reach here).
    assert less <= plain + 1e-6
    assert less >= 0.0


def _closed(types: Sequence[InstanceType]) -> tuple[InstanceType, ...]:
    """`types` as the provider lists them under insufficient-capacity marks on every spot
    offering (marked copies: the same requirements, capacity and allocatable objects)."""
    return tuple(
        InstanceType(
            it.name,
            it.requirements,
            it.capacity,
            it.allocatable,
            tuple(
                dataclasses.replace(o, available=False) if o.capacity_type == "spot" else o
                for o in it.offerings
            ),
        )
        for it in types
    )


def test_an_offering_a_capacity_error_closed_is_open_again_for_the_floor() -> None:
    # A spot outage marks spot closed; the pods already on spot keep their nodes, so the
    # floor stays the spot one (the bill's excess shows the fallback), as long as the open
    # offering was seen first. Seen only closed, the floor is the on-demand one.
    _, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    first = made.first_pass
    assert first is not None
    pods = _pods(made)
    population = {"batch": (pods[0], 2)}
    closed = [PoolInput(p.nodepool, _closed(p.instance_types)) for p in first.pools]
    floors = CostFloors(_OPTIONS)
    spot = floors.floor(first.pools, first.daemonsets, population)
    solved = floors.solved
    assert floors.floor(closed, first.daemonsets, population) == spot
    assert floors.solved == solved  # the same context: the memo answers
    on_demand = CostFloors(_OPTIONS).floor(closed, first.daemonsets, population)
    assert on_demand > spot
