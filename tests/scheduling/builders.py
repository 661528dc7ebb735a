"""Builders for scheduler tests: small, hand-made instance types and NodePools/pods as models."""

from __future__ import annotations

from typing import Any

from gpucap.apis.core import Pod
from gpucap.apis.nodepool import NodePool
from gpucap.apis.serde import load_text
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.scheduler import PoolInput, Results, solve
from tests.builders import GPU_TOLERATION, edit, nodepool, pod, to_yaml

GIB = 2**30
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")

# Every well-known key a real catalog type defines; absent values become DoesNotExist.
_KEYS = (
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "topology.kubernetes.io/zone",
    "karpenter.sh/capacity-type",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-manufacturer",
)


def instance_type(
    name: str,
    *,
    cpu: int = 4,
    memory_gib: int = 16,
    gpu: int = 0,
    price: float = 1.0,
    spot_price: float | None = None,
    zones: tuple[str, ...] = ZONES,
    capacity_types: tuple[str, ...] = ("spot", "on-demand"),
    unavailable: tuple[tuple[str, str], ...] = (),
    pods: int = 110,
) -> InstanceType:
    """A type with `cpu` vCPUs (all allocatable), memory, GPUs and one offering per zone x
    capacity type; spot costs `spot_price` (default 40% of on-demand)."""
    family, size = name.split(".", 1)
    labels: dict[str, tuple[str, ...]] = {
        "node.kubernetes.io/instance-type": (name,),
        "kubernetes.io/arch": ("amd64",),
        "kubernetes.io/os": ("linux",),
        "topology.kubernetes.io/zone": zones,
        "karpenter.sh/capacity-type": capacity_types,
        "karpenter.k8s.aws/instance-family": (family,),
        "karpenter.k8s.aws/instance-size": (size,),
        "karpenter.k8s.aws/instance-cpu": (str(cpu),),
    }
    if gpu:
        labels["karpenter.k8s.aws/instance-gpu-count"] = (str(gpu),)
        labels["karpenter.k8s.aws/instance-gpu-name"] = ("a10g",)
        labels["karpenter.k8s.aws/instance-gpu-manufacturer"] = ("nvidia",)
    reqs = Requirements.of(
        *(
            Requirement.new(k, "In", labels[k])
            if k in labels
            else Requirement.new(k, "DoesNotExist")
            for k in _KEYS
        )
    )
    capacity = {"cpu": cpu * 1000, "memory": memory_gib * GIB, "pods": pods, "nvidia.com/gpu": gpu}
    spot = spot_price if spot_price is not None else round(price * 0.4, 4)
    offerings = tuple(
        Offering(z, ct, spot if ct == "spot" else price, (z, ct) not in unavailable)
        for z in zones
        for ct in capacity_types
    )
    return InstanceType(name, reqs, capacity, dict(capacity), offerings)


CPU_TYPES = [
    instance_type("m5.large", cpu=2, memory_gib=8, price=0.096),
    instance_type("m5.xlarge", cpu=4, memory_gib=16, price=0.192),
    instance_type("m5.2xlarge", cpu=8, memory_gib=32, price=0.384),
]
GPU_TYPES = [
    instance_type("g5.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006),
    instance_type("g5.2xlarge", cpu=8, memory_gib=32, gpu=1, price=1.212),
    instance_type("g5.12xlarge", cpu=48, memory_gib=192, gpu=4, price=5.672),
]


def load_models(*docs: dict[str, Any]) -> tuple[list[NodePool], list[Pod]]:
    objs = load_text(to_yaml(*docs), "t.yaml").objects
    return objs.nodepools, objs.pods


def gpu_pool(name: str = "gpu", **spec: Any) -> dict[str, Any]:
    doc = nodepool(name, **spec)
    return edit(doc, "spec.template.spec.requirements", [])


def cpu_pool(name: str = "default", **spec: Any) -> dict[str, Any]:
    doc = edit(nodepool(name, **spec), "spec.template.spec.requirements", [])
    doc = edit(doc, "spec.template.spec.taints", [])
    return edit(doc, "spec.limits", {"cpu": "1000"})


def gpu_pod(name: str, gpus: int = 1, **kw: Any) -> dict[str, Any]:
    kw.setdefault("tolerations", [GPU_TOLERATION])
    return pod(name, gpu=gpus, **kw)


def run(
    docs: list[dict[str, Any]],
    types: dict[str, list[InstanceType]] | list[InstanceType],
    *,
    state_nodes: tuple[StateNode, ...] = (),
    options: SchedulingOptions | None = None,
) -> Results:
    """Load NodePools and pods from docs and solve; `types` per pool name (or for all pools)."""
    loaded = load_text(to_yaml(*docs), "t.yaml")
    assert loaded.errors == [], [str(e) for e in loaded.errors]
    objs = loaded.objects
    pools = [
        PoolInput(np, types[np.name] if isinstance(types, dict) else types) for np in objs.nodepools
    ]
    return solve(
        objs.pods, pools, state_nodes=state_nodes, daemonsets=objs.daemonsets, options=options
    )


def reasons(results: Results) -> dict[str, str]:
    """The pending pods' reasons as printed (`str` of each `PodError`)."""
    return {key: str(error) for key, error in results.pod_errors.items()}
