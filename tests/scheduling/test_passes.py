"""The provisioning loop (`controllers/provisioning/loop.py`): later passes place what NodePool
limits held back, static NodePools' NodeClaims take pods, and with no dynamic NodePool the
pods get Karpenter's "no dynamic nodepools found"."""

from __future__ import annotations

from gpucap.apis.serde import load_text
from gpucap.controllers.static import wanted
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.refusal import NO_DYNAMIC_NODEPOOLS, NO_TEMPLATES, TYPES_EXCEED_LIMITS
from gpucap.scheduling.scheduler import PoolInput, solve
from tests.builders import edit, pod, to_yaml
from tests.scheduling.builders import cpu_pool, gpu_pod, gpu_pool, instance_type

# Sizes up to an 8-GPU type, as a real GPU family has: the first pass reserves 8 per NodeClaim.
from tests.scheduling.passes import (
    SIZED_GPU_TYPES,
    claims_by_pass,
    limited_gpu_pool,
    llm,
    run_passes,
    static_pool,
)


def test_pods_left_by_subtract_max_launch_in_the_next_pass() -> None:
    plan = run_passes([limited_gpu_pool(8), llm(3)], SIZED_GPU_TYPES)
    # Pass 1 reserves the 8-GPU option of llm-0's NodeClaim; pass 2 sees it launched as a
    # 1-GPU g5.xlarge and has 7 GPUs left for the other two.
    assert claims_by_pass(plan) == [
        (1, ["default/llm-0"]),
        (2, ["default/llm-1"]),
        (2, ["default/llm-2"]),
    ]
    assert [c.launch.instance_type for c in plan.node_claims if c.launch] == ["g5.xlarge"] * 3
    assert plan.pod_errors == {}
    assert plan.passes == 2


def test_passes_1_keeps_the_single_pass() -> None:
    docs = [limited_gpu_pool(8), llm(3)]
    plan = run_passes(docs, SIZED_GPU_TYPES, max_passes=1)
    loaded = load_text(to_yaml(*docs), "t.yaml").objects
    single = solve(loaded.pods, [PoolInput(np, SIZED_GPU_TYPES) for np in loaded.nodepools])
    assert [(c.name, [p.key for p in c.pods]) for c in plan.node_claims] == [
        (c.name, [p.key for p in c.pods]) for c in single.new_node_claims
    ]
    assert plan.pod_errors == {k: str(e) for k, e in single.pod_errors.items()}
    assert plan.pod_errors == {
        "default/llm-1": f'nodepool "gpu": {TYPES_EXCEED_LIMITS}',
        "default/llm-2": f'nodepool "gpu": {TYPES_EXCEED_LIMITS}',
    }
    assert plan.passes == 1
    assert any("stopped after 1 pass" in n for n in plan.notes)


def test_a_limit_the_launched_nodes_really_fill_keeps_the_rest_pending() -> None:
    # 5 GPUs: pass 1 reserves 4 (g5.12xlarge) for llm-0 and 1 for llm-1; pass 2 sees 2 used
    # and places llm-2; with 2 GPUs both fit the 1-GPU type in pass 1 and llm-2 never fits.
    plan = run_passes([limited_gpu_pool(5), llm(3)], SIZED_GPU_TYPES)
    assert claims_by_pass(plan) == [
        (1, ["default/llm-0"]),
        (1, ["default/llm-1"]),
        (2, ["default/llm-2"]),
    ]
    plan = run_passes([limited_gpu_pool(2), llm(3)], SIZED_GPU_TYPES)
    assert claims_by_pass(plan) == [(1, ["default/llm-0"]), (1, ["default/llm-1"])]
    assert plan.pod_errors == {"default/llm-2": f'nodepool "gpu": {TYPES_EXCEED_LIMITS}'}
    assert plan.passes == 2  # the second pass creates nothing: the loop stops there


def test_a_pass_that_only_repeats_the_reasons_ends_the_loop() -> None:
    # The untolerating (CPU) pod is pending in every pass; the second pass creates nothing.
    untolerated = gpu_pod("plain", gpus=None, tolerations=None)  # type: ignore[arg-type]
    plan = run_passes([gpu_pool(), gpu_pod("a"), untolerated], SIZED_GPU_TYPES)
    assert plan.passes == 2
    assert claims_by_pass(plan) == [(1, ["default/a"])]
    assert plan.pod_errors["default/plain"].startswith('nodepool "gpu": did not tolerate taint')


def test_static_nodepool_nodes_take_pods() -> None:
    plan = run_passes(
        [static_pool("fixed", 2), gpu_pod("a"), gpu_pod("b"), gpu_pod("c", gpus=2)],
        SIZED_GPU_TYPES,
    )
    static = [c for c in plan.node_claims if c.static]
    assert [(c.name, c.pass_number) for c in static] == [("fixed-1", 0), ("fixed-2", 0)]
    # The cheapest launchable type of the template (spot g5.xlarge), like any NodeClaim.
    assert {c.launch.instance_type for c in static if c.launch} == {"g5.xlarge"}
    assert sorted(p.key for c in static for p in c.pods) == ["default/a", "default/b"]
    # No dynamic NodePool to launch for the 2-GPU pod.
    assert plan.pod_errors == {"default/c": NO_DYNAMIC_NODEPOOLS}


