"""What the simulator's actors say to one another: the bus the `World` (`sim/world.py`) wires to
the engine.

The actors are the parts of Kubernetes and Karpenter the world plays, each in its own module:
kube-scheduler (`sim/binder.py`), the kubelet (`sim/nodes.py`), Karpenter's pod controller and
provisioner trigger (`sim/podcontroller.py`), its disruption loop's cadence (`sim/cadence.py`) and
the NodeClaim results turned into events (`sim/nodeclaims.py`). They import the bus, the `Cluster`
and the controllers they drive, never each other (an import-linter independence contract): what
one tells another goes through the bus, as Karpenter's controllers hear of each other through the
API server's watches rather than by calling one another. No Kubernetes component plays the bus
itself; it is the simulator's wiring.

The bus keeps what every actor reads (the engine's time, the event log, the change counters) and
carries the messages. The change counters follow the cluster's and EC2's own change feeds
(`Cluster.watch`, `SimulatedEC2.watch`; `cluster_changed`, `ec2_changed`): no actor reports a
change it made. `World._wire` connects each message to the one actor that hears it (an
unconnected message is an AttributeError). Messages run at once, in the caller's instant and
order: the bus adds no delay and no event of its own, so a run is the same event for event as
when the actors were one class.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from gpucap.apis.core import Pod
from gpucap.apis.gpu import GPU_RESOURCES, NVIDIA_GPU_SHARED
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.aws.instance.launch import MAX_LAUNCH_INSTANCE_TYPES
from gpucap.controllers.disruption.controller import DisruptionResult
from gpucap.controllers.garbagecollection import Collected
from gpucap.controllers.nodeclaim.lifecycle import LifecycleResult
from gpucap.controllers.reconciler import Reconciler
from gpucap.sim.engine import Engine
from gpucap.sim.recorder import Event, Recorder
from gpucap.state.changes import ClusterChange
from gpucap.state.cluster import Cluster

__all__ = [
    "GPU_KEYS",
    "PRIORITY_BIND",
    "PRIORITY_CONTROLLER",
    "PRIORITY_KUBELET",
    "PRIORITY_SCENARIO",
    "Bus",
    "Loop",
    "created_now",
    "instance_type_options",
    "pod_exists",
]

# Priorities at one instant (lower runs first): the scenario's own actions, then what nodes do
# by themselves, then kube-scheduler's binding, then Karpenter's controllers.
PRIORITY_SCENARIO = 0
PRIORITY_KUBELET = 10
PRIORITY_BIND = 20
PRIORITY_CONTROLLER = 30
# The GPU resources a pod may request or a node advertise (time-slicing with renameByDefault
# advertises `nvidia.com/gpu.shared`).
GPU_KEYS = (*GPU_RESOURCES, NVIDIA_GPU_SHARED)


class Loop:
    """An engine reconciler around a bound method (the engine keys registrations by object)."""

    def __init__(self, name: str, fn: Callable[[], float | None]) -> None:
        self.name = name
        self._fn = fn

    def reconcile(self) -> float | None:
        return self._fn()


class Bus:
    """The engine, the event log, the change counters and the actors' messages (see the module
    docstring). Each message names the actor that hears it."""

    # -- wired by the World (`World._wire`) -------------------------------------------------------
    # The loops the counters wake and `trigger_bind` triggers.
    disruption_loop: Reconciler  # DisruptionCadence: woken by `changed`
    collection_loop: Reconciler  # DisruptionCadence: woken by `claims_changed`
    bind_loop: Reconciler  # KubeScheduler: `trigger_bind`
    # PodController: pod `key` is pending (created, evicted, its node gone): a batch opens now.
    pod_pending: Callable[[str], None]
    # PodController: pod `key` is pending again, unchanged: the next 10-s requeue brings it.
    pod_requeued: Callable[[str], None]
    # PodController: pod `key` is bound; its last PodUnschedulable reason is forgotten.
    pod_bound: Callable[[str], None]
    # PodController: open or extend the batch window, then run the provisioner.
    trigger_provisioning: Callable[[], None]
    # KubeScheduler: pod `key` left its node (deleted, evicted, released): free its room.
    pod_left: Callable[[str], None]
    # KubeScheduler: bind pod `key` to Node `node` now (a node no NodeClaim owns).
    bind: Callable[[str, str], None]
    # KubeScheduler: Node `node` is gone with its NodeClaim: forget the pods it held.
    node_removed: Callable[[str], None]
    # Kubelet: NodeClaim `claim` launched: its node registers after the launch.
    claim_launched: Callable[[NodeClaim], None]
    # Kubelet: NodeClaim `name` is Initialized.
    claim_initialized: Callable[[str], None]
    # Kubelet: NodeClaim `name` and its Node are gone: stop its node's model.
    claim_removed: Callable[[str], None]
    # Kubelet: pod `pod` bound to Node `node` (of NodeClaim `claim`): pull, start, Ready.
    start_pod: Callable[[Pod, str, str | None], None]
    # Kubelet: the Node the kubelet model registered for NodeClaim `name` (None: none yet).
    registered_node: Callable[[str], str | None]
    # Kubelet: the registered Node of NodeClaim `name` (the model's, or the scenario's Node).
    node_of_claim: Callable[[str], str | None]
    # Kubelet: the NodeClaim of a Node the kubelet model registered (None: the scenario's).
    claim_of_node: Callable[[str], str | None]
    # NodeClaimEvents: what a NodeClaim lifecycle pass did.
    claim_result: Callable[[LifecycleResult], None]
    # NodeClaimEvents: launch NodeClaim `name` of NodePool `nodepool` the provisioner created.
    launch: Callable[[str, str], None]
    # NodeClaimEvents: what a disruption pass decided.
    disrupted: Callable[[DisruptionResult], None]
    # NodeClaimEvents: what a garbage collection pass collected.
    collected: Callable[[Collected], None]
    # The World: whether the cluster has a PodDisruptionBudget (see `cluster_changed`).
    pdbs_present: Callable[[], bool]

    def __init__(self, engine: Engine, recorder: Recorder) -> None:
        self.engine = engine
        self.recorder = recorder
        self.version = 0  # bumped on every change the scheduler sees
        self.claims_touched = 0  # bumped by every change to NodeClaims, Nodes or instances

    @property
    def now(self) -> float:
        return self.engine.now

    def emit(self, type_: str, **fields: Any) -> Event:
        return self.recorder.emit(self.engine.now, type_, **fields)

    def cluster_changed(self, change: ClusterChange) -> None:
        """The cluster's change feed (`Cluster.watch`, wired by the World): every mutation is
        something the scheduler sees; a Node's or NodeClaim's is also what garbage collection
        reads. A pod's readiness alone is read by PodDisruptionBudgets only (their healthy
        pods): it wakes the loops when the cluster has one (`pdbs_present`)."""
        if change is ClusterChange.POD_STATUS and not self.pdbs_present():
            return
        if change is ClusterChange.NODES:
            self.claims_changed()
        self.changed()

    def ec2_changed(self, what: str) -> None:
        """EC2's change feed (`SimulatedEC2.watch`, wired by the World): an instance is what
        garbage collection reads; a pool's capacity or an AMI release changes what a launch or
        drift finds, so the provisioner and the disruption loop look again."""
        if what == "instances":
            self.claims_changed()
        else:
            self.changed()

    def changed(self) -> None:
        """Something the scheduler sees changed: the disruption loop looks again."""
        self.version += 1
        self.engine.wake(self.disruption_loop)  # see `DisruptionCadence._disrupt`

    def claims_changed(self) -> None:
        """A NodeClaim, Node or instance changed (what garbage collection reads)."""
        self.claims_touched += 1
        self.engine.wake(self.collection_loop)  # see `DisruptionCadence._collect`

    def trigger_bind(self) -> None:
        """kube-scheduler looks at the nominated pods again."""
        self.engine.trigger(self.bind_loop)


def instance_type_options(names: list[str]) -> dict[str, Any]:
    """A `NodeClaimCreated` event's instance-type fields: the first 60 options (as many as
    Karpenter's AWS provider sends to CreateFleet, `MAX_LAUNCH_INSTANCE_TYPES`) and how many
    there were, so that a NodePool allowing 564 types does not write 564 names per event."""
    return {
        "instanceTypes": names[:MAX_LAUNCH_INSTANCE_TYPES],
        "instanceTypeCount": len(names),
    }


def pod_exists(cluster: Cluster, key: str) -> bool:
    try:
        cluster.pod(key)
    except KeyError:
        return False
    return True


def created_now(claim: NodeClaim, now: dt.datetime) -> NodeClaim:
    """The NodeClaim as the API server stores it: `creationTimestamp` set (expiration and
    drift count from it)."""
    if claim.metadata.creation_timestamp is not None:
        return claim
    meta = claim.metadata.model_copy(update={"creation_timestamp": now})
    return claim.model_copy(update={"metadata": meta})
