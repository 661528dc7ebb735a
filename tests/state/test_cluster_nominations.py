"""The nominations in force as the Cluster keeps them (`Cluster.kept_nominations`: the answer
brought up to date by each nomination written or ended, pod and NodeClaim added or removed, and
the ends the clock reached) are the plain computation's, in its order, after every change of a
random history: nominations with and without an end, binds, unbinds, NodeClaims and Nodes
deleted and re-added, scaling, the clock moving."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpucap.state.nominations import Nominations, in_force
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
        assert list(cluster.nominations().items()) == list(plain.items())
        # Asked again: the kept answer.
        assert list(cluster.nominations().items()) == list(plain.items())


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


_KEYS = ["p0", "p1", "p2", "p3"]
_CLAIMS = ["c0", "c1", "c2"]
_steps = st.one_of(
    st.tuples(
        st.just("set"),
        st.sampled_from(_KEYS),
        st.sampled_from(_CLAIMS),
        st.none() | st.integers(0, 8),
    ),
    st.tuples(st.just("pop"), st.sampled_from(_KEYS)),
    st.tuples(st.just("release"), st.sampled_from(_CLAIMS)),
    st.tuples(st.just("pod"), st.sampled_from(_KEYS)),  # deleted when present, else created
    st.tuples(st.just("claim"), st.sampled_from(_CLAIMS)),  # likewise
    st.tuples(st.just("advance"), st.integers(0, 6)),
    st.tuples(st.just("plain"), st.booleans()),  # the reference path on or off for a while
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_steps, max_size=40), st.booleans())
# A nomination rewritten after it ended: in force again at its old place, before p1's.
@example(
    [("set", "p0", "c0", 2), ("set", "p1", "c0", None), ("advance", 3), ("set", "p0", "c1", None)],
    True,
)
# A pod deleted and made again while its nomination stayed.
@example(
    [("set", "p0", "c0", None), ("set", "p1", "c0", None), ("pod", "p0"), ("pod", "p0")], False
)
# A NodeClaim removed and added again while nominations name it.
@example([("set", "p0", "c0", None), ("claim", "c0"), ("claim", "c0")], False)
def test_kept_nominations_follow_every_writer_as_the_plain_computation(
    steps: list[tuple[object, ...]], clocked: bool
) -> None:
    """The structure on its own, with writes the Cluster never makes (a pod re-created while a
    nomination of its key stayed, a NodeClaim added or removed that nominations name, one
    rewritten after it ended): the kept answer is `in_force`'s, in its order, after each."""
    pods: dict[str, None] = dict.fromkeys(_KEYS[:3])
    claims: dict[str, None] = dict.fromkeys(_CLAIMS[:2])
    kept = Nominations(claims, pods)
    now = 0.0
    for step in steps:
        kind = step[0]
        if kind == "set" and step[1] in pods and step[2] in claims:
            until = None if step[3] is None else now + float(str(step[3]))
            kept.set(str(step[1]), str(step[2]), until, now if clocked else None)
        elif kind == "pop":
            kept.pop(str(step[1]))
        elif kind == "release":
            kept.release(str(step[1]))
        elif kind == "pod" and step[1] in pods:
            del pods[str(step[1])]
            kept.pod_removed(str(step[1]))
        elif kind == "pod":
            pods[str(step[1])] = None
            kept.pod_added(str(step[1]))
        elif kind == "claim":
            if step[1] in claims:
                del claims[str(step[1])]
            else:
                claims[str(step[1])] = None
            kept.claim_changed(str(step[1]))
        elif kind == "advance":
            now += float(str(step[1]))
        elif kind == "plain":
            kept.on = bool(step[1])
        clock = now if clocked else None
        plain = in_force(kept.all, claims, pods, clock)
        assert list(kept.in_force(clock).items()) == list(plain.items())


@settings(max_examples=200, deadline=None)
@given(st.lists(changes, max_size=40), st.sets(st.integers(0, 40)))
def test_the_log_since_an_answer_names_every_nomination_new_or_moved_against_it(
    ops: list[tuple[object, ...]], looks: set[int]
) -> None:
    """What the bind queue reads instead of comparing two answers (`Nominations.log`): while
    the epoch is the same, the keys logged since an earlier answer, those in force now with
    another NodeClaim than then, are exactly the comparison's."""
    cluster, clock, claims, nodes = fresh()
    kept = cluster.kept_nominations
    then = cluster.nominations()
    cursor = (kept.epoch, len(kept.log))
    for i, op in enumerate(ops):
        change(cluster, clock, claims, nodes, op, serial=len(ops))
        now = cluster.nominations()
        compared = {k for k, _ in now.items() - then.items()}
        if kept.epoch == cursor[0]:
            logged = kept.log[cursor[1] :]
            assert {k for k in logged if k in now and then.get(k) != now[k]} == compared
        if i in looks:
            then, cursor = now, (kept.epoch, len(kept.log))
