"""Karpenter's scheduling simulation: pending pods in, planned NodeClaims and reasons out.

This is `Scheduler.Solve` of `kubernetes-sigs/karpenter:pkg/controllers/provisioning/scheduling/`
(`scheduler.go`, `nodeclaim.go`, `nodeclaimtemplate.go`, `existingnode.go`, `queue.go`), pure:
- pods are queued by CPU then memory request (descending), then creation time and UID;
- each pod goes to the first existing node that takes it (initialized first, then by name), else
  to the emptiest in-flight NodeClaim that takes it, else to a new NodeClaim from the first
  NodePool (by weight, then name descending) that can take it; a pod that fails is relaxed one
  preference at a time and retried, and requeued when nothing is left to relax; the loop stops
  when a whole pass makes no progress;
- a NodeClaim keeps every instance type that still fits all its pods (it does not pick one);
  NodePool limits are checked against instance-type capacity and reduced pessimistically by the
  largest option of each new NodeClaim;
- after the loop each NodeClaim is finalized: its options ordered by price and cut to 600,
  minValues re-checked, and DaemonSet overhead added to its requests.

Where Go leaves an order undefined (map iteration, unstable sorts, random `Any()`), gpucap uses
a total order (names, sorted domains), so the same input gives the same plan every time.
Called by `gpucap plan`, the provisioner and consolidation.
"""

from __future__ import annotations

import bisect
import datetime as dt
import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import (
    CAPACITY_TYPE,
    EC2NODECLASS,
    HOSTNAME,
    INITIALIZED,
    INSTANCE_TYPE,
    NODEPOOL,
    REGISTERED,
    WELL_KNOWN_LABELS,
    ZONE,
    restricted_label_problem,
)
from gpucap.apis.nodepool import NodePool
from gpucap.apis.quantity import format_base_units
from gpucap.apis.workloads import DaemonSet
from gpucap.runtime.memo import IdentityMemo
from gpucap.scheduling import explanation, preferences
from gpucap.scheduling.hostports import HostPort, HostPortUsage, host_ports
from gpucap.scheduling.instancetypes import (
    MAX_INSTANCE_TYPES,
    InstanceType,
    InstanceTypeTable,
    satisfies_min_values,
)
from gpucap.scheduling.podclasses import PERMANENT, TARGET, Hold, Refusals, class_key
from gpucap.scheduling.requirements import (
    ALLOW_UNDEFINED_WELL_KNOWN,
    IncompatibleError,
    Requirement,
    Requirements,
)
from gpucap.scheduling.resources import Resources, add, fits, pod_requests, subtract
from gpucap.scheduling.taints import format_taint, is_known_ephemeral, untolerated
from gpucap.scheduling.topology import (
    CountedPod,
    DomainGroups,
    ThroughTypesCache,
    Topology,
    TopologyError,
    build_domain_groups,
    has_anti_affinity,
)

__all__ = [
    "ExistingNode",
    "NodeClaim",
    "NodeClaimTemplate",
    "PassCache",
    "PoolInput",
    "Refusal",
    "Results",
    "SchedulingOptions",
    "StateNode",
    "solve",
]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# provisioner.go: the decision recorded for every pending pod when no NodePool is dynamic
# (not static), Ready and managed by the cloud provider (`ErrNodePoolsNotFound`'s text is
# "no nodepools found"; the pod decision and the log line say "dynamic" since v1.9.0).
NO_DYNAMIC_NODEPOOLS = "no dynamic nodepools found"
# scheduler.go `add`: dynamic NodePools exist but none kept an instance type.
NO_TEMPLATES = "nodepool requirements filtered out all available instance types"
# scheduler.go `addToNewNodeClaim`: a NodePool's limits leave no room for a new NodeClaim.
NODE_LIMITS_EXHAUSTED = "node limits have been exhausted for nodepool"
TYPES_EXCEED_LIMITS = "all available instance types exceed limits for nodepool"
_DOES_NOT_EXIST_NODEPOOL = Requirement.new(NODEPOOL, "DoesNotExist")
# A pod class starts keeping its candidate NodeClaims after a scan that tried this many.
_KEEP_CANDIDATES = 16


class SchedulingError(Exception):
    """A pod cannot go where it was tried; the message is Karpenter's wording where it has one.

    Built lazily (from a string, another exception or a function): most failures are a pod
    not fitting one of many planned nodes, and their messages are never shown.
    """

    def __init__(self, message: str | Exception | Callable[[], str], hold: Hold = None) -> None:
        super().__init__()
        self._message = message
        # Why the target refused, for the pod classes (`podclasses.py`); None: not kept.
        self.hold = hold

    def __str__(self) -> str:
        m = self._message
        if isinstance(m, str):
            return m
        if isinstance(m, Exception):
            return str(m)
        return m()


class Refusal:
    """Why a target refused a pod, returned rather than raised where the scheduler tries
    every pod on many targets (`ExistingNode.try_add`): most tries fail, and their messages
    are never shown, so no exception is built and unwound per try. `why` and `hold` are
    `SchedulingError`'s; `error()` is the exception the raising API (`can_add`) raises."""

    __slots__ = ("hold", "why")

    def __init__(self, why: str | Exception | Callable[[], str], hold: Hold = None) -> None:
        self.why = why
        self.hold = hold

    def error(self) -> SchedulingError:
        return SchedulingError(self.why, self.hold)

    def __str__(self) -> str:
        return str(self.error())


# What is left on a node only shrinks (pods with a class request nothing negative).
_EXCEEDS_NODE = Refusal("exceeds node resources", PERMANENT)


# ---- inputs -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PoolInput:
    """A Ready NodePool and the instance types its node class offers (from the cloud provider)."""

    nodepool: NodePool
    instance_types: Sequence[InstanceType]


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


@dataclass(frozen=True, slots=True)
class SchedulingOptions:
    """Karpenter operator settings that change scheduling (`pkg/operator/options`)."""

    preference_policy: Literal["Respect", "Ignore"] = "Respect"
    min_values_policy: Literal["Strict", "BestEffort"] = "Strict"
    max_instance_types: int = MAX_INSTANCE_TYPES


# ---- shared across schedulers ----------------------------------------------------------------
_CACHE_MAX = 64
# Existing-node entries: one per label mapping (node) seen; cleared past this many.
_NODE_CACHE_MAX = 4096
# Bound pods' entries: one per pod object seen; cleared past this many.
_POD_CACHE_MAX = 16384

_DaemonKey = tuple[int, ...]
# A DaemonSet tuple's serial number in its `PassCache` (never reused; 0 without a cache).
_GroupsKey = tuple[int, tuple[Taint, ...], Requirements, int]


