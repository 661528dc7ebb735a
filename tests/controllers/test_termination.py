"""Termination: cordon, drain (evicted pods pend again), terminate the instance, then the Node
and the NodeClaim go."""

from __future__ import annotations

from gpucap.apis.core import Node
from gpucap.controllers.nodeclaim.constants import INSTANCE_TERMINATION_REQUEUE, MIN_DRAIN_TIME
from gpucap.controllers.nodeclaim.registering import advertise, registering_node, with_ready
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.scheduling.taints import DISRUPTED_TAINT
from tests.builders import GPU_TOLERATION, edit, pod
from tests.controllers.lifecycle_builders import World, provisioned, world

DS_POD = edit(
    pod("plugin-x", tolerations=[{"operator": "Exists"}]),
    "metadata.ownerReferences",
    [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "plugin", "uid": "1"}],
)
TOLERANT = pod(
    "tolerant",
    tolerations=[GPU_TOLERATION, {"key": DISRUPTED_TAINT.key, "operator": "Exists"}],
)


def running_node(w: World) -> str:
    """NodeClaim gpu-1 launched, registered, initialized, with both vllm pods, the DaemonSet
    pod and the pod tolerating the disrupted taint bound to its Node."""
    provisioned(w, pods=("default/vllm-0", "default/vllm-1"))
    assert w.lifecycle.reconcile("gpu-1").launched
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    node = advertise(registering_node(nc, "ip-1"), {"nvidia.com/gpu": 1})
    result = w.lifecycle.register(node)
    assert result is not None
    assert result.initialized == "ip-1"
    for key in ("default/vllm-0", "default/vllm-1", "default/plugin-x", "default/tolerant"):
        w.cluster.bind(key, "ip-1")
    return "ip-1"


def node_of(w: World, name: str) -> Node:
    node = w.cluster.node(name)
    assert node is not None
    return node


def test_termination_cordons_drains_terminates_and_removes_the_node_and_claim() -> None:
    w = world(2, DS_POD, TOLERANT)
    name = running_node(w)
    t = w.lifecycle.termination
    assert t.delete("gpu-1", "test")
    assert not t.delete("gpu-1", "test")  # already deleting
    state = w.cluster.state_node(name)
    assert state is not None
    assert state.marked_for_deletion

    first = t.reconcile("gpu-1")
    assert first.cordoned
    assert first.evicted == ("default/vllm-0", "default/vllm-1")
    assert first.requeue_after == MIN_DRAIN_TIME
    taints = node_of(w, name).spec.taints
    assert any(x.key == DISRUPTED_TAINT.key and x.effect == "NoSchedule" for x in taints)
    assert [p.key for p in w.cluster.pending()] == ["default/vllm-0", "default/vllm-1"]
    assert len(w.provider.created) == 1  # not terminated before the drain time

    w.clock.advance(MIN_DRAIN_TIME)
    second = t.reconcile("gpu-1")
    assert (second.cordoned, second.instance_terminating, second.removed) == (False, True, False)
    assert second.requeue_after == INSTANCE_TERMINATION_REQUEUE
    assert w.provider.created == {}

    w.clock.advance(INSTANCE_TERMINATION_REQUEUE)
    third = t.reconcile("gpu-1")
    assert (third.node_removed, third.removed) == (True, True)
    assert third.released == ("default/tolerant",)  # it did not block the drain
    assert third.deleted_pods == ("default/plugin-x",)
    assert third.requeue_after is None
    assert w.cluster.node(name) is None
    assert w.cluster.node_claim("gpu-1") is None
    assert [p.key for p in w.cluster.pending()] == [
        "default/vllm-0",
        "default/vllm-1",
        "default/tolerant",
    ]


def test_a_pod_bound_during_the_drain_is_evicted_too() -> None:
    w = world(2, DS_POD, TOLERANT)
    name = running_node(w)
    t = w.lifecycle.termination
    t.delete("gpu-1", "test")
    t.reconcile("gpu-1")
    w.cluster.bind("default/vllm-0", name)  # a scheduler that had not seen the taint yet
    w.clock.advance(1)
    assert t.reconcile("gpu-1").evicted == ("default/vllm-0",)


def test_an_unlaunched_claim_is_removed_at_once() -> None:
    w = world()
    provisioned(w, pods=("default/vllm-0",))
    t = w.lifecycle.termination
    t.delete("gpu-1", "test")
    result = t.reconcile("gpu-1")
    assert (result.removed, result.released) == (True, ("default/vllm-0",))
    assert w.provider.calls == []


def test_a_node_that_is_not_ready_and_whose_instance_is_gone_skips_the_drain() -> None:
    w = world(2, DS_POD, TOLERANT)
    name = running_node(w)
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    w.provider.delete(nc)  # EC2 reclaimed it
    w.cluster.update_node(with_ready(node_of(w, name), False))
    t = Termination(w.cluster, w.provider, w.clock)
    t.delete("gpu-1", "gone")
    result = t.reconcile("gpu-1")
    assert (result.cordoned, result.evicted, result.removed) == (False, (), True)
    assert result.released == (
        "default/vllm-0",
        "default/vllm-1",
        "default/tolerant",
    )


def test_deleting_through_the_lifecycle_hands_the_claim_to_termination() -> None:
    w = world(2, DS_POD, TOLERANT)
    running_node(w)
    result = w.lifecycle.delete("gpu-1", "drift")
    assert result.deleted == "drift"
    assert result.termination is not None
    assert result.termination.evicted == ("default/vllm-0", "default/vllm-1")
    while not result.gone:
        assert result.requeue_after is not None
        w.clock.advance(result.requeue_after)
        result = w.lifecycle.reconcile("gpu-1")
    assert w.clock.monotonic() == MIN_DRAIN_TIME + INSTANCE_TERMINATION_REQUEUE
