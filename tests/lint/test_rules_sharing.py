"""GPU sharing rules (TS001-TS005, MIG001-MIG002): time-slicing and MIG against Karpenter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpucap.apis.serde import load_paths
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run
from tests.builders import DELETE, GPU_TOLERATION, deployment, edit, nodeclass, nodepool
from tests.lint.builders import CATALOG, FILE, cluster_policy, line_of, lint, overlay

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"
ONE_GPU = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]}


def device_plugin_config(
    name: str = "time-slicing-config",
    key: str = "any",
    replicas: int = 4,
    flags: dict[str, Any] | None = None,
    **time_slicing: Any,
) -> dict[str, Any]:
    config: dict[str, Any] = {"version": "v1"}
    if flags is not None:
        config["flags"] = flags
    if replicas:
        config["sharing"] = {
            "timeSlicing": {
                **time_slicing,
                "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}],
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "gpu-operator"},
        "data": {key: yaml.safe_dump(config, sort_keys=False)},
    }


def operator(default: str | None = "any", name: str = "time-slicing-config") -> dict[str, Any]:
    config = {"name": name} if default is None else {"name": name, "default": default}
    return cluster_policy(
        driver={"enabled": False},
        toolkit={"enabled": False},
        devicePlugin={"enabled": True, "config": config},
    )


def one_gpu_pool(**kw: Any) -> dict[str, Any]:
    return edit(nodepool(**kw), "spec.template.spec.requirements[3]", ONE_GPU)


def gpu_workload(name: str = "vllm", gpu: int = 1, **kw: Any) -> dict[str, Any]:
    return deployment(name, gpu=gpu, tolerations=[GPU_TOLERATION], **kw)


def requesting(resource: str, amount: str = "1") -> dict[str, Any]:
    return edit(
        gpu_workload(), "spec.template.spec.containers[0].resources.limits", {resource: amount}
    )


def p5_pool(**labels: str) -> dict[str, Any]:
    pool = edit(nodepool(), "spec.template.spec.requirements[2].values", ["p5"])
    return edit(pool, "spec.template.metadata.labels", {"team": "ml", **labels})


# ---- TS001 time-slicing-without-karpenter-overlay -------------------------------------------------
def test_time_slicing_without_a_node_overlay_is_flagged() -> None:
    out = lint("TS001", nodepool(), nodeclass(), device_plugin_config(), operator())
    f = out.only
    assert (f.rule, f.severity) == ("TS001", "warning")
    assert (f.file, f.line) == (FILE, out.line("kind: ConfigMap", "any:"))
    assert f.object_ref == "ConfigMap/gpu-operator/time-slicing-config"
    assert "makes every GPU of NodePool gpu advertise 4 nvidia.com/gpu" in f.message
    assert "no NodeOverlay sets nvidia.com/gpu capacity" in f.message


def test_time_slicing_with_a_matching_node_overlay_passes() -> None:
    ov = overlay("time-sliced", ONE_GPU, {"nvidia.com/gpu": "4"})
    out = lint("TS001", one_gpu_pool(), nodeclass(), device_plugin_config(), operator(), ov)
    assert out.findings == []


def test_a_node_overlay_that_disagrees_with_the_replicas_is_flagged() -> None:
    ov = overlay("time-sliced", ONE_GPU, {"nvidia.com/gpu": "2"})
    out = lint("TS001", one_gpu_pool(), nodeclass(), device_plugin_config(), operator(), ov)
    assert "advertise 4 nvidia.com/gpu, but NodeOverlay time-sliced sets 2" in out.only.message


def test_an_unshared_device_plugin_config_passes() -> None:
    out = lint("TS001", nodepool(), nodeclass(), device_plugin_config(replicas=1), operator())
    assert out.findings == []


# ---- TS002 limits-vs-advertised-gpus -------------------------------------------------------------
def test_the_workshop_gpu_limit_binds_at_a_quarter_of_its_value() -> None:
    result = load_paths([str(WORKSHOP)])
    assert result.ok
    findings = run(LintContext(result.manifests, CATALOG), LintConfig(select=("TS002",))).findings
    assert len(findings) == 1
    f = findings[0]
    nodepool_file = WORKSHOP / "nodepool.yaml"
    assert (f.rule, f.severity) == ("TS002", "warning")
    assert f.file == str(nodepool_file)
    assert f.line == line_of(nodepool_file.read_text(), "limits:", "nvidia.com/gpu")
    assert "the limit nvidia.com/gpu=6 counts advertised GPUs" in f.message
    assert "replicas 4" in f.message
    assert "about 6/4 = 1.5 physical GPUs, not 6" in f.message


def test_a_gpu_limit_with_time_slicing_is_flagged() -> None:
    out = lint("TS002", nodepool(), nodeclass(), device_plugin_config(), operator())
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("TS002", "warning", "NodePool/gpu")
    assert (f.file, f.line) == (FILE, out.line("limits:", "nvidia.com/gpu"))
    assert "ConfigMap time-slicing-config key 'any'" in f.message


def test_a_gpu_limit_below_the_replicas_with_an_overlay_admits_no_node() -> None:
    pool = edit(one_gpu_pool(), 'spec.limits["nvidia.com/gpu"]', "2")
    ov = overlay("time-sliced", ONE_GPU, {"nvidia.com/gpu": "4"})
    out = lint("TS002", pool, nodeclass(), device_plugin_config(), operator(), ov)
    assert "no 1-GPU node can launch at all" in out.only.message


def test_a_plain_device_plugin_config_applies_without_a_cluster_policy() -> None:
    out = lint("TS002", nodepool(), nodeclass(), device_plugin_config())
    assert "the effective cap is about 6/4 = 1.5 physical GPUs" in out.only.message


def test_a_gpu_limit_without_time_slicing_passes() -> None:
    assert lint("TS002", nodepool(), nodeclass(), device_plugin_config(replicas=1)).findings == []


def test_time_slicing_without_a_gpu_limit_passes() -> None:
    pool = edit(nodepool(), "spec.limits", DELETE)
    assert lint("TS002", pool, nodeclass(), device_plugin_config(), operator()).findings == []


def test_several_configs_and_no_label_select_none_without_a_cluster_policy() -> None:
    docs = (device_plugin_config(key="a"), device_plugin_config(name="other", key="b"))
    assert lint("TS002", nodepool(), nodeclass(), *docs).findings == []


# ---- TS003 rename-by-default-resource-mismatch ----------------------------------------------------
def test_a_pod_requesting_gpus_where_the_plugin_renames_them_is_flagged() -> None:
    config = device_plugin_config(renameByDefault=True)
    out = lint("TS003", nodepool(), nodeclass(), config, operator(), gpu_workload())
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("TS003", "error", "Deployment/default/vllm")
    assert (f.file, f.line) == (FILE, out.line("kind: Deployment", "limits:", "nvidia.com/gpu"))
    assert "the device plugin renames it" in f.message
    assert "NodePool gpu gets nvidia.com/gpu.shared from ConfigMap time-slicing-config" in f.message


def test_a_pod_requesting_the_shared_resource_without_an_overlay_is_flagged() -> None:
    config = device_plugin_config(renameByDefault=True)
    workload = requesting("nvidia.com/gpu.shared")
    out = lint("TS003", nodepool(), nodeclass(), config, operator(), workload)
    f = out.only
    assert f.severity == "error"
    assert f.line == out.line("kind: Deployment", "nvidia.com/gpu.shared")
    assert "requests nvidia.com/gpu.shared, which no EC2 instance type has" in f.message


def test_a_pod_requesting_the_shared_resource_with_an_overlay_passes() -> None:
    config = device_plugin_config(renameByDefault=True)
    ov = overlay("shared", ONE_GPU, {"nvidia.com/gpu.shared": "4"})
    workload = requesting("nvidia.com/gpu.shared")
    assert (
        lint("TS003", one_gpu_pool(), nodeclass(), config, operator(), ov, workload).findings == []
    )


def test_a_pod_requesting_gpus_without_renaming_passes() -> None:
    out = lint("TS003", nodepool(), nodeclass(), device_plugin_config(), operator(), gpu_workload())
    assert out.findings == []


# ---- TS004 fail-requests-greater-than-one-off -----------------------------------------------------
def test_time_slicing_without_fail_requests_greater_than_one_is_advice() -> None:
    out = lint("TS004", nodepool(), nodeclass(), device_plugin_config(), operator())
    f = out.only
    assert (f.rule, f.severity) == ("TS004", "info")
    assert (f.file, f.line) == (FILE, out.line("kind: ConfigMap", "any:"))
    assert "failRequestsGreaterThanOne is not set (false)" in f.message


def test_a_pod_requesting_two_shared_gpus_makes_it_a_warning() -> None:
    docs = (nodepool(), nodeclass(), device_plugin_config(), operator(), gpu_workload(gpu=2))
    f = lint("TS004", *docs).only
    assert f.severity == "warning"
    assert "Deployment/default/vllm (nvidia.com/gpu: 2)" in f.message


def test_fail_requests_greater_than_one_set_passes() -> None:
    config = device_plugin_config(failRequestsGreaterThanOne=True)
    assert (
        lint("TS004", nodepool(), nodeclass(), config, operator(), gpu_workload(gpu=2)).findings
        == []
    )


# ---- TS005 time-slicing-config-not-applied ---------------------------------------------------------
def test_a_config_without_default_or_node_label_is_flagged() -> None:
    out = lint("TS005", nodepool(), nodeclass(), device_plugin_config(), operator(default=None))
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == (
        "TS005",
        "warning",
        "ClusterPolicy/cluster-policy",
    )
    assert (f.file, f.line) == (FILE, out.line("kind: ClusterPolicy", "config:"))
    assert "has no default and GPU NodePool gpu does not label its nodes" in f.message


def test_a_default_key_missing_from_the_configmap_is_flagged() -> None:
    out = lint("TS005", nodepool(), nodeclass(), device_plugin_config(), operator(default="nope"))
    f = out.only
    assert f.severity == "warning"
    assert f.line == out.line("kind: ClusterPolicy", "default: nope")
    assert "'nope' is not a key of ConfigMap time-slicing-config (keys: any)" in f.message


def test_a_node_label_naming_a_missing_key_is_flagged() -> None:
    pool = edit(
        nodepool(), 'spec.template.metadata.labels["nvidia.com/device-plugin.config"]', "nope"
    )
    out = lint("TS005", pool, nodeclass(), device_plugin_config(), operator(default=None))
    f = out.only
    assert f.object_ref == "NodePool/gpu"
    assert f.line == out.line("kind: NodePool", "nvidia.com/device-plugin.config: nope")


def test_a_configmap_missing_from_the_input_is_reported_as_info() -> None:
    f = lint("TS005", nodepool(), nodeclass(), operator()).only
    assert f.severity == "info"
    assert "that ConfigMap is not in the input" in f.message


def test_a_default_that_names_a_key_of_the_configmap_passes() -> None:
    assert lint("TS005", nodepool(), nodeclass(), device_plugin_config(), operator()).findings == []


def test_a_node_label_selecting_a_config_passes_without_default() -> None:
    pool = edit(
        nodepool(), 'spec.template.metadata.labels["nvidia.com/device-plugin.config"]', "any"
    )
    out = lint("TS005", pool, nodeclass(), device_plugin_config(), operator(default=None))
    assert out.findings == []


# ---- MIG001 mig-mixed-resource-without-overlay ----------------------------------------------------
def test_a_pod_requesting_a_mig_device_without_an_overlay_is_flagged() -> None:
    out = lint("MIG001", p5_pool(), nodeclass(), requesting("nvidia.com/mig-1g.10gb"))
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("MIG001", "error", "Deployment/default/vllm")
    assert (f.file, f.line) == (FILE, out.line("kind: Deployment", "nvidia.com/mig-1g.10gb"))
    assert "no NodeOverlay adds it to the GPU instance types of NodePool gpu" in f.message


def test_a_pod_requesting_a_mig_device_with_an_overlay_passes() -> None:
    p5 = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}
    ov = overlay("mig", p5, {"nvidia.com/mig-1g.10gb": "56"})
    out = lint("MIG001", p5_pool(), nodeclass(), ov, requesting("nvidia.com/mig-1g.10gb"))
    assert out.findings == []


# ---- MIG002 mig-single-overloads-gpu-count ---------------------------------------------------------
def test_a_gpu_limit_on_a_mig_single_pool_is_flagged() -> None:
    pool = edit(
        p5_pool(**{"nvidia.com/mig.config": "all-1g.10gb"}), 'spec.limits["nvidia.com/gpu"]', "16"
    )
    out = lint("MIG002", pool, nodeclass(), cluster_policy())
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("MIG002", "warning", "NodePool/gpu")
    assert (f.file, f.line) == (FILE, out.line("limits:", "nvidia.com/gpu"))
    assert "a p5.48xlarge (8 h100) advertises 56 nvidia.com/gpu (7 per GPU)" in f.message
    assert "caps the pool at about 16/7 = 2.3 physical GPUs, not 16" in f.message


def test_gpu_pods_on_a_plain_plugin_with_mig_single_are_flagged() -> None:
    pool = edit(p5_pool(), "spec.limits", DELETE)
    config = device_plugin_config(key="mig", replicas=0, flags={"migStrategy": "single"})
    out = lint("MIG002", pool, nodeclass(), config, gpu_workload())
    f = out.only
    assert f.line == out.line("kind: NodePool", "requirements:")
    assert "Deployment/default/vllm" in f.message
    assert "flags.migStrategy" in f.message


def test_mig_single_with_mig_disabled_passes() -> None:
    # The operator's default strategy is single, but the MIG manager leaves MIG off by default.
    assert lint("MIG002", p5_pool(), nodeclass(), cluster_policy()).findings == []


def test_mig_single_on_gpus_without_mig_passes() -> None:
    pool = edit(nodepool(), 'spec.template.metadata.labels["nvidia.com/mig.config"]', "all-1g.10gb")
    assert lint("MIG002", pool, nodeclass(), cluster_policy()).findings == []
