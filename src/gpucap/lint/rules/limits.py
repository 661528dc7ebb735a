"""NP004: limits and requests no NodePool can ever meet (landscape.md §3.4).

A pool limit below its smallest allowed instance type, or a GPU limit the allowed GPU counts
can only partly reach, is a warning. A pod is an error when no pool it can use can ever launch
a node for it: too many GPUs for every compatible type, or requests (cpu, memory, ephemeral
storage, an extended resource the types list) that no compatible type's allocatable holds
beside the DaemonSet pods `plan` puts on that type, or only types above a limit. Karpenter's
scheduler checks the same (`scheduling/filter.py`: the requirements, the requests with the
DaemonSet overhead, the remaining limits), so the pod stays Pending whatever the cluster does.
Kept apart from the other NodePool rules (`nodepool.py`) for its size. Registered into
`rules.ALL` by `lint/rules/__init__.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from gpucap.apis.core import Node, Pod
from gpucap.apis.nodepool import NodePool
from gpucap.apis.quantity import base_units, format_resource_value
from gpucap.lint.context import GPU_RESOURCE, LintContext, PodRef, PoolView, pod_gpus
from gpucap.lint.queries import tolerates_pool
from gpucap.lint.registry import Finding, Registry
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import build_daemon_groups, daemon_pod
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources, add, fits, pod_requests

__all__ = ["RULES"]

# This family's rule; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()


# ==== NP004 ====================================================================================


def _reachable(total: int, sizes: set[int]) -> int:
    """The largest sum <= total of any number of items of the given sizes."""
    ok = [False] * (total + 1)
    ok[0] = True
    for n in range(1, total + 1):
        ok[n] = any(s <= n and ok[n - s] for s in sizes)
    return max(n for n in range(total + 1) if ok[n])


_MAX_REACH_CHECK = 10_000  # GPU limits above this are not checked for exact reachability


@RULES.rule(
    "NP004",
    "limit-unreachable",
    "warning",
    summary="A NodePool limit is below the smallest allowed instance type (or GPU limits can "
    "only be partly used), or a pod requests more (GPUs, cpu, memory...) than any type it may "
    "use holds.",
    why="Karpenter drops every instance type whose capacity would exceed the remaining limits "
    '("all available instance types exceed limits for nodepool"), and a new node must hold the '
    "pod's requests plus the DaemonSet pods that would run on it within the type's allocatable "
    "(its capacity less kube-reserved, system-reserved and the eviction threshold): a pod that "
    "no allowed type can hold, or only a type above a limit, stays Pending.",
    fix="Raise the limit to a multiple of the allowed types' capacity, widen the allowed "
    "instance types (instance-gpu-count, instance-size, larger families), or lower the pod's "
    "request.",
    source="aws/karpenter-provider-aws#6328, #8068, #7038; kubernetes-sigs/karpenter "
    "pkg/controllers/provisioning/scheduling/nodeclaim.go and scheduler.go (the instance-type "
    "filter: requirements, requests with DaemonSet overhead, remaining limits)",
    other=(
        (
            "error",
            "a pod can never be scheduled: every NodePool it can use has no compatible type "
            "with that many GPUs or that much cpu, memory or another resource (after "
            "kube-reserved and DaemonSet overhead), or a limit below the smallest type that "
            "fits it",
        ),
    ),
)
def limit_unreachable(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        limits = pool.nodepool.spec.limits
        if not limits or not pool.instance_types:
            continue
        for resource, value in base_units(limits).items():
            types = pool.gpu_types if resource == GPU_RESOURCE else pool.instance_types
            sizes = {it.capacity.get(resource, 0) for it in types} - {0}
            if not sizes:
                continue
            path = ("spec", "limits", resource)
            smallest = min(sizes)
            text = _amount(resource, value)
            if value < smallest:
                holder = min(
                    (it for it in types if it.capacity.get(resource, 0) == smallest),
                    key=lambda it: it.name,
                )
                yield ctx.finding(
                    "NP004",
                    "warning",
                    pool.manifest,
                    path,
                    f"limit {resource}: {text} is below the smallest allowed instance type "
                    f"({holder.name} has {_amount(resource, smallest)}): the pool "
                    "can never launch a node" + (" with GPUs" if resource == GPU_RESOURCE else ""),
                )
            elif resource == GPU_RESOURCE and value <= _MAX_REACH_CHECK:
                reach = _reachable(value, sizes)
                if reach < value:
                    counts = ", ".join(str(s) for s in sorted(sizes))
                    yield ctx.finding(
                        "NP004",
                        "warning",
                        pool.manifest,
                        path,
                        f"limit {resource}: {text} cannot be reached with the allowed GPU counts "
                        f"per node ({counts}): at most {reach} GPUs can be launched",
                    )
    flagged: set[int] = set()
    yield from _gpu_requests_unreachable(ctx, flagged)
    yield from _requests_unreachable(ctx, flagged)


def _fitting_gpus(ctx: LintContext, pool: PoolView, reqs: Requirements, gpus: int) -> list[int]:
    """The GPU counts of the pool's compatible GPU types that hold `gpus` (once per pool,
    requirements and count)."""
    key = ("fitting_gpus", id(pool), reqs, gpus)
    cached: list[int] | None = ctx.memo.get(key)
    if cached is None:
        cached = sorted(
            n
            for it in pool.gpu_types
            if it.is_compatible(reqs) and (n := it.capacity.get(GPU_RESOURCE, 0)) >= gpus
        )
        ctx.memo[key] = cached
    return cached


def _most_gpus(ctx: LintContext, pool: PoolView, reqs: Requirements) -> int:
    """The most GPUs a compatible GPU type of the pool has (once per pool and requirements)."""
    key = ("most_gpus", id(pool), reqs)
    cached: int | None = ctx.memo.get(key)
    if cached is None:
        cached = max(
            (it.capacity.get(GPU_RESOURCE, 0) for it in pool.gpu_types if it.is_compatible(reqs)),
            default=0,
        )
        ctx.memo[key] = cached
    return cached


def _gpu_requests_unreachable(ctx: LintContext, seen: set[int]) -> Iterable[Finding]:
    """A GPU pod no NodePool it can use can ever launch a node for: every such pool either has
    no compatible type with that many GPUs, or a GPU limit below the smallest type that has
    them (Karpenter drops a type whose capacity exceeds the remaining limit, and with nothing
    launched the remaining limit is the limit). Both are certain, so an error: the pod stays
    Pending whatever the cluster's state. The manifests it reports are added to `seen`."""
    for ref in ctx.pods:
        gpus = pod_gpus(ref.pod)
        if gpus <= 0 or id(ref.manifest) in seen:
            continue
        reqs = pod_requirements(ref.pod, strict=True)
        candidates = [
            p
            for p in ctx.pools_for_pod(ref.pod)
            if p.can_launch_gpus and tolerates_pool(ref.pod, p)
        ]
        if not candidates:
            continue  # no GPU pool for this pod at all: the pod rules say why
        problems: list[str] = []
        for pool in candidates:
            fitting = _fitting_gpus(ctx, pool, reqs, gpus)
            limit = base_units(pool.nodepool.spec.limits or {}).get(GPU_RESOURCE)
            if fitting and (limit is None or limit >= fitting[0]):
                break  # some pool can take it
            if not fitting:
                problems.append(
                    f"{pool.name} allows at most {_most_gpus(ctx, pool, reqs)} per node"
                )
            else:
                problems.append(
                    f"{pool.name} is limited to {limit} and its smallest type that holds them "
                    f"has {fitting[0]}"
                )
        else:
            seen.add(id(ref.manifest))
            path = _gpu_request_path(ref)
            yield ctx.finding(
                "NP004",
                "error",
                ref.manifest,
                path,
                f"pod {ref.pod.key} requests {gpus} nvidia.com/gpu but no NodePool it can use "
                f"can launch a node for it ({'; '.join(problems)}): it stays Pending",
            )


