"""Disruption rules: consolidation, budgets, expiration and do-not-disrupt (landscape.md §3.5;
semantics from karpenter-disruption.md §1.14, §2, §3 and §5).

DIS001-DIS004.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpucap.apis.core import PodDisruptionBudget
from gpucap.apis.duration import DurationError, format_seconds, parse_go_duration
from gpucap.apis.meta import matches_selector
from gpucap.apis.nodepool import DEFAULT_BUDGET_NODES, Budget
from gpucap.apis.serde import Manifest
from gpucap.apis.workloads import Deployment, Job, ReplicaSet, StatefulSet, replica_count
from gpucap.lint.context import LintContext, PodRef, PoolView
from gpucap.lint.queries import SPOT, landing_pools, meta_path, name_list, written
from gpucap.lint.registry import Finding, Registry

__all__ = ["DO_NOT_DISRUPT", "RULES", "do_not_disrupt"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DISRUPTION = ("spec", "disruption")
EXPIRE_AFTER = ("spec", "template", "spec", "expireAfter")
# BP-AI recommends WhenEmpty with consolidateAfter 60m for GPU inference pools; below 10 minutes
# a node is re-evaluated faster than a model server usually takes to start (landscape.md §4.5:
# 7-12 min to first token).
MIN_GPU_CONSOLIDATE_AFTER_S = 600


def do_not_disrupt(ref: PodRef) -> tuple[str, float | None] | None:
    """The pod's active do-not-disrupt annotation: (value, seconds or None for "true"), or None
    when absent or ignored (zero, negative or unparseable; karpenter-disruption.md §3.1)."""
    value = ref.pod.metadata.annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return None
    if value == "true":
        return value, None
    try:
        seconds = parse_go_duration(value)
    except DurationError:
        return None
    return (value, seconds) if seconds > 0 else None


def _gpu_pools(ctx: LintContext) -> Iterable[PoolView]:
    return (p for p in ctx.pools if p.is_gpu_pool)


# ==== DIS001 ===================================================================================


@RULES.rule(
    "DIS001",
    "gpu-inference-pool-underutilized-consolidation",
    "warning",
    summary="A GPU NodePool consolidates underutilized nodes (WhenEmptyOrUnderutilized, the "
    "default, or Balanced) with consolidateAfter below 10 minutes (static pools, never "
    "consolidated, are not checked).",
    why="Karpenter may replace a running GPU node with a cheaper one even when the workload "
    "fully uses the GPU, killing a model server that took minutes to load. The CRD defaults are "
    "consolidationPolicy WhenEmptyOrUnderutilized and consolidateAfter 0s. Balanced (v1.14) "
    "only consolidates when savings outweigh disruption (score >= 1/2), but still moves busy "
    "nodes.",
    fix="Use `consolidationPolicy: WhenEmpty` with `consolidateAfter: 60m` for inference pools "
    "(or at least a consolidateAfter of tens of minutes), or annotate the model-server pods "
    "with karpenter.sh/do-not-disrupt.",
    source="EKS Best Practices AI/ML (Disable Karpenter Consolidation for interruption "
    "sensitive Workloads); Karpenter docs, disruption; kubernetes-sigs/karpenter "
    "pkg/apis/v1/nodepool.go, balanced.go",
)
def gpu_underutilized_consolidation(ctx: LintContext) -> Iterable[Finding]:
    for pool in _gpu_pools(ctx):
        if pool.is_static:
            continue  # Karpenter never consolidates a static pool's nodes
        disruption = pool.nodepool.spec.disruption
        policy = disruption.consolidation_policy
        if policy == "WhenEmpty":
            continue
        after = disruption.consolidate_after_seconds
        if after is None or after >= MIN_GPU_CONSOLIDATE_AFTER_S:
            continue
        m = pool.manifest
        policy_path = (*DISRUPTION, "consolidationPolicy")
        after_path = (*DISRUPTION, "consolidateAfter")
        policy_text = policy if written(m, policy_path) else f"{policy} (the default when unset)"
        after_text = (
            disruption.consolidate_after
            if written(m, after_path)
            else f"{disruption.consolidate_after} (the default when unset)"
        )
        what = (
            "Karpenter may replace a fully used GPU node with a cheaper one"
            if policy == "WhenEmptyOrUnderutilized"
            else "Karpenter still replaces busy GPU nodes when the savings score passes 1/2"
        )
        path = policy_path if written(m, policy_path) else DISRUPTION
        yield ctx.finding(
            "DIS001",
            "warning",
            m,
            path,
            f"GPU NodePool with consolidationPolicy {policy_text} and consolidateAfter "
            f"{after_text}: {what}, restarting model servers; use WhenEmpty with "
            "consolidateAfter of tens of minutes (EKS guidance: 60m)",
        )


# ==== DIS002 ===================================================================================


def _controls_drift(budget: Budget) -> bool:
    """A budget that applies to drift and either has a maintenance window or blocks it."""
    applies = budget.reasons is None or "Drifted" in budget.reasons
    return applies and (budget.schedule is not None or budget.allows_no_disruption)


@RULES.rule(
    "DIS002",
    "gpu-pool-default-budget",
    "warning",
    summary="A GPU NodePool keeps the default disruption budget (nodes: 10%), or has no budget "
    "that confines drift to a maintenance window.",
    why="Drift (an AMI release with @latest, a change to the NodePool template or the "
    "EC2NodeClass; not weight, limits or disruption settings) and "
    "consolidation roll up to 10% of the GPU fleet at a time (at least one node), at any hour. "
    "Budgets bound only drift, emptiness and consolidation, never expiration or interruption.",
    fix='Add reason-scoped budgets, e.g. `{nodes: "0", reasons: [Drifted], schedule: '
    '"0 8 * * mon-fri", duration: 10h}` to keep drift out of business hours (schedules are '
    "UTC).",
    source="Karpenter docs, disruption (NodePool Disruption Budgets); kubernetes-sigs/karpenter"
    "#1581",
    other=(
        (
            "info",
            "the budgets limit drift but at any hour (no Drifted budget with a schedule)",
        ),
    ),
)
def gpu_pool_default_budget(ctx: LintContext) -> Iterable[Finding]:
    for pool in _gpu_pools(ctx):
        m = pool.manifest
        budgets = pool.nodepool.spec.disruption.budgets
        budgets_path = (*DISRUPTION, "budgets")
        default = len(budgets) == 1 and budgets[0] == Budget(nodes=DEFAULT_BUDGET_NODES)
        # A static pool is never consolidated; its budgets bound only (static) drift.
        methods = "drift replaces" if pool.is_static else "drift and consolidation replace"
        if default:
            how = "budgets equal the default" if written(m, budgets_path) else "no budgets"
            yield ctx.finding(
                "DIS002",
                "warning",
                m,
                budgets_path if written(m, budgets_path) else DISRUPTION,
                f"GPU NodePool has {how} (nodes: {DEFAULT_BUDGET_NODES}): {methods} "
                "up to 10% of the GPU nodes at a time (at least one), at any hour; add "
                "a Drifted budget with a schedule (UTC)",
            )
        elif not any(_controls_drift(b) for b in budgets):
            allowed = ", ".join(f"nodes: {b.nodes}" for b in budgets)
            yield ctx.finding(
                "DIS002",
                "info",
                m,
                budgets_path,
                f"budgets ({allowed}) apply at any hour: drift rolls GPU nodes as soon as "
                "Karpenter sees it; a Drifted budget with schedule/duration (UTC) confines it to "
                "a maintenance window",
            )


# ==== DIS003 ===================================================================================


@dataclass(frozen=True, slots=True)
class _Blocker:
    text: str
    pods: frozenset[str]  # pod keys it protects; empty: none of the input's pods


def _pdb_blockers(ctx: LintContext) -> list[_Blocker]:
    out: list[_Blocker] = []
    for pdb in ctx.of_kind(PodDisruptionBudget):
        namespace = pdb.metadata.namespace
        selected = [
            ref
            for ref in ctx.pods
            if ref.pod.metadata.namespace == namespace
            and matches_selector(pdb.spec.selector, ref.pod.metadata.labels)
        ]
        reason = _fully_blocking(pdb, _replicas(selected))
        if reason is None:
            continue
        keys = frozenset(ref.pod.key for ref in selected)
        out.append(
            _Blocker(f"PodDisruptionBudget {namespace}/{pdb.metadata.name} ({reason})", keys)
        )
    return out


def _replicas(refs: list[PodRef]) -> int | None:
    """Pods the selected manifests create (None when nothing in the input is selected)."""
    if not refs:
        return None
    total = 0
    seen: set[int] = set()
    for ref in refs:
        if id(ref.manifest) in seen:
            continue
        seen.add(id(ref.manifest))
        obj = ref.manifest.obj
        if isinstance(obj, Deployment | StatefulSet | ReplicaSet | Job):
            total += replica_count(obj)
        else:
            total += 1
    return total


def _fully_blocking(pdb: PodDisruptionBudget, replicas: int | None) -> str | None:
    """Why the PDB never allows an eviction, or None (karpenter-disruption.md §3.2)."""
    spec = pdb.spec
    if spec.max_unavailable in (0, "0%"):
        return f"maxUnavailable: {spec.max_unavailable}"
    if spec.min_available == "100%":
        return "minAvailable: 100%"
    if (
        isinstance(spec.min_available, int)
        and replicas is not None
        and spec.min_available >= replicas
    ):
        return (
            f"minAvailable: {spec.min_available} with {replicas} "
            f"replica{'' if replicas == 1 else 's'}"
        )
    if pdb.status.disruptions_allowed == 0 and pdb.status.expected_pods:
        return "status.disruptionsAllowed: 0"
    return None


@RULES.rule(
    "DIS003",
    "expire-without-termination-grace",
    "warning",
    summary="A NodePool expires nodes (expireAfter, 720h by default) without "
    'terminationGracePeriod while a pod it can run has karpenter.sh/do-not-disrupt: "true" '
    "or a PodDisruptionBudget allows no eviction.",
    why="Expiration starts regardless of budgets and do-not-disrupt, but the drain still "
    "respects them: without terminationGracePeriod an expired node with such a pod is drained "
    "forever (cordoned, still billed, never replaced by the rotation you wanted).",
    fix="Set `spec.template.spec.terminationGracePeriod` (e.g. 1h; changing it drifts existing "
    "nodes), or fix the PDB (maxUnavailable >= 1) and use a duration for do-not-disrupt.",
    source="Karpenter docs, disruption (Expiration)",
)
def expire_without_termination_grace(ctx: LintContext) -> Iterable[Finding]:
    pdbs = _pdb_blockers(ctx)
    protected: list[PodRef] = []
    seen: set[int] = set()
    for ref in ctx.pods:
        dnd = do_not_disrupt(ref)
        if dnd is not None and dnd[1] is None and id(ref.manifest) not in seen:
            seen.add(id(ref.manifest))
            protected.append(ref)
    if not pdbs and not protected:
        return
    landing = {id(ref): {p.name for p in landing_pools(ctx, ref.pod)} for ref in ctx.pods}
    for pool in ctx.pools:
        spec = pool.nodepool.spec.template.spec
        expire = spec.expire_after_seconds
        if expire is None or spec.termination_grace_period is not None:
            continue
        on_pool = {ref.pod.key for ref in ctx.pods if pool.name in landing[id(ref)]}
        reasons = [
            f'pod {ref.pod.key} has {DO_NOT_DISRUPT}: "true"'
            for ref in protected
            if pool.name in landing[id(ref)]
        ]
        for b in pdbs:
            if b.pods & on_pool:
                reasons.append(b.text)
            elif not b.pods:
                reasons.append(f"{b.text}, selecting no pod in the input")
        if not reasons:
            continue
        m = pool.manifest
        expire_text = spec.expire_after + ("" if written(m, EXPIRE_AFTER) else " (the default)")
        yield ctx.finding(
            "DIS003",
            "warning",
            m,
            EXPIRE_AFTER,
            f"expireAfter {expire_text} without terminationGracePeriod while "
            f"{name_list(reasons, 2)}: an expired node is drained but never terminated; set "
            "terminationGracePeriod",
        )


# ==== DIS004 ===================================================================================


def _forceful(pool: PoolView) -> list[str]:
    out = []
    if SPOT in pool.capacity_types:
        out.append(f"spot interruption ({pool.name} allows spot)")
    expire = pool.nodepool.spec.template.spec.expire_after_seconds
    if expire is not None:
        out.append(f"expiration after {format_seconds(expire)} ({pool.name})")
    return out


@RULES.rule(
    "DIS004",
    "do-not-disrupt-does-not-stop-forceful",
    "info",
    summary="A pod relies on karpenter.sh/do-not-disrupt on a NodePool that uses spot or expires "
    "nodes.",
    why="The annotation blocks only the graceful methods (drift, emptiness, consolidation). It "
    "does not exclude nodes from the forceful ones: expiration, spot interruption, node repair "
    "(when that feature gate is on) and manual deletion.",
    fix="Plan for the forceful methods: on-demand capacity or expireAfter: Never for pods that "
    "must not move, a terminationGracePeriod that bounds the drain, and replicas with a PDB.",
    source="Karpenter docs, disruption (Pod-Level Controls)",
)
def do_not_disrupt_not_forceful(ctx: LintContext) -> Iterable[Finding]:
    seen: set[int] = set()
    for ref in ctx.pods:
        if id(ref.manifest) in seen:
            continue
        dnd = do_not_disrupt(ref)
        if dnd is None:
            continue
        seen.add(id(ref.manifest))
        methods = [text for pool in landing_pools(ctx, ref.pod) for text in _forceful(pool)]
        if not methods:
            continue
        yield _dnd_finding(ctx, ref, ref.manifest, dnd[0], methods)


def _dnd_finding(
    ctx: LintContext, ref: PodRef, manifest: Manifest, value: str, methods: list[str]
) -> Finding:
    return ctx.finding(
        "DIS004",
        "info",
        manifest,
        (*meta_path(ref), "annotations", DO_NOT_DISRUPT),
        f'{DO_NOT_DISRUPT}: "{value}" does not protect pod {ref.pod.key} from '
        f"{name_list(methods, 4)}",
    )
