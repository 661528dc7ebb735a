"""NodeOverlay (`karpenter.sh/v1alpha1`): price and capacity overrides for the instance types
matching a requirement set, e.g. advertising `nvidia.com/gpu: 4` on time-sliced nodes.

Schema from `pkg/apis/crds/karpenter.sh_nodeoverlays.yaml`; Karpenter runs overlays only behind
the `NodeOverlay` feature gate (default off), gpucap always honours them when given.
Called by `apis/serde.py`; read by the catalog when it builds instance types.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, StrictStr

from gpucap.apis.meta import KarpenterModel, ObjectMeta
from gpucap.apis.nodepool import NodeSelectorRequirementWithMinValues
from gpucap.apis.quantity import CRDResourceList

__all__ = ["NodeOverlay"]


class NodeOverlaySpec(KarpenterModel):
    requirements: list[NodeSelectorRequirementWithMinValues]
    price: StrictStr | None = None
    price_adjustment: StrictStr | None = None
    capacity: CRDResourceList | None = None
    weight: StrictInt | None = None


class NodeOverlay(KarpenterModel):
    api_version: Literal["karpenter.sh/v1alpha1"] = "karpenter.sh/v1alpha1"
    kind: Literal["NodeOverlay"] = "NodeOverlay"
    metadata: ObjectMeta
    spec: NodeOverlaySpec
    status: dict[str, object] | None = Field(default=None)
