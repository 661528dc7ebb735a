"""Pod-spec rules (POD001-POD005): where GPUs are requested, tolerations, requests vs limits, GPU
model selectors."""

from __future__ import annotations

from typing import Any

from tests.builders import GPU_TOLERATION, deployment, edit, nodeclass, nodepool, pod
from tests.lint.builders import FILE, lint

NO_TAINTS: list[Any] = []


def gpu_deployment(**kw: Any) -> dict[str, Any]:
    return deployment("vllm", gpu=1, tolerations=[GPU_TOLERATION], **kw)


# ---- POD001 gpu-request-without-limit ------------------------------------------------------------
def test_a_gpu_in_pod_level_resources_is_flagged() -> None:
    spec = edit(
        gpu_deployment(), "spec.template.spec.resources", {"limits": {"nvidia.com/gpu": "1"}}
    )
    out = lint("POD001", nodepool(), nodeclass(), spec)
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("POD001", "error", "Deployment/default/vllm")
    assert (f.file, f.line) == (
        FILE,
        out.line("kind: Deployment", "tolerations:", "resources:", "nvidia.com/gpu"),
    )
    assert f.path == "spec.template.spec.resources.limits[nvidia.com/gpu]"
    assert "set in pod-level resources.limits" in f.message


def test_a_gpu_in_container_limits_passes() -> None:
    spec = edit(gpu_deployment(), "spec.template.spec.resources", {"limits": {"memory": "2Gi"}})
    assert lint("POD001", nodepool(), nodeclass(), spec).findings == []


# ---- POD002 gpu-pod-missing-toleration ------------------------------------------------------------
# EKS's admission tolerates nvidia.com/gpu:NoSchedule for a GPU pod; other taints stay.
DEDICATED = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def dedicated_pool(name: str = "gpu") -> dict[str, Any]:
    return edit(nodepool(name), "spec.template.spec.taints", [GPU_TAINT, DEDICATED])


def test_a_gpu_pod_that_tolerates_no_gpu_pool_is_flagged() -> None:
    out = lint("POD002", dedicated_pool(), nodeclass(), deployment("vllm", gpu=1))
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("POD002", "error", "Deployment/default/vllm")
    assert (f.file, f.line) == (FILE, out.line("kind: Deployment", "nvidia.com/gpu"))
    # The pod has no tolerations in the file: the finding is on its GPU limit, not on the
    # toleration the admission adds.
    assert f.path == "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
    assert "NodePool gpu has dedicated=ml:NoSchedule" in f.message
    assert "stays Pending" in f.message


def test_a_gpu_pod_without_tolerations_tolerates_the_gpu_taint_by_admission() -> None:
    # nodepool() is tainted nvidia.com/gpu=present:NoSchedule only.
    assert lint("POD002", nodepool(), nodeclass(), deployment("vllm", gpu=1)).findings == []
    assert lint("POD002", nodepool(), nodeclass(), pod("trainer", gpu=1)).findings == []


def test_a_no_execute_gpu_taint_is_not_tolerated_by_admission() -> None:
    no_execute = {**GPU_TAINT, "effect": "NoExecute"}
    pool = edit(nodepool(), "spec.template.spec.taints", [no_execute])
    out = lint("POD002", pool, nodeclass(), deployment("vllm", gpu=1))
    assert "NodePool gpu has nvidia.com/gpu=present:NoExecute" in out.only.message


def test_a_toleration_for_another_taint_is_flagged_at_the_tolerations() -> None:
    wrong = {"key": "other", "operator": "Exists", "effect": "NoSchedule"}
    out = lint("POD002", dedicated_pool(), nodeclass(), pod("trainer", gpu=1, tolerations=[wrong]))
    assert out.only.line == out.line("kind: Pod", "tolerations:")


