"""Karpenter's NodeClaim lifecycle (launch, registration, initialization, liveness) over the
mutable Cluster: FakeCloudProvider for the rules, AWSCloudProvider + SimulatedEC2 once."""

from __future__ import annotations

import pytest

from gpucap.apis.labels import (
    CAPACITY_TYPE,
    INITIALIZED,
    INSTANCE_TYPE,
    NODEPOOL,
    REGISTERED,
    ZONE,
)
from gpucap.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from gpucap.controllers.nodeclaim import conditions as cond
from gpucap.controllers.nodeclaim.constants import LAUNCH_TIMEOUT, REGISTRATION_TIMEOUT
from gpucap.controllers.nodeclaim.registering import advertise, registering_node, with_ready
from gpucap.runtime.clock import FakeClock
from tests.controllers.aws_worlds import (
    PODS,
    aws_world,
    launched,
    register,
)
from tests.controllers.lifecycle_builders import STARTUP_TAINT, claim, provisioned, world


def test_launch_writes_back_what_the_provider_launched() -> None:
    w = world()
    provisioned(w, pods=PODS)
    result = w.lifecycle.reconcile("gpu-1")
    assert (result.launched, result.deleted, result.waiting) == (True, None, "NodeNotFound")
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert nc.status.provider_id
    assert nc.status.provider_id.startswith("fake:///")
    labels = nc.metadata.labels
    assert (labels[INSTANCE_TYPE], labels[CAPACITY_TYPE], labels[NODEPOOL]) == (
        "g5.xlarge",
        "spot",
        "gpu",
    )
    assert nc.status.capacity["nvidia.com/gpu"].value() == 1
    assert cond.is_true(nc, cond.LAUNCHED)
    assert not cond.is_true(nc, cond.REGISTERED)
    assert ("create", "gpu-1") in w.provider.calls
    # Waiting for registration: run again when the registration TTL would run out.
    assert result.requeue_after == REGISTRATION_TIMEOUT
    # Launched once: the next pass does not create again.
    w.lifecycle.reconcile("gpu-1")
    assert w.provider.calls.count(("create", "gpu-1")) == 1


def test_insufficient_capacity_deletes_the_claim_and_returns_pods_to_pending() -> None:
    w = world()
    provisioned(w, pods=PODS)
    assert w.cluster.pending() == []
    w.provider.fail_next(InsufficientCapacityError("all requested instance types were unavailable"))
    result = w.lifecycle.reconcile("gpu-1")
    assert (result.deleted, result.gone, result.released) == ("insufficient_capacity", True, PODS)
    assert result.error == "insufficient capacity, all requested instance types were unavailable"
    assert w.cluster.node_claim("gpu-1") is None
    assert [p.key for p in w.cluster.pending()] == list(PODS)
    assert w.provider.created == {}


def test_a_node_class_that_is_not_ready_deletes_the_claim() -> None:
    w = world()
    provisioned(w, pods=PODS)
    w.provider.fail_next(NodeClassNotReadyError("EC2NodeClass gpu resolved no AMI"))
    result = w.lifecycle.reconcile("gpu-1")
    assert (result.deleted, result.released) == ("nodeclass_not_ready", PODS)
    assert w.cluster.node_claim("gpu-1") is None


def test_a_create_error_keeps_the_claim_and_retries_with_backoff_until_the_launch_timeout() -> None:
    w = world()
    provisioned(w, pods=PODS)
    w.provider.fail_next(*[CreateError("FleetError", "try again")] * 20)
    delays = []
    while w.clock.monotonic() < LAUNCH_TIMEOUT:
        result = w.lifecycle.reconcile("gpu-1")
        if result.deleted:
            break
        assert result.error == "FleetError: try again"
        nc = w.cluster.node_claim("gpu-1")
        assert nc is not None
        launched_cond = cond.condition(nc, cond.LAUNCHED)
        assert launched_cond is not None
        assert (launched_cond.status, launched_cond.reason) == ("Unknown", "FleetError")
        assert result.requeue_after is not None
        delays.append(result.requeue_after)
        w.clock.advance(result.requeue_after)
    # The rate limiter's 1 s doubling to 60 s, cut by the launch timeout.
    assert delays[:8] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert sum(delays) == LAUNCH_TIMEOUT
    result = w.lifecycle.reconcile("gpu-1")
    assert (result.deleted, result.gone, result.released) == ("launch_timeout", True, PODS)


