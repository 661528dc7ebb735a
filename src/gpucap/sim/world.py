"""The simulated world: one scenario run on a virtual clock, the composition root of
`gpucap simulate` (and of the demo's story).

It wires what `plan` uses over the simulated AWS: `SimulatedEC2` (the EC2/SSM API in memory,
fed by the catalog) under the real `AWSCloudProvider`, NodeOverlays as its decoration
(`cloudprovider/overlay.py`), the `Provisioner` behind Karpenter's batcher, the NodeClaim
lifecycle, termination and interruption controllers, a mutable `Cluster`, and the kubelet model
(`sim/kubelet.py`) for what nodes do by themselves. Everything runs on one `FakeClock` driven by
the event `Engine`; the `Recorder` keeps the event log that the summary, the timeline and the
JSON are computed from.

What the world plays that is not Karpenter (the parts of Kubernetes around it):
- workload controllers: a Deployment, StatefulSet, ReplicaSet, Job, ... makes its pods when
  applied and on `scale` (`Cluster.apply`); a pod evicted from a terminating node pends again
  under its own name (a ReplicaSet would create a new pod with a new name);
- the pod controller's trigger: while a pod is pending (not nominated) the provisioner is
  triggered again every 10 s, as Karpenter's pod controller requeues provisionable pods; a pass
  whose inputs (cluster state and the insufficient-capacity marks) are those of the last pass
  is skipped, since the solve is deterministic and would decide the same;
- the DaemonSet controller (`sim/daemonsets.py`): one bound pod per DaemonSet on every node it
  selects, made when a Node registers, loses its startup taints or is initialized and when a
  DaemonSet is applied or deleted; no events;
- kube-scheduler: binds a pod to the node it is nominated to once that node is registered,
  carries no taint the pod does not tolerate and has room for the pod's requests in what it
  advertises; a GPU pod nominated to a node whose GPU never appears stays Pending;
- the kubelet: registration `launch + registration` after the launch, startup taints removed
  `daemonset_start` after that (gpucap has no model of which agent removes them), the device
  plugin (`kubelet.device_plugin_for`) advertising GPUs x time-slicing replicas after its delay,
  image pulls one at a time per node (an image already on the node is not pulled again),
  container start and the pod's start-up time, then PodReady.
Called by `gpucap simulate` and `gpucap demo`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.expansion import POD_CREATORS, pod_groups
from gpucap.apis.labels import CAPACITY_TYPE, NODEPOOL
from gpucap.apis.limits import MAX_PODS
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.serde import KubeObject
from gpucap.cloudprovider.aws.catalog import Catalog
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.coldstart import KNOWN_IMAGE_SIZES, Timings
from gpucap.cloudprovider.aws.simulated import SimulatedEC2
from gpucap.cloudprovider.overlay import decorate
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.disruption.candidates import (
    consolidate_after,
    consolidate_after_start,
    next_do_not_disrupt_expiry,
)
from gpucap.controllers.disruption.constants import POLLING_PERIOD_S
from gpucap.controllers.disruption.controller import Disruption
from gpucap.controllers.disruption.drift import REQUEUE_AFTER as DRIFT_REQUEUE_S
from gpucap.controllers.disruption.drift import DriftDetection
from gpucap.controllers.expiration import Expiration
from gpucap.controllers.garbagecollection import GarbageCollection
from gpucap.controllers.interruption import Interruption
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.nodeclaim.podevents import PodEvents
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.controllers.termination import Termination
from gpucap.runtime.clock import EPOCH, FakeClock
from gpucap.runtime.collector import collector_paused
from gpucap.scheduling.resources import pod_requests
from gpucap.sim.binder import KubeScheduler
from gpucap.sim.bus import GPU_KEYS, PRIORITY_CONTROLLER, PRIORITY_KUBELET, PRIORITY_SCENARIO, Bus
from gpucap.sim.daemonsets import DaemonSetController
from gpucap.sim.engine import Engine
from gpucap.sim.nodeclaims import NodeClaimEvents
from gpucap.sim.nodes import NODE_MONITOR_GRACE_S, Kubelet
from gpucap.sim.podcontroller import POD_RETRY_SECONDS, PodController
from gpucap.sim.recorder import Event, Recorder
from gpucap.sim.scenario import LoadedScenario, ScenarioAction, ScenarioError
from gpucap.sim.summary import summarize
from gpucap.state.cluster import Cluster

__all__ = [
    "NODE_MONITOR_GRACE_S",
    "POD_RETRY_SECONDS",
    "SimulationResult",
    "World",
    "due_inputs",
    "next_disruption_time",
    "simulate",
]

# How often a skipped garbage-collection pass looks again whether anything it reads changed
# (the instance collector's own period, garbagecollection.go).
GC_IDLE_RECHECK_S = 10.0
# At most this many runs of an idle disruption loop's chain are skipped at once (`_resume_at`).
_CHAIN_STEPS = 10_000


@dataclass(slots=True)
class SimulationResult:
    """What a run leaves: the event log, the summary computed from it, and the run's length."""

    events: list[Event]
    summary: dict[str, Any]
    end: float
    start: dt.datetime = EPOCH


