"""Counting what a disruption pass computes from scratch, shared by the pass-memo and budget-row
tests (not a test module)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

from gpucap.controllers.disruption import budgets as budgets_module
from gpucap.controllers.disruption import candidates as candidates_module
from gpucap.controllers.disruption.budgets import pool_counts
from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.types import Candidate, PoolTotals
from gpucap.runtime.clock import EPOCH
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.state.snapshot import Snapshot
from tests.builders import edit
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool
from tests.controllers.room_fleets import GPUS

# A node: its type, how many pods it runs, and the do-not-disrupt annotation of its first pod
# ("" for none; durations end while the clock moves on, "true" never does).
nodes = st.lists(
    st.tuples(
        st.sampled_from(sorted(GPUS)),
        st.integers(min_value=0, max_value=4),
        st.sampled_from(["", "", "45s", "2m", "true"]),
    ),
    min_size=1,
    max_size=5,
)
# What happens between two passes (`_step`).
steps = st.lists(
    st.tuples(
        st.sampled_from(
            ["bind", "delete", "mark", "unmark", "node", "wait", "flight", "pool", "types", "none"]
        ),
        st.integers(min_value=0, max_value=6),
    ),
    min_size=1,
    max_size=8,
)
STARTED = EPOCH.isoformat().replace("+00:00", "Z")


def _fleet(
    fleet: list[tuple[str, int, str]], spare: int, nodepool: dict[str, Any] | None = None
) -> Env:
    pods: list[dict[str, Any]] = []
    placed: list[tuple[str, tuple[str, ...]]] = []
    for i, (it, n, protect) in enumerate(fleet):
        keys = tuple(f"default/p{i}-{j}" for j in range(min(n, GPUS[it])))
        for j, key in enumerate(keys):
            doc = gpu_pod(key.split("/")[1])
            if protect and j == 0:
                doc = edit(doc, "metadata.annotations", {"karpenter.sh/do-not-disrupt": protect})
                doc = edit(doc, "status", {"startTime": STARTED})
            pods.append(doc)
        placed.append((it, keys))
    pods.extend(gpu_pod(f"spare-{j}") for j in range(spare))
    if nodepool is None:
        nodepool = pool(capacity_types=("spot", "on-demand"), after="30s")
    e = env(nodepool, *pods)
    for i, (it, keys) in enumerate(placed):
        e.node(f"n{i}", it, gpus=GPUS[it], pods=keys)
    return e


def _step(e: Env, action: str, i: int, serial: int, flight: set[str]) -> None:
    """One change: a pending pod binds to node i, a bound pod goes, node i is marked or
    unmarked, a new node comes up, the clock alone moves, node i's NodeClaim enters or leaves
    the queue, the NodePool or the instance types are new objects, or nothing at all."""
    names = sorted(n.metadata.name for n in e.cluster.nodes())
    node = names[i % len(names)] if names else None
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
    elif action == "flight" and node is not None:
        flight.symmetric_difference_update({node})
    elif action == "pool":
        np = e.cluster.nodepools()[0]
        meta = np.metadata.model_copy(update={"annotations": {"serial": str(serial)}})
        e.cluster.apply(np.model_copy(update={"metadata": meta}))
    elif action == "types":
        # Instance types compare by identity: a new object of the same name is another type.
        types: list[InstanceType] = list(e.provider.instance_types)  # type: ignore[attr-defined]
        it = types[i % len(types)]
        types[i % len(types)] = InstanceType(
            it.name, it.requirements, it.capacity, it.allocatable, it.offerings
        )
        e.provider.instance_types = types  # type: ignore[attr-defined]
    if action != "none":
        e.clock.advance(20.0)


Answer = tuple[list[Candidate], dict[str, PoolTotals]]


def _from_scratch(
    e: Env, now: dt.datetime, cls: str, flight: set[str], snap: Snapshot | None
) -> Answer:
    """`get_candidates` with no row and no last answer kept (the kept ones restored after)."""
    kept_last = e.cluster.memos[candidates_module._LAST]
    kept_rows = e.cluster.memos[candidates_module._ROWS]
    last, rows = dict(kept_last), dict(kept_rows)
    kept_last.clear()
    kept_rows.clear()
    try:
        return get_candidates(
            e.cluster, e.provider, now, disruption_class=cls, in_flight=flight, snap=snap
        )
    finally:
        kept_last.clear()
        kept_last.update(last)
        kept_rows.clear()
        kept_rows.update(rows)


def counted_from_scratch(e: Env, snap: Snapshot | None) -> tuple[dict[str, int], dict[str, int]]:
    """`pool_counts` with nothing kept from an earlier count (the kept count restored after)."""
    kept = e.cluster.memos[budgets_module._LAST_COUNT]
    last = kept.last
    kept.last = None
    try:
        counts = pool_counts(e.cluster, snap)
    finally:
        kept.last = last
    return dict(counts.totals), dict(counts.disrupting)