def test_registration_syncs_the_claim_onto_the_node() -> None:
    w = world()
    provisioned(w, pods=PODS, startup_taints=[STARTUP_TAINT])
    launched(w)
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    node = registering_node(nc, "ip-1")
    node = node.model_copy(
        update={
            "metadata": node.metadata.model_copy(update={"labels": {"kubelet": "set"}}),
            "spec": node.spec.model_copy(update={"taints": node.spec.taints[:1]}),
        }
    )
    result = w.lifecycle.register(node)
    assert result is not None
    assert result.registered == "ip-1"
    synced = w.cluster.node("ip-1")
    assert synced is not None
    assert [(t.key, t.effect) for t in synced.spec.taints] == [
        ("nvidia.com/gpu", "NoSchedule"),
        ("example.com/agent-not-ready", "NoSchedule"),
    ]
    labels = synced.metadata.labels
    assert (labels["kubelet"], labels[REGISTERED], labels[NODEPOOL]) == ("set", "true", "gpu")
    assert labels[ZONE] == nc.metadata.labels[ZONE]
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert nc.status.node_name == "ip-1"
    assert result.waiting == "StartupTaintsExist"


def test_initialization_waits_for_ready_startup_taints_and_every_requested_resource() -> None:
    w = world()
    provisioned(w, pods=PODS, startup_taints=[STARTUP_TAINT])
    launched(w)
    name = register(w, ready=False)

    def step(update: object) -> str | None:
        node = w.cluster.node(name)
        assert node is not None
        result = w.lifecycle.node_changed(update(node))  # type: ignore[operator]
        assert result is not None
        return result.initialized or result.waiting

    assert step(lambda n: n) == "NodeNotReady"
    assert step(lambda n: with_ready(n, True)) == "StartupTaintsExist"
    no_startup = lambda n: n.model_copy(  # noqa: E731
        update={
            "spec": n.spec.model_copy(
                update={"taints": [t for t in n.spec.taints if t.key != STARTUP_TAINT["key"]]}
            )
        }
    )
    assert step(no_startup) == "ResourceNotRegistered"
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    init = cond.condition(nc, cond.INITIALIZED)
    assert init is not None
    assert init.message == 'Resource "nvidia.com/gpu" was requested but not registered'
    assert step(lambda n: advertise(n, {"nvidia.com/gpu": 4})) == name
    node = w.cluster.node(name)
    assert node is not None
    assert node.metadata.labels[INITIALIZED] == "true"
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert cond.is_true(nc, cond.INITIALIZED)
    assert cond.is_true(nc, cond.READY)


def test_node_without_gpu_advertised_stays_uninitialized() -> None:
    w = world()
    provisioned(w, pods=PODS)
    launched(w)
    name = register(w)
    for _ in range(7):  # a week: no initialization timeout, no liveness once registered
        w.clock.advance(24 * 3600)
        result = w.lifecycle.reconcile("gpu-1")
        assert (result.waiting, result.deleted, result.requeue_after) == (
            "ResourceNotRegistered",
            None,
            None,
        )
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert len(w.provider.created) == 1  # its instance still runs: billed
    state = w.cluster.state_node(name)
    assert state is not None
    assert not state.initialized
    # The scheduler still counts the instance type's GPU on it (§3.16).
    assert state.allocatable["nvidia.com/gpu"] == 1


