"""HorizontalPodAutoscaler (`autoscaling/v2`): the object, its API defaults and its validation.

Read from kubernetes/kubernetes `staging/src/k8s.io/api/autoscaling/v2/types.go` (the fields),
`pkg/apis/autoscaling/v2/defaults.go` (the defaults) and
`pkg/apis/autoscaling/validation/validation.go` (what the API server rejects):

- `scaleTargetRef` names the workload whose scale subresource the HPA writes (`kind`, `name`;
  `apiVersion` is optional). gpucap simulates Deployments, StatefulSets, ReplicaSets and
  LeaderWorkerSets as targets (`sim/metrics.py` says so for any other kind).
- `minReplicas` defaults to 1, `maxReplicas` is required and at least `minReplicas`.
- `metrics`: each entry has a `type` and the one matching source. `External` (a metric from
  outside the cluster, e.g. a queue's request rate: `Value` or `AverageValue` target) and `Pods`
  (a per-pod metric averaged over the pods: `AverageValue`) are what gpucap simulates, fed by a
  scenario's metric trace; `Resource`, `ContainerResource` (CPU/memory) and `Object` are read
  and validated but not simulated.
- `behavior`: `scaleUp`/`scaleDown` rules, each a stabilization window, a `selectPolicy`
  (`Max`, `Min`, `Disabled`) and `Pods`/`Percent` policies over `periodSeconds`. The API server
  fills what is left out (`default_behavior`): scale-up with no window and the larger of +100 %
  and +4 pods per 15 s; scale-down with a 300 s window and -100 % per 15 s.

`hpa_violations` is the API server's validation as gpucap's rules (`apis/validation.py` runs it
for every loaded object). Called by `apis/serde.py` (the kind), the simulator's metric loader
(`sim/metrics.py`) and the HPA controller (`controllers/podautoscaler/`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr

from gpucap.apis.meta import KarpenterModel, LabelSelector, NamespacedObjectMeta
from gpucap.apis.quantity import Quantity
from gpucap.apis.violation import Found, Violation

__all__ = [
    "DEFAULT_SCALE_DOWN",
    "DEFAULT_SCALE_UP",
    "SIMULATED_METRIC_TYPES",
    "HPAScalingPolicy",
    "HPAScalingRules",
    "HorizontalPodAutoscaler",
    "MetricSpec",
    "default_behavior",
    "describe_hpa",
    "hpa_violations",
]

Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]

# The metric types gpucap's HPA reads from a scenario's trace; the others are not simulated.
SIMULATED_METRIC_TYPES = ("External", "Pods")
# validation.go: a policy's period is at most 30 minutes, a stabilization window at most 1 hour.
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_SECONDS = 3600


class CrossVersionObjectReference(KarpenterModel):
    kind: StrictStr = ""
    name: StrictStr = ""
    api_version: StrictStr | None = None


class MetricIdentifier(KarpenterModel):
    name: StrictStr = ""
    selector: LabelSelector | None = None


class MetricTarget(KarpenterModel):
    type: Literal["Utilization", "Value", "AverageValue"]
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: Int32 | None = None


class ExternalMetricSource(KarpenterModel):
    metric: MetricIdentifier
    target: MetricTarget


class PodsMetricSource(KarpenterModel):
    metric: MetricIdentifier
    target: MetricTarget


class ObjectMetricSource(KarpenterModel):
    described_object: CrossVersionObjectReference
    metric: MetricIdentifier
    target: MetricTarget


class ResourceMetricSource(KarpenterModel):
    name: StrictStr
    target: MetricTarget


class ContainerResourceMetricSource(KarpenterModel):
    name: StrictStr
    container: StrictStr
    target: MetricTarget


class MetricSpec(KarpenterModel):
    type: Literal["Object", "Pods", "Resource", "ContainerResource", "External"]
    object: ObjectMetricSource | None = None
    pods: PodsMetricSource | None = None
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    external: ExternalMetricSource | None = None

    @property
    def source(self) -> KarpenterModel | None:
        """The source its `type` names (None when that field is missing)."""
        field = {"ContainerResource": "container_resource"}.get(self.type, self.type.lower())
        value: KarpenterModel | None = getattr(self, field)
        return value

    @property
    def metric_name(self) -> str:
        """The metric's name: the identifier's, or the resource's for Resource metrics."""
        src = self.source
        if isinstance(src, ExternalMetricSource | PodsMetricSource | ObjectMetricSource):
            return src.metric.name
        if isinstance(src, ResourceMetricSource | ContainerResourceMetricSource):
            return src.name
        return ""

    @property
    def target(self) -> MetricTarget | None:
        src = self.source
        target: MetricTarget | None = getattr(src, "target", None)
        return target