class _Reconciler:
    """An engine reconciler around a bound method (the engine keys registrations by object)."""

    def __init__(self, name: str, fn: Callable[[], float | None]) -> None:
        self.name = name
        self._fn = fn

    def reconcile(self) -> float | None:
        return self._fn()


class World:
    """One scenario, ready to run (see the module docstring)."""

    # The actors the laws swap for their references and mutations (tests/sim/test_world_*.py).
    pod_controller_type: type[PodController] = PodController

    def __init__(
        self, scenario: LoadedScenario, catalog: Catalog, *, sink: TextIO | None = None
    ) -> None:
        self.scenario = scenario
        self.catalog = catalog
        self.clock = FakeClock()
        self.engine = Engine(self.clock, seed=scenario.seed)
        self.recorder = Recorder(sink=sink)
        self.bus = Bus(self.engine, self.recorder)
        self.timings = Timings().with_overrides(scenario.timings)
        self.images: dict[str, tuple[int, int]] = {**KNOWN_IMAGE_SIZES, **scenario.images}
        self.ec2 = SimulatedEC2(catalog, self.clock)
        self.ec2.publish_amis(scenario.kubernetes_version)
        for k8s, versions in sorted((scenario.ami_releases or {}).items()):
            # The scenario's releases, oldest first: the last one is `latest`.
            for version in sorted(versions):
                self.ec2.publish_release(k8s, version)
        self.nodeclasses: dict[str, EC2NodeClass] = {}
        self.cluster = Cluster(self.clock)
        self.aws = AWSCloudProvider(
            self.ec2,
            catalog,
            self.clock,
            self.nodeclasses,
            kubernetes_version=scenario.kubernetes_version,
        )
        # NodeOverlays judged against every NodePool, again whenever either set changes
        # (Karpenter's NodeOverlay controller; `cloudprovider/overlay.py`).
        self.cloud: CloudProvider = decorate(
            self.aws, self.cluster.nodeoverlays, self.cluster.nodepools
        )
        self.provisioner = Provisioner(self.cloud)
        self.pod_controller = self.pod_controller_type(
            self.bus,
            self.cluster,
            self.provisioner,
            self.aws,
            nodeclasses=self.nodeclasses,
            clock=self.clock,
            names=self._next_name,
        )
        self.termination = Termination(self.cluster, self.cloud, self.clock)
        self.lifecycle = Lifecycle(
            self.cluster, self.cloud, self.clock, termination=self.termination
        )
        self.interruption = Interruption(self.cluster, self.termination, marker=self.aws)
        self.pod_events = PodEvents(self.cluster, self.clock)
        self.expiration = Expiration(self.cluster, self.termination, self.clock)
        self.drift = DriftDetection(self.cluster, self.cloud, self.clock)
        self.garbage = GarbageCollection(
            self.cluster, self.cloud, self.clock, termination=self.termination
        )
        self.claim_events = NodeClaimEvents(
            self.bus,
            self.cluster,
            self.lifecycle,
            interruption=self.interruption,
            expiration=self.expiration,
            aws=self.aws,
            ec2=self.ec2,
            nodeclasses=self.nodeclasses,
            clock=self.clock,
            until=scenario.duration,
        )
        self.disruption = Disruption(
            self.cluster,
            self.provisioner,
            self.cloud,
            self.termination,
            self.clock,
            on_create=self.claim_events.create_replacement,
            names=self._next_name,
            nodepools=self.pod_controller.ready_nodepools,
        )
        self._disruption = _Reconciler("disruption", self._disrupt)
        self._drifting = _Reconciler("drift", self._detect_drift)
        self._collecting = _Reconciler("garbagecollection", self._collect)
        self.binder = KubeScheduler(self.bus, self.cluster, self.pod_events, self.clock)

        # The DaemonSet controller: its pods are bound at once, without events (see
        # `sim/daemonsets.py`).
        self.daemonsets = DaemonSetController(
            self.cluster,
            self.clock,
            place=self.binder.place,
            unplace=self.binder.unplace,
            changed=self.bus.changed,
        )
        self.kubelet = Kubelet(
            self.bus,
            self.cluster,
            self.lifecycle,
            self.daemonsets,
            scenario=scenario,
            timings=self.timings,
            images=self.images,
            catalog=catalog,
            nodeclasses=self.nodeclasses,
        )
        self._names: dict[str, int] = {}
        self._idle_key: tuple[int, tuple[str, ...]] | None = None  # see `_disrupt`
        self._idle_until = 0.0
        # Whether an idle disruption loop's runs are held by the engine (`_resume_at`); off:
        # each runs and requeues (the reference the laws compare with).
        self.idle_chains = True
        self._gc_idle: tuple[int, int] | None = None  # see `_collect`
        self._could: tuple[int, bool] = (-1, False)  # see `_could_disrupt`
        # NodeClaim -> (the object, whether it is Drifted=True) (`_could_now`).
        self._drifted: dict[str, tuple[NodeClaim, bool]] = {}
        # What `_next_disruption_time` keeps: the NodePool objects, by name, whether one has a
        # scheduled budget, and per NodeClaim object (by id; the entry holds it) where its
        # consolidateAfter counts from and its length (None: not counting, or run out).
        self._due: (
            tuple[
                tuple[NodePool, ...],
                dict[str, NodePool],
                bool,
                dict[int, tuple[NodeClaim, dt.datetime | None, int]],
            ]
            | None
        ) = None
        self._wire()

    def _wire(self) -> None:
        """Connect each of the bus's messages to the actor that hears it (`sim/bus.py`)."""
        bus = self.bus
        bus.disruption_loop = self._disruption
        bus.collection_loop = self._collecting
        bus.bind_loop = self.binder.loop
        bus.pod_left = self.binder.unplace
        bus.bind = self.binder.bind
        bus.node_removed = self.binder.node_removed
        bus.pod_pending = self.pod_controller.pending
        bus.pod_requeued = self.pod_controller.requeued
        bus.pod_bound = self.pod_controller.forget
        bus.claim_launched = self.kubelet.launched
        bus.claim_initialized = self.kubelet.initialized
        bus.claim_removed = self.kubelet.removed
        bus.start_pod = self.kubelet.start_pod
        bus.registered_node = self.kubelet.registered_node
        bus.node_of_claim = self.kubelet.node_of_claim
        bus.claim_of_node = self.kubelet.claim_of_node
        bus.claim_result = self.claim_events.lifecycle_result
        bus.launch = self.claim_events.launch
        bus.disrupted = self.claim_events.disrupted
        bus.collected = self.claim_events.collected
        bus.trigger_provisioning = self.pod_controller.trigger_provisioning

    # ---- running --------------------------------------------------------------------------------
    def run(self, on_step: Callable[[float], None] | None = None) -> SimulationResult:
        """Run the scenario to its end (see the module docstring)."""
        for m in self.scenario.initial:
            self._apply(m.obj)
        for action in self.scenario.actions:
            self.engine.at(
                action.t,
                lambda a=action: self._act(a),  # type: ignore[misc]
                priority=PRIORITY_SCENARIO,
                label=f"events[{action.index}]",
            )
        self.engine.every(self.pod_controller.pod_trigger, priority=PRIORITY_CONTROLLER)
        self.engine.every(self._disruption, priority=PRIORITY_CONTROLLER + 1)
        self.engine.every(self._drifting, priority=PRIORITY_CONTROLLER + 2)
        self.engine.every(self._collecting, priority=PRIORITY_CONTROLLER + 3)
        # The run makes almost no cyclic garbage (the 24-hour bench day with consolidation
        # leaves ~900 objects in cycles) while the heap it keeps (catalog, cluster state, the
        # event log) grows: the collector's full passes over it were ~7% of that run. Paused
        # for the run; on again afterwards if it was on (tests/sim/test_world_collector.py).
        with collector_paused():
            self.engine.run(self.scenario.duration, on_step=on_step)
        end = self.scenario.duration
        events = list(self.recorder.events)
        return SimulationResult(events, summarize(events, end=end), end)

    @property
    def now(self) -> float:
        return self.engine.now

    def emit(self, type_: str, **fields: Any) -> Event:
        return self.bus.emit(type_, **fields)

    # ---- the scenario's actions -------------------------------------------------------------
    def _act(self, action: ScenarioAction) -> None:
        if action.kind == "apply":
            self.emit("ScenarioEvent", index=action.index, kind="apply", source=action.source)
            for m in action.manifests:
                self._apply(m.obj)
            if self.cluster.pod_count() > MAX_PODS:
                raise ScenarioError(
                    f"{self.scenario.path}: events[{action.index}].apply: the cluster would hold "
                    f"{self.cluster.pod_count():,} pods, more than gpucap simulates ({MAX_PODS:,})"
                )
        elif action.kind == "scale" and action.ref is not None and action.replicas is not None:
            kind, namespace, name = action.ref
            obj = self.cluster.get(kind, namespace or None, name)
            self.emit(
                "ScenarioEvent",
                index=action.index,
                kind="scale",
                object=f"{kind}/{_ns_name(namespace, name)}",
                replicas=action.replicas,
            )
            if obj is None:
                return
            before = self.cluster.pod_count()
            mine = sum(g.count for g in pod_groups(obj)) if isinstance(obj, POD_CREATORS) else 0
            if before - mine + action.replicas > MAX_PODS:
                raise ScenarioError(
                    f"{self.scenario.path}: events[{action.index}].scale.replicas: the cluster "
                    f"would hold {before - mine + action.replicas:,} pods, more than gpucap "
                    f"simulates ({MAX_PODS:,})"
                )
            self._apply(_with_replicas(obj, action.replicas))
        elif action.kind == "delete" and action.ref is not None:
            kind, namespace, name = action.ref
            self.emit(
                "ScenarioEvent",
                index=action.index,
                kind="delete",
                object=f"{kind}/{_ns_name(namespace, name)}",
            )
            applied = self.cluster.delete(kind, namespace or None, name)
            self._pods_deleted(applied.deleted)
            self._objects_changed(kind)
            if kind == "DaemonSet":
                self.daemonsets.daemonsets_changed()
        elif action.kind == "capacity" and action.capacity is not None:
            self._capacity(action)
        elif action.kind == "interrupt" and action.interrupt_node_claim is not None:
            self._interrupt(action.index, action.interrupt_node_claim)
        elif action.kind == "amiRelease" and action.ami_release is not None:
            k8s, version = action.ami_release
            self.emit(
                "ScenarioEvent",
                index=action.index,
                kind="amiRelease",
                detail=(
                    f"AWS publishes EKS AMI release {version} for Kubernetes {k8s}: "
                    "al2023@latest points to it (Karpenter reads it when its 24 h SSM cache "
                    "expires)"
                ),
            )
            self.ec2.publish_release(k8s, version)
            self.engine.trigger(self._drifting)
        self.bus.changed()

    def _apply(self, obj: KubeObject) -> None:
        applied = self.cluster.apply(obj)
        kind = obj.kind
        if kind == "EC2NodeClass":
            self.nodeclasses[obj.metadata.name] = obj  # type: ignore[assignment]
        for key in applied.created:
            pod = self.cluster.pod(key)
            if pod.metadata.creation_timestamp is None:
                # As the API server stores it: the scheduler's queue breaks ties by it.
                meta = pod.metadata.model_copy(update={"creation_timestamp": self.clock.now()})
                pod = pod.model_copy(update={"metadata": meta})
                self.cluster.add_pod(pod)
            self.emit("PodCreated", pod=key, gpus=_gpus(pod_requests(pod.spec)))
            if pod.spec.node_name:
                self.binder.place(pod, pod.spec.node_name)
            else:
                self.pod_controller.pending(key)
        self._pods_deleted(applied.deleted)
        self._objects_changed(kind)
        if kind == "DaemonSet":
            self.daemonsets.daemonsets_changed()
        elif kind == "Node":
            self.daemonsets.node_changed(obj.metadata.name)
        self.bus.changed()

    def _objects_changed(self, kind: str) -> None:
        """Re-wire what depends on the applied objects of `kind`."""
        if kind in ("DaemonSet", "ClusterPolicy", "ConfigMap"):
            self.kubelet.start_plugins()
        if kind in ("NodePool", "EC2NodeClass", "NodeOverlay", "DaemonSet"):
            self.bus.trigger_provisioning()
        if kind in ("NodePool", "EC2NodeClass"):
            self.engine.trigger(self._drifting)

    def _pods_deleted(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.emit("PodDeleted", pod=key)
            self.pod_controller.forget(key)
            self.binder.deleted(key)
        self.bus.trigger_bind()

    def _capacity(self, action: ScenarioAction) -> None:
        cap = action.capacity
        assert cap is not None
        until = None if cap.duration is None else self.now + cap.duration
        self.ec2.set_capacity(
            cap.instance_type,
            cap.zone,
            cap.capacity_type,
            available=cap.available,
            until=(
                None
                if cap.duration is None
                else self.clock.now() + dt.timedelta(seconds=cap.duration)
            ),
        )
        fields = {
            "instanceType": cap.instance_type,
            "zone": cap.zone,
            "capacityType": cap.capacity_type,
        }
        self.emit("ScenarioEvent", index=action.index, kind="capacity")
        self.emit("CapacityChanged", available=cap.available, **fields)
        if until is not None and until <= self.scenario.duration:

            def window_ends() -> None:
                self.emit("CapacityChanged", available=not cap.available, **fields)
                self.bus.changed()
                self.bus.trigger_provisioning()

            self.engine.at(
                until,
                window_ends,
                priority=PRIORITY_SCENARIO,
                label="capacity window ends",
            )

    def _interrupt(self, index: int, name: str) -> None:
        self.bus.claims_changed()
        claim = self.cluster.node_claim(name)
        if claim is None or not claim.status.provider_id:
            self.emit(
                "ScenarioEvent",
                index=index,
                kind="interrupt",
                detail=f"no launched NodeClaim {name} at this time; nothing interrupted",
            )
            return
        if claim.metadata.labels.get(CAPACITY_TYPE) != "spot":
            self.emit(
                "ScenarioEvent",
                index=index,
                kind="interrupt",
                detail=f"NodeClaim {name} is not a spot instance; EC2 does not interrupt it",
            )
            return
        self.emit("ScenarioEvent", index=index, kind="interrupt", detail=name)
        reclaim_at = self.ec2.interrupt(claim.status.provider_id.rsplit("/", 1)[-1])
        self.engine.after(
            (reclaim_at - self.clock.now()).total_seconds(),
            lambda: self.kubelet.reclaimed(name, "SpotInterruption"),
            priority=PRIORITY_KUBELET,
            label=f"EC2 reclaims {name}",
        )
        self.claim_events.spot_interrupted(name)

    # ---- provisioning -------------------------------------------------------------------------
    def _next_name(self, nodepool: str) -> str:
        while True:
            self._names[nodepool] = self._names.get(nodepool, 0) + 1
            name = f"{nodepool}-{self._names[nodepool]}"
            if self.cluster.node_claim(name) is None and self.cluster.node(name) is None:
                return name

    # ---- disruption -----------------------------------------------------------------------------
    def _disrupt(self) -> float | None:
        """Karpenter's disruption loop and queue (`controllers/disruption/controller.py`).

        A pass that found nothing to do, with no command queued or waiting for validation,
        is repeated every 10 s in Karpenter; here it is skipped until something it reads
        changes: the cluster (the version counter and the insufficient-capacity marks) or the
        clock crossing a time it depends on (a NodeClaim's consolidateAfter running out, a
        minute boundary while a NodePool has scheduled budgets). The methods are deterministic
        functions of those, so the skipped passes would have found nothing too."""
        key = (self.bus.version, tuple(self.aws.unavailable.active()))
        if key == self._idle_key and self.now < self._idle_until:
            if not self.idle_chains:
                return min(POLLING_PERIOD_S, self._idle_until - self.now)
            # Every run of the chain of requeues below (10 s, then what is left to the idle
            # time) would come here again until the cluster changes (`_changed` wakes it), a
            # mark expires or the idle time is reached: the engine holds them and runs the
            # one at which the first of those two clocks runs out (`_resume_at`).
            self.engine.idle(self._disruption, POLLING_PERIOD_S, resume_at=self._resume_at())
            return None
        if (
            not self.disruption.commands()
            and self.disruption.waiting() is None
            and not self._could_disrupt()
        ):
            # No NodePool consolidates (consolidateAfter Never everywhere) and nothing drifted:
            # every method's candidates are empty, the pass would find nothing.
            if self._idle_key is None or self._idle_key[0] != self.bus.version:
                # Until the version changes, every run every 10 s would come here again (the
                # check above needs this version; the queue and the memo of `_could_disrupt`
                # stay as they are): the engine holds them until `_changed` wakes it.
                self.engine.idle(self._disruption, POLLING_PERIOD_S)
                return None
            return POLLING_PERIOD_S
        polls = self.clock.monotonic() >= self.disruption.next_poll
        result = self.disruption.reconcile()
        self.bus.disrupted(result)
        idle = (
            polls
            and result.decided is None
            and not result.deleting
            and not result.abandoned
            and not self.disruption.commands()
            and self.disruption.waiting() is None
        )
        if idle:
            self._idle_key = (self.bus.version, tuple(self.aws.unavailable.active()))
            self._idle_until = self._next_disruption_time()
        else:
            self._idle_key = None
        return result.requeue_after if result.requeue_after is not None else POLLING_PERIOD_S

    def _resume_at(self) -> float | None:
        """The first run of an idle disruption loop's chain of requeues (`_disrupt`: 10 s
        while more is left to `_idle_until`, then what is left, each added to the engine's
        time as the engine adds a requeue) at which the run may not return at once: the idle
        time reached, or the clock at or past the soonest insufficient-capacity mark's end
        (the marks are part of the pass's key; new marks come with a change, which wakes the
        loop). None: neither ever (the plain 10-s grid of `Engine.idle`). A long chain is
        cut at `_CHAIN_STEPS` runs: that run then finds the same and idles again."""
        until = self._idle_until
        expiry = self.aws.unavailable.next_expiry()
        if expiry is None and math.isinf(until):
            return None
        t = self.now
        for _ in range(_CHAIN_STEPS):
            t = t + min(POLLING_PERIOD_S, until - t)
            if t >= until or (expiry is not None and self.engine.clock_at(t) >= expiry):
                break
        return t

    def _could_disrupt(self) -> bool:
        """Whether some method could have a candidate: a NodePool whose consolidateAfter is
        not Never (emptiness, consolidation), or a drifted NodeClaim (drift). Memoised per
        cluster version (both are cluster state)."""
        if self._could[0] != self.bus.version:
            self._could = (self.bus.version, self._could_now())
        return self._could[1]

    def _could_now(self) -> bool:
        if any(consolidate_after(np) is not None for np in self.cluster.nodepools()):
            return True
        # Whether a NodeClaim is drifted, per NodeClaim object (frozen models).
        seen: dict[str, tuple[NodeClaim, bool]] = {}
        found = False
        for claim in self.cluster.node_claims():
            name = claim.metadata.name
            kept = self._drifted.get(name)
            if kept is None or kept[0] is not claim:
                conditions = claim.status.conditions
                drifted = any(c.type == "Drifted" and c.status == "True" for c in conditions)
                kept = (claim, drifted)
            seen[name] = kept
            found = found or kept[1]
        self._drifted = seen
        return found

    def _next_disruption_time(self) -> float:
        """The next time an idle disruption pass could find something without the cluster
        changing (see `_disrupt`): the soonest of `_due_time` and, when the last pass skipped
        a method as consolidated, the consolidation state's reset (`Disruption.revisit_at`):
        that method runs again then, and what turned consolidatable meanwhile (the clock
        alone) is looked at."""
        soonest = self._due_time()
        now = self.clock.now()
        # A pod's do-not-disrupt with a duration running out makes its node a candidate
        # (`IsDoNotDisruptActive`): the clock alone changes what the pass finds.
        ends = next_do_not_disrupt_expiry(self.cluster, now)
        if ends is not None:
            soonest = min(soonest, self.now + (ends - now).total_seconds())
        revisit = self.disruption.revisit_at()
        if revisit is not None:
            soonest = min(soonest, self.now + max(0.0, revisit - self.clock.monotonic()))
        return soonest

    def _due_time(self) -> float:
        """The next time the clock alone changes what a disruption pass reads of the cluster:
        `next_disruption_time` of `due_inputs`, from what is kept.
        Per NodeClaim object (frozen) where its consolidateAfter counts from, while the
        NodePool objects are the same; a NodeClaim whose consolidateAfter has run out is not
        looked at again until it changes (the clock only moves on, and the due time is
        non-increasing in it: the difference of datetimes is exact and `total_seconds` and
        the additions are monotone), so an idle pass walks the NodeClaims by identity only.
        The arithmetic for the others is `next_disruption_time`'s, on every call."""
        now = self.clock.now()
        seconds = self.now
        pools = tuple(self.cluster.nodepools())
        kept = self._due
        if (
            kept is None
            or len(kept[0]) != len(pools)
            or any(a is not b for a, b in zip(kept[0], pools, strict=True))
        ):
            by_name = {np.name: np for np in pools}
            kept = self._due = (pools, by_name, _scheduled(by_name.values()), {})
        _, by_name, scheduled, starts = kept
        claims = self.cluster.node_claims()
        if len(starts) > 4 * len(claims) + 64:
            starts.clear()  # entries of NodeClaims gone (each holds its object)
        soonest = (seconds // 60 + 1) * 60 if scheduled else float("inf")
        for claim in claims:
            entry = starts.get(id(claim))
            if entry is None or entry[0] is not claim:
                entry = starts[id(claim)] = (claim, *_due_of(claim, by_name))
            start = entry[1]
            if start is None:
                continue
            due = (start - now).total_seconds() + entry[2]
            if due > 0:
                soonest = min(soonest, seconds + due)
            else:
                starts[id(claim)] = (claim, None, 0)  # run out, and stays so
        return soonest

    def _detect_drift(self) -> float | None:
        for name, reason in self.drift.reconcile():
            self.emit("NodeClaimDrifted", nodeClaim=name, reason=reason)
            self.bus.changed()
            self.engine.trigger(self._disruption)
        return DRIFT_REQUEUE_S

    def _collect(self) -> float | None:
        # What garbage collection reads: the cluster's NodeClaims and Nodes and the instances
        # EC2 has; every change to them goes through the places that bump `_claims_touched`
        # (launch, registration, deletion, termination) or adds an instance. Unchanged since a
        # pass that collected nothing: this pass would collect nothing either.
        seen = (self.bus.claims_touched, len(self.ec2.instances))
        if seen == self._gc_idle:
            # Every run every 10 s would come here again until `_claims_changed` (instances are
            # only created by launches, which it follows): the engine holds them until then.
            self.engine.idle(self._collecting, GC_IDLE_RECHECK_S)
            return None
        collected = self.garbage.collect()
        self._gc_idle = (
            seen
            if not (collected.instances or collected.node_claims or collected.released)
            else None
        )
        self.bus.collected(collected)
        return self.garbage.requeue_after()


def simulate(
    scenario: LoadedScenario,
    catalog: Catalog,
    *,
    sink: TextIO | None = None,
    on_step: Callable[[float], None] | None = None,
) -> SimulationResult:
    """Run `scenario` over `catalog` (see the module docstring)."""
    return World(scenario, catalog, sink=sink).run(on_step=on_step)


# ---- helpers ------------------------------------------------------------------------------------
def due_inputs(
    claims: Iterable[NodeClaim], nodepools: Iterable[NodePool]
) -> tuple[bool, tuple[tuple[dt.datetime, int], ...]]:
    """What `next_disruption_time` reads of the cluster: whether a NodePool has a scheduled
    budget, and per NodeClaim of a NodePool with a non-zero consolidateAfter, where that counts
    from and its length in seconds (in the NodeClaims' order; NodeClaims not Initialized and
    of unknown NodePools left out). The reference `World._next_disruption_time` keeps."""
    pools = {np.name: np for np in nodepools}
    starts: list[tuple[dt.datetime, int]] = []
    for claim in claims:
        start, after = _due_of(claim, pools)
        if start is not None:
            starts.append((start, after))
    return _scheduled(pools.values()), tuple(starts)


def _scheduled(nodepools: Iterable[NodePool]) -> bool:
    return any(b.schedule for np in nodepools for b in (np.spec.disruption.budgets or []))


def _due_of(claim: NodeClaim, pools: Mapping[str, NodePool]) -> tuple[dt.datetime | None, int]:
    """Where the NodeClaim's consolidateAfter counts from and its length (None, 0: it does
    not count: unknown NodePool, Never or zero, not Initialized)."""
    np = pools.get(claim.metadata.labels.get(NODEPOOL, ""))
    if np is None:
        return None, 0
    after = consolidate_after(np)
    if not after:
        return None, 0
    start = consolidate_after_start(claim)
    return (start, after) if start is not None else (None, 0)


def next_disruption_time(
    now: dt.datetime,
    seconds: float,
    scheduled: bool,
    starts: Iterable[tuple[dt.datetime, int]],
) -> float:
    """The next time (seconds since the start; `seconds` is now) at which an idle disruption
    pass could find something the cluster did not change: the next minute boundary while a
    NodePool has a scheduled budget, the soonest consolidateAfter still running
    (`due_inputs`); infinity when none."""
    soonest = (seconds // 60 + 1) * 60 if scheduled else float("inf")
    for start, after in starts:
        due = (start - now).total_seconds() + after
        if due > 0:
            soonest = min(soonest, seconds + due)
    return soonest


def _ns_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _gpus(requests: Mapping[str, int]) -> dict[str, int]:
    return {r: v for r, v in sorted(requests.items()) if r in GPU_KEYS and v}


def _with_replicas(obj: KubeObject, replicas: int) -> KubeObject:
    spec = obj.spec  # type: ignore[union-attr]
    field_name = "parallelism" if obj.kind == "Job" else "replicas"
    return obj.model_copy(update={"spec": spec.model_copy(update={field_name: replicas})})
