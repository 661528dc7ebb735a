"""NodePool and NodeClaim (`karpenter.sh/v1`), with the CRD's defaults.

Karpenter has no defaulting webhook; all defaults are OpenAPI `default:` values in the CRD
(`pkg/apis/crds/karpenter.sh_nodepools.yaml`, `karpenter.sh_nodeclaims.yaml`), which the API
server applies on create. gpucap applies the same ones when it loads a manifest:
- `spec.template.spec.expireAfter`: `720h`;
- `spec.disruption`: `{consolidateAfter: 0s}`, `consolidationPolicy: WhenEmptyOrUnderutilized`,
  `budgets: [{nodes: "10%"}]` (and a budget without `nodes` gets `10%`);
- `spec.weight` stays unset (the scheduler treats unset as 0).
Syntax checks that need the whole object (patterns, CEL rules) live in `apis/validation.py`.
Called by `apis/serde.py`; read by the scheduler, disruption controllers and lint rules.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Literal

from pydantic import Field, StrictInt, StrictStr

from gpucap.apis.automode import AUTO_MODE, KWOK
from gpucap.apis.automode import served_by as _served_by
from gpucap.apis.core import Taint
from gpucap.apis.duration import parse_karpenter_duration
from gpucap.apis.goparse import atoi
from gpucap.apis.meta import KarpenterModel, KubeModel, ObjectMeta
from gpucap.apis.quantity import CRDResourceList

__all__ = [
    "Budget",
    "Disruption",
    "NodeClaim",
    "NodeClassReference",
    "NodePool",
    "NodeSelectorRequirementWithMinValues",
]

RequirementOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]

DEFAULT_EXPIRE_AFTER = "720h"
DEFAULT_CONSOLIDATE_AFTER = "0s"
DEFAULT_CONSOLIDATION_POLICY: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
DEFAULT_BUDGET_NODES = "10%"


class NodeSelectorRequirementWithMinValues(KarpenterModel):
    key: StrictStr
    operator: RequirementOperator
    values: list[StrictStr] = Field(default_factory=list)
    min_values: StrictInt | None = None


class NodeClassReference(KarpenterModel):
    group: StrictStr
    kind: StrictStr
    name: StrictStr

    @property
    def is_ec2nodeclass(self) -> bool:
        """The AWS provider's node class, which self-managed Karpenter serves."""
        return self.group == "karpenter.k8s.aws" and self.kind == "EC2NodeClass"

    @property
    def is_auto_mode(self) -> bool:
        """EKS Auto Mode's node class: EKS's managed Karpenter serves the pool, with a device
        plugin on GPU nodes and its own instance selection."""
        return self.served_by == AUTO_MODE

    @property
    def is_kwok(self) -> bool:
        """Karpenter's KWOK provider's node class (fake nodes for tests and benchmarks)."""
        return self.served_by == KWOK

    @property
    def served_by(self) -> str | None:
        """Who serves the pool when self-managed Karpenter's AWS provider does not (EKS Auto
        Mode, the KWOK provider; `apis/automode.py`), else None."""
        return _served_by(self.group, self.kind)


class KarpenterTaint(KarpenterModel):
    key: StrictStr
    value: StrictStr | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    time_added: StrictStr | None = None

    def as_taint(self) -> Taint:
        return Taint(key=self.key, value=self.value, effect=self.effect)


class TemplateMetadata(KarpenterModel):
    labels: dict[str, StrictStr] = Field(default_factory=dict)
    annotations: dict[str, StrictStr] = Field(default_factory=dict)


class NodeClaimTemplateSpec(KarpenterModel):
    requirements: list[NodeSelectorRequirementWithMinValues]
    node_class_ref: NodeClassReference
    taints: list[KarpenterTaint] = Field(default_factory=list)
    startup_taints: list[KarpenterTaint] = Field(default_factory=list)
    expire_after: StrictStr = DEFAULT_EXPIRE_AFTER
    termination_grace_period: StrictStr | None = None

    @property
    def expire_after_seconds(self) -> int | None:
        """Seconds until a NodeClaim expires; None for `Never`."""
        return parse_karpenter_duration(self.expire_after)


