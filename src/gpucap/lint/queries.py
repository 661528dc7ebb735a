"""What several lint rule families ask of the input, answered once for all of them.

The rule modules of `lint/rules/` are independent of each other (an import-linter contract);
these are the questions more than one family asks: which pools a pod can get a new node from
(`landing_pools`: requirements, taints and whether some launchable type holds its requests),
which of a pool's types can launch as spot (`spot_types`), where a pod's metadata and containers
are in its manifest (`meta_path`, `container_resources`), whether a field was written
(`written`), the image disk of a pool's nodes and the disk-bound pull estimate (`pool_disk`,
`pull_seconds`: the models themselves are `cloudprovider/aws/coldstart.py`, which the simulator
shares), and how to name a few of many (`name_list`). Called by the rule modules; answers that
cost a pass over the pools are memoised in `LintContext.memo`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from gpucap.apis.core import Container, Pod
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.apis.serde import Manifest
from gpucap.cloudprovider.aws import coldstart
from gpucap.cloudprovider.aws.coldstart import NETWORK_MIB_S, DiskModel, image_disk
from gpucap.cloudprovider.aws.instancetype.capacity import (
    DEFAULT_EBS_VOLUME_SIZE,
    INSTANCE_STORE_POLICY_RAID0,
    LABEL_INSTANCE_LOCAL_NVME,
)
from gpucap.lint.context import LintContext, PodRef, PoolView
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.resources import fits, pod_requests
from gpucap.scheduling.taints import untolerated

__all__ = [
    "SPOT",
    "container_resources",
    "landing_pools",
    "meta_path",
    "name_list",
    "pool_disk",
    "pull_seconds",
    "spot_types",
    "tolerates_pool",
    "written",
]

SPOT = "spot"


# ---- where things are in a manifest ------------------------------------------------------------


def written(manifest: Manifest, path: Sequence[str | int]) -> bool:
    """Whether the manifest's text has the field at `path` (not a default filled in on load)."""
    return tuple(path) in manifest.source.lines


def meta_path(ref: PodRef) -> tuple[str | int, ...]:
    """Where the pod's metadata is in its manifest (`metadata`, or the template's)."""
    return (*ref.base[:-1], "metadata")


def name_list(names: Iterable[str], limit: int = 3) -> str:
    items = list(names)
    head = ", ".join(items[:limit])
    return f"{head} and {len(items) - limit} more" if len(items) > limit else head


def container_resources(
    ref: PodRef,
) -> Iterator[tuple[tuple[str | int, ...], Container]]:
    """(path of the container in the manifest, container) for containers and init containers."""
    spec = ref.pod.spec
    for field, containers in (
        ("containers", spec.containers),
        ("initContainers", spec.init_containers),
    ):
        for i, c in enumerate(containers):
            yield (*ref.base, field, i), c


# ---- which pools a pod can land on ------------------------------------------------------------
def tolerates_pool(pod: Pod, pool: PoolView) -> bool:
    """Karpenter's scheduler: every taint of the pool (whatever its effect) is tolerated."""
    return untolerated(pool.template.taints, pod.spec.tolerations) is None


def landing_pools(ctx: LintContext, pod: Pod) -> list[PoolView]:
    """Pools a pod can get a new node from: their requirements meet the pod's node selector and
    required affinity, the pod tolerates their taints, and a launchable type compatible with the
    pod holds its requests (DaemonSet overhead not subtracted)."""
    requests = pod_requests(pod.spec)
    reqs = pod_requirements(pod, strict=True)
    # Keyed by what the answer depends on, so alike pods share one pass over the pools.
    key = (
        "landing_pools",
        reqs,
        tuple(pod.spec.tolerations),
        tuple(sorted(requests.items())),
    )
    cached: list[PoolView] | None = ctx.memo.get(key)
    if cached is not None:
        return cached
    result = [
        pool
        for pool in ctx.pools_for_pod(pod)
        if tolerates_pool(pod, pool)
        and any(
            it.is_compatible(reqs) and fits(requests, it.allocatable) for it in pool.instance_types
        )
    ]
    ctx.memo[key] = result
    return result


def spot_types(ctx: LintContext, pool: PoolView) -> list[InstanceType]:
    """Launchable types with an available spot offering the pool's requirements allow.

    Memoised by the pool's type list (pools with the same requirements on type keys share it)
    and its zone and capacity-type requirements, the only keys offerings depend on."""
    reqs = pool.template.requirements
    key = ("spot_types", id(pool.instance_types), reqs.get(ZONE), reqs.get(CAPACITY_TYPE))
    cached: list[InstanceType] | None = ctx.memo.get(key)
    if cached is None:
        cached = ctx.memo[key] = [
            it
            for it in pool.instance_types
            if any(
                o.available and o.capacity_type == SPOT and o.allowed_by(reqs) for o in it.offerings
            )
        ]
    return cached


# ---- the image disk and the pull -------------------------------------------------------------
def pull_seconds(compressed: int, uncompressed: int, throughput_mib_s: float) -> float:
    """Lint's pull estimate for a pool: `coldstart.pull_seconds` bound by the pool's disk and a
    10 Gbps line-rate download (a pool has many instance types, so no EBS bound)."""
    return coldstart.pull_seconds(
        compressed,
        uncompressed,
        disk_mib_s=throughput_mib_s,
        ebs_mib_s=None,
        network_mib_s=NETWORK_MIB_S,
    )


def _uses_instance_store(pool: PoolView, nodeclass: EC2NodeClass) -> bool:
    if nodeclass.spec.instance_store_policy != INSTANCE_STORE_POLICY_RAID0:
        return False
    types = pool.gpu_types or pool.instance_types
    return bool(types) and all(
        any(
            v not in ("", "0")
            for v in it.requirements.get_or_exists(LABEL_INSTANCE_LOCAL_NVME).values
        )
        for it in types
    )


def pool_disk(pool: PoolView) -> DiskModel | None:
    """The image disk of a pool's nodes (`coldstart.image_disk` for the smallest ephemeral
    storage among the pool's GPU types), or None without an EC2NodeClass."""
    nodeclass = pool.ec2nodeclass
    if nodeclass is None or pool.nodeclass is None:
        return None
    types = pool.gpu_types or pool.instance_types
    sizes = [it.capacity.get("ephemeral-storage", 0) for it in types]
    size = min(sizes) if sizes else DEFAULT_EBS_VOLUME_SIZE
    return image_disk(nodeclass, size=size, instance_store=_uses_instance_store(pool, nodeclass))
