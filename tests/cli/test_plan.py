"""`gpucap plan` on the workshop example and variants: the nodes, prices and reasons it prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli.main import app
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from tests.builders import GPU_TOLERATION, deployment, edit, nodeclass, nodepool, pod, to_yaml
from tests.cli.plans import (
    WORKSHOP,
    cheapest_spot,
    plan_json,
    run_plan,
    runner,
    vllm,
)


def test_the_workshop_vllm_deployment_gets_one_spot_gpu_node_per_replica(tmp_path: Path) -> None:
    doc = plan_json(tmp_path, vllm(3))
    claims = doc["nodeClaims"]
    assert [c["pods"] for c in claims] == [
        ["default/vllm-0"],
        ["default/vllm-1"],
        ["default/vllm-2"],
    ]
    options = claims[0]["instanceTypeOptions"]
    assert sorted(options) == ["g5.2xlarge", "g5.xlarge", "g6.2xlarge", "g6.xlarge"]
    name, price = cheapest_spot(options)
    for c in claims:
        assert c["launch"]["capacityType"] == "spot"
        assert (c["launch"]["instanceType"], c["launch"]["pricePerHour"]) == (name, price)
        assert c["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        ]
        assert c["labels"]["karpenter.sh/nodepool"] == "gpu"
        assert c["requests"]["nvidia.com/gpu"] == "1"
    assert doc["summary"] == {
        "nodeClaims": 3,
        "pods": 3,
        "unschedulable": 0,
        "pricePerHour": round(3 * price, 6),
        "gpus": {"nvidia.com/gpu": 3},
        "passes": 1,
    }


def test_the_gpu_limit_of_six_leaves_the_seventh_replica_pending(tmp_path: Path) -> None:
    doc = plan_json(tmp_path, vllm(7))
    assert doc["summary"]["nodeClaims"] == 6
    assert doc["unschedulable"] == [
        {
            "pod": "default/vllm-6",
            "reason": 'nodepool "gpu": all available instance types exceed limits for nodepool',
        }
    ]


def test_a_pod_without_the_toleration_stays_pending_with_karpenters_reason(tmp_path: Path) -> None:
    doc = plan_json(tmp_path, pod("busybox"))
    assert doc["nodeClaims"] == []
    assert doc["unschedulable"] == [
        {
            "pod": "default/busybox",
            "reason": 'nodepool "gpu": did not tolerate taint nvidia.com/gpu=present:NoSchedule',
        }
    ]


def test_the_device_plugin_daemonset_is_counted_in_the_node_requests(tmp_path: Path) -> None:
    doc = plan_json(tmp_path, vllm(1))
    assert doc["nodeClaims"][0]["requests"]["cpu"] == "3010m"
    assert doc["nodeClaims"][0]["requests"]["pods"] == "2"


def test_on_demand_is_used_when_the_pool_allows_only_on_demand(tmp_path: Path) -> None:
    np = (WORKSHOP / "nodepool.yaml").read_text().replace('["spot", "on-demand"]', '["on-demand"]')
    f = tmp_path / "np.yaml"
    f.write_text(np)
    w = tmp_path / "w.yaml"
    w.write_text(to_yaml(vllm(1)))
    result = runner.invoke(
        app, ["plan", "-o", "json", str(f), str(WORKSHOP / "ec2nodeclass.yaml"), str(w)]
    )
    launch = json.loads(result.stdout)["nodeClaims"][0]["launch"]
    assert launch["capacityType"] == "on-demand"


def test_a_price_override_changes_the_launch(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"us-east-1": {"g5.xlarge": {"spot": 0.01}}}))
    doc = plan_json(tmp_path, vllm(1), extra=("--prices", str(prices)))
    launch = doc["nodeClaims"][0]["launch"]
    assert (launch["instanceType"], launch["pricePerHour"]) == ("g5.xlarge", 0.01)


def test_zones_restrict_where_nodes_launch(tmp_path: Path) -> None:
    doc = plan_json(tmp_path, vllm(1), extra=("--zones", "us-east-1c"))
    assert doc["nodeClaims"][0]["launch"]["zone"] == "us-east-1c"


@pytest.mark.parametrize(
    ("zones", "message"),
    [
        ("us-west-2a", "error: zone us-west-2a is not a zone of us-east-1 in the catalog"),
        ("", "error: no zones given for region us-east-1"),
        (" , ", "error: no zones given for region us-east-1"),
    ],
)
def test_zones_that_cannot_launch_anything_are_bad_input(zones: str, message: str) -> None:
    result = runner.invoke(app, ["plan", str(WORKSHOP), "--zones", zones])
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith(message)


def test_the_table_lists_nodes_pending_pods_and_a_summary(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(vllm(1), pod("busybox")))
    result = runner.invoke(app, ["plan", str(WORKSHOP), str(f)])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "NODECLAIM",
        "NODEPOOL",
        "PASS",
        "INSTANCE",
        "TYPE",
        "ZONE",
        "CAPACITY",
        "$/HOUR",
        "OPTIONS",
        "PODS",
    ]
    assert 'default/busybox: nodepool "gpu": did not tolerate taint' in result.stdout
    assert lines[-1].startswith("2 new node(s)") or lines[-1].startswith("1 new node(s)")


def test_explain_shows_each_filter_for_each_nodepool(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(pod("big", gpu=2, tolerations=[GPU_TOLERATION])))
    result = runner.invoke(app, ["plan", str(WORKSHOP), str(f), "--explain", "big"])
    assert result.exit_code == 0
    out = result.stdout.splitlines()
    assert out[0].startswith(
        'pod default/big: pending: nodepool "gpu": no instance type has enough resources'
    )
    assert out[1] == "  NodePool gpu (weight 0): no instance type left"
    counts = {
        line.split(" instance types ")[1]: int(line.split()[0])
        for line in out[2:]
        if " instance types " in line and line.split()[0].isdigit()
    }
    assert counts["meet the NodePool's requirements"] == 4
    assert counts["fit the pod plus DaemonSet overhead"] == 0
    assert out[-1] == (
        "    because nvidia.com/gpu: needs 2 with DaemonSet overhead; the largest allocatable "
        "among the 4 instance types left is 1"
    )


@pytest.mark.parametrize(
    ("selector", "because"),
    [
        (
            {"karpenter.k8s.aws/instance-gpu-name": "h100"},
            "karpenter.k8s.aws/instance-gpu-name In [h100]: the 4 instance types left have "
            "a10g, l4",
        ),
        (
            {
                "karpenter.k8s.aws/instance-gpu-name": "l4",
                "node.kubernetes.io/instance-type": "g5.xlarge",
            },
            "each pod requirement is met by some instance type, but no single type meets all "
            "of them together",
        ),
    ],
)
def test_explain_names_the_pod_requirement_that_rules_out_every_type(
    tmp_path: Path, selector: dict[str, str], because: str
) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(pod("picky", gpu=1, tolerations=[GPU_TOLERATION], nodeSelector=selector)))
    result = runner.invoke(app, ["plan", str(WORKSHOP), str(f), "--explain", "picky"])
    assert result.exit_code == 0
    out = result.stdout.splitlines()
    step = next(line for line in out if "instance types meet the pod's requirements" in line)
    assert int(step.split()[0]) == 0
    assert out[-1] == f"    because {because}"


def test_explain_names_the_limit_below_the_smallest_type(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(pod("one", gpu=1, tolerations=[GPU_TOLERATION])))
    nodepool = (
        (WORKSHOP / "nodepool.yaml")
        .read_text()
        .replace('nvidia.com/gpu: "6"', 'nvidia.com/gpu: "0"')
    )
    np_file = tmp_path / "nodepool.yaml"
    np_file.write_text(nodepool)
    files = [str(np_file), str(WORKSHOP / "ec2nodeclass.yaml"), str(f)]
    result = runner.invoke(app, ["plan", *files, "--explain", "one"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == (
        "    because limit nvidia.com/gpu=0: the smallest among the 4 instance types left has 1"
    )


def test_the_pending_list_points_to_explain_for_its_first_pod(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(pod("big", gpu=2, tolerations=[GPU_TOLERATION]), pod("busybox")))
    lines = runner.invoke(app, ["plan", str(WORKSHOP), str(f)]).stdout.splitlines()
    start = lines.index("Pending (Karpenter would not launch for these):")
    assert lines[start + 1].startswith("  default/big: ")
    assert lines[start + 2].startswith("  default/busybox: ")
    assert lines[start + 3] == (
        "  (`gpucap plan FILES --explain default/big` shows what ruled each NodePool out)"
    )


def test_explain_reads_the_plans_first_pass_and_builds_no_second_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpucap.operator.plan as operator_plan  # noqa: PLC0415 - the module patched

    built: list[object] = []
    real = operator_plan.plan_stack

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(operator_plan, "plan_stack", counted)
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(pod("big", gpu=2, tolerations=[GPU_TOLERATION])))
    result = runner.invoke(app, ["plan", str(WORKSHOP), str(f), "--explain", "big"])
    assert result.exit_code == 0, result.stderr
    assert len(built) == 1


def test_explain_from_the_plan_equals_explain_from_the_manifests_and_after_a_solve(
    tmp_path: Path,
) -> None:
    from gpucap.cli.loading import load_paths  # noqa: PLC0415
    from gpucap.controllers.provisioning.provisioner import new_scheduler  # noqa: PLC0415
    from gpucap.operator.plan import explain, explain_pod, plan  # noqa: PLC0415

    f = tmp_path / "w.yaml"
    picky = {"karpenter.k8s.aws/instance-gpu-name": "h100"}
    f.write_text(
        to_yaml(
            pod("big", gpu=2, tolerations=[GPU_TOLERATION]),
            pod("picky", gpu=1, tolerations=[GPU_TOLERATION], nodeSelector=picky),
            pod("busybox"),
        )
    )
    objects = load_paths([str(WORKSHOP), str(f)]).objects
    catalog = load_catalog("us-east-1")
    made = plan(objects, catalog)
    first = made.first_pass
    assert first is not None
    # The reference: the first pass solved, then asked (what `explain` did before it
    # stopped solving; the explanation reads only what the scheduler is built with).
    scheduler = new_scheduler(
        first.pools,
        state_nodes=first.state_nodes,
        daemonsets=first.daemonsets,
        pending=first.pending,
        options=first.options,
    )
    solved = scheduler.solve(list(first.pending)).pods
    assert len(made.pods) > 3
    assert made.pod_errors
    for key in made.pods:
        explained = explain(made, key)
        assert explained == explain_pod(objects, catalog, key)
        assert explained == scheduler.explain(solved[key], first.pools)
    assert explain(made, "default/nope") is None


def test_explain_of_an_unknown_pod_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(WORKSHOP), "--explain", "nope"])
    assert result.exit_code == 2
    assert "--explain nope: no such pod in the input" in result.stderr


def test_a_nodepool_without_its_nodeclass_is_planned_with_defaults_and_a_note(
    tmp_path: Path,
) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(to_yaml(vllm(1)))
    result = runner.invoke(app, ["plan", "-o", "json", str(WORKSHOP / "nodepool.yaml"), str(f)])
    doc = json.loads(result.stdout)
    assert doc["summary"]["nodeClaims"] == 1
    assert doc["notes"][0] == (
        "NodePool gpu: EC2NodeClass gpu is not in the input; planned with a default one "
        "(AL2023, 20Gi root volume)"
    )
    assert [n for n in doc["notes"][1:] if not n.startswith("spot g6.xlarge costs the same")] == []


def test_a_bad_catalog_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "catalog.json"
    bad.write_text(json.dumps([{"name": "x9.large"}]))
    result = runner.invoke(app, ["plan", str(WORKSHOP), "--catalog", str(bad)])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"error: {bad}: entry 0 (x9.large)")


def test_existing_nodes_take_pods_before_new_nodes(tmp_path: Path) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "ip-10-0-1-1",
            "labels": {
                "karpenter.sh/nodepool": "gpu",
                "karpenter.sh/initialized": "true",
                "kubernetes.io/hostname": "ip-10-0-1-1",
                "kubernetes.io/arch": "amd64",
            },
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58", "nvidia.com/gpu": "4"},
            "allocatable": {"cpu": "3920m", "memory": "14Gi", "pods": "58", "nvidia.com/gpu": "4"},
        },
    }
    small = deployment(
        "small", replicas=5, gpu=1, cpu="500m", memory="1Gi", tolerations=[GPU_TOLERATION]
    )
    doc = plan_json(tmp_path, node, small)
    # The node is time-sliced 4 ways: 4 pods fit there, it uses 4 of the limit of 6.
    assert doc["existingNodes"] == [
        {"name": "ip-10-0-1-1", "pods": [f"default/small-{i}" for i in range(4)]}
    ]
    assert [c["pods"] for c in doc["nodeClaims"]] == [["default/small-4"]]


def time_slicing_overlay(name: str = "timeslice-4", gpus: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {
            "weight": 10,
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]}
            ],
            "capacity": {"nvidia.com/gpu": gpus},
        },
    }


def test_a_time_slicing_overlay_makes_the_gpu_limit_count_advertised_gpus(tmp_path: Path) -> None:
    without = plan_json(tmp_path, vllm(8))
    assert without["summary"]["gpus"] == {"nvidia.com/gpu": 6}  # the limit: 6 nodes of 1 GPU
    doc = plan_json(tmp_path, vllm(8), time_slicing_overlay())
    # Each node now advertises 4 GPUs: the first takes 4 of the limit of 6, a second would
    # need 4 more, so only one node launches, sized for as many pods as its CPUs hold.
    assert doc["summary"]["gpus"] == {"nvidia.com/gpu": 4}
    assert len(doc["nodeClaims"]) == 1
    scheduled = doc["nodeClaims"][0]["pods"]
    assert len(scheduled) + len(doc["unschedulable"]) == 8
    assert all("exceed limits for nodepool" in u["reason"] for u in doc["unschedulable"])
    assert any(
        n.startswith("NodePool gpu: NodeOverlays change") and "feature gate" in n
        for n in doc["notes"]
    )


def test_a_conflicting_overlay_is_reported_and_not_applied(tmp_path: Path) -> None:
    doc = plan_json(
        tmp_path,
        vllm(1),
        time_slicing_overlay("a-two", "2"),
        time_slicing_overlay("b-four", "4"),
    )
    assert any(
        n.startswith("NodeOverlay a-two conflicts with b-four (both weight 10)")
        for n in doc["notes"]
    )
    assert doc["summary"]["gpus"] == {"nvidia.com/gpu": 4}  # b-four's value


# ---- the provisioning loop (static NodePools, no NodePool, Windows: tests/realworld/test_plan.py) -
ONE_PER_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "llm"}},
            }
        ]
    }
}


def g6_pool_limited_to_8_gpus(tmp_path: Path) -> str:
    """A g6 pool (sizes up to g6.48xlarge, 8 GPUs) with an 8-GPU limit."""
    doc = nodepool("gpu")
    doc = edit(
        doc,
        "spec.template.spec.requirements[2]",
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]},
    )
    doc = edit(doc, "spec.limits", {"nvidia.com/gpu": "8"})
    f = tmp_path / "pool.yaml"
    f.write_text(to_yaml(doc, nodeclass("gpu")))
    return str(f)


def anti_affine_llm(replicas: int) -> dict[str, Any]:
    return deployment(
        "llm", replicas=replicas, gpu=1, tolerations=[GPU_TOLERATION], affinity=ONE_PER_NODE
    )


def test_pods_left_by_subtract_max_launch_in_the_next_pass(tmp_path: Path) -> None:
    # The issue's example: Karpenter reserves g6.48xlarge's 8 GPUs for llm-0's NodeClaim, so
    # its first pass leaves llm-1 and llm-2 pending; its next pass sees a 1-GPU node.
    result = run_plan(tmp_path, [g6_pool_limited_to_8_gpus(tmp_path)], anti_affine_llm(3))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(
        run_plan(
            tmp_path,
            [g6_pool_limited_to_8_gpus(tmp_path)],
            anti_affine_llm(3),
            extra=("-o", "json"),
        ).stdout
    )
    assert [(c["name"], c["pass"], c["pods"]) for c in doc["nodeClaims"]] == [
        ("gpu-1", 1, ["default/llm-0"]),
        ("gpu-2", 2, ["default/llm-1"]),
        ("gpu-3", 2, ["default/llm-2"]),
    ]
    assert doc["unschedulable"] == []
    assert doc["summary"]["passes"] == 2
    assert doc["summary"]["gpus"] == {"nvidia.com/gpu": 3}
    table = result.stdout.splitlines()
    assert table[0].split()[:3] == ["NODECLAIM", "NODEPOOL", "PASS"]
    assert [line.split()[2] for line in table[1:4]] == ["1", "2", "2"]
    assert table[-1].endswith("3 pod(s) scheduled, 0 pending (NodeClaims from 2 passes)")


def test_passes_1_keeps_the_single_pass(tmp_path: Path) -> None:
    pool = g6_pool_limited_to_8_gpus(tmp_path)
    result = run_plan(tmp_path, [pool], anti_affine_llm(3), extra=("--passes", "1", "-o", "json"))
    doc = json.loads(result.stdout)
    assert [(c["name"], c["pass"]) for c in doc["nodeClaims"]] == [("gpu-1", 1)]
    reason = 'nodepool "gpu": all available instance types exceed limits for nodepool'
    assert doc["unschedulable"] == [
        {"pod": "default/llm-1", "reason": reason},
        {"pod": "default/llm-2", "reason": reason},
    ]
    assert any(n.startswith("stopped after 1 pass") for n in doc["notes"])


def test_passes_below_1_are_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(WORKSHOP), "--passes", "0"])
    assert result.exit_code == 2


def test_when_the_launched_nodes_fill_the_limit_the_plan_is_the_single_pass(tmp_path: Path) -> None:
    # The workshop's limit of 6 GPUs is met by 1-GPU types only: nothing changes in pass 2.
    multi = plan_json(tmp_path, vllm(8), pod("busybox"))
    single = plan_json(tmp_path, vllm(8), pod("busybox"), extra=("--passes", "1"))
    assert multi["nodeClaims"] == single["nodeClaims"]
    assert multi["unschedulable"] == single["unschedulable"]
    assert multi["summary"]["passes"] == 2


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_the_streamed_plan_is_the_text_format_plan_makes(output: str) -> None:
    import io  # noqa: PLC0415

    from gpucap.apis.serde import load_paths  # noqa: PLC0415
    from gpucap.cli.render import format_plan, write_plan  # noqa: PLC0415
    from gpucap.operator.plan import plan  # noqa: PLC0415

    loaded = load_paths([str(WORKSHOP)])
    made = plan(loaded.objects, load_catalog("us-east-1"))
    stream = io.StringIO()
    write_plan(made, output, stream)
    assert stream.getvalue() == format_plan(made, output)
    assert made.node_claims  # a plan with something in it
    if output == "json":
        # `format_plan` is what `json.dumps(..., indent=2)` wrote before streaming.
        assert stream.getvalue() == json.dumps(json.loads(stream.getvalue()), indent=2) + "\n"
