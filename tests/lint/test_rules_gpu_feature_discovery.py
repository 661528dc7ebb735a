"""GPU Feature Discovery is not the device plugin (issue 21, class 6): NVIDIA ships it in the
device plugin's image, with the command `gpu-feature-discovery`. Alone it neither satisfies nor
breaks GPU001; GPU006 warns when it cannot label a tainted GPU pool's nodes."""

from __future__ import annotations

from typing import Any

from tests.builders import GPU_TOLERATION, daemonset, edit, nodeclass, nodepool
from tests.lint.builders import lint

IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def plugin_image_daemonset(
    name: str, *, command: list[str] | None = None, tolerations: list[Any] | None = None
) -> dict[str, Any]:
    """A DaemonSet of NVIDIA's k8s-device-plugin image, running `command` when given."""
    container: dict[str, Any] = {"name": name, "image": IMAGE}
    if command is not None:
        container["command"] = command
    ds = edit(daemonset(name), "spec.template.spec.containers", [container])
    return edit(ds, "spec.template.spec.tolerations", tolerations or [])


GFD = plugin_image_daemonset("gpu-feature-discovery", command=["/usr/bin/gpu-feature-discovery"])
GFD_TOLERATING = plugin_image_daemonset(
    "gpu-feature-discovery",
    command=["/usr/bin/gpu-feature-discovery"],
    tolerations=[GPU_TOLERATION],
)
PLUGIN = plugin_image_daemonset("nvidia-device-plugin-daemonset", tolerations=[GPU_TOLERATION])


def test_gpu_feature_discovery_alone_does_not_satisfy_gpu001() -> None:
    # As if no device plugin were in the input: the info that it may be installed outside it.
    (f,) = lint("GPU001", nodepool(), nodeclass(), GFD_TOLERATING).findings
    assert f.severity == "info"
    assert "no NVIDIA device plugin or GPU Operator is in the input" in f.message


def test_gpu_feature_discovery_that_cannot_run_on_the_pool_does_not_break_gpu001() -> None:
    # The same image as the plugin, untolerated taint: still no GPU001 or GPU002 error.
    assert [f.severity for f in lint("GPU001", nodepool(), nodeclass(), GFD).findings] == ["info"]
    assert lint("GPU002", nodepool(), nodeclass(), GFD).findings == []


def test_gpu_feature_discovery_beside_the_plugin_leaves_gpu001_to_the_plugin() -> None:
    assert lint("GPU001", nodepool(), nodeclass(), PLUGIN, GFD).findings == []


def test_the_plugin_image_without_the_feature_discovery_command_is_the_device_plugin() -> None:
    assert lint("GPU001", nodepool(), nodeclass(), PLUGIN).findings == []


def test_gpu006_gpu_feature_discovery_not_tolerating_the_gpu_taint_is_a_warning() -> None:
    out = lint("GPU006", nodepool(), nodeclass(), GFD)
    f = out.only
    assert (f.severity, f.object_ref) == ("warning", "DaemonSet/kube-system/gpu-feature-discovery")
    assert "does not tolerate nvidia.com/gpu" in f.message
    assert "never labels those nodes" in f.message


def test_gpu006_quiet_when_gpu_feature_discovery_tolerates_the_taint_or_the_pool_has_none() -> None:
    assert lint("GPU006", nodepool(), nodeclass(), GFD_TOLERATING).findings == []
    untainted = edit(nodepool(), "spec.template.spec.taints", [])
    assert lint("GPU006", untainted, nodeclass(), GFD).findings == []
