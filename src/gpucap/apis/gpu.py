"""GPU facts the lint rules, the capacity model and the simulator share.

The extended-resource names GPUs are advertised under, which NVIDIA GPUs support MIG (and how
many MIG devices one GPU gives at most), and how gpucap recognises a device-plugin DaemonSet and
a model-server image by name, and a GPU Feature Discovery container by its command. Plain
constants and predicates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucap.apis.core import Container

__all__ = [
    "AMD_GPU",
    "AWS_NEURON",
    "DEVICE_PLUGIN_IMAGE_MARKERS",
    "FEATURE_DISCOVERY",
    "GPU_RESOURCES",
    "HABANA_GAUDI",
    "MIG_GPUS",
    "MODEL_SERVER_MARKERS",
    "NVIDIA_GPU",
    "NVIDIA_GPU_SHARED",
    "is_device_plugin",
    "is_model_server",
    "runs_feature_discovery",
]

# The resource the NVIDIA device plugin advertises whole GPUs as (and its time-sliced rename
# under `renameByDefault: true`, NVIDIA/k8s-device-plugin api/config/v1).
NVIDIA_GPU = "nvidia.com/gpu"
NVIDIA_GPU_SHARED = f"{NVIDIA_GPU}.shared"
# Other accelerators' resources (aws/karpenter-provider-aws pkg/apis/v1/labels.go).
AMD_GPU = "amd.com/gpu"
HABANA_GAUDI = "habana.ai/gaudi"
AWS_NEURON = "aws.amazon.com/neuron"
# The accelerator resources `plan` shows per node, in display order.
GPU_RESOURCES = (NVIDIA_GPU, AMD_GPU, HABANA_GAUDI, AWS_NEURON)

# GPUs (karpenter.k8s.aws/instance-gpu-name) that support MIG, and their most MIG devices.
MIG_GPUS: dict[str, int] = {
    "a100": 7,
    "a30": 4,
    "h100": 7,
    "h200": 7,
    "gh200": 7,
    "b200": 7,
    "b300": 7,
    "gb200": 7,
    "gb300": 7,
    "rtx-pro-server-6000": 4,
}

# A DaemonSet whose name or container images contain one of these runs the NVIDIA device plugin
# (the NVIDIA Helm chart, its static manifest, the GPU Operator's operands).
DEVICE_PLUGIN_IMAGE_MARKERS = ("k8s-device-plugin", "nvidia-device-plugin", "gpu-operator")
# Images that are model servers (their model load counts in a cold start): names containing
# these markers.
MODEL_SERVER_MARKERS = ("vllm", "tritonserver", "text-generation-inference", "sglang")


def is_device_plugin(name: str, images: list[str]) -> bool:
    """A DaemonSet called `name` running `images` runs the NVIDIA device plugin."""
    text = " ".join([name, *images])
    return any(marker in text for marker in DEVICE_PLUGIN_IMAGE_MARKERS)


# GPU Feature Discovery's binary. NVIDIA ships it in the device plugin's image
# (nvcr.io/nvidia/k8s-device-plugin, its DaemonSet's command is /usr/bin/gpu-feature-discovery);
# older releases had an image of its own (nvcr.io/nvidia/gpu-feature-discovery).
FEATURE_DISCOVERY = "gpu-feature-discovery"


def runs_feature_discovery(container: Container) -> bool:
    """The container runs GPU Feature Discovery (it labels GPU nodes and advertises no GPU):
    its command, args or image name it. Read by lint and by the simulator's device-plugin
    lookup, so that GFD in the plugin's image is not taken for the plugin."""
    extra = container.model_extra or {}
    words = [container.image or ""]
    for key in ("command", "args"):
        value = extra.get(key)
        if isinstance(value, list):
            words += [w for w in value if isinstance(w, str)]
    return any(FEATURE_DISCOVERY in w for w in words)


def is_model_server(image: str) -> bool:
    """The image is a model server by name (MODEL_SERVER_MARKERS)."""
    return any(marker in image for marker in MODEL_SERVER_MARKERS)
