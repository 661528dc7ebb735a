"""The bin-packing instance behind `plan --optimal`: pod classes, node "bins" and what may go where.

From a `Plan` made by the provisioning loop (`loop.py`), the pods Karpenter placed on new,
launched NodeClaims of dynamic NodePools are grouped into pod classes (same requests, same
compatible bins, same hostname constraints), and every offering of every Ready NodePool that
some class can use becomes a bin: (NodePool, instance type, zone, capacity type) with its price.

Compatibility is decided by the scheduler's own checks, never re-implemented here: the
NodePool's template (`Scheduler.templates`: requirements, taints, instance types after the
NodePool's filter, DaemonSet overhead groups) refuses a pod with `nodeclaim.template_refusal`
(taints, requirements), keeps the instance types `filter.filter_options` keeps for the pod alone
(its requirements merged with the NodePool's, its requests plus the type's DaemonSet overhead,
an available offering; Karpenter's `filterInstanceTypesByRequirements`), and the offerings
`instancetypes.compatible_offerings` allows under the merged requirements. The scheduler is
built with preferences ignored (`preference_policy="Ignore"`): preferred node affinity,
preferred pod (anti-)affinity and ScheduleAnyway spreads are relaxed, so the fleet Karpenter
planned stays feasible and the floor stays a lower bound.

Hostname constraints that are linear per node are kept: a required pod anti-affinity on
`kubernetes.io/hostname` that selects the pod itself allows one such pod per node, and a
DoNotSchedule topology spread on hostname at most maxSkew selected pods per node (a new node is
a domain holding none of them, which Karpenter's topology counts as the minimum). Every other
topology constraint (zone spreads, minDomains, pod affinity, anti-affinity between different
pods) is relaxed and said so in `Instance.notes`. `build_instance` gathers the Plan's pods, its
first pass's scheduler and limits; `pack_instance` is the rest, over any pods and scheduler
(the simulator's cost floor, `floor.py`, packs every pod served, one pod standing for its class).
Called by `fleet.optimise` and `floor.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from gpucap.apis.core import Pod
from gpucap.apis.labels import HOSTNAME
from gpucap.controllers.provisioning.loop import Plan
from gpucap.scheduling.filter import filter_options
from gpucap.scheduling.instancetypes import InstanceType, Offering, compatible_offerings
from gpucap.scheduling.nodeclaim import template_refusal
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate
from gpucap.scheduling.poddata import PodData, pod_data
from gpucap.scheduling.scheduler import Scheduler
from gpucap.scheduling.topology import TopologyType

__all__ = [
    "Bin",
    "FleetNode",
    "Instance",
    "PackMemo",
    "PodClass",
    "build_instance",
    "pack_instance",
]


@dataclass(frozen=True, slots=True)
class Bin:
    """One kind of node the NodePools allow: `nodepool`'s `instance_type` launched in `zone` as
    `capacity_type` at `price` ($/hour). `capacity` is what the pods may use (allocatable less
    the DaemonSet overhead of the type's group), `limit_capacity` what counts against the
    NodePool's limits (the type's capacity), `most` how many may launch (a reservation's free
    instances; None: no bound)."""

    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    capacity: Mapping[str, int]
    limit_capacity: Mapping[str, int]
    most: int | None = None
    reservation_id: str = ""

    @property
    def label(self) -> str:
        return f"{self.nodepool}/{self.instance_type}/{self.zone}/{self.capacity_type}"


@dataclass(frozen=True, slots=True)
class FleetNode:
    """One node of a fleet (Karpenter's or the optimum's) and the pods (keys) it holds."""

    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    pods: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PodClass:
    """Pods that are alike for the model: the same requests (with Karpenter's `pods: 1`), the
    same compatible bins (`bins`, indices into `Instance.bins`) and the same hostname groups."""

    pods: tuple[Pod, ...]
    requests: Mapping[str, int]
    bins: tuple[int, ...]
    groups: tuple[int, ...]  # indices into `Instance.group_caps`


@dataclass(slots=True)
class Instance:
    """What the MILP reads (see the module docstring). `karpenter` is Karpenter's fleet over
    the same pods (bin label, price, pod keys per NodeClaim) and `karpenter_cost` its price."""

    classes: list[PodClass]
    bins: list[Bin]
    resources: list[str]
    group_caps: list[int]  # per hostname group: most of its pods on one node
    limits: dict[str, dict[str, int]]  # NodePool -> what is left of its limits
    karpenter: list[FleetNode]
    karpenter_cost: float
    notes: list[str] = field(default_factory=list)
    # Pods the model cannot place although Karpenter did (should not happen; said in a note).
    unplaceable: list[str] = field(default_factory=list)

    @property
    def pods(self) -> int:
        return sum(len(c.pods) for c in self.classes)


def build_instance(made: Plan) -> Instance:
    """The instance of `made` (a `Plan` of the provisioning loop; see the module docstring)."""
    first = made.first_pass
    if first is None:
        raise ValueError("--optimal needs a Plan made by the provisioning loop")
    claims = [c for c in made.node_claims if not c.static and c.launch is not None]
    pods = [p for c in claims for p in c.pods]
    options = replace(first.options, preference_policy="Ignore", reserved_offering_mode="Strict")
    sched = Scheduler(
        first.pools,
        state_nodes=first.state_nodes,
        daemonsets=first.daemonsets,
        pending_pods=pods,
        options=options,
    )
    limits = {k: dict(v) for k, v in sched.remaining_resources.items()}
    for c in made.node_claims:
        it = c.launched_type
        if c.static and it is not None and c.nodepool in limits:
            left = limits[c.nodepool]
            for k in left:
                left[k] -= 1 if k == "nodes" else it.capacity.get(k, 0)
    inst = pack_instance(sched, pods, limits)
    inst.karpenter = [
        FleetNode(
            c.nodepool,
            c.launch.instance_type,
            c.launch.zone,
            c.launch.capacity_type,
            c.launch.price,
            tuple(p.key for p in c.pods),
        )
        for c in claims
        if c.launch is not None
    ]
    inst.karpenter_cost = round(sum(n.price for n in inst.karpenter), 6)
    return inst


@dataclass(slots=True)
class PackMemo:
    """What `pack_instance` keeps between calls over one scheduler (the simulator's floor asks
    for many populations under the same NodePools): the bins made so far (each with all of its
    type's resources), the compatible bins per pod shape, the hostname groups, and each pod's
    parts, by pod object (pods are frozen; the pod is kept, so its id stays its own)."""

    sched: Scheduler
    bins: list[Bin] = field(default_factory=list)
    bin_index: dict[tuple[str, str, str, str, str], int] = field(default_factory=dict)
    compat: dict[object, tuple[int, ...]] = field(default_factory=dict)
    groups: dict[int, int] = field(default_factory=dict)
    group_caps: list[int] = field(default_factory=list)
    pods: dict[int, tuple[Pod, PodData, tuple[int, ...], frozenset[str]]] = field(
        default_factory=dict
    )


def pack_instance(
    sched: Scheduler,
    pods: Sequence[Pod],
    limits: Mapping[str, Mapping[str, int]],
    counts: Sequence[int] | None = None,
    memo: PackMemo | None = None,
) -> Instance:
    """The classes and bins of `pods` over `sched`'s NodePool templates, under `limits` (what
    is left of each NodePool's), without Karpenter's fleet: `build_instance`'s core, and the
    simulator's cost floor's (`optimal/floor.py`). `sched` is built with preferences ignored
    and `pods` as its pending pods (the topology reads them). With `counts`, `pods[i]` stands
    for `counts[i]` pods alike (its class holds it that many times). With `memo` (over `sched`),
    what earlier calls worked out is reused and its bins are the instance's: the same classes
    and floor, bins with more resources than the pods ask for."""
    m = memo if memo is not None else PackMemo(sched)
    # Without a memo a bin holds only the resources the pods ask for (`plan --optimal`'s).
    own: list[str] | None = None
    parts: list[tuple[PodData, tuple[int, ...], frozenset[str]]] = []
    for pod in pods:
        hit = m.pods.get(id(pod))
        if hit is None or hit[0] is not pod:
            data = pod_data(pod, sched.options)
            mine, why = _hostname_groups(sched, pod, m)
            hit = m.pods[id(pod)] = (pod, data, mine, why)
        parts.append(hit[1:])
    resources = sorted({k for d, _, _ in parts for k, v in d.requests.items() if v > 0})
    if memo is None:
        own = resources

    def compat(pod: Pod, data: PodData) -> tuple[int, ...]:
        key = (
            data.requirements,
            tuple(pod.spec.tolerations),
            data.ports,
            tuple(sorted(data.requests.items())),
        )
        hit = m.compat.get(key)
        if hit is None:
            hit = m.compat[key] = _compatible_bins(
                pod, data, sched.templates, own, m.bins, m.bin_index
            )
        return hit

    relaxed: set[str] = set()
    datas = [d for d, _, _ in parts]
    by_key: dict[tuple[object, tuple[int, ...], tuple[int, ...]], list[int]] = {}
    for i, (pod, (data, mine, why)) in enumerate(zip(pods, parts, strict=True)):
        relaxed |= why
        key = (tuple(sorted(data.requests.items())), compat(pod, data), mine)
        by_key.setdefault(key, []).append(i)
    bins, group_caps = m.bins, m.group_caps
    times = counts if counts is not None else [1] * len(pods)
    classes: list[PodClass] = []
    unplaceable: list[str] = []
    for (_, cbins, cgroups), members in by_key.items():
        if not cbins:
            unplaceable.extend(pods[i].key for i in members)
            continue
        classes.append(
            PodClass(
                tuple(pods[i] for i in members for _ in range(times[i])),
                {k: v for k, v in datas[members[0]].requests.items() if v > 0},
                cbins,
                cgroups,
            )
        )
    notes: list[str] = []
    if any(t.requirements.has_min_values() for t in sched.templates):
        relaxed.add("minValues")
    if relaxed:
        notes.append(
            "relaxed (not linear per node): " + ", ".join(sorted(relaxed)) + "; the optimum "
            "and the floor ignore them"
        )
    if unplaceable:
        notes.append(
            f"{len(unplaceable)} pod(s) Karpenter placed fit no bin of the model and are left "
            f"out: {', '.join(unplaceable[:5])}"
        )
    pools = {b.nodepool for b in bins}
    return Instance(
        classes=classes,
        bins=bins,
        resources=resources,
        group_caps=list(group_caps),
        limits={k: dict(v) for k, v in limits.items() if k in pools},
        karpenter=[],
        karpenter_cost=0.0,
        notes=notes,
        unplaceable=unplaceable,
    )


def _hostname_groups(
    sched: Scheduler, pod: Pod, m: PackMemo
) -> tuple[tuple[int, ...], frozenset[str]]:
    """The hostname groups of `pod` (ids into `m.group_caps`, made as first seen) and what of
    its topology the model relaxes (see the module docstring)."""
    sched.topology.update(pod)
    owned = sched.topology.owned.get(pod.metadata.uid or pod.key, [])
    mine: list[int] = []
    relaxed: set[str] = set()
    for g in owned:
        if g.key == HOSTNAME and g.type is not TopologyType.AFFINITY and g.selects(pod):
            gid = m.groups.get(id(g))
            if gid is None:
                gid = m.groups[id(g)] = len(m.group_caps)
                m.group_caps.append(g.max_skew if g.type is TopologyType.SPREAD else 1)
            mine.append(gid)
            if g.min_domains is not None:
                relaxed.add("minDomains")
        else:
            relaxed.add(f"{g.type.value} on {g.key}")
    return tuple(sorted(mine)), frozenset(relaxed)


def _compatible_bins(  # noqa: PLR0917 - the builder's shared tables
    pod: Pod,
    data: PodData,
    templates: Sequence[NodeClaimTemplate],
    resources: Sequence[str] | None,
    bins: list[Bin],
    bin_index: dict[tuple[str, str, str, str, str], int],
) -> tuple[int, ...]:
    """The bins (created as first needed) a new node of each template could take `pod` on,
    alone: the scheduler's template refusal, type filter and offering check (module docstring)."""
    out: list[int] = []
    for template in templates:
        table = template.table
        if table is None or template_refusal(template.taints, template.requirements, pod, data):
            continue
        reqs = template.requirements.merge(data.requirements)
        everything = np.ones(len(table.types), dtype=np.bool_)
        mask, _, _ = filter_options(
            table,
            everything,
            reqs,
            pod,
            template.daemon_groups,
            data.requests,
            relax_min_values=True,
            ports=data.ports,
        )
        for row in np.flatnonzero(mask).tolist():
            it = table.types[row]
            overhead = _overhead(template, row)
            for o in compatible_offerings(it, reqs):
                key = (template.name, it.name, o.zone, o.capacity_type, o.reservation_id)
                at = bin_index.get(key)
                if at is None:
                    at = bin_index[key] = len(bins)
                    bins.append(_bin(template.name, it, o, overhead, resources))
                out.append(at)
    return tuple(sorted(set(out)))


def _overhead(template: NodeClaimTemplate, row: int) -> Mapping[str, int]:
    """The DaemonSet overhead of the group holding the template's type at `row`."""
    table = template.table
    assert table is not None
    for g in template.daemon_groups:
        mask = g.mask if g.mask is not None else table.mask_of(g.instance_types)
        if mask[row]:
            return g.overhead
    return {}


def _bin(
    nodepool: str,
    it: InstanceType,
    o: Offering,
    overhead: Mapping[str, int],
    resources: Sequence[str] | None,
) -> Bin:
    keys = resources if resources is not None else sorted({*it.allocatable, *overhead})
    capacity = {k: it.allocatable.get(k, 0) - overhead.get(k, 0) for k in keys}
    return Bin(
        nodepool=nodepool,
        instance_type=it.name,
        zone=o.zone,
        capacity_type=o.capacity_type,
        price=o.price,
        capacity=capacity,
        limit_capacity=dict(it.capacity),
        most=o.reservation_capacity if o.reservation_id else None,
        reservation_id=o.reservation_id,
    )
