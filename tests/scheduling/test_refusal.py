"""scheduling/refusal.py: a pending pod's `PodError` prints Karpenter's wording and carries its
cause and NodePool, which callers read instead of the text."""

from __future__ import annotations

from gpucap.scheduling.refusal import (
    NO_DYNAMIC_NODEPOOLS,
    NODE_LIMITS_EXHAUSTED,
    TYPES_EXCEED_LIMITS,
    Cause,
    PodError,
)
from tests.builders import edit, pod
from tests.scheduling.builders import GPU_TYPES, gpu_pod, gpu_pool, run

TAINTS = "spec.template.spec.taints"
RESERVED = [{"key": "dedicated", "value": "reserved", "effect": "NoSchedule"}]


def test_every_nodepool_refusing_prints_each_ones_reason_joined_as_karpenter_does() -> None:
    spent = edit(gpu_pool("gpu-small"), "spec.limits", {"nvidia.com/gpu": "0"})
    tainted = edit(gpu_pool("gpu"), TAINTS, RESERVED)
    results = run([spent, tainted, gpu_pod("p")], GPU_TYPES)
    error = results.pod_errors["default/p"]
    # Equal weights: tried by name descending, so gpu-small first.
    assert str(error) == (
        f'nodepool "gpu-small": {TYPES_EXCEED_LIMITS}; '
        'nodepool "gpu": did not tolerate taint dedicated=reserved:NoSchedule'
    )
    assert error.cause is Cause.NODEPOOLS
    assert [(p.nodepool, p.cause) for p in error.parts] == [
        ("gpu-small", Cause.TYPES_EXCEED_LIMITS),
        ("gpu", Cause.INCOMPATIBLE),
    ]


def test_a_limit_of_gpu_small_is_not_blamed_on_gpu() -> None:
    # `gpu` is a prefix of `gpu-small` and appears in the same reason: only the cause of each
    # NodePool's part says which one's limits refused (commit e0ac8fb).
    spent = edit(gpu_pool("gpu-small"), "spec.limits", {"nvidia.com/gpu": "0"})
    tainted = edit(gpu_pool("gpu"), TAINTS, RESERVED)
    results = run([spent, tainted, gpu_pod("p")], GPU_TYPES)
    assert results.limited_pools() == ["gpu-small"]


def test_a_nodepool_out_of_nodes_is_limited_too() -> None:
    spent = edit(gpu_pool("gpu"), "spec.limits", {"nodes": "0"})
    results = run([spent, gpu_pod("p")], GPU_TYPES)
    assert str(results.pod_errors["default/p"]) == f'nodepool "gpu": {NODE_LIMITS_EXHAUSTED}'
    assert results.limited_pools() == ["gpu"]


def test_limited_pools_can_be_asked_of_some_pods_only() -> None:
    spent = edit(gpu_pool("gpu"), "spec.limits", {"nvidia.com/gpu": "0"})
    invalid = pod("b", nodeSelector={"kubernetes.io/hostname": "ip-1"})
    results = run([spent, gpu_pod("a"), invalid], GPU_TYPES)
    # b selects a restricted label: pending, but not for the limit (no NodePool is tried).
    assert results.pod_errors["default/b"].cause is Cause.INVALID_POD
    assert results.limited_pools(["default/b"]) == []
    assert results.limited_pools(["default/a", "default/b"]) == ["gpu"]


def test_reasons_about_no_single_nodepool_name_none() -> None:
    results = run([gpu_pod("p")], GPU_TYPES)
    assert results.pod_errors["default/p"] == PodError(
        None, Cause.NO_DYNAMIC_NODEPOOLS, NO_DYNAMIC_NODEPOOLS
    )
    assert results.limited_pools() == []
