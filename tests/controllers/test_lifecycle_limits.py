"""NodePool limits while nodes come up (issue 10, "Limits"): a NodeClaim in flight or not yet
initialized counts its instance type's physical GPUs, an initialized node what its device
plugin advertises. With time-slicing x4 and `nvidia.com/gpu: "6"`, the pool launches six
one-GPU nodes while they come up (24 GPUs once they advertise: an overrun of the limit) and
then launches nothing more; had the first nodes initialized first, it would have stopped
sooner. Each batch runs Karpenter's scheduler over `Cluster.snapshot()`, as the provisioner
does."""

from __future__ import annotations

from gpucap.cloudprovider.types import FakeCloudProvider, node_claim_for
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.nodeclaim.registering import advertise, registering_node
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.refusal import TYPES_EXCEED_LIMITS
from gpucap.scheduling.scheduler import PoolInput, Results, solve
from gpucap.state.cluster import Cluster
from tests.builders import GPU_TOLERATION, deployment, load, nodepool
from tests.scheduling.builders import instance_type

# One GPU and 4 vCPUs: a pod asking 3 vCPUs and a GPU fills a node, time-sliced or not.
G5 = instance_type("g5.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006)


class Fleet:
    def __init__(self) -> None:
        loaded = load(nodepool(), vllm(0))
        assert loaded.errors == []
        self.clock = FakeClock()
        self.cluster = Cluster.from_manifests(loaded.objects, clock=self.clock)
        self.provider = FakeCloudProvider([G5])
        self.lifecycle = Lifecycle(self.cluster, self.provider, self.clock)
        self.count = 0

    def scale(self, replicas: int) -> None:
        self.cluster.apply(load(vllm(replicas)).objects.workloads[0])

    def batch(self) -> Results:
        """One provisioning batch: solve the pending pods against cluster state, create and
        launch the new NodeClaims, nominate their pods."""
        (pool,) = self.cluster.nodepools()
        snap = self.cluster.snapshot()
        results = solve(snap.pending, [PoolInput(pool, [G5])], state_nodes=snap.nodes)
        for new in results.new_node_claims:
            self.count += 1
            name = f"gpu-{self.count}"
            self.cluster.add_node_claim(
                node_claim_for(name, new.nodepool, new.requirements, new.requests, node_class="gpu")
            )
            for p in new.pods:
                self.cluster.nominate(p.key, name)
            assert self.lifecycle.reconcile(name).launched
        return results

    def initialize(self, *names: str) -> None:
        """The Nodes of `names` register and the device plugin advertises 4 GPUs each."""
        for name in names:
            nc = self.cluster.node_claim(name)
            assert nc is not None
            node = advertise(registering_node(nc, f"ip-{name}"), {"nvidia.com/gpu": 4})
            result = self.lifecycle.register(node)
            assert result is not None
            assert result.initialized == f"ip-{name}"

    def gpus(self) -> int:
        return self.cluster.nodepool_usage("gpu").get("nvidia.com/gpu", 0)


def vllm(replicas: int) -> dict[str, object]:
    return deployment(replicas=replicas, gpu=1, cpu="3", memory="1Gi", tolerations=[GPU_TOLERATION])


def claims(f: Fleet) -> list[str]:
    return [c.name for c in f.cluster.node_claims()]


def test_the_gpu_limit_overruns_while_nodes_come_up_and_stops_once_they_initialize() -> None:
    f = Fleet()
    # Coming up: four NodeClaims in flight count 1 GPU each.
    f.scale(4)
    assert len(f.batch().new_node_claims) == 4
    assert f.gpus() == 4
    # More pods while they are in flight: the limit still sees 4 of 6, two more launch.
    f.scale(7)
    results = f.batch()
    assert len(results.new_node_claims) == 2
    assert f.gpus() == 6
    assert f.cluster.nodepool_exceeded("gpu") == []
    (refused,) = results.pod_errors.values()
    assert TYPES_EXCEED_LIMITS in str(refused)  # the seventh GPU
    assert refused.limited_pools() == {"gpu"}
    # They initialize, time-sliced 4 ways: the pool now counts 24 GPUs against its 6.
    f.initialize(*claims(f))
    assert f.gpus() == 24
    assert [n.capacity["nvidia.com/gpu"] for n in f.cluster.snapshot().nodes] == [4] * 6
    assert f.cluster.nodepool_exceeded("gpu") == [("nvidia.com/gpu", 24, 6)]
    # ... and it stops: a new pod gets no NodeClaim (the nodes are full on CPU).
    f.scale(8)
    results = f.batch()
    assert results.new_node_claims == []
    assert len(results.pod_errors) == 2
    assert all(TYPES_EXCEED_LIMITS in str(e) for e in results.pod_errors.values())
    assert results.limited_pools() == ["gpu"]
    assert len(claims(f)) == 6


def test_had_the_first_nodes_initialized_first_the_pool_would_have_stopped_at_four() -> None:
    f = Fleet()
    f.scale(4)
    f.batch()
    f.initialize(*claims(f))
    assert f.gpus() == 16
    f.scale(7)
    results = f.batch()
    assert results.new_node_claims == []
    assert len(claims(f)) == 4


def test_an_uninitialized_node_counts_its_physical_gpus_until_the_plugin_advertises() -> None:
    f = Fleet()
    f.scale(1)
    f.batch()
    nc = f.cluster.node_claim("gpu-1")
    assert nc is not None
    result = f.lifecycle.register(registering_node(nc, "ip-gpu-1"))
    assert result is not None
    assert result.waiting == "ResourceNotRegistered"
    state = f.cluster.state_node("ip-gpu-1")
    assert state is not None
    assert (state.initialized, state.capacity["nvidia.com/gpu"]) == (False, 1)
    assert f.gpus() == 1
