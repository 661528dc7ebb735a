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

The pods judged here are the pods as EKS's API server stores them (`apis/admission.py`): a pod
that requests nvidia.com/gpu tolerates the `nvidia.com/gpu` NoSchedule taint without writing it,
so POD002 is about the other taints of a GPU pool.

POD005: GPU Feature Discovery (and Node Feature Discovery) label a node only once it runs, so a
pod that requires one of their labels needs a NodePool that declares it; otherwise Karpenter
finds no pool for it ("label ... does not have known values", `scheduling/requirements.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpucap.apis.admission import is_extended_resource
from gpucap.apis.core import Pod, Toleration
from gpucap.apis.labels import INSTANCE_GPU_MEMORY, INSTANCE_GPU_NAME
from gpucap.lint.context import GPU_RESOURCE, LintContext, PodRef, PoolView, pod_gpus
from gpucap.lint.queries import container_resources
from gpucap.lint.registry import Finding, Registry
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.taints import format_taint, untolerated

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

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
@RULES.rule(
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
    source="Kubernetes docs, Schedule GPUs (kubernetes.io/docs/tasks/manage-gpus/"
    "scheduling-gpus/); Kubernetes docs, pod-level resources (cpu and memory only)",
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
@RULES.rule(
    "POD002",
    "gpu-pod-missing-toleration",
    "error",
    summary="A pod requests nvidia.com/gpu but does not tolerate the taints of any GPU NodePool it "
    "could otherwise use. EKS's admission already tolerates the NoSchedule taint whose key is the "
    "resource name (nvidia.com/gpu) for such a pod, so this is about the other taints.",
    why="Karpenter skips NodePools whose taints a pod does not tolerate (startup taints excepted), "
    "so no GPU node is ever launched for it and it stays Pending. The API server's "
    "ExtendedResourceToleration plugin (enabled on every EKS platform version) adds only "
    "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}; a taint with another key, or "
    "nvidia.com/gpu with effect NoExecute, still needs a toleration written in the pod.",
    fix="Add a toleration for the GPU pool's taint (its key, value and effect), or drop that "
    "taint from the pool.",
    source="Karpenter docs, scheduling (Taints and Tolerations); kubernetes/kubernetes "
    "plugin/pkg/admission/extendedresourcetoleration/admission.go",
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
        path = (*ref.base, "tolerations") if _written(ref.pod) else _gpu_limit_path(ref)
        yield ctx.finding(
            "POD002",
            "error",
            ref.manifest,
            path,
            f"requests {pod_gpus(ref.pod)} {GPU_RESOURCE} but tolerates the taints of no GPU "
            f"NodePool it could use ({detail}): Karpenter skips those pools and the pod stays "
            "Pending",
        )


def _written(pod: Pod) -> list[Toleration]:
    """The pod's tolerations other than those the admission plugin adds (`apis/admission.py`):
    a finding points at `tolerations` only when the manifest has them."""
    return [
        t
        for t in pod.spec.tolerations
        if not (
            t.operator == "Exists"
            and t.effect == "NoSchedule"
            and not t.value
            and t.key is not None
            and is_extended_resource(t.key)
        )
    ]


# ---- POD003 ---------------------------------------------------------------------------------
@RULES.rule(
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


@RULES.rule(
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
            f", with as little as {memories[0] // 1024} GiB of GPU memory"
            if len(memories) > 1
            else ""
        )
        which = "NodePool" if len(pools) == 1 else "NodePools"
        yield ctx.finding(
            "POD004",
            "info",
            ref.manifest,
            _gpu_limit_path(ref),
            f"requests {GPU_RESOURCE} without a GPU-model selector, and {which} "
            f"{', '.join(p.name for p in pools)} can give it {listed}: it may land on a "
            f"different GPU than intended{memory_note}; pin "
            "karpenter.k8s.aws/instance-gpu-name or a minimum instance-gpu-memory",
        )


# ---- POD005 ---------------------------------------------------------------------------------
# Label namespaces written on a node by a DaemonSet once the node runs: GPU Feature Discovery's
# and the GPU Operator's (nvidia.com/gpu.product, nvidia.com/gpu.present, nvidia.com/cuda.*,
# nvidia.com/mig.*, ...) and Node Feature Discovery's. Karpenter cannot know them before it
# launches the node.
# (The bare nvidia.com/gpu is a resource name; a pool may label its nodes with it, not GFD.)
DISCOVERED_LABEL_PREFIXES = (
    "nvidia.com/gpu.",
    "nvidia.com/cuda.",
    "nvidia.com/mig.",
    "nvidia.com/mps.",
    "nvidia.com/vgpu.",
    "nvidia.com/gfd.",
    "feature.node.kubernetes.io/",
)
_REQUIRING = ("In", "Exists", "Gt", "Lt")


def _discovered(key: str) -> bool:
    return key.startswith(DISCOVERED_LABEL_PREFIXES)


def _defined_keys(ctx: LintContext) -> frozenset[str]:
    """Every label key some NodePool declares (template labels and requirements)."""
    key = ("defined_label_keys",)
    cached: frozenset[str] | None = ctx.memo.get(key)
    if cached is None:
        cached = frozenset(k for pool in ctx.pools for k in pool.template.requirements)
        ctx.memo[key] = cached
    return cached


def _undefined_discovered(
    pod: Pod, defined: frozenset[str]
) -> tuple[str, tuple[str | int, ...]] | None:
    """The first discovered label the pod requires and no pool declares, with its path under
    the pod spec; None when there is none. A required node-affinity term counts only when every
    term requires one (Karpenter drops a failing term while another is left)."""
    for k in pod.spec.node_selector:
        if _discovered(k) and k not in defined:
            return k, ("nodeSelector", k)
    aff = pod.spec.affinity
    required = (
        None
        if aff is None or aff.node_affinity is None
        else (aff.node_affinity.required_during_scheduling_ignored_during_execution)
    )
    if required is None or not required.node_selector_terms:
        return None
    found: list[tuple[str, tuple[str | int, ...]]] = []
    for t, term in enumerate(required.node_selector_terms):
        hit = next(
            (
                (r.key, (t, "matchExpressions", j, "key"))
                for j, r in enumerate(term.match_expressions)
                if r.operator in _REQUIRING and _discovered(r.key) and r.key not in defined
            ),
            None,
        )
        if hit is None:
            return None
        found.append(hit)
    k, sub = found[0]
    return k, (
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
        *sub,
    )


@RULES.rule(
    "POD005",
    "pod-requires-discovered-label",
    "error",
    summary="A pod's node selector or required node affinity requires a GPU Feature Discovery or "
    "Node Feature Discovery label (nvidia.com/gpu.present, nvidia.com/gpu.product, "
    "feature.node.kubernetes.io/...) that no NodePool declares.",
    why="Those labels are written on a node by a DaemonSet after the node has started. Karpenter "
    "decides before launching, from the NodePool's template labels and requirements (and its "
    "well-known labels): a label no pool declares has no known values, so no pool fits and the "
    "pod stays Pending.",
    fix="Add the label to the NodePool's template labels (or a requirement on it) for the pool "
    "meant to run the pod, or drop the selector (select the GPU with "
    "karpenter.k8s.aws/instance-gpu-name or the nvidia.com/gpu resource request instead).",
    source="kubernetes-sigs/karpenter pkg/scheduling/requirements.go (Compatible: label does "
    "not have known values); "
    "NVIDIA GPU Feature Discovery labels",
)
def pod_requires_discovered_label(ctx: LintContext) -> Iterable[Finding]:
    if not ctx.pools:
        return  # the pools are elsewhere: nothing to judge against
    defined = _defined_keys(ctx)
    for ref in ctx.pods:
        if ref.pod.spec.node_name:
            continue  # bound already: Karpenter does not schedule it
        hit = _undefined_discovered(ref.pod, defined)
        if hit is None:
            continue
        label, sub = hit
        yield ctx.finding(
            "POD005",
            "error",
            ref.manifest,
            (*ref.base, *sub),
            f"requires node label {label}, which GPU/Node Feature Discovery sets only on a "
            "running node and no NodePool declares: Karpenter finds no pool for the pod "
            f'(label "{label}" does not have known values) and it stays Pending; add {label} to '
            "the NodePool's template labels or requirements, or drop the selector",
        )
