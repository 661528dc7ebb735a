"""The budgets' node count carried from the last count's rows (`budgets._count` with the
last count's rows per state node object) against the count from scratch, on random GPU
fleets whose nodes change in every way the count reads: pods bind and go, nodes and
NodeClaims are marked, go NotReady, lose their initialized or NodePool label, get a
deletionTimestamp, their instance terminates, a Node or a NodeClaim disappears, a NodeClaim
launches without a Node and registers later."""

from __future__ import annotations

import datetime as dt

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.labels import INITIALIZED, INSTANCE_TYPE, NODEPOOL
from gpucap.cloudprovider.types import node_claim_for
from gpucap.controllers.disruption.budgets import pool_counts
from gpucap.controllers.nodeclaim.conditions import INSTANCE_TERMINATING, is_true, with_condition
from gpucap.controllers.nodeclaim.registering import advertise, registering_node
from gpucap.runtime.clock import EPOCH
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.snapshot import Snapshot
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool
from tests.controllers.pass_memos import counted_from_scratch
from tests.controllers.room_fleets import GPUS

ACTIONS = [
    "bind",
    "delete",
    "mark",
    "unmark",
    "notready",
    "ready",
    "uninitialized",
    "unmanaged",
    "node_deleting",
    "claim_deleting",
    "terminating",
    "remove_node",
    "remove_claim",
    "launch",
    "register",
    "node",
    "none",
]
steps = st.lists(
    st.tuples(st.sampled_from(ACTIONS), st.integers(min_value=0, max_value=6)),
    min_size=1,
    max_size=10,
)
fleets = st.lists(
    st.tuples(st.sampled_from(sorted(GPUS)), st.integers(min_value=0, max_value=3)),
    min_size=1,
    max_size=5,
)


def _fleet(fleet: list[tuple[str, int]]) -> Env:
    pods = [gpu_pod(f"p{i}-{j}") for i, (_, n) in enumerate(fleet) for j in range(n)]
    pods.extend(gpu_pod(f"spare-{j}") for j in range(2))
    e = env(pool(capacity_types=("spot", "on-demand"), after="30s"), *pods)
    for i, (it, n) in enumerate(fleet):
        keys = tuple(f"default/p{i}-{j}" for j in range(min(n, GPUS[it])))
        e.node(f"n{i}", it, gpus=GPUS[it], pods=keys)
    return e


