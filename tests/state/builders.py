"""Builders for cluster-state tests: Nodes and NodeClaims as the dicts a YAML file would hold."""

from __future__ import annotations

from typing import Any

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def node(
    name: str,
    *,
    pool: str | None = "gpu",
    provider_id: str | None = None,
    gpus: int | None = 1,
    initialized: bool = True,
    taints: list[dict[str, Any]] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    labels: dict[str, str] = {"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64"}
    if pool is not None:
        labels["karpenter.sh/nodepool"] = pool
        if initialized:
            labels["karpenter.sh/initialized"] = "true"
    capacity: dict[str, str] = {"cpu": "4", "memory": "16Gi", "pods": "58"}
    if gpus is not None:
        capacity["nvidia.com/gpu"] = str(gpus)
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"taints": taints if taints is not None else [GPU_TAINT]},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }
    if provider_id:
        doc["spec"]["providerID"] = provider_id
    return doc


def node_claim(
    name: str,
    *,
    pool: str = "gpu",
    provider_id: str | None = None,
    node_name: str | None = None,
    gpus: int = 1,
    startup_taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if provider_id:
        status["providerID"] = provider_id
        capacity = {"cpu": "4", "memory": "16Gi", "pods": "58", "nvidia.com/gpu": str(gpus)}
        status["capacity"] = capacity
        status["allocatable"] = {**capacity, "cpu": "3920m"}
    if node_name:
        status["nodeName"] = node_name
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {
                "karpenter.sh/nodepool": pool,
                "node.kubernetes.io/instance-type": "g5.xlarge",
            },
        },
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["g5.xlarge"],
                }
            ],
            "taints": [GPU_TAINT],
            "startupTaints": startup_taints or [],
            "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
        },
        "status": status,
    }
