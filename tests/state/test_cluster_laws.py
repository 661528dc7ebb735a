"""Laws of the mutable Cluster over any sequence of what controllers do to it: every pod is in
exactly one place of the snapshot (pending, on one state node, or bound to a node that is
gone), a nominated pod is never pending, and a snapshot built from the cluster's objects
anew is the same."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.runtime.clock import FakeClock
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import snapshot
from tests.builders import daemonset, load, nodepool
from tests.scheduling.overlays import overlay
from tests.state.cluster_changes import (
    BASE,
    NODES,
    PODS,
    change,
    changes,
    do,
    fresh,
    operation,
    rebuilt,
    run,
    with_scaling,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=25))
def test_every_pod_is_in_exactly_one_place(ops: list[tuple[object, ...]]) -> None:
    # ... or, bound and nominated (the provisioner placed it ahead of its node's deletion), in
    # two: its node and its NodeClaim.
    cluster, _ = run(ops)
    snap = cluster.snapshot()
    places = [p.key for p in snap.pending]
    places += [p.key for n in snap.nodes for p in n.pods]
    places += [p.key for p in snap.unknown_node_pods]
    twice = [k for k in cluster.nominations() if cluster.pod(k).spec.node_name]
    assert sorted(places) == sorted([*PODS, *twice])
    pending = {p.key for p in snap.pending}
    assert not pending & set(cluster.nominations())
    for key, claim in cluster.nominations().items():
        nc = cluster.node_claim(claim)
        assert nc is not None
        names = (
            claim,
            nc.status.node_name,
            *[n.metadata.name for n in cluster.nodes_for_claim(nc)],
        )
        assert any(key in {p.key for p in n.pods} for n in snap.nodes if n.name in names)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=25))
def test_without_nominations_the_snapshot_is_state_snapshot_of_the_objects(
    ops: list[tuple[object, ...]],
) -> None:
    cluster, _ = run([op for op in ops if op[0] != "nominate"])
    assert cluster.snapshot() == snapshot(cluster.pods(), cluster.nodes(), cluster.node_claims())


@settings(max_examples=100, deadline=None)
@given(st.lists(with_scaling, max_size=25))
def test_pods_on_is_the_scan_of_the_pods_bound_to_the_node_in_cluster_order(
    ops: list[tuple[object, ...]],
) -> None:
    # `pods_on` answers from an index that every write of the pods keeps; it must stay the
    # scan after any mix of binds, evictions, node deletions and scaling.
    clock = FakeClock()
    cluster = Cluster.from_manifests(BASE, clock=clock)
    for op in ops:
        do(cluster, clock, op)
        for name in (*NODES, "nowhere"):
            scan = [p for p in cluster.pods() if p.spec.node_name == name]
            assert [id(p) for p in cluster.pods_on(name)] == [id(p) for p in scan]


@settings(max_examples=100, deadline=None)
@given(st.lists(with_scaling, max_size=25), st.sampled_from(NODES))
def test_deleting_a_node_releases_the_scan_of_its_pods_in_cluster_order(
    ops: list[tuple[object, ...]], name: str
) -> None:
    # `delete_node` reads the `pods_on` index instead of scanning every pod: the pods it
    # releases (and their order) are the scan's, and the pods that stay are untouched.
    cluster, _ = run(ops)
    scan = [p.key for p in cluster.pods() if p.spec.node_name == name]
    others = [p for p in cluster.pods() if p.spec.node_name != name]
    released = cluster.delete_node(name)
    assert [*released.pending, *released.deleted] == scan
    assert not released.deleted  # BASE has no DaemonSet pods
    assert [p for p in cluster.pods() if p.key not in set(scan)] == others
    assert all(cluster.pod(k).spec.node_name is None for k in scan)


@settings(max_examples=150, deadline=None)
@given(st.lists(changes, max_size=30))
def test_the_incremental_snapshot_and_indexes_are_the_scans_after_every_change(
    ops: list[tuple[object, ...]],
) -> None:
    # `snapshot()` reuses the last snapshot and unchanged state nodes, and the NodeClaim/Node
    # look-ups read indexes; after any change (and any number of snapshots in between) they
    # must equal what is built from scratch and what a scan of the objects finds.
    cluster, clock, claims, nodes = fresh()
    for op in ops:
        change(cluster, clock, claims, nodes, op, serial=len(ops))
        assert cluster.has_pending() == bool(rebuilt(cluster).pending)
        assert cluster.snapshot() == rebuilt(cluster)
        assert cluster.synced() == all(c.status.provider_id for c in cluster.node_claims())
        for pool in [*(np.metadata.name for np in BASE.nodepools), "nowhere"]:
            assert cluster.nodepool(pool) is cluster.get("NodePool", None, pool)
        for n in cluster.nodes():
            pid = n.spec.provider_id
            scan = next(
                (c for c in cluster.node_claims() if pid and c.status.provider_id == pid), None
            )
            scan = scan or next(
                (c for c in cluster.node_claims() if c.status.node_name == n.metadata.name), None
            )
            assert cluster.node_claim_for_node(n) is scan
        for c in cluster.node_claims():
            pid = c.status.provider_id
            scanned = [n for n in cluster.nodes() if pid and n.spec.provider_id == pid]
            assert cluster.nodes_for_claim(c) == scanned


@settings(max_examples=150, deadline=None)
@given(st.lists(changes, max_size=40))
def test_the_snapshot_after_many_changes_is_the_rebuilt_one(ops: list[tuple[object, ...]]) -> None:
    # Snapshots only where the ops say and at the end: several changes between two builds,
    # a new layout among them (a Node re-added, a NodeClaim repointed) together with writes
    # of the state nodes that keep their place, as the simulator's passes see them.
    cluster, clock, claims, nodes = fresh()
    cluster.snapshot()
    for i, op in enumerate(ops):
        change(cluster, clock, claims, nodes, op, serial=i)
        if op[0] == "snapshot":
            assert cluster.snapshot() == rebuilt(cluster)
    assert cluster.snapshot() == rebuilt(cluster)


_KIND_OPS = st.lists(
    st.tuples(
        st.sampled_from(["apply", "delete"]),
        st.sampled_from(["NodePool", "DaemonSet", "NodeOverlay"]),
        st.sampled_from(["a", "b", "c"]),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(ops=_KIND_OPS)
def test_the_objects_of_a_kind_are_the_scan_of_the_objects_after_every_apply_and_delete(
    ops: list[tuple[str, str, str]],
) -> None:
    cluster = Cluster.from_manifests(BASE)
    for verb, kind, name in ops:
        if verb == "apply":
            obj = (
                overlay(name, price="1")
                if kind == "NodeOverlay"
                else load(nodepool(name) if kind == "NodePool" else daemonset(name))
                .objects.items[0]
                .obj
            )
            cluster.apply(obj)
        else:
            cluster.delete(kind, "default" if kind == "DaemonSet" else None, name)
        for k, got in (
            ("NodePool", cluster.nodepools()),
            ("DaemonSet", cluster.daemonsets()),
            ("NodeOverlay", cluster.nodeoverlays()),
        ):
            assert got == [m.obj for m in cluster._objects.values() if m.obj.kind == k]
            got.clear()  # a caller's list is its own: the next answer is whole again
        assert [np.name for np in cluster.nodepools()] == [
            m.obj.metadata.name for m in cluster._objects.values() if m.obj.kind == "NodePool"
        ]
