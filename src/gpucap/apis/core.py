"""Core Kubernetes kinds gpucap reads: Pod (and the pod template of workloads), Node, ConfigMap,
PodDisruptionBudget, and their scheduling vocabulary (taints, tolerations, affinity, topology
spread, resource requirements).

Only the fields that decide scheduling, capacity or disruption are typed; the rest are kept as
they came (`KubeModel` allows extra fields) so `validate -o json` round-trips a manifest.
API-server defaulting that matters to scheduling is applied here: a container's missing requests
default to its limits, a toleration's empty operator means `Equal`, a pod's namespace is
`default`. Called by `apis/serde.py` (loading) and every layer above.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, model_validator

from gpucap.apis.meta import IntOrString, KubeModel, LabelSelector, NamespacedObjectMeta, ObjectMeta
from gpucap.apis.quantity import Quantity

__all__ = [
    "Affinity",
    "ConfigMap",
    "Container",
    "Node",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Pod",
    "PodAffinityTerm",
    "PodDisruptionBudget",
    "PodSpec",
    "PodTemplateSpec",
    "PreferredSchedulingTerm",
    "ResourceList",
    "ResourceRequirements",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
]

ResourceList = dict[str, Quantity]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class Taint(KubeModel):
    key: str
    value: str | None = None
    effect: TaintEffect
    time_added: str | None = None


class Toleration(KubeModel):
    key: str | None = None
    # The API server leaves it empty; empty means Equal (core/v1 types.go).
    # Lt/Gt compare integer values (Kubernetes 1.35 TaintTolerationComparisonOperators; Karpenter
    # enables them when it checks tolerations).
    operator: Literal["Exists", "Equal", "Lt", "Gt", ""] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    toleration_seconds: StrictInt | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes `Toleration.ToleratesTaint` (empty key+Exists matches every taint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Lt", "Gt"):
            try:
                taint_value, bound = int(taint.value or ""), int(self.value or "")
            except ValueError:
                return False
            return taint_value < bound if self.operator == "Lt" else taint_value > bound
        return (self.value or "") == (taint.value or "")


class NodeSelectorRequirement(KubeModel):
    key: str
    operator: NodeSelectorOperator
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(KubeModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(KubeModel):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(KubeModel):
    weight: Annotated[StrictInt, Field(ge=1, le=100)]
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(KubeModel):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    topology_key: str
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(KubeModel):
    weight: Annotated[StrictInt, Field(ge=1, le=100)]
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(KubeModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(KubeModel):
    max_skew: Annotated[StrictInt, Field(ge=1)]
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: Annotated[StrictInt, Field(ge=1)] | None = None
    # Kubernetes defaults: nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore.
    node_affinity_policy: Literal["Honor", "Ignore"] = "Honor"
    node_taints_policy: Literal["Honor", "Ignore"] = "Ignore"
    match_label_keys: list[str] = Field(default_factory=list)


class ResourceRequirements(KubeModel):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _default_requests_from_limits(cls, data: Any) -> Any:
        # API-server defaulting (core/v1 defaults.go SetDefaults_ResourceRequirements... via
        # SetDefaults_Container): a resource with a limit and no request gets request = limit.
        if isinstance(data, dict) and isinstance(data.get("limits"), dict):
            requests = data.get("requests")
            if requests is None:
                requests = {}
            if isinstance(requests, dict):
                merged = dict(data["limits"])
                merged.update(requests)
                data = {**data, "requests": merged}
        return data


class ContainerPort(KubeModel):
    container_port: StrictInt
    host_port: StrictInt | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"
    host_ip: str | None = Field(default=None, alias="hostIP")


class Container(KubeModel):
    name: str
    image: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = Field(default_factory=list)
    # `Always` on an init container makes it a sidecar (restartable init container).
    restart_policy: str | None = None


class PodSpec(KubeModel):
    containers: list[Container]
    init_containers: list[Container] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    node_name: str | None = None
    priority_class_name: str | None = None
    priority: StrictInt | None = None
    overhead: ResourceList = Field(default_factory=dict)
    resources: ResourceRequirements | None = None
    scheduler_name: str | None = None
    runtime_class_name: str | None = None
    termination_grace_period_seconds: StrictInt | None = None
    resource_claims: list[dict[str, Any]] = Field(default_factory=list)
    volumes: list[dict[str, Any]] = Field(default_factory=list)


class PodCondition(KubeModel):
    type: str
    status: str
    reason: str | None = None


class PodStatus(KubeModel):
    phase: str | None = None
    conditions: list[PodCondition] = Field(default_factory=list)
    nominated_node_name: str | None = None
    start_time: str | None = None


# The status of a pod that has none (most manifests): one shared instance, as models are
# frozen, instead of validating an empty PodStatus for every pod.
_NO_STATUS = PodStatus()


class PodTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec


class Pod(KubeModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Pod"] = "Pod"
    metadata: NamespacedObjectMeta
    spec: PodSpec
    status: PodStatus = Field(default_factory=lambda: _NO_STATUS)

    @property
    def key(self) -> str:
        """`namespace/name`, how gpucap names pods in every output."""
        return f"{self.metadata.namespace}/{self.metadata.name}"


class NodeSpec(KubeModel):
    provider_id: str | None = Field(default=None, alias="providerID")
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)


class NodeCondition(KubeModel):
    type: str
    status: str


class NodeStatus(KubeModel):
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)


class Node(KubeModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Node"] = "Node"
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def is_ready(self) -> bool:
        """Whether the kubelet reports the Node Ready (its `Ready` condition is `True`); read
        by the NodeClaim lifecycle, termination, garbage collection, budgets and the
        simulator's kube-scheduler."""
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)


class ConfigMap(KubeModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["ConfigMap"] = "ConfigMap"
    metadata: NamespacedObjectMeta
    data: dict[str, str] = Field(default_factory=dict)


class PodDisruptionBudgetSpec(KubeModel):
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None


class PodDisruptionBudgetStatus(KubeModel):
    disruptions_allowed: StrictInt | None = None
    current_healthy: StrictInt | None = None
    desired_healthy: StrictInt | None = None
    expected_pods: StrictInt | None = None


class PodDisruptionBudget(KubeModel):
    api_version: Literal["policy/v1"] = "policy/v1"
    kind: Literal["PodDisruptionBudget"] = "PodDisruptionBudget"
    metadata: NamespacedObjectMeta
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)
