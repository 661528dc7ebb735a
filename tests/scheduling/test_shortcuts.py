"""The scheduler's third round of shortcuts (issue 12 and 11, branch `solver`) give the answers
of their plain definitions (hypothesis laws):

- a topology group whose domains are the node's own requirement leaves the node's requirements
  as they are: intersecting a requirement again with either side changes nothing;
- a `Requirement`'s hash is computed once, from its fields, and not carried by `replace`;
- an `InstanceTypeTable`'s per-mask memos (most allocatable, largest capacity), its limit
  filter that skips columns no type reaches, and its compatibility memo keyed by the
  requirements on the types' keys answer as the plain numpy and per-type definitions, asked
  in any order;
- `Topology.add_requirements` equals the plain fold over its groups (`out.add(domains)` for each);
- a `Scheduler` built over a warm `PassCache` (node entries, their anti-affinity pods, the
  NodePool parts, shared room and host ports) plans as a fresh one, also for the same nodes
  less one (a consolidation simulation), and a host port taken in one pass is not seen by the
  next;
- a build over a warm cache from a rebuilt snapshot (new node objects with the same pods, as a
  tuple or a list, or with one pod swapped for another at the same place) plans as a fresh one
  (session 6 round 2: the node entries' hits read inline, the pods compared by identity);
- the existing nodes come in Karpenter's order, initialized first and then by name, as the
  kept string key sorts them.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Pod
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType, InstanceTypeTable
from gpucap.scheduling.passcache import PassCache
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.scheduler import PoolInput, Scheduler
from gpucap.scheduling.topology import CountedPod, Topology, TopologyError
from tests.scheduling.builders import GIB, ZONES
from tests.scheduling.podclass_cases import (
    HOST,
    ZONE,
    _nodes,
    _pod,
    _pods,
    _pools,
    _shape,
    _shape_of,
    existing,
    workloads,
)

# ---- requirements -------------------------------------------------------------------------------
VALUES = ("1", "2", "5", "9", "a", "b")
requirements = st.one_of(
    st.builds(
        lambda op, vals, mv: Requirement.new("k", op, vals, mv),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(VALUES), max_size=4),
        st.sampled_from([None, None, 1, 2]),
    ),
    st.builds(
        lambda op, mv: Requirement.new("k", op, (), mv),
        st.sampled_from(["Exists", "DoesNotExist"]),
        st.sampled_from([None, 1]),
    ),
    st.builds(
        lambda op, n, mv: Requirement.new("k", op, [str(n)], mv),
        st.sampled_from(["Gt", "Lt", "Gte", "Lte"]),
        st.integers(0, 10),
        st.sampled_from([None, 2]),
    ),
)


@given(requirements, requirements, requirements)
def test_a_requirement_intersected_again_with_either_side_is_unchanged(
    a: Requirement, d1: Requirement, d2: Requirement
) -> None:
    once = d1.intersection(a)  # as `Requirements.add` intersects (incoming first)
    assert a.intersection(once) == once
    assert once.intersection(a) == once
    twice = d2.intersection(once)  # another group narrowed the same key before
    assert a.intersection(twice) == twice
    reqs = Requirements.of(a, Requirement.new("other", "In", ["x"]))
    narrowed = reqs.add(d1).add(d2)
    assert narrowed.add(a) == narrowed


@given(requirements, st.sampled_from([None, 1, 3]))
def test_a_requirements_hash_is_that_of_its_fields_and_a_replace_starts_afresh(
    r: Requirement, min_values: int | None
) -> None:
    fields = (r.key, r.complement, r.values, r.gte, r.lte, r.min_values)
    assert hash(r) == hash(fields)
    assert hash(r) == hash(r)  # the kept hash
    other = dataclasses.replace(r, min_values=min_values)
    assert hash(other) == hash((*fields[:5], min_values))
    assert other == Requirement(r.key, r.complement, r.values, r.gte, r.lte, min_values)
    assert copy.deepcopy(r) == r
    assert hash(copy.copy(r)) == hash(r)


def test_requirements_without_any_are_one_shared_empty_set() -> None:
    assert Requirements.of() is Requirements.from_labels({})
    assert Requirements.of() == Requirements()
    assert Requirements.of().add(Requirement.new("k", "In", ["v"])) != Requirements.of()


# ---- instance-type tables -----------------------------------------------------------------------
RESOURCES = ("cpu", "memory", "pods")
rows = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from(RESOURCES), st.integers(-2, 40)),  # allocatable
        st.dictionaries(st.sampled_from((*RESOURCES, "nodes")), st.integers(0, 40)),  # capacity
        st.sampled_from(ZONES[:2]),  # the one zone the type is offered in
    ),
    min_size=1,
    max_size=8,
)


def _table(spec: list[tuple[dict[str, int], dict[str, int], str]]) -> InstanceTypeTable:
    return InstanceTypeTable(
        [
            InstanceType(
                f"t{i}",
                Requirements.of(
                    Requirement.new("node.kubernetes.io/instance-type", "In", [f"t{i}"]),
                    Requirement.new(ZONE, "In", [zone]),
                ),
                capacity,
                allocatable,
                (),
            )
            for i, (allocatable, capacity, zone) in enumerate(spec)
        ]
    )


@given(rows, st.lists(st.lists(st.booleans(), min_size=8, max_size=8), min_size=1, max_size=6))
def test_the_tables_per_mask_memos_answer_as_numpy(
    spec: list[tuple[dict[str, int], dict[str, int], str]], masks: list[list[bool]]
) -> None:
    table = _table(spec)
    n = len(table.types)
    for bits in [*masks, *masks]:  # each mask asked twice: the second answer is the memo's
        mask = np.array(bits[:n], dtype=np.bool_)
        chosen = table.allocatable[mask]
        most = (
            dict(zip(table.resources, chosen.max(axis=0).tolist(), strict=True))
            if len(chosen)
            else {}
        )
        assert table.most_allocatable(mask) == most
        wanted = [*RESOURCES, "nodes", "nvidia.com/gpu"]
        if not mask.any():
            assert table.max_capacity(mask, wanted) == {}
            continue
        largest = {
            k: (
                int(table.capacity[mask, table.capacity_column[k]].max())
                if k in table.capacity_column
                else 0
            )
            for k in wanted
        }
        assert table.max_capacity(mask, wanted) == largest


limit_maps = st.dictionaries(st.sampled_from((*RESOURCES, "nodes", "gpu")), st.integers(-1, 45))


@given(rows, st.lists(limit_maps, min_size=1, max_size=4))
def test_the_limit_filter_is_capacity_within_every_limit(
    spec: list[tuple[dict[str, int], dict[str, int], str]], asked: list[dict[str, int]]
) -> None:
    # Several limit maps asked of one table, each twice: the memo answers as the filter does.
    table = _table(spec)
    for limits in [*asked, *asked]:
        expected = [
            all(capacity.get(k, 0) <= v for k, v in limits.items()) for _, capacity, _ in spec
        ]
        mask, some = table.within(limits)
        assert (mask.tolist(), some) == (expected, any(expected))


zone_reqs = st.lists(
    st.tuples(
        st.sampled_from([None, *ZONES]),  # zone In [..] (None: no zone requirement)
        st.sampled_from([None, "p1", "p2"]),  # a key the types do not define (a pool label)
        st.booleans(),  # a planned node's hostname
    ),
    min_size=1,
    max_size=8,
)


@given(rows, zone_reqs)
def test_compatibility_memo_is_the_per_type_intersection(
    spec: list[tuple[dict[str, int], dict[str, int], str]],
    asked: list[tuple[str | None, str | None, bool]],
) -> None:
    table = _table(spec)
    for zone, label, host in asked:
        parts = []
        if zone is not None:
            parts.append(Requirement.new(ZONE, "In", [zone]))
        if label is not None:
            parts.append(Requirement.new("pool", "In", [label]))
        if host:
            parts.append(Requirement.new(HOST, "In", ["hostname-placeholder-0001"]))
        reqs = Requirements.of(*parts)
        expected = [it.requirements.intersects(reqs) is None for it in table.types]
        assert table.compatible(reqs).tolist() == expected


# ---- topology -----------------------------------------------------------------------------------
def _plain_add_requirements(
    topology: Topology, pod: Pod, pod_reqs: Requirements, node_reqs: Requirements
) -> Requirements:
    out = node_reqs
    for tg in topology._matching(pod, (), node_reqs):
        pod_domains = pod_reqs.get_or_exists(tg.key)
        domains = tg.next_domains(pod, pod_domains, node_reqs.get_or_exists(tg.key))
        if len(domains) == 0:
            raise TopologyError(tg, pod_domains, node_reqs.get_or_exists(tg.key))
        out = out.add(domains)
    return out


topology_shapes = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.lists(
            st.tuples(
                st.sampled_from([ZONE, HOST]),
                st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
                st.integers(1, 2),
            ),
            max_size=2,
        ),
        st.lists(
            st.tuples(
                st.sampled_from(["podAffinity", "podAntiAffinity"]),
                st.sampled_from([ZONE, HOST]),
                st.booleans(),
            ),
            max_size=2,
        ),
    ),
    min_size=1,
    max_size=4,
)
placements = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(ZONES), st.integers(0, 2)), max_size=6
)
nodes_asked = st.lists(
    st.tuples(
        st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topology_shapes, placements, nodes_asked)
def test_add_requirements_is_the_plain_fold_over_the_groups(
    shapes: list[tuple[str, list[Any], list[Any]]],
    placed: list[tuple[int, str, int]],
    asked: list[tuple[list[str], int]],
) -> None:
    domain_groups = {ZONE: {z: [()] for z in ZONES}}
    topology = Topology(domain_groups)  # type: ignore[arg-type]
    pods = [
        _pod(f"p{i}", app, _shape_of(spreads=spreads, affinities=affinities))
        for i, (app, spreads, affinities) in enumerate(shapes)
    ]
    for p in pods:
        topology.update(p)
    for i, zone, host in placed:  # pods placed so far: counts to narrow against
        node = Requirements.of(
            Requirement.new(ZONE, "In", [zone]), Requirement.new(HOST, "In", [f"h{host}"])
        )
        topology.register(HOST, f"h{host}")
        topology.record(pods[i % len(pods)], (), node)
    for zones, host in asked:
        topology.register(HOST, f"h{host}")
        node = Requirements.of(
            Requirement.new(ZONE, "In", zones), Requirement.new(HOST, "In", [f"h{host}"])
        )
        for p in pods:
            try:
                plain: Requirements | str = _plain_add_requirements(
                    topology, p, Requirements.of(), node
                )
            except TopologyError as err:
                plain = str(err)
            try:
                got: Requirements | str = topology.add_requirements(p, (), Requirements.of(), node)
            except TopologyError as err:
                got = str(err)
            assert got == plain


def _anti_pod(name: str, app: str) -> Pod:
    return _pod(name, app, _shape_of(affinities=[("podAntiAffinity", HOST, False)]))


def test_topology_given_its_anti_affinity_pods_builds_the_inverse_groups_it_finds() -> None:
    labels = {HOST: "n1", ZONE: ZONES[0]}
    counted = [
        CountedPod(_pod("plain", "a", _shape_of()), labels),
        CountedPod(_anti_pod("anti-1", "a"), labels),
        CountedPod(_anti_pod("anti-2", "b"), {HOST: "n2", ZONE: ZONES[1]}),
    ]
    found = Topology({}, existing_pods=counted)
    given_ = Topology({}, existing_pods=counted, inverse_pods=counted[1:])

    def groups(t: Topology) -> list[tuple[object, dict[str, int], set[str]]]:
        return [(k, g.domains, g.owners) for k, g in t.inverse_groups.items()]

    assert groups(found) == groups(given_)
    assert len(found.inverse_groups) == 2


# ---- schedulers over a warm PassCache -----------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads, existing, st.sampled_from([None, 3]), st.sampled_from([None, "40"]))
def test_a_scheduler_over_a_warm_cache_plans_as_a_fresh_one(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
    gpu_limit: int | None,
    cpu_limit: str | None,
) -> None:
    pods = _pods(loads)
    pools, nodes = _pools(gpu_limit, cpu_limit), _nodes(node_specs)
    cache = PassCache()

    def plan(ns: list[StateNode], c: PassCache | None) -> tuple[object, ...]:
        return _shape(Scheduler(pools, state_nodes=ns, pending_pods=pods, cache=c).solve(pods))

    fresh = plan(nodes, None)
    assert plan(nodes, cache) == fresh
    assert plan(nodes, cache) == fresh  # every node entry and pool part kept
    less = nodes[1:]  # a consolidation simulation: the same nodes less a candidate
    assert plan(less, cache) == plan(less, None)


# A bound pod no drawn shape requests as much CPU as (so a node kept with the pod it replaced
# would be left with another amount).
_SWAPPED = {"cpu": "1500m", "memory": "512Mi", "gpu": 0, "tolerate": True, "zone": None}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads, existing, st.sampled_from(["tuple", "list", "swap"]))
def test_a_rebuilt_snapshot_over_a_warm_cache_plans_as_a_fresh_one(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
    how: str,
) -> None:
    pods = _pods(loads)
    pools, nodes = _pools(None, "40"), _nodes(node_specs)
    cache = PassCache()
    Scheduler(pools, state_nodes=nodes, pending_pods=pods, cache=cache).solve(pods)

    def rebuilt(n: StateNode) -> StateNode:
        # A snapshot's new node: a new label mapping with the same values, and its pods.
        bound: Any = n.pods
        if how == "list":
            bound = list(n.pods)
        elif how == "swap" and n.pods:
            shape = {**_SWAPPED, "spreads": [], "affinities": []}
            bound = (*n.pods[:-1], _pod(f"{n.name}-swapped", "web", shape))
        return dataclasses.replace(n, labels=dict(n.labels), pods=bound)

    again = [rebuilt(n) for n in nodes]

    def plan(c: PassCache | None) -> tuple[object, ...]:
        return _shape(Scheduler(pools, state_nodes=again, pending_pods=pods, cache=c).solve(pods))

    assert plan(cache) == plan(None)


@given(
    st.lists(
        st.tuples(st.text("ab-.019z", min_size=1, max_size=6), st.booleans()),
        max_size=8,
        unique_by=lambda t: t[0],
    ),
    st.booleans(),
)
def test_the_existing_nodes_are_initialized_first_then_by_name(
    specs: list[tuple[str, bool]], cached: bool
) -> None:
    nodes = [
        StateNode(name=name, labels={HOST: name}, allocatable={"cpu": 1000}, initialized=ready)
        for name, ready in specs
    ]
    cache = PassCache() if cached else None
    built = Scheduler(_pools(None, None), state_nodes=nodes, cache=cache)
    expected = sorted(specs, key=lambda s: (not s[1], s[0]))
    assert [n.name for n in built.existing] == [name for name, _ in expected]


def _port_pod(name: str) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "ports": [{"containerPort": 80, "hostPort": 80}],
                        "resources": {"requests": {"cpu": "100m"}},
                    }
                ]
            },
        }
    )


def test_a_host_port_taken_in_one_pass_is_not_seen_by_the_next() -> None:
    node = StateNode(
        name="ip-1",
        labels={HOST: "ip-1", ZONE: ZONES[0], "kubernetes.io/arch": "amd64"},
        allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 110},
    )
    pools: list[PoolInput] = _pools(None, None)
    cache = PassCache()
    first = Scheduler(pools, state_nodes=[node], pending_pods=[_port_pod("p1")], cache=cache)
    assert first.solve([_port_pod("p1")]).pods_on_existing_nodes() == {"ip-1": ["default/p1"]}
    # p1 was only planned there: the next pass starts from the node as it is.
    second = Scheduler(pools, state_nodes=[node], pending_pods=[_port_pod("p2")], cache=cache)
    result = second.solve([_port_pod("p2")])
    assert result.pods_on_existing_nodes() == {"ip-1": ["default/p2"]}
    assert not result.new_node_claims


def test_a_first_affinity_pod_narrows_a_node_to_the_zones_both_allow() -> None:
    # The first pod of a self-selecting zone affinity may go anywhere: its domains are the
    # first zone both allow and the first zone the pod allows (Karpenter's special case),
    # two zones like the node's own two, yet not the same: the node is narrowed to one.
    topology = Topology({ZONE: {z: [()] for z in ZONES}})
    pod = _pod("first", "a", _shape_of(affinities=[("podAffinity", ZONE, False)]))
    topology.update(pod)
    node = Requirements.of(Requirement.new(ZONE, "In", ZONES[1:]))
    narrowed = topology.add_requirements(pod, (), Requirements.of(), node)
    assert narrowed[ZONE] == Requirement.new(ZONE, "In", [ZONES[1]])


@given(
    st.lists(st.sampled_from(["n1", "n2", "n3", "n4"]), max_size=8),
    st.lists(st.sampled_from(["n1", "n2", "n3", "n4"]), max_size=4),
)
def test_registering_hostnames_at_once_is_registering_them_one_by_one(
    domains: list[str], earlier: list[str]
) -> None:
    # A hostname spread and a hostname anti-affinity own groups on the key; a zone spread
    # owns one that must not see the hostnames. Some hostnames may be registered before.
    pods = [
        _pod("s", "a", _shape_of(spreads=[(HOST, "DoNotSchedule", 1)])),
        _pod("z", "b", _shape_of(spreads=[(ZONE, "DoNotSchedule", 1)])),
        _anti_pod("x", "c"),
    ]
    one_by_one, at_once = Topology({}), Topology({})
    for t in (one_by_one, at_once):
        for p in pods:
            t.update(p)
        for d in earlier:
            t.register(HOST, d)
    for d in domains:
        one_by_one.register(HOST, d)
    at_once.register_all(HOST, domains)

    def groups(t: Topology) -> list[tuple[object, dict[str, int], set[str], int]]:
        every = [*t.groups.items(), *t.inverse_groups.items()]
        return [(k, dict(g.domains), set(g.empty_domains), g.epoch) for k, g in every]

    assert groups(at_once) == groups(one_by_one)
