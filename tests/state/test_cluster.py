"""The mutable Cluster: the same snapshot as `state.snapshot.snapshot` for the same objects, and
what only a live cluster has (nominations, evictions, applied workloads, NodePool usage)."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.serde import Manifests, load_paths
from gpucap.runtime.clock import FakeClock
from gpucap.state.cluster import NOMINATION_WINDOW, Cluster
from gpucap.state.snapshot import snapshot
from tests.builders import GPU_TOLERATION, daemonset, deployment, edit, load, nodepool, pod
from tests.realworld.corpus import PROVENANCE, ROOT
from tests.state.builders import node, node_claim

GROUPS = sorted({f["group"] for f in PROVENANCE})


def objects(*docs: dict[str, Any]) -> Manifests:
    result = load(*docs)
    assert result.errors == [], [str(e) for e in result.errors]
    return result.objects


def same_snapshot(m: Manifests) -> None:
    assert Cluster.from_manifests(m).snapshot() == snapshot(m.pods, m.nodes, m.nodeclaims)


@pytest.mark.parametrize("group", GROUPS)
def test_snapshot_equals_state_snapshot_on_the_real_world_corpus(group: str) -> None:
    files = sorted(str(ROOT / f["file"]) for f in PROVENANCE if f["group"] == group)
    same_snapshot(load_paths(files).objects)


def test_the_corpus_gives_the_equality_something_to_compare() -> None:
    # At least the groups with pods make the test above more than () == ().
    with_pods = [
        g
        for g in GROUPS
        if load_paths(
            sorted(str(ROOT / f["file"]) for f in PROVENANCE if f["group"] == g)
        ).objects.pods
    ]
    assert len(with_pods) >= 20


def test_snapshot_equals_state_snapshot_with_nodes_node_claims_and_bound_pods() -> None:
    same_snapshot(
        objects(
            nodepool(),
            # a registered, uninitialized node whose GPU is not advertised yet
            node("ip-1", provider_id="aws:///us-east-1a/i-1", gpus=0, initialized=False),
            node_claim("gpu-1", provider_id="aws:///us-east-1a/i-1", node_name="ip-1"),
            # an initialized node, time-sliced 4 ways, matched by provider ID only
            node("ip-2", provider_id="aws:///us-east-1a/i-2", gpus=4),
            node_claim("gpu-2", provider_id="aws:///us-east-1a/i-2"),
            # a claim in flight, one not launched, a node Karpenter does not manage
            node_claim("gpu-3", provider_id="aws:///us-east-1b/i-3"),
            node_claim("gpu-4"),
            node("static-1", pool=None, taints=[]),
            node("ip-5", deleting=True),
            pod("bound", gpu=1, tolerations=[GPU_TOLERATION], nodeName="ip-2"),
            pod("elsewhere", nodeName="not-in-the-input"),
            pod("pending", gpu=1, tolerations=[GPU_TOLERATION]),
            deployment(replicas=3, gpu=1, tolerations=[GPU_TOLERATION]),
            daemonset(),
        )
    )


def test_a_cluster_built_by_applying_objects_one_by_one_has_the_same_snapshot() -> None:
    docs = [
        nodepool(),
        node("ip-2", provider_id="aws:///us-east-1a/i-2", gpus=4),
        node_claim("gpu-2", provider_id="aws:///us-east-1a/i-2"),
        pod("bound", gpu=1, tolerations=[GPU_TOLERATION], nodeName="ip-2"),
        deployment(replicas=2, gpu=1, tolerations=[GPU_TOLERATION]),
    ]
    m = objects(*docs)
    cluster = Cluster()
    for item in m.items:
        cluster.apply(item.obj)
    assert cluster.snapshot() == snapshot(m.pods, m.nodes, m.nodeclaims)


def gpu_cluster(clock: FakeClock | None = None) -> Cluster:
    return Cluster.from_manifests(
        objects(
            nodepool(),
            node_claim("gpu-1", provider_id="aws:///us-east-1a/i-1"),
            deployment(replicas=3, gpu=1, tolerations=[GPU_TOLERATION]),
        ),
        clock=clock,
    )


def test_nominated_pods_count_on_their_claim_and_are_not_pending() -> None:
    cluster = gpu_cluster()
    cluster.nominate("default/vllm-0", "gpu-1")
    snap = cluster.snapshot()
    assert [p.key for p in snap.pending] == ["default/vllm-1", "default/vllm-2"]
    (claim,) = snap.nodes
    assert [p.key for p in claim.pods] == ["default/vllm-0"]
    assert cluster.nominations() == {"default/vllm-0": "gpu-1"}


def test_a_nomination_ends_at_its_time_and_the_pod_pends_again() -> None:
    clock = FakeClock()
    cluster = gpu_cluster(clock)
    cluster.nominate("default/vllm-0", "gpu-1", until=NOMINATION_WINDOW)
    clock.advance(NOMINATION_WINDOW - 1)
    assert "default/vllm-0" not in [p.key for p in cluster.pending()]
    clock.advance(1)
    assert next(p.key for p in cluster.pending()) == "default/vllm-0"  # in its place
    assert cluster.snapshot().nodes[0].pods == ()


def test_a_cluster_whose_pending_pods_are_all_nominated_has_none_pending_until_one_ends() -> None:
    clock = FakeClock()
    cluster = gpu_cluster(clock)
    assert cluster.has_pending()
    cluster.nominate("default/vllm-0", "gpu-1")
    cluster.nominate("default/vllm-1", "gpu-1")
    assert cluster.has_pending()
    cluster.nominate("default/vllm-2", "gpu-1", until=NOMINATION_WINDOW)
    assert not cluster.has_pending()
    assert cluster.snapshot().pending == ()
    clock.advance(NOMINATION_WINDOW)
    assert cluster.has_pending()
    assert [p.key for p in cluster.snapshot().pending] == ["default/vllm-2"]


def test_deleting_a_claim_returns_its_nominated_pods_to_pending() -> None:
    cluster = gpu_cluster()
    cluster.nominate("default/vllm-0", "gpu-1")
    cluster.nominate("default/vllm-2", "gpu-1")
    released = cluster.delete_node_claim("gpu-1")
    assert released.pending == ("default/vllm-0", "default/vllm-2")
    assert [p.key for p in cluster.pending()] == [f"default/vllm-{i}" for i in range(3)]
    assert cluster.nominations() == {}


def test_binding_ends_the_nomination_and_the_pod_counts_on_the_node() -> None:
    cluster = gpu_cluster()
    cluster.apply(load(node("ip-1", provider_id="aws:///us-east-1a/i-1")).objects.nodes[0])
    cluster.nominate("default/vllm-0", "gpu-1")
    cluster.bind("default/vllm-0", "ip-1")
    assert cluster.nominations() == {}
    (state,) = cluster.snapshot().nodes
    assert (state.name, [p.key for p in state.pods]) == ("ip-1", ["default/vllm-0"])
    with pytest.raises(KeyError):
        cluster.bind("default/vllm-1", "no-such-node")


def test_deleting_a_node_returns_its_pods_to_pending_and_drops_its_daemonset_pods() -> None:
    ds_pod = edit(
        pod("plugin-x", tolerations=[GPU_TOLERATION], nodeName="ip-1"),
        "metadata.ownerReferences",
        [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "plugin", "uid": "1"}],
    )
    cluster = Cluster.from_manifests(
        objects(
            node("ip-1"),
            pod("app", gpu=1, tolerations=[GPU_TOLERATION], nodeName="ip-1"),
            ds_pod,
        )
    )
    released = cluster.delete_node("ip-1")
    assert (released.pending, released.deleted) == (("default/app",), ("default/plugin-x",))
    (pending,) = cluster.pending()
    assert (pending.key, pending.spec.node_name, pending.status.phase) == (
        "default/app",
        None,
        "Pending",
    )


def test_applying_a_workload_creates_its_pods_and_scaling_down_deletes_them() -> None:
    cluster = Cluster()
    vllm = objects(deployment(replicas=3, gpu=1)).workloads[0]
    applied = cluster.apply(vllm)
    assert applied.created == ("default/vllm-0", "default/vllm-1", "default/vllm-2")
    cluster.apply(load(node("ip-1", taints=[])).objects.nodes[0])
    cluster.bind("default/vllm-0", "ip-1")
    scaled = objects(deployment(replicas=1, gpu=1)).workloads[0]
    applied = cluster.apply(scaled)
    assert (applied.created, applied.deleted) == ((), ("default/vllm-1", "default/vllm-2"))
    assert cluster.pod("default/vllm-0").spec.node_name == "ip-1"  # the bound pod is kept
    assert cluster.delete("Deployment", None, "vllm").deleted == ("default/vllm-0",)
    assert cluster.pods() == []


def test_a_workload_loaded_with_the_cluster_scales_and_deletes_like_an_applied_one() -> None:
    # A workload from `from_manifests` was never applied: its current pods are expanded from
    # the object; one applied later is diffed against the keys kept when it was applied.
    cluster = Cluster.from_manifests(objects(deployment(replicas=3, gpu=1)))
    applied = cluster.apply(objects(deployment(replicas=4, gpu=1)).workloads[0])
    assert (applied.created, applied.deleted) == (("default/vllm-3",), ())
    applied = cluster.apply(objects(deployment(replicas=2, gpu=1)).workloads[0])
    assert (applied.created, applied.deleted) == ((), ("default/vllm-2", "default/vllm-3"))
    assert cluster.delete("Deployment", None, "vllm").deleted == (
        "default/vllm-0",
        "default/vllm-1",
    )
    assert cluster.pods() == []


def test_reapplying_an_object_replaces_it_where_it_stood() -> None:
    cluster = Cluster()
    for doc in (nodepool("a"), nodepool("b"), daemonset()):
        cluster.apply(objects(doc).items[0].obj)
    cluster.apply(objects(edit(nodepool("a"), "spec.weight", 5)).nodepools[0])
    assert [(p.name, p.spec.weight) for p in cluster.nodepools()] == [("a", 5), ("b", None)]
    assert [m.obj.kind for m in cluster.objects().items] == ["NodePool", "NodePool", "DaemonSet"]
    cluster.delete("NodePool", None, "a")
    assert [p.name for p in cluster.nodepools()] == ["b"]
    assert cluster.daemonsets()[0].metadata.namespace == "kube-system"


def test_nodepool_usage_counts_physical_gpus_in_flight_and_advertised_gpus_once_initialized() -> (
    None
):
    cluster = Cluster.from_manifests(
        objects(
            nodepool(),
            # in flight: the launched type's capacity (1 physical GPU)
            node_claim("gpu-1", provider_id="aws:///us-east-1a/i-1"),
            # registered, plugin not up: the Node reports 0, the NodeClaim's 1 counts
            node("ip-2", provider_id="aws:///us-east-1a/i-2", gpus=0, initialized=False),
            node_claim("gpu-2", provider_id="aws:///us-east-1a/i-2"),
            # initialized, time-sliced 4 ways: what the Node advertises
            node("ip-3", provider_id="aws:///us-east-1a/i-3", gpus=4),
            node_claim("gpu-3", provider_id="aws:///us-east-1a/i-3"),
        )
    )
    usage = cluster.nodepool_usage("gpu")
    assert (usage["nvidia.com/gpu"], usage["nodes"], usage["cpu"]) == (6, 3, 12000)
    assert [(n.name, n.capacity["nvidia.com/gpu"]) for n in cluster.snapshot().nodes] == [
        ("ip-2", 1),
        ("ip-3", 4),
        ("gpu-1", 1),
    ]
    assert cluster.nodepool_exceeded("gpu") == []
    cluster.apply(load(node("ip-4", provider_id="aws:///us-east-1a/i-4", gpus=4)).objects.nodes[0])
    assert cluster.nodepool_exceeded("gpu") == [("nvidia.com/gpu", 10, 6)]
    cluster.mark_for_deletion("ip-4")
    assert cluster.nodepool_usage("gpu")["nvidia.com/gpu"] == 6
    assert cluster.state_node("ip-4") is not None
    assert cluster.state_node("ip-4").marked_for_deletion  # type: ignore[union-attr]


def test_synced_waits_for_every_claim_to_launch() -> None:
    cluster = Cluster.from_manifests(objects(node_claim("gpu-1", provider_id="aws:///a/i-1")))
    assert cluster.synced()
    cluster.add_node_claim(load(node_claim("gpu-2")).objects.nodeclaims[0])
    assert not cluster.synced()
