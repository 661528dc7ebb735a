"""Work shared between NodePools, planned NodeClaims and NodeOverlays of the same shape.

Issue 9: 1,000 NodePools, 2,000 files or 1,000 NodeOverlays made `plan` take minutes, since
every pool resolved, filtered and walked the whole catalog on its own. The scheduler now shares
that work between pools whose instance types are the same object (one per node class) and
whose requirements agree on the keys the types define. These tests count the work (they fail
deterministically, unlike a timing) and check that sharing changes no result.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.core import Taint
from gpucap.apis.serde import load_text
from gpucap.scheduling import nodeoverlay, passcache, refusal, topology
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaim import NodeClaim
from gpucap.scheduling.nodeoverlay import PoolTypes, apply_overlays, evaluate_overlays
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.scheduler import PoolInput, Results, Scheduler, solve
from gpucap.scheduling.topology import build_domain_groups
from tests.builders import daemonset, edit, to_yaml
from tests.scheduling.builders import CPU_TYPES, GPU_TYPES, gpu_pod, gpu_pool

TYPES = tuple(GPU_TYPES + CPU_TYPES)


def _pools(n: int, *, labelled: bool = False) -> list[dict[str, Any]]:
    docs = []
    for i in range(n):
        doc = gpu_pool(f"gpu-{i:03d}")
        if labelled:
            doc = edit(doc, "spec.template.metadata.labels", {"team": f"t{i}"})
        docs.append(doc)
    return docs


def _solve(docs: list[dict[str, Any]], *, shared: bool) -> Results:
    objs = load_text(to_yaml(*docs), "t.yaml").objects
    # Unshared: a distinct but equal tuple per pool, so no pool shares another's work.
    pools = [PoolInput(np, TYPES if shared else list(TYPES)) for np in objs.nodepools]
    return solve(objs.pods, pools)


def _summary(results: Results) -> tuple[object, ...]:
    return (
        [
            (c.nodepool, sorted(p.key for p in c.pods), [it.name for it in c.instance_types])
            for c in results.new_node_claims
        ],
        results.pod_errors,
        results.pool_notes,
    )


def _count(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls = [0]
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_pools_that_share_instance_types_plan_as_pools_that_do_not() -> None:
    docs = [*_pools(3, labelled=True), *(gpu_pod(f"p-{i}", gpus=1 + i % 4) for i in range(8))]
    assert _summary(_solve(docs, shared=True)) == _summary(_solve(docs, shared=False))


def test_pools_of_one_node_class_share_their_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    tables = _count(monkeypatch, passcache, "InstanceTypeTable")
    _solve(_pools(50, labelled=True), shared=True)
    # One table of the node class's types, one of what the (identical) requirements keep.
    assert tables[0] == 2


def test_domains_are_walked_once_per_pool_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    walks = _count(monkeypatch, topology, "_domains_through_types")
    _solve(_pools(50, labelled=True), shared=True)
    # The pools differ in name and label, neither a key the instance types define.
    assert walks[0] == 1


def _naive_domain_groups(
    pools: list[tuple[Requirements, tuple[Taint, ...], list[Requirements]]],
) -> dict[str, dict[str, set[tuple[Taint, ...]]]]:
    """Karpenter's `buildDomainGroups` as written: every pool merged with every type."""
    groups: dict[str, dict[str, list[tuple[Taint, ...]]]] = {}

    def insert(key: str, domain: str, taints: tuple[Taint, ...]) -> None:
        by_domain = groups.setdefault(key, {})
        if domain not in by_domain or not taints:
            by_domain[domain] = [taints]
        elif by_domain[domain][0]:
            by_domain[domain].append(taints)

    for pool_reqs, taints, type_reqs in pools:
        for it_reqs in type_reqs:
            for key, req in pool_reqs.merge(it_reqs).items():
                groups.setdefault(key, {})
                if not req.complement:
                    for domain in sorted(req.values):
                        insert(key, domain, taints)
        for key, req in pool_reqs.items():
            if req.operator == "In":
                for domain in sorted(req.values):
                    insert(key, domain, taints)
    return {k: {d: set(ts) for d, ts in v.items()} for k, v in groups.items()}


GPU_TAINT = (Taint(key="nvidia.com/gpu", effect="NoSchedule"),)
OTHER_TAINT = (Taint(key="dedicated", value="ml", effect="NoSchedule"),)


