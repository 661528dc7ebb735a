"""Lint stands on `plan`'s provider stack (`operator/plan.py`): the instance types its rules read
for a NodePool are those `plan` schedules on, NodeOverlays applied (prices and capacities), the
overlays judged once, against the pools `plan` plans; the stack is built once per lint run.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.serde import Manifests, load_text
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings
from gpucap.lint import context as lint_context
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run
from gpucap.operator.plan import plan, pools_for
from gpucap.scheduling.instancetypes import InstanceType
from tests.builders import DELETE, GPU_TOLERATION, deployment, edit, nodeclass, nodepool, to_yaml
from tests.lint.builders import CATALOG, FILE, lint, overlay

G5_XLARGE = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
G6F = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6f"]}
ONE_GPU = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]}


def price_overlay(name: str, price: str, *, weight: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"requirements": [G5_XLARGE], "price": price}
    if weight is not None:
        spec["weight"] = weight
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": spec,
    }


def g6f_pool() -> dict[str, Any]:
    doc = edit(nodepool("fractional"), "spec.template.spec.requirements[2]", G6F)
    return edit(doc, "spec.template.spec.taints", DELETE)


def loaded(*docs: dict[str, Any]) -> tuple[LintContext, Manifests]:
    result = load_text(to_yaml(*docs), FILE)
    assert not result.errors, [str(e) for e in result.errors]
    return LintContext(result.manifests, CATALOG), Manifests(tuple(result.manifests))


def shape(types: Any) -> list[tuple[Any, ...]]:
    """What a rule can read of instance types: names, capacities and priced offerings."""
    return [
        (
            it.name,
            tuple(sorted(it.capacity.items())),
            tuple((o.zone, o.capacity_type, o.price, o.available) for o in it.offerings),
        )
        for it in types
    ]


def plan_types(manifests: Manifests) -> dict[str, Any]:
    return {p.nodepool.name: p.instance_types for p in pools_for(manifests, CATALOG, [])}


def by_name(types: Any, name: str) -> InstanceType:
    return next(it for it in types if it.name == name)


def test_lint_sees_the_instance_types_plan_sees_through_a_price_overlay() -> None:
    ctx, manifests = loaded(nodepool(), nodeclass(), price_overlay("cheap-g5", "0.01"))
    (pool,) = ctx.pools
    planned = plan_types(manifests)["gpu"]
    assert shape(ctx.types_for(pool)) == shape(planned)
    g5 = by_name(pool.instance_types, "g5.xlarge")
    assert {o.price for o in g5.offerings} == {0.01}
    # The catalog's own price, which lint read before it stood on the stack, is another.
    catalog_g5 = by_name(CATALOG.instance_types(NodeClassSettings()), "g5.xlarge")
    assert 0.01 not in {o.price for o in catalog_g5.offerings}


def test_lint_sees_a_capacity_overlay_that_adds_nvidia_gpu_to_a_type_as_plan_does() -> None:
    gpus = overlay("g6f-gpu", G6F, {"nvidia.com/gpu": "1"})
    ctx, manifests = loaded(g6f_pool(), nodeclass(), gpus)
    (pool,) = ctx.pools
    planned = plan_types(manifests)["fractional"]
    assert shape(ctx.types_for(pool)) == shape(planned)
    launchable = {it.name for it in pool.instance_types}
    planned_gpus = {
        it.name for it in planned if it.name in launchable and it.capacity.get("nvidia.com/gpu")
    }
    assert planned_gpus
    assert {it.name for it in pool.gpu_types} == planned_gpus
    # The GPUs come only from the overlay: the AWS provider gives these types none.
    assert pool.overlay_gpu_names == planned_gpus
    assert all(pool.physical_gpus(it) == 1 for it in pool.gpu_types)


def test_a_time_slicing_overlay_sizes_lint_types_as_plan_does_and_physical_gpus_stay() -> None:
    four = overlay("time-sliced", ONE_GPU, {"nvidia.com/gpu": "4"})
    ctx, manifests = loaded(nodepool(), nodeclass(), four)
    (pool,) = ctx.pools
    assert shape(ctx.types_for(pool)) == shape(plan_types(manifests)["gpu"])
    g5 = by_name(pool.gpu_types, "g5.xlarge")
    assert g5.capacity["nvidia.com/gpu"] == 4
    assert pool.physical_gpus(g5) == 1
    assert pool.overlay_gpu_names == set()


def test_a_gpu_limit_below_an_overlaid_node_is_unreachable_for_lint_and_plan_alike(
    tmp_path: Any,
) -> None:
    # Every 1-GPU type advertises 4 through the overlay: a limit of 2 admits none of them.
    pool = edit(nodepool(), "spec.template.spec.requirements[2]", ONE_GPU)
    pool = edit(pool, "spec.limits", {"nvidia.com/gpu": "2"})
    four = overlay("time-sliced", ONE_GPU, {"nvidia.com/gpu": "4"})
    pod = deployment("trainer", replicas=1, gpu=1, tolerations=[GPU_TOLERATION])
    linted = lint("NP004", pool, nodeclass(), four, pod)
    assert any("below the smallest allowed instance type" in f.message for f in linted.findings)
    _, manifests = loaded(pool, nodeclass(), four, pod)
    made = plan(manifests, CATALOG)
    assert not made.node_claims
    assert [k for k in made.pod_errors if k.startswith("default/trainer")]
    # Without the overlay the limit admits 1-GPU nodes, and lint says nothing.
    assert lint("NP004", pool, nodeclass(), pod).findings == []


def test_an_overlay_rejected_for_a_conflict_is_rejected_for_lint_as_for_plan() -> None:
    docs = (
        nodepool(),
        nodeclass(),
        price_overlay("a-cheap", "0.01", weight=10),
        price_overlay("b-cheaper", "0.02", weight=10),
    )
    ctx, manifests = loaded(*docs)
    notes = plan(manifests, CATALOG).notes
    rejected = [o.metadata.name for o in ctx.overlays if o not in ctx.accepted_overlays]
    assert rejected == ["a-cheap"]
    assert any(n.startswith("NodeOverlay a-cheap conflicts with b-cheaper") for n in notes)
    (pool,) = ctx.pools
    assert {o.price for o in by_name(pool.instance_types, "g5.xlarge").offerings} == {0.02}


def unresolved_class(name: str) -> dict[str, Any]:
    """An EC2NodeClass whose alias resolves no AMI: its NodePools are not Ready."""
    return edit(nodeclass(name), "spec.amiSelectorTerms", [{"alias": "al2023@v20000101"}])


def not_ready_pool() -> dict[str, Any]:
    return edit(nodepool("broken"), "spec.template.spec.nodeClassRef.name", "broken")


def test_a_not_ready_nodepool_gets_the_overlays_plan_accepted() -> None:
    docs = (nodepool(), nodeclass(), not_ready_pool(), unresolved_class("broken"))
    ctx, manifests = loaded(*docs, price_overlay("cheap-g5", "0.01"))
    assert [p.name for p in ctx.nodepool_readiness.ready] == ["gpu"]
    assert set(plan_types(manifests)) == {"gpu"}
    broken = next(p for p in ctx.pools if p.name == "broken")
    assert {o.price for o in by_name(broken.instance_types, "g5.xlarge").offerings} == {0.01}


def test_a_conflict_only_a_not_ready_nodepool_shows_rejects_no_overlay_plan_accepts() -> None:
    # Both overlays set g5.xlarge's price in NodePool broken only, which plan does not judge.
    only_broken = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["broken"]}
    a, b = (
        edit(price_overlay(name, price, weight=5), "spec.requirements", [G5_XLARGE, only_broken])
        for name, price in (("a-cheap", "0.01"), ("b-cheaper", "0.02"))
    )
    a = edit(a, "spec.capacity", {"nvidia.com/gpu.shared": "8"})
    docs = (nodepool(), nodeclass(), not_ready_pool(), unresolved_class("broken"), a, b)
    ctx, manifests = loaded(*docs)
    assert not [n for n in plan(manifests, CATALOG).notes if "conflicts with" in n]
    assert [o.metadata.name for o in ctx.accepted_overlays] == ["b-cheaper", "a-cheap"]
    broken = next(p for p in ctx.pools if p.name == "broken")
    g5 = by_name(broken.instance_types, "g5.xlarge")
    # The first accepted overlay in Karpenter's order (names descending) sets the price, and
    # a-cheap, accepted, still adds its resource.
    assert {o.price for o in g5.offerings} == {0.02}
    assert g5.capacity["nvidia.com/gpu.shared"] == 8


def test_lint_builds_the_operator_stack_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    built = []
    real = lint_context.plan_stack

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lint_context, "plan_stack", counted)
    ctx, _ = loaded(nodepool(), g6f_pool(), nodeclass(), price_overlay("cheap-g5", "0.01"))
    run(ctx, LintConfig())
    assert len(built) == 1


# ---- the law: whatever the overlays, lint's types are plan's ----------------------------------
G5 = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
REQUIREMENTS = (G5_XLARGE, ONE_GPU, G6F, G5)
SPECS: tuple[dict[str, Any], ...] = (
    {"price": "0.05"},
    {"priceAdjustment": "-10%"},
    {"priceAdjustment": "+0.5"},
    {"capacity": {"nvidia.com/gpu": "4"}},
    {"capacity": {"nvidia.com/gpu": "1"}},
    {"capacity": {"nvidia.com/gpu.shared": "8"}},
)


@st.composite
def overlays(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 4))):
        spec: dict[str, Any] = {"requirements": [draw(st.sampled_from(REQUIREMENTS))]}
        spec.update(draw(st.sampled_from(SPECS)))
        weight = draw(st.sampled_from((None, 1, 2)))
        if weight is not None:
            spec["weight"] = weight
        doc = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay"}
        out.append({**doc, "metadata": {"name": f"overlay-{i}"}, "spec": spec})
    return out


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(overlays())
def test_whatever_the_overlays_lint_reads_the_types_plan_schedules_on(
    docs: list[dict[str, Any]],
) -> None:
    ctx, manifests = loaded(nodepool(), g6f_pool(), nodeclass(), *docs)
    planned = plan_types(manifests)
    assert {p.name for p in ctx.pools} == set(planned)
    for pool in ctx.pools:
        assert shape(ctx.types_for(pool)) == shape(planned[pool.name])
        assert [it.name for it in pool.gpu_types] == [
            it.name for it in pool.instance_types if it.capacity.get("nvidia.com/gpu", 0) > 0
        ]
        # Physical GPUs are the AWS provider's, whatever an overlay advertises.
        own = {it.name: it for it in ctx.stack.aws.get_instance_types(pool.nodepool)}
        for it in pool.gpu_types:
            physical = own[it.name].capacity.get("nvidia.com/gpu", 0)
            assert pool.physical_gpus(it) == (physical or it.capacity["nvidia.com/gpu"])