@dataclass(slots=True)
class PassCache:
    """What a caller building one `Scheduler` per pass over the same type tuples may share
    between them (the simulator's `Provisioner`). Without one (plan, tests) every scheduler
    computes its own, as before. Shared, each built once and then only read:

    - each type tuple's requirement list (so `build_domain_groups` recognises it by identity),
      the domains through it, and the whole `build_domain_groups` answer per (pool
      requirements, pool taints, type list) sequence;
    - each type tuple's `InstanceTypeTable` and the table of each NodePool's filtered subset,
      keyed on the tuple's identity (and the subset's mask): a table is a function of its
      types, and its memos (compatibility per requirement set, offerings per zone and capacity
      type) are functions of the types too, so they stay true across passes;
    - DaemonSet overhead groups per (table, pool taints, pool requirements on the DaemonSets'
      keys, DaemonSet objects): what `_daemon_groups` computes from exactly those;
    - the DaemonSets' pods, per tuple of DaemonSet objects;
    - an existing node's requirements per (label mapping, hostname), its DaemonSet requests
      per (label mapping, effective taints, DaemonSet objects), and per node name while its
      pods are the same objects: its bound pods' requests, keys, host ports and (while its
      labels are the same mapping and its taints equal) the pods as the topology counts them:
      the only inputs each reads. So a scheduler over the same nodes, or the same nodes less
      a few (a consolidation simulation), builds its existing nodes from these;
    - per node name while the `StateNode` is the same object (the cluster keeps unchanged
      ones) and the DaemonSets the same: all of the above for that node (`_NodeEntry`);
    - per bound pod object: what it requests (plus `pods: 1`), whether a DaemonSet owns it,
      its key and host ports (`_BoundPod`), so a node whose pods changed reads only its new
      pods again (a node gains or loses a pod at a time, and the rest are the same objects);
    - each NodePool's filtered type list per (table, pool requirements, minValues policy);
    - a new type tuple whose requirements are the same objects as a kept list's shares that
      list (so the domains through it and the domain groups are not rebuilt).

    Keys on identity hold the object they were taken from, so an id cannot be reused while the
    entry lives. Objects are never changed after they are built (applied objects are replaced,
    not edited; the cloud provider returns a new tuple when the types change). Each map is
    cleared when it grows past its bound (entries for types or nodes no longer in use).
    """

    type_reqs: dict[int, tuple[Sequence[InstanceType], list[Requirements]]] = field(
        default_factory=dict
    )
    through_types: ThroughTypesCache = field(default_factory=dict)
    tables: dict[int, tuple[Sequence[InstanceType], InstanceTypeTable, Mask]] = field(
        default_factory=dict
    )
    subtables: dict[tuple[int, bytes], tuple[Sequence[InstanceType], InstanceTypeTable]] = field(
        default_factory=dict
    )
    groups: dict[_GroupsKey, tuple[InstanceTypeTable, list[DaemonOverheadGroup]]] = field(
        default_factory=dict
    )
    daemons: dict[_DaemonKey, tuple[Sequence[DaemonSet], list[Pod], frozenset[str], int]] = field(
        default_factory=dict
    )
    serial: int = 0
    node_reqs: dict[tuple[tuple[tuple[str, str], ...], str], tuple[Requirements, Requirements]] = (
        field(default_factory=dict)
    )
    node_daemons: dict[tuple[tuple[tuple[str, str], ...], tuple[Taint, ...], int], Resources] = (
        field(default_factory=dict)
    )
    node_pods: dict[str, _NodePods] = field(default_factory=dict)
    node_entries: dict[str, _NodeEntry] = field(default_factory=dict)
    # Per bound pod object (frozen: the same object, the same answers; `Scheduler._bound_pod`).
    bound_pods: IdentityMemo[Pod, _BoundPod] = field(
        default_factory=lambda: IdentityMemo(_BoundPod.of, size=_POD_CACHE_MAX)
    )
    pool_types: dict[
        tuple[int, Requirements, bool],
        tuple[InstanceTypeTable, tuple[bytes, tuple[InstanceType, ...]] | str],
    ] = field(default_factory=dict)
    domains: dict[
        tuple[tuple[Requirements, tuple[Taint, ...], int], ...],
        tuple[tuple[Sequence[Requirements], ...], DomainGroups],
    ] = field(default_factory=dict)
    pool_parts: IdentityMemo[NodePool, _PoolParts] = field(
        default_factory=lambda: IdentityMemo(_PoolParts.of, size=_CACHE_MAX)
    )

    def parts_of(self, nodepool: NodePool) -> _PoolParts:
        """`_PoolParts.of(nodepool)`, kept per NodePool object (applied objects are replaced,
        never edited, so the same object gives the same parts)."""
        return self.pool_parts.lookup(nodepool)

    def domain_groups_of(
        self, pools: Sequence[tuple[Requirements, tuple[Taint, ...], Sequence[Requirements]]]
    ) -> DomainGroups:
        """`build_domain_groups(pools)`, shared by the passes whose pools have the same
        requirements and taints over the same type lists (the `Topology` only reads it)."""
        key = tuple((reqs, taints, id(types)) for reqs, taints, types in pools)
        hit = self.domains.get(key)
        if hit is not None and all(
            a is b for a, b in zip(hit[0], (types for _, _, types in pools), strict=True)
        ):
            return hit[1]
        groups = build_domain_groups(pools, cache=self.through_types)
        if len(self.domains) >= _CACHE_MAX:
            self.domains.clear()
        self.domains[key] = (tuple(types for _, _, types in pools), groups)
        return groups

    def requirements_of(self, types: Sequence[InstanceType]) -> list[Requirements]:
        hit = self.type_reqs.get(id(types))
        if hit is not None and hit[0] is types:
            return hit[1]
        reqs = [it.requirements for it in types]
        if not isinstance(types, tuple):
            return reqs  # a list may change under us: no sharing
        # A new tuple of types whose requirements are the same objects as a kept list's (the
        # cloud provider's new tuple after an offering changed: the requirements are kept)
        # gets that list, so the domains and domain groups built through it are shared too.
        for _, kept in self.type_reqs.values():
            if len(kept) == len(reqs) and all(a is b for a, b in zip(kept, reqs, strict=True)):
                reqs = kept
                break
        if len(self.type_reqs) >= _CACHE_MAX:
            self.type_reqs.clear()
        self.type_reqs[id(types)] = (types, reqs)
        return reqs

    def table_of(self, types: Sequence[InstanceType]) -> tuple[InstanceTypeTable, Mask] | None:
        hit = self.tables.get(id(types))
        return (hit[1], hit[2]) if hit is not None and hit[0] is types else None

    def keep_table(self, types: Sequence[InstanceType], table: InstanceTypeTable, m: Mask) -> None:
        if not isinstance(types, tuple):
            return
        if len(self.tables) >= _CACHE_MAX:
            self.tables.clear()
        self.tables[id(types)] = (types, table, m)

    def subtable_of(self, types: Sequence[InstanceType], mask: bytes) -> InstanceTypeTable | None:
        hit = self.subtables.get((id(types), mask))
        return hit[1] if hit is not None and hit[0] is types else None

    def keep_subtable(
        self, types: Sequence[InstanceType], mask: bytes, table: InstanceTypeTable
    ) -> None:
        if not isinstance(types, tuple):
            return
        if len(self.subtables) >= _CACHE_MAX:
            self.subtables.clear()
            self.groups.clear()  # keyed on the identity of tables that may now be freed
        self.subtables[(id(types), mask)] = (types, table)


@dataclass(frozen=True, slots=True)
class _PoolParts:
    """What a `Scheduler` derives from a NodePool alone: its template's requirements, labels
    and taints, and the requirements its topology domains come from. Only read (a template
    copies the labels)."""

    nodepool: NodePool
    requirements: Requirements
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    domain_requirements: Requirements

    @classmethod
    def of(cls, nodepool: NodePool) -> _PoolParts:
        template = NodeClaimTemplate.from_nodepool(nodepool)
        spec = nodepool.spec.template
        return cls(
            nodepool,
            template.requirements,
            template.labels,
            template.taints,
            template.startup_taints,
            Requirements.from_node_selector(spec.spec.requirements).merge(
                Requirements.from_labels(spec.metadata.labels)
            ),
        )


@dataclass(frozen=True, slots=True)
class _BoundPod:
    """What a `Scheduler` reads of one bound pod (see `PassCache`); only read."""

    pod: Pod
    requests: Resources  # plus `pods: 1`
    daemon: bool  # owned by a DaemonSet
    key: str
    ports: tuple[HostPort, ...]

    @classmethod
    def of(cls, pod: Pod) -> _BoundPod:
        return cls(
            pod,
            add(pod_requests(pod.spec), {"pods": 1}),
            any(o.kind == "DaemonSet" for o in pod.metadata.owner_references),
            pod.key,
            host_ports(pod),
        )


@dataclass(frozen=True, slots=True)
class _NodePods:
    """What a `Scheduler` derives from a node's bound pods (see `PassCache`)."""

    pods: tuple[Pod, ...]
    bound: Resources  # what they all request, each plus `pods: 1`
    daemons: Resources  # the same for the DaemonSet-owned ones
    keys: tuple[str, ...]
    ports: dict[str, tuple[HostPort, ...]]  # the non-empty host ports, by pod key
    # The pods as the topology counts them, for the labels and taints they were built with,
    # and those of them whose pod has an anti-affinity (the topology's inverse groups).
    counted: list[
        tuple[Mapping[str, str], tuple[Taint, ...], tuple[CountedPod, ...], tuple[CountedPod, ...]]
    ]


@dataclass(frozen=True, slots=True)
class _NodeEntry:
    """An existing node as a `Scheduler` starts from it: its bound pods' data, those pods as
    the topology counts them, what is left on it (less the DaemonSets that would still come),
    its requirements and effective taints, and what every scheduler reads of the node: its
    hostname, NodePool, place in the existing-node order and host ports. Only read (each
    `ExistingNode` replaces `remaining` and copies the host ports before adding to them)."""

    state: StateNode
    daemon_serial: int
    pods: _NodePods
    counted: tuple[CountedPod, ...]
    # Those of `counted` whose pod has an anti-affinity (the topology's inverse groups).
    inverse: tuple[CountedPod, ...]
    remaining: Resources
    requirements: Requirements
    taints: tuple[Taint, ...]
    hostname: str
    nodepool: str  # "" for a node of no NodePool
    # Initialized nodes first, then by name: "0" or "1" and the name, a string that sorts
    # as `(not initialized, name)` does (the same first character compares the names) and
    # compares faster than the tuple.
    order: str
    host_ports: HostPortUsage


_ENTRY_ORDER = operator.attrgetter("order")


# ---- per-pod data -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PodData:
    requests: Resources
    requirements: Requirements
    strict_requirements: Requirements
    # The pod's host ports, read once: every target the pod is tried on asks for them.
    ports: tuple[HostPort, ...]


def pod_requirements(pod: Pod, *, strict: bool = False) -> Requirements:
    """Karpenter's `NewPodRequirements`: nodeSelector, the heaviest preferred node-affinity term
    (unless `strict`), and the first required node-affinity term."""
    reqs = Requirements.from_labels(pod.spec.node_selector)
    aff = pod.spec.affinity
    if aff is None or aff.node_affinity is None:
        return reqs
    na = aff.node_affinity
    preferred = na.preferred_during_scheduling_ignored_during_execution
    if not strict and preferred:
        heaviest = sorted(preferred, key=lambda t: -t.weight)[0]
        reqs = reqs.merge(Requirements.from_node_selector(heaviest.preference.match_expressions))
    required = na.required_during_scheduling_ignored_during_execution
    if required is not None and required.node_selector_terms:
        first = required.node_selector_terms[0]
        reqs = reqs.merge(Requirements.from_node_selector(first.match_expressions))
    return reqs


