"""Karpenter's AWS capacity model: every constant and formula, as plain integer arithmetic.

This is how `aws/karpenter-provider-aws` turns an EC2 instance type plus an EC2NodeClass into the
capacity, overhead and allocatable it schedules against (`pkg/providers/instancetype/types.go`:
`computeCapacity`, `memory`, `pods`, `ENILimitedPods`, `kubeReservedResources`,
`evictionThreshold`, `ephemeralStorage`; the AMI family traits in `pkg/providers/amifamily/*.go`;
allocatable in `kubernetes-sigs/karpenter:pkg/cloudprovider/types.go`). `resolve.py` calls these
functions; nothing here knows about files, regions or prices.

Units: cpu in millicores, memory and ephemeral-storage in bytes, everything else in whole units.
Where Karpenter computes with float64 (VM overhead, eviction percentages, CPU bands) the same
float operations are done in the same order, so the rounding is bit-for-bit Karpenter's.

All Karpenter constants gpucap's catalog uses live in the "Karpenter constants" block below, each
with the reason it exists and the upstream file it comes from (repo revisions are listed in
`../shared/design/karpenter-provisioning.md` §0: aws @ 1d927085dd81, core @ 2266468104f3).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis import gpu
from gpucap.apis.quantity import Quantity

__all__ = [
    "AL2023_UNSUPPORTED_PREFIX",
    "AMI_FAMILIES",
    "ARM64_CMA_RESERVED_MIB",
    "CAPABILITY_FLEX_MARKER",
    "CAPACITY_TYPES",
    "DEFAULT_EBS_VOLUME_SIZE",
    "ENI_MAX_PODS_HOST_NETWORK_PODS",
    "EVICTION_MEMORY_AVAILABLE",
    "EVICTION_MEMORY_AVAILABLE_DEFAULT",
    "EVICTION_NODEFS_AVAILABLE",
    "EVICTION_NODEFS_AVAILABLE_DEFAULT_PERCENT",
    "GIB",
    "INSTANCE_STORE_POLICY_RAID0",
    "INSTANCE_TYPE_SCHEME",
    "KUBE_RESERVED_CPU_BANDS",
    "KUBE_RESERVED_EPHEMERAL_STORAGE",
    "KUBE_RESERVED_MEMORY_BASE_MIB",
    "KUBE_RESERVED_MEMORY_MIB_PER_POD",
    "LABEL_ARCH",
    "LABEL_CAPACITY_TYPE",
    "LABEL_INSTANCE_ACCELERATOR_COUNT",
    "LABEL_INSTANCE_ACCELERATOR_MANUFACTURER",
    "LABEL_INSTANCE_ACCELERATOR_NAME",
    "LABEL_INSTANCE_CAPABILITY_FLEX",
    "LABEL_INSTANCE_CATEGORY",
    "LABEL_INSTANCE_CPU",
    "LABEL_INSTANCE_CPU_MANUFACTURER",
    "LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ",
    "LABEL_INSTANCE_EBS_BANDWIDTH",
    "LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED",
    "LABEL_INSTANCE_FAMILY",
    "LABEL_INSTANCE_GENERATION",
    "LABEL_INSTANCE_GPU_COUNT",
    "LABEL_INSTANCE_GPU_MANUFACTURER",
    "LABEL_INSTANCE_GPU_MEMORY",
    "LABEL_INSTANCE_GPU_NAME",
    "LABEL_INSTANCE_HYPERVISOR",
    "LABEL_INSTANCE_LOCAL_NVME",
    "LABEL_INSTANCE_MEMORY",
    "LABEL_INSTANCE_NETWORK_BANDWIDTH",
    "LABEL_INSTANCE_SIZE",
    "LABEL_INSTANCE_TENANCY",
    "LABEL_INSTANCE_TYPE",
    "LABEL_OS",
    "LABEL_REGION",
    "LABEL_WINDOWS_BUILD",
    "LABEL_ZONE",
    "MIB",
    "RESERVED_ENIS",
    "RESOURCE_AMD_GPU",
    "RESOURCE_AWS_NEURON",
    "RESOURCE_AWS_NEURON_CORE",
    "RESOURCE_EFA",
    "RESOURCE_HABANA_GAUDI",
    "RESOURCE_NVIDIA_GPU",
    "RESOURCE_POD_ENI",
    "RESOURCE_PRIVATE_IPV4_ADDRESS",
    "TENANCIES",
    "VM_MEMORY_OVERHEAD_PERCENT",
    "WINDOWS_DEFAULT_MAX_PODS",
    "AMIFamilyTraits",
    "BlockDeviceSettings",
    "NetworkInterfaceSettings",
    "compute_allocatable",
    "efa_capacity",
    "eni_limited_pods",
    "ephemeral_storage_bytes",
    "eviction_signal_bytes",
    "eviction_threshold",
    "kube_reserved",
    "kube_reserved_cpu_millicores",
    "kube_reserved_memory_bytes",
    "memory_capacity_bytes",
    "parse_eviction_percentage",
    "pods_capacity",
]

MIB = 2**20
GIB = 2**30

# ==== Karpenter constants =====================================================================

# --- operator options (aws `pkg/operator/options/options.go`) --------------------------------
# Share of instance memory the hypervisor/firmware keeps, so Karpenter does not promise memory
# the kubelet will never report (`VM_MEMORY_OVERHEAD_PERCENT`, default 0.075).
VM_MEMORY_OVERHEAD_PERCENT = 0.075
# ENIs kept back from the VPC CNI (e.g. for a secondary interface); lowers ENI-limited max pods
# (`RESERVED_ENIS`, default 0).
RESERVED_ENIS = 0

# --- capacity (aws `pkg/providers/instancetype/types.go`) ------------------------------------
# Graviton kernels reserve 64 MiB of CMA memory that pods can never use (`memory()`).
ARM64_CMA_RESERVED_MIB = 64
# The "+2" of `ENILimitedPods` / amazon-eks-ami `eni-max-pods.txt`: aws-node and kube-proxy run
# on the host network and take no VPC IP, so two pods more fit than there are secondary IPs.
ENI_MAX_PODS_HOST_NETWORK_PODS = 2
# Families that cannot use ENI-limited density (Windows) get the kubelet's own default (`pods()`).
WINDOWS_DEFAULT_MAX_PODS = 110
# `ephemeralStorage()`: local instance-store disks become the node's ephemeral storage only with
# this `instanceStorePolicy` (EC2NodeClass enum, `pkg/apis/v1/ec2nodeclass.go`).
INSTANCE_STORE_POLICY_RAID0 = "RAID0"

# --- overhead (aws `pkg/providers/instancetype/types.go: kubeReservedResources`) -------------
# kube-reserved CPU: a share of each band of the node's millicores, summed; each band's share is
# truncated to whole millicores (the table comes from Bottlerocket PR #1388, cited upstream).
KUBE_RESERVED_CPU_BANDS: tuple[tuple[int, int, float], ...] = (
    (0, 1000, 0.06),
    (1000, 2000, 0.01),
    (2000, 4000, 0.005),
    (4000, 1 << 31, 0.0025),
)
# kube-reserved memory = (11 * pods + 255) MiB: the EKS AMI's per-pod kubelet/containerd cost
# plus a fixed base.
KUBE_RESERVED_MEMORY_MIB_PER_POD = 11
KUBE_RESERVED_MEMORY_BASE_MIB = 255
# kube-reserved ephemeral storage: a flat 1Gi for kubelet/containerd state.
KUBE_RESERVED_EPHEMERAL_STORAGE = 1 * GIB

# --- eviction (aws `pkg/providers/instancetype/types.go: evictionThreshold`) -----------------
# The kubelet's hard-eviction signals that reduce allocatable (evictionSoft never does: it only
# warns). Karpenter's defaults equal the kubelet's own defaults: 100Mi memory, 10% nodefs.
EVICTION_MEMORY_AVAILABLE = "memory.available"
EVICTION_NODEFS_AVAILABLE = "nodefs.available"
EVICTION_MEMORY_AVAILABLE_DEFAULT = 100 * MIB
EVICTION_NODEFS_AVAILABLE_DEFAULT_PERCENT = 10

# --- AMI families (aws `pkg/providers/amifamily/{resolver,types,al2,al2023,bottlerocket,
#     windows,custom}.go`) -------------------------------------------------------------------
# `DefaultEBS.VolumeSize`: the root volume Karpenter gives AL2/AL2023/Bottlerocket (data volume)
# when the EC2NodeClass has no blockDeviceMappings, and the size of last resort.
DEFAULT_EBS_VOLUME_SIZE = 20 * GIB


@dataclass(frozen=True, slots=True)
class AMIFamilyTraits:
    """What an AMI family changes in the capacity model (Karpenter's `FeatureFlags` and disks).

    - `ephemeral_device`: the block device that backs pods' ephemeral storage
      (`EphemeralBlockDevice()`); None for Custom, whose layout Karpenter cannot know.
    - `default_ephemeral_size`: the size of that device in `DefaultBlockDeviceMappings()`; None
      when the family has no default mappings (Custom).
    - `uses_eni_limited_memory_overhead`: kube-reserved memory counts ENI-limited pods even when
      maxPods is overridden (the EKS AMIs compute it that way); otherwise it counts capacity pods.
    - `pods_per_core_enabled`: `kubelet.podsPerCore` is honoured (Bottlerocket's settings TOML
      cannot pass it, bottlerocket-os/bottlerocket#1721).
    - `supports_eni_limited_pod_density`: default pods = ENI-limited pods, else 110 (Windows).
    - `windows_build`: value of `node.kubernetes.io/windows-build` (`pkg/apis/v1/labels.go`).
    """

    ephemeral_device: str | None
    default_ephemeral_size: int | None
    uses_eni_limited_memory_overhead: bool
    pods_per_core_enabled: bool
    supports_eni_limited_pod_density: bool
    windows_build: str | None = None

    @property
    def is_windows(self) -> bool:
        return self.windows_build is not None


_LINUX_EKS = AMIFamilyTraits(
    ephemeral_device="/dev/xvda",
    default_ephemeral_size=DEFAULT_EBS_VOLUME_SIZE,
    uses_eni_limited_memory_overhead=True,
    pods_per_core_enabled=True,
    supports_eni_limited_pod_density=True,
)


def _windows(build: str) -> AMIFamilyTraits:
    # Windows AMIs boot from /dev/sda1, sized 50Gi by default (`windows.go`).
    return AMIFamilyTraits(
        ephemeral_device="/dev/sda1",
        default_ephemeral_size=50 * GIB,
        uses_eni_limited_memory_overhead=False,
        pods_per_core_enabled=True,
        supports_eni_limited_pod_density=False,
        windows_build=build,
    )


# The EC2NodeClass `amiFamily` enum. `GetAMIFamily` maps any unknown name to AL2; gpucap rejects
# unknown names instead (the CRD enum already does).
AMI_FAMILIES: Mapping[str, AMIFamilyTraits] = {
    "AL2": _LINUX_EKS,
    "AL2023": _LINUX_EKS,
    # Bottlerocket keeps pods on a separate data volume /dev/xvdb (20Gi; the 4Gi /dev/xvda is
    # the OS volume) and computes kube-reserved memory from its own max pods.
    "Bottlerocket": AMIFamilyTraits(
        ephemeral_device="/dev/xvdb",
        default_ephemeral_size=DEFAULT_EBS_VOLUME_SIZE,
        uses_eni_limited_memory_overhead=False,
        pods_per_core_enabled=False,
        supports_eni_limited_pod_density=True,
    ),
    "Custom": AMIFamilyTraits(
        ephemeral_device=None,
        default_ephemeral_size=None,
        uses_eni_limited_memory_overhead=True,
        pods_per_core_enabled=True,
        supports_eni_limited_pod_density=True,
    ),
    "Windows2019": _windows("10.0.17763"),
    "Windows2022": _windows("10.0.20348"),
    "Windows2025": _windows("10.0.26100"),
}

# --- node-class compatibility (aws `pkg/providers/instancetype/compatibility/compatibility.go`)
# AL2023 does not support the first-generation Graviton (a1) types, so Karpenter marks all their
# offerings unavailable for an AL2023 node class.
AL2023_UNSUPPORTED_PREFIX = "a1."

# --- labels (aws `pkg/providers/instancetype/types.go: computeRequirements`) -----------------
# Category and generation come from the name: `p4d.24xlarge` -> (p, 4); `u-6tb1.metal` -> (u, 1).
INSTANCE_TYPE_SCHEME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")

# Label keys every instance type carries a requirement for (core `pkg/apis/v1/labels.go`, aws
# `pkg/apis/v1/labels.go`); a key with no value is `DoesNotExist` for that type.
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_OS = "kubernetes.io/os"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_WINDOWS_BUILD = "node.kubernetes.io/windows-build"
LABEL_CAPACITY_TYPE = "karpenter.sh/capacity-type"
_AWS = "karpenter.k8s.aws/"
LABEL_INSTANCE_CPU = _AWS + "instance-cpu"
LABEL_INSTANCE_CPU_MANUFACTURER = _AWS + "instance-cpu-manufacturer"
LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ = _AWS + "instance-cpu-sustained-clock-speed-mhz"
LABEL_INSTANCE_MEMORY = _AWS + "instance-memory"
LABEL_INSTANCE_EBS_BANDWIDTH = _AWS + "instance-ebs-bandwidth"
LABEL_INSTANCE_NETWORK_BANDWIDTH = _AWS + "instance-network-bandwidth"
LABEL_INSTANCE_CATEGORY = _AWS + "instance-category"
LABEL_INSTANCE_CAPABILITY_FLEX = _AWS + "instance-capability-flex"
LABEL_INSTANCE_FAMILY = _AWS + "instance-family"
LABEL_INSTANCE_GENERATION = _AWS + "instance-generation"
LABEL_INSTANCE_LOCAL_NVME = _AWS + "instance-local-nvme"
LABEL_INSTANCE_SIZE = _AWS + "instance-size"
LABEL_INSTANCE_GPU_NAME = _AWS + "instance-gpu-name"
LABEL_INSTANCE_GPU_MANUFACTURER = _AWS + "instance-gpu-manufacturer"
LABEL_INSTANCE_GPU_COUNT = _AWS + "instance-gpu-count"
LABEL_INSTANCE_GPU_MEMORY = _AWS + "instance-gpu-memory"
LABEL_INSTANCE_ACCELERATOR_NAME = _AWS + "instance-accelerator-name"
LABEL_INSTANCE_ACCELERATOR_MANUFACTURER = _AWS + "instance-accelerator-manufacturer"
LABEL_INSTANCE_ACCELERATOR_COUNT = _AWS + "instance-accelerator-count"
LABEL_INSTANCE_HYPERVISOR = _AWS + "instance-hypervisor"
LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED = _AWS + "instance-encryption-in-transit-supported"
LABEL_INSTANCE_TENANCY = _AWS + "instance-tenancy"
# `instance-capability-flex` is "true" exactly when the family name contains this marker.
CAPABILITY_FLEX_MARKER = "-flex"
# Tenancies every type may launch with (`computeRequirements`); the node label is the one used.
TENANCIES = ("default", "dedicated")
# The usage classes Karpenter turns into capacity types (`computeRequirements`); `reserved` is
# added only for capacity reservations, which the catalog does not model.
CAPACITY_TYPES = ("on-demand", "spot")

# Extended resources (aws `pkg/apis/v1/labels.go`). Every type has every key, 0 when absent.
RESOURCE_NVIDIA_GPU = gpu.NVIDIA_GPU
RESOURCE_AMD_GPU = gpu.AMD_GPU
RESOURCE_HABANA_GAUDI = gpu.HABANA_GAUDI
RESOURCE_AWS_NEURON = gpu.AWS_NEURON
RESOURCE_AWS_NEURON_CORE = "aws.amazon.com/neuroncore"
RESOURCE_EFA = "vpc.amazonaws.com/efa"
RESOURCE_POD_ENI = "vpc.amazonaws.com/pod-eni"
# Windows only: secondary IPv4 addresses the VPC resource controller hands out per node.
RESOURCE_PRIVATE_IPV4_ADDRESS = "vpc.amazonaws.com/PrivateIPv4Address"
# GPU device manufacturer (EC2 `GpuInfo.Gpus[].Manufacturer`, lower-cased) -> its resource.
GPU_RESOURCE_BY_MANUFACTURER: Mapping[str, str] = {
    "nvidia": RESOURCE_NVIDIA_GPU,
    "amd": RESOURCE_AMD_GPU,
    "habana": RESOURCE_HABANA_GAUDI,
}

# ==== value types for the EC2NodeClass inputs =================================================


@dataclass(frozen=True, slots=True)
class BlockDeviceSettings:
    """One `spec.blockDeviceMappings[]` entry, reduced to what capacity depends on.

    `volume_size` is `ebs.volumeSize` in bytes (None when only a snapshot is given).
    """

    device_name: str | None
    volume_size: int | None
    root_volume: bool = False

    def __post_init__(self) -> None:
        if self.volume_size is not None and self.volume_size < 0:
            raise ValueError(f"block device volume size must be >= 0, got {self.volume_size}")


@dataclass(frozen=True, slots=True)
class NetworkInterfaceSettings:
    """One `spec.networkInterfaces[]` entry (`interface_type` is `interface` or `efa-only`)."""

    network_card_index: int
    device_index: int
    interface_type: str = "interface"

    @property
    def is_efa_only(self) -> bool:
        return self.interface_type == "efa-only"


# ==== formulas =================================================================================


def eni_limited_pods(
    default_card_enis: int,
    ipv4_per_eni: int,
    *,
    reserved_enis: int = RESERVED_ENIS,
    efa_only_on_card0: int = 0,
) -> int:
    """Pods the VPC CNI can give an IP: usable ENIs * (IPv4 per ENI - 1) + 2, or 0 without ENIs.

    Only the default network card counts (the CNI uses no other card); reserved ENIs and
    EFA-only interfaces on card 0 take ENIs away.
    """
    usable = max(default_card_enis - reserved_enis - efa_only_on_card0, 0)
    if usable == 0:
        return 0
    return usable * (ipv4_per_eni - 1) + ENI_MAX_PODS_HOST_NETWORK_PODS


def memory_capacity_bytes(
    memory_mib: int,
    architecture: str,
    *,
    vm_memory_overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT,
) -> int:
    """Memory Karpenter expects the kubelet to report: EC2 MiB minus CMA (arm64) and VM overhead."""
    mib = memory_mib - (ARM64_CMA_RESERVED_MIB if architecture == "arm64" else 0)
    # float64 as upstream: ceil(bytes * percent / 1024 / 1024) whole MiB.
    overhead_mib = math.ceil(float(mib * MIB) * vm_memory_overhead_percent / 1024 / 1024)
    return (mib - overhead_mib) * MIB


def pods_capacity(
    traits: AMIFamilyTraits,
    *,
    eni_limited: int,
    vcpus: int,
    max_pods: int | None = None,
    pods_per_core: int | None = None,
) -> int:
    """The `pods` capacity: maxPods, else ENI-limited (or 110), capped by podsPerCore * vCPUs."""
    if max_pods is not None:
        count = max_pods
    elif traits.supports_eni_limited_pod_density:
        count = eni_limited
    else:
        count = WINDOWS_DEFAULT_MAX_PODS
    if pods_per_core is not None and pods_per_core > 0 and traits.pods_per_core_enabled:
        count = min(pods_per_core * vcpus, count)
    return count


def ephemeral_storage_bytes(
    traits: AMIFamilyTraits,
    block_device_mappings: Sequence[BlockDeviceSettings] = (),
    *,
    instance_store_policy: str | None = None,
    instance_store_gb: int | None = None,
) -> int:
    """Ephemeral-storage capacity, in Karpenter's order of precedence.

    1. RAID0 instance-store policy on a type with instance store: its total size in decimal GB;
    2. the `rootVolume: true` mapping's size;
    3. Custom: the last mapping's size (else 20Gi); other families: the mapping on the family's
       ephemeral device;
    4. the family's default mapping for that device (AL2/AL2023/Bottlerocket 20Gi, Windows 50Gi);
    5. 20Gi.
    """
    if instance_store_policy == INSTANCE_STORE_POLICY_RAID0 and instance_store_gb is not None:
        return instance_store_gb * 10**9
    if block_device_mappings:
        root = next((m for m in block_device_mappings if m.root_volume), None)
        if root is not None and root.volume_size is not None:
            return root.volume_size
        if traits.ephemeral_device is None:  # Custom
            last = block_device_mappings[-1].volume_size
            return last if last is not None else DEFAULT_EBS_VOLUME_SIZE
        device = next(
            (m for m in block_device_mappings if m.device_name == traits.ephemeral_device), None
        )
        if device is not None and device.volume_size is not None:
            return device.volume_size
    if traits.default_ephemeral_size is not None:
        return traits.default_ephemeral_size
    return DEFAULT_EBS_VOLUME_SIZE


def efa_capacity(
    efa_interfaces: int, network_interfaces: Sequence[NetworkInterfaceSettings] | None
) -> int:
    """`vpc.amazonaws.com/efa`: the NodeClass's EFA-only interfaces if it lists interfaces."""
    if network_interfaces is not None:
        return sum(1 for nic in network_interfaces if nic.is_efa_only)
    return efa_interfaces


def kube_reserved_cpu_millicores(cpu_millicores: int) -> int:
    """kube-reserved CPU for a node of `cpu_millicores` (e.g. 4000m -> 80m, 48000m -> 190m)."""
    total = 0
    for start, end, share in KUBE_RESERVED_CPU_BANDS:
        if cpu_millicores >= start:
            span = float(end - start) if cpu_millicores >= end else float(cpu_millicores - start)
            total += int(span * share)
    return total


def kube_reserved_memory_bytes(pods: int) -> int:
    """kube-reserved memory for `pods` pods: (11 * pods + 255) MiB."""
    return (KUBE_RESERVED_MEMORY_MIB_PER_POD * pods + KUBE_RESERVED_MEMORY_BASE_MIB) * MIB


def kube_reserved(
    cpu_millicores: int, pods: int, overrides: Mapping[str, int] | None = None
) -> dict[str, int]:
    """The kube-reserved list; every key set in `kubelet.kubeReserved` replaces the default."""
    reserved = {
        "cpu": kube_reserved_cpu_millicores(cpu_millicores),
        "memory": kube_reserved_memory_bytes(pods),
        "ephemeral-storage": KUBE_RESERVED_EPHEMERAL_STORAGE,
    }
    reserved.update(overrides or {})
    return reserved


def parse_eviction_percentage(value: str) -> float:
    """The number in an eviction value like `10%`; `100%` means "threshold disabled" (0)."""
    text = value.strip("%")
    try:
        percent = float(text)
    except ValueError:
        raise ValueError(f"eviction value {value!r} is not a percentage") from None
    if not math.isfinite(percent) or text != text.strip():
        raise ValueError(f"eviction value {value!r} is not a percentage")
    # The kubelet reads 100% as "disable this signal" (KubeletConfiguration evictionHard docs).
    return 0.0 if percent == 100 else percent


def eviction_signal_bytes(capacity: int, value: str) -> int:
    """An evictionHard value in bytes: `p%` of `capacity` (rounded up) or a quantity."""
    if value.endswith("%"):
        percent = parse_eviction_percentage(value)
        return math.ceil(float(capacity) / 100 * percent)
    return Quantity.parse(value).value()


def eviction_threshold(
    memory_bytes: int, storage_bytes: int, eviction_hard: Mapping[str, str] | None = None
) -> dict[str, int]:
    """The hard-eviction reserve: 100Mi memory and 10% of nodefs unless evictionHard says else.

    Percentages are of the estimated capacity (before any discovered-capacity correction).
    """
    threshold = {
        "memory": EVICTION_MEMORY_AVAILABLE_DEFAULT,
        # float64 as upstream: ceil(bytes / 100 * 10).
        "ephemeral-storage": math.ceil(
            float(storage_bytes) / 100 * EVICTION_NODEFS_AVAILABLE_DEFAULT_PERCENT
        ),
    }
    hard = eviction_hard or {}
    if EVICTION_MEMORY_AVAILABLE in hard:
        threshold["memory"] = eviction_signal_bytes(memory_bytes, hard[EVICTION_MEMORY_AVAILABLE])
    if EVICTION_NODEFS_AVAILABLE in hard:
        threshold["ephemeral-storage"] = eviction_signal_bytes(
            storage_bytes, hard[EVICTION_NODEFS_AVAILABLE]
        )
    return threshold


def compute_allocatable(
    capacity: Mapping[str, int], *overheads: Mapping[str, int]
) -> dict[str, int]:
    """capacity - sum of overheads for every capacity key (overhead-only keys are ignored).

    Not floored at zero, as upstream: an overhead larger than the capacity gives a negative
    allocatable that no pod fits. Hugepages (which would reduce memory further) are not modelled:
    no catalog capacity has them.
    """
    allocatable = dict(capacity)
    for overhead in overheads:
        for resource, amount in overhead.items():
            if resource in allocatable:
                allocatable[resource] -= amount
    return allocatable
