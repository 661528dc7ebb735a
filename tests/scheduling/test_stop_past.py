"""`Scheduler.solve(pods, stop_past=k)` stops only where the whole solve plans more than k new
NodeClaims, and otherwise plans exactly what the whole solve plans.

Law (hypothesis, the pod-class equivalence test's random workloads and fleets): a stopped
solve's whole plan has more than k NodeClaims; a solve that did not stop has the whole
solve's NodeClaims, pods, existing-node placements and errors. Rule: where finalizing may drop
a NodeClaim (minValues no longer met once the options are cut), the solve never stops."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Pod
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.scheduler import PoolInput, Scheduler
from tests.builders import edit, pod
from tests.scheduling.builders import CPU_TYPES, cpu_pool, load_models
from tests.scheduling.podclass_cases import (
    _nodes,
    _pods,
    _pools,
    _shape,
    existing,
    workloads,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workloads,
    existing,
    st.sampled_from([None, 1, 3]),
    st.sampled_from([None, "6", "40"]),
    st.integers(0, 3),
)
def test_a_solve_stops_only_where_the_whole_plan_has_more_claims(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
    gpu_limit: int | None,
    cpu_limit: str | None,
    stop_past: int,
) -> None:
    pods = _pods(loads)
    pools, nodes = _pools(gpu_limit, cpu_limit), _nodes(node_specs)
    whole = Scheduler(pools, state_nodes=nodes, pending_pods=pods).solve(pods)
    assert not whole.stopped
    cut = Scheduler(pools, state_nodes=nodes, pending_pods=pods).solve(pods, stop_past=stop_past)
    if cut.stopped:
        assert len(whole.new_node_claims) > stop_past
        assert len(cut.new_node_claims) == stop_past + 1
    else:
        assert _shape(cut) == _shape(whole)


def _min_values_fleet() -> tuple[list[PoolInput], list[Pod]]:
    pool = edit(
        cpu_pool("cpu"),
        "spec.template.spec.requirements",
        [{"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 2}],
    )
    nodepools, pods = load_models(pool, *(pod(f"p{i}", cpu="3") for i in range(3)))
    return [PoolInput(nodepools[0], tuple(CPU_TYPES))], pods


def test_a_solve_whose_claims_finalizing_may_drop_is_never_stopped() -> None:
    # Each 3-CPU pod gets its own claim (two on one leave a single type: minValues 2 unmet);
    # cut to one type when finalized, every claim misses minValues and is dropped: the whole
    # plan has no NodeClaim, so a stop at the second claim would answer wrongly.
    pools, pods = _min_values_fleet()
    options = SchedulingOptions(max_instance_types=1)
    whole = Scheduler(pools, pending_pods=pods, options=options).solve(pods)
    assert whole.new_node_claims == []
    assert len(whole.pod_errors) == 3
    cut = Scheduler(pools, pending_pods=pods, options=options).solve(pods, stop_past=1)
    assert not cut.stopped
    assert _shape(cut) == _shape(whole)


def test_best_effort_min_values_keep_every_claim_so_the_solve_may_stop() -> None:
    pools, pods = _min_values_fleet()
    options = SchedulingOptions(max_instance_types=1, min_values_policy="BestEffort")
    whole = Scheduler(pools, pending_pods=pods, options=options).solve(pods)
    assert len(whole.new_node_claims) == 3
    cut = Scheduler(pools, pending_pods=pods, options=options).solve(pods, stop_past=1)
    assert cut.stopped
    assert len(cut.new_node_claims) == 2