def _gpu_request_path(ref: PodRef) -> tuple[str | int, ...]:
    for i, c in enumerate(ref.pod.spec.containers):
        for kind in ("limits", "requests"):
            if GPU_RESOURCE in getattr(c.resources, kind):
                return (*ref.base, "containers", i, "resources", kind, GPU_RESOURCE)
    return (*ref.base, "containers")


# The resources NP004's messages name first; the others follow by name.
_FIRST = ("cpu", "memory")


def _amount(resource: str, value: int) -> str:
    """`value` (base units) in the units a reader compares: cpu in cores (`191.45`), memory and
    storage from 1Gi on in Gi with one decimal at most (`702.1Gi`), the rest as Kubernetes
    writes them."""
    if resource == "cpu":
        return f"{value / 1000:.3f}".rstrip("0").rstrip(".")
    if resource in ("memory", "ephemeral-storage") and value >= 2**30:
        tenths = value * 10 // 2**30  # rounded down: "at most" never reads larger than it is
        return f"{tenths // 10}.{tenths % 10}".removesuffix(".0") + "Gi"
    return format_resource_value(resource, value)


def _resource_order(resource: str) -> tuple[bool, str]:
    """cpu, then memory, then the rest by name."""
    return (resource not in _FIRST, resource)


def _requests_unreachable(ctx: LintContext, flagged: set[int]) -> Iterable[Finding]:
    """A pod whose requests no NodePool it can use can ever launch a node for, whatever it
    asks for (cpu, memory, ephemeral storage, an extended resource; GPU counts alone are
    `_gpu_requests_unreachable`'s, whose manifests are in `flagged`): in every such pool either
    no compatible type holds the requests together with Karpenter's `pods: 1` and the DaemonSet
    overhead of that type (its allocatable is already net of kube-reserved, system-reserved and
    the eviction threshold), or every type that holds them is above one of the pool's limits.
    Karpenter's scheduler checks exactly these (`scheduling/filter.py`), so the pod stays
    Pending: an error."""
    seen = set(flagged)
    for ref in ctx.pods:
        if id(ref.manifest) in seen or ref.pod.spec.node_name:
            continue  # reported already, or bound to a node: it runs somewhere
        verdict = _never_fits(ctx, ref.pod)
        if verdict is None:
            continue
        seen.add(id(ref.manifest))
        named, problems = verdict
        requests = pod_requests(ref.pod.spec)
        shown = named or sorted(
            (r for r, v in requests.items() if v > 0 and r != GPU_RESOURCE), key=_resource_order
        )
        what = " and ".join(f"{_amount(r, requests[r])} {r}" for r in shown)
        yield ctx.finding(
            "NP004",
            "error",
            ref.manifest,
            _request_path(ref, shown[0]) if shown else (*ref.base, "containers"),
            f"pod {ref.pod.key} requests {what} but no NodePool it can use can launch a node "
            f"for it ({'; '.join(problems)}): it stays Pending",
        )


