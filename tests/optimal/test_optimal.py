"""`plan --optimal` on hand-checked instances: the optimum, the floor and Karpenter's cost."""

from __future__ import annotations

import dataclasses

import pytest

from gpucap.controllers.provisioning.optimal import build_instance, check, optimise
from gpucap.operator.changes import karpenter_cost, suggest
from gpucap.operator.plan import plan
from tests.builders import edit
from tests.optimal.instances import (
    CATALOG,
    gpu_deployment,
    gpu_pool,
    hostname_spread,
    planned,
)


def test_two_one_gpu_pods_go_on_two_small_nodes_where_karpenter_takes_one_large() -> None:
    # Created together, Karpenter packs both 1-GPU pods onto the cheapest type that holds
    # both (g5.12xlarge, 4 GPUs); two g5.xlarge cost about a third.
    _, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    assert [c.launch.instance_type for c in made.node_claims if c.launch] == ["g5.12xlarge"]
    fleet = optimise(made)
    assert fleet.source == "optimum"
    assert fleet.status == "optimal"
    assert sorted(n.instance_type for n in fleet.nodes) == ["g5.xlarge", "g5.xlarge"]
    assert fleet.karpenter_cost == pytest.approx(karpenter_cost(made))
    assert fleet.cost < fleet.karpenter_cost / 2
    assert fleet.floor == pytest.approx(fleet.cost)
    assert fleet.gap == pytest.approx(0.0, abs=1e-6)


def test_a_hostname_spread_forces_the_same_fleet_as_karpenter() -> None:
    # One pod per node: Karpenter launches the cheapest 1-GPU type for each, which is optimal.
    _, made = planned(
        gpu_pool(),
        gpu_deployment("serve", 3, topologySpreadConstraints=hostname_spread("serve")),
    )
    fleet = optimise(made)
    assert len(made.node_claims) == 3
    assert fleet.cost == pytest.approx(fleet.karpenter_cost)
    assert fleet.floor == pytest.approx(fleet.karpenter_cost)
    assert all(len(n.pods) == 1 for n in fleet.nodes)


def test_self_anti_affinity_on_hostname_allows_one_pod_per_node() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                }
            ]
        }
    }
    _, made = planned(gpu_pool(), gpu_deployment("a", 2, affinity=anti))
    inst = build_instance(made)
    assert inst.group_caps == [1]
    fleet = optimise(made)
    assert all(len(n.pods) == 1 for n in fleet.nodes)


def test_a_nodepool_limit_sends_the_rest_to_a_dearer_pool() -> None:
    # The cheap pool (g6) may hold one GPU; the other two pods need the dearer g5 pool.
    cheap = gpu_pool("cheap", ["g6"], {"nvidia.com/gpu": "1"})
    dear = gpu_pool("dear", ["g5"])
    _, made = planned(
        cheap, dear, gpu_deployment("batch", 3, topologySpreadConstraints=hostname_spread("batch"))
    )
    fleet = optimise(made)
    inst = build_instance(made)
    assert inst.limits["cheap"]["nvidia.com/gpu"] == 1
    pools = sorted(n.nodepool for n in fleet.nodes)
    assert pools == ["cheap", "dear", "dear"]
    assert check(inst, fleet.nodes) == []
    assert fleet.floor <= fleet.cost + 1e-9 <= fleet.karpenter_cost + 2e-9


def test_the_floor_relaxes_what_is_not_linear_and_says_so() -> None:
    zone_spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "z"}},
        }
    ]
    _, made = planned(gpu_pool(), gpu_deployment("z", 3, topologySpreadConstraints=zone_spread))
    fleet = optimise(made)
    assert any("relaxed" in n and "topology.kubernetes.io/zone" in n for n in fleet.notes)
    assert fleet.floor <= fleet.cost <= fleet.karpenter_cost + 1e-9


def test_no_new_node_means_nothing_to_optimise() -> None:
    _, made = planned(gpu_pool())
    fleet = optimise(made)
    assert (fleet.pods, fleet.cost, fleet.floor, fleet.status) == (0, 0.0, 0.0, "no pods")


def test_the_two_pod_g5_case_suggests_requiring_one_gpu_per_instance() -> None:
    m, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    changes = suggest(m, CATALOG, made, optimise(made), max_passes=1)
    gpu_count = [c for c in changes if "instance-gpu-count" in c.what]
    assert [c.value for c in gpu_count] == [
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]}
    ]
    (change,) = gpu_count
    assert (change.object, change.field) == ("NodePool/gpu", "spec.template.spec.requirements")
    again = plan(change.apply(m), CATALOG)
    assert [c.launch.instance_type for c in again.node_claims if c.launch] == ["g5.xlarge"] * 2
    assert change.cost == pytest.approx(optimise(made).cost)
    assert change.line().startswith(
        "NodePool gpu: require instance-gpu-count 1 → Karpenter's plan $0.79/h instead of $2.14/h, −63 %"
    )


def test_no_change_is_suggested_when_karpenter_is_already_optimal() -> None:
    m, made = planned(
        gpu_pool(), gpu_deployment("serve", 2, topologySpreadConstraints=hostname_spread("serve"))
    )
    assert suggest(m, CATALOG, made, optimise(made), max_passes=1) == []


def test_the_fleet_check_catches_a_node_over_its_gpus_and_a_pod_left_out() -> None:
    _, made = planned(gpu_pool(), gpu_deployment("batch", 2))
    inst = build_instance(made)
    (node, _) = optimise(made).nodes
    crowded = dataclasses.replace(node, pods=("default/batch-0", "default/batch-1"))
    assert check(inst, [crowded]) == ["a g5.xlarge node is over its nvidia.com/gpu"]
    assert check(inst, [node]) == ["1 pod(s) on no node, e.g. default/batch-1"]


def test_an_on_demand_pool_is_told_that_allowing_spot_saves() -> None:
    on_demand = edit(gpu_pool(), "spec.template.spec.requirements[1].values", ["on-demand"])
    m, made = planned(
        on_demand, gpu_deployment("serve", 2, topologySpreadConstraints=hostname_spread("serve"))
    )
    changes = suggest(m, CATALOG, made, optimise(made), max_passes=1)
    spot = [c for c in changes if c.value.get("key") == "karpenter.sh/capacity-type"]
    assert [c.value["values"] for c in spot] == [["on-demand", "spot"]]
    again = plan(spot[0].apply(m), CATALOG)
    assert {c.launch.capacity_type for c in again.node_claims if c.launch} == {"spot"}


def test_a_limit_that_sends_pods_to_a_dearer_pool_is_told_to_be_raised() -> None:
    # The cheap pool (g6, preferred by weight) may hold one GPU: the other pods go to g5.
    cheap = gpu_pool("cheap", ["g6"], {"nvidia.com/gpu": "1"})
    cheap["spec"]["weight"] = 10
    dear = gpu_pool("dear", ["g5"])
    m, made = planned(
        cheap, dear, gpu_deployment("serve", 2, topologySpreadConstraints=hostname_spread("serve"))
    )
    assert sorted(c.nodepool for c in made.node_claims) == ["cheap", "dear"]
    changes = suggest(m, CATALOG, made, optimise(made), max_passes=made.passes)
    raised = [c for c in changes if c.field == "spec.limits"]
    assert [(c.object, c.value) for c in raised] == [("NodePool/cheap", {"nvidia.com/gpu": "2"})]
    again = plan(raised[0].apply(m), CATALOG, max_passes=made.passes)
    assert [c.nodepool for c in again.node_claims] == ["cheap", "cheap"]
