"""NodeOverlay documents for the overlay tests of the scheduler and the cloud provider (not a test
module)."""

from __future__ import annotations

from typing import Any

from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.serde import load_text
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeoverlay import (
    PoolTypes,
    apply_overlays,
    evaluate_overlays,
)
from tests.builders import to_yaml
from tests.scheduling.builders import CPU_TYPES, GPU_TYPES

GPU_COUNT_1 = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]}
G5 = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
TYPES = [*CPU_TYPES, *GPU_TYPES]


def overlay(
    name: str, *reqs: dict[str, Any], weight: int | None = None, **spec: Any
) -> NodeOverlay:
    body: dict[str, Any] = {"requirements": list(reqs) or [G5], **spec}
    if weight is not None:
        body["weight"] = weight
    doc = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": body,
    }
    loaded = load_text(to_yaml(doc), "overlay.yaml")
    assert not loaded.errors, loaded.errors
    (obj,) = loaded.objects.nodeoverlays
    return obj


def pool(name: str = "gpu", labels: dict[str, str] | None = None) -> PoolTypes:
    return PoolTypes(name, labels or {}, TYPES)


def applied(*overlays: NodeOverlay, on: PoolTypes | None = None) -> dict[str, InstanceType]:
    target = on or pool()
    accepted, _ = evaluate_overlays(overlays, [target])
    ((types, _),) = apply_overlays(accepted, [target])
    return {it.name: it for it in types}


def spot_price(it: InstanceType, zone: str = "us-east-1a") -> float:
    return next(o.price for o in it.offerings if o.zone == zone and o.capacity_type == "spot")
