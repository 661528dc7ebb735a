"""The nominations in force as the Cluster keeps them (`Cluster.kept_nominations`: the last
answer handed out again while the pods, NodeClaims and nominations are unchanged and the clock is
before the soonest end) are the plain computation's after every change of a random history:
nominations with and without an end, binds, unbinds, NodeClaims and Nodes deleted and re-added,
scaling, the clock moving."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.state.nominations import in_force
from tests.state.cluster_changes import change, changes, fresh


@settings(max_examples=200, deadline=None)
@given(st.lists(changes, max_size=40))
def test_the_kept_nominations_are_the_plain_ones_after_every_change(
    ops: list[tuple[object, ...]],
) -> None:
    cluster, clock, claims, nodes = fresh()
    for op in ops:
        change(cluster, clock, claims, nodes, op, serial=len(ops))
        pods = {p.key for p in cluster.pods()}
        names = {c.name for c in cluster.node_claims()}
        plain = in_force(cluster._nominations, names, pods, clock.monotonic())
        assert cluster.nominations() == plain
        assert cluster.nominations() == plain  # asked again: the kept answer


def test_a_nomination_ending_ends_the_kept_answer() -> None:
    cluster, clock, _, _ = fresh()
    pod = cluster.pods()[0].key
    cluster.nominate(pod, "gpu-4", until=clock.monotonic() + 30)
    assert cluster.nominations() == {pod: "gpu-4"}
    clock.advance(29.5)
    assert cluster.nominations() == {pod: "gpu-4"}
    clock.advance(0.5)  # the end itself ends it
    assert cluster.nominations() == {}


def test_the_callers_dict_is_their_own() -> None:
    cluster, _, _, _ = fresh()
    pod = cluster.pods()[0].key
    cluster.nominate(pod, "gpu-4")
    cluster.nominations().clear()
    assert cluster.nominations() == {pod: "gpu-4"}
