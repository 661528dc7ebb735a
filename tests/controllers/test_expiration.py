"""Expiration: expireAfter counted from the NodeClaim's creation, forceful for the decision
(no budget, no do-not-disrupt), while the drain after it still honours PDBs until the
terminationGracePeriod."""

from __future__ import annotations

import datetime as dt
from typing import Any

from gpucap.apis.nodepool import NodeClaim
from gpucap.controllers.disruption.budgets import budget_mapping
from gpucap.controllers.expiration import EXPIRED, Expiration
from gpucap.controllers.nodeclaim.registering import advertise, registering_node
from gpucap.controllers.nodeclaim.termination import DO_NOT_DISRUPT
from tests.builders import nodepool
from tests.controllers.lifecycle_builders import World, claim, world


def add_claim(w: World, name: str = "gpu-1", **spec: Any) -> NodeClaim:
    """NodeClaim `name`, created now, with `spec` fields (snake_case) set."""
    nc = claim(name)
    meta = nc.metadata.model_copy(update={"creation_timestamp": w.clock.now()})
    nc = nc.model_copy(update={"metadata": meta, "spec": nc.spec.model_copy(update=spec)})
    w.cluster.add_node_claim(nc)
    return nc


def register(w: World, name: str = "gpu-1", node: str = "ip-1") -> None:
    assert w.lifecycle.reconcile(name).launched
    nc = w.cluster.node_claim(name)
    assert nc is not None
    result = w.lifecycle.register(advertise(registering_node(nc, node), {"nvidia.com/gpu": 1}))
    assert result is not None
    assert result.initialized == node


def expiration(w: World) -> Expiration:
    return Expiration(w.cluster, w.lifecycle.termination, w.clock)


def test_expire_after_deletes_the_claim_even_when_the_budget_is_zero() -> None:
    w = world(1, nodepool(disruption={"budgets": [{"nodes": "0"}]}))
    add_claim(w, expire_after="1h")
    register(w)
    node = w.cluster.node("ip-1")
    assert node is not None
    meta = node.metadata.model_copy(update={"annotations": {DO_NOT_DISRUPT: "true"}})
    w.cluster.update_node(node.model_copy(update={"metadata": meta}))
    w.cluster.bind("default/vllm-0", "ip-1")
    assert budget_mapping(w.cluster, "Drifted", now=w.clock.now()) == {"gpu": 0}
    e = expiration(w)

    w.clock.advance(3599)
    assert e.reconcile() == []
    assert e.next_expiry() == 1
    w.clock.advance(1)  # the instant itself expires it
    assert e.reconcile() == ["gpu-1"]
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert nc.metadata.deletion_timestamp == w.clock.now()
    assert w.lifecycle.termination.reconcile("gpu-1").reason == EXPIRED
    assert e.reconcile() == []  # already being deleted
    assert e.next_expiry() is None


def test_never_expires_with_expire_after_never() -> None:
    w = world(0)
    add_claim(w, expire_after="Never")
    register(w)
    e = expiration(w)
    assert e.next_expiry() is None
    w.clock.advance(10 * 365 * 24 * 3600)
    assert e.reconcile() == []
    assert w.cluster.node_claim("gpu-1") is not None


def test_the_default_expire_after_is_thirty_days_from_creation() -> None:
    w = world(0)
    add_claim(w)
    e = expiration(w)
    assert e.next_expiry() == 720 * 3600
    w.clock.advance(3600)
    add_claim(w, "gpu-2", expire_after="2h")
    assert e.next_expiry() == 2 * 3600
    w.clock.advance(2 * 3600)
    assert e.reconcile() == ["gpu-2"]
    assert e.next_expiry() == 717 * 3600


def test_a_claim_that_never_registered_expires_too() -> None:
    w = world(0)
    add_claim(w, expire_after="10m")
    e = expiration(w)
    w.clock.advance(600)
    assert e.reconcile() == ["gpu-1"]


def test_a_claim_without_a_creation_timestamp_is_dated_by_its_first_condition() -> None:
    w = world(0)
    w.clock.advance(100)
    nc = claim("gpu-1")
    w.cluster.add_node_claim(
        nc.model_copy(update={"spec": nc.spec.model_copy(update={"expire_after": "1h"})})
    )
    assert w.lifecycle.reconcile("gpu-1").launched  # sets the initial conditions now
    e = expiration(w)
    w.clock.advance(50)
    assert e.next_expiry() == 3600 - 50


def test_an_expired_node_still_drains_within_its_pdb_until_the_grace_period() -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "vllm"},
        "spec": {"selector": {"matchLabels": {"app": "vllm"}}, "maxUnavailable": 0},
    }
    w = world(1, pdb)
    add_claim(w, expire_after="1h", termination_grace_period="30m")
    register(w)
    w.cluster.bind("default/vllm-0", "ip-1")
    e = expiration(w)
    w.clock.advance(3600)
    assert e.reconcile() == ["gpu-1"]
    t = w.lifecycle.termination
    result = t.reconcile("gpu-1")
    assert result.blocked == (("default/vllm-0", "pdb default/vllm"),)
    evicted_at = None
    while not result.removed:
        assert result.requeue_after is not None
        w.clock.advance(result.requeue_after)
        result = t.reconcile("gpu-1")
        if result.evicted and evicted_at is None:
            evicted_at = w.clock.now()
    expired = dt.datetime(2026, 1, 1, 1, 0, tzinfo=dt.timezone.utc)
    assert evicted_at is not None
    # the pod's 30 s grace before the 30 min deadline
    lead = (evicted_at - expired).total_seconds()
    assert 30 * 60 - 30 < lead <= 30 * 60 - 29
