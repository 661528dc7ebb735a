"""Pod classes change no plan: the scheduler with them (it skips targets that already refused a
pod of the same class) and without them (every pod tried on every target, as Karpenter does)
give the same NodeClaims, the same pods on each and on each existing node, in the same order,
with the same requirements, and the same errors.

Random workloads (hypothesis): runs of identical replicas and single pods, with requests,
zone and hostname spreads (DoNotSchedule and ScheduleAnyway), zone and hostname (anti-)
affinity, preferred anti-affinity, node selectors, tolerations, GPU and CPU pools with taints
and limits, and existing nodes with bound pods. Plus rules for the refusals that must not be
kept (a topology group that changes, a target that takes a pod)."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Pod
from gpucap.scheduling import scheduler as scheduler_module
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.scheduler import Scheduler
from tests.scheduling.builders import GIB, ZONES
from tests.scheduling.podclass_cases import (
    HOST,
    ZONE,
    _nodes,
    _plan,
    _pod,
    _pods,
    _pools,
    _shape,
    _shape_of,
    existing,
    workloads,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    workloads,
    existing,
    st.sampled_from([None, 1, 3]),
    st.sampled_from([None, "6", "40"]),
)
def test_pod_classes_change_no_plan(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
    gpu_limit: int | None,
    cpu_limit: str | None,
) -> None:
    pods = _pods(loads)
    pools, nodes = _pools(gpu_limit, cpu_limit), _nodes(node_specs)
    assert _plan(pods, pools, nodes, classes=True) == _plan(pods, pools, nodes, classes=False)


def test_a_zone_affinity_refusal_ends_when_the_zone_gets_a_pod() -> None:
    # x-pods follow a-pods into their zone, one per host. a-0 fills a node in the first zone
    # and z a node pinned to the second: x-0 is refused by both (room; no a-pod in the
    # second zone) and gets a new node in the first zone. Then a-1 joins z in the second
    # zone, so x-1, of x-0's class, must be tried again on z's node, where x-0 was refused.
    follow = _shape_of(
        cpu="2", spreads=[(HOST, "DoNotSchedule", 1)], affinities=[("podAffinity", ZONE, False)]
    )
    pods = [
        _pod("a-0", "a", _shape_of(zone=ZONES[0], cpu="7")),
        _pod("z", "z", _shape_of(zone=ZONES[1], cpu="2")),
        _pod("x-0", "x", follow, selects="a"),
        _pod("a-1", "a", _shape_of(zone=ZONES[1], cpu="2")),
        _pod("x-1", "x", follow, selects="a"),
    ]
    pools = _pools(None, None)
    with_classes = _plan(pods, pools, [], classes=True)
    assert with_classes == _plan(pods, pools, [], classes=False)
    claims = with_classes[0]
    assert isinstance(claims, list)
    assert [c[1] for c in claims] == [
        ["default/a-0"],
        ["default/z", "default/a-1", "default/x-1"],
        ["default/x-0"],
    ]


def test_identical_replicas_skip_the_nodes_that_refused_the_first() -> None:
    # 40 hostname anti-affinity replicas: each needs its own node. Without classes the
    # n-th replica is tried on the n-1 claims before it; with classes the claims that
    # already hold a replica are skipped without a try.
    pods = [
        _pod(f"web-{i}", "a", _shape_of(affinities=[("podAntiAffinity", HOST, False)]))
        for i in range(40)
    ]
    pools = _pools(None, None)
    tries = {True: 0, False: 0}
    for classes in (True, False):
        scheduler = Scheduler(pools, pending_pods=pods, pod_classes=classes)
        original = scheduler.topology.rejects_host

        def counted(pod: Pod, hostname: str, original: Any = original, c: bool = classes) -> bool:
            tries[c] += 1
            return bool(original(pod, hostname))

        scheduler.topology.rejects_host = counted  # type: ignore[method-assign]
        scheduler.solve(pods)
    assert tries[False] == 39 * 40 // 2
    assert tries[True] <= 40


def _needs(name: str, operator: str, values: list[str]) -> Pod:
    term = {
        "matchExpressions": [{"key": "example.com/foo", "operator": operator, "values": values}]
    }
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [term]
                        }
                    }
                },
            },
        }
    )


def test_a_refusal_read_from_the_target_ends_when_the_target_takes_a_pod() -> None:
    # The node has no example.com/foo label: a pod requiring `foo In [x]` is refused there.
    # A pod requiring `foo NotIn [y]` lands and defines the key on the node's requirements;
    # the next `foo In [x]` pod (same class as the first) now fits the node.
    node = StateNode(
        name="ip-0",
        labels={HOST: "ip-0", ZONE: ZONES[0]},
        allocatable={"cpu": 8000, "memory": 32 * GIB, "pods": 110},
    )
    pods = [_needs("a-0", "In", ["x"]), _needs("b-0", "NotIn", ["y"]), _needs("a-1", "In", ["x"])]
    pools = _pools(None, None)
    with_classes = _plan(pods, pools, [node], classes=True)
    assert with_classes == _plan(pods, pools, [node], classes=False)
    assert with_classes[1] == [
        (
            "ip-0",
            ["default/b-0", "default/a-1", "default/a-0"],
            [("cpu", 5000), ("memory", 32 * GIB), ("pods", 107)],
        )
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads, existing)
def test_the_zone_affinity_shortcut_changes_no_plan(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
) -> None:
    # `Topology.rejects_domains` refuses a claim before `can_add` runs; without it every
    # claim goes through `can_add`. Same plans.
    pods = _pods(loads)
    pools, nodes = _pools(None, "40"), _nodes(node_specs)
    with_shortcut = _plan(pods, pools, nodes, classes=False)
    scheduler = Scheduler(pools, state_nodes=nodes, pending_pods=pods, pod_classes=False)
    scheduler.topology.rejects_domains = lambda *_: None  # type: ignore[method-assign]
    assert _shape(scheduler.solve(pods)) == with_shortcut


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads, existing, st.sampled_from([None, 1, 3]))
def test_kept_candidates_change_no_plan(
    loads: list[tuple[str, dict[str, Any], int]],
    node_specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]],
    gpu_limit: int | None,
) -> None:
    # A class keeps its candidate claims once a scan tried 16; these workloads seldom plan
    # that many, so here every class keeps them after its first scan (`keep_candidates`,
    # `walk`, the lasting refusals they read). Same plans as Karpenter's loop.
    pods = _pods(loads)
    pools, nodes = _pools(gpu_limit, "40"), _nodes(node_specs)
    with patch.object(scheduler_module, "_KEEP_CANDIDATES", 1):
        kept = _plan(pods, pools, nodes, classes=True)
    assert kept == _plan(pods, pools, nodes, classes=False)


def test_a_kept_candidate_refused_by_its_own_requirements_stays_a_candidate() -> None:
    # As above, on a planned NodeClaim and with candidates kept after the first scan: c-0
    # plans a claim without example.com/foo, which refuses a-0 (the key is undefined); b-0
    # lands on it and defines the key; a-1 (a-0's class) walks the kept candidates, which
    # must still hold that claim.
    plain = Pod.model_validate(
        {
            "metadata": {"name": "c-0", "namespace": "default", "uid": "c-0"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    )
    pods = [plain, _needs("a-0", "In", ["x"]), _needs("b-0", "NotIn", ["y"])]
    pods.append(_needs("a-1", "In", ["x"]))
    pools = _pools(None, None)
    with patch.object(scheduler_module, "_KEEP_CANDIDATES", 1):
        kept = _plan(pods, pools, [], classes=True)
    assert kept == _plan(pods, pools, [], classes=False)
    claims = kept[0]
    assert isinstance(claims, list)
    assert [pods for _, pods, *_ in claims] == [
        ["default/c-0", "default/b-0", "default/a-1", "default/a-0"]
    ]
