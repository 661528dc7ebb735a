"""Laws of the scheduler's type filter as named steps (scheduling/filter.py), whatever the
input (hypothesis): tracing the steps keeps the same types as running them untraced, each
traced step splits what the earlier ones left into kept and rejected and names a cause exactly
when it leaves nothing, and `plan --explain`'s verdict for a NodePool is what the scheduler
does with the pod alone."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.scheduling.filter import (
    CLAIM_STEPS,
    SCHEDULER_STEPS,
    FilterInput,
    filter_options,
    run_steps,
)
from gpucap.scheduling.hostports import HostPortUsage
from gpucap.scheduling.instancetypes import InstanceType, InstanceTypeTable
from gpucap.scheduling.nodeclaimtemplate import DaemonOverheadGroup
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.scheduler import PoolInput, Scheduler
from tests.builders import GPU_TOLERATION, edit, pod
from tests.scheduling.builders import GIB, ZONES, gpu_pool, instance_type, load_models

ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
FAMILY = "karpenter.k8s.aws/instance-family"
GPU = "nvidia.com/gpu"


def _types(unavailable: tuple[tuple[str, str], ...]) -> list[InstanceType]:
    """CPU and GPU types of a few sizes, some offerings unavailable."""
    specs = [
        ("m5.large", 2, 8, 0),
        ("m5.2xlarge", 8, 32, 0),
        ("c5.xlarge", 4, 8, 0),
        ("g5.xlarge", 4, 16, 1),
        ("g5.12xlarge", 48, 192, 4),
        ("g6.2xlarge", 8, 32, 1),
    ]
    return [
        instance_type(name, cpu=cpu, memory_gib=mem, gpu=gpu, unavailable=unavailable)
        for name, cpu, mem, gpu in specs
    ]


unavailable = st.lists(
    st.tuples(st.sampled_from(ZONES), st.sampled_from(["spot", "on-demand"])), max_size=5
).map(tuple)
zones = st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True)
capacity_types = st.lists(
    st.sampled_from(["spot", "on-demand"]), min_size=1, max_size=2, unique=True
)
families = st.lists(st.sampled_from(["m5", "c5", "g5", "g6"]), min_size=1, max_size=4, unique=True)
requests = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([0, 500, 2000, 7000, 40_000]),
        "memory": st.sampled_from([0, GIB, 20 * GIB]),
        GPU: st.sampled_from([0, 1, 2, 8]),
    }
)
overheads = st.lists(
    st.fixed_dictionaries({"cpu": st.sampled_from([0, 200, 1500])}), min_size=1, max_size=3
)
limits = st.none() | st.fixed_dictionaries(
    {"cpu": st.sampled_from([1000, 8000, 100_000]), GPU: st.sampled_from([0, 1, 4])}
)


def _groups(table: InstanceTypeTable, spread: list[dict[str, int]]) -> list[DaemonOverheadGroup]:
    """The table's types dealt round-robin into one DaemonSet group per overhead."""
    names = [it.name for it in table.types]
    return [
        DaemonOverheadGroup(frozenset(names[i :: len(spread)]), overhead, HostPortUsage())
        for i, overhead in enumerate(spread)
    ]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unavailable, zones, capacity_types, families, requests, overheads, limits)
def test_traced_and_untraced_steps_keep_the_same_types(  # noqa: PLR0917 - hypothesis
    gone: tuple[tuple[str, str], ...],
    zone: list[str],
    capacity_type: list[str],
    family: list[str],
    asked: dict[str, int],
    spread: list[dict[str, int]],
    limit: dict[str, int] | None,
) -> None:
    table = InstanceTypeTable(_types(gone))
    reqs = Requirements.of(
        Requirement.new(ZONE, "In", zone),
        Requirement.new(CAPACITY_TYPE, "In", capacity_type),
        Requirement.new(FAMILY, "In", family),
    )

    def question() -> FilterInput:
        return FilterInput(table, reqs, None, _groups(table, spread), asked, limits=limit)

    options = np.ones(len(table.types), dtype=np.bool_)
    untraced, nothing = run_steps(SCHEDULER_STEPS, question(), options)
    traced, trace = run_steps(SCHEDULER_STEPS, question(), options, trace=True)
    assert nothing == ()
    assert traced.tolist() == untraced.tolist()
    assert [t.name for t in trace] == [s.name for s in SCHEDULER_STEPS]
    assert trace[-1].kept == table.types_of(untraced)
    before = table.types
    for step in trace:
        assert {id(it) for it in step.kept}.isdisjoint(id(it) for it in step.rejected)
        assert sorted(it.name for it in (*step.kept, *step.rejected)) == sorted(
            it.name for it in before
        )
        assert bool(step.cause) == bool(before and not step.kept)
        before = step.kept
    # `filter_options` is the claim's part of the same steps (no minValues here).
    claim, _, outcome = filter_options(
        table, options, reqs, None, _groups(table, spread), asked, relax_min_values=False
    )
    assert claim.tolist() == run_steps(CLAIM_STEPS, question(), options)[0].tolist()
    assert outcome.empty == (not claim.any())


def _pool(zone: list[str], family: list[str], limit: dict[str, int] | None) -> dict[str, Any]:
    doc = edit(
        gpu_pool(),
        "spec.template.spec.requirements",
        [
            {"key": ZONE, "operator": "In", "values": zone},
            {"key": FAMILY, "operator": "In", "values": family},
        ],
    )
    if limit is not None:
        doc = edit(
            doc, "spec.limits", {k: str(v // 1000 if k == "cpu" else v) for k, v in limit.items()}
        )
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    unavailable,
    zones,
    families,
    limits,
    st.sampled_from([None, 1, 2, 8]),
    st.sampled_from(["500m", "3", "40"]),
    st.booleans(),
    st.none() | st.sampled_from(ZONES),
)
def test_explain_says_usable_exactly_when_the_scheduler_gives_the_pod_a_new_nodeclaim(  # noqa: PLR0917 - hypothesis
    gone: tuple[tuple[str, str], ...],
    zone: list[str],
    family: list[str],
    limit: dict[str, int] | None,
    gpus: int | None,
    cpu: str,
    tolerates: bool,
    selected: str | None,
) -> None:
    spec: dict[str, Any] = {"gpu": gpus, "cpu": cpu}
    if tolerates:
        spec["tolerations"] = [GPU_TOLERATION]
    if selected is not None:
        spec["nodeSelector"] = {ZONE: selected}
    (nodepool,), (the_pod,) = load_models(_pool(zone, family, limit), pod("p", **spec))
    pools = [PoolInput(nodepool, _types(gone))]
    scheduler = Scheduler(pools, pending_pods=[the_pod])
    (explained,) = scheduler.explain(the_pod, pools)
    results = Scheduler(pools, pending_pods=[the_pod]).solve([the_pod])
    placed = any(c.pods for c in results.new_node_claims)
    assert (explained.verdict == "usable") == placed, (explained, results.pod_errors)
