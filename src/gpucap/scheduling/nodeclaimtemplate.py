"""A NodePool as the NodeClaims it would make, and the DaemonSet pods each instance type runs.

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go`
@ 2266468104f3 (`NewNodeClaimTemplate`: the pool's requirements and labels, its taints and
startup taints) and the DaemonSet overhead of `scheduler.go` (`buildDaemonOverheadGroups`,
`isDaemonPodCompatible`): instance types that would run the same DaemonSet pods form one
group, whose requests a new NodeClaim of those types must leave room for. `custom_labels` is
`nodeclaim.go`'s labelling of a finished NodeClaim.

Called by the scheduler (`scheduler.py`, through `passcache.py`), the static NodePool
controller, readiness, the disruption room estimate and lint; the kubelet model reads
`daemon_pod`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import (
    EC2NODECLASS,
    HOSTNAME,
    INITIALIZED,
    NODEPOOL,
    REGISTERED,
    WELL_KNOWN_LABELS,
    restricted_label_problem,
)
from gpucap.apis.meta import NamespacedObjectMeta
from gpucap.apis.nodepool import NodePool
from gpucap.apis.workloads import DaemonSet
from gpucap.scheduling import preferences
from gpucap.scheduling.hostports import HostPortUsage, host_ports
from gpucap.scheduling.instancetypes import InstanceType, InstanceTypeTable, Mask
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirement, Requirements
from gpucap.scheduling.resources import Resources, add, pod_requests
from gpucap.scheduling.taints import untolerated

__all__ = [
    "DaemonOverheadGroup",
    "NodeClaimTemplate",
    "build_daemon_groups",
    "custom_labels",
    "daemon_pod",
    "daemon_requirement_keys",
]


@dataclass(slots=True)
class DaemonOverheadGroup:
    """Instance types that would run the same DaemonSet pods, and what those pods need."""

    instance_types: frozenset[str]
    overhead: Resources
    host_ports: HostPortUsage
    # The same instance types as a mask over the template's table (set by the scheduler).
    mask: Mask | None = None


@dataclass(slots=True)
class NodeClaimTemplate:
    """A NodePool turned into the requirements, labels and taints of the NodeClaims it makes."""

    nodepool: NodePool
    requirements: Requirements
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    instance_types: list[InstanceType]
    daemon_groups: list[DaemonOverheadGroup] = field(default_factory=list)
    table: InstanceTypeTable | None = None

    @property
    def name(self) -> str:
        return self.nodepool.name

    @classmethod
    def from_nodepool(cls, np: NodePool) -> NodeClaimTemplate:
        spec = np.spec.template.spec
        labels = {
            **np.spec.template.metadata.labels,
            NODEPOOL: np.name,
            EC2NODECLASS: spec.node_class_ref.name,
        }
        reqs = (
            Requirements.from_node_selector(spec.requirements)
            .merge(Requirements.from_labels(labels))
            .add(
                Requirement.new(REGISTERED, "In", ["true"]),
                Requirement.new(INITIALIZED, "In", ["true"]),
            )
        )
        return cls(
            nodepool=np,
            requirements=reqs,
            labels=labels,
            taints=tuple(t.as_taint() for t in spec.taints),
            startup_taints=tuple(t.as_taint() for t in spec.startup_taints),
            instance_types=[],
        )


def _daemon_compatible(template: NodeClaimTemplate, it: InstanceType, pod: Pod) -> bool:
    """Karpenter's `isDaemonPodCompatible`: tolerates the pool's taints (PreferNoSchedule always
    tolerated for daemons), and its strict requirements fit the pool and the type, dropping
    required node-affinity terms one at a time if needed."""
    pod = preferences.tolerate_prefer_no_schedule(pod) or pod
    if untolerated(template.taints, pod.spec.tolerations) is not None:
        return False
    current: Pod | None = pod
    while current is not None:
        reqs = pod_requirements(current, strict=True)
        if (
            template.requirements.is_compatible(reqs, ALLOW_UNDEFINED_WELL_KNOWN)
            and it.requirements.intersects(reqs) is None
        ):
            return True
        current = preferences.drop_required_node_term(current)
    return False


def daemon_pod(ds: DaemonSet) -> Pod:
    """The pod a DaemonSet would run on a node (its template, named after the DaemonSet)."""
    # The template's metadata (labels, annotations, ...) as a pod's: named after the DaemonSet,
    # in its namespace.
    template = {**dict(ds.spec.template.metadata), "name": ds.metadata.name}
    meta = NamespacedObjectMeta(**{**template, "namespace": ds.metadata.namespace})
    return Pod(metadata=meta, spec=ds.spec.template.spec)


def daemon_requirement_keys(pod: Pod) -> set[str]:
    """Every key `_daemon_compatible` may compare with a pool's requirements for this pod."""
    keys: set[str] = set()
    current: Pod | None = preferences.tolerate_prefer_no_schedule(pod) or pod
    while current is not None:
        keys.update(pod_requirements(current, strict=True))
        current = preferences.drop_required_node_term(current)
    return keys


def build_daemon_groups(
    template: NodeClaimTemplate, daemons: Sequence[Pod]
) -> list[DaemonOverheadGroup]:
    """The template's instance types grouped by the DaemonSet pods each would run (Karpenter's
    `buildDaemonOverheadGroups`), in the order of the sorted pod keys of each group."""
    groups: dict[tuple[str, ...], DaemonOverheadGroup] = {}
    members: dict[tuple[str, ...], list[str]] = {}
    for it in template.instance_types:
        compatible = [p for p in daemons if _daemon_compatible(template, it, p)]
        key = tuple(sorted(p.key for p in compatible))
        if key not in groups:
            usage = HostPortUsage()
            for p in compatible:
                usage.add(p, host_ports(p))
            overhead = add(*(add(pod_requests(p.spec), {"pods": 1}) for p in compatible))
            groups[key] = DaemonOverheadGroup(frozenset(), overhead, usage)
            members[key] = []
        members[key].append(it.name)
    for key, group in groups.items():
        group.instance_types = frozenset(members[key])
    return [groups[k] for k in sorted(groups)]


def custom_labels(reqs: Requirements) -> dict[str, str]:
    """Karpenter labels a new node with one value of every non-well-known requirement."""
    out: dict[str, str] = {}
    for key, req in sorted(reqs.items()):
        if key in WELL_KNOWN_LABELS or key in (HOSTNAME, REGISTERED, INITIALIZED):
            continue
        if restricted_label_problem(key):
            continue
        value = req.any()
        if value:
            out[key] = value
    return out
