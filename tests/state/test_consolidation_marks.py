"""The Cluster marks itself unconsolidated exactly where Karpenter's `state.Cluster` does
(kubernetes-sigs/karpenter `pkg/controllers/state/cluster.go` @ 2266468104f3): a law over any
sequence of what controllers do to it, against a plain reference that scans the objects before
and after each change, and the rules one by one on minimal clusters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.labels import INITIALIZED
from gpucap.runtime.clock import FakeClock
from gpucap.state.cluster import Cluster
from gpucap.state.consolidation import CONSOLIDATION_STATE_RESET_S
from tests.builders import load, nodepool, pod
from tests.state.builders import node, node_claim
from tests.state.cluster_changes import CLAIMS, change, changes, fresh

StateView = tuple[bool, bool]


def reference(cluster: Cluster) -> tuple[object, ...]:
    """What Karpenter's cluster state compares, from scans of the objects: each pod's binding;
    the launched NodeClaims and the Nodes (by name, with the provider ID that keys their state
    node); per state node `(Initialized(), MarkedForDeletion())`; the NodePools."""
    bindings = {p.key: p.spec.node_name or None for p in cluster.pods()}
    claims = {c.name: c.status.provider_id for c in cluster.node_claims() if c.status.provider_id}
    nodes = {n.metadata.name: n.spec.provider_id or n.metadata.name for n in cluster.nodes()}
    marked = cluster.marked_for_deletion()
    views: dict[str, StateView] = {}
    for key in {*claims.values(), *nodes.values()}:
        claim = next((c for c in cluster.node_claims() if c.status.provider_id == key), None)
        node_ = next(
            (n for n in cluster.nodes() if (n.spec.provider_id or n.metadata.name) == key), None
        )
        if claim is None:
            assert node_ is not None
            views[key] = (
                True,
                node_.metadata.name in marked or node_.metadata.deletion_timestamp is not None,
            )
            continue
        views[key] = (
            node_ is not None and node_.metadata.labels.get(INITIALIZED) == "true",
            claim.name in marked
            or (node_ is not None and node_.metadata.name in marked)
            or claim.metadata.deletion_timestamp is not None
            or any(
                c.type == "InstanceTerminating" and c.status == "True"
                for c in claim.status.conditions
            ),
        )
    pools = tuple(id(np) for np in cluster.nodepools())
    return bindings, claims, nodes, views, pools


def karpenter_marks(before: tuple[object, ...], after: tuple[object, ...]) -> bool:
    """Whether Karpenter marks the cluster unconsolidated between two references."""
    b_bind, b_claims, b_nodes, b_views, b_pools = before
    a_bind, a_claims, a_nodes, a_views, a_pools = after
    assert isinstance(b_bind, dict)
    assert isinstance(a_bind, dict)
    assert isinstance(b_claims, dict)
    assert isinstance(b_nodes, dict)
    deleted_or_moved = any(k not in a_bind or a_bind[k] != v for k, v in b_bind.items())
    bound_new = any(k not in b_bind and v is not None for k, v in a_bind.items())
    # `cleanupNodeClaim` / `cleanupNode`: a launched NodeClaim or a Node gone, or keyed anew.
    cleaned = any(a_claims.get(n) != pid for n, pid in b_claims.items()) or any(
        a_nodes.get(n) != key for n, key in b_nodes.items()
    )
    return deleted_or_moved or bound_new or cleaned or b_views != a_views or b_pools != a_pools


with_timestamps = st.one_of(
    changes,
    st.tuples(st.just("delete_timestamp"), st.sampled_from(CLAIMS)),
    st.tuples(st.just("nodepool")),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(with_timestamps, max_size=30))
def test_the_cluster_marks_itself_unconsolidated_exactly_where_karpenters_state_does(
    ops: list[tuple[object, ...]],
) -> None:
    cluster, clock, claims, nodes = fresh()
    for i, op in enumerate(ops):
        before, count = reference(cluster), cluster.consolidation.version
        if op[0] == "delete_timestamp" and (c := cluster.node_claim(str(op[1]))) is not None:
            meta = c.metadata.model_copy(update={"deletion_timestamp": clock.now()})
            cluster.update_node_claim(c.model_copy(update={"metadata": meta}))
        elif op[0] == "nodepool":
            cluster.apply(load(nodepool()).objects.nodepools[0])
        elif op[0] not in ("delete_timestamp", "nodepool"):
            change(cluster, clock, claims, nodes, op, serial=i)
        moved = cluster.consolidation.version != count
        # `MarkForDeletion`/`UnmarkForDeletion` set the flag without comparing (the next
        # update compares against a state node that has it already).
        silent = op[0] in ("mark", "unmark")
        assert moved == (not silent and karpenter_marks(before, reference(cluster))), op


# ---- the rules one by one ---------------------------------------------------------------------
def _cluster(*docs: object) -> tuple[Cluster, FakeClock]:
    clock = FakeClock()
    return Cluster.from_manifests(load(nodepool(), *docs).objects, clock=clock), clock


def _moves(cluster: Cluster, act: object) -> bool:
    count = cluster.consolidation.version
    assert callable(act)
    act()
    return cluster.consolidation.version != count


def test_a_pod_created_pending_does_not_mark_the_cluster() -> None:
    cluster, _ = _cluster(node("ip-1", provider_id="aws:///a/i-1"))
    assert not _moves(cluster, lambda: cluster.apply(load(pod("p")).objects.pods[0]))


def test_a_pod_bound_or_deleted_marks_the_cluster() -> None:
    cluster, _ = _cluster(node("ip-1", provider_id="aws:///a/i-1"), pod("p"))
    assert _moves(cluster, lambda: cluster.bind("default/p", "ip-1"))
    assert _moves(cluster, lambda: cluster.delete_pod("default/p"))


def test_a_node_registering_to_its_launched_nodeclaim_does_not_mark_the_cluster() -> None:
    cluster, _ = _cluster(node_claim("gpu-1", provider_id="aws:///a/i-1"))
    registered = node("ip-1", provider_id="aws:///a/i-1", initialized=False)
    assert not _moves(cluster, lambda: cluster.add_node(load(registered).objects.nodes[0]))


def test_a_nodeclaim_getting_its_provider_id_marks_the_cluster() -> None:
    cluster, _ = _cluster(node_claim("gpu-1"))
    claim = cluster.node_claim("gpu-1")
    assert claim is not None
    status = claim.status.model_copy(update={"provider_id": "aws:///a/i-1"})
    assert _moves(
        cluster, lambda: cluster.update_node_claim(claim.model_copy(update={"status": status}))
    )


def test_a_deletion_timestamp_marks_the_cluster_unless_disruption_marked_the_node_first() -> None:
    for marked_first, moves in ((False, True), (True, False)):
        cluster, clock = _cluster(
            node_claim("gpu-1", provider_id="aws:///a/i-1"),
            node("ip-1", provider_id="aws:///a/i-1"),
        )
        if marked_first:
            assert not _moves(cluster, lambda c=cluster: c.mark_for_deletion("gpu-1"))
        claim = cluster.node_claim("gpu-1")
        assert claim is not None
        meta = claim.metadata.model_copy(update={"deletion_timestamp": clock.now()})
        deleting = claim.model_copy(update={"metadata": meta})
        assert _moves(cluster, lambda c=cluster, d=deleting: c.update_node_claim(d)) is moves


def test_the_consolidation_state_moves_with_a_mark_and_every_five_minutes() -> None:
    cluster, _ = _cluster(node("ip-1", provider_id="aws:///a/i-1"), pod("p"))
    first = cluster.consolidation.state(0.0)
    assert cluster.consolidation.state(10.0) == first  # nothing marked
    cluster.bind("default/p", "ip-1")
    assert cluster.consolidation.state(20.0) == 20.0
    assert cluster.consolidation.state(20.0 + CONSOLIDATION_STATE_RESET_S - 1) == 20.0
    assert cluster.consolidation.state(20.0 + CONSOLIDATION_STATE_RESET_S) == 320.0
    assert cluster.consolidation.resets_at() == 320.0 + CONSOLIDATION_STATE_RESET_S
