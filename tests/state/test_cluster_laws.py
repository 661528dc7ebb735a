"""Laws of the mutable Cluster over any sequence of what controllers do to it: every pod is in
exactly one place of the snapshot (pending, on one state node, or bound to a node that is
gone), a nominated pod is never pending, and a snapshot built from the cluster's objects
anew is the same."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Node, Pod
from gpucap.apis.labels import INITIALIZED
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.serde import Manifests
from gpucap.runtime.clock import FakeClock
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot, snapshot
from tests.builders import GPU_TOLERATION, deployment, load, nodepool
from tests.state.builders import node, node_claim

BASE: Manifests = load(
    nodepool(),
    node("ip-1", provider_id="aws:///a/i-1"),
    node_claim("gpu-1", provider_id="aws:///a/i-1"),
    node("ip-2", provider_id="aws:///a/i-2", gpus=0, initialized=False),
    node_claim("gpu-2", provider_id="aws:///a/i-2", node_name="ip-2"),
    node_claim("gpu-3", provider_id="aws:///b/i-3"),
    node_claim("gpu-4"),
    deployment(replicas=6, gpu=1, tolerations=[GPU_TOLERATION]),
).objects
PODS = [p.key for p in BASE.pods]
CLAIMS = [c.name for c in BASE.nodeclaims]
NODES = [n.metadata.name for n in BASE.nodes]

operation = st.one_of(
    st.tuples(
        st.just("nominate"),
        st.sampled_from(PODS),
        st.sampled_from(CLAIMS),
        st.none() | st.floats(0, 60),
    ),
    st.tuples(st.just("bind"), st.sampled_from(PODS), st.sampled_from(NODES)),
    st.tuples(st.just("unbind"), st.sampled_from(PODS)),
    st.tuples(st.just("delete_claim"), st.sampled_from(CLAIMS)),
    st.tuples(st.just("delete_node"), st.sampled_from(NODES)),
    st.tuples(st.just("advance"), st.floats(0, 30)),
)


def run(ops: list[tuple[object, ...]]) -> tuple[Cluster, FakeClock]:
    clock = FakeClock()
    cluster = Cluster.from_manifests(BASE, clock=clock)
    for op in ops:
        do(cluster, clock, op)
    return cluster, clock


def do(cluster: Cluster, clock: FakeClock, op: tuple[object, ...]) -> None:
    kind = op[0]
    present = {p.key for p in cluster.pods()}
    if kind in {"nominate", "bind", "unbind"} and op[1] not in present:
        return  # scaled away (only the scaling law below scales)
    if kind == "nominate":
        pod, claim, until = op[1], op[2], op[3]
        if cluster.node_claim(str(claim)) is not None:
            u = None if until is None else clock.monotonic() + float(str(until))
            cluster.nominate(str(pod), str(claim), until=u)
    elif kind == "bind" and cluster.node(str(op[2])) is not None:
        cluster.bind(str(op[1]), str(op[2]))
    elif kind == "unbind":
        cluster.unbind(str(op[1]))
    elif kind == "delete_claim":
        cluster.delete_node_claim(str(op[1]))
    elif kind == "delete_node":
        cluster.delete_node(str(op[1]))
    elif kind == "advance":
        clock.advance(float(str(op[1])))
    elif kind == "scale":
        doc = deployment(replicas=int(str(op[1])), gpu=1, tolerations=[GPU_TOLERATION])
        cluster.apply(load(doc).objects.workloads[0])


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


with_scaling = st.one_of(operation, st.tuples(st.just("scale"), st.integers(0, 9)))


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
    clock = FakeClock()
    cluster = Cluster.from_manifests(BASE, clock=clock)
    for op in ops:
        do(cluster, clock, op)
    scan = [p.key for p in cluster.pods() if p.spec.node_name == name]
    others = [p for p in cluster.pods() if p.spec.node_name != name]
    released = cluster.delete_node(name)
    assert [*released.pending, *released.deleted] == scan
    assert not released.deleted  # BASE has no DaemonSet pods
    assert [p for p in cluster.pods() if p.key not in set(scan)] == others
    assert all(cluster.pod(k).spec.node_name is None for k in scan)


def rebuilt(cluster: Cluster) -> Snapshot:
    """The snapshot built from scratch, as `Cluster.snapshot` defines it: `state.snapshot`
    of the pods not nominated (a bound pod stays on its node even when nominated elsewhere:
    its node is being deleted), then nominated pods appended to their NodeClaims' state nodes
    and the marks applied."""
    nominated = cluster.nominations()
    pods = [p for p in cluster.pods() if p.key not in nominated or p.spec.node_name]
    snap = snapshot(pods, cluster.nodes(), cluster.node_claims())
    extra: dict[str, list[Pod]] = {}
    for key, claim in nominated.items():
        extra.setdefault(cluster._state_node_name(claim), []).append(cluster.pod(key))
    marked = {cluster._state_node_name(n) for n in cluster.marked_for_deletion()}
    nodes = tuple(
        replace(
            n,
            pods=(*n.pods, *extra.get(n.name, ())),
            marked_for_deletion=n.marked_for_deletion or n.name in marked,
        )
        for n in snap.nodes
    )
    return replace(snap, nodes=nodes)


changes = st.one_of(
    with_scaling,
    st.tuples(st.just("mark"), st.sampled_from([*CLAIMS, *NODES])),
    st.tuples(st.just("unmark"), st.sampled_from([*CLAIMS, *NODES])),
    st.tuples(st.just("initialize"), st.sampled_from(NODES)),
    st.tuples(st.just("relabel_claim"), st.sampled_from(CLAIMS)),
    st.tuples(st.just("snapshot")),
    st.tuples(st.just("repoint"), st.sampled_from(CLAIMS), st.sampled_from(NODES)),
    st.tuples(st.just("readd_node"), st.sampled_from(NODES)),
)


def change(
    cluster: Cluster,
    clock: FakeClock,
    claims: dict[str, NodeClaim],
    nodes: dict[str, Node],
    op: tuple[object, ...],
    *,
    serial: int,
) -> None:
    """Apply one of `changes` (`serial` goes into a relabel's value)."""
    if op[0] == "readd_node":
        # A deleted Node registers again: it comes back at the end of the order.
        if cluster.node(str(op[1])) is None:
            cluster.add_node(nodes[str(op[1])])
    elif op[0] == "mark":
        cluster.mark_for_deletion(str(op[1]))
    elif op[0] == "unmark":
        cluster.unmark_for_deletion(str(op[1]))
    elif op[0] == "initialize" and (n := cluster.node(str(op[1]))) is not None:
        labels = {**n.metadata.labels, INITIALIZED: "true"}
        meta = n.metadata.model_copy(update={"labels": labels})
        cluster.update_node(n.model_copy(update={"metadata": meta}))
    elif op[0] == "relabel_claim" and (c := cluster.node_claim(str(op[1]))) is not None:
        labels = {**c.metadata.labels, "example.com/seen": str(serial)}
        meta = c.metadata.model_copy(update={"labels": labels})
        cluster.update_node_claim(c.model_copy(update={"metadata": meta}))
    elif op[0] == "repoint" and (c := cluster.node_claim(str(op[1]))) is not None:
        # The NodeClaim now names the Node (a registration), or a removed one's NodeClaim
        # comes back at the end of the order.
        n = cluster.node(str(op[2]))
        update = {"node_name": str(op[2]), "provider_id": n.spec.provider_id if n else None}
        cluster.update_node_claim(
            c.model_copy(update={"status": c.status.model_copy(update=update)})
        )
    elif op[0] == "repoint" and (c := claims.get(str(op[1]))) is not None:
        cluster.add_node_claim(c)
    elif op[0] not in ("snapshot", "repoint", "readd_node"):
        do(cluster, clock, op)


@settings(max_examples=150, deadline=None)
@given(st.lists(changes, max_size=30))
def test_the_incremental_snapshot_and_indexes_are_the_scans_after_every_change(
    ops: list[tuple[object, ...]],
) -> None:
    # `snapshot()` reuses the last snapshot and unchanged state nodes, and the NodeClaim/Node
    # look-ups read indexes; after any change (and any number of snapshots in between) they
    # must equal what is built from scratch and what a scan of the objects finds.
    clock = FakeClock()
    cluster = Cluster.from_manifests(BASE, clock=clock)
    claims = {c.name: c for c in cluster.node_claims()}
    nodes = {n.metadata.name: n for n in cluster.nodes()}
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
    clock = FakeClock()
    cluster = Cluster.from_manifests(BASE, clock=clock)
    claims = {c.name: c for c in cluster.node_claims()}
    nodes = {n.metadata.name: n for n in cluster.nodes()}
    cluster.snapshot()
    for i, op in enumerate(ops):
        change(cluster, clock, claims, nodes, op, serial=i)
        if op[0] == "snapshot":
            assert cluster.snapshot() == rebuilt(cluster)
    assert cluster.snapshot() == rebuilt(cluster)