def _pod_data(pod: Pod, options: SchedulingOptions) -> PodData:
    strict = pod_requirements(pod, strict=True)
    aff = pod.spec.affinity
    preferred = (
        aff is not None
        and aff.node_affinity is not None
        and bool(aff.node_affinity.preferred_during_scheduling_ignored_during_execution)
    )
    # Without preferred node-affinity terms both readings are the same set.
    requirements = (
        pod_requirements(pod) if preferred and options.preference_policy != "Ignore" else strict
    )
    requests = pod_requests(pod.spec)  # a new dict: Karpenter's `pods: 1` is added in place
    requests["pods"] = requests.get("pods", 0) + 1
    return PodData(requests, requirements, strict, host_ports(pod))


def validate_pod(pod: Pod) -> str | None:
    """Why Karpenter would not consider a pending pod at all (`provisioner.go: Validate`)."""
    if pod.spec.resource_claims:
        return (
            "pod has Dynamic Resource Allocation requirements that are not yet supported by "
            "Karpenter"
        )
    keys = list(pod.spec.node_selector)
    aff = pod.spec.affinity
    if aff is not None and aff.node_affinity is not None:
        req = aff.node_affinity.required_during_scheduling_ignored_during_execution
        for term in req.node_selector_terms if req else []:
            if term.match_fields:
                return "node selector term with matchFields is not supported"
            keys += [e.key for e in term.match_expressions]
        for pref in aff.node_affinity.preferred_during_scheduling_ignored_during_execution:
            keys += [e.key for e in pref.preference.match_expressions]
    for key in keys:
        problem = restricted_label_problem(key)
        if problem and key != NODEPOOL:
            return f"invalid node selector or affinity: {problem}"
    return None


# ---- NodeClaim templates and DaemonSet overhead ------------------------------------------------
@dataclass(slots=True)
class DaemonOverheadGroup:
    """Instance types that would run the same DaemonSet pods, and what those pods need."""

    instance_types: frozenset[str]
    overhead: Resources
    host_ports: HostPortUsage
    # The same instance types as a mask over the template's table (set by the scheduler).
    mask: np.ndarray[Any, np.dtype[np.bool_]] | None = None


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
    meta = ds.spec.template.metadata.model_copy(
        update={"name": ds.metadata.name, "namespace": ds.metadata.namespace or "default"}
    )
    return Pod(metadata=meta, spec=ds.spec.template.spec)


def _daemon_requirement_keys(pod: Pod) -> set[str]:
    """Every key `_daemon_compatible` may compare with a pool's requirements for this pod."""
    keys: set[str] = set()
    current: Pod | None = preferences.tolerate_prefer_no_schedule(pod) or pod
    while current is not None:
        keys.update(pod_requirements(current, strict=True))
        current = preferences.drop_required_node_term(current)
    return keys


def _daemon_groups(
    template: NodeClaimTemplate, daemons: Sequence[Pod]
) -> list[DaemonOverheadGroup]:
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


# ---- instance-type filtering -------------------------------------------------------------------
@dataclass(slots=True)
class _FilterOutcome:
    requirements_met: bool = False
    fits: bool = False
    has_offering: bool = False
    requirements_and_fits: bool = False
    requirements_and_offering: bool = False
    fits_and_offering: bool = False
    min_values_error: str | None = None
    # No option is left (the filter's answer is an all-False mask).
    empty: bool = False

    def message(self, requests: Resources) -> str:
        """Karpenter's `InstanceTypeFilterError` wording (requirements dump left out)."""
        res = f"resources={_format_resources(requests)}"
        if self.min_values_error:
            return f"{self.min_values_error}, {res}"
        r, f, o = self.requirements_met, self.fits, self.has_offering
        if not r and not f and not o:
            text = (
                "no instance type met the scheduling requirements or had enough resources or "
                "had a required offering"
            )
        elif not r and not f:
            text = "no instance type met the scheduling requirements or had enough resources"
        elif not r and not o:
            text = "no instance type met the scheduling requirements or had a required offering"
        elif not f and not o:
            text = "no instance type had enough resources or had a required offering"
        elif not r:
            text = "no instance type met all requirements"
        elif not f:
            text = "no instance type has enough resources"
        elif not o:
            text = "no instance type has the required offering"
        elif self.requirements_and_fits:
            text = (
                "no instance type which met the scheduling requirements and had enough "
                "resources, had a required offering"
            )
        elif self.fits_and_offering:
            text = (
                "no instance type which had enough resources and the required offering met the "
                "scheduling requirements"
            )
        elif self.requirements_and_offering:
            text = (
                "no instance type which met the scheduling requirements and the required "
                "offering had the required resources"
            )
        else:
            text = "no instance type met the requirements/resources/offering tuple"
        return f"{text}, {res}"


def _format_resources(resources: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in format_base_units(resources).items()) + "}"


Mask = np.ndarray[Any, np.dtype[np.bool_]]
_INT64_MAX = 2**63 - 1  # `InstanceTypeTable.fits` compares requests capped here
# Requests this large skip no bucket (the cap above would make the headroom test inexact).
_ROOM_BOUND = 2**62


def filter_options(  # noqa: PLR0917 - mirrors filterInstanceTypesByRequirements
    table: InstanceTypeTable,
    options: Mask,
    reqs: Requirements,
    pod: Pod | None,
    groups: Sequence[DaemonOverheadGroup],
    total_requests: Resources,
    *,
    relax_min_values: bool,
    ports: tuple[HostPort, ...] | None = None,
) -> tuple[Mask, dict[str, int], _FilterOutcome]:
    """Karpenter's `filterInstanceTypesByRequirements` over a mask of `table`'s types: keep the
    options that intersect `reqs`, fit `total_requests` plus their DaemonSet group's overhead,
    and have an allowed available offering. Vectorised; memoised per requirement set. `ports`:
    `pod`'s host ports when the caller has them (read from `pod` otherwise)."""
    if ports is None:
        ports = host_ports(pod) if pod is not None else ()
    # The placeholder hostname of a planned node never matters to instance types (they do not
    # define the key; the table's memo reads only the keys they do, so it is shared across
    # nodes without building the set less the hostname).
    type_reqs = reqs.without(HOSTNAME) if HOSTNAME in table.keys and HOSTNAME in reqs else reqs
    covered: Mask | None = None
    fit: Mask | None = None
    for group in groups:
        # DaemonSet groups partition the types; a group whose host ports clash with the
        # pod's is skipped entirely, as in Karpenter.
        if ports and pod is not None and group.host_ports.conflict(pod, ports):
            continue
        gmask = group.mask if group.mask is not None else table.mask_of(group.instance_types)
        total = add(total_requests, group.overhead) if group.overhead else total_requests
        gfit = table.fits(total)
        gfit &= gmask
        if covered is None or fit is None:
            # The first group (often the only one): its masks are the unions so far.
            covered, fit = gmask, gfit
        else:
            covered = covered | gmask
            fit |= gfit
    if covered is None or fit is None:
        covered = fit = np.zeros(len(table.types), dtype=np.bool_)
    compat = table.compatible(type_reqs)
    offered = table.offered(reqs)
    # `fit` lies within `covered` (each group's fit is cut to its mask), so the options
    # covered, compatible, fitting and offered are `options & fit & compat & offered`.
    remaining = options & fit
    remaining &= compat
    remaining &= offered
    outcome = _FilterOutcome()
    if not _any(remaining):
        outcome.empty = True
        opt = options & covered
        outcome.requirements_met = bool((opt & compat).any())
        outcome.fits = bool((opt & fit).any())
        outcome.has_offering = bool((opt & offered).any())
        outcome.requirements_and_fits = bool((opt & compat & fit & ~offered).any())
        outcome.requirements_and_offering = bool((opt & compat & offered & ~fit).any())
        outcome.fits_and_offering = bool((opt & fit & offered & ~compat).any())
    unmet: dict[str, int] = {}
    if reqs.has_min_values():
        _, unmet = satisfies_min_values(table.types_of(remaining), reqs)
        if unmet:
            keys = ", ".join(sorted(unmet))
            if not relax_min_values:
                outcome.min_values_error = (
                    f"minValues requirement is not met for label(s) (label(s)=[{keys}])"
                )
                remaining = np.zeros(len(table.types), dtype=np.bool_)
                outcome.empty = True
    return remaining, unmet, outcome


def _any(mask: Mask) -> bool:
    """`mask.any()` in two C calls (the method goes through a Python-level wrapper; this is
    asked once or twice per pod tried on a target): the first True, if there is one."""
    return len(mask) > 0 and bool(mask[mask.argmax()])


def filter_instance_types(
    options: Sequence[InstanceType],
    reqs: Requirements,
    pod: Pod | None,
    groups: Sequence[DaemonOverheadGroup],
    total_requests: Resources,
    *,
    relax_min_values: bool,
) -> tuple[list[InstanceType], dict[str, int], _FilterOutcome]:
    """`filter_options` for a plain list of instance types (kept in their order)."""
    table = InstanceTypeTable(options)
    mask, unmet, outcome = filter_options(
        table,
        np.ones(len(table.types), dtype=np.bool_),
        reqs,
        pod,
        groups,
        total_requests,
        relax_min_values=relax_min_values,
    )
    return table.types_of(mask), unmet, outcome