def _step(e: Env, action: str, i: int, serial: int) -> None:
    """One change to node (or NodeClaim) i of the cluster, or a new one."""
    c = e.cluster
    nodes = sorted(n.metadata.name for n in c.nodes())
    claims = sorted(nc.name for nc in c.node_claims())
    node = c.node(nodes[i % len(nodes)]) if nodes else None
    claim = c.node_claim(claims[i % len(claims)]) if claims else None
    now = EPOCH + dt.timedelta(seconds=serial)
    if action == "bind" and node is not None:
        pending = [p.key for p in c.pending()]
        if pending:
            e.bind(pending[0], node.metadata.name)
    elif action == "delete" and node is not None:
        bound = [p.key for p in c.pods() if p.spec.node_name == node.metadata.name]
        if bound:
            c.delete_pod(bound[0])
    elif action == "mark" and claim is not None:
        c.mark_for_deletion(claim.name)
    elif action == "unmark" and claim is not None:
        c.unmark_for_deletion(claim.name)
    elif action in ("notready", "ready") and node is not None:
        status = "False" if action == "notready" else "True"
        conds = [
            cond.model_copy(update={"status": status}) if cond.type == "Ready" else cond
            for cond in node.status.conditions
        ]
        c.update_node(
            node.model_copy(update={"status": node.status.model_copy(update={"conditions": conds})})
        )
    elif action in ("uninitialized", "unmanaged") and node is not None:
        key = INITIALIZED if action == "uninitialized" else NODEPOOL
        labels = {k: v for k, v in node.metadata.labels.items() if k != key}
        meta = node.metadata.model_copy(update={"labels": labels})
        c.update_node(node.model_copy(update={"metadata": meta}))
    elif action == "node_deleting" and node is not None:
        meta = node.metadata.model_copy(update={"deletion_timestamp": now})
        c.update_node(node.model_copy(update={"metadata": meta}))
    elif action == "claim_deleting" and claim is not None:
        meta = claim.metadata.model_copy(update={"deletion_timestamp": now})
        c.update_node_claim(claim.model_copy(update={"metadata": meta}))
    elif action == "terminating" and claim is not None:
        c.update_node_claim(with_condition(claim, INSTANCE_TERMINATING, "True", now))
    elif action == "remove_node" and node is not None:
        c.delete_node(node.metadata.name)
    elif action == "remove_claim" and claim is not None:
        c.delete_node_claim(claim.name)
    elif action == "launch":
        it = sorted(GPUS)[i % len(GPUS)]
        name = f"new{serial}"
        reqs = Requirements.of(Requirement.new(INSTANCE_TYPE, "In", [it]))
        c.add_node_claim(
            node_claim_for(name, "gpu", reqs, {"nvidia.com/gpu": GPUS[it]}, node_class="gpu")
        )
        e.lifecycle.reconcile(name)
    elif action == "register":
        # A NodeClaim launched here (a fleet's NodeClaim whose Node went does not register).
        waiting = [n for n in claims if n.startswith("new") and c.node(n) is None]
        launched = c.node_claim(waiting[0]) if waiting else None
        if launched is not None and launched.status.provider_id:
            gpus = int(str(launched.status.capacity.get("nvidia.com/gpu", 0)))
            # Registered as far as the lifecycle takes it (a NodeClaim being deleted is not).
            e.lifecycle.register(
                advertise(registering_node(launched, launched.name), {"nvidia.com/gpu": gpus})
            )
    elif action == "node":
        it = sorted(GPUS)[i % len(GPUS)]
        e.node(f"node{serial}", it, gpus=GPUS[it])


def _reference(e: Env, snap: Snapshot | None) -> tuple[dict[str, int], dict[str, int]]:
    """The count as `budget_mapping` defines it, read straight from the objects (the walk
    `budgets._count` did before it kept rows)."""
    c = e.cluster
    snap = snap if snap is not None else c.snapshot()
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    marked = c.marked_for_deletion()
    for sn in snap.nodes:
        if not sn.managed or not sn.initialized:
            continue
        node = c.node(sn.name)
        claim = c.node_claim_for_node(node) if node is not None else c.node_claim(sn.name)
        if claim is not None and is_true(claim, INSTANCE_TERMINATING):
            continue
        pool_name = sn.labels.get(NODEPOOL, "")
        totals[pool_name] = totals.get(pool_name, 0) + 1
        deleting = (
            sn.marked_for_deletion
            or sn.name in marked
            or (claim is not None and claim.metadata.deletion_timestamp is not None)
            or (claim is not None and claim.name in marked)
            or (claim is None and node is not None and node.metadata.deletion_timestamp is not None)
        )
        if node is None or not node.is_ready or deleting:
            disrupting[pool_name] = disrupting.get(pool_name, 0) + 1
    return totals, disrupting


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, steps)
def test_a_count_from_the_last_counts_rows_equals_the_count_from_scratch(
    fleet: list[tuple[str, int]], changes: list[tuple[str, int]]
) -> None:
    e = _fleet(fleet)
    stale = e.cluster.snapshot()
    pool_counts(e.cluster)
    for serial, (action, i) in enumerate(changes):
        _step(e, action, i, serial)
        for snap in (None, e.cluster.snapshot(), stale):
            kept = pool_counts(e.cluster, snap)
            counted = (dict(kept.totals), dict(kept.disrupting))
            assert counted == counted_from_scratch(e, snap) == _reference(e, snap), action
        stale = e.cluster.snapshot()
