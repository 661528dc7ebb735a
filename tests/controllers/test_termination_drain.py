"""Drain rules: PodDisruptionBudgets, karpenter.sh/do-not-disrupt pods, the NodeClaim's
terminationGracePeriod and Karpenter's eviction tiers."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.core import Node, PodCondition
from gpucap.controllers.nodeclaim.registering import advertise, registering_node
from gpucap.controllers.nodeclaim.termination import (
    DO_NOT_DISRUPT,
    EVICTION_BACKOFF_MAX,
    TERMINATION_TIMESTAMP,
    Termination,
    TerminationResult,
)
from tests.builders import GPU_TOLERATION, edit, load, pod
from tests.controllers.lifecycle_builders import World, provisioned, world

VLLM = ("default/vllm-0", "default/vllm-1")


def pdb(name: str = "vllm", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "vllm"}}, **spec},
    }


def guarded(name: str, value: str) -> dict[str, Any]:
    """A GPU pod annotated karpenter.sh/do-not-disrupt: `value`."""
    return edit(
        pod(name, gpu=1, tolerations=[GPU_TOLERATION]),
        "metadata.annotations",
        {DO_NOT_DISRUPT: value},
    )


def owned_by_daemonset(doc: dict[str, Any]) -> dict[str, Any]:
    return edit(
        doc,
        "metadata.ownerReferences",
        [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1"}],
    )


def running(w: World, *pods: str, grace: str | None = None) -> Termination:
    """NodeClaim gpu-1 (terminationGracePeriod `grace`) running on Node ip-1 with `pods`
    bound; returns its termination controller."""
    provisioned(w)
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    if grace is not None:
        spec = nc.spec.model_copy(update={"termination_grace_period": grace})
        w.cluster.update_node_claim(nc.model_copy(update={"spec": spec}))
    assert w.lifecycle.reconcile("gpu-1").launched
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    result = w.lifecycle.register(advertise(registering_node(nc, "ip-1"), {"nvidia.com/gpu": 8}))
    assert result is not None
    assert result.initialized == "ip-1"
    for key in pods:
        w.cluster.bind(key, "ip-1")
    return w.lifecycle.termination


def other_node(w: World) -> None:
    """A second, unmanaged Node `other` the evicted pods can be bound to."""
    doc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "other"}}
    node: Node = load(doc).objects.nodes[0]
    w.cluster.add_node(node)


def run_until_removed(
    w: World, t: Termination, limit: float
) -> list[tuple[float, TerminationResult]]:
    """Reconcile gpu-1 at each requeue until it is removed or `limit` seconds have passed."""
    out = []
    result = t.reconcile("gpu-1")
    out.append((w.clock.monotonic(), result))
    while not result.removed and w.clock.monotonic() < limit:
        assert result.requeue_after is not None
        w.clock.advance(result.requeue_after)
        result = t.reconcile("gpu-1")
        out.append((w.clock.monotonic(), result))
    return out


def first(passes: list[tuple[float, TerminationResult]], pod_key: str) -> float | None:
    return next((at for at, r in passes if pod_key in r.evicted), None)


# ---- PodDisruptionBudgets --------------------------------------------------------------------
def test_a_pdb_with_max_unavailable_0_blocks_the_drain_until_termination_grace_period() -> None:
    w = world(2, pdb(maxUnavailable=0))
    t = running(w, *VLLM, grace="10m")
    assert t.delete("gpu-1", "Drifted")
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert nc.metadata.annotations[TERMINATION_TIMESTAMP] == "2026-01-01T00:10:00Z"

    passes = run_until_removed(w, t, 3600)
    blocked = passes[0][1].blocked
    assert blocked == ((VLLM[0], "pdb default/vllm"), (VLLM[1], "pdb default/vllm"))
    # the pods' own 30 s grace must fit before the deadline: deleted once now > 600 - 30
    at = first(passes, VLLM[0])
    assert at is not None
    assert 570 < at <= 571
    assert first(passes, VLLM[1]) == at
    forced = next(r for a, r in passes if a == at)
    assert forced.force_deleted == VLLM
    assert passes[-1][1].removed
    assert w.cluster.node_claim("gpu-1") is None
    # the requeues back off to the eviction queue's 10 s while blocked
    assert max(r.requeue_after or 0 for _, r in passes) == EVICTION_BACKOFF_MAX


def test_a_pdb_with_max_unavailable_0_and_no_grace_period_blocks_the_drain_for_good() -> None:
    w = world(2, pdb(maxUnavailable=0))
    t = running(w, *VLLM)
    t.delete("gpu-1", "Expired")
    passes = run_until_removed(w, t, 6 * 3600)
    assert all(not r.evicted for _, r in passes)
    assert w.cluster.node_claim("gpu-1") is not None
    assert [p.spec.node_name for p in w.cluster.pods() if p.key in VLLM] == ["ip-1", "ip-1"]


def test_a_pdb_with_max_unavailable_1_lets_one_pod_go_until_it_is_running_again() -> None:
    w = world(2, pdb(maxUnavailable=1))
    t = running(w, *VLLM)
    other_node(w)
    t.delete("gpu-1", "Underutilized")
    one = t.reconcile("gpu-1")
    assert one.evicted == (VLLM[0],)
    assert one.blocked == ((VLLM[1], "pdb default/vllm"),)
    assert one.requeue_after is not None
    w.clock.advance(one.requeue_after)
    assert t.reconcile("gpu-1").evicted == ()  # vllm-0 still pending: no healthy pod to spare
    w.cluster.bind(VLLM[0], "other")
    w.clock.advance(1)
    assert t.reconcile("gpu-1").evicted == (VLLM[1],)


def test_min_available_percentages_round_up() -> None:
    # minAvailable 51% of 2 pods -> 2 must stay healthy: no eviction at all
    w = world(2, pdb(minAvailable="51%"))
    t = running(w, *VLLM)
    t.delete("gpu-1", "Underutilized")
    assert t.reconcile("gpu-1").evicted == ()
    # 50% of 2 -> 1: one may go
    w = world(2, pdb(minAvailable="50%"))
    t = running(w, *VLLM)
    t.delete("gpu-1", "Underutilized")
    assert t.reconcile("gpu-1").evicted == (VLLM[0],)


def test_a_pod_two_pdbs_select_is_never_evicted_gracefully() -> None:
    w = world(2, pdb("a", maxUnavailable=2), pdb("b", maxUnavailable=2))
    t = running(w, *VLLM)
    t.delete("gpu-1", "Drifted")
    result = t.reconcile("gpu-1")
    assert result.evicted == ()
    assert {why for _, why in result.blocked} == {"multiple pdbs"}


def test_an_unready_pod_goes_under_always_allow_despite_the_pdb() -> None:
    w = world(2, pdb(maxUnavailable=0, unhealthyPodEvictionPolicy="AlwaysAllow"))
    t = running(w, *VLLM)
    sick = w.cluster.pod(VLLM[1])
    status = sick.status.model_copy(
        update={"conditions": [PodCondition(type="Ready", status="False")]}
    )
    w.cluster.add_pod(sick.model_copy(update={"status": status}))
    t.delete("gpu-1", "Drifted")
    assert t.reconcile("gpu-1").evicted == (VLLM[1],)


# ---- do-not-disrupt --------------------------------------------------------------------------
def test_do_not_disrupt_pod_delays_drain_but_not_forever_with_a_grace_period() -> None:
    w = world(2, guarded("guard", "true"))
    t = running(w, *VLLM, "default/guard", grace="1h")
    t.delete("gpu-1", "Expired")
    passes = run_until_removed(w, t, 2 * 3600)
    assert passes[0][1].evicted == VLLM  # the others go at once
    assert passes[0][1].blocked == (("default/guard", "do-not-disrupt"),)
    at = first(passes, "default/guard")
    assert at is not None
    assert 3570 < at <= 3571
    assert passes[-1][1].removed


def test_do_not_disrupt_without_a_grace_period_holds_the_node() -> None:
    w = world(0, guarded("guard", "true"))
    t = running(w, "default/guard")
    t.delete("gpu-1", "Expired")
    passes = run_until_removed(w, t, 3 * 3600)
    assert first(passes, "default/guard") is None
    assert not passes[-1][1].removed


def test_a_do_not_disrupt_duration_protects_only_that_long_after_the_pod_started() -> None:
    w = world(0, guarded("guard", "5m"))
    t = running(w, "default/guard")
    started = w.clock.now().isoformat()
    guard = w.cluster.pod("default/guard")
    w.cluster.add_pod(
        guard.model_copy(update={"status": guard.status.model_copy(update={"start_time": started})})
    )
    t.delete("gpu-1", "Drifted")
    passes = run_until_removed(w, t, 3600)
    at = first(passes, "default/guard")
    assert at is not None
    assert 300 <= at <= 300 + EVICTION_BACKOFF_MAX


def test_do_not_disrupt_values_other_than_true_or_a_positive_duration_are_ignored() -> None:
    w = world(0, guarded("a", "false"), guarded("b", "0s"), guarded("c", "soon"))
    t = running(w, "default/a", "default/b", "default/c")
    t.delete("gpu-1", "Drifted")
    assert t.reconcile("gpu-1").evicted == ("default/a", "default/b", "default/c")


# ---- drain order -----------------------------------------------------------------------------
def test_drain_evicts_non_critical_then_daemonset_then_critical_pods() -> None:
    critical = {"priorityClassName": "system-node-critical"}
    w = world(
        1,
        owned_by_daemonset(pod("agent", tolerations=[GPU_TOLERATION])),
        pod("dns", tolerations=[GPU_TOLERATION], **critical),
        owned_by_daemonset(pod("csi", tolerations=[GPU_TOLERATION], **critical)),
    )
    t = running(w, "default/vllm-0", "default/agent", "default/dns", "default/csi")
    t.delete("gpu-1", "Drifted")
    passes = run_until_removed(w, t, 60)
    order = [(r.evicted, r.deleted_pods) for _, r in passes if r.evicted or r.deleted_pods]
    assert order[:4] == [
        (("default/vllm-0",), ()),
        ((), ("default/agent",)),  # a DaemonSet pod is deleted, not recreated elsewhere
        (("default/dns",), ()),
        ((), ("default/csi",)),
    ]
    assert passes[-1][1].removed


def test_past_the_deadline_every_tier_goes_at_once() -> None:
    critical = {"priorityClassName": "system-cluster-critical"}
    w = world(2, pdb(maxUnavailable=0), pod("dns", tolerations=[GPU_TOLERATION], **critical))
    t = running(w, *VLLM, "default/dns", grace="1m")
    t.delete("gpu-1", "Drifted")
    passes = run_until_removed(w, t, 600)
    forced = next(r for _, r in passes if r.force_deleted)
    assert set(forced.force_deleted) == {*VLLM, "default/dns"}


@pytest.mark.parametrize(
    ("replicas", "spec", "evicted"),
    [
        (4, {"maxUnavailable": 1}, 1),
        (4, {"maxUnavailable": 3}, 3),
        (4, {"maxUnavailable": 9}, 4),
        (4, {"maxUnavailable": "25%"}, 1),
        (4, {"maxUnavailable": "26%"}, 2),  # rounded up
        (4, {"minAvailable": 3}, 1),
        (4, {"minAvailable": "75%"}, 1),
        (4, {"minAvailable": "74%"}, 1),  # 2.96 rounds up to 3 kept
        (4, {"minAvailable": "100%"}, 0),
        (4, {}, 4),
    ],
)
def test_one_pass_evicts_what_the_pdb_allows_of_healthy_pods(
    replicas: int, spec: dict[str, Any], evicted: int
) -> None:
    w = world(replicas, pdb(**spec))
    t = running(w, *(f"default/vllm-{i}" for i in range(replicas)))
    t.delete("gpu-1", "Drifted")
    assert len(t.reconcile("gpu-1").evicted) == evicted
