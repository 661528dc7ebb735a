"""What a node does by itself once it is up: the kubelet model of `gpucap simulate`.

Pure functions the kubelet actor (`sim/nodes.py`) calls when a node registers and when a pod binds:
which NVIDIA device plugin lands on the node and how long it takes to advertise GPUs
(`device_plugin_for`), how many it advertises (`advertised_gpus`), which DaemonSets land on it
(`daemonsets_for`), how long an image pull takes (`pull_bounds`, `image_pull_seconds`) and how
long a container takes to start serving (`startup_seconds`). Stage times come from
`cloudprovider.aws.coldstart.Timings`; nothing here keeps state or reads a clock.

The cluster holds exactly what the scenario applies: no device plugin runs unless a DaemonSet or
a ClusterPolicy is applied, a scenario add-on (`spec.addons`) declares one installed outside the
manifests, or the AMI family ships one (Bottlerocket's NVIDIA variants).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis.core import (
    Affinity,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodSpec,
    Taint,
    Toleration,
)
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.gpu import NVIDIA_GPU, NVIDIA_GPU_SHARED, is_device_plugin, runs_feature_discovery
from gpucap.apis.gpuoperator import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    ClusterPolicy,
    DevicePluginConfig,
    choose_config,
    device_plugin_configs,
)
from gpucap.apis.meta import NamespacedObjectMeta
from gpucap.apis.serde import Manifests
from gpucap.apis.workloads import DaemonSet
from gpucap.cloudprovider.aws.coldstart import (
    DEFAULT_GP3_THROUGHPUT_MIB_S,
    KNOWN_IMAGE_SIZES,
    Timings,
    image_disk,
    lookup_image_size,
    mbits_to_mib_s,
    mbytes_to_mib_s,
    pull_seconds,
)
from gpucap.cloudprovider.aws.instancetype.capacity import DEFAULT_EBS_VOLUME_SIZE
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.runtime.memo import IdentityMemo, Memo, Memos
from gpucap.scheduling.daemonsets import (
    OPERATOR_DEFAULT_TOLERATIONS,
    RUNTIME_FREE,
    blocking_taint,
    lands_on,
    operator_tolerations,
    without_runtime_labels,
)
from gpucap.scheduling.nodeclaimtemplate import daemon_pod

__all__ = [
    "ADDON_NAMES",
    "STARTUP_SECONDS_ANNOTATION",
    "Addon",
    "DevicePlugin",
    "PullBounds",
    "advertised_gpus",
    "daemonsets_for",
    "device_plugin_for",
    "image_pull_seconds",
    "pull_bounds",
    "startup_seconds",
]

# A pod's own start-up time after its containers start (model download + load), in seconds.
STARTUP_SECONDS_ANNOTATION = "gpucap.dev/startup-seconds"
NVIDIA_DEVICE_PLUGIN = "nvidia-device-plugin"
GPU_OPERATOR = "gpu-operator"
ADDON_NAMES = (NVIDIA_DEVICE_PLUGIN, GPU_OPERATOR)


@dataclass(frozen=True, slots=True)
class DevicePlugin:
    """What advertises GPUs on a node, and when."""

    # "daemonset/<ns>/<name>" | "clusterpolicy/<name>" | "addon/<name>" | "ami/bottlerocket"
    source: str
    delay: float  # seconds from node Ready to the GPU resource advertised
    resource: str  # "nvidia.com/gpu", or "nvidia.com/gpu.shared" (renameByDefault)
    replicas: int  # time-slicing replicas (1 = none)


@dataclass(frozen=True, slots=True)
class Addon:
    """A scenario `spec.addons` entry: something installed outside the manifests (Helm)."""

    name: str  # "nvidia-device-plugin" | "gpu-operator"
    time_slicing_replicas: int = 1
    rename_by_default: bool = False


# The NVIDIA Helm chart's DaemonSet, as far as placement goes (NVIDIA/k8s-device-plugin
# deployments/helm/nvidia-device-plugin/values.yaml @ 00f2a02c68f1: `tolerations` and `affinity`).
# The affinity asks for labels NFD / GFD put on GPU nodes at run time, so it never keeps the
# plugin off a GPU node here (scheduling.daemonsets.RUNTIME_LABEL_PREFIXES).
def _helm_term(key: str, value: str) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=[NodeSelectorRequirement(key=key, operator="In", values=[value])]
    )


_HELM_PLUGIN_POD = Pod(
    metadata=NamespacedObjectMeta(name=NVIDIA_DEVICE_PLUGIN, namespace=NVIDIA_DEVICE_PLUGIN),
    spec=PodSpec(
        containers=[],
        tolerations=[
            Toleration(key="CriticalAddonsOnly", operator="Exists"),
            Toleration(key=NVIDIA_GPU, operator="Exists", effect="NoSchedule"),
        ],
        affinity=Affinity(
            node_affinity=NodeAffinity(
                required_during_scheduling_ignored_during_execution=NodeSelector(
                    node_selector_terms=[
                        _helm_term("feature.node.kubernetes.io/pci-10de.present", "true"),
                        _helm_term("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                        _helm_term("nvidia.com/gpu.present", "true"),
                    ]
                )
            )
        ),
    ),
)


# Per run: a DaemonSet -> its pod (`daemon_pod` makes a new one per call; the same pod object
# lets `RUNTIME_FREE` keep its variants across the nodes registered).
_DAEMON_POD: Memo[IdentityMemo[DaemonSet, Pod]] = Memo.identity(daemon_pod, size=64)


def _plugin_lands(
    pod: Pod, labels: Mapping[str, str], taints: Sequence[Taint], memos: Memos | None
) -> bool:
    """A device plugin's pod lands on the node; labels GPU nodes get at run time are unknown,
    so allowed (as GPU001 treats them)."""
    memo = memos[RUNTIME_FREE] if memos is not None else None
    return lands_on(without_runtime_labels(pod, labels, memo), labels, taints)


def _shared(source: str, delay: float, config: DevicePluginConfig | None) -> DevicePlugin:
    if config is None:
        return DevicePlugin(source, delay, NVIDIA_GPU, 1)
    return DevicePlugin(
        source, delay, config.advertised_resource(NVIDIA_GPU), config.replicas_for(NVIDIA_GPU)
    )


def _configs(objects: Manifests) -> list[tuple[str, str, DevicePluginConfig]]:
    out: list[tuple[str, str, DevicePluginConfig]] = []
    for cm in objects.configmaps:
        try:
            found = device_plugin_configs(cm)
        except ValueError:  # a broken config: lint reports it; the plugin falls back
            continue
        out.extend((cm.metadata.name, key, cfg) for key, cfg in found.items())
    return out


def _config_for(
    labels: Mapping[str, str],
    configs: Sequence[tuple[str, str, DevicePluginConfig]],
    policy: ClusterPolicy | None,
) -> DevicePluginConfig | None:
    chosen = choose_config(
        [(name, key) for name, key, _ in configs],
        label=labels.get(DEVICE_PLUGIN_CONFIG_LABEL),
        policy=policy,
    )
    return configs[chosen[0]][2] if chosen is not None else None


def device_plugin_for(
    node_labels: Mapping[str, str],
    node_taints: Sequence[Taint],
    *,
    objects: Manifests,
    addons: Sequence[Addon],
    ami_family: str | None,
    timings: Timings,
    ami_config: DevicePluginConfig | None = None,
    memos: Memos | None = None,
) -> DevicePlugin | None:
    """The device plugin that advertises GPUs on a node with these labels and taints, or None
    (the node never advertises a GPU). Tried in this order, the first that lands wins:

    1. the AMI's own plugin: `ami_family` Bottlerocket (its NVIDIA variant, which Karpenter
       picks for NVIDIA types, runs the plugin as a host service), configured by the
       EC2NodeClass userData (`ami_config`, apis/bottlerocket.py); delay `device_plugin`;
    2. an applied device-plugin DaemonSet (by name or image, apis/gpu.py), in namespace/name
       order, whose tolerations and node selector / required affinity allow the node; delay
       `daemonset_start + device_plugin`;
    3. an applied ClusterPolicy with the device plugin enabled whose `daemonsets.tolerations`
       (the operator's default when unset) allow the node; delay `gpu_operator`;
    4. a scenario add-on: `nvidia-device-plugin` (the Helm chart's default tolerations and
       affinity; delay as 2) or `gpu-operator` (its default tolerations; delay as 3).

    Time-slicing for 2 and 3 comes from the device-plugin config in the applied ConfigMaps (the
    node's `nvidia.com/device-plugin.config` label, the ClusterPolicy's default, or the only one;
    `choose_config`), for 4 from the add-on. `memos`: the run's (the simulator's cluster's),
    to make each DaemonSet's pod and its runtime-label-free variants once.
    """
    if (ami_family or "").lower() == "bottlerocket":
        return _shared("ami/bottlerocket", timings.device_plugin, ami_config)
    configs = _configs(objects)
    daemonsets = sorted(objects.daemonsets, key=lambda d: (d.metadata.namespace, d.metadata.name))
    for ds in daemonsets:
        # GPU Feature Discovery runs from the plugin's image but advertises no GPU.
        containers = [c for c in ds.spec.template.spec.containers if not runs_feature_discovery(c)]
        images = [c.image or "" for c in containers]
        if not containers or not is_device_plugin(ds.metadata.name, images):
            continue
        pod = memos[_DAEMON_POD].lookup(ds) if memos is not None else daemon_pod(ds)
        if _plugin_lands(pod, node_labels, node_taints, memos):
            source = f"daemonset/{ds.metadata.namespace}/{ds.metadata.name}"
            delay = timings.daemonset_start + timings.device_plugin
            return _shared(source, delay, _config_for(node_labels, configs, None))
    for policy in sorted(objects.cluster_policies, key=lambda p: p.metadata.name):
        if not policy.spec.device_plugin.enabled:
            continue
        if blocking_taint(node_taints, operator_tolerations(policy)) is None:
            config = _config_for(node_labels, configs, policy)
            return _shared(f"clusterpolicy/{policy.metadata.name}", timings.gpu_operator, config)
    for addon in addons:
        if addon.name == NVIDIA_DEVICE_PLUGIN:
            if not _plugin_lands(_HELM_PLUGIN_POD, node_labels, node_taints, memos):
                continue
            delay = timings.daemonset_start + timings.device_plugin
        elif addon.name == GPU_OPERATOR:
            if blocking_taint(node_taints, OPERATOR_DEFAULT_TOLERATIONS) is not None:
                continue
            delay = timings.gpu_operator
        else:
            continue
        shared = addon.time_slicing_replicas > 1
        resource = NVIDIA_GPU_SHARED if shared and addon.rename_by_default else NVIDIA_GPU
        return DevicePlugin(f"addon/{addon.name}", delay, resource, addon.time_slicing_replicas)
    return None


def advertised_gpus(physical_gpus: int, plugin: DevicePlugin | None) -> dict[str, int]:
    """The GPU resource a node advertises once its plugin is up: physical GPUs x time-slicing
    replicas, under the plugin's resource name; {} without a plugin or GPUs."""
    if plugin is None or physical_gpus <= 0:
        return {}
    return {plugin.resource: physical_gpus * plugin.replicas}


def daemonsets_for(
    node_labels: Mapping[str, str], node_taints: Sequence[Taint], daemonsets: Sequence[DaemonSet]
) -> list[DaemonSet]:
    """The DaemonSets whose pod lands on the node (taints, node selector, required affinity;
    `scheduling.daemonsets.lands_on`), in the order given."""
    return [ds for ds in daemonsets if lands_on(daemon_pod(ds), node_labels, node_taints)]


@dataclass(frozen=True, slots=True)
class PullBounds:
    """What bounds an image pull on a node, in MiB/s (None: no bound known)."""

    disk_mib_s: float
    ebs_mib_s: float | None
    network_mib_s: float | None


def pull_bounds(
    instance_type_name: str, nodeclass: EC2NodeClass | None, catalog: Catalog
) -> PullBounds:
    """The pull bounds of a node of this type and EC2NodeClass: the image disk's throughput
    (`coldstart.image_disk`; no EC2NodeClass or an unmodelled volume type: gp3's default
    125 MiB/s), the type's EBS bandwidth (its maximum, `ebs_max_bandwidth_mbps`, since a fresh
    instance has its full burst allowance; else the baseline throughput; None on instance store)
    and its network bandwidth (the catalog's `network_bandwidth_mbps`, the cards' baseline;
    None when the catalog does not have it)."""
    info = catalog.info(instance_type_name)
    network = (
        mbits_to_mib_s(info.network_bandwidth_mbps)
        if info.network_bandwidth_mbps is not None
        else None
    )
    if nodeclass is None:
        disk_mib_s: float = DEFAULT_GP3_THROUGHPUT_MIB_S
        instance_store = False
    else:
        disk = image_disk(
            nodeclass, size=DEFAULT_EBS_VOLUME_SIZE, instance_store=info.local_nvme_gb > 0
        )
        instance_store = disk.kind == "instance store"
        disk_mib_s = disk.throughput or DEFAULT_GP3_THROUGHPUT_MIB_S
    ebs: float | None = None
    if not instance_store:
        if info.ebs_max_bandwidth_mbps is not None:
            ebs = mbits_to_mib_s(info.ebs_max_bandwidth_mbps)
        elif info.ebs_baseline_throughput_mbytes_per_s is not None:
            ebs = mbytes_to_mib_s(info.ebs_baseline_throughput_mbytes_per_s)
    return PullBounds(disk_mib_s, ebs, network)


def image_pull_seconds(
    image: str, bounds: PullBounds, images: Mapping[str, tuple[int, int]]
) -> float:
    """Seconds to pull `image` on a node with these bounds (`coldstart.pull_seconds`). Its size
    comes from `images` (the scenario's), else KNOWN_IMAGE_SIZES, by full reference or without
    the tag; an image in neither pulls in 0 s (only `container_start` counts for it)."""
    size = lookup_image_size(image, images) or lookup_image_size(image, KNOWN_IMAGE_SIZES)
    if size is None:
        return 0.0
    return pull_seconds(
        size[0],
        size[1],
        disk_mib_s=bounds.disk_mib_s,
        ebs_mib_s=bounds.ebs_mib_s,
        network_mib_s=bounds.network_mib_s,
    )


def startup_seconds(pod: Pod, timings: Timings) -> float:
    """How long the pod takes to be Ready after its containers start: the annotation
    `gpucap.dev/startup-seconds` (a number of seconds), else `timings.model_load`. Raises
    ValueError naming the pod and annotation when the value is not a non-negative number."""
    text = pod.metadata.annotations.get(STARTUP_SECONDS_ANNOTATION)
    if text is None:
        return timings.model_load
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(
            f"pod {pod.key}: annotation "
            f"{STARTUP_SECONDS_ANNOTATION}: {text!r} is not a number of seconds >= 0"
        )
    return value