# ---- placement targets ----------------------------------------------------------------------
@dataclass(slots=True, eq=False)
class NodeClaim:
    """A NodeClaim planned in this pass: its pods, requirements and remaining instance types
    (a mask over its template's table while scheduling; a price-ordered list once finalized)."""

    template: NodeClaimTemplate
    hostname: str
    requirements: Requirements
    options: Mask
    daemon_groups: list[DaemonOverheadGroup]
    pods: list[Pod] = field(default_factory=list)
    requests: Resources = field(default_factory=dict)
    name: str = ""
    min_values_relaxed: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    final_types: list[InstanceType] | None = None
    # How many pods it has taken (what a pod class's TARGET refusal was seen at).
    version: int = 0
    # Per resource, the most any remaining option has allocatable (None: not computed since
    # the options last changed); see `may_fit`.
    _most: dict[str, int] | None = None

    def may_fit(self, requests: Resources) -> bool:
        """False when adding `requests` exceeds, for some resource, the most allocatable of any
        remaining option: then `can_add` would fail on resources, whatever else it checks.

        A cheap test before `can_add`, which the scheduler runs for every pod against every
        planned NodeClaim (pods x claims); most full claims are ruled out here in a few
        dictionary look-ups instead of a requirement merge and a table filter.
        """
        most = self._most_allocatable()
        for k, v in requests.items():
            if v > 0 and min(self.requests.get(k, 0) + v, _INT64_MAX) > most.get(k, 0):
                return False
        return True

    def _most_allocatable(self) -> dict[str, int]:
        most = self._most
        if most is None:
            # Shared per option mask by the table (only read here).
            most = self._most = self.table.most_allocatable(self.options)
        return most

    def headroom(self) -> dict[str, int]:
        """Per resource, what the roomiest remaining option has left after the claim's pods
        (a resource not listed: none)."""
        return {k: v - self.requests.get(k, 0) for k, v in self._most_allocatable().items()}

    @property
    def nodepool(self) -> str:
        return self.template.name

    @property
    def table(self) -> InstanceTypeTable:
        assert self.template.table is not None
        return self.template.table

    @property
    def instance_types(self) -> list[InstanceType]:
        """The instance types this NodeClaim may still become."""
        if self.final_types is not None:
            return self.final_types
        return self.table.types_of(self.options)

    def can_add(
        self, pod: Pod, data: PodData, topology: Topology, *, relax_min_values: bool
    ) -> tuple[Requirements, Mask]:
        """Whether `pod` fits; returns the narrowed requirements and options, or raises (with
        the reason's `Hold` for the pod classes, see `podclasses.py`)."""
        taint = untolerated(self.template.taints, pod.spec.tolerations)
        if taint is not None:
            raise SchedulingError(
                lambda: f"did not tolerate taint {format_taint(taint)}", PERMANENT
            )
        if not self.requirements.is_compatible(data.requirements, ALLOW_UNDEFINED_WELL_KNOWN):
            # (The message, only built on a refusal, says why.)
            err = self.requirements.compatible(data.requirements, ALLOW_UNDEFINED_WELL_KNOWN)
            raise SchedulingError(lambda: f"incompatible requirements, {err}", TARGET)
        reqs = self.requirements.merge(data.requirements)
        try:
            topo = topology.add_requirements(
                pod, self.template.taints, data.strict_requirements, reqs
            )
        except TopologyError as terr:
            raise SchedulingError(terr, terr.group) from terr
        no_topology = topo is reqs  # no topology group applies to the pod here
        if not no_topology:
            # (Without topology, `reqs` against itself is compatible and merges into an equal
            # set: requirements are kept normalised, so `r ∩ r == r`.)
            if not reqs.is_compatible(topo, ALLOW_UNDEFINED_WELL_KNOWN):
                err = reqs.compatible(topo, ALLOW_UNDEFINED_WELL_KNOWN)
                raise SchedulingError(err or "")
            reqs = reqs.merge(topo)
        requests = add(self.requests, data.requests)
        remaining, unmet, outcome = filter_options(
            self.table,
            self.options,
            reqs,
            pod,
            self.daemon_groups,
            requests,
            relax_min_values=relax_min_values,
            ports=data.ports,
        )
        if relax_min_values and unmet:
            # BestEffort: lower each unmet minValues to what the remaining types offer.
            reqs = Requirements(
                {k: replace(r, min_values=unmet[k]) if k in unmet else r for k, r in reqs.items()}
            )
        if outcome.empty:
            requests_of_pod = data.requests
            # No option fits the requests whatever the requirements: options only narrow and
            # requests only grow, so that lasts. Otherwise, without topology (`topo is reqs`)
            # the answer is the claim's own until it takes a pod.
            hold: Hold = (
                PERMANENT
                if not outcome.fits and outcome.min_values_error is None
                else TARGET
                if no_topology
                else None
            )
            raise SchedulingError(lambda: outcome.message(requests_of_pod), hold)
        return reqs, remaining

    def add(
        self,
        pod: Pod,
        data: PodData,
        reqs: Requirements,
        options: Mask,
        topology: Topology,
    ) -> None:
        self.pods.append(pod)
        self.version += 1
        self._most = None  # looked up again (per mask, by the table) when next asked
        self.options = options
        self.requests = add(self.requests, data.requests)
        self.requirements = reqs
        topology.register(HOSTNAME, self.hostname)
        topology.record(pod, self.template.taints, reqs)
        ports = data.ports
        for group in self.daemon_groups:
            group.host_ports.add(pod, ports)


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


# ---- results ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PoolExplanation:
    """Why a NodePool could or could not take a pod: instance types left after each filter."""

    nodepool: str
    weight: int
    steps: list[tuple[str, int]]
    verdict: str
    # When a filter leaves nothing: what ruled the types out (scheduling/explanation.py).
    causes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Results:
    """What one scheduling pass decided."""

    new_node_claims: list[NodeClaim]
    existing_nodes: list[ExistingNode]
    pod_errors: dict[str, str]  # pod key -> reason, for pods that did not schedule
    pool_notes: dict[str, str]  # NodePool -> why it took no part (no compatible instance type)
    pods: dict[str, Pod]  # pod key -> pod, every pod considered
    # The solve stopped once it planned more NodeClaims than its caller allowed (`solve`'s
    # `stop_past`): the claims are not finalized and the pod errors are not complete.
    stopped: bool = False

    def pods_on_existing_nodes(self) -> dict[str, list[str]]:
        return {n.name: [p.key for p in n.pods] for n in self.existing_nodes if n.pods}


