"""The HorizontalPodAutoscaler controller on the simulator's clock, fed by metric traces.

Every 15 s (the controller's sync period) each HPA the cluster holds is synced as
kube-controller-manager syncs it (`controllers/podautoscaler/horizontal.py`): the target's
`spec.replicas` is the current count; each External/Pods metric with a trace
(`sim/metrics.py`) proposes a count (`replica_calculator.py`); the decision goes through
stabilization and the behavior's rates; a change is written the way a scenario's `scale` event
writes it (`World.scale`, so the workload controller makes or deletes its pods), with a
`HorizontalPodAutoscalerScaled` event the timeline tells ("HPA vllm: 3 -> 5 replicas
(requests_per_second 412 / target 80)").

What a metric reads (the trace gives the workload's total at `t`, step-interpolated):
- External, Value target: the total against the target, times the Ready pods;
- External, AverageValue target: the total over the target, whatever the pods;
- Pods, AverageValue: each Ready pod reports the total divided over the Ready pods (the load is
  spread over the replicas that serve); pods bound but not Ready yet have no sample
  ("missing"), pods not bound yet are "ignored" (Kubernetes' `groupPods`). With no Ready pod
  the metric cannot be computed and the HPA holds.
A target's pods are `<name>-<i>` for i below its replicas (a LeaderWorkerSet's leaders: its
scale subresource selects them).

Serving: for each HPA's target the actor also emits `ServingReplicas` (requested: the target's
`spec.replicas`; ready: how many of those pods are Ready) whenever either changes, read from the
cluster's change feed; the summary turns them into replica-seconds requested, Ready and lost
(`sim/summary.py`). None of this runs, and no event is emitted, in a scenario without an HPA.

What differs from a cluster: metrics are read at the sync instant with no metrics-server or
adapter delay; Resource/ContainerResource/Object metrics are not simulated (the HPA ignores
them); the tolerance is the controller default 10 % (a `tolerance` field is read, not used).
Wired by `sim/world.py`; talks to the world only through the `scale` callback it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpucap.apis.horizontalpodautoscaler import (
    SIMULATED_METRIC_TYPES,
    HorizontalPodAutoscaler,
    MetricSpec,
)
from gpucap.apis.serde import Manifest
from gpucap.controllers.podautoscaler.horizontal import (
    SYNC_PERIOD_SECONDS,
    HorizontalController,
)
from gpucap.controllers.podautoscaler.replica_calculator import (
    PodCounts,
    external_per_pod_replicas,
    external_replicas,
    pods_replicas,
)
from gpucap.sim.bus import Bus, Loop
from gpucap.sim.metrics import TARGET_KINDS, MetricFeed, feed_for, hpa_key
from gpucap.state.changes import ClusterChange
from gpucap.state.cluster import Cluster

__all__ = ["HorizontalPodAutoscalers", "has_hpas"]

_Ref = tuple[str, str, str]  # (kind, namespace, name)


class HorizontalPodAutoscalers:
    """The HPA controller's loop over every HPA (see the module docstring)."""

    name = "horizontal-pod-autoscaler"

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        feeds: tuple[MetricFeed, ...],
        *,
        scale: Callable[[_Ref, int, str], None],
    ) -> None:
        self.bus = bus
        self.cluster = cluster
        self.feeds = feeds
        self.scale = scale
        self._controllers: dict[tuple[str, str], HorizontalController] = {}
        self._serving: dict[str, tuple[int, int]] = {}  # object -> (requested, ready) told
        self._hpa_list: list[HorizontalPodAutoscaler] | None = None
        self._serving_loop = Loop("serving replicas", self._serving_pass)

    # -- the sync loop
    def reconcile(self) -> float | None:
        for hpa in self._hpas():
            self._sync(hpa)
        self.serving_changed()
        return SYNC_PERIOD_SECONDS

    def _hpas(self) -> list[HorizontalPodAutoscaler]:
        """The HPAs applied, read again only after an object was applied or deleted."""
        if self._hpa_list is None:
            self._hpa_list = self.cluster.objects().of_kind("HorizontalPodAutoscaler")
        return self._hpa_list

    def _target(self, hpa: HorizontalPodAutoscaler) -> tuple[_Ref, Any] | None:
        ref = hpa.spec.scale_target_ref
        if ref.kind not in TARGET_KINDS:
            return None
        key = (ref.kind, hpa.metadata.namespace, ref.name)
        obj = self.cluster.get(ref.kind, hpa.metadata.namespace, ref.name)
        return (key, obj) if obj is not None else None

    def _sync(self, hpa: HorizontalPodAutoscaler) -> None:
        target = self._target(hpa)
        if target is None:
            return  # Kubernetes: FailedGetScale, nothing changes
        ref, obj = target
        current: int = obj.spec.replicas
        pods = self._pods(ref, current)
        existing = pods.ready + pods.missing + pods.ignored
        proposals: list[int | None] = []
        said: list[tuple[int, MetricSpec, float]] = []
        for metric in hpa.spec.metrics:
            if metric.type not in SIMULATED_METRIC_TYPES:
                continue
            feed = feed_for(self.feeds, hpa_key(hpa), metric.metric_name)
            if feed is None:
                continue
            total = feed.trace.at(self.bus.now)
            proposal = _proposal(metric, total, current, existing, pods)
            proposals.append(proposal)
            if proposal is not None:
                said.append((proposal, metric, total))
        if not proposals:
            return
        controller = self._controller(hpa)
        decision = controller.sync(self.bus.now, current, proposals)
        if not decision.rescale:
            return
        fields: dict[str, Any] = {}
        if said:
            _, metric, total = max(said, key=lambda s: s[0])
            target_value = metric.target
            assert target_value is not None
            q = target_value.value or target_value.average_value
            fields = {
                "metric": metric.metric_name,
                "value": total,
                "target": q.milli_value() / 1000 if q is not None else 0.0,
                "targetType": target_value.type,
            }
        namespace, name = hpa_key(hpa)
        self.bus.emit(
            "HorizontalPodAutoscalerScaled",
            hpa=f"{namespace}/{name}",
            object=f"{ref[0]}/{namespace}/{ref[2]}",
            previous=current,
            replicas=decision.desired,
            reason=decision.reason,
            **fields,
        )
        where = f"HorizontalPodAutoscaler {namespace}/{name}"
        self.scale(ref, decision.desired, where)

    def _controller(self, hpa: HorizontalPodAutoscaler) -> HorizontalController:
        """The HPA's controller state, kept across syncs (the recommendations and scale events
        are the controller's memory, keyed by the HPA); its limits follow the object."""
        fresh = HorizontalController.of(hpa)
        kept = self._controllers.get(hpa_key(hpa))
        if kept is None:
            self._controllers[hpa_key(hpa)] = fresh
            return fresh
        kept.min_replicas, kept.max_replicas = fresh.min_replicas, fresh.max_replicas
        kept.scale_up, kept.scale_down = fresh.scale_up, fresh.scale_down
        return kept

    def _pods(self, ref: _Ref, replicas: int) -> PodCounts:
        """The target's pods as the replica calculator sorts them."""
        ready = missing = ignored = 0
        _, namespace, name = ref
        for i in range(replicas):
            try:
                pod = self.cluster.pod(f"{namespace}/{name}-{i}")
            except KeyError:
                continue
            if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions):
                ready += 1
            elif pod.spec.node_name:
                missing += 1
            else:
                ignored += 1
        return PodCounts(ready, missing, ignored)

    # -- serving
    def cluster_changed(self, change: ClusterChange) -> None:
        """The cluster's change feed: pods and applied objects are what serving counts."""
        if change is ClusterChange.OBJECTS:
            self._hpa_list = None
        if change is not ClusterChange.NODES:
            # The feed is called inside the mutation, before it lands: count once it has, at
            # the same instant.
            self.bus.engine.trigger(self._serving_loop)

    def _serving_pass(self) -> float | None:
        self.serving_changed()
        return None

    def serving_changed(self) -> None:
        """Emit `ServingReplicas` for each HPA target whose requested or Ready count moved."""
        for hpa in self._hpas():
            target = self._target(hpa)
            if target is None:
                continue
            ref, obj = target
            requested: int = obj.spec.replicas
            ready = self._pods(ref, requested).ready
            key = f"{ref[0]}/{ref[1]}/{ref[2]}"
            if self._serving.get(key) != (requested, ready):
                self._serving[key] = (requested, ready)
                self.bus.emit("ServingReplicas", object=key, requested=requested, ready=ready)


def _proposal(
    metric: MetricSpec, total: float, current: int, existing: int, pods: PodCounts
) -> int | None:
    """What one metric asks for when the trace says `total` (see the module docstring)."""
    target = metric.target
    assert target is not None
    if metric.type == "External" and target.type == "Value" and target.value is not None:
        return external_replicas(current, pods.ready, total, target.value.milli_value() / 1000)
    if target.type == "AverageValue" and target.average_value is not None:
        per_pod_target = target.average_value.milli_value() / 1000
        if metric.type == "External":
            return external_per_pod_replicas(existing, total, per_pod_target)
        per_pod = total / pods.ready if pods.ready else 0.0
        return pods_replicas(current, pods, per_pod, per_pod_target)
    return None


def has_hpas(initial: Iterable[Manifest], actions: Iterable[Any]) -> bool:
    """Whether the scenario applies a HorizontalPodAutoscaler (at t=0 or by an apply event):
    only then does the world run the HPA actor."""
    objects = [m.obj for m in initial] + [m.obj for a in actions for m in a.manifests]
    return any(isinstance(o, HorizontalPodAutoscaler) for o in objects)
