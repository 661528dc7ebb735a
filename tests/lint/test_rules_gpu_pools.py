"""Which pools the GPU rules check, and GPU001/GPU002 on what the input proves.

A GPU pool can launch NVIDIA GPU types and either launches nothing else, asks for GPUs
explicitly (requirement, taint, label, limit), or gets a GPU pod from the input. GPU001 is an
error only where the input's device plugin cannot reach the pool, info where the input holds
none (the cluster may have one), silent where `cluster` declares one or the AMI ships it.
Static pools get no consolidation warnings and no request for an nvidia.com/gpu limit; GPUs a
NodeOverlay adds count as GPUs; Bottlerocket userData time-slicing counts like the ConfigMap.
"""

from __future__ import annotations

from typing import Any

from gpucap.apis.serde import load_text
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from gpucap.lint.runner import run
from tests.builders import (
    DELETE,
    GPU_TOLERATION,
    daemonset,
    deployment,
    edit,
    nodeclass,
    nodepool,
    to_yaml,
)
from tests.lint.builders import CATALOG, FILE, TIME_SLICING, cluster_policy, lint, overlay

GPU_RULES = ("GPU001", "GPU002", "NP001", "NP003", "DIS001", "DIS002", "STG001", "GPU005")


def all_findings(*docs: dict[str, Any], cluster: frozenset[str] = frozenset()) -> list[Finding]:
    result = load_text(to_yaml(*docs), FILE)
    assert not result.errors, [str(e) for e in result.errors]
    ctx = LintContext(result.manifests, CATALOG, cluster=cluster)
    return run(ctx, LintConfig()).findings