def _never_fits(ctx: LintContext, pod: Pod) -> tuple[list[str], list[str]] | None:
    """Why no pool `pod` can use can launch a node for it: the resources to name and one
    problem per pool; None when some pool can, or when it can use no pool at all (the pod
    rules say why). Memoised by what the answer depends on, so alike pods share it."""
    requests = {r: v for r, v in pod_requests(pod.spec).items() if v > 0}
    requests["pods"] = 1  # Karpenter's accounting (`requests_for_pods`)
    reqs = pod_requirements(pod, strict=True)
    gpu = requests.get(GPU_RESOURCE, 0) > 0
    key = ("never_fits", reqs, tuple(pod.spec.tolerations), tuple(sorted(requests.items())))
    if key in ctx.memo:
        cached: tuple[list[str], list[str]] | None = ctx.memo[key]
        return cached
    if _elsewhere(ctx, requests):
        ctx.memo[key] = None
        return None
    candidates = [
        p
        for p in ctx.pools_for_pod(pod)
        if tolerates_pool(pod, p) and (p.can_launch_gpus or not gpu)
    ]
    named: list[str] = []
    problems: list[str] = []
    result: tuple[list[str], list[str]] | None = None
    for pool in candidates:
        refusal = _pool_refusal(ctx, pool, reqs, requests)
        if refusal is None:
            break  # some pool can take it
        for r in refusal[0]:
            if r not in named:
                named.append(r)
        problems.append(refusal[1])
    else:
        if candidates:
            result = (sorted(named, key=_resource_order), problems)
    ctx.memo[key] = result
    return result


