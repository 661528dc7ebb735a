"""Shared set-up for the lifecycle, termination and interruption tests: a Cluster with a GPU
NodePool and pods, a FakeCloudProvider over hand-made types, a FakeClock, and NodeClaims as
the provisioner creates them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucap.apis.labels import INSTANCE_TYPE
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.types import FakeCloudProvider, node_claim_for
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.cluster import Cluster
from tests.builders import GPU_TOLERATION, deployment, load, nodepool
from tests.scheduling.builders import GPU_TYPES

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
STARTUP_TAINT = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}


@dataclass
class World:
    cluster: Cluster
    provider: FakeCloudProvider
    clock: FakeClock
    lifecycle: Lifecycle


def world(replicas: int = 2, *docs: dict[str, Any]) -> World:
    """A GPU NodePool and a Deployment `vllm` of `replicas` one-GPU pods, plus `docs`."""
    loaded = load(
        nodepool(), deployment(replicas=replicas, gpu=1, tolerations=[GPU_TOLERATION]), *docs
    )
    assert loaded.errors == [], [str(e) for e in loaded.errors]
    clock = FakeClock()
    cluster = Cluster.from_manifests(loaded.objects, clock=clock)
    provider = FakeCloudProvider(GPU_TYPES)
    return World(cluster, provider, clock, Lifecycle(cluster, provider, clock))


def claim(
    name: str = "gpu-1",
    *,
    types: tuple[str, ...] = ("g5.xlarge",),
    gpus: int = 1,
    startup_taints: list[dict[str, Any]] | None = None,
) -> NodeClaim:
    """A NodeClaim of NodePool `gpu` as the provisioner creates it (not launched)."""

    def extra(spec: dict[str, object]) -> None:
        if startup_taints:
            spec["startupTaints"] = startup_taints

    return node_claim_for(
        name,
        "gpu",
        Requirements.of(Requirement.new(INSTANCE_TYPE, "In", list(types))),
        {"cpu": 1000, "nvidia.com/gpu": gpus, "pods": 1},
        node_class="gpu",
        taints=load(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "x"},
                "spec": {"taints": [GPU_TAINT]},
            }
        )
        .objects.nodes[0]
        .spec.taints,
        extra=extra,
    )


def provisioned(w: World, name: str = "gpu-1", pods: tuple[str, ...] = (), **kw: Any) -> None:
    """The provisioner's part: create NodeClaim `name` and nominate `pods` to it."""
    w.cluster.add_node_claim(claim(name, **kw))
    for key in pods:
        w.cluster.nominate(key, name)
