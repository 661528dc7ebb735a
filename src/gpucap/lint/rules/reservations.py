"""Reserved-capacity rules (RES): On-Demand Capacity Reservations, Capacity Blocks for ML and
interruptible reservations that an EC2NodeClass selects with `capacityReservationSelectorTerms`.

Which reservations a class selects is Karpenter's provider's answer (aws
`pkg/providers/capacityreservation`: active ones, not past their end, matched by an id, tags or
owner term; `cloudprovider/aws/capacityreservation/provider.py` `select`) over the file given
with `--reservations`, at the time `plan` runs at (`runtime.clock.EPOCH`). Without that file the
account's reservations are unknown (RES005), and RES001 still judges a class by its terms.

A NodePool may use a reservation when its `karpenter.sh/capacity-type` requirement allows
`reserved` (no such requirement allows every capacity type) and its instance-type and zone
requirements allow the reservation's (aws `instancetype/offering/reserved_capacity_resolver.go`
gives a reserved offering only on the reservation's type and zone).

Registered into `rules.ALL` by `lint/rules/__init__.py`.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpucap.apis.capacityreservation import Reservations
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from gpucap.apis.serde import Manifest
from gpucap.apis.workloads import Deployment, StatefulSet
from gpucap.cloudprovider.aws.capacityreservation.provider import CapacityReservation, select
from gpucap.lint.context import LintContext, PoolView, pod_gpus
from gpucap.lint.queries import landing_pools, name_list
from gpucap.lint.registry import Finding, Registry
from gpucap.runtime.clock import EPOCH
from gpucap.runtime.rfc3339 import format_rfc3339
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.requirements import Requirements

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

RESERVED = "reserved"
TERMS = ("spec", "capacityReservationSelectorTerms")
_SOURCE = (
    "Karpenter docs, Utilizing On-Demand Capacity Reservations and Capacity Blocks (v1.14); "
    "aws/karpenter-provider-aws pkg/providers/capacityreservation and "
    "pkg/providers/instancetype/offering/reserved_capacity_resolver.go"
)


def _termed(ctx: LintContext) -> list[tuple[Manifest, EC2NodeClass]]:
    """The EC2NodeClasses with `capacityReservationSelectorTerms`."""
    return [
        (m, nc)
        for m, nc in ctx.located(EC2NodeClass)
        if nc.spec.capacity_reservation_selector_terms
    ]


def _selected(ctx: LintContext, nodeclass: EC2NodeClass) -> list[CapacityReservation]:
    """The reservations of `--reservations` the class selects (none without the file)."""
    key = ("reservations_selected", nodeclass.name)
    cached: list[CapacityReservation] | None = ctx.memo.get(key)
    if cached is None:
        terms = nodeclass.spec.capacity_reservation_selector_terms or []
        given: Reservations = ctx.known_reservations
        cached = select(terms, given, EPOCH) if terms else []
        ctx.memo[key] = cached
    return cached


def _class_pools(ctx: LintContext, name: str) -> list[PoolView]:
    return [p for p in ctx.pools if p.nodepool.spec.template.spec.node_class_ref.name == name]


def _allows_reserved(reqs: Requirements) -> bool:
    req = reqs.get(CAPACITY_TYPE)
    return req is None or req.has(RESERVED)


def _requirement_index(pool: PoolView, key: str) -> int | None:
    for i, r in enumerate(pool.nodepool.spec.template.spec.requirements):
        if r.key == key:
            return i
    return None


def _pool_excludes(pool: PoolView, r: CapacityReservation) -> str | None:
    """What of `r` the pool excludes: `reserved`, its instance type (not among the pool's
    launchable types: any requirement may rule it out, an instance family or GPU count as
    well as the type's name) or its zone; None when the pool can launch into it."""
    if not _allows_reserved(pool.template.requirements):
        return "capacity type reserved"
    if all(it.name != r.instance_type for it in pool.instance_types):
        return f"instance type {r.instance_type}"
    return _excludes(pool.template.requirements, r)


def _excludes(reqs: Requirements, r: CapacityReservation) -> str | None:
    """What of `r` the requirements exclude (capacity type, instance type, zone), or None."""
    if not _allows_reserved(reqs):
        return "capacity type reserved"
    for key, value, what in (
        (INSTANCE_TYPE, r.instance_type, "instance type"),
        (ZONE, r.zone, "zone"),
    ):
        req = reqs.get(key)
        if req is not None and not req.has(value):
            return f"{what} {value}"
    return None


# ==== RES001 ===================================================================================


@RULES.rule(
    "RES001",
    "reservations-selected-but-not-allowed",
    "warning",
    summary="A GPU NodePool's EC2NodeClass selects capacity reservations, but the NodePool's "
    "karpenter.sh/capacity-type requirement does not allow `reserved`.",
    why="Karpenter launches into a reservation only for a NodePool that allows the `reserved` "
    "capacity type. A reservation is paid for whether or not instances run in it, so this pool "
    "pays for spot or on-demand nodes next to reserved capacity that stays idle.",
    fix="Add `reserved` to the NodePool's karpenter.sh/capacity-type values (Karpenter tries "
    "reserved first, then spot, then on-demand), or drop the selector terms from the class.",
    source=_SOURCE,
)
def reservations_selected_but_not_allowed(ctx: LintContext) -> Iterable[Finding]:
    for _, nc in _termed(ctx):
        selected = _selected(ctx, nc)
        if ctx.reservations is not None and not selected:
            continue  # the file says the terms select nothing: nothing is paid for in vain
        what = (
            f"reservations {name_list(r.id for r in selected)}"
            if selected
            else "capacity reservations (capacityReservationSelectorTerms)"
        )
        for pool in _class_pools(ctx, nc.name):
            if not pool.is_gpu_pool or _allows_reserved(pool.template.requirements):
                continue
            at = _requirement_index(pool, CAPACITY_TYPE)
            path = (
                ("spec", "template", "spec", "requirements", at, "values")
                if at is not None
                else ("spec", "template", "spec", "requirements")
            )
            yield ctx.finding(
                "RES001",
                "warning",
                pool.manifest,
                path,
                f"EC2NodeClass {nc.name} selects {what}, but this GPU NodePool does not allow "
                "capacity type `reserved`: Karpenter never launches its nodes into them, and the "
                "reservations are paid for unused",
            )
            break


# ==== RES002 ===================================================================================


@RULES.rule(
    "RES002",
    "reservation-no-nodepool-can-use",
    "warning",
    summary="A capacity reservation an EC2NodeClass selects that no NodePool of that class can "
    "launch into: every one excludes its instance type, its zone or `reserved`.",
    why="Karpenter offers a reservation only on its instance type in its zone, and only to a "
    "NodePool whose requirements allow both and the `reserved` capacity type. If none does, the "
    "reservation is paid for and never used.",
    fix="Allow the reservation's instance type, zone and `reserved` in one NodePool of the class "
    "(a small NodePool just for the reservation works), or stop selecting the reservation.",
    source=_SOURCE,
)
def reservation_no_nodepool_can_use(ctx: LintContext) -> Iterable[Finding]:
    for m, nc in _termed(ctx):
        pools = _class_pools(ctx, nc.name)
        if not pools:
            continue
        for r in _selected(ctx, nc):
            why = [(p.name, _pool_excludes(p, r)) for p in pools]
            if any(w is None for _, w in why):
                continue
            said = "; ".join(f"NodePool {name} excludes {w}" for name, w in why)
            yield ctx.finding(
                "RES002",
                "warning",
                m,
                TERMS,
                f"selects reservation {r.id} ({r.instance_type} in {r.zone}), which no NodePool "
                f"of this class can launch into ({said}): it is paid for and stays unused",
            )


# ==== RES003 ===================================================================================


@RULES.rule(
    "RES003",
    "capacity-block-ends-under-long-running-workload",
    "warning",
    summary="A Deployment or StatefulSet whose GPU pods can only run in Capacity Blocks (its "
    "NodePools allow only `reserved`, and only Capacity Blocks are there for it): the blocks "
    "end, and its pods then have nowhere to go.",
    why="A Capacity Block has a fixed end. EC2 takes its instances back at the end, and Karpenter "
    "drains them shortly before. A long-running workload that can only use the block is left "
    "Pending from then on; a Job that finishes in the block is what Capacity Blocks are for.",
    fix="Let the workload's NodePool fall back to on-demand or spot (add them to its "
    "karpenter.sh/capacity-type values), extend or buy the next block before the end, or run "
    "the workload as a Job.",
    source=_SOURCE,
)
def capacity_block_ends_under_long_running_workload(ctx: LintContext) -> Iterable[Finding]:
    seen: set[int] = set()
    for ref in ctx.pods:
        if not isinstance(ref.manifest.obj, (Deployment, StatefulSet)):
            continue
        if id(ref.manifest) in seen or pod_gpus(ref.pod) <= 0:
            continue
        pools = landing_pools(ctx, ref.pod)
        if not pools or any(_allows_other_than_reserved(p) for p in pools):
            continue
        reqs = pod_requirements(ref.pod, strict=True)
        usable: list[CapacityReservation] = []
        for pool in pools:
            nc = pool.ec2nodeclass
            if nc is None:
                continue
            usable += [
                r
                for r in _selected(ctx, nc)
                if _pool_excludes(pool, r) is None and _excludes(reqs, r) is None
            ]
        if not usable or not all(r.is_capacity_block and r.end is not None for r in usable):
            continue
        seen.add(id(ref.manifest))
        last = max(r.end for r in usable if r.end is not None)
        blocks = name_list(sorted({r.id for r in usable}))
        yield ctx.finding(
            "RES003",
            "warning",
            ref.manifest,
            ("spec",),
            f"its GPU pods can only run in Capacity Block(s) {blocks} (NodePool "
            f"{', '.join(p.name for p in pools)} allows only `reserved`), which end by "
            f"{format_rfc3339(last)}: from then on its pods stay Pending",
        )


def _allows_other_than_reserved(pool: PoolView) -> bool:
    req = pool.template.requirements.get(CAPACITY_TYPE)
    return req is None or any(req.has(ct) for ct in ("spot", "on-demand"))


# ==== RES004 ===================================================================================


@RULES.rule(
    "RES004",
    "reservations-need-feature-gate",
    "info",
    summary="An EC2NodeClass selects capacity reservations: this needs Karpenter's "
    "ReservedCapacity feature gate.",
    why="Karpenter resolves capacityReservationSelectorTerms, offers reserved capacity and "
    "launches into reservations only with the ReservedCapacity feature gate on. It is on by "
    "default in v1.14 (settings.featureGates.reservedCapacity); with it off, Karpenter ignores "
    "the terms, no node is `reserved`, and none of gpucap's reserved-capacity modelling applies.",
    fix="Keep the ReservedCapacity feature gate on (Helm settings.featureGates.reservedCapacity: "
    "true), or remove the terms if the cluster runs with it off.",
    source="Karpenter docs, Settings (Feature Gates) and Utilizing On-Demand Capacity "
    "Reservations and Capacity Blocks (v1.14)",
)
def reservations_need_feature_gate(ctx: LintContext) -> Iterable[Finding]:
    for m, _ in _termed(ctx):
        yield ctx.finding(
            "RES004",
            "info",
            m,
            TERMS,
            "selects capacity reservations: Karpenter uses them only "
            "with the ReservedCapacity feature gate (on by default in v1.14); with it off, none "
            "of this applies",
        )


# ==== RES005 ===================================================================================


@RULES.rule(
    "RES005",
    "reservations-unknown",
    "info",
    summary="An EC2NodeClass has capacityReservationSelectorTerms and no reservations file was "
    "given (--reservations): which reservations it selects is unknown to gpucap.",
    why="The reservations live in the AWS account, not in the manifests. Without them, gpucap "
    "plans and lints as if the terms selected nothing, which is unknown, not absent: a cluster "
    "may launch into reservations gpucap cannot see.",
    fix="Export the account's reservations with `gpucap catalog export --from-aws "
    "--reservations-out reservations.yaml` and pass `--reservations reservations.yaml`.",
    source=_SOURCE,
)
def reservations_unknown(ctx: LintContext) -> Iterable[Finding]:
    if ctx.reservations is not None:
        return
    for m, _ in _termed(ctx):
        yield ctx.finding(
            "RES005",
            "info",
            m,
            TERMS,
            "selects capacity reservations, but no --reservations file "
            "was given: which reservations it selects is unknown (not absent); export them "
            "with `gpucap catalog export --from-aws --reservations-out FILE`",
        )