class NodeClaimTemplate(KarpenterModel):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)
    spec: NodeClaimTemplateSpec


class Budget(KarpenterModel):
    nodes: StrictStr = DEFAULT_BUDGET_NODES
    schedule: StrictStr | None = None
    duration: StrictStr | None = None
    reasons: list[DisruptionReason] | None = None

    @property
    def readable_nodes(self) -> bool:
        """Whether Karpenter can read `nodes` as a count or a percentage. It tries
        strconv.Atoi, then a percentage (`GetIntStrFromValue`, `GetScaledValueFromIntOrPercent`
        in `pkg/apis/v1/nodepool.go`); a count the CRD pattern `[0-9]+` accepts but that is
        past int64 is neither, and Karpenter then fails closed (no disruption)."""
        if atoi(self.nodes) is not None:
            return True
        return self.nodes.endswith("%") and atoi(self.nodes[:-1]) is not None

    @property
    def allows_no_disruption(self) -> bool:
        """Whether this budget, while active, lets no node be disrupted: a count or percentage
        of 0 (`0`, `00`, `0%`), or a value Karpenter cannot read (it fails closed)."""
        if not self.readable_nodes:
            return True
        return atoi(self.nodes.removesuffix("%")) == 0


def _default_budgets() -> list[Budget]:
    return [Budget(nodes=DEFAULT_BUDGET_NODES)]


class Disruption(KarpenterModel):
    consolidate_after: StrictStr = DEFAULT_CONSOLIDATE_AFTER
    consolidation_policy: ConsolidationPolicy = DEFAULT_CONSOLIDATION_POLICY
    budgets: Annotated[list[Budget], Field(default_factory=_default_budgets)]

    @property
    def consolidate_after_seconds(self) -> int | None:
        """Seconds a node must be consolidatable before acting; None for `Never`. gpucap's one
        reader of consolidateAfter (disruption, the simulator's cadence, lint), parsed once
        per value: the disruption controller asks it of every candidate of every pass."""
        return _consolidate_after_seconds(self.consolidate_after)


@lru_cache(maxsize=256)
def _consolidate_after_seconds(text: str) -> int | None:
    return parse_karpenter_duration(text)


class NodePoolSpec(KarpenterModel):
    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    limits: CRDResourceList | None = None
    weight: StrictInt | None = None
    replicas: StrictInt | None = None


class NodePool(KarpenterModel):
    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodePool"] = "NodePool"
    metadata: ObjectMeta
    spec: NodePoolSpec
    status: dict[str, object] | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def effective_weight(self) -> int:
        """Scheduling weight; an unset weight counts as 0 (`pkg/utils/nodepool/nodepool.go`)."""
        return self.spec.weight or 0

    @property
    def is_static(self) -> bool:
        """A static NodePool (`spec.replicas` set): its NodeClaims are kept at that count by
        the static controller, never provisioned for pods nor consolidated
        (`pkg/utils/nodepool/nodepool.go` `IsStatic`)."""
        return self.spec.replicas is not None


class NodeClaimResources(KarpenterModel):
    requests: CRDResourceList = Field(default_factory=dict)


class NodeClaimSpec(KarpenterModel):
    requirements: list[NodeSelectorRequirementWithMinValues]
    node_class_ref: NodeClassReference
    taints: list[KarpenterTaint] = Field(default_factory=list)
    startup_taints: list[KarpenterTaint] = Field(default_factory=list)
    resources: NodeClaimResources = Field(default_factory=NodeClaimResources)
    expire_after: StrictStr = DEFAULT_EXPIRE_AFTER
    termination_grace_period: StrictStr | None = None


class NodeClaimCondition(KubeModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class NodeClaimStatus(KubeModel):
    node_name: str | None = None
    provider_id: str | None = Field(default=None, alias="providerID")
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: CRDResourceList = Field(default_factory=dict)
    allocatable: CRDResourceList = Field(default_factory=dict)
    conditions: list[NodeClaimCondition] = Field(default_factory=list)
    last_pod_event_time: str | None = None


class NodeClaim(KarpenterModel):
    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodeClaim"] = "NodeClaim"
    metadata: ObjectMeta
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)

    @property
    def name(self) -> str:
        return self.metadata.name