def rules_of(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def cpu_pool(**spec: Any) -> dict[str, Any]:
    """A pool that only excludes burstable types: it can launch GPU types, is not a GPU pool."""
    doc = nodepool("general", **spec)
    doc = edit(
        doc,
        "spec.template.spec.requirements[2]",
        {"key": "karpenter.k8s.aws/instance-category", "operator": "NotIn", "values": ["t"]},
    )
    doc = edit(doc, "spec.template.spec.taints", DELETE)
    return edit(doc, "spec.limits", {"cpu": "1000"})


def mixed_gpu_pool() -> dict[str, Any]:
    """Families with and without GPUs, untainted, no GPU limit."""
    doc = edit(nodepool("mixed"), "spec.template.spec.requirements[2].values", ["g5", "m5"])
    doc = edit(doc, "spec.template.spec.taints", DELETE)
    return edit(doc, "spec.limits", {"cpu": "1000"})


def gpu_pod() -> dict[str, Any]:
    return deployment("trainer", replicas=1, gpu=1)


# ---- what a GPU pool is ---------------------------------------------------------------------
def test_a_pool_that_merely_does_not_exclude_gpu_families_gets_no_gpu_rule() -> None:
    findings = all_findings(cpu_pool(), nodeclass())
    assert not rules_of(findings) & set(GPU_RULES), [str(f) for f in findings]


def test_a_pool_that_merely_does_not_exclude_gpu_families_gets_one_info() -> None:
    findings = [f for f in all_findings(cpu_pool(), nodeclass()) if f.rule == "NP010"]
    assert len(findings) == 1
    assert findings[0].severity == "info"
    assert "not a GPU pool" in findings[0].message
    assert "instance-gpu-count DoesNotExist" in findings[0].message


def test_no_gpu_rule_speaks_of_a_gpu_nodepool_that_cannot_launch_a_gpu() -> None:
    doc = edit(nodepool("cpu"), "spec.template.spec.requirements[2].values", ["m5", "c5"])
    findings = all_findings(doc, nodeclass())
    assert not [f for f in findings if "GPU NodePool" in f.message]
    assert "NP010" not in rules_of(findings)


def test_a_pool_of_only_gpu_types_is_a_gpu_pool() -> None:
    doc = edit(nodepool(), "spec.template.spec.taints", DELETE)
    assert "NP001" in rules_of(all_findings(doc, nodeclass()))


def test_a_mixed_pool_that_a_gpu_pod_can_use_is_a_gpu_pool() -> None:
    assert "NP001" not in rules_of(all_findings(mixed_gpu_pool(), nodeclass()))
    findings = all_findings(mixed_gpu_pool(), nodeclass(), gpu_pod())
    np001 = [f for f in findings if f.rule == "NP001"]
    assert len(np001) == 1


def test_a_mixed_pool_with_a_gpu_requirement_is_a_gpu_pool() -> None:
    doc = edit(
        mixed_gpu_pool(),
        "spec.template.spec.requirements[3]",
        {
            "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
            "operator": "In",
            "values": ["nvidia"],
        },
    )
    # the requirement removes m5, so every launchable type now has a GPU: a GPU pool either way
    assert "NP001" in rules_of(all_findings(doc, nodeclass()))


def test_a_mixed_pool_with_a_gpu_limit_is_a_gpu_pool() -> None:
    doc = edit(mixed_gpu_pool(), "spec.limits", {"nvidia.com/gpu": "8"})
    assert "NP001" in rules_of(all_findings(doc, nodeclass()))


# ---- GPU001: absent from the input is not absent from the cluster -----------------------------
def test_no_device_plugin_in_the_input_is_info_with_the_install_command() -> None:
    f = lint("GPU001", nodepool(), nodeclass()).only
    assert f.severity == "info"
    assert "no NVIDIA device plugin or GPU Operator is in the input" in f.message
    assert "helm upgrade -i nvdp nvdp/nvidia-device-plugin" in f.message
    assert 'cluster = ["nvidia-device-plugin"]' in f.message


def test_declaring_the_cluster_device_plugin_turns_the_info_off() -> None:
    for component in ("nvidia-device-plugin", "gpu-operator"):
        findings = all_findings(nodepool(), nodeclass(), cluster=frozenset({component}))
        assert "GPU001" not in rules_of(findings)


def test_a_device_plugin_that_tolerates_the_pool_satisfies_gpu001() -> None:
    assert lint("GPU001", nodepool(), nodeclass(), daemonset()).findings == []


def test_a_disabled_operator_device_plugin_is_an_error() -> None:
    policy = cluster_policy(devicePlugin={"enabled": False})
    f = lint("GPU001", nodepool(), nodeclass(), policy).only
    assert f.severity == "error"
    assert "devicePlugin.enabled: false" in f.message


def test_a_device_plugin_selecting_other_nodes_is_an_error() -> None:
    ds = edit(daemonset(), "spec.template.spec.nodeSelector", {"team": "web"})
    f = lint("GPU001", nodepool(), nodeclass(), ds).only
    assert f.severity == "error"
    assert "node selector / required node affinity" in f.message


def test_a_device_plugin_affinity_on_runtime_nfd_labels_is_not_a_mismatch() -> None:
    # The NVIDIA Helm chart's default affinity: nodes labelled by NFD / GFD at run time.
    terms = [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        for key, value in (
            ("feature.node.kubernetes.io/pci-10de.present", "true"),
            ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
            ("nvidia.com/gpu.present", "true"),
        )
    ]
    ds = edit(
        daemonset(),
        "spec.template.spec.affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        },
    )
    assert lint("GPU001", nodepool(), nodeclass(), ds).findings == []
    assert lint("GPU002", nodepool(), nodeclass(), ds).findings == []


def test_an_untolerated_taint_is_gpu002_only_not_also_gpu001() -> None:
    ds = edit(daemonset(), "spec.template.spec.tolerations", [])
    findings = all_findings(nodepool(), nodeclass(), ds)
    assert [f.rule for f in findings if f.rule.startswith("GPU00") and f.rule < "GPU003"] == [
        "GPU002"
    ]


def test_an_operator_whose_tolerations_miss_the_pool_taint_is_an_error() -> None:
    taint = {"key": "example.com/gpu-team", "value": "a", "effect": "NoSchedule"}
    pool = edit(nodepool(), "spec.template.spec.taints", [taint])
    policy = cluster_policy(daemonsets={"tolerations": [GPU_TOLERATION]})
    f = lint("GPU001", pool, nodeclass(), policy).only
    assert f.severity == "error"
    assert "example.com/gpu-team" in f.message


def bottlerocket(user_data: str | None = None) -> dict[str, Any]:
    doc = edit(nodeclass(), "spec.amiSelectorTerms", [{"alias": "bottlerocket@latest"}])
    return edit(doc, "spec.userData", user_data) if user_data is not None else doc


def test_bottlerocket_gpu_nodes_bring_their_own_device_plugin() -> None:
    assert lint("GPU001", nodepool(), bottlerocket()).findings == []


def test_eks_auto_mode_nodes_bring_their_own_device_plugin() -> None:
    pool = edit(
        nodepool(),
        "spec.template.spec.nodeClassRef",
        {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "gpu"},
    )
    assert lint("GPU001", pool).findings == []


# ---- GPUs from a NodeOverlay ------------------------------------------------------------------
G6F = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6f"]}


def g6f_pool() -> dict[str, Any]:
    doc = edit(nodepool("fractional"), "spec.template.spec.requirements[2]", G6F)
    return edit(doc, "spec.template.spec.taints", DELETE)


def test_gpus_that_come_from_a_node_overlay_get_the_gpu_rules() -> None:
    assert "GPU001" not in rules_of(all_findings(g6f_pool(), nodeclass()))
    gpu_overlay = overlay("g6f-gpu", G6F, {"nvidia.com/gpu": "1"})
    findings = all_findings(g6f_pool(), nodeclass(), gpu_overlay)
    assert {"GPU001", "NP001"} <= rules_of(findings)


def test_overlay_gpus_on_bottlerocket_need_a_device_plugin() -> None:
    # Karpenter gives types without catalog GPUs the standard variant, without the plugin.
    gpu_overlay = overlay("g6f-gpu", G6F, {"nvidia.com/gpu": "1"})
    assert lint("GPU001", g6f_pool(), bottlerocket(), gpu_overlay).findings != []


# ---- static NodePools -------------------------------------------------------------------------
def static_pool() -> dict[str, Any]:
    doc = nodepool(replicas=2)
    return edit(doc, "spec.limits", {"nodes": "4"})


def test_a_static_pool_gets_no_consolidation_warning() -> None:
    findings = all_findings(static_pool(), nodeclass(), daemonset())
    assert "DIS001" not in rules_of(findings)
    assert "DIS001" in rules_of(all_findings(nodepool(), nodeclass(), daemonset()))


def test_a_static_pool_is_not_asked_for_a_gpu_limit() -> None:
    findings = all_findings(static_pool(), nodeclass(), daemonset())
    assert "NP003" not in rules_of(findings)


def test_a_static_pool_budget_warning_speaks_of_drift_only() -> None:
    dis002 = [f for f in all_findings(static_pool(), nodeclass()) if f.rule == "DIS002"]
    assert dis002
    assert "consolidation" not in dis002[0].message


# ---- Bottlerocket time-slicing in userData ----------------------------------------------------
def test_bottlerocket_time_slicing_counts_for_ts001_like_the_configmap() -> None:
    f = lint("TS001", nodepool(), bottlerocket(TIME_SLICING)).only
    assert f.path == "spec.userData"
    assert "replicas 4" in f.message


def test_bottlerocket_time_slicing_counts_for_ts002_like_the_configmap() -> None:
    f = lint("TS002", nodepool(), bottlerocket(TIME_SLICING)).only
    assert "EC2NodeClass gpu userData" in f.message
    assert "6/4" in f.message


def test_bottlerocket_without_sharing_is_not_time_sliced() -> None:
    assert lint("TS002", nodepool(), bottlerocket("[settings.kubernetes]\n")).findings == []


def test_bottlerocket_userdata_that_is_not_toml_is_a_warning() -> None:
    f = lint("AMI004", nodepool(), bottlerocket("#!/bin/bash\necho hi\n")).only
    assert f.severity == "warning"
    assert "not valid TOML" in f.message
    assert lint("TS002", nodepool(), bottlerocket("#!/bin/bash\n")).findings == []


def test_bottlerocket_rename_by_default_renames_the_gpu_for_ts003() -> None:
    renamed = TIME_SLICING.replace("rename-by-default = false", "rename-by-default = true")
    pod = deployment("vllm", replicas=1, gpu=1, tolerations=[GPU_TOLERATION])
    f = lint("TS003", nodepool(), bottlerocket(renamed), pod).only
    assert "nvidia.com/gpu.shared from EC2NodeClass gpu userData" in f.message
