"""The simulated world: one scenario run on a virtual clock, the composition root of
`gpucap simulate` (and of the demo's story).

It takes the stack `plan` uses (`operator/stack.py` `simulated_aws`: `SimulatedEC2`, the
EC2/SSM API in memory fed by the catalog, under the real `AWSCloudProvider`, NodeOverlays as
its decoration, the `Provisioner`) on its own clock and wires around it Karpenter's batcher,
the NodeClaim lifecycle, termination, interruption, expiration, drift, garbage collection and
disruption controllers, and a mutable `Cluster`. Everything runs on one `FakeClock` driven by
the event `Engine`; the `Recorder` keeps the event log that the summary, the timeline and the
JSON are computed from. The world itself plays the scenario's actions (apply, scale, delete,
capacity windows, spot interruptions, AMI releases) and the workload controllers: a
Deployment, StatefulSet, ReplicaSet, Job, ... makes its pods when applied and on `scale`
(`Cluster.apply`);
a pod evicted from a terminating node pends again under its own name (a ReplicaSet would create
a new pod with a new name).

The rest is played by actors, each in its own module, which talk to one another only through
the bus (`sim/bus.py`) that the world builds, connects to the engine and wires (`_wire`):
- kube-scheduler (`sim/binder.py` `KubeScheduler`): binds a pod to the node it is nominated to
  once that node is registered, carries no taint the pod does not tolerate and has room for the
  pod's requests in what it advertises; a GPU pod nominated to a node whose GPU never appears
  stays Pending;
- the kubelet (`sim/nodes.py` `Kubelet`, over the models of `sim/kubelet.py`): registration
  `launch + registration` after the launch, startup taints removed `daemonset_start` after that
  (gpucap has no model of which agent removes them), the device plugin advertising GPUs x
  time-slicing replicas after its delay, image pulls one at a time per node, container start and
  the pod's start-up time, then PodReady;
- Karpenter's pod controller and provisioner trigger (`sim/podcontroller.py` `PodController`):
  while a pod is pending (not nominated) the provisioner is triggered again every 10 s; a pass
  whose inputs (cluster state and the insufficient-capacity marks) are those of the last pass is
  skipped, since the solve is deterministic and would decide the same;
- the cadence of Karpenter's disruption, drift and garbage collection loops
  (`sim/cadence.py` `DisruptionCadence`), skipping the passes that would find nothing;
- the NodeClaim controllers' results turned into events (`sim/nodeclaims.py`
  `NodeClaimEvents`);
- the DaemonSet controller (`sim/daemonsets.py`): one bound pod per DaemonSet on every node it
  selects, made when a Node registers, loses its startup taints or is initialized and when a
  DaemonSet is applied or deleted; no events;
- the cost floor (`sim/costfloor.py` `CostFloorActor`): the LP relaxation's cheapest fleet for
  the pods Karpenter serves, last at each instant where they changed, as `CostFloor` events.
Called by `gpucap simulate` and `gpucap demo`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.expansion import POD_CREATORS, pod_groups
from gpucap.apis.labels import CAPACITY_TYPE
from gpucap.apis.limits import MAX_PODS
from gpucap.apis.serde import KubeObject
from gpucap.cloudprovider.aws.coldstart import KNOWN_IMAGE_SIZES, Timings
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.disruption.controller import Disruption
from gpucap.controllers.disruption.drift import DriftDetection
from gpucap.controllers.expiration import Expiration
from gpucap.controllers.garbagecollection import GarbageCollection
from gpucap.controllers.interruption import Interruption
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.nodeclaim.podevents import PodEvents
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.controllers.provisioning.names import NodeClaimNames
from gpucap.operator.stack import simulated_aws
from gpucap.runtime.clock import EPOCH, FakeClock
from gpucap.runtime.collector import collector_paused
from gpucap.scheduling.resources import pod_requests
from gpucap.sim.binder import KubeScheduler
from gpucap.sim.bus import GPU_KEYS, PRIORITY_CONTROLLER, PRIORITY_KUBELET, PRIORITY_SCENARIO, Bus
from gpucap.sim.cadence import DisruptionCadence, due_inputs, next_disruption_time
from gpucap.sim.costfloor import CostFloorActor
from gpucap.sim.daemonsets import DaemonSetController
from gpucap.sim.engine import Engine
from gpucap.sim.nodeclaims import NodeClaimEvents
from gpucap.sim.nodes import NODE_MONITOR_GRACE_S, Kubelet
from gpucap.sim.podautoscaler import HorizontalPodAutoscalers, has_hpas
from gpucap.sim.podcontroller import POD_RETRY_SECONDS, PodController
from gpucap.sim.recorder import Event, Recorder
from gpucap.sim.reservations import ReservationActor, reservation_summary
from gpucap.sim.scenario import LoadedScenario, ScenarioAction, ScenarioError
from gpucap.sim.spotmarket import SpotMarket, fleet_random
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


@dataclass(slots=True)
class SimulationResult:
    """What a run leaves: the event log, the summary computed from it, and the run's length."""

    events: list[Event]
    summary: dict[str, Any]
    end: float
    start: dt.datetime = EPOCH


