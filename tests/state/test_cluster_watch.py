"""The Cluster's change feed (`Cluster.watch`): every mutation is heard by its watchers, inside
the mutation, with the kind of what changed; the simulator's bus is such a watcher, so no actor
reports a change by hand (tests/sim/test_bus.py holds that side)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.state.changes import ClusterChange
from gpucap.state.cluster import Cluster
from tests.builders import load, nodepool
from tests.state.cluster_changes import change, changes, fresh, rebuilt


def _heard(cluster: Cluster) -> list[ClusterChange]:
    heard: list[ClusterChange] = []
    cluster.watch(heard.append)
    return heard


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(changes, max_size=25))
def test_every_change_to_what_the_scheduler_reads_is_heard(ops: list[tuple[object, ...]]) -> None:
    cluster, clock, claims, nodes = fresh()
    heard = _heard(cluster)
    for serial, op in enumerate(ops):
        before = (rebuilt(cluster), cluster.objects().items, cluster.version)
        heard.clear()
        change(cluster, clock, claims, nodes, op, serial=serial)
        if op[0] == "advance":
            continue  # the clock, not the cluster: nominations run out by themselves
        after = (rebuilt(cluster), cluster.objects().items)
        if after != before[:2]:
            assert heard, f"{op} changed the cluster unheard"
        assert cluster.version == before[2] + len(heard)


def test_a_bound_pod_is_a_pod_change() -> None:
    cluster, _, _, _ = fresh()
    heard = _heard(cluster)
    pod = next(p for p in cluster.pods() if not p.spec.node_name)
    cluster.bind(pod.key, "ip-1")
    assert set(heard) == {ClusterChange.PODS}


def test_a_deletion_mark_and_a_node_claim_are_node_changes() -> None:
    cluster, _, _, _ = fresh()
    heard = _heard(cluster)
    cluster.mark_for_deletion("gpu-1")
    cluster.delete_node_claim("gpu-4")
    assert set(heard) == {ClusterChange.NODES}


def test_an_applied_nodepool_is_an_object_change() -> None:
    cluster, _, _, _ = fresh()
    heard = _heard(cluster)
    cluster.apply(load(nodepool(name="other")).objects.nodepools[0])
    assert heard == [ClusterChange.OBJECTS]


def test_deleting_what_is_not_there_is_no_change() -> None:
    cluster, _, _, _ = fresh()
    heard = _heard(cluster)
    cluster.delete("NodePool", None, "absent")
    cluster.delete("DaemonSet", "default", "absent")
    assert heard == []


def test_a_pod_turning_ready_is_a_status_change() -> None:
    cluster, _, _, _ = fresh()
    heard = _heard(cluster)
    pod = cluster.pods()[0]
    ready = pod.model_copy(update={"status": pod.status.model_copy(update={"conditions": []})})
    cluster.add_pod(ready)
    assert heard == [ClusterChange.POD_STATUS]
