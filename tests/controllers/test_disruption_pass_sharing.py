"""What the disruption controller keeps from pass to pass, or shares within one, against the
same thing computed from scratch (hypothesis, random GPU fleets changing between passes):
the pre-check's room and per-kind holds carried from the last pass (`room.RoomCache`), candidate selection's
per-NodeClaim rows (`candidates._ROWS`) and the budget mapping from one node count per pass
(`budgets.pool_counts`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.labels import NODEPOOL
from gpucap.apis.nodepool import NodeClaim
from gpucap.controllers.disruption import candidates as candidates_module
from gpucap.controllers.disruption.budgets import budget_mapping, pool_counts
from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.consolidation import SingleNodeConsolidation
from gpucap.controllers.disruption.room import Room, RoomCache
from gpucap.controllers.disruption.simulation import pass_inputs
from gpucap.controllers.disruption.types import GRACEFUL, Candidate, PoolTotals
from gpucap.controllers.nodeclaim.conditions import INSTANCE_TERMINATING, is_true
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool
from tests.controllers.room_fleets import GPUS, fleets

# What happens between two passes: a pending pod binds to node i, a bound pod goes, node i
# is marked for deletion or unmarked, a new node comes up, the clock moves on.
steps = st.lists(
    st.tuples(
        st.sampled_from(["bind", "delete", "mark", "unmark", "node", "wait"]),
        st.integers(min_value=0, max_value=6),
    ),
    min_size=1,
    max_size=6,
)


def _fleet(fleet: list[tuple[str, str, int]], spare: int) -> Env:
    """The fleet's nodes with their pods bound, and `spare` GPU pods left pending."""
    pods: list[dict[str, Any]] = []
    placed: list[tuple[str, str, tuple[str, ...]]] = []
    for i, (it, ct, n) in enumerate(fleet):
        keys = tuple(f"default/p{i}-{j}" for j in range(min(n, GPUS[it])))
        pods.extend(gpu_pod(k.split("/")[1]) for k in keys)
        placed.append((it, ct, keys))
    pods.extend(gpu_pod(f"spare-{j}") for j in range(spare))
    e = env(pool(capacity_types=("spot", "on-demand"), after="30s"), *pods)
    for i, (it, ct, keys) in enumerate(placed):
        zone = "us-east-1c" if ct == "spot" else "us-east-1a"
        e.node(f"n{i}", it, capacity_type=ct, zone=zone, gpus=GPUS[it], pods=keys)
    return e


def _step(e: Env, action: str, i: int, serial: int) -> None:
    nodes = sorted(n.metadata.name for n in e.cluster.nodes())
    node = nodes[i % len(nodes)] if nodes else None
    if action == "bind" and node is not None:
        pending = [p.key for p in e.cluster.pending()]
        if pending:
            e.bind(pending[0], node)
    elif action == "delete" and node is not None:
        bound = [p.key for p in e.cluster.pods() if p.spec.node_name == node]
        if bound:
            e.cluster.delete_pod(bound[0])
    elif action == "mark" and node is not None:
        e.cluster.mark_for_deletion(node)
    elif action == "unmark" and node is not None:
        e.cluster.unmark_for_deletion(node)
    elif action == "node":
        it = sorted(GPUS)[i % len(GPUS)]
        e.node(f"new{serial}", it, gpus=GPUS[it])
    e.clock.advance(20.0)


def _single(e: Env) -> SingleNodeConsolidation:
    method = e.disruption.methods[4]
    assert isinstance(method, SingleNodeConsolidation)
    return method


def _fresh_room(e: Env, cache: RoomCache | None) -> Room:
    now = e.clock.now()
    inputs = pass_inputs(e.cluster, _single(e).provisioner, nodepools=e.cluster.nodepools, now=now)
    return Room(inputs, now, spot_to_spot=False, cache=cache)


def _batches(e: Env) -> list[list[Candidate]]:
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    single = _single(e)
    wanted = single.sort([c for c in found if single.should_disrupt(c)])
    return [[c] for c in wanted] + [wanted[:n] for n in range(2, len(wanted) + 1)]


