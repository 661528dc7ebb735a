"""The HorizontalPodAutoscaler controller's decision for one HPA: kubernetes/kubernetes
`pkg/controller/podautoscaler/horizontal.go` (`reconcileAutoscaler`,
`computeReplicasForMetrics`, `normalizeDesiredReplicasWithBehaviors`,
`stabilizeRecommendationWithBehaviors`, `convertDesiredReplicasWithBehaviorRate`,
`calculateScaleUpLimitWithScalingRules`, `calculateScaleDownLimitWithBehaviors`,
`getReplicasChangePerPeriod`, `storeScaleEvent`), in gpucap's words:

1. The current count is the target's `spec.replicas`. At 0 (with minReplicas above 0) the HPA
   is switched off and changes nothing. Above `maxReplicas` it goes to the maximum, below
   `minReplicas` to the minimum, at once (no window, no rate limit).
2. Otherwise each metric proposes a count (`replica_calculator.py`) and the largest wins. A
   metric that cannot be computed is invalid: if all are, nothing changes; if some are and the
   valid ones would scale down, nothing changes either (a missing metric must not shrink the
   workload).
3. Stabilization: the proposal is kept in a list of timestamped recommendations. The result is
   the current count brought up to the lowest recommendation of the scale-up window (the
   proposal included) and down to the highest of the scale-down window: with the default 300 s
   scale-down window, the workload shrinks only to the largest count asked for in the last five
   minutes. The proposal then replaces a sample older than both windows, or is appended.
4. Rate: going up, each policy allows the count at the start of its period (now minus what was
   added, plus what was removed, in the last `periodSeconds`) plus `value` pods or plus `value`
   percent (rounded up); `selectPolicy: Max` takes the most permissive policy, `Min` the least,
   `Disabled` forbids the direction. Going down, the same with minus pods or minus percent
   (rounded down). The limit never reverses the direction and is itself clamped by
   `maxReplicas` / `minReplicas`.
5. A change is remembered as a scale-up or scale-down event (its size and time) for the
   policies' periods.

An HPA written without `behavior` takes Kubernetes' older path instead of 3-4
(`normalizeDesiredReplicas`, `stabilizeRecommendation`, `convertDesiredReplicasWithRules`,
`calculateScaleUpLimit`): the API server leaves `behavior` unset, so the controller stabilizes
down only (the highest recommendation of the last 300 s, its
`--horizontal-pod-autoscaler-downscale-stabilization` default) and limits a scale-up to twice the
current count or 4, whichever is more, per sync (with the default policies it would be the
current count plus the larger of 4 and 100 % per 15 s: one more replica from 1, say).

The controller syncs every HPA every 15 s (`--horizontal-pod-autoscaler-sync-period`).
Times are seconds on the simulator's clock. Called by the simulator's HPA actor
(`sim/metrics.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpucap.apis.horizontalpodautoscaler import (
    HorizontalPodAutoscaler,
    HPAScalingRules,
    default_behavior,
)

__all__ = ["SYNC_PERIOD_SECONDS", "Decision", "HorizontalController"]

# kube-controller-manager --horizontal-pod-autoscaler-sync-period (default 15 s).
SYNC_PERIOD_SECONDS = 15.0
# kube-controller-manager's --horizontal-pod-autoscaler-downscale-stabilization default (5m,
# `pkg/controller/podautoscaler/config/v1alpha1/defaults.go`): the window of an HPA without
# `behavior`.
LEGACY_DOWNSCALE_WINDOW = 300.0


@dataclass(frozen=True, slots=True)
class Decision:
    """What one sync decided: `desired` (equal to `current`: no change) and why."""

    current: int
    desired: int
    reason: str

    @property
    def rescale(self) -> bool:
        return self.desired != self.current


@dataclass(slots=True)
class HorizontalController:
    """One HPA's controller state: its recommendations and scale events, as the Kubernetes
    controller keeps them per HPA key."""

    min_replicas: int
    max_replicas: int
    scale_up: HPAScalingRules
    scale_down: HPAScalingRules
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    # No `behavior` in the HPA: Kubernetes' normalizeDesiredReplicas path (module docstring).
    legacy: bool = False
    up_events: list[tuple[float, int]] = field(default_factory=list)
    down_events: list[tuple[float, int]] = field(default_factory=list)

    @classmethod
    def of(cls, hpa: HorizontalPodAutoscaler) -> HorizontalController:
        up, down = default_behavior(hpa)
        legacy = hpa.spec.behavior is None
        return cls(hpa.min_replicas, hpa.spec.max_replicas, up, down, legacy=legacy)

    # -- reconcileAutoscaler
    def sync(self, now: float, current: int, proposals: Sequence[int | None]) -> Decision:
        """One sync at `now` with the target at `current` replicas and each metric's proposal
        (None: that metric could not be computed)."""
        if current == 0 and self.min_replicas != 0:
            return Decision(current, current, "scaling is disabled since the replica count is 0")
        if current > self.max_replicas:
            return self._done(now, current, self.max_replicas, "above maxReplicas")
        if current < self.min_replicas:
            return self._done(now, current, self.min_replicas, "below minReplicas")
        valid = [p for p in proposals if p is not None]
        if not valid:
            return Decision(current, current, "no metric could be computed")
        proposal = max(valid)
        if len(valid) < len(proposals) and proposal < current:
            return Decision(current, current, "a metric is missing: no scale-down")
        if self.legacy:
            desired, why = self._legacy(now, current, proposal)
            return self._done(now, current, desired, why)
        stabilized = self._stabilize(now, current, proposal)
        desired, why = self._rate(now, current, stabilized)
        return self._done(now, current, desired, why)

    # -- normalizeDesiredReplicas: stabilizeRecommendation, then convertDesiredReplicasWithRules
    def _legacy(self, now: float, current: int, proposal: int) -> tuple[int, str]:
        cutoff = now - LEGACY_DOWNSCALE_WINDOW
        stabilized = proposal
        old: int | None = None
        for i, (t, rec) in enumerate(self.recommendations):
            if t < cutoff:  # Go: timestamp.Before(cutoff); a sample at the cutoff still counts
                old = i
            else:
                stabilized = max(stabilized, rec)
        if old is not None:
            self.recommendations[old] = (now, proposal)
        else:
            self.recommendations.append((now, proposal))
        limit = max(2 * current, 4)
        maximum, over = (
            (limit, "ScaleUpLimit")
            if self.max_replicas > limit
            else (self.max_replicas, "TooManyReplicas")
        )
        if stabilized < self.min_replicas:
            return self.min_replicas, "TooFewReplicas"
        if stabilized > maximum:
            return maximum, over
        return stabilized, "Desired"

    def _done(self, now: float, current: int, desired: int, why: str) -> Decision:
        if desired > current:
            self.up_events.append((now, desired - current))
        elif desired < current:
            self.down_events.append((now, current - desired))
        return Decision(current, desired, why)

    # -- stabilizeRecommendationWithBehaviors
    def _stabilize(self, now: float, current: int, desired: int) -> int:
        up_cutoff = now - (self.scale_up.stabilization_window_seconds or 0)
        down_cutoff = now - (self.scale_down.stabilization_window_seconds or 0)
        up, down = desired, desired
        old: int | None = None
        for i, (t, rec) in enumerate(self.recommendations):
            if t > up_cutoff:
                up = min(up, rec)
            if t > down_cutoff:
                down = max(down, rec)
            if t < up_cutoff and t < down_cutoff:
                old = i
        if old is not None:
            self.recommendations[old] = (now, desired)
        else:
            self.recommendations.append((now, desired))
        return min(max(current, up), down)

    # -- convertDesiredReplicasWithBehaviorRate
    def _rate(self, now: float, current: int, desired: int) -> tuple[int, str]:
        if desired > current:
            limit = max(self._up_limit(now, current), current)
            if self.max_replicas > limit:
                return min(desired, limit), "ScaleUpLimit" if desired > limit else "Desired"
            return min(desired, self.max_replicas), (
                "TooManyReplicas" if desired > self.max_replicas else "Desired"
            )
        if desired < current:
            limit = min(self._down_limit(now, current), current)
            if self.min_replicas < limit:
                return max(desired, limit), "ScaleDownLimit" if desired < limit else "Desired"
            return max(desired, self.min_replicas), (
                "TooFewReplicas" if desired < self.min_replicas else "Desired"
            )
        return desired, "Desired"

    def _period_start(self, now: float, current: int, period: int) -> int:
        added = _changed_within(self.up_events, now, period)
        removed = _changed_within(self.down_events, now, period)
        return current - added + removed

    def _up_limit(self, now: float, current: int) -> int:
        rules = self.scale_up
        if rules.select_policy == "Disabled":
            return current
        proposals = []
        for p in rules.policies or ():
            start = self._period_start(now, current, p.period_seconds)
            if p.type == "Pods":
                proposals.append(start + p.value)
            else:  # rounded up, or a small workload could never grow
                proposals.append(math.ceil(start * (1 + p.value / 100)))
        if not proposals:
            return current
        return min(proposals) if rules.select_policy == "Min" else max(proposals)

    def _down_limit(self, now: float, current: int) -> int:
        rules = self.scale_down
        if rules.select_policy == "Disabled":
            return current
        proposals = []
        for p in rules.policies or ():
            start = self._period_start(now, current, p.period_seconds)
            if p.type == "Pods":
                proposals.append(start - p.value)
            else:  # truncated toward zero, as Go's int32 conversion does
                proposals.append(int(start * (1 - p.value / 100)))
        if not proposals:
            return current
        # Min picks the smallest change: the highest floor.
        return max(proposals) if rules.select_policy == "Min" else min(proposals)


def _changed_within(events: list[tuple[float, int]], now: float, period: int) -> int:
    """Replicas added (or removed) by the events of the last `period` seconds."""
    cutoff = now - period
    return sum(n for t, n in events if t > cutoff)
