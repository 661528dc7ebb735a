"""Storage and image-pull rules (landscape.md §3.6, timings from §4.3).

STG001-STG002, over the images of the GPU pods that can land on a pool (`pool_images`). Which
device containerd writes images to on a pool's nodes (`pool_disk`: the EC2NodeClass's ephemeral
block device, Karpenter's default mapping, or RAID0 instance store) and the disk-bound pull
estimate (`pull_seconds`) are `lint/queries.py`, as SPOT001 uses them too; the disk and pull
models themselves are `cloudprovider/aws/coldstart.py`, which the simulator shares.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpucap.cloudprovider.aws.coldstart import (
    DEFAULT_GP3_THROUGHPUT_MIB_S,
    GIB,
)
from gpucap.cloudprovider.aws.instancetype.capacity import (
    DEFAULT_EBS_VOLUME_SIZE,
)
from gpucap.lint.context import LintContext, PodRef, PoolView, image_size, pod_gpus
from gpucap.lint.queries import landing_pools, name_list, pool_disk, pull_seconds
from gpucap.lint.registry import Finding, Registry, Severity

__all__ = ["RULES", "PoolImages", "pool_images"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

# STG001: a volume smaller than this many times the images' compressed size is too small; or
# than compressed + unpacked (containerd keeps both), whichever is larger (landscape.md §3.6).
ROOT_VOLUME_FACTOR = 2.5
# STG002: report when the images of a pool add up to this much (compressed) ...
LARGE_IMAGES_BYTES = 1 * GIB
# ... and make it a warning when the disk-bound pull alone exceeds the 2-minute spot notice.
PULL_WARNING_S = 120


@dataclass(slots=True)
class PoolImages:
    """Images of the GPU pods that can land on a pool."""

    known: dict[str, tuple[int, int]] = field(default_factory=dict)  # image -> (compr., unpacked)
    unknown: list[str] = field(default_factory=list)
    pods: list[PodRef] = field(default_factory=list)

    @property
    def compressed(self) -> int:
        return sum(c for c, _ in self.known.values())

    @property
    def uncompressed(self) -> int:
        return sum(u for _, u in self.known.values())


def pool_images(ctx: LintContext, pool: PoolView) -> PoolImages:
    """Images of the GPU pods (requesting nvidia.com/gpu) that can land on the pool."""
    out = PoolImages()
    seen: set[int] = set()
    for ref in ctx.pods:
        if id(ref.manifest) in seen or pod_gpus(ref.pod) <= 0:
            continue
        if pool not in landing_pools(ctx, ref.pod):
            continue
        seen.add(id(ref.manifest))
        out.pods.append(ref)
        for c in (*ref.pod.spec.init_containers, *ref.pod.spec.containers):
            if not c.image or c.image in out.known or c.image in out.unknown:
                continue
            size = image_size(ctx, c.image)
            if size is None:
                out.unknown.append(c.image)
            else:
                out.known[c.image] = size
    return out


def _gib(n: float) -> str:
    """`n` bytes in Gi, with one decimal only when it is not whole (`20Gi`, `9.5Gi`)."""
    return f"{n / GIB:.1f}".removesuffix(".0") + "Gi"


# ==== STG001 ===================================================================================


@RULES.rule(
    "STG001",
    "gpu-root-volume-too-small",
    "warning",
    summary="A GPU pool's EC2NodeClass has no blockDeviceMappings (the 20Gi default), or a "
    "volume smaller than 2.5x the compressed size (and than compressed + unpacked) of the "
    "images of the GPU pods that can land there.",
    why="containerd keeps the compressed layers and the unpacked snapshot on the same disk: "
    "vLLM images are about 9-12 GiB compressed and 18-29 GiB unpacked, so a 20Gi root volume "
    "fills up (image pull fails, or the kubelet evicts pods for ephemeral storage).",
    fix="Set blockDeviceMappings on the root device (/dev/xvda on AL2023) with volumeSize of "
    "at least 100Gi (the Karpenter blueprint's GPU NodeClass), or instanceStorePolicy: RAID0 "
    "on types with local NVMe.",
    source="Karpenter docs, NodeClasses (blockDeviceMappings); vllm-project/vllm#17163, "
    "#22377; aws-samples/karpenter-blueprints nvidia-gpu-workload/gpu-nodeclass.yaml",
)
def gpu_root_volume_too_small(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_gpu_pool:
            continue
        disk = pool_disk(pool)
        if disk is None or disk.kind == "instance store":
            continue
        images = pool_images(ctx, pool)
        need = max(ROOT_VOLUME_FACTOR * images.compressed, images.compressed + images.uncompressed)
        what = (
            f"{name_list(sorted(images.known), 2)}: {_gib(images.compressed)} compressed, "
            f"{_gib(images.uncompressed)} unpacked"
        )
        if not disk.mapped:
            detail = f"; GPU pods pull {what}" if images.known else ""
            yield ctx.finding(
                "STG001",
                "warning",
                pool.nodeclass,
                disk.path,
                f"GPU EC2NodeClass (NodePool {pool.name}) has no blockDeviceMappings: nodes get "
                f"the {_gib(DEFAULT_EBS_VOLUME_SIZE)} default root volume{detail}",
            )
        elif images.known and disk.size < need:
            n = len(images.unknown)
            unknown = f" ({n} image{'' if n == 1 else 's'} of unknown size not counted)"
            yield ctx.finding(
                "STG001",
                "warning",
                pool.nodeclass,
                (*disk.path, "ebs", "volumeSize") if isinstance(disk.path[-1], int) else disk.path,
                f"volume of {_gib(disk.size)} for NodePool {pool.name} is smaller than "
                f"{_gib(need)} needed for the images of its GPU pods ({what})"
                + (unknown if images.unknown else ""),
            )


# ==== STG002 ===================================================================================


@RULES.rule(
    "STG002",
    "gp3-default-throughput-large-images",
    "info",
    summary="A GPU pool pulls multi-GiB images onto gp3 at the default 125 MiB/s; the message "
    "gives the disk-bound pull estimate.",
    why="On a fresh node the pull is bounded by the root volume: the compressed layers and the "
    "unpacked snapshot are both written, e.g. 9 + 18 GiB of vLLM at 125 MiB/s takes about "
    "3.7 minutes before network and decompression limits.",
    fix="Raise gp3 `throughput` (up to 1000) and `iops`, use instanceStorePolicy: RAID0 on "
    "NVMe types, SOCI parallel pull, or pre-pull images into an EBS snapshot (with "
    "volumeInitializationRate).",
    source="EKS Best Practices AI/ML performance (Optimizing container image pull times; "
    "Consider NVMe for kubelet and containerd storage); aws/karpenter-provider-aws "
    "pkg/apis/v1/ec2nodeclass.go (throughput 125-1000)",
    other=(
        ("warning", f"the estimated image pull takes longer than {PULL_WARNING_S // 60} minutes"),
    ),
)
def gp3_default_throughput(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_gpu_pool:
            continue
        disk = pool_disk(pool)
        if disk is None or disk.kind != "gp3" or not disk.default_throughput:
            continue
        images = pool_images(ctx, pool)
        if images.compressed < LARGE_IMAGES_BYTES:
            continue
        assert disk.throughput is not None
        seconds = pull_seconds(images.compressed, images.uncompressed, disk.throughput)
        fast = pull_seconds(images.compressed, images.uncompressed, 1000)
        severity: Severity = "warning" if seconds > PULL_WARNING_S else "info"
        where = "the default mapping" if not disk.mapped else "gp3 without throughput"
        yield ctx.finding(
            "STG002",
            severity,
            pool.nodeclass,
            disk.path,
            f"NodePool {pool.name} pulls {name_list(sorted(images.known), 2)} "
            f"({_gib(images.compressed)} compressed, {_gib(images.uncompressed)} unpacked) onto "
            f"{where} at {DEFAULT_GP3_THROUGHPUT_MIB_S} MiB/s: about {seconds:.0f} s disk-bound "
            f"per fresh node (about {fast:.0f} s at 1000 MiB/s)",
        )