class HPAScalingPolicy(KarpenterModel):
    type: Literal["Pods", "Percent"]
    value: Int32
    period_seconds: Int32


class HPAScalingRules(KarpenterModel):
    stabilization_window_seconds: Int32 | None = None
    select_policy: Literal["Max", "Min", "Disabled"] | None = None
    policies: list[HPAScalingPolicy] | None = None
    # Kubernetes 1.33 alpha (HPAConfigurableTolerance): read, not simulated (10 % is used).
    tolerance: Quantity | None = None


class HorizontalPodAutoscalerBehavior(KarpenterModel):
    scale_up: HPAScalingRules | None = None
    scale_down: HPAScalingRules | None = None


class HorizontalPodAutoscalerSpec(KarpenterModel):
    scale_target_ref: CrossVersionObjectReference
    max_replicas: Int32
    min_replicas: Int32 | None = None
    metrics: list[MetricSpec] = Field(default_factory=list)
    behavior: HorizontalPodAutoscalerBehavior | None = None


class HorizontalPodAutoscaler(KarpenterModel):
    api_version: Literal["autoscaling/v2"] = "autoscaling/v2"
    kind: Literal["HorizontalPodAutoscaler"] = "HorizontalPodAutoscaler"
    metadata: NamespacedObjectMeta
    spec: HorizontalPodAutoscalerSpec
    # Written by the controller, ignored on create (as for every kind gpucap reads).
    status: dict[str, Any] | None = None

    @property
    def min_replicas(self) -> int:
        """`spec.minReplicas`, 1 when left out (defaults.go)."""
        m = self.spec.min_replicas
        return 1 if m is None else m


# defaults.go: what the API server writes for a missing scaleUp / scaleDown.
DEFAULT_SCALE_UP = HPAScalingRules(
    stabilization_window_seconds=0,
    select_policy="Max",
    policies=[
        HPAScalingPolicy(type="Pods", value=4, period_seconds=15),
        HPAScalingPolicy(type="Percent", value=100, period_seconds=15),
    ],
)
DEFAULT_SCALE_DOWN = HPAScalingRules(
    # The API leaves it unset; the controller then uses its
    # --horizontal-pod-autoscaler-downscale-stabilization flag, 5 minutes by default.
    stabilization_window_seconds=300,
    select_policy="Max",
    policies=[HPAScalingPolicy(type="Percent", value=100, period_seconds=15)],
)


def _filled(given: HPAScalingRules | None, default: HPAScalingRules) -> HPAScalingRules:
    """One direction's rules with every field left out taken from `default` (defaults.go
    fills them one by one: a scaleUp with only a window keeps the default policies)."""
    if given is None:
        return default
    return HPAScalingRules(
        stabilization_window_seconds=(
            default.stabilization_window_seconds
            if given.stabilization_window_seconds is None
            else given.stabilization_window_seconds
        ),
        select_policy=given.select_policy or default.select_policy,
        policies=default.policies if given.policies is None else given.policies,
        tolerance=given.tolerance,
    )


def default_behavior(hpa: HorizontalPodAutoscaler) -> tuple[HPAScalingRules, HPAScalingRules]:
    """(scaleUp, scaleDown) as the API server stores them, every field set."""
    b = hpa.spec.behavior
    return (
        _filled(b.scale_up if b else None, DEFAULT_SCALE_UP),
        _filled(b.scale_down if b else None, DEFAULT_SCALE_DOWN),
    )


# ---- validation (validation.go ValidateHorizontalPodAutoscaler) ---------------------------------
_TARGETS: dict[str, tuple[str, ...]] = {
    # Which target types each source takes (validateMetricTarget's callers).
    "External": ("Value", "AverageValue"),
    "Pods": ("AverageValue",),
    "Object": ("Value", "AverageValue"),
    "Resource": ("Utilization", "AverageValue"),
    "ContainerResource": ("Utilization", "AverageValue"),
}
_SOURCE_FIELD = {
    "External": "external",
    "Pods": "pods",
    "Object": "object",
    "Resource": "resource",
    "ContainerResource": "containerResource",
}