def _same_room(a: dict[str, int], b: dict[str, int]) -> bool:
    """Equal as the pre-check reads them (`get(k, 0)`): a resource at 0 may be absent."""
    return all(a.get(k, 0) == b.get(k, 0) for k in a.keys() | b.keys())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, st.integers(min_value=0, max_value=3), steps)
def test_the_room_carried_from_the_last_pass_answers_as_a_fresh_one(
    fleet: list[tuple[str, str, int]], spare: int, changes: list[tuple[str, int]]
) -> None:
    e = _fleet(fleet, spare)
    cache = RoomCache()
    carried = _fresh_room(e, cache)
    for batch in _batches(e):  # the first pass asks for some kinds: they are carried
        carried.may_move(batch)
    for serial, (action, i) in enumerate(changes):
        _step(e, action, i, serial)
        carried = _fresh_room(e, cache)
        fresh = _fresh_room(e, None)
        for batch in _batches(e):
            movers = [fresh.movers(c) for c in batch]
            kinds = {k: v for m in movers for k, v in m[1].items()}
            names, room = carried._room(frozenset(kinds), kinds)
            fresh_names, fresh_room = fresh._room(frozenset(kinds), kinds)
            assert names == fresh_names
            for number, kind in kinds.items():
                assert carried._held(number, kind) == fresh._held(number, kind)
            assert _same_room(room, fresh_room), (room, fresh_room)
            assert carried.may_move(batch) == fresh.may_move(batch), [c.name for c in batch]


def _reference_counts(e: Env) -> tuple[dict[str, int], dict[str, int]]:
    """Karpenter's walk as `budget_mapping` did it before counting once per pass."""
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    marked = e.cluster.marked_for_deletion()
    for sn in e.cluster.snapshot().nodes:
        if not sn.managed or not sn.initialized:
            continue
        node = e.cluster.node(sn.name)
        claim: NodeClaim | None = (
            e.cluster.node_claim_for_node(node)
            if node is not None
            else e.cluster.node_claim(sn.name)
        )
        if claim is not None and is_true(claim, INSTANCE_TERMINATING):
            continue
        name = sn.labels.get(NODEPOOL, "")
        totals[name] = totals.get(name, 0) + 1
        ready = node is not None and node.is_ready
        deleting = (
            sn.marked_for_deletion
            or sn.name in marked
            or (claim is not None and claim.metadata.deletion_timestamp is not None)
            or (claim is not None and claim.name in marked)
            or (claim is None and node is not None and node.metadata.deletion_timestamp is not None)
        )
        if not ready or deleting:
            disrupting[name] = disrupting.get(name, 0) + 1
    return totals, disrupting


def _rows_cleared(e: Env, now: dt.datetime) -> tuple[list[Candidate], dict[str, PoolTotals]]:
    e.cluster.memos[candidates_module._ROWS].clear()
    e.cluster.memos[candidates_module._LAST].clear()
    return get_candidates(e.cluster, e.provider, now, disruption_class=GRACEFUL)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, st.integers(min_value=0, max_value=3), steps)
def test_candidates_and_budgets_kept_from_pass_to_pass_equal_those_built_from_scratch(
    fleet: list[tuple[str, str, int]], spare: int, changes: list[tuple[str, int]]
) -> None:
    e = _fleet(fleet, spare)
    for serial, (action, i) in enumerate(changes):
        now = e.clock.now()
        kept = get_candidates(e.cluster, e.provider, now, disruption_class=GRACEFUL)
        assert kept == _rows_cleared(e, now)
        counts = pool_counts(e.cluster)
        assert (dict(counts.totals), dict(counts.disrupting)) == _reference_counts(e)
        for reason in ("Empty", "Drifted", "Underutilized"):
            shared = budget_mapping(e.cluster, reason, now=now, counts=counts)
            assert shared == budget_mapping(e.cluster, reason, now=now)
        _step(e, action, i, serial)
