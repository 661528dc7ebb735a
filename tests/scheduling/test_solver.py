"""Karpenter's scheduling rules (provisioning spec §3), one test per rule, written as sentences."""

from __future__ import annotations

from gpucap.apis.core import Taint
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.options import SchedulingOptions
from tests.builders import GPU_TOLERATION, daemonset, deployment, edit, pod
from tests.scheduling.builders import (
    CPU_TYPES,
    GIB,
    GPU_TYPES,
    cpu_pool,
    gpu_pod,
    gpu_pool,
    instance_type,
    load_models,
    reasons,
    run,
)

REQS = "spec.template.spec.requirements"
GPU_COUNT_1 = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]}


def test_gpu_pod_without_toleration_tolerates_the_gpu_taint_by_eks_admission() -> None:
    # ExtendedResourceToleration (apis/admission.py) stores it tolerating nvidia.com/gpu.
    result = run([gpu_pool(), pod("p", gpu=1)], GPU_TYPES)
    assert result.pod_errors == {}
    assert [p.key for c in result.new_node_claims for p in c.pods] == ["default/p"]


def test_gpu_pod_without_toleration_is_unschedulable_on_a_pool_with_another_taint() -> None:
    taints = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    pool = edit(gpu_pool(), "spec.template.spec.taints", taints)
    result = run([pool, pod("p", gpu=1)], GPU_TYPES)
    assert result.new_node_claims == []
    assert reasons(result) == {
        "default/p": 'nodepool "gpu": did not tolerate taint dedicated=ml:NoSchedule'
    }


def test_gpu_pod_with_toleration_gets_a_gpu_node() -> None:
    result = run([gpu_pool(), gpu_pod("p")], GPU_TYPES)
    assert result.pod_errors == {}
    (claim,) = result.new_node_claims
    assert [p.key for p in claim.pods] == ["default/p"]
    assert all(it.capacity["nvidia.com/gpu"] >= 1 for it in claim.instance_types)
    assert claim.name == "gpu-1"


def test_limits_of_six_gpus_stop_the_seventh_single_gpu_pod() -> None:
    pool = edit(gpu_pool(), REQS, [GPU_COUNT_1])
    pods = [gpu_pod(f"p{i}", cpu="3") for i in range(7)]  # one pod per 4-vCPU node
    result = run([pool, *pods], GPU_TYPES)
    assert len(result.new_node_claims) == 6
    assert list(reasons(result).values()) == [
        'nodepool "gpu": all available instance types exceed limits for nodepool'
    ]
    assert result.limited_pools() == ["gpu"]


ONE_PER_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "m"}},
            }
        ]
    }
}


def test_limits_subtract_the_largest_option_of_each_new_node_pessimistically() -> None:
    # Options of the first node include g5.12xlarge (4 GPUs): 6 - 4 leaves 2, so the second
    # node may only use 1- or 2-GPU types, the third leaves 0 and the fourth pod stays pending.
    dep = deployment("m", replicas=4, gpu=1, tolerations=[GPU_TOLERATION], affinity=ONE_PER_NODE)
    result = run([gpu_pool(), dep], GPU_TYPES)
    options = [sorted(it.name for it in c.instance_types) for c in result.new_node_claims]
    assert options == [
        ["g5.12xlarge", "g5.2xlarge", "g5.xlarge"],
        ["g5.2xlarge", "g5.xlarge"],
        ["g5.2xlarge", "g5.xlarge"],
    ]
    assert list(reasons(result).values()) == [
        'nodepool "gpu": all available instance types exceed limits for nodepool'
    ]
    assert result.limited_pools() == ["gpu"]


def test_a_node_time_sliced_four_ways_uses_four_of_the_limit() -> None:
    sliced = StateNode(
        name="ip-10-0-1-1",
        labels={"karpenter.sh/nodepool": "gpu", "kubernetes.io/hostname": "ip-10-0-1-1"},
        allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 110, "nvidia.com/gpu": 4},
        capacity={"cpu": 4000, "memory": 16 * GIB, "pods": 110, "nvidia.com/gpu": 4},
        taints=(Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),),
        pods=(),
    )
    pool = edit(gpu_pool(), REQS, [GPU_COUNT_1])
    # 4 pods fill the sliced node; 2 more fit under the limit (6 - 4); the 7th does not.
    pods = [gpu_pod(f"p{i}", cpu="500m", memory="1Gi") for i in range(7)]
    result = run([pool, *pods], GPU_TYPES, state_nodes=(sliced,))
    assert result.pods_on_existing_nodes() == {"ip-10-0-1-1": [f"default/p{i}" for i in range(4)]}
    assert sum(len(c.pods) for c in result.new_node_claims) == 2
    assert len(result.pod_errors) == 1