# ---- the scheduler ------------------------------------------------------------------------------
class Scheduler:
    """One scheduling pass over a snapshot (Karpenter's `Scheduler`)."""

    def __init__(
        self,
        pools: Sequence[PoolInput],
        *,
        state_nodes: Sequence[StateNode] = (),
        daemonsets: Sequence[DaemonSet] = (),
        pending_pods: Sequence[Pod] = (),
        options: SchedulingOptions | None = None,
        cache: PassCache | None = None,
        pod_classes: bool = True,
    ) -> None:
        # `pod_classes=False` tries every pod on every target, as Karpenter does; the
        # equivalence test compares the two (the plans must be identical).
        self.pod_classes = pod_classes
        self.options = options or SchedulingOptions()
        self.relax_min_values = self.options.min_values_policy == "BestEffort"
        # The DaemonSets' pods and the keys their requirements name; with a cache, shared by
        # the passes that get the same DaemonSet objects, which also share a serial number that
        # keys what is derived from them (an id tuple could be reused once they are freed).
        daemon_id: _DaemonKey = tuple(id(ds) for ds in daemonsets)
        daemon_hit = cache.daemons.get(daemon_id) if cache is not None else None
        if daemon_hit is not None and all(
            a is b for a, b in zip(daemon_hit[0], daemonsets, strict=True)
        ):
            self.daemons, daemon_keys, self._daemon_serial = daemon_hit[1:]
        else:
            self.daemons = [daemon_pod(ds) for ds in daemonsets]
            daemon_keys = frozenset(k for p in self.daemons for k in _daemon_requirement_keys(p))
            self._daemon_serial = 0
            if cache is not None:
                if len(cache.daemons) >= _CACHE_MAX:
                    cache.daemons.clear()
                cache.serial += 1
                self._daemon_serial = cache.serial
                cache.daemons[daemon_id] = (
                    tuple(daemonsets),
                    self.daemons,
                    daemon_keys,
                    self._daemon_serial,
                )
        self._cache = cache
        ordered = sorted(
            (p for p in pools if p.nodepool.spec.replicas is None),
            key=lambda p: (-p.nodepool.effective_weight, _desc(p.nodepool.name)),
        )
        # Static NodePools never take part (their nodes come in as state nodes); with no
        # dynamic pool at all, Karpenter's provisioner does not schedule (`NewScheduler`).
        self.dynamic_pools = bool(ordered)
        self.pool_notes: dict[str, str] = {}
        self.templates: list[NodeClaimTemplate] = []
        # Tables are shared: one per type list (pools of one node class filter the same
        # table, whose memos then serve them all) and one per filtered result (pools left with
        # the same types schedule on the same table). Both are read-only apart from memos.
        # With a `PassCache` they are also shared across passes (see there).
        bases: dict[int, tuple[InstanceTypeTable, Mask]] = {}
        tables: dict[tuple[int, bytes], InstanceTypeTable] = {}
        daemon_groups: dict[_GroupsKey, list[DaemonOverheadGroup]] = {}
        for pool in ordered:
            parts = cache.parts_of(pool.nodepool) if cache is not None else None
            if parts is None:
                template = NodeClaimTemplate.from_nodepool(pool.nodepool)
            else:
                template = NodeClaimTemplate(
                    nodepool=pool.nodepool,
                    requirements=parts.requirements,
                    labels=dict(parts.labels),
                    taints=parts.taints,
                    startup_taints=parts.startup_taints,
                    instance_types=[],
                )
            base = bases.get(id(pool.instance_types))
            if base is None and cache is not None:
                base = cache.table_of(pool.instance_types)
            if base is None:
                table = InstanceTypeTable(pool.instance_types)
                names = frozenset(it.name for it in pool.instance_types)
                base = (table, table.mask_of(names))
                if cache is not None:
                    cache.keep_table(pool.instance_types, *base)
            bases[id(pool.instance_types)] = base
            base_table, all_types = base
            filtered = self._pool_types(base_table, all_types, template.requirements)
            if isinstance(filtered, str):
                self.pool_notes[pool.nodepool.name] = f"skipping, nodepool {filtered}"
                continue
            mask_bytes, pool_types = filtered
            template.instance_types = list(pool_types)
            key = (id(pool.instance_types), mask_bytes)
            shared = tables.get(key)
            if shared is None and cache is not None:
                shared = cache.subtable_of(pool.instance_types, key[1])
            if shared is None:
                shared = InstanceTypeTable(template.instance_types)
                if cache is not None:
                    cache.keep_subtable(pool.instance_types, key[1], shared)
            tables[key] = shared
            template.table = shared
            # Which DaemonSets a type runs depends on the pool's taints, its requirements on
            # the keys the DaemonSets' own requirements name, and the types: pools alike in
            # those share the groups (read-only; each NodeClaim copies their host ports).
            groups_key = (
                id(shared),
                template.taints,
                template.requirements.only(daemon_keys),
                self._daemon_serial,
            )
            groups = daemon_groups.get(groups_key)
            if groups is None and cache is not None:
                hit = cache.groups.get(groups_key)
                if hit is not None and hit[0] is shared:
                    groups = hit[1]
            if groups is None:
                groups = _daemon_groups(template, self.daemons)
                for group in groups:
                    group.mask = shared.mask_of(group.instance_types)
                if cache is not None:
                    if len(cache.groups) >= _CACHE_MAX:
                        cache.groups.clear()
                    cache.groups[groups_key] = (shared, groups)
            daemon_groups[groups_key] = groups
            template.daemon_groups = groups
            self.templates.append(template)
        self.tolerate_prefer_no_schedule = any(
            t.effect == "PreferNoSchedule"
            for p in ordered
            for t in p.nodepool.spec.template.spec.taints
        )
        self.remaining_resources: dict[str, Resources] = {}
        for pool in pools:
            limits = pool.nodepool.spec.limits
            if limits is not None:
                self.remaining_resources[pool.nodepool.name] = {
                    k: (q.milli_value() if k == "cpu" else q.value()) for k, q in limits.items()
                }
        # Topology: domains from every dynamic pool and its instance types (static pools are
        # not passed to `NewTopology`; their nodes add domains as state nodes); counts from
        # bound pods.
        live = [n for n in state_nodes if not n.marked_for_deletion]
        # One requirement list per type list: `build_domain_groups` shares the work of pools
        # whose types are the same object (the catalog resolves one tuple per node class).
        type_reqs: dict[int, list[Requirements]] = {}
        for p in pools:
            if id(p.instance_types) not in type_reqs:
                type_reqs[id(p.instance_types)] = (
                    cache.requirements_of(p.instance_types)
                    if cache is not None
                    else [it.requirements for it in p.instance_types]
                )
        domain_inputs = []
        for p in pools:
            if p.nodepool.spec.replicas is not None:
                continue
            if cache is not None:
                parts = cache.parts_of(p.nodepool)
                domain_reqs, domain_taints = parts.domain_requirements, parts.taints
            else:
                domain_reqs = Requirements.from_node_selector(
                    p.nodepool.spec.template.spec.requirements
                ).merge(Requirements.from_labels(p.nodepool.spec.template.metadata.labels))
                domain_taints = tuple(t.as_taint() for t in p.nodepool.spec.template.spec.taints)
            domain_inputs.append((domain_reqs, domain_taints, type_reqs[id(p.instance_types)]))
        domain_groups = (
            cache.domain_groups_of(domain_inputs)
            if cache is not None
            else build_domain_groups(domain_inputs)
        )
        pending_keys = {p.key for p in pending_pods}
        # One walk over the live nodes: each node's entry (the kept entries' hits read inline,
        # `_node_entry` for the rest: a build per simulation asks for every live node), its
        # bound pods as the topology counts them (less any pod pending again), its domains and
        # hostname. The same lists, in the same order, as one walk per list.
        entries: list[_NodeEntry] = []
        counted: list[CountedPod] = []
        inverse: list[CountedPod] = []
        node_domains: list[tuple[Mapping[str, str], tuple[Taint, ...]]] = []
        hostnames: list[str] = []
        kept_get = cache.node_entries.get if cache is not None and self._daemon_serial else None
        serial, entry_of = self._daemon_serial, self._node_entry
        for n in live:
            entry = kept_get(n.name) if kept_get is not None else None
            if entry is None or entry.state is not n or entry.daemon_serial != serial:
                entry = entry_of(n)
            entries.append(entry)
            if pending_keys.isdisjoint(entry.pods.keys):
                counted.extend(entry.counted)
                inverse.extend(entry.inverse)
            else:
                kept = [
                    c
                    for c, key in zip(entry.counted, entry.pods.keys, strict=True)
                    if key not in pending_keys
                ]
                counted.extend(kept)
                inverse.extend(c for c in kept if has_anti_affinity(c.pod))
            node_domains.append((n.labels, n.taints))
            hostnames.append(entry.hostname)
        self.topology = Topology(
            domain_groups,
            existing_pods=counted,
            existing_node_domains=node_domains,
            ignore_preferences=self.options.preference_policy == "Ignore",
            inverse_pods=inverse,
        )
        self.topology.register_all(HOSTNAME, hostnames)
        # Per pool with limits, the capacities of its live nodes: subtracted once below (the
        # same integers as one subtraction per node, and `subtract` keeps the limit's keys).
        used: dict[str, list[Mapping[str, int]]] = {}
        if self.remaining_resources:
            for n, e in zip(live, entries, strict=True):
                if e.nodepool in self.remaining_resources:
                    used.setdefault(e.nodepool, []).append(n.capacity)
        for name, capacities in used.items():
            self.remaining_resources[name] = {
                k: v - (len(capacities) if k == "nodes" else sum([c.get(k, 0) for c in capacities]))
                for k, v in self.remaining_resources[name].items()
            }
        # Initialized nodes first, then by name (a stable sort of the entries' kept keys).
        # `remaining` is replaced, never changed in place, and the host ports are copied
        # before a pod adds to them (`ExistingNode.add`): both are shared with the entry.
        self.existing: list[ExistingNode] = [
            ExistingNode(e.state, e.remaining, e.requirements, e.taints, e.host_ports)
            for e in sorted(entries, key=_ENTRY_ORDER)
        ]
        self.new_node_claims: list[NodeClaim] = []
        # Planned NodeClaims by pod count, each bucket in creation order (see `_add`).
        self._by_count: dict[int, list[NodeClaim]] = {}
        # Per bucket, an upper bound of what its claims have left (see `_bucket_full`).
        self._room: dict[int, dict[str, int]] = {}
        self._seq: dict[int, int] = {}
        # Per bucket, the creation numbers of its claims (sorted, as the bucket is).
        self._seqs: dict[int, list[int]] = {}
        # Per pod class, the targets that refused it (`podclasses.py`).
        self._refusals: dict[object, Refusals] = {}
        # Per topology part of a class, the refusals only topology decided (shared).
        self._topology_refusals: dict[object, dict[int, tuple[Hold, int]]] = {}
        self._hostnames = 0
        self._pod_data: dict[str, PodData] = {}
        # NodePool -> (its remaining limits, the types within them, whether any is)
        self._within: dict[str, tuple[Resources, Mask, bool]] = {}

    def _pool_types(
        self, base_table: InstanceTypeTable, all_types: Mask, reqs: Requirements
    ) -> tuple[bytes, tuple[InstanceType, ...]] | str:
        """A NodePool's instance types: those of `base_table` its requirements allow (the
        mask's bytes and the types), or why none is left. With a `PassCache`, shared per
        (table, requirements, minValues policy): the answer is a function of exactly those."""
        cache = self._cache
        key = (id(base_table), reqs, self.relax_min_values)
        if cache is not None:
            hit = cache.pool_types.get(key)
            if hit is not None and hit[0] is base_table:
                return hit[1]
        everything = [DaemonOverheadGroup(frozenset(), {}, HostPortUsage(), all_types)]
        mask, _, outcome = filter_options(
            base_table,
            np.ones(len(base_table.types), dtype=np.bool_),
            reqs,
            None,
            everything,
            {},
            relax_min_values=self.relax_min_values,
        )
        out: tuple[bytes, tuple[InstanceType, ...]] | str
        if not mask.any():
            out = outcome.min_values_error or "requirements filtered out all instance types"
        else:
            out = (mask.tobytes(), tuple(base_table.types_of(mask)))
        if cache is not None:
            if len(cache.pool_types) >= _CACHE_MAX:
                cache.pool_types.clear()
            cache.pool_types[key] = (base_table, out)
        return out

    def _node_entry(self, n: StateNode) -> _NodeEntry:
        """What an existing node starts the pass with (see `_NodeEntry`); with a `PassCache`,
        the last one built for the node's name while the `StateNode` is the same object and
        the DaemonSets the same (a frozen StateNode: the same inputs, the same answers)."""
        cache = self._cache
        if cache is not None:
            hit = cache.node_entries.get(n.name)
            if hit is not None and hit.state is n and hit.daemon_serial == self._daemon_serial:
                return hit
        pods = self._node_pods(n)
        taints = n.effective_taints()
        labels_reqs, reqs = self._node_requirements(n)
        daemon_requests = self._node_daemon_requests(n, taints, labels_reqs)
        missing_daemons = {k: max(v, 0) for k, v in subtract(daemon_requests, pods.daemons).items()}
        available = subtract(dict(n.allocatable), pods.bound)
        counted, inverse = self._counted(n, pods)
        out = _NodeEntry(
            n,
            self._daemon_serial,
            pods,
            counted,
            inverse,
            subtract(available, missing_daemons),
            reqs,
            taints,
            n.hostname,
            n.nodepool or "",
            ("1" if not n.initialized else "0") + n.name,
            HostPortUsage(pods.ports),
        )
        # Without a serial (no cache, or DaemonSets not kept) nothing is shared.
        if cache is not None and self._daemon_serial:
            if len(cache.node_entries) >= _NODE_CACHE_MAX:
                cache.node_entries.clear()
            cache.node_entries[n.name] = out
        return out

    def _node_pods(self, n: StateNode) -> _NodePods:
        """What the node's bound pods request (all of them, and the DaemonSet ones; each plus
        `pods: 1`), their keys and host ports; with a `PassCache`, shared while the node has
        the same pod objects (frozen models: the same objects, the same answers). Only read."""
        cache = self._cache
        if cache is not None:
            hit = cache.node_pods.get(n.name)
            # `hit.pods` is `tuple(n.pods)`: the very tuple when the node's pods were one, and
            # a snapshot that rebuilds the node mostly hands the same tuple on; else the pods
            # are compared one by one (`map` over `is_`: no generator frame per pod).
            if hit is not None and (
                hit.pods is n.pods
                or (len(hit.pods) == len(n.pods) and all(map(operator.is_, hit.pods, n.pods)))
            ):
                return hit
        facts = [self._bound_pod(p) for p in n.pods]
        bound = add(*(f.requests for f in facts))
        already = add(*(f.requests for f in facts if f.daemon))
        usage = HostPortUsage()
        for f in facts:
            usage.add(f.pod, f.ports)
        out = _NodePods(
            tuple(n.pods), bound, already, tuple(f.key for f in facts), usage.reserved, []
        )
        if cache is not None:
            if len(cache.node_pods) >= _NODE_CACHE_MAX:
                cache.node_pods.clear()
            cache.node_pods[n.name] = out
        return out

    def _bound_pod(self, pod: Pod) -> _BoundPod:
        """`_BoundPod.of(pod)`, kept per pod object with a `PassCache` (frozen models: the
        same object, the same answers)."""
        cache = self._cache
        if cache is None:
            return _BoundPod.of(pod)
        return cache.bound_pods.lookup(pod)

    def _counted(
        self, n: StateNode, pods: _NodePods
    ) -> tuple[tuple[CountedPod, ...], tuple[CountedPod, ...]]:
        """The node's bound pods as the topology counts them, and those of them with an
        anti-affinity (kept with `pods` for the node's labels and taints: the last few seen)."""
        for labels, taints, counted, inverse in pods.counted:
            # A snapshot rebuilds its nodes (new label mappings, equal values): the topology
            # reads labels by value, so equal ones share the counted pods.
            if (labels is n.labels or labels == n.labels) and taints == n.taints:
                return counted, inverse
        counted = tuple(CountedPod(pod, n.labels, n.taints, n.name) for pod in n.pods)
        inverse = tuple(c for c in counted if has_anti_affinity(c.pod))
        if len(pods.counted) >= 4:
            pods.counted.clear()
        pods.counted.append((n.labels, n.taints, counted, inverse))
        return counted, inverse

    def _node_requirements(self, n: StateNode) -> tuple[Requirements, Requirements]:
        """A node's labels as requirements, and those plus its hostname (shared per label
        mapping and hostname across passes with a `PassCache`: the same node every pass)."""
        cache = self._cache
        key = (tuple(n.labels.items()), n.hostname)
        if cache is not None:
            hit = cache.node_reqs.get(key)
            if hit is not None:
                return hit
        labels_reqs = Requirements.from_labels(n.labels)
        out = (labels_reqs, labels_reqs.add(Requirement.new(HOSTNAME, "In", [n.hostname])))
        if cache is not None:
            if len(cache.node_reqs) >= _NODE_CACHE_MAX:
                cache.node_reqs.clear()
            cache.node_reqs[key] = out
        return out

    def _node_daemon_requests(
        self, n: StateNode, taints: tuple[Taint, ...], labels_reqs: Requirements
    ) -> Resources:
        """What the DaemonSets that would run on the node request (their pods' requests plus
        one pod each): those tolerating its taints whose strict requirements its labels meet."""
        cache = self._cache
        key = (tuple(n.labels.items()), taints, self._daemon_serial)
        if cache is not None:
            hit = cache.node_daemons.get(key)
            if hit is not None:
                return hit
        daemon_requests: Resources = {}
        for p in self.daemons:
            if untolerated(taints, p.spec.tolerations) is not None:
                continue
            if labels_reqs.compatible(pod_requirements(p, strict=True)) is not None:
                continue
            daemon_requests = add(daemon_requests, pod_requests(p.spec), {"pods": 1})
        if cache is not None:
            if len(cache.node_daemons) >= _NODE_CACHE_MAX:
                cache.node_daemons.clear()
            cache.node_daemons[key] = daemon_requests
        return daemon_requests

    # ---- the main loop -----------------------------------------------------------------------
    def solve(self, pods: Sequence[Pod], *, stop_past: int | None = None) -> Results:
        """Schedule `pods` (Karpenter's `Solve`). `stop_past`: stop as soon as more than this
        many new NodeClaims are planned (`Results.stopped`), for a caller that acts on no
        such plan (consolidation). Claims are only added while solving and, when no NodePool
        has minValues (or the policy relaxes them), finalizing keeps them all: so a stopped
        solve is one whose full plan has more than `stop_past` claims. Where finalizing may
        drop a claim (minValues), the solve runs to the end."""
        if (
            stop_past is not None
            and not self.relax_min_values
            and any(t.requirements.has_min_values() for t in self.templates)
        ):
            stop_past = None
        errors: dict[str, str] = {}
        considered: dict[str, Pod] = {}
        # Each pod with its key, computed once (a relaxed copy keeps the pod's metadata, so
        # its key too).
        entries: list[tuple[Pod, str]] = []
        order: dict[str, int] = {}
        for i, pod in enumerate(pods):
            key = pod.key
            considered[key] = pod
            reason = validate_pod(pod)
            if reason is not None:
                errors[key] = reason
                continue
            if _DOES_NOT_EXIST_NODEPOOL in pod_requirements(pod).values():
                continue  # the pod opted out of Karpenter: ignored silently
            order[key] = i
            self._update(pod, key)
            entries.append((pod, key))
        entries.sort(key=lambda e: self._queue_key(e[0], e[1], order[e[1]]))
        if any(v < 0 for d in self._pod_data.values() for v in d.requests.values()):
            # A negative request (only from code, never from a manifest) would let a target's
            # room grow back, and "resources only shrink" is what lasting refusals rest on.
            self.pod_classes = False
        queue = deque(entries)
        last_len: dict[str, int] = {}
        while queue:
            pod, key = queue[0]
            if last_len.get(key) == len(queue):
                break  # a full cycle without progress
            queue.popleft()
            reason = self._try_schedule(pod, key)
            if reason is None:
                errors.pop(key, None)
                if stop_past is not None and len(self.new_node_claims) > stop_past:
                    return Results(
                        self.new_node_claims,
                        self.existing,
                        errors,
                        self.pool_notes,
                        considered,
                        stopped=True,
                    )
                continue
            errors[key] = reason
            self._update(pod, key)
            queue.append((pod, key))
            last_len[key] = len(queue)
        self._finalize(errors)
        return Results(self.new_node_claims, self.existing, errors, self.pool_notes, considered)

    def _queue_key(self, pod: Pod, key: str, index: int) -> tuple[int, int, dt.datetime, int, str]:
        # Karpenter sorts by creationTimestamp then UID; manifests have no timestamps, and the
        # order they list pods in is the order `kubectl apply` would create them.
        data = self._pod_data[key]
        created = pod.metadata.creation_timestamp or _EPOCH
        return (
            -data.requests.get("cpu", 0),
            -data.requests.get("memory", 0),
            created,
            index,
            pod.metadata.uid or "",
        )

    def _update(self, pod: Pod, key: str) -> None:
        self.topology.update(pod)
        self._pod_data[key] = _pod_data(pod, self.options)

    def _try_schedule(self, pod: Pod, key: str) -> str | None:
        current = pod
        while True:
            try:
                self._add(current, key)
                return None
            except SchedulingError as err:
                relaxed = preferences.relax(
                    current, tolerate_prefer_no_schedule_taints=self.tolerate_prefer_no_schedule
                )
                if relaxed is None:
                    return str(err)
                current = relaxed
                self._update(current, key)

    def _refusals_of(self, pod: Pod, data: PodData) -> Refusals | None:
        """The refusals kept for `pod`'s class (None: the pod is tried everywhere)."""
        if not self.pod_classes:
            return None
        keys = class_key(
            pod,
            data.requests,
            data.requirements,
            data.strict_requirements,
            self.topology.owned.get(pod.metadata.uid or pod.key, ()),
            host_ports=bool(data.ports),
        )
        if keys is None:
            return None
        refusals = self._refusals.get(keys[1])
        if refusals is None:
            shared = self._topology_refusals.setdefault(keys[0], {})
            refusals = self._refusals[keys[1]] = Refusals(shared=shared)
        else:
            refusals.revalidate()
        return refusals

    def _add(self, pod: Pod, key: str) -> None:
        data = self._pod_data[key]
        # Targets a pod of the same class was refused by, for a reason that still holds, are
        # skipped: they would refuse this pod too, so the first that accepts it is the same.
        refusals = self._refusals_of(pod, data)
        existing = self.existing

        def cannot_fit(target: object) -> bool:
            # The class's requests cannot fit the target (lasting: see `podclasses.py`).
            if isinstance(target, NodeClaim):
                return not target.may_fit(data.requests)
            assert isinstance(target, ExistingNode)
            return not fits(data.requests, target.remaining)

        start = refusals.existing_prefix if refusals is not None else 0
        for i in range(start, len(existing)):
            node = existing[i]
            if refusals is not None and refusals.refused(node):
                continue
            reqs = node.try_add(pod, data, self.topology)
            if isinstance(reqs, Refusal):
                if refusals is not None:
                    refusals.note(node, reqs.hold)
                continue
            node.add(pod, data, reqs, self.topology)
            if refusals is not None:
                refusals.extend(existing, cannot_fit)
            return
        if refusals is not None:
            refusals.extend(existing, cannot_fit)
        # Emptiest planned NodeClaim first (Go's sort.Slice is unstable; gpucap breaks ties by
        # creation order). Claims are kept in buckets by pod count, so no sort per pod.
        claims = self.new_node_claims

        def pods_on(claim: object) -> int:
            assert isinstance(claim, NodeClaim)
            return len(claim.pods)  # its bucket

        def take(claim: object) -> bool:
            assert isinstance(claim, NodeClaim)
            return self._try_claim(claim, pod, data, refusals)

        walked = refusals.walk(claims, pods_on, take) if refusals is not None else None
        if walked:
            return
        if walked is None:
            tried = 0
            placed = False
            for count in sorted(self._by_count):
                if self._bucket_full(count, data.requests):
                    continue
                for claim in self._by_count[count]:
                    tried += 1
                    if self._try_claim(claim, pod, data, refusals):
                        placed = True
                        break
                if placed:
                    break
            if refusals is not None and tried >= _KEEP_CANDIDATES:
                # Many refused: from now on the class walks the claims that may take it.
                refusals.keep_candidates(claims, pods_on)
            if placed:
                return
        if not self.templates:
            raise SchedulingError(NO_TEMPLATES if self.dynamic_pools else NO_DYNAMIC_NODEPOOLS)
        errors: list[tuple[str, str]] = []
        for template in self.templates:
            # A pool out of limits refuses every pod until one of its claims changes them:
            # answered from the memo, without building a claim (pods x pools otherwise).
            full = self._limits_exhausted(template)
            if full is not None:
                errors.append((template.name, full))
                continue
            try:
                self._add_to_new_node_claim(template, pod, data)
                return
            except SchedulingError as err:
                # Formatted now: a topology message reads counts that later pods change.
                errors.append((template.name, str(err)))
        raise SchedulingError(lambda: "; ".join(f'nodepool "{n}": {e}' for n, e in errors))

    def _try_claim(
        self, claim: NodeClaim, pod: Pod, data: PodData, refusals: Refusals | None
    ) -> bool:
        """Add `pod` to the planned `claim` if it takes it (noting why it refused)."""
        if refusals is not None and refusals.refused(claim):
            return False
        if self.topology.rejects_host(pod, claim.hostname):
            if refusals is not None:
                refusals.note_topology(claim)
            return False
        if not claim.may_fit(data.requests):
            if refusals is not None:
                refusals.note(claim, PERMANENT)
            return False
        group = self.topology.rejects_domains(pod, data.strict_requirements, claim.requirements)
        if group is not None:
            if refusals is not None:
                refusals.note(claim, group)
            return False
        try:
            reqs, its = claim.can_add(pod, data, self.topology, relax_min_values=False)
        except SchedulingError as err:
            if refusals is not None:
                refusals.note(claim, err.hold)
            return False
        count = len(claim.pods)
        claim.add(pod, data, reqs, its, self.topology)
        self._rebucket(claim, count)
        return True

    def _within_limits(
        self, template: NodeClaimTemplate, remaining: Resources
    ) -> tuple[Mask, bool]:
        """The template's types within the pool's remaining limits, and whether there is any.
        Kept until the limits change (each change is a new dict)."""
        cached = self._within.get(template.name)
        if cached is None or cached[0] is not remaining:
            assert template.table is not None
            within, some = template.table.within(remaining)
            cached = self._within[template.name] = (remaining, within, some)
        return cached[1], cached[2]

    def _limits_exhausted(self, template: NodeClaimTemplate) -> str | None:
        """Why the pool's limits refuse any new NodeClaim (None when they do not)."""
        remaining = self.remaining_resources.get(template.name)
        if remaining is None:
            return None
        if remaining.get("nodes") == 0 and "nodes" in remaining:
            return NODE_LIMITS_EXHAUSTED
        if not self._within_limits(template, remaining)[1]:
            return TYPES_EXCEED_LIMITS
        return None

    def _widen_room(self, count: int, claim: NodeClaim) -> None:
        """Raise bucket `count`'s room to cover `claim`, which is joining it with its pods."""
        room = self._room.setdefault(count, {})
        for k, v in claim.headroom().items():
            if v > room.get(k, 0):
                room[k] = v

    def _bucket_full(self, count: int, requests: Resources) -> bool:
        """True when no claim of bucket `count` can hold `requests` (`NodeClaim.may_fit` would
        refuse each). The room is an upper bound, per resource, of the claims' headroom: it
        only grows while the bucket lives, and a claim's headroom only shrinks as it takes pods,
        which moves it to the next bucket. So a pod that needs more than the room skips the
        bucket in one look instead of one `may_fit` per full claim (pods x claims)."""
        room = self._room.get(count, {})
        return any(0 < v < _ROOM_BOUND and v > room.get(k, 0) for k, v in requests.items())

    def _rebucket(self, claim: NodeClaim, old_count: int) -> None:
        seq = self._seq[id(claim)]
        bucket, seqs = self._by_count[old_count], self._seqs[old_count]
        i = bisect.bisect_left(seqs, seq)
        del bucket[i], seqs[i]
        if not bucket:
            del self._by_count[old_count], self._seqs[old_count], self._room[old_count]
        self._widen_room(old_count + 1, claim)
        target = self._by_count.setdefault(old_count + 1, [])
        seqs = self._seqs.setdefault(old_count + 1, [])
        i = bisect.bisect(seqs, seq)
        target.insert(i, claim)
        seqs.insert(i, seq)

    def _add_to_new_node_claim(self, template: NodeClaimTemplate, pod: Pod, data: PodData) -> None:
        table = template.table
        assert table is not None
        options = np.ones(len(table.types), dtype=np.bool_)
        remaining = self.remaining_resources.get(template.name)
        if remaining is not None:
            if remaining.get("nodes") == 0 and "nodes" in remaining:
                raise SchedulingError(NODE_LIMITS_EXHAUSTED)
            within, some = self._within_limits(template, remaining)
            if not some:
                raise SchedulingError(TYPES_EXCEED_LIMITS)
            options = within.copy()
        self._hostnames += 1
        hostname = f"hostname-placeholder-{self._hostnames:04d}"
        claim = NodeClaim(
            template=template,
            hostname=hostname,
            requirements=template.requirements.add(Requirement.new(HOSTNAME, "In", [hostname])),
            options=options,
            daemon_groups=[
                DaemonOverheadGroup(g.instance_types, g.overhead, g.host_ports.copy(), g.mask)
                for g in template.daemon_groups
            ],
        )
        reqs, fitting = claim.can_add(
            pod, data, self.topology, relax_min_values=self.relax_min_values
        )
        claim.min_values_relaxed = any(
            (orig := template.requirements.get(k)) is not None
            and orig.min_values is not None
            and r.min_values is not None
            and r.min_values < orig.min_values
            for k, r in reqs.items()
        )
        claim.add(pod, data, reqs, fitting, self.topology)
        self.new_node_claims.append(claim)
        self._seq[id(claim)] = len(self._seq)
        self._widen_room(1, claim)
        self._by_count.setdefault(1, []).append(claim)
        self._seqs.setdefault(1, []).append(self._seq[id(claim)])
        if remaining is not None:
            # Pessimistic: the NodeClaim may become its largest option.
            largest = table.max_capacity(claim.options, remaining)
            self.remaining_resources[template.name] = {
                k: v - largest.get(k, 0) for k, v in remaining.items()
            }

    # ---- explanation ---------------------------------------------------------------------------
    def explain(self, pod: Pod, pools: Sequence[PoolInput]) -> list[PoolExplanation]:
        """NodePool by NodePool, whether a new NodeClaim could take `pod` on its own, and how
        many instance types survive each of Karpenter's filters (for `gpucap plan --explain`)."""
        data = _pod_data(pod, self.options)
        templates = {t.name: t for t in self.templates}
        out: list[PoolExplanation] = []
        ordered = sorted(
            pools, key=lambda p: (-p.nodepool.effective_weight, _desc(p.nodepool.name))
        )
        for pool in ordered:
            name = pool.nodepool.name
            steps: list[tuple[str, int]] = [("offered by the node class", len(pool.instance_types))]
            template = templates.get(name)
            if template is None:
                reason = self.pool_notes.get(name, "static NodePool (replicas set)")
                out.append(PoolExplanation(name, pool.nodepool.effective_weight, steps, reason))
                continue
            steps.append(("meet the NodePool's requirements", len(template.instance_types)))
            taint = untolerated(template.taints, pod.spec.tolerations)
            if taint is not None:
                out.append(
                    PoolExplanation(
                        name,
                        pool.nodepool.effective_weight,
                        steps,
                        f"did not tolerate taint {format_taint(taint)}",
                    )
                )
                continue
            err = template.requirements.compatible(data.requirements, ALLOW_UNDEFINED_WELL_KNOWN)
            if err is not None:
                out.append(
                    PoolExplanation(
                        name,
                        pool.nodepool.effective_weight,
                        steps,
                        f"incompatible requirements, {err}",
                    )
                )
                continue
            reqs = template.requirements.merge(data.requirements)
            its = [it for it in template.instance_types if it.requirements.intersects(reqs) is None]
            steps.append(("meet the pod's requirements", len(its)))
            causes: list[str] = []
            if not its:
                causes = explanation.requirement_causes(template.instance_types, data.requirements)
            fitting = [
                it
                for it in its
                if any(
                    it.name in g.instance_types
                    and fits(add(data.requests, g.overhead), it.allocatable)
                    for g in template.daemon_groups
                )
            ]
            steps.append(("fit the pod plus DaemonSet overhead", len(fitting)))
            if its and not fitting:
                least = min(
                    (g.overhead for g in template.daemon_groups),
                    key=lambda o: sum(o.values()),
                    default={},
                )
                causes = explanation.resource_causes(its, add(data.requests, least))
            offered = [it for it in fitting if it.has_available_offering(reqs)]
            steps.append(("have an available offering in an allowed zone", len(offered)))
            if fitting and not offered:
                causes = explanation.offering_causes(fitting, reqs)
            limits = pool.nodepool.spec.limits
            if limits is not None:
                caps = {
                    k: (q.milli_value() if k == "cpu" else q.value()) for k, q in limits.items()
                }
                within = [
                    it for it in offered if all(it.capacity.get(k, 0) <= v for k, v in caps.items())
                ]
                steps.append(("fit within the NodePool's limits (if it were empty)", len(within)))
                if offered and not within:
                    causes = explanation.limit_causes(offered, caps)
                offered = within
            verdict = "usable" if offered else "no instance type left"
            out.append(
                PoolExplanation(name, pool.nodepool.effective_weight, steps, verdict, causes)
            )
        return out

    # ---- finalisation ------------------------------------------------------------------------
    def _finalize(self, errors: dict[str, str]) -> None:
        counters: dict[str, int] = {}
        kept: list[NodeClaim] = []
        # Claims narrow to a few distinct option sets: the price order, the instance-type
        # requirement and the capacity types are functions of (table, options, the zone and
        # capacity-type requirements, the instance-type minValues), computed once per such key.
        ordered_by: dict[
            tuple[int, bytes, Requirement | None, Requirement | None],
            tuple[np.ndarray[Any, np.dtype[np.intp]], list[InstanceType]],
        ] = {}
        finished_by: dict[
            tuple[int, bytes, Requirement | None, Requirement | None, int | None],
            tuple[Requirement, list[str]],
        ] = {}
        for claim in sorted(self.new_node_claims, key=lambda c: c.hostname):
            claim.requirements = claim.requirements.without(HOSTNAME)
            claim.requests = add(claim.requests, _min_daemon_overhead(claim))
            table = claim.table
            zone, capacity_type = (
                claim.requirements.get(ZONE),
                claim.requirements.get(CAPACITY_TYPE),
            )
            key = (id(table), claim.options.tobytes(), zone, capacity_type)
            hit = ordered_by.get(key)
            if hit is None:
                index = table.order_by_price_index(claim.options, claim.requirements)[
                    : self.options.max_instance_types
                ]
                types = table.types
                hit = ordered_by[key] = (index, [types[i] for i in index.tolist()])
            index, shared = hit
            ordered = list(shared)
            _, unmet = satisfies_min_values(ordered, claim.requirements)
            if unmet and not self.relax_min_values:
                for pod in claim.pods:
                    errors[pod.key] = (
                        "pod didn't schedule because NodePool couldn't meet minValues "
                        f'requirements (NodePool="{claim.nodepool}")'
                    )
                continue
            claim.final_types = ordered
            min_values = claim.requirements.get_or_exists(INSTANCE_TYPE).min_values
            finished = finished_by.get((*key, min_values))
            if finished is None:
                names = Requirement.new(
                    INSTANCE_TYPE, "In", [it.name for it in ordered], min_values=min_values
                )
                # Adding the instance-type requirement leaves the zone and capacity type as
                # they are, so the capacity types read the same two requirements.
                finished = finished_by[(*key, min_values)] = (
                    names,
                    table.capacity_types(index, claim.requirements.add(names)),
                )
            names, capacity_types = finished
            claim.requirements = claim.requirements.add(names)
            if capacity_types:
                claim.requirements = claim.requirements.add(
                    Requirement.new(CAPACITY_TYPE, "In", capacity_types)
                )
            counters[claim.nodepool] = counters.get(claim.nodepool, 0) + 1
            claim.name = f"{claim.nodepool}-{counters[claim.nodepool]}"
            claim.labels = {**claim.template.labels, **custom_labels(claim.requirements)}
            kept.append(claim)
        self.new_node_claims = kept


