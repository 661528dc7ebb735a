"""Topology spread and pod (anti-)affinity, as Karpenter's scheduler tracks them.

Karpenter (`pkg/controllers/provisioning/scheduling/topology*.go`) keeps one `TopologyGroup`
per distinct constraint (spread, affinity or anti-affinity; key; namespaces; selector; maxSkew;
node filter). A group counts, per domain (a zone, a hostname, a capacity type, ...), the pods its
selector matches. Domains come from the NodePools and their instance types (all values each
topology key can take), from existing nodes, and from planned nodes as they are created.

Before a pod is placed on a node, `add_requirements` narrows the node's requirements for every
group the pod owns (and every existing pod's anti-affinity that would count it):
- spread: the allowed domain with the fewest matching pods, if placing there keeps the skew
  within maxSkew (a new node's hostname always starts at 0);
- affinity: domains that already have a matching pod (or, for the first pod of a self-selecting
  group, any domain);
- anti-affinity: domains with no matching pod.
After placement, `record` counts the pod in the domain the node ended up in.

Go iterates maps in random order where several domains tie; gpucap iterates domains sorted, so
ties go to the lexicographically smallest domain. Called by the scheduler (`scheduler.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from gpucap.apis.core import Pod, PodAffinityTerm, Taint, Toleration, TopologySpreadConstraint
from gpucap.apis.labels import HOSTNAME
from gpucap.apis.meta import LabelSelector, LabelSelectorRequirement, matches_selector
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.taints import untolerated

__all__ = [
    "DomainGroups",
    "ThroughTypesCache",
    "Topology",
    "TopologyError",
    "TopologyGroup",
    "TopologyType",
    "has_anti_affinity",
]

_MAX_INT32 = 2**31 - 1


class TopologyType(Enum):
    SPREAD = "topology spread"
    AFFINITY = "pod affinity"
    ANTI_AFFINITY = "pod anti-affinity"


class TopologyError(Exception):
    """No domain satisfies a topology constraint for this pod on this node.

    The message is built only when asked for: most failures (a pod not fitting one of many
    planned nodes) are never shown.
    """

    def __init__(self, group: TopologyGroup, pod_domains: Requirement, node_domains: Requirement):
        super().__init__()
        self.group = group
        self.pod_domains = pod_domains
        self.node_domains = node_domains

    def __str__(self) -> str:
        # Formatted from the live counts: the scheduler formats a failure right after it
        # happens, before any count changes.
        counts = ", ".join(f"{d}={c}" for d, c in sorted(self.group.domains.items())[:25])
        return (
            f"unsatisfiable topology constraint for {self.group.type.value}, key={self.group.key} "
            f"(counts = {{{counts}}}, podDomains = {self.pod_domains}, "
            f"nodeDomains = {self.node_domains})"
        )


# topology key -> domain -> list of taint sets of the NodePools offering that domain
DomainGroups = dict[str, dict[str, list[tuple[Taint, ...]]]]


def build_domain_groups(
    pools: Sequence[tuple[Requirements, tuple[Taint, ...], Sequence[Requirements]]],
    *,
    cache: ThroughTypesCache | None = None,
) -> DomainGroups:
    """Every domain each key can take: per NodePool (its requirements, its taints, and its
    instance types' requirements), the values of pool ∩ type requirements, plus the pool's own
    `In` values (Karpenter's `buildDomainGroups`).

    Karpenter merges every pool with every type. Here the domains a pool adds through its
    types are computed once per distinct (pool requirements on the keys the types define,
    type list) and shared: pools that differ only in their name, their own labels or their
    taints cost one pass over the types together, so the work grows with the distinct pool
    shapes, not pools x types. A type list is recognised by identity (the scheduler passes one
    object per node class). With `cache` (kept by a caller that builds many schedulers, the
    simulator's provisioner) the per-type-list work is also shared across calls: requirements
    are immutable, the lists are never changed after they are built, and the pairs are only
    read, so a hit is the same answer. A domain keeps each distinct taint set once (Karpenter
    appends repeats; they change nothing, the taint sets are only asked whether any is
    tolerated).
    """
    groups: DomainGroups = {}
    seen: dict[tuple[str, str], set[tuple[Taint, ...]]] = {}

    def insert(key: str, domain: str, taints: tuple[Taint, ...]) -> None:
        by_domain = groups.setdefault(key, {})
        existing = by_domain.get(domain)
        # A domain reachable without taints needs no taint bookkeeping.
        if existing is None or not taints:
            by_domain[domain] = [taints]
            seen[key, domain] = {taints}
        elif existing[0]:
            known = seen[key, domain]
            if taints not in known:
                known.add(taints)
                existing.append(taints)

    type_keys: dict[int, frozenset[str]] = {}
    through_types: dict[tuple[Requirements, int], list[tuple[str, list[str]]]] = {}
    done: set[tuple[Requirements, tuple[Taint, ...], int]] = set()
    for pool_reqs, taints, type_reqs in pools:
        if (pool_reqs, taints, id(type_reqs)) in done:
            continue  # the same domains with the same taints: inserting again changes nothing
        done.add((pool_reqs, taints, id(type_reqs)))
        keys = type_keys.get(id(type_reqs))
        if keys is None:
            keys = type_keys[id(type_reqs)] = frozenset(k for r in type_reqs for k in r)
        on_keys = pool_reqs.only(keys)
        pairs = through_types.get((on_keys, id(type_reqs)))
        if pairs is None:
            pairs = through_types[on_keys, id(type_reqs)] = _domains_through_types_cached(
                on_keys, type_reqs, cache
            )
        for key, domains in pairs:
            groups.setdefault(key, {})
            for domain in domains:
                insert(key, domain, taints)
        if type_reqs:
            # A key no type defines keeps the pool's requirement whatever the type.
            for key, req in pool_reqs.items():
                if key not in keys:
                    groups.setdefault(key, {})
                    if not req.complement:
                        for domain in sorted(req.values):
                            insert(key, domain, taints)
        for key, req in pool_reqs.items():
            if req.operator == "In":
                for domain in sorted(req.values):
                    insert(key, domain, taints)
    return groups


# Across schedulers (see `build_domain_groups`'s `cache`): (pool requirements, identity of a
# type requirement list) -> (that list, its domains). Each entry holds the list itself, so the
# identity cannot be reused while the entry lives.
ThroughTypesCache = dict[
    tuple[Requirements, int], tuple[Sequence[Requirements], list[tuple[str, list[str]]]]
]
_THROUGH_TYPES_MAX = 64


def _domains_through_types_cached(
    pool_reqs: Requirements,
    type_reqs: Sequence[Requirements],
    cache: ThroughTypesCache | None,
) -> list[tuple[str, list[str]]]:
    if cache is None:
        return _domains_through_types(pool_reqs, type_reqs)
    key = (pool_reqs, id(type_reqs))
    hit = cache.get(key)
    if hit is not None and hit[0] is type_reqs:
        return hit[1]
    pairs = _domains_through_types(pool_reqs, type_reqs)
    if len(cache) >= _THROUGH_TYPES_MAX:
        cache.clear()
    cache[key] = (type_reqs, pairs)
    return pairs


def _domains_through_types(
    pool_reqs: Requirements, type_reqs: Sequence[Requirements]
) -> list[tuple[str, list[str]]]:
    """Per key, the domains of pool ∩ type over `type_reqs`, in Karpenter's insertion order
    (type by type, values sorted), each once."""
    # What merging the pool into each type and reading every key's values gives, without
    # building the merged requirements: `pool.merge(type)` holds the pool's keys first (each
    # intersected with the type's requirement on it, if any), then the type's other keys. Per
    # key the domains arrive type by type; inserting the values of one requirement object again
    # adds nothing, so each object (types share them) is read once, and each pool-only key once.
    if not type_reqs:
        return []
    found: dict[str, dict[str, None]] = {key: {} for key in pool_reqs}
    done: set[int] = set()  # ids of type requirements read (alive in `type_reqs` throughout)
    pool_only_done: set[str] = set()
    for it_reqs in type_reqs:
        for key, pool_req in pool_reqs.items():
            if key not in it_reqs and key not in pool_only_done:
                pool_only_done.add(key)
                if not pool_req.complement:
                    found[key].update(dict.fromkeys(sorted(pool_req.values)))
        for type_req in it_reqs.values():
            if id(type_req) in done:
                continue
            done.add(id(type_req))
            key = type_req.key
            existing = pool_reqs.get(key)
            req = type_req if existing is None else type_req.intersection(existing)
            domains = found.get(key)
            if domains is None:
                domains = found[key] = {}
            if not req.complement:
                domains.update(dict.fromkeys(sorted(req.values)))
    return [(key, list(domains)) for key, domains in found.items()]


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """Which nodes a spread constraint counts (nodeAffinityPolicy / nodeTaintsPolicy)."""

    requirements: tuple[Requirements, ...] = ()
    taint_policy: str = ""  # Honor | Ignore | "" (affinity groups: no filter)
    affinity_policy: str = ""
    tolerations: tuple[Toleration, ...] = ()

    @classmethod
    def for_pod(cls, pod: Pod, taint_policy: str, affinity_policy: str) -> NodeFilter:
        base = Requirements.from_labels(pod.spec.node_selector)
        aff = pod.spec.affinity
        required = (
            aff.node_affinity.required_during_scheduling_ignored_during_execution
            if aff is not None and aff.node_affinity is not None
            else None
        )
        if required is None:
            reqs: tuple[Requirements, ...] = (base,)
        else:
            reqs = tuple(
                base.merge(Requirements.from_node_selector(term.match_expressions))
                for term in required.node_selector_terms
            )
        if all(not r for r in reqs):
            # Every node is compatible with no requirement: `matches` answers as without
            # terms, and skips the check per node.
            reqs = ()
        return cls(reqs, taint_policy, affinity_policy, tuple(pod.spec.tolerations))

    def matches(self, taints: Iterable[Taint], requirements: Requirements) -> bool:
        # Karpenter checks these strictly (without its well-known-label allowance).
        if (
            self.affinity_policy == "Honor"
            and self.requirements
            and not any(requirements.is_compatible(r) for r in self.requirements)
        ):
            return False
        return not (self.taint_policy == "Honor" and untolerated(taints, self.tolerations))


_NO_FILTER = NodeFilter()  # (anti-)affinity groups count every node


def _selector_key(selector: LabelSelector | None) -> tuple[object, ...]:
    if selector is None:
        return ("nil",)
    exprs = tuple(
        sorted((e.key, e.operator, tuple(sorted(e.values))) for e in selector.match_expressions)
    )
    return (tuple(sorted(selector.match_labels.items())), exprs)


# What builds a group: type, key, namespaces, selector, maxSkew, minDomains, node filter.
_GroupSpec = tuple[
    TopologyType, str, frozenset[str], LabelSelector | None, int, int | None, NodeFilter
]


def _identity(spec: _GroupSpec) -> tuple[object, ...]:
    """The group `spec` builds, as Karpenter tells groups apart (minDomains not included)."""
    kind, key, namespaces, selector, max_skew, _, node_filter = spec
    return (kind, key, tuple(sorted(namespaces)), max_skew, node_filter, _selector_key(selector))


@dataclass(slots=True, eq=False)
class TopologyGroup:
    """One constraint's domain counts (Karpenter's `TopologyGroup`)."""

    type: TopologyType
    key: str
    namespaces: frozenset[str]
    selector: LabelSelector | None
    max_skew: int
    min_domains: int | None
    node_filter: NodeFilter
    domains: dict[str, int] = field(default_factory=dict)
    empty_domains: set[str] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)
    # Moves whenever the group's answers (`next_domains`) for a planned NodeClaim or an
    # existing node may change: for a spread, any count; for (anti-)affinity, only which
    # domains exist and which have a pod. Registering a new hostname moves neither: such
    # targets always ask about their single hostname, whose count alone (and whether any
    # domain has a pod) decides. The scheduler's pod classes (`podclasses.py`) keep a
    # topology refusal while the epoch stays.
    epoch: int = 0

    @property
    def identity(self) -> tuple[object, ...]:
        return _identity(
            (
                self.type,
                self.key,
                self.namespaces,
                self.selector,
                self.max_skew,
                self.min_domains,
                self.node_filter,
            )
        )

    def selects(self, pod: Pod) -> bool:
        # A nil selector matches nothing (Kubernetes LabelSelectorAsSelector(nil) = Nothing).
        return pod.metadata.namespace in self.namespaces and matches_selector(
            self.selector, pod.metadata.labels
        )

    def counts(self, pod: Pod, taints: Iterable[Taint], requirements: Requirements) -> bool:
        return self.selects(pod) and self.node_filter.matches(taints, requirements)

    def register(self, *domains: str) -> None:
        for d in domains:
            if d not in self.domains:
                self.domains[d] = 0
                self.empty_domains.add(d)
                if self.key != HOSTNAME:
                    self.epoch += 1

    def record(self, *domains: str) -> None:
        for d in domains:
            count = self.domains.get(d, 0)
            self.domains[d] = count + 1
            self.empty_domains.discard(d)
            if count == 0 or self.type is TopologyType.SPREAD:
                self.epoch += 1

    # ---- next domain ---------------------------------------------------------------------
    def next_domains(
        self, pod: Pod, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        if self.type is TopologyType.SPREAD:
            return self._next_spread(pod, pod_domains, node_domains)
        if self.type is TopologyType.AFFINITY:
            return self._next_affinity(pod, pod_domains, node_domains)
        return self._next_anti_affinity(pod_domains, node_domains)

    def _min_count(self, pod_domains: Requirement) -> int:
        if self.key == HOSTNAME:
            return 0  # a new node is always an empty hostname domain
        supported = [c for d, c in self.domains.items() if pod_domains.has(d)]
        if self.min_domains is not None and len(supported) < self.min_domains:
            return 0
        return min(supported, default=_MAX_INT32)

    def _next_spread(
        self, pod: Pod, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        least = self._min_count(pod_domains)
        self_selecting = self.selects(pod)
        if self.key == HOSTNAME and len(node_domains.values) == 1 and not node_domains.complement:
            host = next(iter(node_domains.values))
            count = self.domains.get(host, 0) + (1 if self_selecting else 0)
            if count <= self.max_skew:
                return Requirement.new(self.key, "In", [host])
            return Requirement.new(self.key, "DoesNotExist")
        if node_domains.operator == "In":
            candidates = [d for d in sorted(node_domains.values) if d in self.domains]
        else:
            candidates = [d for d in sorted(self.domains) if node_domains.has(d)]
        best: str | None = None
        best_count = _MAX_INT32
        for d in candidates:
            count = self.domains[d] + (1 if self_selecting else 0)
            if count - least <= self.max_skew and count < best_count:
                best, best_count = d, count
        if best is None:
            return Requirement.new(self.key, "DoesNotExist")
        return Requirement.new(self.key, "In", [best])

    def bootstraps(self, pod: Pod, pod_domains: Requirement) -> bool:
        """The first pod of a self-selecting affinity group may go anywhere (Karpenter's
        special case): no domain has a selected pod yet, or none the pod may go to."""
        return self.selects(pod) and (
            len(self.domains) == len(self.empty_domains)
            or not self._any_compatible_pod_domain(pod_domains)
        )

    def _any_compatible_pod_domain(self, pod_domains: Requirement) -> bool:
        return any(pod_domains.has(d) and c > 0 for d, c in self.domains.items())

    def _next_affinity(
        self, pod: Pod, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        def bootstrap() -> bool:
            return self.bootstraps(pod, pod_domains)

        if self.key == HOSTNAME and len(node_domains.values) == 1 and not node_domains.complement:
            host = next(iter(node_domains.values))
            if pod_domains.has(host) and (self.domains.get(host, 0) > 0 or bootstrap()):
                return Requirement.new(self.key, "In", [host])
            return Requirement.new(self.key, "DoesNotExist")
        if node_domains.operator == "In":
            options = [
                d
                for d in sorted(node_domains.values)
                if pod_domains.has(d) and self.domains.get(d, 0) > 0
            ]
        else:
            options = [
                d
                for d in sorted(self.domains)
                if pod_domains.has(d) and self.domains[d] > 0 and node_domains.has(d)
            ]
        if options:
            return Requirement.new(self.key, "In", options)
        if bootstrap():
            both = pod_domains.intersection(node_domains)
            picks = []
            first_both = next((d for d in sorted(self.domains) if both.has(d)), None)
            if first_both is not None:
                picks.append(first_both)
            first_pod = next((d for d in sorted(self.domains) if pod_domains.has(d)), None)
            if first_pod is not None:
                picks.append(first_pod)
            if picks:
                return Requirement.new(self.key, "In", picks)
        return Requirement.new(self.key, "DoesNotExist")

    def _next_anti_affinity(
        self, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        if self.key == HOSTNAME and len(node_domains.values) == 1 and not node_domains.complement:
            host = next(iter(node_domains.values))
            if self.domains.get(host, 0) == 0:
                return Requirement.new(self.key, "In", [host])
            return Requirement.new(self.key, "DoesNotExist")
        if node_domains.operator == "In":
            options = [
                d
                for d in sorted(node_domains.values)
                if d in self.empty_domains and pod_domains.has(d)
            ]
        else:
            options = [
                d for d in sorted(self.empty_domains) if node_domains.has(d) and pod_domains.has(d)
            ]
        if options:
            return Requirement.new(self.key, "In", options)
        return Requirement.new(self.key, "DoesNotExist")


@dataclass(frozen=True, slots=True)
class CountedPod:
    """A pod already on a node, for counting: the pod and its node's labels and taints."""

    pod: Pod
    node_labels: Mapping[str, str]
    node_taints: tuple[Taint, ...] = ()
    node_name: str = ""


class Topology:
    """All topology groups of one scheduling pass (Karpenter's `Topology`)."""

    def __init__(
        self,
        domain_groups: DomainGroups,
        *,
        existing_pods: Sequence[CountedPod] = (),
        existing_node_domains: Sequence[tuple[Mapping[str, str], tuple[Taint, ...]]] = (),
        ignore_preferences: bool = False,
        inverse_pods: Sequence[CountedPod] | None = None,
    ) -> None:
        """`inverse_pods`: the `existing_pods` with a pod anti-affinity, in their order, when
        the caller knows them (the scheduler keeps them per node); found here otherwise."""
        self.domain_groups = domain_groups
        self.groups: dict[tuple[object, ...], TopologyGroup] = {}
        self.owned: dict[str, list[TopologyGroup]] = {}  # pod UID -> groups it owns
        self.inverse_groups: dict[tuple[object, ...], TopologyGroup] = {}
        self._on_key: dict[str, tuple[tuple[int, int], list[TopologyGroup], set[str]]] = {}
        self._selects: _SelectsMemo = {}
        self._inverse_selects: _SelectsMemo = {}
        self.existing_pods = existing_pods
        self.existing_node_domains = existing_node_domains
        self.ignore_preferences = ignore_preferences
        if inverse_pods is None:
            inverse_pods = [c for c in existing_pods if has_anti_affinity(c.pod)]
        for counted in inverse_pods:
            self._track_inverse(counted.pod, counted.node_labels)

    # ---- building groups ---------------------------------------------------------------------
    def _new_group(self, spec: _GroupSpec, pod: Pod) -> TopologyGroup:
        """Karpenter's `NewTopologyGroup` for `spec`, with the domains `pod` may reach."""
        kind, key, namespaces, selector, max_skew, min_domains, node_filter = spec
        tg = TopologyGroup(kind, key, namespaces, selector, max_skew, min_domains, node_filter)
        ignore_taints = node_filter.taint_policy == "Ignore"
        for domain, taint_sets in sorted(self.domain_groups.get(key, {}).items()):
            if ignore_taints or any(
                untolerated(ts, pod.spec.tolerations) is None for ts in taint_sets
            ):
                tg.register(domain)
        return tg

    def _namespaces(self, pod: Pod, term: PodAffinityTerm) -> frozenset[str]:
        # gpucap has no Namespace objects: a namespaceSelector selects the namespaces listed.
        if term.namespaces:
            return frozenset(term.namespaces)
        return frozenset({pod.metadata.namespace})

    def _specs_for(self, pod: Pod) -> list[_GroupSpec]:
        """The groups `pod` owns, as what builds them: most pods share groups that exist
        already, so a group is only built (`_new_group`) when its identity is new."""
        specs: list[_GroupSpec] = []
        for tsc in pod.spec.topology_spread_constraints:
            if self.ignore_preferences and tsc.when_unsatisfiable != "DoNotSchedule":
                continue
            specs.append(
                (
                    TopologyType.SPREAD,
                    tsc.topology_key,
                    frozenset({pod.metadata.namespace}),
                    _spread_selector(tsc, pod),
                    tsc.max_skew,
                    tsc.min_domains,
                    NodeFilter.for_pod(pod, tsc.node_taints_policy, tsc.node_affinity_policy),
                )
            )
        aff = pod.spec.affinity
        if aff is None:
            return specs
        for kind, section in (
            (TopologyType.AFFINITY, aff.pod_affinity),
            (TopologyType.ANTI_AFFINITY, aff.pod_anti_affinity),
        ):
            if section is None:
                continue
            terms = list(section.required_during_scheduling_ignored_during_execution)
            if not self.ignore_preferences:
                terms += [
                    w.pod_affinity_term
                    for w in section.preferred_during_scheduling_ignored_during_execution
                ]
            for term in terms:
                specs.append(
                    (
                        kind,
                        term.topology_key,
                        self._namespaces(pod, term),
                        term.label_selector,
                        _MAX_INT32,
                        None,
                        _NO_FILTER,
                    )
                )
        return specs

    def _count_existing(self, tg: TopologyGroup) -> None:
        for labels, taints in self.existing_node_domains:
            if not tg.node_filter.matches(taints, Requirements.from_labels(labels)):
                continue
            if tg.key in labels:
                tg.register(labels[tg.key])
        for counted in self.existing_pods:
            if not tg.selects(counted.pod):
                continue
            domain = counted.node_labels.get(tg.key)
            if domain is None and tg.key == HOSTNAME:
                domain = counted.node_name or None
            if domain is None:
                continue
            if not tg.node_filter.matches(
                counted.node_taints, Requirements.from_labels(counted.node_labels)
            ):
                continue
            tg.record(domain)

    def _track_inverse(self, pod: Pod, node_labels: Mapping[str, str] | None) -> None:
        aff = pod.spec.affinity
        if aff is None or aff.pod_anti_affinity is None:
            return
        for term in aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution:
            spec: _GroupSpec = (
                TopologyType.ANTI_AFFINITY,
                term.topology_key,
                self._namespaces(pod, term),
                term.label_selector,
                _MAX_INT32,
                None,
                _NO_FILTER,
            )
            identity = _identity(spec)
            tg = self.inverse_groups.get(identity)
            if tg is None:
                tg = self.inverse_groups[identity] = self._new_group(spec, pod)
            if node_labels is not None and tg.key in node_labels:
                tg.record(node_labels[tg.key])
            tg.owners.add(_uid(pod))

    def update(self, pod: Pod) -> None:
        """(Re)compute the groups `pod` owns, e.g. after one of its preferences was relaxed."""
        uid = _uid(pod)
        for tg in self.owned.pop(uid, []):
            tg.owners.discard(uid)
        aff = pod.spec.affinity
        if aff is not None and aff.pod_anti_affinity is not None:
            has = bool(aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution)
            if not self.ignore_preferences:
                has = has or bool(
                    aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
                )
            if has:
                self._track_inverse(pod, None)
        for spec in self._specs_for(pod):
            identity = _identity(spec)
            existing = self.groups.get(identity)
            if existing is None:
                existing = self._new_group(spec, pod)
                self._count_existing(existing)
                self.groups[identity] = existing
            if uid not in existing.owners:
                existing.owners.add(uid)
                self.owned.setdefault(uid, []).append(existing)

    # ---- scheduling hooks ---------------------------------------------------------------------
    def register(self, key: str, domain: str) -> None:
        # The groups on `key`, in the same order as a walk over all groups (kept until a
        # group is added: groups are never removed), and the domains already registered with
        # all of them: a group never forgets a domain, so registering one again changes
        # nothing (a planned NodeClaim registers its hostname with every pod it takes).
        size = (len(self.groups), len(self.inverse_groups))
        hit = self._on_key.get(key)
        if hit is None or hit[0] != size:
            on_key = [
                tg for tg in (*self.groups.values(), *self.inverse_groups.values()) if tg.key == key
            ]
            hit = self._on_key[key] = (size, on_key, set())
        if domain in hit[2]:
            return
        for tg in hit[1]:
            tg.register(domain)
        hit[2].add(domain)

    def register_all(self, key: str, domains: Sequence[str]) -> None:
        """`register(key, d)` for each of `domains` in order (a scheduler registers every
        existing node's hostname: the groups on the key are looked up once)."""
        if not domains:
            return
        self.register(key, domains[0])
        _, on_key, seen = self._on_key[key]
        for domain in domains[1:]:
            if domain in seen:
                continue
            for tg in on_key:
                tg.register(domain)
            seen.add(domain)

    def _matching(
        self, pod: Pod, taints: Sequence[Taint], reqs: Requirements
    ) -> list[TopologyGroup]:
        owned = self.owned.get(_uid(pod), [])
        if not self.inverse_groups:
            return owned
        inverse = [
            tg
            for tg in self._inverse_selecting(pod)
            if tg.node_filter is _NO_FILTER or tg.node_filter.matches(taints, reqs)
        ]
        return owned + inverse if inverse else owned

    def _inverse_selecting(self, pod: Pod) -> list[TopologyGroup]:
        """The inverse groups whose selector matches `pod` (see `_selecting_among`)."""
        return _selecting_among(self.inverse_groups, self._inverse_selects, pod)

    def rejects_host(self, pod: Pod, hostname: str) -> bool:
        """A cheap, exact shortcut for the common failure: a hostname spread or hostname
        anti-affinity the pod owns already rules out this node (the same answer
        `add_requirements` would give for a node whose hostname is `hostname`)."""
        for tg in self.owned.get(_uid(pod), ()):
            if tg.key != HOSTNAME:
                continue
            count = tg.domains.get(hostname, 0)
            if tg.type is TopologyType.ANTI_AFFINITY and count > 0:
                return True
            if (
                tg.type is TopologyType.SPREAD
                and count + (1 if tg.selects(pod) else 0) > tg.max_skew
            ):
                return True
        return False

    def rejects_domains(
        self, pod: Pod, pod_requirements: Requirements, node_requirements: Requirements
    ) -> TopologyGroup | None:
        """A cheap, exact shortcut for a pod affinity on a key other than the hostname: the
        node's own requirement on the key allows only domains (an `In` set) where no selected
        pod is (or the pod may not go), and the group is past its first pod. Any requirement
        the pod adds only narrows the node's, so `add_requirements` would find no domain
        either. Returns the group (None: no such refusal)."""
        for tg in self.owned.get(_uid(pod), ()):
            if tg.type is not TopologyType.AFFINITY or tg.key == HOSTNAME:
                continue
            node_domains = node_requirements.get(tg.key)
            if node_domains is None or node_domains.complement:
                continue
            pod_domains = pod_requirements.get_or_exists(tg.key)
            if any(pod_domains.has(d) and tg.domains.get(d, 0) > 0 for d in node_domains.values):
                continue
            if not tg.bootstraps(pod, pod_domains):
                return tg
        return None

    def add_requirements(
        self,
        pod: Pod,
        taints: Sequence[Taint],
        pod_requirements: Requirements,
        node_requirements: Requirements,
    ) -> Requirements:
        """The node requirements narrowed by every topology the pod is subject to (the same
        object when no group narrows them).

        Raises TopologyError when a group leaves no domain.
        """
        out = node_requirements
        for tg in self._matching(pod, taints, node_requirements):
            pod_domains = pod_requirements.get_or_exists(tg.key)
            node_domains = node_requirements.get_or_exists(tg.key)
            domains = tg.next_domains(pod, pod_domains, node_domains)
            if len(domains) == 0:
                raise TopologyError(tg, pod_domains, node_domains)
            if (domains is node_domains or domains == node_domains) and (
                tg.key in node_requirements
            ):
                # The node's own requirement again (a planned node's hostname, the zone it is
                # pinned to): intersecting it changes nothing, also after another group
                # narrowed the key (requirements are kept normalised: `a ∩ (a ∩ d) == a ∩ d`).
                continue
            out = out.add(domains)
        return out

    def _selecting(self, pod: Pod) -> list[TopologyGroup]:
        """The groups whose selector matches `pod` (see `_selecting_among`)."""
        return _selecting_among(self.groups, self._selects, pod)

    def record(self, pod: Pod, taints: Sequence[Taint], requirements: Requirements) -> None:
        """Count a placed pod in the domains its node's requirements pin down."""
        uid = _uid(pod)
        for tg in self._selecting(pod):
            if not tg.node_filter.matches(taints, requirements):
                continue
            domains = requirements.get_or_exists(tg.key)
            if tg.type is TopologyType.ANTI_AFFINITY:
                tg.record(*sorted(domains.values))
            elif not domains.complement and len(domains.values) == 1:
                tg.record(next(iter(domains.values)))
        for tg in self.inverse_groups.values():
            if uid in tg.owners:
                tg.record(*sorted(requirements.get_or_exists(tg.key).values))


# (namespace, labels) -> (how many groups there were, the ones among them selecting such a pod)
_SelectsMemo = dict[tuple[str, frozenset[tuple[str, str]]], tuple[int, list[TopologyGroup]]]


def _selecting_among(
    groups: dict[tuple[object, ...], TopologyGroup], memo: _SelectsMemo, pod: Pod
) -> list[TopologyGroup]:
    """The groups of `groups` whose selector matches `pod`, in creation order; memoised in
    `memo` by namespace and labels (all `selects` reads) until a group is added (groups are
    only ever added, so the count says whether the answer still holds)."""
    key = (pod.metadata.namespace, frozenset(pod.metadata.labels.items()))
    hit = memo.get(key)
    if hit is not None and hit[0] == len(groups):
        return hit[1]
    found = [tg for tg in groups.values() if tg.selects(pod)]
    memo[key] = (len(groups), found)
    return found


def has_anti_affinity(pod: Pod) -> bool:
    """Whether `pod` has a pod anti-affinity section (an existing pod with one makes inverse
    groups: other pods must keep away from it)."""
    aff = pod.spec.affinity
    return aff is not None and aff.pod_anti_affinity is not None


def _uid(pod: Pod) -> str:
    return pod.metadata.uid or pod.key


def _spread_selector(tsc: TopologySpreadConstraint, pod: Pod) -> LabelSelector | None:
    """The constraint's selector plus `matchLabelKeys` resolved against the pod's labels."""
    extra = [
        LabelSelectorRequirement(key=k, operator="In", values=[pod.metadata.labels[k]])
        for k in tsc.match_label_keys
        if k in pod.metadata.labels
    ]
    if not extra:
        return tsc.label_selector
    base = tsc.label_selector or LabelSelector()
    return LabelSelector(
        match_labels=dict(base.match_labels),
        match_expressions=[*base.match_expressions, *extra],
    )