def test_instance_gpu_count_in_one_rejects_a_two_gpu_pod() -> None:
    pool = edit(gpu_pool(), REQS, [GPU_COUNT_1])
    result = run([pool, gpu_pod("big", gpus=2)], GPU_TYPES)
    assert result.new_node_claims == []
    assert reasons(result)["default/big"].startswith(
        'nodepool "gpu": no instance type has enough resources'
    )


def test_higher_weight_wins() -> None:
    low = edit(cpu_pool("low"), "spec.weight", 10)
    high = edit(cpu_pool("high"), "spec.weight", 50)
    result = run([low, high, pod("p")], CPU_TYPES)
    assert [c.nodepool for c in result.new_node_claims] == ["high"]


def test_equal_weights_go_to_the_name_that_sorts_last() -> None:
    result = run([cpu_pool("alpha"), cpu_pool("beta"), pod("p")], CPU_TYPES)
    assert [c.nodepool for c in result.new_node_claims] == ["beta"]


def test_zone_spread_places_replicas_across_zones() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    dep = deployment("web", replicas=3, topologySpreadConstraints=spread)
    result = run([cpu_pool(), dep], CPU_TYPES)
    zones = sorted(
        c.requirements["topology.kubernetes.io/zone"].sorted_values()[0]
        for c in result.new_node_claims
    )
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_hostname_anti_affinity_gives_one_node_per_pod() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "db"}},
                }
            ]
        }
    }
    result = run([cpu_pool(), deployment("db", replicas=4, affinity=anti)], CPU_TYPES)
    assert [len(c.pods) for c in result.new_node_claims] == [1, 1, 1, 1]


def test_pods_without_constraints_share_a_node() -> None:
    result = run([cpu_pool(), deployment("web", replicas=4, cpu="500m", memory="512Mi")], CPU_TYPES)
    assert [len(c.pods) for c in result.new_node_claims] == [4]


def test_min_values_keeps_enough_instance_types() -> None:
    req = {
        "key": "karpenter.k8s.aws/instance-family",
        "operator": "Exists",
        "minValues": 2,
    }
    types = [*CPU_TYPES, instance_type("c5.xlarge", cpu=4, memory_gib=8, price=0.17)]
    result = run([edit(cpu_pool(), REQS, [req]), pod("p", cpu="3")], types)
    (claim,) = result.new_node_claims
    families = {it.name.split(".")[0] for it in claim.instance_types}
    assert families == {"m5", "c5"}


def test_a_pool_whose_types_cannot_meet_min_values_is_skipped() -> None:
    req = {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 2}
    result = run([edit(cpu_pool(), REQS, [req]), pod("p", cpu="3")], CPU_TYPES)
    assert result.new_node_claims == []
    assert result.pool_notes == {
        "default": "skipping, nodepool minValues requirement is not met for label(s) "
        "(label(s)=[karpenter.k8s.aws/instance-family])"
    }
    assert reasons(result) == {
        "default/p": "nodepool requirements filtered out all available instance types"
    }


def test_min_values_fails_the_claim_when_the_pod_narrows_it_below_the_minimum() -> None:
    req = {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 2}
    types = [*CPU_TYPES, instance_type("c5.xlarge", cpu=4, memory_gib=8, price=0.17)]
    narrow = pod("p", cpu="3", nodeSelector={"karpenter.k8s.aws/instance-family": "m5"})
    result = run([edit(cpu_pool(), REQS, [req]), narrow], types)
    assert result.new_node_claims == []
    assert reasons(result)["default/p"].startswith(
        'nodepool "default": minValues requirement is not met for label(s) '
        "(label(s)=[karpenter.k8s.aws/instance-family])"
    )


def test_min_values_best_effort_relaxes_instead_of_failing() -> None:
    req = {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 2}
    result = run(
        [edit(cpu_pool(), REQS, [req]), pod("p", cpu="3")],
        CPU_TYPES,
        options=SchedulingOptions(min_values_policy="BestEffort"),
    )
    (claim,) = result.new_node_claims
    assert claim.min_values_relaxed