def test_static_nodeclaims_count_in_the_price_and_requests_show_their_pods() -> None:
    plan = run_passes([static_pool("fixed", 1), gpu_pod("a")], SIZED_GPU_TYPES)
    (claim,) = plan.node_claims
    assert claim.requests["nvidia.com/gpu"] == 1
    assert claim.requests["pods"] == 1
    assert claim.launch is not None
    assert sum(launch.price for launch in plan.launches.values()) == claim.launch.price


def test_a_static_nodepool_with_a_dynamic_one_fills_its_nodes_first() -> None:
    plan = run_passes(
        [static_pool("fixed", 1), gpu_pool("burst"), gpu_pod("a"), gpu_pod("b")],
        {"fixed": SIZED_GPU_TYPES, "burst": SIZED_GPU_TYPES},
    )
    assert [
        (c.nodepool, c.static, c.pass_number, [p.key for p in c.pods]) for c in plan.node_claims
    ] == [
        ("fixed", True, 0, ["default/a"]),
        ("burst", False, 1, ["default/b"]),
    ]


def test_a_static_nodepool_makes_only_what_it_is_short_of_within_its_node_limit() -> None:
    existing = StateNode(
        name="fixed-node",
        labels={"karpenter.sh/nodepool": "fixed", "karpenter.sh/initialized": "true"},
        allocatable={"cpu": 4000, "memory": 16 * 2**30, "pods": 110},
    )
    plan = run_passes(
        [static_pool("fixed", 5, nodes="3")], SIZED_GPU_TYPES, state_nodes=(existing,)
    )
    # 5 replicas, 1 running: 4 short, but limits.nodes 3 leaves room for 2.
    assert [c.name for c in plan.node_claims] == ["fixed-1", "fixed-2"]


def test_the_static_count_follows_replicas_and_the_node_limit() -> None:
    # (replicas, limits.nodes, running, deleting) -> NodeClaims created
    table = [
        ((3, None, 0, 0), 3),
        ((3, None, 3, 0), 0),
        ((3, None, 5, 0), 0),
        ((3, 2, 0, 0), 2),
        ((3, 4, 1, 1), 2),
        ((3, 4, 1, 3), 0),
        ((0, None, 0, 0), 0),
    ]
    for args, count in table:
        assert wanted(*args) == count, args


def test_no_nodepools_found() -> None:
    # Only a static NodePool: the provisioner has no dynamic one to schedule with.
    plan = run_passes([static_pool("fixed", 0), gpu_pod("a")], SIZED_GPU_TYPES)
    assert plan.node_claims == []
    assert plan.pod_errors == {"default/a": NO_DYNAMIC_NODEPOOLS}
    # No NodePool at all (old-API or Auto Mode pools are not in the pools).
    plan = run_passes([gpu_pod("a")], SIZED_GPU_TYPES)
    assert plan.pod_errors == {"default/a": "no dynamic nodepools found"}


def test_a_dynamic_nodepool_without_instance_types_keeps_the_requirements_message() -> None:
    plan = run_passes([cpu_pool(), gpu_pod("a")], {"default": []})
    assert plan.pod_errors == {"default/a": NO_TEMPLATES}


def test_pods_of_earlier_passes_stay_on_their_nodeclaims() -> None:
    plan = run_passes([limited_gpu_pool(8), llm(4)], SIZED_GPU_TYPES)
    first = [c for c in plan.node_claims if c.pass_number == 1]
    single = run_passes([limited_gpu_pool(8), llm(4)], SIZED_GPU_TYPES, max_passes=1)
    assert [(c.name, [p.key for p in c.pods]) for c in first] == [
        (c.name, [p.key for p in c.pods]) for c in single.node_claims
    ]
    assert len({c.name for c in plan.node_claims}) == len(plan.node_claims)


def test_nodeclaim_names_skip_the_names_of_nodes_in_the_input() -> None:
    taken = StateNode(
        name="gpu-1",
        labels={"karpenter.sh/nodepool": "other", "karpenter.sh/initialized": "true"},
        allocatable={"cpu": 1000, "memory": 2**30, "pods": 110},
    )
    plan = run_passes([gpu_pool(), gpu_pod("a")], SIZED_GPU_TYPES, state_nodes=(taken,))
    assert [c.name for c in plan.node_claims] == ["gpu-2"]


def test_a_pod_held_back_in_one_pass_can_join_a_nodeclaim_launched_in_it() -> None:
    # minValues 2 keeps `b` off gpu-1 in pass 1 (only the 8-CPU type would fit both pods) and
    # the CPU limit keeps it off a new one; launched as that cheaper 8-CPU type, gpu-1 has
    # room for `b` in pass 2, where an existing node's minValues no longer matter.
    types = [
        instance_type("c5.xlarge", cpu=4, memory_gib=16, price=1.0),
        instance_type("c5.2xlarge", cpu=8, memory_gib=32, price=0.5),
    ]
    pool = edit(cpu_pool("gpu"), "spec.limits", {"cpu": "12"})
    pool = edit(
        pool,
        "spec.template.spec.requirements",
        [
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "Exists",
                "minValues": 2,
            }
        ],
    )
    plan = run_passes([pool, pod("a", cpu="3"), pod("b", cpu="3")], types)
    (claim,) = plan.node_claims
    assert claim.launch is not None
    assert claim.launch.instance_type == "c5.2xlarge"
    assert (claim.pass_number, [p.key for p in claim.pods]) == (1, ["default/a", "default/b"])
    assert claim.requests["cpu"] == 6000
    assert plan.pod_errors == {}
    single = run_passes([pool, pod("a", cpu="3"), pod("b", cpu="3")], types, max_passes=1)
    assert "minValues" in single.pod_errors["default/b"]