def test_a_gpu_pod_tolerating_the_pools_taints_passes() -> None:
    tolerant = pod("trainer", gpu=1, tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert lint("POD002", dedicated_pool(), nodeclass(), tolerant).findings == []


def test_a_gpu_pod_with_one_untainted_gpu_pool_passes() -> None:
    untainted = edit(nodepool("open"), "spec.template.spec.taints", NO_TAINTS)
    out = lint("POD002", dedicated_pool(), untainted, nodeclass(), deployment("vllm", gpu=1))
    assert out.findings == []


# ---- POD003 non-cpu-requests-not-equal-limits -----------------------------------------------------
def with_memory_limit(doc: dict[str, Any], limit: str) -> dict[str, Any]:
    return edit(doc, 'spec.template.spec.containers[0].resources.limits["memory"]', limit)


def test_a_memory_limit_above_request_on_a_consolidating_pool_is_flagged() -> None:
    out = lint("POD003", nodepool(), nodeclass(), with_memory_limit(gpu_deployment(), "2Gi"))
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("POD003", "warning", "Deployment/default/vllm")
    assert (f.file, f.line) == (FILE, out.line("kind: Deployment", "limits:", "memory: 2Gi"))
    assert "memory limit 2Gi is above its request 1Gi" in f.message
    assert "consolidationPolicy WhenEmptyOrUnderutilized" in f.message


def test_a_memory_limit_above_request_on_a_when_empty_pool_passes() -> None:
    pool = edit(nodepool(), "spec.disruption", {"consolidationPolicy": "WhenEmpty"})
    assert (
        lint("POD003", pool, nodeclass(), with_memory_limit(gpu_deployment(), "2Gi")).findings == []
    )


def test_memory_requests_equal_to_limits_pass() -> None:
    assert (
        lint("POD003", nodepool(), nodeclass(), with_memory_limit(gpu_deployment(), "1Gi")).findings
        == []
    )


# ---- POD004 gpu-pod-no-gpu-type-selector ----------------------------------------------------------
def test_a_gpu_pod_without_a_gpu_selector_on_a_mixed_gpu_pool_is_advised() -> None:
    pool = edit(nodepool(), "spec.template.spec.requirements[2].values", ["g4dn", "g6e"])
    out = lint("POD004", pool, nodeclass(), gpu_deployment())
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("POD004", "info", "Deployment/default/vllm")
    assert (f.file, f.line) == (FILE, out.line("kind: Deployment", "nvidia.com/gpu"))
    assert "l40s (44 GiB), t4 (16 GiB)" in f.message
    assert "as little as 16 GiB of GPU memory" in f.message


def test_a_gpu_pod_selecting_a_gpu_name_passes() -> None:
    selected = gpu_deployment(nodeSelector={"karpenter.k8s.aws/instance-gpu-name": "a10g"})
    assert lint("POD004", nodepool(), nodeclass(), selected).findings == []


def test_a_gpu_pod_on_a_single_gpu_model_pool_passes() -> None:
    pool = edit(nodepool(), "spec.template.spec.requirements[2].values", ["g5"])
    assert lint("POD004", pool, nodeclass(), gpu_deployment()).findings == []


# ---- POD005 pod-requires-discovered-label ---------------------------------------------------------
PRESENT = {"nvidia.com/gpu.present": "true"}


def test_a_gpu_feature_discovery_label_no_pool_declares_is_flagged() -> None:
    out = lint("POD005", nodepool(), nodeclass(), gpu_deployment(nodeSelector=PRESENT))
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("POD005", "error", "Deployment/default/vllm")
    assert f.path == "spec.template.spec.nodeSelector[nvidia.com/gpu.present]"
    assert f.line == out.line("kind: Deployment", "nodeSelector:", "nvidia.com/gpu.present")
    assert "requires node label nvidia.com/gpu.present" in f.message
    assert "add nvidia.com/gpu.present to the NodePool's template labels" in f.message


def test_a_discovered_label_a_pool_declares_in_its_template_labels_passes() -> None:
    pool = edit(nodepool(), "spec.template.metadata.labels", {"nvidia.com/gpu.present": "true"})
    assert lint("POD005", pool, nodeclass(), gpu_deployment(nodeSelector=PRESENT)).findings == []


def test_a_discovered_label_a_pool_declares_in_its_requirements_passes() -> None:
    product = {"key": "nvidia.com/gpu.product", "operator": "Exists"}
    pool = edit(nodepool(), "spec.template.spec.requirements[3]", product)
    selector = {"nvidia.com/gpu.product": "NVIDIA-A10G"}
    assert lint("POD005", pool, nodeclass(), gpu_deployment(nodeSelector=selector)).findings == []


def test_a_node_feature_discovery_label_in_required_affinity_is_flagged() -> None:
    nfd = "feature.node.kubernetes.io/pci-10de.present"
    term = {"key": nfd, "operator": "In", "values": ["true"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }
    out = lint("POD005", nodepool(), nodeclass(), gpu_deployment(affinity=affinity))
    assert out.only.path == (
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].key"
    )
    assert "feature.node.kubernetes.io/pci-10de.present" in out.only.message


def test_a_required_term_karpenter_can_drop_for_another_passes() -> None:
    gfd = {"key": "nvidia.com/gpu.product", "operator": "Exists"}
    family = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [gfd]}, {"matchExpressions": [family]}]
            }
        }
    }
    assert lint("POD005", nodepool(), nodeclass(), gpu_deployment(affinity=affinity)).findings == []


def test_excluding_a_discovered_label_passes() -> None:
    absent = {"key": "nvidia.com/mig.capable", "operator": "DoesNotExist"}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [absent]}]
            }
        }
    }
    assert lint("POD005", nodepool(), nodeclass(), gpu_deployment(affinity=affinity)).findings == []


def test_a_discovered_label_is_not_judged_without_any_nodepool() -> None:
    assert lint("POD005", nodeclass(), gpu_deployment(nodeSelector=PRESENT)).findings == []