def _elsewhere(ctx: LintContext, requests: Mapping[str, int]) -> bool:
    """Whether the pod might run where lint does not look: the input has a NodePool of the KWOK
    provider (left out of `ctx.pools`; its fake types may hold anything), or a Node whose
    allocatable holds the requests (labels and taints not compared: a maybe is enough)."""
    key = ("elsewhere",)
    found: tuple[bool, list[dict[str, int]]] | None = ctx.memo.get(key)
    if found is None:
        kwok = any(np.spec.template.spec.node_class_ref.is_kwok for np in ctx.of_kind(NodePool))
        nodes = [base_units(n.status.allocatable) for n in ctx.of_kind(Node)]
        found = ctx.memo[key] = (kwok, nodes)
    kwok, nodes = found
    if kwok:
        return True
    asked = {r: v for r, v in requests.items() if r != "pods"}
    return any(fits(asked, allocatable) for allocatable in nodes)


def _pool_refusal(
    ctx: LintContext, pool: PoolView, reqs: Requirements, requests: Mapping[str, int]
) -> tuple[list[str], str] | None:
    """Why `pool` can never launch a node for a pod with requirements `reqs` and `requests`
    (the resources it names, and the sentence); None when it can."""
    types = [it for it in pool.instance_types if it.is_compatible(reqs)]
    # A resource no instance type lists (a custom device, hugepages) is not judged: nothing in
    # the input says which nodes would have it.
    known = _defined_resources(ctx, pool)
    wanted = {r: v for r, v in requests.items() if r in known}
    if not types or not wanted:
        return None
    # Every DaemonSet's pod on every type bounds each type's overhead from above: a type that
    # fits under that bound fits, and only pods near the largest types need the exact groups.
    limits = {r: v for r, v in base_units(pool.nodepool.spec.limits or {}).items() if r in known}
    bound = _only(_daemon_overhead_bound(ctx), known)
    fitting = [it for it in types if fits(add(wanted, bound), it.allocatable)]
    if fitting and _any_within(fitting, limits):
        return None
    if bound:  # the exact overhead of each type's DaemonSet group
        overhead = {n: _only(o, known) for n, o in _daemon_overhead(ctx, pool).items()}
        fitting = [
            it for it in types if fits(add(wanted, overhead.get(it.name, {})), it.allocatable)
        ]
        if fitting and _any_within(fitting, limits):
            return None
    else:
        overhead = {}
    if not fitting:
        return _too_large(pool, types, wanted, overhead)
    for r, v in sorted(limits.items(), key=lambda rv: _resource_order(rv[0])):
        smallest = min(fitting, key=lambda it: (it.capacity.get(r, 0), it.name))
        have = smallest.capacity.get(r, 0)
        if have > v:
            return [r], (
                f"{pool.name} is limited to {_amount(r, v)} {r} and its smallest type that fits "
                f"the pod ({smallest.name}) has {_amount(r, have)} {r}"
            )
    shown = ", ".join(f"{_amount(r, v)} {r}" for r, v in sorted(limits.items()))
    return [], f"{pool.name}'s limits ({shown}) leave out every type that fits the pod"


def _only(resources: Mapping[str, int], known: frozenset[str]) -> Resources:
    """`resources` without those no instance type lists (a DaemonSet's custom device)."""
    return {r: v for r, v in resources.items() if r in known}


def _any_within(types: Sequence[InstanceType], limits: Mapping[str, int]) -> bool:
    """Some of `types` is within every limit (Karpenter drops a type whose capacity exceeds a
    NodePool's remaining limit; with nothing launched that is the limit)."""
    return any(all(it.capacity.get(r, 0) <= v for r, v in limits.items()) for it in types)


