"""Provisioning passes run over sized GPU types, shared by the pass tests and their laws (not a
test module)."""

from __future__ import annotations

from typing import Any

from gpucap.apis.serde import load_text
from gpucap.controllers.provisioning import Plan
from gpucap.operator.plan import provision
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.scheduler import PoolInput
from tests.builders import GPU_TOLERATION, deployment, edit, to_yaml
from tests.scheduling.builders import gpu_pool, instance_type

# Sizes up to an 8-GPU type, as a real GPU family has: the first pass reserves 8 per NodeClaim.
SIZED_GPU_TYPES = [
    instance_type("g5.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006),
    instance_type("g5.12xlarge", cpu=48, memory_gib=192, gpu=4, price=5.672),
    instance_type("g5.48xlarge", cpu=192, memory_gib=768, gpu=8, price=16.288),
]
ONE_PER_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "llm"}},
            }
        ]
    }
}


def llm(replicas: int) -> dict[str, Any]:
    return deployment(
        "llm", replicas=replicas, gpu=1, tolerations=[GPU_TOLERATION], affinity=ONE_PER_NODE
    )


def limited_gpu_pool(gpus: int) -> dict[str, Any]:
    return edit(gpu_pool(), "spec.limits", {"nvidia.com/gpu": str(gpus)})


def static_pool(name: str, replicas: int, **limits: str) -> dict[str, Any]:
    doc = edit(gpu_pool(name), "spec.replicas", replicas)
    return edit(doc, "spec.limits", dict(limits) or None)


def run_passes(
    docs: list[dict[str, Any]],
    types: dict[str, list[InstanceType]] | list[InstanceType],
    *,
    max_passes: int = 20,
    state_nodes: tuple[StateNode, ...] = (),
) -> Plan:
    loaded = load_text(to_yaml(*docs), "t.yaml")
    assert loaded.errors == [], [str(e) for e in loaded.errors]
    objs = loaded.objects
    pools = [
        PoolInput(np, types[np.name] if isinstance(types, dict) else types) for np in objs.nodepools
    ]
    return provision(
        pools,
        state_nodes=state_nodes,
        pending=objs.pods,
        daemonsets=objs.daemonsets,
        max_passes=max_passes,
    )


def claims_by_pass(plan: Plan) -> list[tuple[int, list[str]]]:
    return [(c.pass_number, [p.key for p in c.pods]) for c in plan.node_claims]