def hpa_violations(hpa: HorizontalPodAutoscaler) -> Found:
    """What the API server rejects in an HPA, each at its field."""
    spec = hpa.spec
    ref = spec.scale_target_ref
    for name, value in (("kind", ref.kind), ("name", ref.name)):
        if not value:
            yield Violation(("spec", "scaleTargetRef", name), "Required value")
    if spec.min_replicas is not None and spec.min_replicas < 1:
        yield Violation(
            ("spec", "minReplicas"),
            f"{spec.min_replicas} must be greater than or equal to 1",
        )
    if spec.max_replicas < 1:
        yield Violation(("spec", "maxReplicas"), f"{spec.max_replicas} must be greater than 0")
    elif spec.max_replicas < hpa.min_replicas:
        yield Violation(
            ("spec", "maxReplicas"),
            f"{spec.max_replicas} must be greater than or equal to minReplicas "
            f"({hpa.min_replicas})",
        )
    for i, metric in enumerate(spec.metrics):
        yield from _metric(metric, ("spec", "metrics", i))
    if spec.behavior is not None:
        for direction, rules in (
            ("scaleUp", spec.behavior.scale_up),
            ("scaleDown", spec.behavior.scale_down),
        ):
            if rules is not None:
                yield from _rules(rules, ("spec", "behavior", direction))


def _metric(metric: MetricSpec, at: tuple[str | int, ...]) -> Found:
    present = [
        f
        for t, f in _SOURCE_FIELD.items()
        if getattr(metric, {"containerResource": "container_resource"}.get(f, f)) is not None
        and t != metric.type
    ]
    for f in present:
        yield Violation((*at, f), f"must be omitted for a metric source of type {metric.type}")
    target = metric.target
    if metric.source is None or target is None:
        yield Violation(
            (*at, _SOURCE_FIELD[metric.type]), "must be populated for type " + metric.type
        )
        return
    field = _SOURCE_FIELD[metric.type]
    if metric.metric_name == "":
        name_at = "name" if metric.type in ("Resource", "ContainerResource") else "metric"
        yield Violation((*at, field, name_at), "must specify a metric name")
    if target.type not in _TARGETS[metric.type]:
        allowed = " or ".join(_TARGETS[metric.type])
        yield Violation(
            (*at, field, "target", "type"),
            f"{target.type!r} is not a target type for {metric.type} metrics (use {allowed})",
        )
        return
    needed = {"Value": "value", "AverageValue": "averageValue"}.get(target.type)
    got = {"value": target.value, "averageValue": target.average_value}
    if needed is not None:
        q = got[needed]
        if q is None:
            yield Violation(
                (*at, field, "target", needed), f"must be set for a {target.type} target"
            )
        elif q.nanos <= 0:
            yield Violation((*at, field, "target", needed), f"{q} must be positive")
    elif target.average_utilization is None:
        yield Violation(
            (*at, field, "target", "averageUtilization"), "must be set for a Utilization target"
        )
    elif target.average_utilization <= 0:
        yield Violation(
            (*at, field, "target", "averageUtilization"),
            f"{target.average_utilization} must be greater than 0",
        )


def _rules(rules: HPAScalingRules, at: tuple[str | int, ...]) -> Found:
    window = rules.stabilization_window_seconds
    if window is not None and not 0 <= window <= MAX_STABILIZATION_SECONDS:
        yield Violation(
            (*at, "stabilizationWindowSeconds"),
            f"{window} must be between 0 and {MAX_STABILIZATION_SECONDS}",
        )
    if rules.policies is not None and not rules.policies and rules.select_policy != "Disabled":
        yield Violation((*at, "policies"), "must specify at least one Policy")
    for i, p in enumerate(rules.policies or ()):
        if not 0 < p.period_seconds <= MAX_PERIOD_SECONDS:
            yield Violation(
                (*at, "policies", i, "periodSeconds"),
                f"{p.period_seconds} must be greater than 0 and at most {MAX_PERIOD_SECONDS}",
            )
        if p.value <= 0:
            yield Violation((*at, "policies", i, "value"), f"{p.value} must be greater than 0")


def describe_hpa(hpa: HorizontalPodAutoscaler) -> str:
    """One line for `validate`: the target, the replica range and the metrics."""
    ref = hpa.spec.scale_target_ref
    metrics = ", ".join(
        f"{m.type} {m.metric_name or '?'}"
        + ("" if m.type in SIMULATED_METRIC_TYPES else " (not simulated)")
        for m in hpa.spec.metrics
    )
    return (
        f"scales {ref.kind}/{ref.name} between {hpa.min_replicas} and {hpa.spec.max_replicas} "
        f"replicas on {metrics or 'no metrics'}"
    )