def _min_daemon_overhead(claim: NodeClaim) -> Resources:
    """The least DaemonSet overhead among the groups of the claim's remaining types (per
    resource); groups carry a mask over the claim's table."""
    table, options = claim.table, claim.options
    if not any(g.overhead for g in claim.daemon_groups):
        return {}  # no DaemonSet requests anything (whichever groups the options reach)
    overheads = [
        g.overhead
        for g in claim.daemon_groups
        if bool(
            ((g.mask if g.mask is not None else table.mask_of(g.instance_types)) & options).any()
        )
    ]
    if not overheads:
        return {}
    keys = set().union(*overheads)
    return {k: min(o.get(k, 0) for o in overheads) for k in sorted(keys)}


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


def _desc(name: str) -> tuple[int, ...]:
    # Sort key that orders names descending inside an ascending sort.
    return (*tuple(-ord(c) for c in name), 1)


def solve(
    pods: Sequence[Pod],
    pools: Sequence[PoolInput],
    *,
    state_nodes: Sequence[StateNode] = (),
    daemonsets: Sequence[DaemonSet] = (),
    options: SchedulingOptions | None = None,
) -> Results:
    """Schedule `pods` (pending) onto existing nodes and new NodeClaims from `pools`."""
    scheduler = Scheduler(
        pools,
        state_nodes=state_nodes,
        daemonsets=daemonsets,
        pending_pods=pods,
        options=options,
    )
    return scheduler.solve(pods)


__all__ += [
    "NODE_LIMITS_EXHAUSTED",
    "NO_DYNAMIC_NODEPOOLS",
    "NO_TEMPLATES",
    "TYPES_EXCEED_LIMITS",
    "IncompatibleError",
    "PodData",
    "PoolExplanation",
    "SchedulingError",
    "custom_labels",
    "daemon_pod",
    "pod_requirements",
]
