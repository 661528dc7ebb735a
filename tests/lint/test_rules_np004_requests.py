"""NP004 (issue 23) beyond GPU counts: a pod whose cpu, memory or other requests no NodePool it
can use can ever hold is an error. A type holds a pod when its allocatable (capacity less
kube-reserved, system-reserved and the eviction threshold) covers the pod's requests plus the
DaemonSet pods that would run beside it; a type above one of the pool's limits is never
launched. Only where no pool can take the pod: the error is a proof, not a guess."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.serde import Manifests, load_text
from gpucap.operator.plan import plan
from tests.builders import (
    GPU_TOLERATION,
    daemonset,
    deployment,
    edit,
    nodeclass,
    nodepool,
    pod,
    to_yaml,
)
from tests.lint.builders import CATALOG, lint

FAMILY = "spec.template.spec.requirements[2]"  # karpenter.k8s.aws/instance-family in nodepool()


def general(family: str = "m7i", name: str = "general", **limits: str) -> dict[str, Any]:
    """An untainted NodePool of one instance family, with `limits` (none by default)."""
    pool = edit(nodepool(name), "spec.template.spec.taints", [])
    pool = edit(
        pool,
        FAMILY,
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": [family]},
    )
    return edit(pool, "spec.limits", dict(limits))


def logging_agent(cpu: str, **spec: Any) -> dict[str, Any]:
    """A DaemonSet that runs on every node (it tolerates every taint) and requests `cpu`."""
    ds = edit(daemonset("logs"), "spec.template.spec.tolerations", [{"operator": "Exists"}])
    ds = edit(ds, "spec.template.spec.containers[0].resources.requests.cpu", cpu)
    for key, value in spec.items():
        ds = edit(ds, f"spec.template.spec.{key}", value)
    return ds


def test_np004_pod_requesting_more_cpu_than_any_allowed_type_is_an_error() -> None:
    linted = lint("NP004", general(), nodeclass(), pod("big", cpu="500"))
    f = linted.only
    assert f.severity == "error"
    assert f.object_ref == "Pod/default/big"
    assert f.line == linted.line("kind: Pod", "cpu: '500'")
    assert f.message == (
        "pod default/big requests 500 cpu but no NodePool it can use can launch a node for it "
        "(general allows at most 191.45 cpu (m7i.48xlarge) per node, after kube-reserved and "
        "DaemonSet overhead): it stays Pending"
    )


def test_np004_pod_requesting_more_memory_than_any_allowed_type_is_an_error() -> None:
    linted = lint("NP004", general(), nodeclass(), deployment("cache", 1, memory="1000Gi"))
    f = linted.only
    assert f.severity == "error"
    assert f.line == linted.line("kind: Deployment", "memory: 1000Gi")
    assert "requests 1000Gi memory but no NodePool it can use" in f.message
    assert "general allows at most 702.1Gi memory (m7i.48xlarge) per node" in f.message


def test_np004_gpu_pod_requesting_more_memory_than_any_gpu_type_is_an_error() -> None:
    big = deployment("llm", 1, gpu=1, memory="900Gi", tolerations=[GPU_TOLERATION])
    f = lint("NP004", nodepool(), nodeclass(), big).only
    assert f.severity == "error"
    assert "requests 900Gi memory" in f.message
    assert "gpu allows at most 706.3Gi memory (g5.48xlarge) per node" in f.message


def test_np004_counts_the_daemonset_pods_that_would_run_beside_the_pod() -> None:
    # 185 cpu fits an m7i.48xlarge's 191.45 alone, not beside a 10-cpu agent.
    docs = (general(), nodeclass(), pod("big", cpu="185"))
    assert lint("NP004", *docs).findings == []
    f = lint("NP004", *docs, logging_agent("10")).only
    assert "general allows at most 181.45 cpu (m7i.48xlarge) per node" in f.message


def test_np004_a_daemonset_that_does_not_run_on_the_pool_costs_it_nothing() -> None:
    elsewhere = logging_agent("10", nodeSelector={"team": "web"})  # the pool's nodes: team=ml
    assert lint("NP004", general(), nodeclass(), elsewhere, pod("big", cpu="185")).findings == []


def test_np004_pool_cpu_limit_below_the_smallest_type_that_fits_the_pod_is_an_error() -> None:
    linted = lint("NP004", general(cpu="16"), nodeclass(), pod("big", cpu="20"))
    pods = [f for f in linted.findings if f.object_ref == "Pod/default/big"]
    (f,) = pods
    assert f.severity == "error"
    assert f.message == (
        "pod default/big requests 20 cpu but no NodePool it can use can launch a node for it "
        "(general is limited to 16 cpu and its smallest type that fits the pod (m7i.8xlarge) "
        "has 32 cpu): it stays Pending"
    )


def test_np004_pool_memory_limit_below_the_smallest_type_that_fits_the_pod_is_an_error() -> None:
    linted = lint("NP004", general(memory="64Gi"), nodeclass(), pod("big", memory="100Gi"))
    (f,) = [f for f in linted.findings if f.object_ref == "Pod/default/big"]
    assert "general is limited to 64Gi memory" in f.message
    assert "(m7i.8xlarge) has 118.3Gi memory" in f.message


def test_np004_pod_another_pool_can_hold_is_not_reported() -> None:
    # m7i tops out at 768 GiB; x2iedn at 4 TiB.
    docs = (general(), general("x2iedn", "memory"), nodeclass(), pod("big", memory="1000Gi"))
    assert lint("NP004", *docs).findings == []


def test_np004_every_pool_the_pod_can_use_is_named() -> None:
    docs = (general(), general("c7i", "compute"), nodeclass(), pod("big", cpu="500"))
    f = lint("NP004", *docs).only
    assert "general allows at most 191.45 cpu (m7i.48xlarge)" in f.message
    assert "compute allows at most 191.45 cpu (c7i.48xlarge)" in f.message


def test_np004_pod_that_may_fit_an_existing_node_is_not_reported() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "big-node"},
        "status": {"allocatable": {"cpu": "500", "memory": "2Ti", "pods": "110"}},
    }
    assert lint("NP004", general(), nodeclass(), node, pod("big", cpu="400")).findings == []


def test_np004_pod_reasonable_requests_are_not_reported() -> None:
    assert lint("NP004", general(), nodeclass(), pod("web", cpu="2", memory="4Gi")).findings == []


# A law: NP004's error and `plan` agree. One pod on one m7i pool (a cpu limit or not, a
# DaemonSet or not): NP004 says it can never be scheduled exactly when `plan` leaves it Pending.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cpu=st.integers(min_value=1, max_value=260),
    memory_gi=st.integers(min_value=1, max_value=1100),
    limit=st.sampled_from([None, 16, 64, 200]),
    agent=st.sampled_from([None, "4", "30"]),
)
def test_np004_error_exactly_when_plan_leaves_the_pod_pending(
    cpu: int, memory_gi: int, limit: int | None, agent: str | None
) -> None:
    pool = general(**({"cpu": str(limit)} if limit else {}))
    docs = [pool, nodeclass(), pod("p", cpu=str(cpu), memory=f"{memory_gi}Gi")]
    if agent is not None:
        docs.append(logging_agent(agent))
    errors = [f for f in lint("NP004", *docs).findings if f.object_ref == "Pod/default/p"]
    loaded = load_text(to_yaml(*docs), "law.yaml")
    pending = "default/p" in plan(Manifests(tuple(loaded.manifests)), CATALOG).pod_errors
    assert bool(errors) == pending, (cpu, memory_gi, limit, agent, errors)


def test_np004_pod_already_bound_to_a_node_is_not_reported() -> None:
    bound = pod("big", cpu="500", nodeName="somewhere")
    assert lint("NP004", general(), nodeclass(), bound).findings == []
