"""GPU007 (issue 23): several GPU replicas (a LeaderWorkerSet's: groups) with nothing keeping
them apart, which `plan` puts on one node: one failure domain. The finding prices the plan as
written and with a hostname topology spread added to the workload."""

from __future__ import annotations

import re
from typing import Any

from tests.builders import (
    GPU_TOLERATION,
    deployment,
    edit,
    leaderworkerset,
    nodeclass,
    nodepool,
    pod_spec,
)
from tests.lint.builders import lint

G6E_ON_DEMAND = edit(
    nodepool(limits={"nvidia.com/gpu": "16"}),
    "spec.template.spec.requirements",
    [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6e"]},
    ],
)
HOSTNAME_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "vllm"}},
}


def vllm(replicas: int, **extra: Any) -> dict[str, Any]:
    """`replicas` 4-GPU vLLM replicas that tolerate the GPU pool."""
    return deployment(
        "vllm", replicas, gpu=4, cpu="8", memory="64Gi", tolerations=[GPU_TOLERATION], **extra
    )


def test_two_gpu_replicas_packed_on_one_node_warn_with_both_prices() -> None:
    f = lint("GPU007", G6E_ON_DEMAND, nodeclass(), vllm(2)).only
    assert f.severity == "warning"
    assert "puts 2 of them on one node (g6e.48xlarge" in f.message
    prices = [float(p) for p in re.findall(r"\$(\d+\.\d\d)/h", f.message)]
    # The node, the plan as written, the plan with the spread, the difference.
    assert len(prices) == 4
    node, as_is, spread, saving = prices
    assert node == as_is
    assert spread < as_is
    assert abs(as_is - spread - saving) < 0.011
    assert "less" in f.message


def test_replicas_already_spread_on_hostname_are_not_reported() -> None:
    spread = vllm(2, topologySpreadConstraints=[HOSTNAME_SPREAD])
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), spread).findings == []


def test_replicas_kept_apart_by_zone_anti_affinity_are_not_reported() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "vllm"}},
                    "topologyKey": "topology.kubernetes.io/zone",
                }
            ]
        }
    }
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), vllm(2, affinity=anti)).findings == []


def test_one_gpu_replica_is_not_reported() -> None:
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), vllm(1)).findings == []


def test_replicas_the_plan_already_puts_on_separate_nodes_are_not_reported() -> None:
    # 8-GPU replicas: no g6e holds two, so each gets its own node without any spread.
    big = deployment("vllm", 2, gpu=8, cpu="8", memory="64Gi", tolerations=[GPU_TOLERATION])
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), big).findings == []


def test_time_sliced_replicas_sharing_a_gpu_are_not_reported() -> None:
    from pathlib import Path  # noqa: PLC0415

    from typer.testing import CliRunner  # noqa: PLC0415

    from gpucap.cli.main import app  # noqa: PLC0415

    # aws-samples/karpenter-blueprints' node-overlay blueprint: four 1-slice replicas on one
    # g5g.xlarge whose one GPU advertises 4 slices: packing them is the point.
    blueprint = (
        Path(__file__).resolve().parents[1]
        / "realworld"
        / "aws-samples__karpenter-blueprints"
        / "blueprints"
        / "node-overlay"
    )
    result = CliRunner().invoke(app, ["lint", str(blueprint)])
    assert "GPU007" not in result.stdout


# ---- LeaderWorkerSet: its groups are the replicas ---------------------------------------------
LWS_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "llm"}},
}


def llm(groups: int, size: int, **spec: Any) -> dict[str, Any]:
    """A LeaderWorkerSet of `groups` groups of `size` 4-GPU pods (leaders from the worker
    template) that tolerate the GPU pool."""
    worker = {"spec": pod_spec(gpu=4, cpu="8", memory="64Gi", tolerations=[GPU_TOLERATION], **spec)}
    return leaderworkerset("llm", groups, size, workerTemplate=worker)


def _prices(message: str) -> list[float]:
    return [float(p) for p in re.findall(r"\$(\d+\.\d\d)/h", message)]


def test_gpu007_warns_on_leaderworkerset_groups_packed_on_one_node() -> None:
    linted = lint("GPU007", G6E_ON_DEMAND, nodeclass(), llm(2, 2))
    f = linted.only
    assert f.severity == "warning"
    assert f.object_ref == "LeaderWorkerSet/default/llm"
    assert f.line == linted.line("kind: LeaderWorkerSet", "leaderWorkerTemplate:")
    assert "2 groups of 2 pods" in f.message
    assert "the plan puts GPU pods of 2 groups on one node (g6e.48xlarge" in f.message
    node, as_is, spread, saving = _prices(f.message)
    assert node < as_is  # two 8-GPU nodes as written: four 4-GPU pods
    assert spread < as_is
    assert abs(as_is - spread - saving) < 0.011
    assert "less" in f.message


def test_leaderworkerset_groups_spread_on_hostname_are_not_reported() -> None:
    spread = llm(2, 2, topologySpreadConstraints=[LWS_SPREAD])
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), spread).findings == []


def test_leaderworkerset_exclusive_on_hostname_is_not_reported() -> None:
    # The LWS webhook keeps every other group off a group's node (apis/leaderworkerset.py).
    exclusive = edit(
        llm(2, 2),
        "metadata.annotations",
        {"leaderworkerset.sigs.k8s.io/exclusive-topology": "kubernetes.io/hostname"},
    )
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), exclusive).findings == []


def test_the_pods_of_one_leaderworkerset_group_sharing_a_node_are_not_reported() -> None:
    # One group of two 4-GPU pods on one 8-GPU node: a group fails as one anyway.
    assert lint("GPU007", G6E_ON_DEMAND, nodeclass(), llm(1, 2)).findings == []


def test_pods_the_plan_leaves_pending_as_written_are_not_blamed_on_the_spread() -> None:
    # Six 4-GPU pods under a 16-GPU limit: two stay Pending with or without the spread, so the
    # finding compares prices instead of saying the spread leaves pods Pending.
    f = lint("GPU007", G6E_ON_DEMAND, nodeclass(), llm(2, 3)).only
    assert "Pending" not in f.message
    assert len(_prices(f.message)) == 4


def test_a_spread_that_leaves_replicas_pending_says_how_many() -> None:
    # Only 8-GPU nodes, at most one of them: apart, the second replica has nowhere to go.
    one_big_node = edit(
        edit(G6E_ON_DEMAND, "spec.limits", {"nvidia.com/gpu": "8"}),
        "spec.template.spec.requirements[2]",
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6e.48xlarge"]},
    )
    f = lint("GPU007", one_big_node, nodeclass(), vllm(2)).only
    assert f.message.endswith("with a hostname topology spread one more of its pods stays Pending")
