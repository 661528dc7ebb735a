"""Spot rules (landscape.md §3.5, cold-start model from §4).

SPOT001. The cold-start estimate is deliberately simple: fixed stage times (the low end of
the typical column of landscape.md §4.5, so the estimate errs short), the image pull bounded by
the pool's disk (`queries.pull_seconds`), and a model-load time for known model-server images.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpucap.apis.gpu import is_model_server
from gpucap.cloudprovider.aws.coldstart import (
    GIB,
    KNOWN_IMAGE_SIZES,
    MODEL_SERVER_WARM_LOAD_S,
    Timings,
)
from gpucap.lint.context import (
    LintContext,
    PodRef,
    PoolView,
    image_size,
    pod_gpus,
)
from gpucap.lint.queries import landing_pools, pool_disk, pull_seconds, spot_types
from gpucap.lint.registry import Finding, Registry

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

# Spot interruption notice (Karpenter docs, disruption: Interruption; EC2 spot docs).
SPOT_NOTICE_S = 120
# Karpenter batch window: BATCH_IDLE_DURATION 1 s (settings.md; landscape.md §4.1). The other
# stage times are the shared cold-start defaults (coldstart.Timings, landscape.md §4.5).
BATCH_S = 1
_TIMINGS = Timings()
LAUNCH_S = _TIMINGS.launch
NODE_READY_S = _TIMINGS.registration
DEVICE_PLUGIN_S = _TIMINGS.device_plugin
MODEL_LOAD_S = MODEL_SERVER_WARM_LOAD_S
# When the pool's disk has no throughput model (io1/io2, ...): assume the gp3 maximum.
UNKNOWN_DISK_MIB_S = 1000


@dataclass(frozen=True, slots=True)
class _Estimate:
    pool: str
    total: float
    stages: list[tuple[str, float, str]]  # (stage, seconds, detail)


def _is_model_server(image: str) -> bool:
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", maxsplit=1)[-1] else image
    return repo in KNOWN_IMAGE_SIZES or is_model_server(image)


def _disk_mib_s(ctx: LintContext, pool: PoolView) -> float:
    key = ("disk_mib_s", id(pool))
    cached: float | None = ctx.memo.get(key)
    if cached is None:
        disk = pool_disk(pool)
        cached = disk.throughput if disk is not None and disk.throughput else UNKNOWN_DISK_MIB_S
        ctx.memo[key] = cached
    return cached


def _estimate(ctx: LintContext, ref: PodRef, pool: PoolView) -> _Estimate:
    mib_s = _disk_mib_s(ctx, pool)
    stages: list[tuple[str, float, str]] = [
        ("launch", BATCH_S + LAUNCH_S, ""),
        ("join", NODE_READY_S, ""),
        ("device plugin", DEVICE_PLUGIN_S, ""),
    ]
    compressed = uncompressed = 0
    for c in (*ref.pod.spec.init_containers, *ref.pod.spec.containers):
        size = image_size(ctx, c.image or "")
        if size is not None:
            compressed += size[0]
            uncompressed += size[1]
    if compressed:
        pull = pull_seconds(compressed, uncompressed, mib_s)
        detail = (
            f" ({_gib(compressed)} compressed + {_gib(uncompressed)} unpacked at {mib_s:.0f} MiB/s)"
        )
        stages.append(("image pull", pull, detail))
    if any(_is_model_server(c.image or "") for c in ref.pod.spec.containers):
        stages.append(("model load", MODEL_LOAD_S, " (warm cache)"))
    return _Estimate(pool.name, sum(s for _, s, _ in stages), stages)


@RULES.rule(
    "SPOT001",
    "spot-cold-start-exceeds-notice",
    "warning",
    summary="A GPU pod can run on spot and either its estimated cold start on a new node or its "
    "terminationGracePeriodSeconds exceeds the 2-minute spot interruption notice.",
    why="Spot gives 2 minutes' notice. If a replacement takes longer to launch, join, register "
    "GPUs, pull the image and load the model, every interruption is an outage for that replica; "
    "a pod with a longer termination period is killed with its node before it finishes.",
    fix="Run latency-sensitive inference on on-demand (a weighted on-demand pool), keep spare "
    "replicas, cut the cold start (pre-pulled images, faster disks, cached models), and keep "
    "terminationGracePeriodSeconds at or below 120.",
    source="Karpenter docs, disruption (Interruption); EKS Best Practices AI/ML (Spot "
    "considerations and use cases)",
)
def spot_cold_start_exceeds_notice(ctx: LintContext) -> Iterable[Finding]:
    seen: set[int] = set()
    for ref in ctx.pods:
        if id(ref.manifest) in seen or pod_gpus(ref.pod) <= 0:
            continue
        pools = [p for p in landing_pools(ctx, ref.pod) if _spot_gpus(ctx, p)]
        if not pools:
            continue
        seen.add(id(ref.manifest))
        names = ", ".join(p.name for p in pools)
        # Pools with the same disk throughput give the same estimate: one per throughput (the
        # first such pool, so `min` still picks the first pool of the lowest total).
        by_speed: dict[float, PoolView] = {}
        for p in pools:
            by_speed.setdefault(_disk_mib_s(ctx, p), p)
        best = min((_estimate(ctx, ref, p) for p in by_speed.values()), key=lambda e: e.total)
        if best.total > SPOT_NOTICE_S:
            parts = " + ".join(f"{label} {s:.0f} s{detail}" for label, s, detail in best.stages)
            yield ctx.finding(
                "SPOT001",
                "warning",
                ref.manifest,
                _image_path(ref),
                f"pod {ref.pod.key} can run on spot (NodePool {names}) but its estimated cold "
                f"start on a new node is about {best.total:.0f} s ({parts}), more than the "
                f"{SPOT_NOTICE_S} s spot notice: each interruption is an outage for this replica",
            )
        grace = ref.pod.spec.termination_grace_period_seconds
        if grace is not None and grace > SPOT_NOTICE_S:
            yield ctx.finding(
                "SPOT001",
                "warning",
                ref.manifest,
                (*ref.base, "terminationGracePeriodSeconds"),
                f"pod {ref.pod.key} can run on spot (NodePool {names}) with "
                f"terminationGracePeriodSeconds {grace} > {SPOT_NOTICE_S}: on an interruption "
                "the node is reclaimed before the pod finishes terminating",
            )


def _spot_gpus(ctx: LintContext, pool: PoolView) -> bool:
    """The pool can launch a GPU type on spot (once per pool, whatever the number of pods)."""
    key = ("spot_gpus", id(pool))
    cached: bool | None = ctx.memo.get(key)
    if cached is None:
        gpu = {id(it) for it in pool.gpu_types}
        cached = ctx.memo[key] = any(id(it) in gpu for it in spot_types(ctx, pool))
    return cached


def _image_path(ref: PodRef) -> tuple[str | int, ...]:
    for i, c in enumerate(ref.pod.spec.containers):
        if _is_model_server(c.image or ""):
            return (*ref.base, "containers", i, "image")
    return (*ref.base, "containers")


def _gib(n: int) -> str:
    """`n` bytes in Gi, with one decimal only when it is not whole (`9Gi`, `9.5Gi`)."""
    return f"{n / GIB:.1f}".removesuffix(".0") + "Gi"
