"""Laws the provisioning loop keeps whatever the input (hypothesis): the instance types its
NodeClaims launch as never exceed a NodePool's limits across passes, every pod is placed once
or pending with a reason, later passes only add to the first, and the same input gives the
same plan."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.controllers.provisioning import Plan
from tests.builders import GPU_TOLERATION, edit, pod
from tests.scheduling.builders import CPU_TYPES, cpu_pool, gpu_pool
from tests.scheduling.passes import ONE_PER_NODE, SIZED_GPU_TYPES, run_passes

pod_specs = st.lists(
    st.tuples(
        st.integers(0, 2),  # GPUs
        st.sampled_from(["250m", "1", "3", "7"]),  # CPU
        st.booleans(),  # tolerates the GPU taint
        st.booleans(),  # one per node (hostname anti-affinity with the others that set it)
    ),
    min_size=1,
    max_size=12,
)
Spec = tuple[int, str, bool, bool]


def _docs(specs: list[Spec], gpu_limit: int, static: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        edit(gpu_pool(), "spec.limits", {"nvidia.com/gpu": str(gpu_limit)}),
        edit(cpu_pool(), "spec.limits", {"cpu": "20"}),
    ]
    if static:
        fixed = edit(gpu_pool("fixed"), "spec.replicas", static)
        docs.append(edit(fixed, "spec.limits", None))
    for i, (gpus, cpu, tolerates, spread) in enumerate(specs):
        doc = pod(
            f"p{i}",
            gpu=gpus or None,
            cpu=cpu,
            tolerations=[GPU_TOLERATION] if tolerates else None,
            affinity=ONE_PER_NODE if spread else None,
        )
        if spread:
            doc = edit(doc, "metadata.labels", {"app": "llm"})
        docs.append(doc)
    return docs


def _plan(specs: list[Spec], gpu_limit: int, static: int = 0) -> Plan:
    types = {"gpu": SIZED_GPU_TYPES, "default": CPU_TYPES, "fixed": SIZED_GPU_TYPES}
    return run_passes(_docs(specs, gpu_limit, static), types)


LAWS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@LAWS
@given(pod_specs, st.integers(0, 8))
def test_launched_instance_types_never_exceed_limits_across_passes(
    specs: list[Spec], gpu_limit: int
) -> None:
    plan = _plan(specs, gpu_limit)
    for pool, resource, limit in (("gpu", "nvidia.com/gpu", gpu_limit), ("default", "cpu", 20_000)):
        used = 0
        for claim in plan.node_claims:
            it = claim.launched_type
            if claim.nodepool == pool and it is not None:
                used += it.capacity.get(resource, 0)
        assert used <= limit


@LAWS
@given(pod_specs, st.integers(0, 8), st.integers(0, 2))
def test_every_pod_is_placed_once_or_pending_with_a_reason(
    specs: list[Spec], gpu_limit: int, static: int
) -> None:
    plan = _plan(specs, gpu_limit, static)
    placed = [p.key for c in plan.node_claims for p in c.pods]
    placed += [key for keys in plan.existing.values() for key in keys]
    assert len(placed) == len(set(placed))
    assert set(placed).isdisjoint(plan.pod_errors)
    assert all(plan.pod_errors.values())
    assert set(placed) | set(plan.pod_errors) == {f"default/p{i}" for i in range(len(specs))}


@LAWS
@given(pod_specs, st.integers(0, 8))
def test_later_passes_only_add_to_the_first(specs: list[Spec], gpu_limit: int) -> None:
    def shape(plan: Plan, n: int) -> list[tuple[str, list[str]]]:
        return [(c.name, [p.key for p in c.pods]) for c in plan.node_claims if c.pass_number == n]

    docs = _docs(specs, gpu_limit, 0)
    types = {"gpu": SIZED_GPU_TYPES, "default": CPU_TYPES}
    single = run_passes(docs, types, max_passes=1)
    full = run_passes(docs, types)
    # The first pass's NodeClaims are the single pass's; a later pass may add pods to them.
    first, alone = shape(full, 1), shape(single, 1)
    assert [name for name, _ in first] == [name for name, _ in alone]
    for (_, pods), (_, pods_alone) in zip(first, alone, strict=True):
        assert pods[: len(pods_alone)] == pods_alone
    assert set(full.pod_errors) <= set(single.pod_errors)
    assert [c.pass_number for c in full.node_claims] == sorted(
        c.pass_number for c in full.node_claims
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8), st.integers(0, 2))
def test_the_same_input_gives_the_same_plan(specs: list[Spec], gpu_limit: int, static: int) -> None:
    def shape(plan: Plan) -> object:
        return (
            [
                (
                    c.name,
                    c.pass_number,
                    [p.key for p in c.pods],
                    c.launch.instance_type if c.launch else None,
                    [it.name for it in c.instance_types],
                )
                for c in plan.node_claims
            ],
            sorted(plan.pod_errors.items()),
            plan.existing,
            plan.passes,
        )

    assert shape(_plan(specs, gpu_limit, static)) == shape(_plan(specs, gpu_limit, static))
