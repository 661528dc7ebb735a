"""The replicas one metric asks for: kubernetes/kubernetes
`pkg/controller/podautoscaler/replica_calculator.go` (`ReplicaCalculator`), for the metric
types gpucap simulates (External with a Value or AverageValue target, Pods with an AverageValue
target), described here in gpucap's words:

- The usage ratio is the metric over its target. Within the tolerance (|1 - ratio| <= 0.1, the
  controller's `--horizontal-pod-autoscaler-tolerance` default) the current replica count stands.
- External, Value target: the ratio is the metric's total over the target; the proposal is the
  ratio times the Ready pods (Running and Ready), rounded up (`GetExternalMetricReplicas`); from
  0 replicas it is the ratio rounded up.
- External, AverageValue target: the ratio is the total over (target x the replicas the HPA last
  saw); outside the tolerance the proposal is total / target rounded up, whatever the pods
  (`GetExternalPerPodMetricReplicas`).
- Pods, AverageValue target (`calcPlainMetricReplicas`): every pod that reports the metric is a
  sample; pods still Pending are "ignored" and Running pods with no sample are "missing". With
  neither, the proposal is the mean over the target times the samples, rounded up. Otherwise the
  ratio is computed again with the missing pods counted at the target (on a scale-down) or at 0
  (on a scale-up) and, on a scale-up, the ignored ones at 0; when that ratio is within the
  tolerance or points the other way, the count stands, else it is the new ratio times all those
  pods, rounded up. No samples at all is an error: the HPA cannot compute (`None` here).

Values are milli-units as floats (Kubernetes keeps them as int64 milli-values; the simulator's
metric is a trace's number, not a quantity). Called by the simulator's HPA actor
(`sim/metrics.py`) through `horizontal.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "TOLERANCE",
    "PodCounts",
    "external_per_pod_replicas",
    "external_replicas",
    "pods_replicas",
]

# kube-controller-manager --horizontal-pod-autoscaler-tolerance (default 0.1).
TOLERANCE = 0.1


@dataclass(frozen=True, slots=True)
class PodCounts:
    """The target's pods as `groupPods` sorts them: `ready` report the metric, `missing` are
    Running without a sample (not Ready yet), `ignored` are Pending (not running yet)."""

    ready: int
    missing: int = 0
    ignored: int = 0


def _within_tolerance(ratio: float) -> bool:
    return abs(1.0 - ratio) <= TOLERANCE


def external_replicas(current: int, ready: int, total: float, target: float) -> int:
    """External metric with a `Value` target (`GetExternalMetricReplicas`)."""
    ratio = total / target
    if current == 0:
        return math.ceil(ratio)
    if _within_tolerance(ratio):
        return current
    return math.ceil(ratio * ready)


def external_per_pod_replicas(status_replicas: int, total: float, target: float) -> int:
    """External metric with an `AverageValue` target (`GetExternalPerPodMetricReplicas`):
    `status_replicas` is the replica count the HPA last observed."""
    if status_replicas == 0:  # Kubernetes would divide by zero; the proposal is the same
        return math.ceil(total / target)
    ratio = total / (target * status_replicas)
    if _within_tolerance(ratio):
        return status_replicas
    return math.ceil(total / target)


def pods_replicas(current: int, pods: PodCounts, per_pod: float, target: float) -> int | None:
    """Pods metric with an `AverageValue` target when every Ready pod reports `per_pod`
    (`calcPlainMetricReplicas`). None: no pod reports the metric (the HPA cannot compute)."""
    if pods.ready == 0:
        return None
    ratio = per_pod / target
    rebalance = pods.ignored > 0 and ratio > 1.0
    if not rebalance and pods.missing == 0:
        if _within_tolerance(ratio):
            return current
        return math.ceil(ratio * pods.ready)
    total, samples = per_pod * pods.ready, pods.ready
    if pods.missing:
        # Missing pods count at the target on a way down, at 0 on a way up.
        total += pods.missing * (target if ratio < 1.0 else 0.0)
        samples += pods.missing
    if rebalance:
        samples += pods.ignored  # Pending pods count at 0 on a way up
    new_ratio = total / samples / target
    if _within_tolerance(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    return math.ceil(new_ratio * samples)