def _too_large(
    pool: PoolView,
    types: Sequence[InstanceType],
    wanted: Mapping[str, int],
    overhead: Mapping[str, Mapping[str, int]],
) -> tuple[list[str], str]:
    """`pool` has no compatible type that holds `wanted`: the resources no type has enough of,
    each with the most a type offers after its DaemonSet overhead, or (no single one) that
    none holds them all together."""
    over: list[str] = []
    parts: list[str] = []
    for r in sorted(wanted, key=_resource_order):
        best = min(types, key=lambda it: (-_free(it, overhead, r), it.name))
        most = _free(best, overhead, r)
        if most < wanted[r]:
            over.append(r)
            parts.append(f"{_amount(r, max(most, 0))} {r} ({best.name})")
    if not parts:
        return [], f"{pool.name} has no type that holds all of the pod's requests together"
    return over, (
        f"{pool.name} allows at most {' and '.join(parts)} per node, after kube-reserved and "
        "DaemonSet overhead"
    )


def _free(it: InstanceType, overhead: Mapping[str, Mapping[str, int]], resource: str) -> int:
    """What `it` has left of `resource` for a pod once its DaemonSet pods run."""
    return it.allocatable.get(resource, 0) - overhead.get(it.name, {}).get(resource, 0)


def _defined_resources(ctx: LintContext, pool: PoolView) -> frozenset[str]:
    """The resources some launchable type of `pool` lists (once per type list)."""
    key = ("defined_resources", id(pool.instance_types))
    cached: frozenset[str] | None = ctx.memo.get(key)
    if cached is None:
        cached = ctx.memo[key] = frozenset(r for it in pool.instance_types for r in it.allocatable)
    return cached


def _daemon_pods(ctx: LintContext) -> list[Pod]:
    """The pod of every DaemonSet in the input, as `plan` counts them (`daemon_pod`)."""
    key = ("daemon_pods",)
    cached: list[Pod] | None = ctx.memo.get(key)
    if cached is None:
        cached = ctx.memo[key] = [daemon_pod(ds) for _, ds in ctx.daemonsets]
    return cached


def _daemon_overhead_bound(ctx: LintContext) -> Resources:
    """Every DaemonSet pod's requests (and `pods: 1` each) together: no node runs more."""
    key = ("daemon_overhead_bound",)
    cached: Resources | None = ctx.memo.get(key)
    if cached is None:
        pods = _daemon_pods(ctx)
        cached = ctx.memo[key] = add(*(add(pod_requests(p.spec), {"pods": 1}) for p in pods))
    return cached


def _daemon_overhead(ctx: LintContext, pool: PoolView) -> dict[str, Resources]:
    """The DaemonSet overhead of each of `pool`'s launchable types, by name: what the pods of
    the DaemonSets that would run on such a node request, as `plan` groups them
    (`build_daemon_groups`, Karpenter's `buildDaemonOverheadGroups`). Once per pool."""
    key = ("daemon_overhead", id(pool))
    cached: dict[str, Resources] | None = ctx.memo.get(key)
    if cached is None:
        daemons = _daemon_pods(ctx)
        cached = {}
        if daemons:
            template = dataclasses.replace(pool.template, instance_types=pool.instance_types)
            for group in build_daemon_groups(template, daemons):
                for name in group.instance_types:
                    cached[name] = group.overhead
        ctx.memo[key] = cached
    return cached


def _request_path(ref: PodRef, resource: str) -> tuple[str | int, ...]:
    """Where the first container that asks for `resource` asks for it (its requests, else its
    limits, which default the requests); the containers when none does (`pods`)."""
    for field in ("containers", "initContainers"):
        containers = (
            ref.pod.spec.containers if field == "containers" else ref.pod.spec.init_containers
        )
        for i, c in enumerate(containers):
            for kind in ("requests", "limits"):
                if resource in getattr(c.resources, kind):
                    return (*ref.base, field, i, "resources", kind, resource)
    return (*ref.base, "containers")
