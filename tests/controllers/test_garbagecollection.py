"""Garbage collection (`controllers/garbagecollection.py`): orphaned instances terminated after
their 30 s grace, NodeClaims whose instance is gone deleted unless their Node is Ready, each on
Karpenter's schedule. AWSCloudProvider + SimulatedEC2 for instances, FakeCloudProvider for the
NodeClaim rules."""

from __future__ import annotations

from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import FakeCloudProvider, node_claim_for
from gpucap.controllers.garbagecollection import (
    GARBAGE_COLLECTED,
    INSTANCE_FAST_PERIOD,
    INSTANCE_FAST_RUNS,
    INSTANCE_PERIOD,
    NODECLAIM_PERIOD,
    GarbageCollection,
)
from gpucap.controllers.nodeclaim.registering import registering_node
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.cluster import Cluster
from tests.builders import load, nodeclass, pod
from tests.controllers.lifecycle_builders import World, provisioned, world

CATALOG = load_catalog("us-east-1")


def gpu_claim(name: str) -> NodeClaim:
    reqs = Requirements.of(
        Requirement.new(INSTANCE_TYPE, "In", ["g5.xlarge"]),
        Requirement.new(CAPACITY_TYPE, "In", ["on-demand"]),
    )
    return node_claim_for(
        name, "gpu", reqs, {"cpu": 1000, "nvidia.com/gpu": 1, "pods": 1}, node_class="gpu"
    )


def aws() -> tuple[Cluster, SimulatedEC2, AWSCloudProvider, FakeClock, GarbageCollection]:
    clock = FakeClock()
    nc = load(nodeclass("gpu")).objects.nodeclasses[0]
    ec2 = SimulatedEC2(CATALOG, clock)
    ec2.publish_amis("1.36")
    cloud = AWSCloudProvider(ec2, CATALOG, clock, {"gpu": nc}, cluster_name="demo")
    cluster = Cluster(clock)
    return cluster, ec2, cloud, clock, GarbageCollection(cluster, cloud, clock)


def state(ec2: SimulatedEC2, provider_id: str | None, clock: FakeClock) -> str:
    return ec2.instances[(provider_id or "").rsplit("/", 1)[1]].advance(clock.now())


# ---- orphaned instances -------------------------------------------------------------------------
def test_an_instance_without_a_node_claim_is_terminated_once_older_than_30_seconds() -> None:
    _cluster, ec2, cloud, clock, gc = aws()
    orphan = cloud.create(gpu_claim("lost"))  # launched, but no NodeClaim records it
    assert gc.reconcile() == []
    clock.advance(INSTANCE_FAST_PERIOD * 3)  # exactly 30 s: not yet
    assert gc.reconcile() == []
    clock.advance(INSTANCE_FAST_PERIOD)
    assert gc.reconcile() == [orphan.status.provider_id]
    assert state(ec2, orphan.status.provider_id, clock) == "shutting-down"
    clock.advance(INSTANCE_FAST_PERIOD)
    assert gc.reconcile() == []  # no longer listed


def test_an_instance_with_a_node_claim_is_never_collected() -> None:
    cluster, ec2, cloud, clock, gc = aws()
    launched = cloud.create(gpu_claim("kept"))
    cluster.add_node_claim(launched)
    for _ in range(10):
        clock.advance(INSTANCE_PERIOD)
        assert gc.reconcile() == []
    assert state(ec2, launched.status.provider_id, clock) == "running"


def test_the_node_of_an_orphaned_instance_goes_with_it_and_its_pods_pend() -> None:
    cluster, _ec2, cloud, clock, gc = aws()
    orphan = cloud.create(gpu_claim("lost"))
    node = registering_node(orphan, "ip-lost")
    cluster.add_node(node)
    cluster.add_pod(load(pod("web-0")).objects.pods[0])
    cluster.bind("default/web-0", "ip-lost")
    clock.advance(60)
    collected = gc.collect()
    assert collected.instances == (orphan.status.provider_id,)
    assert collected.nodes == ("ip-lost",)
    assert collected.released == ("default/web-0",)
    assert cluster.node("ip-lost") is None
    assert cluster.pod("default/web-0").spec.node_name is None