@pytest.mark.parametrize(
    "shapes",
    [
        [({"team": "a"}, GPU_TAINT), ({"team": "b"}, GPU_TAINT)],
        [({"team": "a"}, GPU_TAINT), ({"team": "a"}, ())],
        [({}, ()), ({"team": "a"}, GPU_TAINT), ({}, OTHER_TAINT)],
        [({"karpenter.k8s.aws/instance-family": "g5"}, GPU_TAINT), ({"zone-free": "x"}, ())],
        [({"topology.kubernetes.io/zone": "us-east-1a"}, OTHER_TAINT), ({}, GPU_TAINT)],
    ],
)
def test_shared_domain_walk_finds_what_the_naive_walk_finds(
    shapes: list[tuple[dict[str, str], tuple[Taint, ...]]],
) -> None:
    type_reqs = [it.requirements for it in TYPES]
    pools = [
        (
            Requirements.from_labels(labels).add(
                Requirement.new("kubernetes.io/arch", "In", ["amd64"])
            ),
            taints,
            type_reqs,
        )
        for labels, taints in shapes
    ]
    built = build_domain_groups(pools)
    got = {k: {d: set(ts) for d, ts in v.items()} for k, v in built.items()}
    assert got == _naive_domain_groups(pools)
    # Each distinct taint set is kept once per domain.
    assert all(len(ts) == len(set(ts)) for v in built.values() for ts in v.values())


def test_a_full_planned_node_claim_is_ruled_out_before_its_requirements_are_merged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    can_add = _count(monkeypatch, NodeClaim, "can_add")
    pool = edit(gpu_pool("gpu"), "spec.limits", {"nvidia.com/gpu": "1000"})
    docs = [pool, *(gpu_pod(f"p-{i}", gpus=4) for i in range(20))]
    objs = load_text(to_yaml(*docs), "t.yaml").objects
    types = [it for it in GPU_TYPES if it.name == "g5.12xlarge"]  # each pod fills a node
    results = solve(objs.pods, [PoolInput(objs.nodepools[0], types)])
    assert len(results.new_node_claims) == 20
    # One can_add per new NodeClaim; none against the 19 full claims before it.
    assert can_add[0] == 20


def _overlay(name: str, weight: int, family: str = "g5") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {
            "weight": weight,
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": [family]}
            ],
            "priceAdjustment": "-10%" if weight % 2 else "+10%",
        },
    }


def test_overlays_with_the_same_requirements_match_each_type_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checks = _count(monkeypatch, Requirements, "is_compatible")
    overlays = load_text(
        to_yaml(*(_overlay(f"o-{i:03d}", i + 1) for i in range(100))), "o.yaml"
    ).objects.nodeoverlays
    pools = [PoolTypes("gpu", {}, TYPES)]
    accepted, conflicts = evaluate_overlays(overlays, pools)
    assert (len(accepted), conflicts) == (100, [])
    # One pool check plus one per type, for all 100 overlays together.
    assert checks[0] == 1 + len(TYPES)


def test_overlays_apply_first_match_wins_whatever_their_requirements() -> None:
    docs = [_overlay("a", 3, "g5"), _overlay("b", 2, "m5"), _overlay("c", 1, "g5")]
    overlays = load_text(to_yaml(*docs), "o.yaml").objects.nodeoverlays
    pools = [PoolTypes("gpu", {}, TYPES)]
    accepted, _ = evaluate_overlays(overlays, pools)
    [(types, changed)] = apply_overlays(accepted, pools)
    by_name: dict[str, InstanceType] = {it.name: it for it in types}
    assert changed == len(TYPES)
    # g5: "a" (weight 3, -10%) wins over "c"; m5: "b" (+10%).
    assert by_name["g5.xlarge"].offerings[0].price == pytest.approx(
        GPU_TYPES[0].offerings[0].price * 0.9
    )
    assert by_name["m5.large"].offerings[0].price == pytest.approx(
        CPU_TYPES[0].offerings[0].price * 1.1
    )
    assert nodeoverlay.ordered(accepted)[0].metadata.name == "a"


def test_a_bucket_of_full_claims_is_skipped_in_one_look(monkeypatch: pytest.MonkeyPatch) -> None:
    may_fit = _count(monkeypatch, NodeClaim, "may_fit")
    pool = edit(gpu_pool("gpu"), "spec.limits", {"nvidia.com/gpu": "1000"})
    docs = [pool, *(gpu_pod(f"p-{i}", gpus=4) for i in range(20))]
    objs = load_text(to_yaml(*docs), "t.yaml").objects
    types = [it for it in GPU_TYPES if it.name == "g5.12xlarge"]
    results = solve(objs.pods, [PoolInput(objs.nodepools[0], types)])
    assert len(results.new_node_claims) == 20
    # Every planned claim has 4 GPUs in use and none left: no claim is looked at one by one.
    assert may_fit[0] == 0


