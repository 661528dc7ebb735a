"""Laws of reserved capacity in the scheduler, over random workloads and reservations:
pod classes change no plan with reservations in either reserved-offering mode (a refusal for a
held reservation is never kept: other claims give slots back), and no reservation is pinned by
more NodeClaims than it had instances free."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.aws.instancetype.reserved import ReservedCapacity, with_reserved_offerings
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.scheduler import PoolInput, Scheduler
from tests.builders import edit
from tests.scheduling.builders import CPU_TYPES, GPU_TYPES, ZONES, cpu_pool, gpu_pool
from tests.scheduling.podclass_cases import _nodes, _pods, _shape, existing, workloads

reservations = st.lists(
    st.tuples(
        st.sampled_from([t.name for t in GPU_TYPES + CPU_TYPES]),
        st.sampled_from(ZONES),
        st.integers(0, 3),
        st.sampled_from(["default", "capacity-block"]),
    ),
    max_size=4,
)


def _pools(specs: list[tuple[str, str, int, str]], gpu_limit: int | None) -> list[PoolInput]:
    reserved = [
        ReservedCapacity(f"cr-{i}", t, z, kind, available=n)
        for i, (t, z, n, kind) in enumerate(specs)
    ]
    gpu = gpu_pool()
    gpu = edit(gpu, "spec.limits", {"nvidia.com/gpu": str(gpu_limit)} if gpu_limit else None)
    return [
        PoolInput(NodePool.model_validate(gpu), with_reserved_offerings(GPU_TYPES, reserved)),
        PoolInput(
            NodePool.model_validate(cpu_pool()), with_reserved_offerings(CPU_TYPES, reserved)
        ),
    ]


def _solve(
    pods: Any, pools: list[PoolInput], nodes: Any, *, classes: bool, mode: str
) -> tuple[Any, Any]:
    options = SchedulingOptions(reserved_offering_mode=mode)  # type: ignore[arg-type]
    scheduler = Scheduler(
        pools, state_nodes=nodes, pending_pods=pods, options=options, pod_classes=classes
    )
    return scheduler.solve(pods), scheduler


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workloads,
    existing,
    reservations,
    st.sampled_from([None, 3]),
    st.sampled_from(["Strict", "Fallback"]),
)
def test_pod_classes_change_no_plan_with_reservations(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
    specs: list[tuple[str, str, int, str]],
    gpu_limit: int | None,
    mode: str,
) -> None:
    pods = _pods(loads)
    pools, nodes = _pools(specs, gpu_limit), _nodes(node_specs)
    with_classes, _ = _solve(pods, pools, nodes, classes=True, mode=mode)
    without, _ = _solve(pods, pools, nodes, classes=False, mode=mode)
    assert _shape(with_classes) == _shape(without)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads, reservations, st.sampled_from(["Strict", "Fallback"]))
def test_no_reservation_is_pinned_by_more_claims_than_it_had_free(
    loads: list[tuple[str, dict[str, Any], int]],
    specs: list[tuple[str, str, int, str]],
    mode: str,
) -> None:
    pods = _pods(loads)
    pools = _pools(specs, None)
    results, _ = _solve(pods, pools, [], classes=True, mode=mode)
    pinned: Counter[str] = Counter()
    for claim in results.new_node_claims:
        ids = claim.requirements.get("karpenter.k8s.aws/capacity-reservation-id")
        for rid in ids.values if ids is not None else ():
            pinned[rid] += 1
    free = {f"cr-{i}": n for i, (_, _, n, _) in enumerate(specs)}
    assert all(pinned[rid] <= free[rid] for rid in pinned)
