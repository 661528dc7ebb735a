"""Expiration's fast path (`Expiration.indexed`: expiries kept per NodeClaim object, and a
`reconcile` before the soonest expiry with the NodeClaims unchanged skipped) decides exactly what
the plain scan decides, over random histories of NodeClaims created, written, deleted and the
clock moving on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.nodepool import NodeClaimCondition as Condition
from gpucap.controllers.expiration import Expiration
from tests.controllers.lifecycle_builders import World, claim, world

_AFTER = ("10s", "1m", "5m", "1h", "Never", "720h")

# One step: ("add", name, expireAfter index, how it is dated), ("touch", name), ("delete", name),
# ("advance", seconds), ("reconcile",).
_step = st.one_of(
    st.tuples(
        st.just("add"), st.integers(0, 5), st.integers(0, len(_AFTER) - 1), st.integers(0, 2)
    ),
    st.tuples(st.just("touch"), st.integers(0, 5)),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("advance"), st.sampled_from((0, 1, 9, 30, 60, 299, 600, 3600))),
    st.tuples(st.just("reconcile")),
)


def _made(w: World, name: str, after: str, dated: int) -> NodeClaim:
    """NodeClaim `name` expiring after `after`, dated by its creationTimestamp (0), by a
    condition's transition (1) or by neither (2: the controller's first sight of it)."""
    nc = claim(name)
    nc = nc.model_copy(update={"spec": nc.spec.model_copy(update={"expire_after": after})})
    if dated == 0:
        meta = nc.metadata.model_copy(update={"creation_timestamp": w.clock.now()})
        nc = nc.model_copy(update={"metadata": meta})
    elif dated == 1:
        stamp = w.clock.now().isoformat().replace("+00:00", "Z")
        cond = Condition(type="Launched", status="Unknown", last_transition_time=stamp)
        status = nc.status.model_copy(update={"conditions": [cond]})
        nc = nc.model_copy(update={"status": status})
    return nc


def _replay(steps: list[tuple[object, ...]], *, indexed: bool) -> list[object]:
    w = world(0)
    e = Expiration(w.cluster, w.lifecycle.termination, w.clock)
    e.indexed = indexed
    said: list[object] = []
    for step in steps:
        kind = step[0]
        if kind == "add":
            name = f"gpu-{step[1]}"
            if w.cluster.node_claim(name) is None:
                w.cluster.add_node_claim(_made(w, name, _AFTER[int(step[2])], int(step[3])))  # type: ignore[call-overload]
        elif kind == "touch":
            nc = w.cluster.node_claim(f"gpu-{step[1]}")
            if nc is not None:  # a new object, the same fields: what a status write does
                w.cluster.update_node_claim(nc.model_copy())
        elif kind == "delete":
            if w.cluster.node_claim(f"gpu-{step[1]}") is not None:
                w.cluster.delete_node_claim(f"gpu-{step[1]}")
        elif kind == "advance":
            w.clock.advance(int(step[1]))  # type: ignore[call-overload]
        else:
            said.append(e.reconcile())
            said.append(e.next_expiry())
            deleting = [c.name for c in w.cluster.node_claims() if c.metadata.deletion_timestamp]
            said.append(deleting)
    return said


@settings(max_examples=150, deadline=None)
@given(st.lists(_step, max_size=40))
def test_expiration_fast_path_decides_what_the_plain_scan_decides(
    steps: list[tuple[object, ...]],
) -> None:
    assert _replay(steps, indexed=True) == _replay(steps, indexed=False)


def test_a_reconcile_before_the_soonest_expiry_skips_the_scan() -> None:
    w = world(0)
    e = Expiration(w.cluster, w.lifecycle.termination, w.clock)
    w.cluster.add_node_claim(_made(w, "gpu-1", "1h", 0))
    assert e.reconcile() == []
    reads = 0
    claims = w.cluster.node_claims

    def counted() -> list[NodeClaim]:
        nonlocal reads
        reads += 1
        return claims()

    w.cluster.node_claims = counted  # type: ignore[method-assign]
    w.clock.advance(3599)
    assert e.reconcile() == []
    assert reads == 0  # nothing changed and nothing is due: no scan
    w.clock.advance(1)
    assert e.reconcile() == ["gpu-1"]
    assert reads == 1


def test_a_claim_written_since_the_last_scan_is_read_again() -> None:
    w = world(0)
    e = Expiration(w.cluster, w.lifecycle.termination, w.clock)
    w.cluster.add_node_claim(_made(w, "gpu-1", "1h", 0))
    assert e.reconcile() == []
    w.clock.advance(60)
    w.cluster.add_node_claim(_made(w, "gpu-2", "10s", 0))
    w.clock.advance(10)
    assert e.reconcile() == ["gpu-2"]


def test_the_soonest_of_the_kept_expiries_ends_the_skip() -> None:
    w = world(0)
    e = Expiration(w.cluster, w.lifecycle.termination, w.clock)
    w.cluster.add_node_claim(_made(w, "gpu-1", "1h", 0))
    w.cluster.add_node_claim(_made(w, "gpu-2", "1m", 0))
    w.cluster.add_node_claim(_made(w, "gpu-3", "5m", 1))
    assert e.reconcile() == []
    w.clock.advance(60)
    assert e.reconcile() == ["gpu-2"]
    w.clock.advance(240)
    assert e.reconcile() == ["gpu-3"]
