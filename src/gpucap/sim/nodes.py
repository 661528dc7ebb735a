"""The kubelet in the simulator: what a launched node does by itself, from registration to its
pods turning Ready, and the node going when EC2 reclaims its instance.

Per NodeClaim the model keeps a `_NodeSim`. After the launch (`launched`, heard from the
NodeClaim events through the bus) the node registers `launch + registration` later
(`registering_node`; the Node takes the NodeClaim's name); its startup taints go
`daemonset_start` after that (gpucap has no model of which agent removes them); the device plugin
(`kubelet.device_plugin_for`) advertises GPUs x time-slicing replicas after its delay; a bound
pod's images are pulled one at a time per node (an image already on the node is not pulled
again), then the container starts and the pod's start-up time runs, then PodReady. A reclaimed
instance stops the kubelet: its Node turns NotReady after the node lifecycle controller's grace
period. Each change to the Node goes to Karpenter's NodeClaim lifecycle controller
(`Lifecycle.register` / `node_changed`, Karpenter's `nodeclaim/lifecycle` registration and
initialization), and the DaemonSet controller (`sim/daemonsets.py`) is told when a Node registers,
loses its startup taints or is initialized. The models (plugins, pull times, start-up) are
`sim/kubelet.py`'s; this module plays them on the engine. Kubernetes' kubelet and
kube-controller-manager's node lifecycle controller are what it stands for.

Built by the `World` (`sim/world.py`), which wires the bus's `claim_launched`,
`claim_initialized`, `claim_removed`, `start_pod` and the node queries here, and calls
`start_plugins` when device-plugin objects are applied and `reclaimed` when EC2 takes a spot
instance back. It tells the others through the bus (`sim/bus.py`): lifecycle results
(`claim_result`), the binder (`trigger_bind`), the provisioner (`trigger_provisioning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucap.apis.bottlerocket import BottlerocketUserDataError, device_plugin_config
from gpucap.apis.core import Pod, PodCondition
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.gpuoperator import DevicePluginConfig
from gpucap.apis.labels import INSTANCE_TYPE
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import base_units
from gpucap.cloudprovider.aws.coldstart import Timings
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.nodeclaim.registering import advertise, registering_node, with_ready
from gpucap.sim.bus import GPU_KEYS, PRIORITY_KUBELET, Bus
from gpucap.sim.daemonsets import DaemonSetController
from gpucap.sim.engine import Timer
from gpucap.sim.kubelet import (
    DevicePlugin,
    PullBounds,
    advertised_gpus,
    device_plugin_for,
    image_pull_seconds,
    pull_bounds,
    startup_seconds,
)
from gpucap.sim.scenario import LoadedScenario, ScenarioError
from gpucap.state.cluster import Cluster

__all__ = ["NODE_MONITOR_GRACE_S", "Kubelet"]

# kube-controller-manager `--node-monitor-grace-period` (50 s since Kubernetes 1.32, 40 s
# before): how long after a kubelet's last heartbeat its Node stops being Ready.
NODE_MONITOR_GRACE_S = 50.0


class Kubelet:
    """The kubelet of every launched node (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        lifecycle: Lifecycle,
        daemonsets: DaemonSetController,
        *,
        scenario: LoadedScenario,
        timings: Timings,
        images: dict[str, tuple[int, int]],
        catalog: Catalog,
        nodeclasses: dict[str, EC2NodeClass],
    ) -> None:
        self.bus = bus
        self.engine = bus.engine
        self.cluster = cluster
        self.lifecycle = lifecycle
        self.daemonsets = daemonsets
        self.scenario = scenario
        self.timings = timings
        self.images = images
        self.catalog = catalog
        self.nodeclasses = nodeclasses
        self._nodes: dict[str, _NodeSim] = {}  # NodeClaim name -> kubelet model

    # ---- the node -----------------------------------------------------------------------------
    def launched(self, claim: NodeClaim) -> None:
        """NodeClaim `claim` launched: its node registers `launch + registration` from now."""
        instance_type = claim.metadata.labels.get(INSTANCE_TYPE, "")
        capacity = base_units(claim.status.capacity)
        gpus = sum(capacity.get(r, 0) for r in GPU_KEYS)
        nodeclass = self.nodeclasses.get(claim.spec.node_class_ref.name)
        sim = _NodeSim(
            claim=claim.name,
            physical_gpus=gpus,
            bounds=pull_bounds(instance_type, nodeclass, self.catalog),
            ami_family=_ami_family(nodeclass),
        )
        self._nodes[claim.name] = sim
        self.engine.after(
            self.timings.launch + self.timings.registration,
            lambda: self._register(claim.name),
            priority=PRIORITY_KUBELET,
            label=f"kubelet {claim.name} registers",
        )

    def start_plugins(self) -> None:
        """A device plugin applied after nodes registered starts on them now."""
        for sim in self._nodes.values():
            if sim.node is not None and sim.plugin is None and not sim.initialized:
                self._start_plugin(sim)

    def removed(self, name: str) -> None:
        """NodeClaim `name` and its Node are gone: its device plugin never comes up."""
        sim = self._nodes.pop(name, None)
        if sim is not None and sim.plugin_timer is not None:
            self.engine.cancel(sim.plugin_timer)

    def _register(self, name: str) -> None:
        claim = self.cluster.node_claim(name)
        sim = self._nodes.get(name)
        if claim is None or sim is None or claim.metadata.deletion_timestamp is not None:
            return
        node = registering_node(claim)
        sim.node = node.metadata.name
        result = self.lifecycle.register(node)
        self.daemonsets.node_changed(sim.node)
        self._start_plugin(sim)
        self.bus.emit(
            "NodeRegistered",
            nodeClaim=name,
            node=sim.node,
            devicePlugin=sim.plugin.source if sim.plugin is not None else None,
        )
        if result is not None:
            self.bus.claim_result(result)
        startup = claim.spec.startup_taints
        if startup:
            self.engine.after(
                self.timings.daemonset_start,
                lambda: self._remove_startup_taints(name),
                priority=PRIORITY_KUBELET,
                label=f"startup taints of {name}",
            )
        self.bus.trigger_bind()

    def _start_plugin(self, sim: _NodeSim) -> None:
        if sim.node is None or sim.physical_gpus <= 0:
            return
        node = self.cluster.node(sim.node)
        if node is None:
            return
        nodeclass = self.nodeclasses.get(self._claim_class(sim.claim))
        plugin = device_plugin_for(
            node.metadata.labels,
            [t for t in node.spec.taints if t.effect in ("NoSchedule", "NoExecute")],
            objects=self.cluster.objects(),
            addons=self.scenario.addons,
            ami_family=sim.ami_family,
            timings=self.timings,
            ami_config=_bottlerocket_config(nodeclass),
            memos=self.cluster.memos,
        )
        if plugin is None:
            return
        sim.plugin = plugin
        sim.plugin_timer = self.engine.after(
            plugin.delay,
            lambda: self._advertise(sim.claim),
            priority=PRIORITY_KUBELET,
            label=f"device plugin on {sim.node}",
        )

    def _claim_class(self, name: str) -> str:
        claim = self.cluster.node_claim(name)
        return claim.spec.node_class_ref.name if claim is not None else ""

    def _advertise(self, name: str) -> None:
        sim = self._nodes.get(name)
        if sim is None or sim.node is None:
            return
        node = self.cluster.node(sim.node)
        if node is None:
            return
        node = advertise(node, advertised_gpus(sim.physical_gpus, sim.plugin))
        result = self.lifecycle.node_changed(node)
        if result is not None:
            self.bus.claim_result(result)
        self.bus.trigger_bind()
        self.bus.trigger_provisioning()

    def _remove_startup_taints(self, name: str) -> None:
        sim = self._nodes.get(name)
        claim = self.cluster.node_claim(name)
        if sim is None or sim.node is None or claim is None:
            return
        node = self.cluster.node(sim.node)
        if node is None:
            return
        startup = [t.as_taint() for t in claim.spec.startup_taints]
        taints = [
            t
            for t in node.spec.taints
            if not any(t.key == s.key and t.effect == s.effect for s in startup)
        ]
        node = node.model_copy(update={"spec": node.spec.model_copy(update={"taints": taints})})
        result = self.lifecycle.node_changed(node)
        self.daemonsets.node_changed(sim.node)
        if result is not None:
            self.bus.claim_result(result)
        self.bus.trigger_bind()

    def initialized(self, name: str) -> None:
        sim = self._nodes.get(name)
        if sim is None or sim.initialized or sim.node is None:
            return
        sim.initialized = True
        self.daemonsets.node_changed(sim.node)  # labelled initialized
        node = self.cluster.node(sim.node)
        advertised = {}
        if node is not None:
            allocatable = base_units(node.status.allocatable)
            advertised = {r: allocatable[r] for r in sorted(allocatable) if r in GPU_KEYS}
        self.bus.emit("NodeInitialized", nodeClaim=name, node=sim.node, gpusAdvertised=advertised)
        self.bus.trigger_provisioning()

    # ---- the pods on the node -----------------------------------------------------------------
    def start_pod(self, pod: Pod, node_name: str, claim: str | None) -> None:
        sim = self._nodes.get(claim) if claim is not None else None
        now = self.bus.now
        ready_images = now
        pull = 0.0
        for container in pod.spec.containers:
            image = container.image or ""
            if sim is None:
                continue
            have = sim.images.get(image)
            if have is None:
                start = max(now, sim.pull_free_at)
                seconds = image_pull_seconds(image, sim.bounds, self.images)
                have = start + seconds
                sim.pull_free_at = have
                sim.images[image] = have
            ready_images = max(ready_images, have)
        pull = ready_images - now
        try:
            load = startup_seconds(pod, self.timings)
        except ValueError as err:
            raise ScenarioError(f"{self.scenario.path}: {err}") from err
        ready = ready_images + self.timings.container_start + load
        self.engine.at(
            ready,
            lambda: self._ready(pod.key, node_name, pull, load),
            priority=PRIORITY_KUBELET,
            label=f"pod {pod.key} ready",
        )

    def _ready(self, key: str, node_name: str, pull: float, load: float) -> None:
        try:
            pod = self.cluster.pod(key)
        except KeyError:
            return
        if pod.spec.node_name != node_name:
            return
        ready = PodCondition(type="Ready", status="True")
        conditions = [c for c in pod.status.conditions if c.type != "Ready"]
        status = pod.status.model_copy(update={"conditions": [*conditions, ready]})
        self.cluster.add_pod(pod.model_copy(update={"status": status}))
        self.bus.emit("PodReady", pod=key, node=node_name, pullSeconds=pull, loadSeconds=load)

    # ---- what the others ask -----------------------------------------------------------------
    def node_of_claim(self, claim_name: str) -> str | None:
        """The registered Node of a NodeClaim: the kubelet model's, or for a NodeClaim the
        scenario applied with its Node, the Node with its provider ID."""
        sim = self._nodes.get(claim_name)
        if sim is not None:
            return sim.node
        claim = self.cluster.node_claim(claim_name)
        if claim is None:
            return None
        nodes = self.cluster.nodes_for_claim(claim)
        return nodes[0].metadata.name if nodes else None

    def claim_of_node(self, node_name: str) -> str | None:
        """The NodeClaim of a node the kubelet model registered (its Node takes the NodeClaim's
        name: `registering_node`); None for a Node the scenario applied."""
        sim = self._nodes.get(node_name)
        return sim.claim if sim is not None and sim.node == node_name else None

    # ---- the instance gone ------------------------------------------------------------------
    def reclaimed(self, name: str, reason: str) -> None:
        """EC2 terminated NodeClaim `name`'s instance behind Karpenter's back (a spot instance
        at the end of its two-minute warning): billing stops and the kubelet stops with it,
        so its Node turns NotReady once the node lifecycle controller's grace period has
        passed without a heartbeat. A drain that a PodDisruptionBudget or do-not-disrupt
        holds does not keep the node: Karpenter's termination finishes a NotReady node whose
        instance is gone without draining (`node/termination/controller.go`; its suite:
        "should delete nodes with no underlying instance even if not fully drained"), and
        its pods pend again. Nothing happens for a NodeClaim already gone."""
        sim = self._nodes.get(name)
        if sim is None:
            return
        self.bus.emit("InstanceTerminated", nodeClaim=name, node=sim.node, reason=reason)
        self.engine.after(
            NODE_MONITOR_GRACE_S,
            lambda: self._node_lost(name),
            priority=PRIORITY_KUBELET,
            label=f"node of {name} stops reporting",
        )

    def _node_lost(self, name: str) -> None:
        """The Node of NodeClaim `name` stopped reporting: NotReady (see `reclaimed`)."""
        sim = self._nodes.get(name)
        node = self.cluster.node(sim.node) if sim is not None and sim.node else None
        if sim is None or node is None or not node.is_ready:
            return
        self.bus.emit("NodeNotReady", nodeClaim=name, node=sim.node, reason="InstanceTerminated")
        result = self.lifecycle.node_changed(with_ready(node, False))
        if result is not None:
            self.bus.claim_result(result)

    def registered_node(self, name: str) -> str | None:
        """The Node the kubelet model registered for NodeClaim `name` (None: none, or not yet)."""
        sim = self._nodes.get(name)
        return sim.node if sim is not None else None


@dataclass(slots=True)
class _NodeSim:
    """What the kubelet model keeps per launched NodeClaim."""

    claim: str
    physical_gpus: int
    bounds: PullBounds
    ami_family: str | None
    node: str | None = None
    plugin: DevicePlugin | None = None
    plugin_timer: Timer | None = None
    pull_free_at: float = 0.0
    images: dict[str, float] = field(default_factory=dict)  # image -> when it is on the node
    initialized: bool = False


def _ami_family(nodeclass: EC2NodeClass | None) -> str | None:
    if nodeclass is None:
        return None
    for term in nodeclass.spec.ami_selector_terms:
        if term.alias:
            return term.alias.split("@", 1)[0]
    return None


def _bottlerocket_config(nodeclass: EC2NodeClass | None) -> DevicePluginConfig | None:
    """The device-plugin config Bottlerocket's userData gives (None: not Bottlerocket, or
    userData it cannot read, which lint reports as AMI004)."""
    if _ami_family(nodeclass) != "bottlerocket" or nodeclass is None:
        return None
    try:
        return device_plugin_config(nodeclass.spec.user_data)
    except BottlerocketUserDataError:
        return None
