"""Pod-spec rules for GPU workloads (landscape.md §3.3).

POD001 and the loader: a container that requests an extended resource such as nvidia.com/gpu
without an equal limit is rejected while loading (SCHEMA001, as the API server rejects it), so it
never reaches the rules. What the loader lets through, and POD001 checks, is a GPU resource in the
*pod-level* `spec.resources` (Kubernetes PodLevelResources): the API server accepts only cpu and
memory there, and even where it is written the device plugin allocates GPUs per container, so the
containers get none.

"A pool the pod can use" (POD002-POD004): its requirements are compatible with the pod's node
selector and first required node-affinity term, and, for a GPU pod, one of its NVIDIA GPU
instance types is; for POD003/POD004 the pod must also tolerate the pool's taints
(PreferNoSchedule taints are ignored: Karpenter tolerates them as a last relaxation step).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpucap.apis.core import Pod
from gpucap.apis.labels import INSTANCE_GPU_MEMORY, INSTANCE_GPU_NAME
from gpucap.lint.context import GPU_RESOURCE, LintContext, PodRef, PoolView, pod_gpus
from gpucap.lint.model import Finding, rule
from gpucap.lint.rules.sharing import container_resources
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.solver import pod_requirements
from gpucap.scheduling.taints import format_taint, untolerated

__all__: list[str] = []

CONSOLIDATING_POLICIES = ("WhenEmptyOrUnderutilized", "Balanced")
GPU_RESOURCE_PREFIX = "nvidia.com/"


def _usable_pools(ctx: LintContext, pod: Pod, *, gpu: bool) -> list[PoolView]:
    """Pools whose requirements (and, for a GPU pod, GPU instance types) the pod can meet."""
    reqs = pod_requirements(pod, strict=True)
    key = ("usable_pools", reqs, gpu)  # alike pods share one pass over the pools
    cached: list[PoolView] | None = ctx.memo.get(key)
    if cached is not None:
        return cached
    out = []
    for pool in ctx.pools_for_pod(pod):
        types = pool.gpu_types if gpu else pool.instance_types
        if any(it.is_compatible(reqs) for it in types):
            out.append(pool)
    ctx.memo[key] = out
    return out


def _blocking_taint(pool: PoolView, pod: Pod) -> str | None:
    taints = [t for t in pool.template.taints if t.effect != "PreferNoSchedule"]
    taint = untolerated(taints, pod.spec.tolerations)
    return format_taint(taint) if taint is not None else None


def _gpu_limit_path(ref: PodRef) -> tuple[str | int, ...]:
    for path, c in container_resources(ref):
        if GPU_RESOURCE in c.resources.limits or GPU_RESOURCE in c.resources.requests:
            return (*path, "resources", "limits", GPU_RESOURCE)
    return ref.base


# ---- POD001 ---------------------------------------------------------------------------------
@rule(
    "POD001",
    "gpu-request-without-limit",
    "error",
    summary="A GPU is requested somewhere other than a container's limits: at pod level "
    "(spec.resources). (A container request without an equal limit is rejected on load, "
    "SCHEMA001.)",
    why="GPUs are extended resources: a container must set them in limits (requests, if given, "
    "equal). Pod-level resources accept only cpu and memory, so the API server rejects a GPU "
    "there; and the device plugin allocates GPUs per container, so the containers would get "
    "none and the scheduler and Karpenter would not count it.",
    fix="Move the GPU to limits of the container that uses it "
    "(resources.limits.nvidia.com/gpu: N).",
    source="kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/; Kubernetes pod-level "
    "resources (cpu and memory only)",
)
def gpu_request_without_limit(ctx: LintContext) -> Iterable[Finding]:
    for ref in ctx.pods:
        level = ref.pod.spec.resources
        if level is None:
            continue
        for field, values in (("limits", level.limits), ("requests", level.requests)):
            for name in sorted(values):
                if not name.startswith(GPU_RESOURCE_PREFIX):
                    continue
                if field == "requests" and name in level.limits:
                    continue  # defaulted from the limit: reported once, on the limit
                yield ctx.finding(
                    "POD001",
                    "error",
                    ref.manifest,
                    (*ref.base, "resources", field, name),
                    f"{name} is set in pod-level resources.{field}: the API server accepts only "
                    "cpu and memory there, and GPUs are allocated per container, so no container "
                    f"would get it; set it in a container's limits",
                )


# ---- POD002 ---------------------------------------------------------------------------------
@rule(
    "POD002",
    "gpu-pod-missing-toleration",
    "error",
    summary="A pod requests nvidia.com/gpu but does not tolerate the taints of any GPU NodePool it "
    "could otherwise use.",
    why="Karpenter skips NodePools whose taints a pod does not tolerate (startup taints excepted), "
    "so no GPU node is ever launched for it and it stays Pending.",
    fix="Add a toleration for the GPU pool's taint (for example key nvidia.com/gpu, operator "
    "Exists, effect NoSchedule).",
    source="Karpenter scheduling (taints and tolerations); EKS Best Practices Karpenter (GPU "
    "NodePool example)",
)
def gpu_pod_missing_toleration(ctx: LintContext) -> Iterable[Finding]:
    for ref in ctx.pods:
        if pod_gpus(ref.pod) <= 0:
            continue
        pools = _usable_pools(ctx, ref.pod, gpu=True)
        blocked = [(pool, _blocking_taint(pool, ref.pod)) for pool in pools]
        if not blocked or any(taint is None for _, taint in blocked):
            continue
        detail = "; ".join(f"NodePool {pool.name} has {taint}" for pool, taint in blocked)
        path = (*ref.base, "tolerations") if ref.pod.spec.tolerations else _gpu_limit_path(ref)
        yield ctx.finding(
            "POD002",
            "error",
            ref.manifest,
            path,
            f"requests {pod_gpus(ref.pod)} {GPU_RESOURCE} but tolerates the taints of no GPU "
            f"NodePool it could use ({detail}): Karpenter skips those pools and the pod stays "
            "Pending",
        )


# ---- POD003 ---------------------------------------------------------------------------------
@rule(
    "POD003",
    "non-cpu-requests-not-equal-limits",
    "warning",
    summary="A container's memory (or other non-CPU) limit is above its request, and the pod can "
    "run on a NodePool that consolidates underutilized nodes (WhenEmptyOrUnderutilized, "
    "Balanced).",
    why="Consolidation bin-packs nodes by requests only. A pod that relies on memory above its "
    "request is moved to a node that may not have it, and is OOM-killed or evicted; for a model "
    "server that is a restart and a model reload.",
    fix="Set requests equal to limits for memory and ephemeral-storage (keep CPU limits off or "
    "above requests), or run the pod on a WhenEmpty pool.",
    source="EKS Best Practices Karpenter (Configure requests=limits for all non-CPU resources "
    "when using consolidation)",
)
def non_cpu_requests_not_equal_limits(ctx: LintContext) -> Iterable[Finding]:
    for ref in ctx.pods:
        pools = [
            pool
            for pool in _usable_pools(ctx, ref.pod, gpu=pod_gpus(ref.pod) > 0)
            if pool.nodepool.spec.disruption.consolidation_policy in CONSOLIDATING_POLICIES
            and not pool.is_static  # Karpenter never consolidates a static pool
            and _blocking_taint(pool, ref.pod) is None
        ]
        if not pools:
            continue
        pool = pools[0]
        policy = pool.nodepool.spec.disruption.consolidation_policy
        for path, c in container_resources(ref):
            for name in sorted(c.resources.limits):
                if name == "cpu" or "/" in name:
                    continue  # extended resources: requests must equal limits (loader)
                limit = c.resources.limits[name]
                request = c.resources.requests.get(name)
                if request is None or not request < limit:
                    continue
                yield ctx.finding(
                    "POD003",
                    "warning",
                    ref.manifest,
                    (*path, "resources", "limits", name),
                    f"container {c.name}: {name} limit {limit} is above its request {request}, "
                    f"and NodePool {pool.name} (consolidationPolicy {policy}) can run this pod: "
                    "consolidation packs by requests, so the node it is moved to may not have "
                    f"the extra {name} (OOM kill or eviction)",
                )


# ---- POD004 ---------------------------------------------------------------------------------
def _gpu_model(it: InstanceType) -> tuple[str, int] | None:
    name = it.requirements.get(INSTANCE_GPU_NAME)
    memory = it.requirements.get(INSTANCE_GPU_MEMORY)
    if name is None or memory is None or name.operator != "In" or memory.operator != "In":
        return None
    try:
        return name.any(), int(memory.any())
    except ValueError:
        return None


def _first_of_name(ctx: LintContext, pool: PoolView) -> dict[str, InstanceType]:
    """The pool's first GPU type of each name (what the model of a type name is read from)."""
    key = ("first_gpu_type_of_name", id(pool))
    cached: dict[str, InstanceType] | None = ctx.memo.get(key)
    if cached is None:
        cached = {}
        for it in pool.gpu_types:
            cached.setdefault(it.name, it)
        ctx.memo[key] = cached
    return cached