class World:
    """One scenario, ready to run (see the module docstring)."""

    # The actors the laws swap for their references and mutations (tests/sim/test_world_*.py).
    pod_controller_type: type[PodController] = PodController
    cadence_type: type[DisruptionCadence] = DisruptionCadence

    def __init__(
        self, scenario: LoadedScenario, catalog: Catalog, *, sink: TextIO | None = None
    ) -> None:
        self.scenario = scenario
        self.catalog = catalog
        self.clock = FakeClock(scenario.start)
        self.engine = Engine(self.clock, seed=scenario.seed)
        self.recorder = Recorder(sink=sink)
        self.bus = Bus(self.engine, self.recorder)
        self.timings = Timings().with_overrides(scenario.timings)
        self.images: dict[str, tuple[int, int]] = {**KNOWN_IMAGE_SIZES, **scenario.images}
        self.nodeclasses: dict[str, EC2NodeClass] = {}
        self.cluster = Cluster(self.clock)
        # `<nodepool>-<n>`, numbered per NodePool over the run, never reused: the provisioner
        # and the disruption controller both name their NodeClaims here.
        self._names = NodeClaimNames(self.cluster.name_in_use)
        # The stack `plan` uses too (`operator/stack.py`), on this clock: the scenario's AMI
        # releases published (oldest first: the last is `latest`), the EC2NodeClasses as the
        # scenario applies them, NodeOverlays judged against every NodePool, again whenever
        # either set changes (Karpenter's NodeOverlay controller; `cloudprovider/overlay.py`).
        stack = simulated_aws(
            catalog,
            self.clock,
            nodeclasses=self.nodeclasses,
            overlays=self.cluster.nodeoverlays,
            nodepools=self.cluster.nodepools,
            kubernetes_version=scenario.kubernetes_version,
            ami_releases=scenario.ami_releases,
            reservations=scenario.reservations,
        )
        self.ec2 = stack.ec2
        self.aws = stack.aws
        self.cloud: CloudProvider = stack.cloud
        self.provisioner = stack.provisioner
        self.pod_controller = self.pod_controller_type(
            self.bus,
            self.cluster,
            self.provisioner,
            self.aws,
            nodeclasses=self.nodeclasses,
            clock=self.clock,
            names=self._names.next,
        )
        self.termination = Termination(self.cluster, self.cloud, self.clock)
        self.lifecycle = Lifecycle(
            self.cluster, self.cloud, self.clock, termination=self.termination
        )
        self.interruption = Interruption(
            self.cluster,
            self.termination,
            marker=self.aws,
            reservations=self.aws.capacity_reservations,
        )
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
            provisioning=self.pod_controller,
        )
        self.cadence = self.cadence_type(
            self.bus,
            self.cluster,
            self.disruption,
            aws=self.aws,
            ec2=self.ec2,
            drift=self.drift,
            garbage=self.garbage,
            clock=self.clock,
        )
        self.binder = KubeScheduler(self.bus, self.cluster, self.pod_events, self.clock)
        # The cost floor of the pods served, recorded as it changes (`sim/costfloor.py`), when
        # the command asks for it (`--cost-floor`: an LP per new population of pods).
        self.cost_floor = (
            CostFloorActor(self.bus, self.cluster, self.provisioner)
            if scenario.cost_floor
            else None
        )

        # The DaemonSet controller: its pods are bound at once, without events (see
        # `sim/daemonsets.py`).
        self.daemonsets = DaemonSetController(
            self.cluster,
            self.clock,
            place=self.binder.place,
            unplace=self.binder.unplace,
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
        # Capacity reservations on the clock and Karpenter's controllers for them; only when
        # the scenario has reservations (`sim/reservations.py`).
        self.reservations: ReservationActor | None = None
        if scenario.reservations is not None and scenario.reservations.capacity_reservations:
            self.reservations = ReservationActor(
                self.bus,
                self.cluster,
                self.ec2,
                cloud=self.cloud,
                provider=self.aws.capacity_reservations,
                termination=self.termination,
                interruption=self.interruption,
                clock=self.clock,
                until=scenario.duration,
                terminated=self.claim_events.terminated,
                reconcile_claim=self.claim_events.reconcile_claim,
                reclaimed=self.kubelet.reclaimed,
            )
        # The spot market: EC2 reclaiming spot pools by itself; only when the scenario's world
        # asks for it (`sim/spotmarket.py`).
        self.spot_market: SpotMarket | None = None
        if scenario.world is not None and scenario.world.spot.active:
            self.spot_market = SpotMarket(
                self.bus,
                self.cluster,
                self.ec2,
                cloud=self.cloud,
                catalog=catalog,
                world=scenario.world.spot,
                region=scenario.region,
                seed=scenario.seed,
                clock=self.clock,
                until=scenario.duration,
                warn=self._spot_warning,
            )
            # Equal-price spot zones: EC2's choice among them, from the seed (simulated/fleet.py).
            self.ec2.spot_ties = fleet_random(scenario.seed)
        # The HorizontalPodAutoscalers and their traces; only when the scenario has an HPA.
        self.hpas: HorizontalPodAutoscalers | None = None
        if scenario.metrics or has_hpas(scenario.initial, scenario.actions):
            self.hpas = HorizontalPodAutoscalers(
                self.bus, self.cluster, scenario.metrics, scale=self.scale
            )
            self.cluster.watch(self.hpas.cluster_changed)
        self._wire()

    def _wire(self) -> None:
        """Connect each of the bus's messages to the actor that hears it (`sim/bus.py`)."""
        bus = self.bus
        bus.bind_loop = self.binder.loop
        bus.pod_left = self.binder.unplace
        bus.bind = self.binder.bind
        bus.node_removed = self.binder.node_removed
        bus.claim_launched = self.kubelet.launched
        bus.claim_initialized = self.kubelet.initialized
        bus.claim_removed = self.kubelet.removed
        bus.start_pod = self.kubelet.start_pod
        bus.registered_node = self.kubelet.registered_node
        bus.node_of_claim = self.kubelet.node_of_claim
        bus.claim_of_node = self.kubelet.claim_of_node
        bus.pod_pending = self.pod_controller.pending
        bus.pod_requeued = self.pod_controller.requeued
        bus.pod_bound = self.pod_controller.forget
        bus.trigger_provisioning = self.pod_controller.trigger_provisioning
        bus.disruption_loop = self.cadence.disruption_loop
        bus.collection_loop = self.cadence.collection_loop
        bus.claim_result = self.claim_events.lifecycle_result
        bus.launch = self.claim_events.launch
        bus.disrupted = self.claim_events.disrupted
        bus.collected = self.claim_events.collected
        bus.pdbs_present = lambda: bool(self.cluster.pdbs())
        # What changes, the bus hears from the cluster and EC2 themselves.
        self.cluster.watch(bus.cluster_changed)
        if self.cost_floor is not None:
            self.cluster.watch(self.cost_floor.cluster_changed)
        self.ec2.watch(bus.ec2_changed)

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
        self.engine.every(self.cadence.disruption_loop, priority=PRIORITY_CONTROLLER + 1)
        self.engine.every(self.cadence.drift_loop, priority=PRIORITY_CONTROLLER + 2)
        self.engine.every(self.cadence.collection_loop, priority=PRIORITY_CONTROLLER + 3)
        if self.reservations is not None:
            self.reservations.start()
        if self.spot_market is not None:
            self.spot_market.start()
        if self.hpas is not None:
            self.engine.every(self.hpas, priority=PRIORITY_CONTROLLER + 5)
        if self.cost_floor is not None:
            # Last at every instant: it reads what the instant's events left.
            self.engine.every(self.cost_floor.loop, priority=PRIORITY_CONTROLLER + 200)
        # The run makes almost no cyclic garbage (the 24-hour bench day with consolidation
        # leaves ~900 objects in cycles) while the heap it keeps (catalog, cluster state, the
        # event log) grows: the collector's full passes over it were ~7% of that run. Paused
        # for the run; on again afterwards if it was on (tests/sim/test_world_collector.py).
        with collector_paused():
            self.engine.run(self.scenario.duration, on_step=on_step)
        end = self.scenario.duration
        events = list(self.recorder.events)
        summary = summarize(events, end=end)
        if self.reservations is not None:
            summary["reservations"] = reservation_summary(
                self.ec2, self.reservations.reclaimed_at, start=self.scenario.start, end=end
            )
        if self.spot_market is not None:
            summary["world"] = {"spot": self.spot_market.summary()}
        return SimulationResult(events, summary, end, self.scenario.start)

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
            self.emit(
                "ScenarioEvent",
                index=action.index,
                kind="scale",
                object=f"{kind}/{_ns_name(namespace, name)}",
                replicas=action.replicas,
            )
            self.scale(action.ref, action.replicas, f"events[{action.index}].scale.replicas")
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
        elif action.kind == "reclaim" and action.reclaim_reservation is not None:
            if self.reservations is not None:
                self.reservations.reclaim(action.index, action.reclaim_reservation)
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
            self.engine.trigger(self.cadence.drift_loop)

    def scale(self, ref: tuple[str, str, str], replicas: int, where: str) -> None:
        """Set a workload's replicas as `kubectl scale` does: a scenario's scale event and the
        HPA (`sim/podautoscaler.py`) both write here; `where` names the source in an error."""
        kind, namespace, name = ref
        obj = self.cluster.get(kind, namespace or None, name)
        if obj is None:
            return
        before = self.cluster.pod_count()
        mine = sum(g.count for g in pod_groups(obj)) if isinstance(obj, POD_CREATORS) else 0
        if before - mine + replicas > MAX_PODS:
            raise ScenarioError(
                f"{self.scenario.path}: {where}: the cluster "
                f"would hold {before - mine + replicas:,} pods, more than gpucap "
                f"simulates ({MAX_PODS:,})"
            )
        self._apply(_with_replicas(obj, replicas))

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
        self._objects_changed(kind, obj.metadata.name)
        if kind == "DaemonSet":
            self.daemonsets.daemonsets_changed()
        elif kind == "Node":
            self.daemonsets.node_changed(obj.metadata.name)

    def _objects_changed(self, kind: str, name: str | None = None) -> None:
        """Re-wire what depends on the applied objects of `kind` (`name`: the one applied)."""
        if kind in ("DaemonSet", "ClusterPolicy", "ConfigMap"):
            self.kubelet.start_plugins()
        if kind in ("NodePool", "EC2NodeClass", "NodeOverlay", "DaemonSet"):
            self.bus.trigger_provisioning()
        if kind in ("NodePool", "EC2NodeClass"):
            self.engine.trigger(self.cadence.drift_loop)
            if self.spot_market is not None:
                self.spot_market.refresh(name if kind == "NodePool" else None)

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
            cap.instance_types or (cap.instance_type or "",),
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
        if cap.instance_family is not None:
            fields["instanceFamily"] = cap.instance_family
        self.emit("ScenarioEvent", index=action.index, kind="capacity")
        self.emit("CapacityChanged", available=cap.available, **fields)
        if until is not None and until <= self.scenario.duration:

            def window_ends() -> None:
                self.emit("CapacityChanged", available=not cap.available, **fields)
                self.ec2.ended("capacity")
                self.bus.trigger_provisioning()

            self.engine.at(
                until,
                window_ends,
                priority=PRIORITY_SCENARIO,
                label="capacity window ends",
            )

    def _interrupt(self, index: int, name: str) -> None:
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
        self._spot_warning(name, claim.status.provider_id)

    def _spot_warning(self, name: str, provider_id: str) -> None:
        """EC2's two-minute warning to NodeClaim `name`'s spot instance, as a scripted
        `interrupt` event and the spot market (`sim/spotmarket.py`) both send it: EC2 marks
        the instance, takes it back when the notice runs out (the kubelet's end of the node),
        and Karpenter's interruption controller reads the warning at once."""
        reclaim_at = self.ec2.interrupt(provider_id.rsplit("/", 1)[-1])

        def reclaimed() -> None:
            self.ec2.ended("instances")  # the notice ran out: EC2 took the instance back
            self.kubelet.reclaimed(name, "SpotInterruption")

        self.engine.after(
            (reclaim_at - self.clock.now()).total_seconds(),
            reclaimed,
            priority=PRIORITY_KUBELET,
            label=f"EC2 reclaims {name}",
        )
        self.claim_events.spot_interrupted(name)

    # ---- NodeClaim names ----------------------------------------------------------------------


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
def _ns_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _gpus(requests: Mapping[str, int]) -> dict[str, int]:
    return {r: v for r, v in sorted(requests.items()) if r in GPU_KEYS and v}


def _with_replicas(obj: KubeObject, replicas: int) -> KubeObject:
    spec = obj.spec  # type: ignore[union-attr]
    field_name = "parallelism" if obj.kind == "Job" else "replicas"
    return obj.model_copy(update={"spec": spec.model_copy(update={field_name: replicas})})
