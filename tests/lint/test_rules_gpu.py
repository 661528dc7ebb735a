"""GPU rules (GPU003-GPU005): startup taints, the GPU Operator on EKS AMIs, custom AMIs.

Each test builds manifests with `tests.builders`, loads them as one YAML file and runs one rule
through the lint runner (`lint()` and `line_of()` of `tests/lint/builders.py`).
"""

from __future__ import annotations

from typing import Any

from tests.builders import GPU_TOLERATION, daemonset, edit, nodeclass, nodepool
from tests.lint.builders import FILE, cluster_policy, lint


def toleration(key: str, effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": effect}


# ---- GPU003 startup-taint-without-remover -------------------------------------------------------
AGENT_TAINT = {"key": "example.com/agent-not-ready", "value": "true", "effect": "NoSchedule"}


def with_startup_taint(taint: dict[str, Any]) -> dict[str, Any]:
    return edit(nodepool(), "spec.template.spec.startupTaints", [taint])


def test_a_startup_taint_no_daemonset_tolerates_is_flagged() -> None:
    out = lint("GPU003", with_startup_taint(AGENT_TAINT), nodeclass(), daemonset())
    f = out.only
    assert (f.rule, f.severity) == ("GPU003", "warning")
    assert (f.file, f.line) == (FILE, out.line("startupTaints:", "example.com/agent-not-ready"))
    assert "example.com/agent-not-ready=true:NoSchedule has no remover" in f.message
    assert f.object_ref == "NodePool/gpu"


def test_a_startup_taint_whose_remover_cannot_land_on_the_pool_is_flagged() -> None:
    remover = edit(
        daemonset("agent"), "spec.template.spec.tolerations", [toleration(AGENT_TAINT["key"])]
    )
    out = lint("GPU003", with_startup_taint(AGENT_TAINT), nodeclass(), remover)
    f = out.only
    assert f.severity == "warning"
    assert (
        "DaemonSet/kube-system/agent does not tolerate nvidia.com/gpu=present:NoSchedule"
        in f.message
    )


def test_a_startup_taint_tolerated_by_key_by_a_daemonset_that_runs_there_passes() -> None:
    remover = edit(
        daemonset("agent"),
        "spec.template.spec.tolerations",
        [toleration(AGENT_TAINT["key"]), GPU_TOLERATION],
    )
    assert lint("GPU003", with_startup_taint(AGENT_TAINT), nodeclass(), remover).findings == []


def test_a_blanket_toleration_does_not_count_as_a_remover() -> None:
    kube_proxy = edit(
        daemonset("kube-proxy"), "spec.template.spec.tolerations", [{"operator": "Exists"}]
    )
    out = lint("GPU003", with_startup_taint(AGENT_TAINT), nodeclass(), kube_proxy)
    assert [f.rule for f in out.findings] == ["GPU003"]


def test_the_cilium_agent_is_a_known_remover_of_its_startup_taint() -> None:
    taint = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
    cilium = edit(daemonset("cilium"), "spec.template.spec.tolerations", [{"operator": "Exists"}])
    assert lint("GPU003", with_startup_taint(taint), nodeclass(), cilium).findings == []
    assert len(lint("GPU003", with_startup_taint(taint), nodeclass()).findings) == 1


# ---- GPU004 gpu-operator-manages-driver-on-eks-ami ------------------------------------------------
def test_a_gpu_operator_with_default_driver_and_toolkit_on_an_eks_ami_is_flagged() -> None:
    out = lint("GPU004", nodepool(), nodeclass(), cluster_policy(devicePlugin={"enabled": True}))
    assert [(f.rule, f.severity) for f in out.findings] == [("GPU004", "error")] * 2
    driver = next(f for f in out.findings if f.path == "spec.driver.enabled")
    assert (driver.file, driver.line) == (FILE, out.line("kind: ClusterPolicy", "spec:"))
    assert "driver.enabled is unset (defaults to true)" in driver.message
    assert "boots an EKS accelerated AMI" in driver.message
    assert "alias al2023@" in driver.message
    assert any("toolkit.enabled" in f.message for f in out.findings)


def test_an_explicitly_enabled_driver_is_flagged_at_its_line() -> None:
    policy = cluster_policy(driver={"enabled": True}, toolkit={"enabled": False})
    out = lint("GPU004", nodepool(), nodeclass(), policy)
    f = out.only
    assert f.line == out.line("kind: ClusterPolicy", "driver:", "enabled: true")
    assert "driver.enabled is true" in f.message


def test_a_gpu_operator_with_driver_and_toolkit_disabled_passes() -> None:
    policy = cluster_policy(driver={"enabled": False}, toolkit={"enabled": False})
    assert lint("GPU004", nodepool(), nodeclass(), policy).findings == []


def test_a_gpu_operator_driver_on_a_custom_ami_passes() -> None:
    custom = edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "ami-0123456789abcdef0"}])
    custom = edit(custom, "spec.amiFamily", "AL2023")
    assert lint("GPU004", nodepool(), custom, cluster_policy()).findings == []


# ---- GPU005 custom-ami-mixed-gpu-pool --------------------------------------------------------
def custom_ami_nodeclass() -> dict[str, Any]:
    custom = edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "ami-0123456789abcdef0"}])
    return edit(custom, "spec.amiFamily", "AL2023")


def test_a_gpu_pool_with_a_custom_ami_and_cpu_types_is_flagged() -> None:
    mixed = edit(nodepool(), "spec.template.spec.requirements[2].values", ["g5", "m5"])
    out = lint("GPU005", mixed, custom_ami_nodeclass())
    f = out.only
    assert (f.rule, f.severity, f.object_ref) == ("GPU005", "warning", "NodePool/gpu")
    assert (f.file, f.line) == (FILE, out.line("kind: NodePool", "requirements:"))
    assert "selects its AMI without an alias" in f.message
    assert "m5." in f.message
    assert "g5." in f.message


def test_a_gpu_only_pool_with_a_custom_ami_passes() -> None:
    assert lint("GPU005", nodepool(), custom_ami_nodeclass()).findings == []


def test_a_mixed_pool_with_an_alias_ami_passes() -> None:
    mixed = edit(nodepool(), "spec.template.spec.requirements[2].values", ["g5", "m5"])
    assert lint("GPU005", mixed, nodeclass()).findings == []