def _gpu_models(ctx: LintContext, pod: Pod) -> tuple[list[PoolView], dict[str, set[int]]]:
    """The pools a GPU pod can use (untainted for it) and the GPU models and memories their
    compatible GPU types offer; computed once per (requirements, tolerations)."""
    reqs = pod_requirements(pod, strict=True)
    key = ("gpu_models", reqs, tuple(pod.spec.tolerations))
    cached: tuple[list[PoolView], dict[str, set[int]]] | None = ctx.memo.get(key)
    if cached is not None:
        return cached
    models: dict[str, set[int]] = {}
    pools = [
        pool for pool in _usable_pools(ctx, pod, gpu=True) if _blocking_taint(pool, pod) is None
    ]
    for pool in pools:
        first = _first_of_name(ctx, pool)
        for it in pool.gpu_types:
            if not it.is_compatible(reqs):
                continue
            model = _gpu_model(first[it.name])
            if model is not None:
                models.setdefault(model[0], set()).add(model[1])
    ctx.memo[key] = (pools, models)
    return pools, models


@rule(
    "POD004",
    "gpu-pod-no-gpu-type-selector",
    "info",
    summary="A GPU pod does not pin the GPU model or memory (instance-gpu-name, "
    "instance-gpu-memory, instance type or family) while the NodePools it can use offer "
    "different GPUs.",
    why="Karpenter picks the cheapest instance type that fits the requests, whatever its GPU. "
    "Without a selector the pod can land on a GPU with less memory than the model needs (OOM at "
    "load) or a slower one.",
    fix="Add a nodeSelector or required node affinity on karpenter.k8s.aws/instance-gpu-name, or "
    "karpenter.k8s.aws/instance-gpu-memory Gt <MiB the model needs>.",
    source="EKS Best Practices AI/ML (Schedule workloads with GPU requirements using Well-Known "
    "labels; GPU memory)",
)
def gpu_pod_no_gpu_type_selector(ctx: LintContext) -> Iterable[Finding]:
    for ref in ctx.pods:
        if pod_gpus(ref.pod) <= 0:
            continue
        pools, models = _gpu_models(ctx, ref.pod)
        if len(models) <= 1:
            continue
        memories = sorted({m for ms in models.values() for m in ms})
        listed = ", ".join(
            f"{name} ({'/'.join(f'{m // 1024} GiB' for m in sorted(ms))})"
            for name, ms in sorted(models.items())
        )
        memory_note = (
            f" with as little as {memories[0] // 1024} GiB of GPU memory"
            if len(memories) > 1
            else ""
        )
        yield ctx.finding(
            "POD004",
            "info",
            ref.manifest,
            _gpu_limit_path(ref),
            f"requests {GPU_RESOURCE} without a GPU-model selector, and NodePool "
            f"{', '.join(p.name for p in pools)} can give it {listed}: it may land on a "
            f"different GPU{memory_note} than intended; pin "
            "karpenter.k8s.aws/instance-gpu-name or a minimum instance-gpu-memory",
        )
