"""A node the cluster already has (or a launched NodeClaim), as the scheduler places pods on it.

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/existingnode.go`
@ 2266468104f3: `NewExistingNode` starts from the cluster state's node (`StateNode`, from
`pkg/controllers/state/statenode.go`) with what is left on it after its pods and the DaemonSet
pods still to come, its labels and hostname as requirements, and whether it is under its
NodePool's consolidateAfter in a consolidation simulation (`isUnderConsolidateAfter`);
`CanAdd` checks taints, host ports, resources, requirements and topology, in that order.

`StateNode` is built by cluster state (`state/`), the disruption controllers and the static
NodePool controller; `ExistingNode` by the scheduler (`scheduler.py`), which tries pods on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import HOSTNAME, NODEPOOL
from gpucap.scheduling.hostports import HostPortUsage
from gpucap.scheduling.podclasses import PERMANENT, TARGET
from gpucap.scheduling.poddata import PodData
from gpucap.scheduling.refusal import Refusal
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources, fits, subtract
from gpucap.scheduling.taints import format_taint, is_known_ephemeral, untolerated
from gpucap.scheduling.topology import Topology, TopologyError

__all__ = ["ExistingNode", "StateNode"]

# What is left on a node only shrinks (pods with a class request nothing negative).
_EXCEEDS_NODE = Refusal("exceeds node resources", PERMANENT)


@dataclass(frozen=True, slots=True)
class StateNode:
    """A node (or a launched NodeClaim without a node yet) as cluster state sees it.

    `allocatable` is what the scheduler may use (for an uninitialized Karpenter node, the
    NodeClaim's values stand in for resources the kubelet has not registered yet); `capacity`
    is what counts against NodePool limits (what the node advertises, so a GPU time-sliced 4
    ways counts 4). `pods` are the pods bound to it.
    """

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    capacity: Mapping[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    pods: tuple[Pod, ...] = ()
    initialized: bool = True
    marked_for_deletion: bool = False

    @property
    def nodepool(self) -> str | None:
        return self.labels.get(NODEPOOL)

    @property
    def managed(self) -> bool:
        return NODEPOOL in self.labels

    @property
    def hostname(self) -> str:
        return self.labels.get(HOSTNAME, self.name)

    def effective_taints(self) -> tuple[Taint, ...]:
        """Taints the scheduler honours: an uninitialized Karpenter node's startup taints and
        known ephemeral taints are expected to go away, so they are ignored."""
        if self.initialized or not self.managed:
            return self.taints
        startup = {(t.key, t.effect) for t in self.startup_taints}
        return tuple(
            t for t in self.taints if not is_known_ephemeral(t) and (t.key, t.effect) not in startup
        )


@dataclass(slots=True, eq=False)
class ExistingNode:
    """A node that already exists (or is launching), with what is left on it."""

    state: StateNode
    remaining: Resources
    requirements: Requirements
    taints: tuple[Taint, ...]
    host_ports: HostPortUsage
    pods: list[Pod] = field(default_factory=list)
    # How many pods it has taken (what a pod class's TARGET refusal was seen at).
    version: int = 0
    # Whether `host_ports` is this node's own (else shared with the scheduler's kept entry
    # and copied before the first pod with host ports is added).
    own_ports: bool = False
    # Karpenter's `isUnderConsolidateAfter`: in a consolidation simulation, the node is inside
    # its NodePool's consolidateAfter, so the scheduler gives it no pod moving off a
    # candidate (`Scheduler._add`; see `SchedulingOptions`).
    under_consolidate_after: bool = False

    @property
    def name(self) -> str:
        return self.state.name

    def can_add(self, pod: Pod, data: PodData, topology: Topology) -> Requirements:
        """The node's requirements with `pod` added, or raises why it refuses (`try_add`)."""
        out = self.try_add(pod, data, topology)
        if isinstance(out, Refusal):
            raise out.error()
        return out

    def try_add(self, pod: Pod, data: PodData, topology: Topology) -> Requirements | Refusal:
        """`can_add` returning its refusal (with the reason's `Hold` for the pod classes, see
        `podclasses.py`): what the scheduler's loop over existing nodes calls."""
        taints = self.taints
        if taints:
            taint = untolerated(taints, pod.spec.tolerations)
            if taint is not None:
                return Refusal(lambda: f"did not tolerate taint {format_taint(taint)}", PERMANENT)
        if data.ports:
            conflict = self.host_ports.conflict(pod, data.ports)
            if conflict:
                return Refusal(f"checking host port usage, {conflict}")
        if not fits(data.requests, self.remaining):
            return _EXCEEDS_NODE
        err = self.requirements.compatible(data.requirements)
        if err is not None:
            return Refusal(err, TARGET)
        reqs = self.requirements.merge(data.requirements)
        try:
            topo = topology.add_requirements(pod, taints, data.strict_requirements, reqs)
        except TopologyError as terr:
            return Refusal(terr, terr.group)
        if topo is reqs:
            return reqs  # no topology group applies (see `NodeClaim.can_add`)
        err = reqs.compatible(topo)
        if err is not None:
            return Refusal(err)
        return reqs.merge(topo)

    def add(self, pod: Pod, data: PodData, reqs: Requirements, topology: Topology) -> None:
        self.pods.append(pod)
        self.version += 1
        self.remaining = subtract(self.remaining, data.requests)
        self.requirements = reqs
        topology.record(pod, self.taints, reqs)
        if data.ports:
            if not self.own_ports:
                self.host_ports = self.host_ports.copy()
                self.own_ports = True
            self.host_ports.add(pod, data.ports)
