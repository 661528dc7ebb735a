"""What the schedulers of many passes over the same objects share: `PassCache`.

Karpenter builds a new `Scheduler` per provisioning pass and per disruption simulation
(kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/scheduler.go`
@ 2266468104f3, `NewScheduler`) and recomputes everything it starts from: each NodePool's
template and filtered instance types (`NewNodeClaimTemplate`, `filterInstanceTypesByRequirements`),
the DaemonSet overhead groups (`buildDaemonOverheadGroups`) and each existing node
(`calculateExistingNodeClaims`, `NewExistingNode`). The simulator runs thousands of such
builds over objects that barely change, so gpucap keeps those answers here, keyed on the
objects they are functions of (see `PassCache` for why a hit is the same answer).

Every `Scheduler` has one: the `Provisioner` owns one for all its passes (the simulator's), and
a scheduler given none makes a throwaway one (`plan`, tests), which answers exactly as a
shared one does. Called by the scheduler (`scheduler.py`) only.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpucap.apis.core import Pod, PodSpec, Taint
from gpucap.apis.labels import HOSTNAME
from gpucap.apis.nodepool import NodePool
from gpucap.apis.workloads import DaemonSet
from gpucap.runtime.memo import IdentityMemo
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.filter import nodepool_types
from gpucap.scheduling.hostports import HostPort, HostPortUsage, host_ports
from gpucap.scheduling.instancetypes import InstanceType, InstanceTypeTable, Mask
from gpucap.scheduling.nodeclaimtemplate import (
    DaemonOverheadGroup,
    NodeClaimTemplate,
    build_daemon_groups,
    daemon_pod,
    daemon_requirement_keys,
)
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.resources import Resources, add, pod_requests, subtract
from gpucap.scheduling.taints import untolerated
from gpucap.scheduling.topology import (
    CountedPod,
    DomainGroups,
    ThroughTypesCache,
    build_domain_groups,
    has_anti_affinity,
)

__all__ = ["ENTRY_ORDER", "NodeEntry", "PassCache"]

# ---- shared across schedulers ----------------------------------------------------------------
_CACHE_MAX = 64
# Existing-node entries: one per label mapping (node) seen; cleared past this many.
_NODE_CACHE_MAX = 4096
# Bound pods' entries: one per pod object seen; cleared past this many.
_POD_CACHE_MAX = 16384
# Pod requests: one per PodSpec object seen (pending pods of a template share one); cleared
# past this many.
_SPEC_CACHE_MAX = 8192

_DaemonKey = tuple[int, ...]
# A DaemonSet tuple's serial number in its `PassCache` (never reused).
_GroupsKey = tuple[int, tuple[Taint, ...], Requirements, int]


@dataclass(slots=True)
class PassCache:
    """What the `Scheduler`s of one caller share across passes over the same type tuples (the
    simulator's `Provisioner`); a scheduler given none makes its own for its one pass. Shared,
    each built once and then only read:

    - each type tuple's requirement list (so `build_domain_groups` recognises it by identity),
      the domains through it, and the whole `build_domain_groups` answer per (pool
      requirements, pool taints, type list) sequence;
    - each type tuple's `InstanceTypeTable` and the table of each NodePool's filtered subset,
      keyed on the tuple's identity (and the subset's mask): a table is a function of its
      types, and its memos (compatibility per requirement set, offerings per zone and capacity
      type) are functions of the types too, so they stay true across passes;
    - DaemonSet overhead groups per (table, pool taints, pool requirements on the DaemonSets'
      keys, DaemonSet objects): what `build_daemon_groups` computes from exactly those;
    - the DaemonSets' pods, per tuple of DaemonSet objects;
    - an existing node's requirements per (label mapping, hostname), its DaemonSet requests
      per (label mapping, effective taints, DaemonSet objects), and per node name while its
      pods are the same objects: its bound pods' requests, keys, host ports and (while its
      labels are the same mapping and its taints equal) the pods as the topology counts them:
      the only inputs each reads. So a scheduler over the same nodes, or the same nodes less
      a few (a consolidation simulation), builds its existing nodes from these;
    - per node name while the `StateNode` is the same object (the cluster keeps unchanged
      ones) and the DaemonSets the same: all of the above for that node (`NodeEntry`);
    - per PodSpec object: what a pod of that spec requests (`pod_requests`), read for every
      pending pod of every pass (`pod_data`): the pods of one template share their spec;
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
    node_entries: dict[str, NodeEntry] = field(default_factory=dict)
    # Per bound pod object (frozen: the same object, the same answers; `_node_pods`).
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
    spec_requests: IdentityMemo[PodSpec, Resources] = field(
        default_factory=lambda: IdentityMemo(pod_requests, size=_SPEC_CACHE_MAX)
    )

    def pod_requests(self, spec: PodSpec) -> Resources:
        """`resources.pod_requests(spec)`, kept per PodSpec object (frozen: the same spec,
        the same requests); a new dict each call, as `pod_requests` gives."""
        return dict(self.spec_requests.lookup(spec))

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

    # ---- what a Scheduler starts from ------------------------------------------------------
    def daemons_of(self, daemonsets: Sequence[DaemonSet]) -> tuple[list[Pod], frozenset[str], int]:
        """The DaemonSets' pods, the keys their requirements name, and the serial number that
        keys what is derived from them: shared by the passes that get the same DaemonSet
        objects (an id tuple could be reused once they are freed; the serial never is)."""
        daemon_id: _DaemonKey = tuple(id(ds) for ds in daemonsets)
        hit = self.daemons.get(daemon_id)
        if hit is not None and all(a is b for a, b in zip(hit[0], daemonsets, strict=True)):
            return hit[1], hit[2], hit[3]
        pods = [daemon_pod(ds) for ds in daemonsets]
        keys = frozenset(k for p in pods for k in daemon_requirement_keys(p))
        if len(self.daemons) >= _CACHE_MAX:
            self.daemons.clear()
        self.serial += 1
        self.daemons[daemon_id] = (tuple(daemonsets), pods, keys, self.serial)
        return pods, keys, self.serial

    def templates(
        self,
        pools: Sequence[tuple[NodePool, Sequence[InstanceType]]],
        daemons: Sequence[Pod],
        daemon_keys: frozenset[str],
        daemon_serial: int,
        relax_min_values: bool,
    ) -> tuple[list[NodeClaimTemplate], dict[str, str]]:
        """The NodeClaim template of each of `pools` (NodePool and its types, in the order
        the scheduler tries them) that keeps an instance type, with its table and DaemonSet
        overhead groups; and, per NodePool that keeps none, why (Karpenter's `NewScheduler`)."""
        templates: list[NodeClaimTemplate] = []
        notes: dict[str, str] = {}
        # Tables are shared: one per type list (pools of one node class filter the same
        # table, whose memos then serve them all) and one per filtered result (pools left with
        # the same types schedule on the same table). Both are read-only apart from memos.
        # Tuples are also kept across passes (see `PassCache`); lists only within this one.
        bases: dict[int, tuple[InstanceTypeTable, Mask]] = {}
        tables: dict[tuple[int, bytes], InstanceTypeTable] = {}
        daemon_groups: dict[_GroupsKey, list[DaemonOverheadGroup]] = {}
        for nodepool, types in pools:
            parts = self.parts_of(nodepool)
            template = NodeClaimTemplate(
                nodepool=nodepool,
                requirements=parts.requirements,
                labels=dict(parts.labels),
                taints=parts.taints,
                startup_taints=parts.startup_taints,
                instance_types=[],
            )
            base = bases.get(id(types))
            if base is None:
                base = self.table_of(types)
            if base is None:
                table = InstanceTypeTable(types)
                names = frozenset(it.name for it in types)
                base = (table, table.mask_of(names))
                self.keep_table(types, *base)
            bases[id(types)] = base
            base_table, all_types = base
            filtered = self.pool_types_of(
                base_table, all_types, template.requirements, relax_min_values
            )
            if isinstance(filtered, str):
                notes[nodepool.name] = f"skipping, nodepool {filtered}"
                continue
            mask_bytes, pool_types = filtered
            template.instance_types = list(pool_types)
            key = (id(types), mask_bytes)
            shared = tables.get(key)
            if shared is None:
                shared = self.subtable_of(types, mask_bytes)
            if shared is None:
                shared = InstanceTypeTable(template.instance_types)
                self.keep_subtable(types, mask_bytes, shared)
            tables[key] = shared
            template.table = shared
            # Which DaemonSets a type runs depends on the pool's taints, its requirements on
            # the keys the DaemonSets' own requirements name, and the types: pools alike in
            # those share the groups (read-only; each NodeClaim copies their host ports).
            groups_key = (
                id(shared),
                template.taints,
                template.requirements.only(daemon_keys),
                daemon_serial,
            )
            groups = daemon_groups.get(groups_key)
            if groups is None:
                hit = self.groups.get(groups_key)
                if hit is not None and hit[0] is shared:
                    groups = hit[1]
            if groups is None:
                groups = build_daemon_groups(template, daemons)
                for group in groups:
                    group.mask = shared.mask_of(group.instance_types)
                if len(self.groups) >= _CACHE_MAX:
                    self.groups.clear()
                self.groups[groups_key] = (shared, groups)
            daemon_groups[groups_key] = groups
            template.daemon_groups = groups
            templates.append(template)
        return templates, notes

    def pool_types_of(
        self,
        base_table: InstanceTypeTable,
        all_types: Mask,
        reqs: Requirements,
        relax_min_values: bool,
    ) -> tuple[bytes, tuple[InstanceType, ...]] | str:
        """A NodePool's instance types: those of `base_table` its requirements allow (the
        mask's bytes and the types), or why none is left. Shared per (table, requirements,
        minValues policy): the answer is a function of exactly those."""
        key = (id(base_table), reqs, relax_min_values)
        hit = self.pool_types.get(key)
        if hit is not None and hit[0] is base_table:
            return hit[1]
        mask, outcome = nodepool_types(base_table, reqs, relax_min_values, all_types)
        out: tuple[bytes, tuple[InstanceType, ...]] | str
        if not mask.any():
            out = outcome.min_values_error or "requirements filtered out all instance types"
        else:
            out = (mask.tobytes(), tuple(base_table.types_of(mask)))
        if len(self.pool_types) >= _CACHE_MAX:
            self.pool_types.clear()
        self.pool_types[key] = (base_table, out)
        return out

    def node_entry(self, n: StateNode, daemons: Sequence[Pod], daemon_serial: int) -> NodeEntry:
        """What an existing node starts a pass with (see `NodeEntry`): the last one built for
        the node's name while the `StateNode` is the same object and the DaemonSets the same
        (a frozen StateNode: the same inputs, the same answers). `daemons` are the DaemonSets'
        pods of `daemon_serial` (`daemons_of`)."""
        hit = self.node_entries.get(n.name)
        if hit is not None and hit.state is n and hit.daemon_serial == daemon_serial:
            return hit
        pods = self._node_pods(n)
        taints = n.effective_taints()
        labels_reqs, reqs = self._node_requirements(n)
        daemon_requests = self._node_daemon_requests(n, taints, labels_reqs, daemons, daemon_serial)
        missing_daemons = {k: max(v, 0) for k, v in subtract(daemon_requests, pods.daemons).items()}
        available = subtract(dict(n.allocatable), pods.bound)
        counted, inverse = _counted(n, pods)
        out = NodeEntry(
            n,
            daemon_serial,
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
        if len(self.node_entries) >= _NODE_CACHE_MAX:
            self.node_entries.clear()
        self.node_entries[n.name] = out
        return out

    def _node_pods(self, n: StateNode) -> _NodePods:
        """What the node's bound pods request (all of them, and the DaemonSet ones; each plus
        `pods: 1`), their keys and host ports; shared while the node has the same pod objects
        (frozen models: the same objects, the same answers). Only read."""
        hit = self.node_pods.get(n.name)
        # `hit.pods` is `tuple(n.pods)`: the very tuple when the node's pods were one, and
        # a snapshot that rebuilds the node mostly hands the same tuple on; else the pods
        # are compared one by one (`map` over `is_`: no generator frame per pod).
        if hit is not None and (
            hit.pods is n.pods
            or (len(hit.pods) == len(n.pods) and all(map(operator.is_, hit.pods, n.pods)))
        ):
            return hit
        lookup = self.bound_pods.lookup
        facts = [lookup(p) for p in n.pods]
        bound = add(*(f.requests for f in facts))
        already = add(*(f.requests for f in facts if f.daemon))
        usage = HostPortUsage()
        for f in facts:
            usage.add(f.pod, f.ports)
        out = _NodePods(
            tuple(n.pods), bound, already, tuple(f.key for f in facts), usage.reserved, []
        )
        if len(self.node_pods) >= _NODE_CACHE_MAX:
            self.node_pods.clear()
        self.node_pods[n.name] = out
        return out

    def _node_requirements(self, n: StateNode) -> tuple[Requirements, Requirements]:
        """A node's labels as requirements, and those plus its hostname (shared per label
        mapping and hostname: the same node every pass)."""
        key = (tuple(n.labels.items()), n.hostname)
        hit = self.node_reqs.get(key)
        if hit is not None:
            return hit
        labels_reqs = Requirements.from_labels(n.labels)
        out = (labels_reqs, labels_reqs.add(Requirement.new(HOSTNAME, "In", [n.hostname])))
        if len(self.node_reqs) >= _NODE_CACHE_MAX:
            self.node_reqs.clear()
        self.node_reqs[key] = out
        return out

    def _node_daemon_requests(
        self,
        n: StateNode,
        taints: tuple[Taint, ...],
        labels_reqs: Requirements,
        daemons: Sequence[Pod],
        daemon_serial: int,
    ) -> Resources:
        """What the DaemonSets that would run on the node request (their pods' requests plus
        one pod each): those tolerating its taints whose strict requirements its labels meet."""
        key = (tuple(n.labels.items()), taints, daemon_serial)
        hit = self.node_daemons.get(key)
        if hit is not None:
            return hit
        daemon_requests: Resources = {}
        for p in daemons:
            if untolerated(taints, p.spec.tolerations) is not None:
                continue
            if labels_reqs.compatible(pod_requirements(p, strict=True)) is not None:
                continue
            daemon_requests = add(daemon_requests, pod_requests(p.spec), {"pods": 1})
        if len(self.node_daemons) >= _NODE_CACHE_MAX:
            self.node_daemons.clear()
        self.node_daemons[key] = daemon_requests
        return daemon_requests


def _counted(
    n: StateNode, pods: _NodePods
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
class NodeEntry:
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


ENTRY_ORDER = operator.attrgetter("order")
