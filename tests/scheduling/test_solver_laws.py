"""Laws the scheduler keeps whatever the input (hypothesis): limits are never exceeded, no pod
lands on a taint it does not tolerate, every pod is placed once or has a reason, a claim's pods
fit every instance type it keeps, and the same input gives the same plan."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.scheduling.resources import add, fits
from gpucap.scheduling.scheduler import Results
from gpucap.scheduling.taints import untolerated
from tests.builders import GPU_TOLERATION, edit, pod
from tests.scheduling.builders import CPU_TYPES, GPU_TYPES, cpu_pool, gpu_pool, run

pod_specs = st.lists(
    st.tuples(
        st.integers(0, 2),  # GPUs
        st.sampled_from(["250m", "1", "3", "7"]),  # CPU
        st.booleans(),  # tolerates the GPU taint
    ),
    min_size=1,
    max_size=14,
)


def _docs(specs: list[tuple[int, str, bool]], gpu_limit: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        edit(gpu_pool(), "spec.limits", {"nvidia.com/gpu": str(gpu_limit)}),
        edit(cpu_pool(), "spec.limits", {"cpu": "20"}),
    ]
    for i, (gpus, cpu, tolerates) in enumerate(specs):
        docs.append(
            pod(
                f"p{i}",
                gpu=gpus or None,
                cpu=cpu,
                tolerations=[GPU_TOLERATION] if tolerates else None,
            )
        )
    return docs


def _solve(specs: list[tuple[int, str, bool]], gpu_limit: int) -> Results:
    return run(_docs(specs, gpu_limit), {"gpu": GPU_TYPES, "default": CPU_TYPES})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8))
def test_limits_are_never_exceeded(specs: list[tuple[int, str, bool]], gpu_limit: int) -> None:
    result = _solve(specs, gpu_limit)
    for pool, resource, limit in (("gpu", "nvidia.com/gpu", gpu_limit), ("default", "cpu", 20_000)):
        worst = sum(
            max(it.capacity.get(resource, 0) for it in c.instance_types)
            for c in result.new_node_claims
            if c.nodepool == pool
        )
        assert worst <= limit


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8))
def test_no_pod_lands_on_a_taint_it_does_not_tolerate(
    specs: list[tuple[int, str, bool]], gpu_limit: int
) -> None:
    result = _solve(specs, gpu_limit)
    for claim in result.new_node_claims:
        for p in claim.pods:
            assert untolerated(claim.template.taints, p.spec.tolerations) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8))
def test_every_pod_is_placed_once_or_has_a_reason(
    specs: list[tuple[int, str, bool]], gpu_limit: int
) -> None:
    result = _solve(specs, gpu_limit)
    placed = [p.key for c in result.new_node_claims for p in c.pods]
    assert len(placed) == len(set(placed))
    assert set(placed).isdisjoint(result.pod_errors)
    assert set(placed) | set(result.pod_errors) == {f"default/p{i}" for i in range(len(specs))}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8))
def test_a_claims_pods_fit_every_instance_type_it_keeps(
    specs: list[tuple[int, str, bool]], gpu_limit: int
) -> None:
    result = _solve(specs, gpu_limit)
    for claim in result.new_node_claims:
        assert claim.instance_types
        for it in claim.instance_types:
            assert fits(claim.requests, it.allocatable)
        assert all(
            claim.requests.get(k, 0) >= v for k, v in add({}, {"pods": len(claim.pods)}).items()
        )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8))
def test_the_same_input_gives_the_same_plan(
    specs: list[tuple[int, str, bool]], gpu_limit: int
) -> None:
    def shape(r: Results) -> object:
        return (
            [
                (c.name, [p.key for p in c.pods], [it.name for it in c.instance_types])
                for c in r.new_node_claims
            ],
            sorted(r.pod_errors.items()),
        )

    assert shape(_solve(specs, gpu_limit)) == shape(_solve(specs, gpu_limit))