def test_existing_nodes_are_filled_before_new_nodes_are_planned() -> None:
    node = StateNode(
        name="ip-1",
        labels={"kubernetes.io/hostname": "ip-1", "kubernetes.io/arch": "amd64"},
        allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 110},
    )
    result = run([cpu_pool(), pod("a"), pod("b")], CPU_TYPES, state_nodes=(node,))
    assert result.pods_on_existing_nodes() == {"ip-1": ["default/a", "default/b"]}
    assert result.new_node_claims == []


def test_daemonset_overhead_is_reserved_on_existing_nodes() -> None:
    node = StateNode(
        name="ip-1",
        labels={"kubernetes.io/hostname": "ip-1"},
        allocatable={"cpu": 2000, "memory": 16 * GIB, "pods": 110},
    )
    ds = edit(
        daemonset("agent"), "spec.template.spec.containers[0].resources.requests.cpu", "1500m"
    )
    result = run([cpu_pool(), ds, pod("a", cpu="1")], CPU_TYPES, state_nodes=(node,))
    assert result.pods_on_existing_nodes() == {}
    assert len(result.new_node_claims) == 1


def test_daemonset_overhead_is_added_to_new_node_claims() -> None:
    ds = edit(
        daemonset("agent"), "spec.template.spec.containers[0].resources.requests.cpu", "1500m"
    )
    result = run([cpu_pool(), ds, pod("a", cpu="1")], CPU_TYPES)
    (claim,) = result.new_node_claims
    assert claim.requests["cpu"] == 2500
    # 1 vCPU for the pod plus 1.5 for the DaemonSet no longer fits the 2-vCPU m5.large.
    assert [it.name for it in claim.instance_types] == ["m5.xlarge", "m5.2xlarge"]


def test_a_preferred_node_affinity_that_cannot_be_met_is_relaxed() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": "karpenter.k8s.aws/instance-family",
                                "operator": "In",
                                "values": ["x9"],
                            }
                        ]
                    },
                }
            ]
        }
    }
    result = run([cpu_pool(), pod("p", affinity=affinity)], CPU_TYPES)
    assert result.pod_errors == {}
    assert len(result.new_node_claims) == 1


def test_a_satisfiable_preferred_node_affinity_is_honoured() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": "karpenter.k8s.aws/instance-size",
                                "operator": "In",
                                "values": ["2xlarge"],
                            }
                        ]
                    },
                }
            ]
        }
    }
    result = run([cpu_pool(), pod("p", affinity=affinity)], CPU_TYPES)
    assert [it.name for it in result.new_node_claims[0].instance_types] == ["m5.2xlarge"]


def test_required_node_affinity_terms_are_tried_one_at_a_time() -> None:
    terms = [
        {
            "matchExpressions": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["x9"]}
            ]
        },
        {
            "matchExpressions": [
                {"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["large"]}
            ]
        },
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }
    result = run([cpu_pool(), pod("p", affinity=affinity)], CPU_TYPES)
    assert [it.name for it in result.new_node_claims[0].instance_types] == ["m5.large"]


def test_schedule_anyway_spread_is_enforced_until_relaxed() -> None:
    # One zone only: the first pod is fine, the others would skew; ScheduleAnyway lets them in.
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    one_zone = [instance_type("m5.xlarge", zones=("us-east-1a",))]
    result = run(
        [cpu_pool(), deployment("web", replicas=3, topologySpreadConstraints=spread)], one_zone
    )
    assert result.pod_errors == {}


def test_do_not_schedule_spread_leaves_a_pod_pending_rather_than_exceed_max_skew() -> None:
    # One matching pod already runs in us-east-1b; the pool can only launch in us-east-1a.
    # Two new pods keep the skew within 1 (1b=1, 1a=2); a third would make it 2.
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    running = load_models(edit(pod("web-old"), "metadata.labels", {"app": "web"}))[1][0]
    node = StateNode(
        name="ip-b",
        labels={"kubernetes.io/hostname": "ip-b", "topology.kubernetes.io/zone": "us-east-1b"},
        allocatable={"cpu": 0, "memory": 0, "pods": 0},
        pods=(running,),
    )
    pool = edit(
        cpu_pool(),
        REQS,
        [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}],
    )
    dep = deployment("web", replicas=3, topologySpreadConstraints=spread)
    result = run([pool, dep], CPU_TYPES, state_nodes=(node,))
    assert sum(len(c.pods) for c in result.new_node_claims) == 2
    (reason,) = reasons(result).values()
    assert reason.startswith(
        'nodepool "default": unsatisfiable topology constraint for topology spread, '
        "key=topology.kubernetes.io/zone"
    )