def test_the_instance_collector_runs_every_10_s_for_20_passes_then_every_2_minutes() -> None:
    _, _, cloud, clock, gc = aws()
    early = cloud.create(gpu_claim("early")).status.provider_id
    collected: dict[str | None, float] = {}
    late = None
    for second in range(400):
        if second == 201:
            late = cloud.create(gpu_claim("late")).status.provider_id
        for pid in gc.reconcile():
            collected[pid] = clock.monotonic()
        clock.advance(1)
    # Passes at 0, 10, 20, ...: 30 s old at 30 is not "more than 30 s", so 40.
    assert collected[early] == 40
    # The 21st pass runs at 200; the next one only at 320.
    assert INSTANCE_FAST_RUNS == 20
    assert collected[late] == 200 + INSTANCE_PERIOD


# ---- NodeClaims without an instance -------------------------------------------------------------
def registered(w: World, *, ready: bool) -> None:
    provisioned(w)
    assert w.lifecycle.reconcile("gpu-1").launched
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    w.lifecycle.register(registering_node(nc, "ip-1", ready=ready))


def vanish(provider: FakeCloudProvider, w: World) -> None:
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    del provider.created[nc.status.provider_id or ""]


def test_a_registered_claim_whose_instance_is_gone_is_deleted_and_finalized() -> None:
    w = world(1)
    termination = Termination(w.cluster, w.provider, w.clock)
    gc = GarbageCollection(w.cluster, w.provider, w.clock, termination=termination)
    registered(w, ready=False)
    assert gc.reconcile() == []
    vanish(w.provider, w)
    w.clock.advance(NODECLAIM_PERIOD - 1)
    assert gc.reconcile() == []  # the NodeClaim collector runs every 2 minutes
    w.clock.advance(1)
    assert gc.reconcile() == ["gpu-1"]
    result = termination.reconcile("gpu-1")
    assert result.reason == GARBAGE_COLLECTED
    assert result.removed
    assert result.node_removed
    assert w.cluster.node_claim("gpu-1") is None


def test_a_claim_whose_node_is_still_ready_is_not_collected() -> None:
    w = world(1)
    gc = GarbageCollection(w.cluster, w.provider, w.clock)
    registered(w, ready=True)
    vanish(w.provider, w)
    for _ in range(3):
        w.clock.advance(NODECLAIM_PERIOD)
        assert gc.reconcile() == []
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert nc.metadata.deletion_timestamp is None


def test_an_unregistered_claim_is_left_to_the_registration_timeout() -> None:
    w = world(1)
    gc = GarbageCollection(w.cluster, w.provider, w.clock)
    provisioned(w)
    assert w.lifecycle.reconcile("gpu-1").launched
    vanish(w.provider, w)
    w.clock.advance(NODECLAIM_PERIOD)
    assert gc.reconcile() == []


def test_a_claim_already_being_deleted_is_not_collected_again() -> None:
    w = world(1)
    termination = Termination(w.cluster, w.provider, w.clock)
    gc = GarbageCollection(w.cluster, w.provider, w.clock, termination=termination)
    registered(w, ready=False)
    termination.delete("gpu-1", "expired")
    vanish(w.provider, w)
    assert gc.reconcile() == []


def test_requeue_after_is_the_next_collector_due() -> None:
    w = world(1)
    gc = GarbageCollection(w.cluster, w.provider, w.clock)
    assert gc.requeue_after() == 0.0
    gc.reconcile()
    assert gc.requeue_after() == INSTANCE_FAST_PERIOD
    w.clock.advance(INSTANCE_FAST_PERIOD)
    gc.reconcile()  # only the instance collector was due
    assert gc.requeue_after() == INSTANCE_FAST_PERIOD
    w.clock.advance(NODECLAIM_PERIOD - INSTANCE_FAST_PERIOD)
    assert gc.requeue_after() == 0.0  # the NodeClaim collector is due again at 120 s


def test_both_collectors_due_together_list_the_instances_once() -> None:
    cluster, ec2, cloud, _clock, gc = aws()
    cluster.add_node_claim(cloud.create(gpu_claim("kept")))
    ec2.calls.clear()
    gc.collect()  # both are due on the first call; nothing was deleted in between
    assert ec2.calls.count("DescribeInstances") == 1


def test_after_an_orphan_is_terminated_the_node_claim_collector_lists_again() -> None:
    # The instance collector's listing is stale once it deleted something: the NodeClaim
    # collector must see the cloud as it is after the delete.
    _cluster, ec2, cloud, clock, gc = aws()
    cloud.create(gpu_claim("lost"))
    gc.collect()
    clock.advance(NODECLAIM_PERIOD)
    ec2.calls.clear()
    collected = gc.collect()
    assert len(collected.instances) == 1
    after = ec2.calls[ec2.calls.index("TerminateInstances") + 1 :]
    assert after == ["DescribeInstances"]
