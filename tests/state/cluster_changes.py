"""The Cluster's change vocabulary for its laws: a small fleet (`BASE`), random operations on
it (what the provisioner, the scheduler binder and the lifecycle controllers do) and `change`,
which applies one; `fresh()` is a Cluster of `BASE` with its NodeClaims and Nodes by name.
Shared by tests/state/test_cluster_laws.py and test_consolidation_marks.py (not a test
module)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from hypothesis import strategies as st

from gpucap.apis.core import Node, Pod
from gpucap.apis.labels import INITIALIZED
from gpucap.apis.nodepool import NodeClaim, NodeClaimCondition
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


with_scaling = st.one_of(operation, st.tuples(st.just("scale"), st.integers(0, 9)))


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


_STAMP = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

changes = st.one_of(
    with_scaling,
    st.tuples(st.just("mark"), st.sampled_from([*CLAIMS, *NODES])),
    st.tuples(st.just("unmark"), st.sampled_from([*CLAIMS, *NODES])),
    st.tuples(st.just("initialize"), st.sampled_from(NODES)),
    st.tuples(st.just("relabel_claim"), st.sampled_from(CLAIMS)),
    st.tuples(st.just("stamp"), st.sampled_from([*CLAIMS, *NODES])),
    st.tuples(st.just("terminating"), st.sampled_from(CLAIMS)),
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
    elif op[0] == "stamp" and (c := cluster.node_claim(str(op[1]))) is not None:
        # A deletion timestamp (what `delete` of a finalized object sets).
        meta = c.metadata.model_copy(update={"deletion_timestamp": _STAMP})
        cluster.update_node_claim(c.model_copy(update={"metadata": meta}))
    elif op[0] == "stamp" and (n := cluster.node(str(op[1]))) is not None:
        meta = n.metadata.model_copy(update={"deletion_timestamp": _STAMP})
        cluster.update_node(n.model_copy(update={"metadata": meta}))
    elif op[0] == "terminating" and (c := cluster.node_claim(str(op[1]))) is not None:
        terminating = NodeClaimCondition(type="InstanceTerminating", status="True")
        conditions = [*c.status.conditions, terminating]
        status = c.status.model_copy(update={"conditions": conditions})
        cluster.update_node_claim(c.model_copy(update={"status": status}))
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
    elif op[0] not in ("snapshot", "repoint", "readd_node", "stamp", "terminating"):
        do(cluster, clock, op)


def fresh() -> tuple[Cluster, FakeClock, dict[str, NodeClaim], dict[str, Node]]:
    """A Cluster of `BASE` on a new clock, with its NodeClaims and Nodes by name (what `change`
    re-adds after a deletion)."""
    clock = FakeClock()
    cluster = Cluster.from_manifests(BASE, clock=clock)
    claims = {c.name: c for c in cluster.node_claims()}
    nodes = {n.metadata.name: n for n in cluster.nodes()}
    return cluster, clock, claims, nodes