def test_prefer_no_schedule_taints_are_tolerated_only_as_the_last_relaxation() -> None:
    pool = edit(
        cpu_pool(), "spec.template.spec.taints", [{"key": "spot", "effect": "PreferNoSchedule"}]
    )
    result = run([pool, pod("p")], CPU_TYPES)
    assert result.pod_errors == {}
    assert len(result.new_node_claims) == 1


def test_a_pod_opting_out_with_nodepool_does_not_exist_is_ignored() -> None:
    opt_out = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
                        ]
                    }
                ]
            }
        }
    }
    result = run([cpu_pool(), pod("p", affinity=opt_out)], CPU_TYPES)
    assert result.new_node_claims == []
    assert result.pod_errors == {}


def test_a_pod_selecting_a_hostname_is_not_provisioned_for() -> None:
    result = run([cpu_pool(), pod("p", nodeSelector={"kubernetes.io/hostname": "ip-1"})], CPU_TYPES)
    assert result.new_node_claims == []
    assert reasons(result) == {
        "default/p": 'invalid node selector or affinity: label "kubernetes.io/hostname" is restricted'
    }


def test_custom_label_selected_by_a_pod_must_be_defined_by_the_nodepool() -> None:
    result = run([cpu_pool(), pod("p", nodeSelector={"company.com/team": "ml"})], CPU_TYPES)
    assert reasons(result)["default/p"] == (
        'nodepool "default": incompatible requirements, label "company.com/team" does not have '
        'known values (typo of "team"?)'
    )


def test_a_template_label_satisfies_a_pod_node_selector() -> None:
    result = run([cpu_pool(), pod("p", nodeSelector={"team": "ml"})], CPU_TYPES)
    assert result.pod_errors == {}
    assert result.new_node_claims[0].labels["team"] == "ml"


def test_larger_pods_are_placed_first() -> None:
    small, big = pod("small", cpu="1"), pod("big", cpu="7")
    result = run([cpu_pool(), small, big], CPU_TYPES)
    (claim,) = result.new_node_claims
    assert [p.key for p in claim.pods] == ["default/big", "default/small"]


def test_options_are_ordered_by_price_and_capacity_types_recorded() -> None:
    result = run([cpu_pool(), pod("p")], CPU_TYPES)
    (claim,) = result.new_node_claims
    assert [it.name for it in claim.instance_types] == ["m5.large", "m5.xlarge", "m5.2xlarge"]
    assert claim.requirements["karpenter.sh/capacity-type"].sorted_values() == ["on-demand", "spot"]
    assert claim.requirements["node.kubernetes.io/instance-type"].sorted_values() == [
        "m5.2xlarge",
        "m5.large",
        "m5.xlarge",
    ]
    assert "kubernetes.io/hostname" not in claim.requirements


def test_an_uninitialized_node_ignores_its_startup_taints() -> None:
    taint = Taint(key="node.cilium.io/agent-not-ready", effect="NoSchedule")
    node = StateNode(
        name="ip-2",
        labels={"kubernetes.io/hostname": "ip-2", "karpenter.sh/nodepool": "default"},
        allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 110},
        taints=(taint,),
        startup_taints=(taint,),
        initialized=False,
    )
    result = run([cpu_pool(), pod("a")], CPU_TYPES, state_nodes=(node,))
    assert result.pods_on_existing_nodes() == {"ip-2": ["default/a"]}


def test_host_port_conflicts_force_a_second_node() -> None:
    ports = [{"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    a = pod("a", containers=ports)
    b = pod("b", containers=ports)
    result = run([cpu_pool(), a, b], CPU_TYPES)
    assert [len(c.pods) for c in result.new_node_claims] == [1, 1]


def test_the_same_input_gives_the_same_plan() -> None:
    docs = [
        gpu_pool(),
        cpu_pool(),
        *(gpu_pod(f"g{i}") for i in range(3)),
        deployment("w", replicas=5),
    ]
    first = run(docs, [*CPU_TYPES, *GPU_TYPES])
    second = run(docs, [*CPU_TYPES, *GPU_TYPES])

    def summary(r: object) -> list[tuple[str, list[str], list[str]]]:
        return [
            (c.name, [p.key for p in c.pods], [it.name for it in c.instance_types])
            for c in r.new_node_claims  # type: ignore[attr-defined]
        ]

    assert summary(first) == summary(second)
