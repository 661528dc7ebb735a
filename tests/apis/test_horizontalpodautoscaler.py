"""The autoscaling/v2 HorizontalPodAutoscaler as the API server reads it: defaults and the
validation rules (kubernetes/kubernetes `pkg/apis/autoscaling/v2/defaults.go`,
`pkg/apis/autoscaling/validation/validation.go`)."""

from __future__ import annotations

import json
from typing import Any

from gpucap.apis.horizontalpodautoscaler import HorizontalPodAutoscaler, default_behavior
from gpucap.apis.serde import LoadResult, load_text


def hpa(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
        "maxReplicas": 8,
        "metrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "rps"},
                    "target": {"type": "AverageValue", "averageValue": "80"},
                },
            }
        ],
    }
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "vllm"},
        "spec": base | spec,
    }


def load(doc: dict[str, Any]) -> LoadResult:
    return load_text(json.dumps(doc), "hpa.yaml")


def errors(doc: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, i.path))}: {i.message}" for i in load(doc).errors]


def test_min_replicas_defaults_to_one() -> None:
    (m,) = load(hpa()).manifests
    assert isinstance(m.obj, HorizontalPodAutoscaler)
    assert m.obj.min_replicas == 1


def test_missing_behavior_is_the_api_servers_default() -> None:
    (m,) = load(hpa()).manifests
    up, down = default_behavior(m.obj)  # type: ignore[arg-type]
    assert up.stabilization_window_seconds == 0
    assert [(p.type, p.value, p.period_seconds) for p in up.policies or ()] == [
        ("Pods", 4, 15),
        ("Percent", 100, 15),
    ]
    assert down.stabilization_window_seconds == 300
    assert [(p.type, p.value, p.period_seconds) for p in down.policies or ()] == [
        ("Percent", 100, 15)
    ]


def test_a_scale_down_with_only_a_window_keeps_the_default_policies() -> None:
    doc = hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    (m,) = load(doc).manifests
    _, down = default_behavior(m.obj)  # type: ignore[arg-type]
    assert down.stabilization_window_seconds == 60
    assert down.select_policy == "Max"
    assert [p.type for p in down.policies or ()] == ["Percent"]


def test_max_replicas_below_min_replicas_is_an_error() -> None:
    assert errors(hpa(minReplicas=5, maxReplicas=3)) == [
        "spec.maxReplicas: 3 must be greater than or equal to minReplicas (5)"
    ]


def test_a_pods_metric_takes_only_an_average_value_target() -> None:
    metrics = [{"type": "Pods", "pods": {"metric": {"name": "x"}, "target": {"type": "Value"}}}]
    assert errors(hpa(metrics=metrics)) == [
        "spec.metrics.0.pods.target.type: 'Value' is not a target type for Pods metrics "
        "(use AverageValue)"
    ]


def test_a_value_target_needs_its_value() -> None:
    metrics = [
        {"type": "External", "external": {"metric": {"name": "x"}, "target": {"type": "Value"}}}
    ]
    assert errors(hpa(metrics=metrics)) == [
        "spec.metrics.0.external.target.value: must be set for a Value target"
    ]


def test_a_policy_period_is_at_most_thirty_minutes() -> None:
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}
    assert errors(hpa(behavior=behavior)) == [
        "spec.behavior.scaleUp.policies.0.periodSeconds: 1801 must be greater than 0 and at "
        "most 1800"
    ]


def test_an_unknown_field_is_an_error() -> None:
    assert [i.message for i in load(hpa(maxReplica=3)).errors] != []


def test_an_autoscaling_v1_hpa_is_still_an_ignored_kind() -> None:
    doc = hpa() | {"apiVersion": "autoscaling/v1"}
    result = load(doc)
    assert result.errors == []
    assert result.manifests == []
    assert [w.rule for w in result.warnings] == ["IGNORED"]