def test_registration_ttl_deletes_an_unregistered_claim_after_15_minutes() -> None:
    w = world()
    provisioned(w, pods=PODS)
    launched(w)
    w.clock.advance(REGISTRATION_TIMEOUT - 1)
    result = w.lifecycle.reconcile("gpu-1")
    assert (result.deleted, result.requeue_after) == (None, 1)
    w.clock.advance(1)
    result = w.lifecycle.reconcile("gpu-1")
    assert result.deleted == "registration_timeout"
    assert result.released == ()  # the claim still exists while its instance terminates
    assert result.termination is not None
    assert result.termination.instance_terminating
    assert w.provider.created == {}
    w.clock.advance(result.requeue_after or 0)
    result = w.lifecycle.reconcile("gpu-1")
    assert (result.gone, result.released) == (True, PODS)
    assert w.cluster.node_claim("gpu-1") is None
    assert [p.key for p in w.cluster.pending()] == list(PODS)


def test_a_registered_claim_is_not_deleted_by_the_registration_ttl() -> None:
    w = world()
    provisioned(w, pods=PODS)
    launched(w)
    w.clock.advance(REGISTRATION_TIMEOUT - 10)
    register(w)
    w.clock.advance(3600)
    assert w.lifecycle.reconcile("gpu-1").deleted is None


def test_a_claim_launched_elsewhere_is_not_created_again() -> None:
    w = world()
    provisioned(w)
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    w.cluster.update_node_claim(w.provider.create(nc))
    result = w.lifecycle.reconcile("gpu-1")
    assert result.launched is False
    assert result.waiting == "NodeNotFound"
    assert w.provider.calls.count(("create", "gpu-1")) == 1


def test_condition_transition_times_move_only_when_the_status_changes() -> None:
    clock = FakeClock()
    nc = cond.with_initial_conditions(claim(), clock.now())
    start = cond.condition(nc, cond.LAUNCHED)
    clock.advance(30)
    nc = cond.with_condition(nc, cond.LAUNCHED, "Unknown", clock.now(), reason="FleetError")
    again = cond.condition(nc, cond.LAUNCHED)
    assert start is not None
    assert again is not None
    assert again.last_transition_time == start.last_transition_time
    assert again.reason == "FleetError"
    nc = cond.with_condition(nc, cond.LAUNCHED, "True", clock.now())
    done = cond.condition(nc, cond.LAUNCHED)
    assert done is not None
    assert cond.seconds_since(done, clock.now()) == 0
    assert cond.seconds_since(start, clock.now()) == 30


# ---- over AWSCloudProvider and SimulatedEC2 ---------------------------------------------------


@pytest.mark.parametrize("capacity", [True, False])
def test_the_lifecycle_over_aws_and_simulated_ec2(capacity: bool) -> None:
    cluster, api, _provider, _clock, lifecycle = aws_world()
    cluster.add_node_claim(claim(types=("g5.xlarge",)))
    cluster.nominate("default/vllm-0", "gpu-1")
    if not capacity:
        api.set_capacity("g5.xlarge", available=False)
        result = lifecycle.reconcile("gpu-1")
        assert (result.deleted, result.released) == ("insufficient_capacity", ("default/vllm-0",))
        assert result.error is not None
        assert result.error.startswith("insufficient capacity")
        return
    result = lifecycle.reconcile("gpu-1")
    assert result.launched
    nc = cluster.node_claim("gpu-1")
    assert nc is not None
    assert nc.status.provider_id
    assert nc.status.provider_id.startswith("aws:///us-east-1")
    assert nc.metadata.labels[INSTANCE_TYPE] == "g5.xlarge"
    node = registering_node(nc, "ip-10-0-0-1")
    assert (lifecycle.register(node) or result).waiting == "ResourceNotRegistered"
    registered = cluster.node("ip-10-0-0-1")
    assert registered is not None
    done = lifecycle.node_changed(advertise(registered, {"nvidia.com/gpu": 1}))
    assert done is not None
    assert done.initialized == "ip-10-0-0-1"
    assert [p.key for p in cluster.pending()] == []
