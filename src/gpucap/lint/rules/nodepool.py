"""NodePool rules: structure, limits, capacity flexibility (landscape.md §3.4) and readiness.

NP001-NP012 but NP004 (`lint/rules/limits.py`: what no pool can ever launch). Which pools a pod
can land on, and the other questions several families ask, are `lint/queries.py`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from gpucap.apis.automode import (
    AUTO_MODE_FAMILIES,
    AUTO_MODE_INSTANCE_LABELS,
    AUTO_MODE_UNSUPPORTED_LABELS,
    auto_mode_key,
)
from gpucap.apis.labels import AWS as AWS_LABEL_PREFIX
from gpucap.apis.labels import CAPACITY_TYPE, NORMALIZED_LABELS, REGION, ZONE, ZONE_ID
from gpucap.apis.labels import INSTANCE_FAMILY as AWS_INSTANCE_FAMILY
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.data import bundled_instance_type_infos
from gpucap.cloudprovider.aws.instancetype.resolve import resolve_instance_type
from gpucap.controllers.disruption.constants import SPOT_TO_SPOT_THRESHOLD
from gpucap.controllers.nodepool.readiness import NODECLASS_NOT_FOUND
from gpucap.lint.context import GPU_RESOURCE, LintContext, PodRef, PoolView
from gpucap.lint.queries import (
    SPOT,
    landing_pools,
    meta_path,
    name_list,
    spot_types,
    written,
)
from gpucap.lint.registry import Finding, Registry
from gpucap.scheduling.instancetypes import InstanceType, truncate
from gpucap.scheduling.taints import format_taint

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

ON_DEMAND = "on-demand"
REQUIREMENTS = ("spec", "template", "spec", "requirements")
TAINTS = ("spec", "template", "spec", "taints")

# aws/karpenter-provider-aws pkg/providers/instance/instance.go: `instanceTypeFlexibilityThreshold`
# (Karpenter warns below it when it falls back to on-demand); SPOT_TO_SPOT_THRESHOLD (15) with
# SpotToSpotConsolidation (controllers/disruption/constants.py).
SPOT_FLEXIBILITY_THRESHOLD = 5

# v1alpha5/v1beta1 names that still load in v1 but Karpenter v1 ignores (karpenter.sh v1 upgrade
# guide; kubernetes-sigs/karpenter pkg/apis/v1/labels.go has only the v1 names).
LEGACY_ANNOTATIONS = {
    "karpenter.sh/do-not-evict": "karpenter.sh/do-not-disrupt",
    "karpenter.sh/do-not-consolidate": "karpenter.sh/do-not-disrupt",
}
LEGACY_LABELS = {"karpenter.sh/provisioner-name": "karpenter.sh/nodepool"}
# karpenter.k8s.aws/instance-* -> the eks.amazonaws.com key EKS Auto Mode has for it (NP012).
AUTO_MODE_KEYS = {aws: auto for auto, aws in AUTO_MODE_INSTANCE_LABELS.items()}


def _requirement_index(pool: PoolView, key: str) -> int | None:
    for i, r in enumerate(pool.nodepool.spec.template.spec.requirements):
        if r.key == key:
            return i
    return None


# ==== NP001 ====================================================================================


@RULES.rule(
    "NP001",
    "gpu-pool-without-taint",
    "warning",
    summary="A NodePool that can launch GPU instances has no NoSchedule (or NoExecute) taint.",
    why="Any pod without a matching node selector can land on an expensive GPU node, and a node "
    "with one such pod on it is not empty, so it is never consolidated away.",
    fix="Add `taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]` to "
    "spec.template.spec and a matching toleration to the GPU pods (the GPU Operator's and the "
    "device plugin's DaemonSets tolerate nvidia.com/gpu already).",
    source="EKS Best Practices AI/ML (Use taints and tolerations to prevent non-accelerated "
    "workloads…); EKS Best Practices Karpenter (Create NodePools that are mutually exclusive or "
    "weighted); Karpenter docs, NodePools (Isolating Expensive Hardware)",
)
def gpu_pool_without_taint(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_gpu_pool:
            continue
        taints = pool.template.taints
        if any(t.effect in ("NoSchedule", "NoExecute") for t in taints):
            continue
        soft = [format_taint(t) for t in taints if t.effect == "PreferNoSchedule"]
        note = (
            f" ({', '.join(soft)} is only a preference: the scheduler still places pods there)"
            if soft
            else ""
        )
        types = name_list(it.name for it in pool.gpu_types)
        yield ctx.finding(
            "NP001",
            "warning",
            pool.manifest,
            TAINTS if written(pool.manifest, TAINTS) else ("spec", "template", "spec"),
            f"can launch GPU instances ({types}) but has no NoSchedule taint{note}: non-GPU pods "
            "can land on GPU nodes and keep them alive",
        )


# ==== NP002 ====================================================================================


@RULES.rule(
    "NP002",
    "overlapping-pools-same-weight",
    "warning",
    summary="A pod can be served by two or more NodePools of the same (highest) weight.",
    why="The docs say Karpenter then picks one at random; the code orders by weight and breaks "
    "ties by NodePool name, descending, so which pool (and which instance types, capacity type "
    "and price) a pod gets depends on names, not intent.",
    fix="Give the pools distinct `spec.weight`s, or make them mutually exclusive with "
    "requirements and taints.",
    source="EKS Best Practices Karpenter (Create NodePools that are mutually exclusive or "
    "weighted); kubernetes-sigs/karpenter pkg/utils/nodepool (OrderByWeight)",
)
def overlapping_pools_same_weight(ctx: LintContext) -> Iterable[Finding]:
    # tie group (pool names) -> pods that see it
    groups: dict[tuple[str, ...], list[str]] = {}
    for ref in ctx.pods:
        pools = landing_pools(ctx, ref.pod)
        if len(pools) < 2:
            continue
        top = max(p.nodepool.effective_weight for p in pools)
        tied = sorted((p.name for p in pools if p.nodepool.effective_weight == top), reverse=True)
        if len(tied) >= 2:
            groups.setdefault(tuple(tied), []).append(ref.pod.key)
    by_name = {p.name: p for p in ctx.pools}
    for group, pods in groups.items():
        winner = by_name[group[0]]
        weight = winner.nodepool.effective_weight
        weight_text = f"weight {weight}" if winner.nodepool.spec.weight is not None else "no weight"
        yield ctx.finding(
            "NP002",
            "warning",
            winner.manifest,
            ("spec", "weight") if winner.nodepool.spec.weight is not None else ("spec",),
            f"NodePools {', '.join(sorted(group))} ({weight_text}) can all serve "
            f"{name_list(pods)}: Karpenter will use {winner.name} (weights tie, names "
            "descending); set distinct weights or make the pools mutually exclusive",
        )


# ==== NP003 ====================================================================================


@RULES.rule(
    "NP003",
    "gpu-pool-no-limits",
    "warning",
    summary="A GPU NodePool has no spec.limits, or no nvidia.com/gpu limit (static pools, whose "
    "size is spec.replicas and whose only allowed limit is nodes, are not checked).",
    why="Nothing bounds the spend: a runaway Deployment (or a scale-up loop of nodes that never "
    "initialize) keeps launching GPU instances.",
    fix='Set `spec.limits: {nvidia.com/gpu: "<n>"}` (Karpenter counts what nodes advertise, so '
    "allow for time-slicing replicas), and add billing alarms.",
    source="EKS Best Practices Karpenter (Create billing alarms…); EKS Best Practices AI/ML "
    "(Tailor Compute Capacity: limits nvidia.com/gpu: 10)",
)
def gpu_pool_no_limits(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_gpu_pool or pool.is_static:
            continue  # a static pool's size is spec.replicas; its CRD allows only a nodes limit
        limits = pool.nodepool.spec.limits
        if limits is None:
            yield ctx.finding(
                "NP003",
                "warning",
                pool.manifest,
                ("spec",),
                "GPU NodePool has no spec.limits: nothing bounds how many GPU nodes it launches",
            )
        elif GPU_RESOURCE not in limits:
            others = ", ".join(sorted(limits))
            yield ctx.finding(
                "NP003",
                "warning",
                pool.manifest,
                ("spec", "limits"),
                f"GPU NodePool limits only {others}, not nvidia.com/gpu: the GPU count (and the "
                "spend) is bounded only indirectly",
            )


# ==== NP005 ====================================================================================


@RULES.rule(
    "NP005",
    "spot-pool-too-narrow",
    "warning",
    summary="A NodePool that allows spot can launch fewer than 5 instance types, or only in one "
    "zone.",
    why="Spot capacity for a handful of types in one zone evaporates: launches fail with "
    "InsufficientInstanceCapacity and interruptions are frequent. Karpenter itself warns below "
    "5 types when it falls back to on-demand (15 are needed for spot-to-spot consolidation).",
    fix="Widen the requirements (more families, sizes and generations; GPU name or memory "
    "instead of exact types), use minValues for diversity, and allow every zone.",
    source="aws/karpenter-provider-aws pkg/providers/instance/instance.go "
    "(instanceTypeFlexibilityThreshold = 5); Karpenter docs, disruption (Spot consolidation); "
    "EKS Best Practices Karpenter (Avoid overly constraining…); EKS Best Practices AI/ML (Spot)",
)
def spot_pool_too_narrow(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        types = spot_types(ctx, pool)
        if not types:
            continue
        reqs = pool.template.requirements
        if len(types) < SPOT_FLEXIBILITY_THRESHOLD:
            names = ", ".join(sorted(it.name for it in types))
            yield ctx.finding(
                "NP005",
                "warning",
                pool.manifest,
                REQUIREMENTS,
                f"allows spot but only {len(types)} instance type"
                f"{'' if len(types) == 1 else 's'} can launch ({names}); Karpenter's flexibility "
                f"threshold is {SPOT_FLEXIBILITY_THRESHOLD} ({SPOT_TO_SPOT_THRESHOLD} for "
                "spot-to-spot consolidation): expect insufficient capacity and interruptions",
            )
        key = ("spot_zones", id(types))  # `types` is memoised: alike pools share it
        zones: set[str] | None = ctx.memo.get(key)
        if zones is None:
            zones = ctx.memo[key] = {
                o.zone
                for it in types
                for o in it.offerings
                if o.available and o.capacity_type == SPOT and o.allowed_by(reqs)
            }
        if len(zones) == 1:
            index = _requirement_index(pool, ZONE)
            path = (*REQUIREMENTS, index) if index is not None else REQUIREMENTS
            yield ctx.finding(
                "NP005",
                "warning",
                pool.manifest,
                path,
                f"allows spot in one zone only ({next(iter(zones))}): a capacity shortage there "
                "leaves the pool nothing to launch",
            )


# ==== NP006 ====================================================================================


@RULES.rule(
    "NP006",
    "spot-only-no-fallback",
    "info",
    summary="A NodePool allows only spot capacity and no other pool offers on-demand for its pods.",
    why="Karpenter falls back from spot to on-demand only within a pool that allows both (or to "
    "a lower-weight pool); account spot quota errors (MaxSpotInstanceCountExceeded) are not "
    "capacity errors and never fall back.",
    fix="Allow `karpenter.sh/capacity-type In [spot, on-demand]`, or add a lower-weight "
    "on-demand NodePool the same pods can use; keep spot-only for interruption-tolerant work.",
    source="Karpenter docs, NodePools (Capacity Type); aws/karpenter-provider-aws#5789, #4318, "
    "#5743",
)
def spot_only_no_fallback(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        kinds = pool.capacity_types
        if SPOT not in kinds or kinds - {SPOT}:
            continue
        others = [p for p in ctx.pools if p is not pool and ON_DEMAND in p.capacity_types]
        pods = [ref for ref in ctx.pods if pool in landing_pools(ctx, ref.pod)]
        if pods:
            stranded = [
                ref.pod.key
                for ref in pods
                if not any(p in others for p in landing_pools(ctx, ref.pod))
            ]
            if not stranded:
                continue
            who = f" for {name_list(stranded)}"
        else:
            # No pod in the input: assume a fallback if another pool offers on-demand for the
            # same kind of node (GPU or not).
            if any(p.is_gpu_pool == pool.is_gpu_pool for p in others):
                continue
            who = ""
        index = _requirement_index(pool, CAPACITY_TYPE)
        yield ctx.finding(
            "NP006",
            "info",
            pool.manifest,
            (*REQUIREMENTS, index) if index is not None else REQUIREMENTS,
            f"spot only, with no on-demand fallback{who}: a spot shortage or a spot quota error "
            "(MaxSpotInstanceCountExceeded) leaves the pods Pending",
        )


# ==== NP007 ====================================================================================


@RULES.rule(
    "NP007",
    "v1beta1-field-placement",
    "error",
    summary="Pre-v1 Karpenter names that still load but Karpenter v1 ignores: the "
    "karpenter.sh/do-not-evict and do-not-consolidate annotations, and the "
    "karpenter.sh/provisioner-name label in pod selectors.",
    why="v1 protects pods only with karpenter.sh/do-not-disrupt, and labels nodes with "
    "karpenter.sh/nodepool: an old annotation protects nothing, an old selector matches no "
    "NodePool. Misplaced v1beta1 fields themselves (spec.disruption.expireAfter, "
    "spec.template.spec.kubelet, consolidationPolicy WhenUnderutilized, apiVersion "
    "karpenter.sh/v1beta1) make the manifest invalid: the loader rejects them as SCHEMA001 "
    "errors before any rule runs, so NP007 never sees those objects; move expireAfter to "
    "spec.template.spec.expireAfter and kubelet to the EC2NodeClass.",
    fix='Use `karpenter.sh/do-not-disrupt: "true"` and `karpenter.sh/nodepool: <name>`.',
    source="Karpenter docs, NodePools (v1 schema) and v1 migration guide; EKS Best Practices "
    "AI/ML (Tailor Compute Capacity example carries expireAfter under disruption)",
)
def v1beta1_field_placement(ctx: LintContext) -> Iterable[Finding]:
    seen: set[int] = set()
    for ref in ctx.pods:
        if id(ref.manifest) in seen:
            continue
        seen.add(id(ref.manifest))
        meta = meta_path(ref)
        for key, value in sorted(ref.pod.metadata.annotations.items()):
            if key in LEGACY_ANNOTATIONS:
                yield ctx.finding(
                    "NP007",
                    "error",
                    ref.manifest,
                    (*meta, "annotations", key),
                    f"annotation {key}: {value!r} is a pre-v1 name that Karpenter v1 ignores: "
                    f'the pod is not protected; use {LEGACY_ANNOTATIONS[key]}: "true"',
                )
        for key, path in _selector_keys(ref):
            if key in LEGACY_LABELS:
                yield ctx.finding(
                    "NP007",
                    "error",
                    ref.manifest,
                    path,
                    f"selects on {key}, a pre-v1 label Karpenter v1 nodes do not carry: the pod "
                    f"matches no NodePool; use {LEGACY_LABELS[key]}",
                )
    for pool in ctx.pools:
        annotations = pool.nodepool.spec.template.metadata.annotations
        for key in sorted(annotations):
            if key in LEGACY_ANNOTATIONS:
                yield ctx.finding(
                    "NP007",
                    "error",
                    pool.manifest,
                    ("spec", "template", "metadata", "annotations", key),
                    f"node annotation {key} is a pre-v1 name that Karpenter v1 ignores; use "
                    f'{LEGACY_ANNOTATIONS[key]}: "true"',
                )


def _selector_keys(ref: PodRef) -> Iterable[tuple[str, tuple[str | int, ...]]]:
    spec = ref.pod.spec
    for key in spec.node_selector:
        yield key, (*ref.base, "nodeSelector", key)
    affinity = spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return
    base = (
        *ref.base,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    for i, term in enumerate(required.node_selector_terms):
        for j, expr in enumerate(term.match_expressions):
            yield expr.key, (*base, i, "matchExpressions", j, "key")


# ==== NP008 ====================================================================================


@RULES.rule(
    "NP008",
    "minvalues-policy-awareness",
    "info",
    summary="A NodePool uses minValues; what happens when it cannot be met depends on "
    "Karpenter's --min-values-policy.",
    why="With Strict (the default) a NodeClaim that cannot meet minValues is not launched; "
    "with BestEffort Karpenter lowers minValues to what is available. minValues also turns off "
    "the exotic-type and spot-price filters at launch (HasMinValues() short-circuit).",
    fix="Check the controller's MIN_VALUES_POLICY, and keep minValues at or below what the "
    "allowed instance types can offer.",
    source="Karpenter docs, NodePools (Min Values); aws/karpenter-provider-aws "
    "pkg/providers/instance/filter/filter.go",
)
def minvalues_policy_awareness(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        spec = pool.nodepool.spec.template.spec
        indexed = [(i, r) for i, r in enumerate(spec.requirements) if r.min_values is not None]
        if not indexed:
            continue
        first = indexed[0][0]
        keys = ", ".join(f"{r.key} minValues {r.min_values}" for _, r in indexed)
        _, unmet = truncate(pool.instance_types, pool.template.requirements)
        if unmet:
            gaps = ", ".join(f"{k} has {n} distinct values" for k, n in sorted(unmet.items()))
            outcome = (
                f"the {len(pool.instance_types)} launchable types cannot meet it ({gaps}): with "
                "--min-values-policy=Strict (the default) the pool launches nothing, with "
                "BestEffort Karpenter lowers minValues"
            )
        else:
            outcome = (
                f"met by the {len(pool.instance_types)} launchable types today; if offerings "
                "shrink, Strict (the default) stops launching and BestEffort relaxes it"
            )
        yield ctx.finding(
            "NP008",
            "info",
            pool.manifest,
            (*REQUIREMENTS, first, "minValues"),
            f"uses minValues ({keys}): {outcome}; minValues also disables the exotic-type and "
            "spot-price launch filters",
        )


# ==== NP010 ====================================================================================


@RULES.rule(
    "NP010",
    "general-pool-can-launch-gpu-types",
    "info",
    summary="A NodePool that is not a GPU pool (not every type has a GPU, no GPU requirement, "
    "taint, label or limit, no GPU pod in the input lands there) can still launch GPU types.",
    why="Usually harmless: for a NodeClaim without GPU requests the AWS provider drops GPU, "
    "accelerator and metal types whenever another type is left (its exotic-instance filter), "
    "and Karpenter initializes such a node without waiting for nvidia.com/gpu, which the "
    "NodeClaim did not request. A GPU type is launched only when nothing else fits (a very "
    "large pod), or for a GPU pod that can use this pool, which would then be billed at GPU "
    "prices and needs the device plugin. The GPU rules do not check this pool.",
    fix="To rule GPU types out, add `karpenter.k8s.aws/instance-gpu-count DoesNotExist` (or "
    "instance-category NotIn [g, p]); to make it a GPU pool, taint it nvidia.com/gpu or "
    "require GPU types.",
    source="aws/karpenter-provider-aws pkg/providers/instance/filter/filter.go "
    "(ExoticInstanceTypeFilter); kubernetes-sigs/karpenter "
    "pkg/controllers/nodeclaim/lifecycle/initialization.go",
)
def general_pool_can_launch_gpu_types(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if pool.is_gpu_pool or not pool.can_launch_gpus:
            continue
        yield ctx.finding(
            "NP010",
            "info",
            pool.manifest,
            REQUIREMENTS,
            f"not a GPU pool, but it can launch {len(pool.gpu_types)} GPU instance type"
            f"{'' if len(pool.gpu_types) == 1 else 's'} "
            f"({name_list(sorted(it.name for it in pool.gpu_types))}): Karpenter picks one only "
            "when no GPU-less type fits the NodeClaim; exclude them with "
            "karpenter.k8s.aws/instance-gpu-count DoesNotExist if that should never happen",
        )


# ==== NP009 ====================================================================================

# Keys whose values depend on where gpucap runs (the catalog's region) or that validate already
# checks (capacity types), not on what instance types exist.
_PLACEMENT_KEYS = frozenset({ZONE, ZONE_ID, REGION, CAPACITY_TYPE})


@RULES.rule(
    "NP009",
    "requirements-match-no-instance-type",
    "warning",
    summary="A NodePool requirement allows a value (instance type, family, size, GPU name...) "
    "that no instance type in the catalog has, or the requirements together leave nothing "
    "to launch.",
    why="Karpenter does not reject unknown values: it intersects the requirements with the "
    "instance types it knows, so a typo such as `g5.xlage` or `g6x` is dropped without a word. "
    'If nothing is left, the pool is skipped ("nodepool requirements filtered out all instance '
    'types") and its pods stay Pending.',
    fix="Correct the value (the message suggests the closest known one); a real type or family "
    "that is not offered in the region is named with the regions that offer it: lint with "
    "`--region` for the cluster's region, or drop it from this region's pools; if the type is "
    "newer than gpucap's bundled catalog, lint with `--catalog` built by `gpucap catalog "
    "export`.",
    source="kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go (a NodePool "
    "whose requirements leave no instance type option is skipped with a NoCompatibleInstanceTypes "
    "event)",
    other=(
        (
            "error",
            "no instance type meets all the requirements: the pool can launch nothing",
        ),
    ),
)
def requirements_match_no_instance_type(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        types = ctx.types_for(pool)
        mode = "EKS Auto Mode's types in " if pool.is_auto_mode else ""
        catalog = f"{mode}the catalog ({ctx.catalog.region}, {len(types)} types)"
        for i, req in enumerate(pool.nodepool.spec.template.spec.requirements):
            key = NORMALIZED_LABELS.get(req.key, req.key)
            if req.operator != "In" or key in _PLACEMENT_KEYS:
                continue
            known = _known_values(ctx, types, key)
            if not known:
                continue  # a label of the pool's own, not an instance-type property
            for j, value in enumerate(req.values):
                if value in known:
                    continue
                path = (*REQUIREMENTS, i, "values", j)
                elsewhere = _regions_with(ctx, pool, key, value)
                if elsewhere:
                    # A real value, only not here: a region to change, not a typo to fix.
                    message = (
                        f"{req.key} In {value}: {value} is not offered in "
                        f"{ctx.catalog.region}; it is in {name_list(elsewhere, limit=5)} "
                        "(lint with --region); Karpenter drops it silently here"
                    )
                else:
                    close = difflib.get_close_matches(value, sorted(known), n=1, cutoff=0.75)
                    hint = f" (did you mean {close[0]}?)" if close else ""
                    message = (
                        f"{req.key} In {value}: no instance type in {catalog} has this "
                        f"value{hint}; Karpenter drops it silently"
                    )
                yield ctx.finding(
                    "NP009",
                    "warning",
                    pool.manifest,
                    path if written(pool.manifest, path) else (*REQUIREMENTS, i),
                    message,
                )
        if not pool.instance_types:
            yield ctx.finding(
                "NP009",
                "error",
                pool.manifest,
                REQUIREMENTS,
                f"no instance type in {catalog} meets all of the requirements with an available "
                "offering: Karpenter skips the pool and the pods that need it stay Pending",
            )


def _regions_with(ctx: LintContext, pool: PoolView, key: str, value: str) -> list[str]:
    """The other regions of the bundled catalog where some instance type has `value` for
    `key` (those of the catalog's geography first), when lint runs on the bundled catalog (a
    catalog of the caller's own has no other regions gpucap knows). Labels other than zone and
    region do not depend on the region, so each type is resolved once, in a region that offers
    it, not once per region (30 regions). An EKS Auto Mode pool's keys are read as their AWS
    provider counterparts, and a family Auto Mode does not launch is offered nowhere."""
    if pool.is_auto_mode:
        key = auto_mode_key(key)
        if key == AWS_INSTANCE_FAMILY and value not in AUTO_MODE_FAMILIES:
            return []
    here = ctx.catalog.region
    if ctx.catalog is not load_catalog(here):
        return []
    settings = ctx.settings_for(pool.nodeclass)
    memo = ("regions_with", settings, key)
    by_value: dict[str, frozenset[str]] | None = ctx.memo.get(memo)
    if by_value is None:
        regions_of: dict[str, set[str]] = {}
        for info in bundled_instance_type_infos():
            zones_by_region = info.offerings or {}
            offered = sorted(r for r, zones in zones_by_region.items() if zones and r != here)
            if not offered:
                continue
            it = resolve_instance_type(
                info, settings, region=offered[0], zones=zones_by_region[offered[0]]
            )
            requirement = it.requirements.get(key)
            for v in requirement.values if requirement is not None else ():
                regions_of.setdefault(v, set()).update(offered)
        by_value = {v: frozenset(rs) for v, rs in regions_of.items()}
        ctx.memo[memo] = by_value
    # The regions of the same geography (us-, eu-, ap-...) first: the likelier move.
    geography = here.split("-")[0]
    return sorted(by_value.get(value, ()), key=lambda r: (r.split("-")[0] != geography, r))


def _known_values(ctx: LintContext, types: Sequence[InstanceType], key: str) -> frozenset[str]:
    """Every value that some instance type in `types` has for `key` (memoised per catalog)."""
    memo = ("known_values", id(types), key)
    cached: frozenset[str] | None = ctx.memo.get(memo)
    if cached is None:
        values: set[str] = set()
        for it in types:
            req = it.requirements.get(key)
            if req is not None and not req.complement:
                values.update(req.values)
        cached = frozenset(values)
        ctx.memo[memo] = cached
    return cached


# ==== NP011 ====================================================================================


@RULES.rule(
    "NP011",
    "nodeclass-not-found",
    "error",
    summary="A NodePool's nodeClassRef names an EC2NodeClass the input does not have, while "
    "the input has other EC2NodeClasses (a typo such as `gpus` for `gpu`).",
    why="Karpenter's NodePool readiness sets NodeClassReady False (NodeClassNotFound) and the "
    'provisioner ignores a NodePool that is not Ready ("ignoring nodepool, not ready"): '
    "nothing launches for the pods that need it, and they stay Pending without an event that "
    "names the pool. (A NodePool linted without any EC2NodeClass is not flagged: `plan` plans "
    "it with a default one.)",
    fix="Name an EC2NodeClass that exists (the message suggests the closest name), or add the "
    "EC2NodeClass to the input.",
    source="kubernetes-sigs/karpenter pkg/controllers/nodepool/readiness/controller.go, "
    "pkg/controllers/provisioning/provisioner.go (NewScheduler)",
)
def nodeclass_not_found(ctx: LintContext) -> Iterable[Finding]:
    if not ctx.nodeclasses:
        return
    manifests = {p.name: p.manifest for p in ctx.pools}
    present = name_list(sorted(ctx.nodeclasses), limit=5)
    for entry in ctx.nodepool_readiness.not_ready:
        if entry.reason != NODECLASS_NOT_FOUND:
            continue
        hint = f"did you mean {entry.suggestion}?" if entry.suggestion else f"it has {present}"
        yield ctx.finding(
            "NP011",
            "error",
            manifests.get(entry.name),
            ("spec", "template", "spec", "nodeClassRef", "name"),
            f"nodeClassRef.name {entry.nodeclass}: the input has no EC2NodeClass "
            f"{entry.nodeclass} ({hint}): Karpenter marks the NodePool not Ready "
            "(NodeClassNotFound) and ignores it, so the pods that need it stay Pending",
        )


# ==== NP012 ====================================================================================


@RULES.rule(
    "NP012",
    "auto-mode-aws-provider-label",
    "warning",
    summary="An EKS Auto Mode NodePool (nodeClassRef eks.amazonaws.com/NodeClass) requires a "
    "self-managed Karpenter label (karpenter.k8s.aws/...) or an operating system other than "
    "Linux.",
    why="EKS Auto Mode labels its instance types under its own domain: "
    "eks.amazonaws.com/instance-family, -category, -gpu-name, ... where self-managed Karpenter "
    'has karpenter.k8s.aws/instance-family, ... (the EKS user guide, "EKS Auto Mode Supported '
    'Labels"). A karpenter.k8s.aws requirement is not one of them, so it does not choose the '
    "pool's instance types the way it reads: a GPU pool written with Karpenter's labels can "
    "launch any supported type. Auto Mode runs Linux only and does not support "
    "kubernetes.io/os or node.kubernetes.io/windows-build.",
    fix="Use the eks.amazonaws.com key the message names (same values); drop a Windows "
    "requirement (Auto Mode has no Windows nodes).",
    source="awsdocs/amazon-eks-user-guide latest/ug/automode/create-node-pool.adoc (EKS Auto "
    "Mode Supported Labels, Not Supported Labels)",
)
def auto_mode_aws_provider_label(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_auto_mode:
            continue
        for i, req in enumerate(pool.nodepool.spec.template.spec.requirements):
            message = _auto_mode_label_problem(req.key, req.operator, req.values)
            if message is not None:
                yield ctx.finding(
                    "NP012", "warning", pool.manifest, (*REQUIREMENTS, i, "key"), message
                )


def _auto_mode_label_problem(key: str, operator: str, values: Sequence[str]) -> str | None:
    """Why an Auto Mode pool's requirement does not mean what it reads, or None."""
    if key.startswith(AWS_LABEL_PREFIX):
        counterpart = AUTO_MODE_KEYS.get(key)
        if counterpart is None:
            return (
                f"{key} is self-managed Karpenter's label and EKS Auto Mode has no counterpart: "
                "Auto Mode's instance types do not carry it, so this requirement does not "
                "choose among them"
            )
        return (
            f"{key} is self-managed Karpenter's label: EKS Auto Mode's instance types carry "
            f"{counterpart} instead, so this requirement does not choose among them; use "
            f"{counterpart}"
        )
    if key in AUTO_MODE_UNSUPPORTED_LABELS and not (operator == "In" and set(values) <= {"linux"}):
        return (
            f"{key} {operator} {', '.join(values)}: EKS Auto Mode runs Linux only and does not "
            "support this label"
        )
    return None