def test_pools_out_of_limits_refuse_without_a_new_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    new_claims = _count(monkeypatch, Scheduler, "_add_to_new_node_claim")
    spent = [edit(gpu_pool(f"z-{i}"), "spec.limits", {"nvidia.com/gpu": "0"}) for i in range(10)]
    open_pool = edit(gpu_pool("b"), "spec.limits", {"nvidia.com/gpu": "1000"})
    docs = [*spent, open_pool, *(gpu_pod(f"p-{i}", gpus=4) for i in range(5))]
    objs = load_text(to_yaml(*docs), "t.yaml").objects
    types = [it for it in GPU_TYPES if it.name == "g5.12xlarge"]
    results = solve(objs.pods, [PoolInput(np, types) for np in objs.nodepools])
    assert {c.nodepool for c in results.new_node_claims} == {"b"}
    # The spent pools come first (names descending) but cost no new-claim attempt: one a pod.
    assert new_claims[0] == 5


def test_a_pod_no_pool_can_take_names_every_pool_and_why() -> None:
    spent = edit(gpu_pool("a"), "spec.limits", {"nvidia.com/gpu": "0"})
    small = edit(gpu_pool("b"), "spec.limits", {"nvidia.com/gpu": "1000"})
    docs = [spent, small, gpu_pod("big", gpus=8)]
    objs = load_text(to_yaml(*docs), "t.yaml").objects
    types = [it for it in GPU_TYPES if it.name == "g5.12xlarge"]
    results = solve(objs.pods, [PoolInput(np, types) for np in objs.nodepools])
    message = str(results.pod_errors["default/big"])
    assert message.startswith('nodepool "b": ') or message.startswith('nodepool "a": ')
    assert f'nodepool "a": {refusal.TYPES_EXCEED_LIMITS}' in message
    assert 'nodepool "b": no instance type' in message


def _team_overlay() -> dict[str, Any]:
    doc = _overlay("team-a", 1)
    doc["spec"]["requirements"] = [{"key": "team", "operator": "In", "values": ["a"]}]
    return doc


def test_pools_an_overlay_changes_alike_share_one_type_list() -> None:
    overlays = load_text(to_yaml(_overlay("o", 1)), "o.yaml").objects.nodeoverlays
    pools = [PoolTypes(f"gpu-{i}", {"team": "a"}, TYPES) for i in range(3)]
    accepted, _ = evaluate_overlays(overlays, pools)
    results = apply_overlays(accepted, pools)
    assert results[0][1] == 3  # the three g5 types
    assert results[0][0] is results[1][0] is results[2][0]


def test_an_overlay_on_a_pool_label_skips_pools_without_that_label() -> None:
    overlays = load_text(to_yaml(_team_overlay()), "o.yaml").objects.nodeoverlays
    # The labelled pool first: its answer for the types must not be reused for the other pool,
    # where `team` is a key neither the pool nor the types define (Karpenter: not compatible).
    pools = [PoolTypes("labelled", {"team": "a"}, TYPES), PoolTypes("plain", {}, TYPES)]
    accepted, _ = evaluate_overlays(overlays, pools)
    [(_, labelled), (plain_types, plain)] = apply_overlays(accepted, pools)
    assert (labelled, plain) == (len(TYPES), 0)
    assert plain_types == TYPES


def _with_daemonsets(docs: list[dict[str, Any]], *daemonsets: dict[str, Any]) -> Results:
    objs = load_text(to_yaml(*docs, *daemonsets), "t.yaml").objects
    pools = [PoolInput(np, TYPES) for np in objs.nodepools]
    return solve(objs.pods, pools, daemonsets=objs.daemonsets)


def test_alike_pools_share_their_daemonset_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    grouped = _count(monkeypatch, passcache, "build_daemon_groups")
    _with_daemonsets(_pools(30, labelled=True), daemonset("a"), daemonset("b"))
    assert grouped[0] == 1


def test_a_daemonset_pinned_to_one_pool_weighs_only_there() -> None:
    pinned = edit(
        daemonset("only-003"),
        "spec.template.spec.nodeSelector",
        {"karpenter.sh/nodepool": "gpu-003"},
    )
    pinned = edit(pinned, "spec.template.spec.containers[0].resources.requests", {"cpu": "3"})
    overheads = {}
    objs = load_text(to_yaml(*_pools(5), pinned), "t.yaml").objects
    scheduler = Scheduler(
        [PoolInput(np, TYPES) for np in objs.nodepools], daemonsets=objs.daemonsets
    )
    for template in scheduler.templates:
        overheads[template.name] = max(g.overhead.get("cpu", 0) for g in template.daemon_groups)
    assert overheads == {f"gpu-{i:03d}": 3000 if i == 3 else 0 for i in range(5)}
