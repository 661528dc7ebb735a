"""How long a new GPU node and its first pod take to come up: stage timings and the image pull.

One model shared by `gpucap lint` (SPOT001's cold-start estimate, STG002's pull estimate) and
the simulator (`sim/kubelet.py`): the `Timings` of each stage (defaults from landscape.md §4.5,
overridden by a scenario's `spec.timings`), the disk an image is pulled to (`image_disk`: the
EC2NodeClass's ephemeral block device, Karpenter's default mapping, or RAID0 instance store) and
the pull time bounded by that disk, the instance type's EBS bandwidth and its network
(`pull_seconds`). Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from gpucap.apis.ec2nodeclass import BlockDevice, EC2NodeClass
from gpucap.cloudprovider.aws.instancetype.capacity import AMI_FAMILIES, INSTANCE_STORE_POLICY_RAID0

__all__ = [
    "DEFAULT_GP3_THROUGHPUT_MIB_S",
    "GIB",
    "INSTANCE_STORE_MIB_S",
    "KNOWN_IMAGE_SIZES",
    "MIB",
    "MODEL_SERVER_WARM_LOAD_S",
    "NETWORK_MIB_S",
    "TIMING_FIELDS",
    "TIMING_KEYS",
    "DiskModel",
    "Timings",
    "ebs_throughput",
    "image_disk",
    "lookup_image_size",
    "mbits_to_mib_s",
    "mbytes_to_mib_s",
    "pull_seconds",
]

MIB = 2**20
GIB = 2**30


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds each cold-start stage takes (landscape.md §4.5 "Typical" column, low end, so
    estimates err short). A scenario's `spec.timings` overrides any of them."""

    # CreateFleet -> instance running: 16-26 s measured for non-GPU types
    # (brevdev/ec2-coldboot-research, landscape.md §4.1).
    launch: float = 20.0
    # running -> Node registered and Ready: 30-65 s (hackernoon, akingscote.co.uk, KubeFM;
    # landscape.md §4.2).
    registration: float = 30.0
    # a DaemonSet pod on a Ready node -> running (image cached on the AMI or small): no
    # measurement in landscape.md; gpucap's assumption, kept short.
    daemonset_start: float = 5.0
    # device-plugin pod running -> nvidia.com/gpu advertised: 30-90 s from node up in user
    # reports (aws/karpenter-provider-aws#1459, NVIDIA/k8s-device-plugin#291; landscape.md §4.2).
    device_plugin: float = 30.0
    # GPU Operator: node Ready -> GPU advertised (validators, toolkit, plugin); up to about
    # 5 min when it installs the driver, which EKS AMIs make unnecessary (landscape.md §4.2).
    gpu_operator: float = 120.0
    # model download + load when a pod has no `gpucap.dev/startup-seconds` annotation: none
    # (the simulator does not guess what a container loads; landscape.md §4.4 has the ranges).
    model_load: float = 0.0
    # image present -> container started (gpucap's assumption; not measured in landscape.md).
    container_start: float = 2.0
    # instance shutting-down -> terminated (billing stops): gpucap's assumption (not measured
    # in landscape.md).
    termination: float = 30.0

    def with_overrides(self, overrides: Mapping[str, float]) -> Timings:
        """These timings with some replaced; keys are the snake_case field names (a scenario's
        camelCase keys map to them through `TIMING_FIELDS`). Raises ValueError on an unknown
        key or a negative value (the scenario loader has already said which field)."""
        names = {f.name for f in fields(self)}
        for key, value in overrides.items():
            if key not in names:
                raise ValueError(f"unknown timing {key!r}")
            if value < 0:
                raise ValueError(f"timing {key!r} must not be negative, got {value}")
        return replace(self, **{k: float(v) for k, v in overrides.items()})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# The YAML names of `spec.timings` (camelCase) -> Timings field names.
TIMING_FIELDS: Mapping[str, str] = {_camel(f.name): f.name for f in fields(Timings)}
TIMING_KEYS: tuple[str, ...] = tuple(TIMING_FIELDS)

# Model download + load + engine init of a model server with a warm cache: 1.4 min
# (tensorfuse.io, Llama-3.1-8B on L40S with vLLM; 4.9 min cold; landscape.md §4.4). SPOT001 adds
# it for known model-server images.
MODEL_SERVER_WARM_LOAD_S = 84

# Compressed / uncompressed sizes of common inference images (bytes), used when the input does
# not say (`--image-size`, a scenario's `images`). vLLM from the workshop (seed, step 2); others
# from their registries' published layer sizes, rounded.
KNOWN_IMAGE_SIZES: dict[str, tuple[int, int]] = {
    "vllm/vllm-openai": (9 * GIB, 18 * GIB),
    "nvcr.io/nvidia/tritonserver": (10 * GIB, 22 * GIB),
    "ghcr.io/huggingface/text-generation-inference": (5 * GIB, 12 * GIB),
    "lmsysorg/sglang": (10 * GIB, 25 * GIB),
}


def lookup_image_size(image: str, sizes: Mapping[str, tuple[int, int]]) -> tuple[int, int] | None:
    """The (compressed, uncompressed) size of `image` in `sizes`, by full reference or by its
    repository without the tag."""
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", maxsplit=1)[-1] else image
    return sizes.get(image) or sizes.get(repo)


