"""GPU facts shared by lint, the capacity model and the simulator."""

from __future__ import annotations

from gpucap.apis.gpu import (
    MIG_GPUS,
    NVIDIA_GPU,
    NVIDIA_GPU_SHARED,
    is_device_plugin,
    is_model_server,
)
from gpucap.cloudprovider.aws.instancetype import capacity
from gpucap.lint.context import GPU_RESOURCE


def test_one_name_for_the_nvidia_gpu_resource_everywhere() -> None:
    assert NVIDIA_GPU == capacity.RESOURCE_NVIDIA_GPU == GPU_RESOURCE == "nvidia.com/gpu"
    assert NVIDIA_GPU_SHARED == "nvidia.com/gpu.shared"


def test_a_device_plugin_is_recognised_by_name_or_image() -> None:
    assert is_device_plugin("nvdp", ["nvcr.io/nvidia/k8s-device-plugin:v0.17.1"])
    assert is_device_plugin("nvidia-device-plugin-daemonset", [])
    assert not is_device_plugin("dcgm-exporter", ["nvcr.io/nvidia/k8s/dcgm-exporter:3"])


def test_model_servers_and_mig_gpus() -> None:
    assert is_model_server("lmsysorg/sglang:latest")
    assert not is_model_server("nginx:1.27")
    assert MIG_GPUS["a100"] == 7
    assert "a10g" not in MIG_GPUS