# ---- disks --------------------------------------------------------------------------------
# gp3 baseline throughput, what an unset `throughput` gets; provisionable 125-1000 MiB/s
# (aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go validation; landscape.md §4.3).
DEFAULT_GP3_THROUGHPUT_MIB_S = 125
# gp2 throughput: 128 MiB/s up to 170 GiB, 250 MiB/s above 334 GiB (EBS volume types docs);
# sizes in between only burst to 250, so gpucap takes 128 there.
GP2_SMALL_MIB_S, GP2_LARGE_MIB_S, GP2_LARGE_FROM = 128, 250, 334 * GIB
# Local NVMe instance store with instanceStorePolicy RAID0: no published number in the stored
# sources; taken as the gp3 maximum, so it never makes an estimate worse (landscape.md §4.3:
# "then network and single-threaded decompression become the bound").
INSTANCE_STORE_MIB_S = 1000
# Network bound of a pull when the instance type is not known: a 10 Gbps link at line rate
# (landscape.md §4.3: "a 10 Gbps link moves 9 GB in about 7-8 s"); real registries are slower,
# so this is a lower bound.
NETWORK_MIB_S = 10e9 / 8 / MIB


def mbits_to_mib_s(mbps: float) -> float:
    """EC2's megabits per second (network, EBS bandwidth) in MiB/s."""
    return mbps * 1e6 / 8 / MIB


def mbytes_to_mib_s(mb_s: float) -> float:
    """EC2's megabytes per second (EBS `BaselineThroughputInMBps`) in MiB/s."""
    return mb_s * 1e6 / MIB


@dataclass(frozen=True, slots=True)
class DiskModel:
    """The device a node pulls images to (containerd's root: the ephemeral block device)."""

    size: int  # bytes
    kind: str  # gp3, gp2, io1, ..., "instance store"
    throughput: float | None  # MiB/s; None when gpucap has no model for the volume type
    default_throughput: bool  # gp3 without `throughput` (125 MiB/s)
    mapped: bool  # the EC2NodeClass sets blockDeviceMappings
    path: tuple[str | int, ...]  # the mapping (or spec) in the EC2NodeClass


def ebs_throughput(ebs: BlockDevice | None, size: int) -> tuple[str, float | None, bool]:
    """(volume type, MiB/s or None when unmodelled, whether gp3's default throughput applies)
    of an EBS volume of `size` bytes; no `ebs` block is Karpenter's default gp3."""
    kind = (ebs.volume_type if ebs is not None else None) or "gp3"
    if kind == "gp3":
        set_ = ebs.throughput if ebs is not None else None
        return kind, float(set_ or DEFAULT_GP3_THROUGHPUT_MIB_S), set_ is None
    if kind == "gp2":
        return kind, float(GP2_LARGE_MIB_S if size >= GP2_LARGE_FROM else GP2_SMALL_MIB_S), False
    return kind, None, False


def image_disk(nodeclass: EC2NodeClass, *, size: int, instance_store: bool) -> DiskModel:
    """The disk a node of `nodeclass` pulls images to. `instance_store`: the node's types have
    local NVMe (RAID0 then applies when the class asks for it); `size` is the ephemeral storage
    in bytes. Which mapping: the one marked rootVolume, else the AMI family's ephemeral device
    (the last mapping for Custom), as Karpenter picks it (capacity.ephemeral_storage_bytes)."""
    mappings = nodeclass.spec.block_device_mappings or []
    if instance_store and nodeclass.spec.instance_store_policy == INSTANCE_STORE_POLICY_RAID0:
        return DiskModel(
            size,
            "instance store",
            INSTANCE_STORE_MIB_S,
            False,
            bool(mappings),
            ("spec", "instanceStorePolicy"),
        )
    if not mappings:
        kind, mib, default = ebs_throughput(None, size)
        return DiskModel(size, kind, mib, default, False, ("spec",))
    traits = AMI_FAMILIES.get(nodeclass.ami_family)
    device = traits.ephemeral_device if traits is not None else None
    index = next((i for i, m in enumerate(mappings) if m.root_volume), None)
    if index is None:
        if device is None:  # Custom: Karpenter takes the last mapping
            index = len(mappings) - 1
        else:
            index = next((i for i, m in enumerate(mappings) if m.device_name == device), None)
    if index is None:
        # No mapping for the ephemeral device: the AMI's own root volume, size unknown to
        # Karpenter (it assumes the 20Gi default); gpucap assumes a default gp3 too.
        kind, mib, default = ebs_throughput(None, size)
        return DiskModel(size, kind, mib, default, True, ("spec", "blockDeviceMappings"))
    kind, mib, default = ebs_throughput(mappings[index].ebs, size)
    return DiskModel(size, kind, mib, default, True, ("spec", "blockDeviceMappings", index))


def pull_seconds(
    compressed: int,
    uncompressed: int,
    *,
    disk_mib_s: float,
    ebs_mib_s: float | None,
    network_mib_s: float | None,
) -> float:
    """Seconds to pull an image of `compressed` bytes that unpacks to `uncompressed` bytes.

    The download writes the compressed blobs to the disk, so it goes at the slowest of the
    disk, the instance's EBS bandwidth (the disk is an EBS volume; None: instance store or not
    known) and its network (None: not known); then containerd writes the unpacked layers to the
    same disk (landscape.md §4.3 [derived]). With the network faster than the disk this is
    (compressed + uncompressed) / disk, lint's disk-bound estimate.
    """
    write = min(b for b in (disk_mib_s, ebs_mib_s) if b is not None)
    download = min(b for b in (write, network_mib_s) if b is not None)
    return compressed / MIB / download + uncompressed / MIB / write
