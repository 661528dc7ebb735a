"""What the report shows of a plan: each NodeClaim with its pods, its launch and its price, the
instance-type options it had (the cheaper ones Karpenter did not take, and why), and the pending
pods with what ruled each NodePool out (`plan --explain`'s data).

`plan_view(plan, manifests, catalog)` reads the `Plan` of `controllers/provisioning` and asks the
same pure functions `plan` and `plan --explain` use; nothing is decided here:

- The options of a NodeClaim are its scheduler NodeClaim's remaining instance types (the pass's
  `Results`, matched in order), the requirements they were filtered with, and Karpenter's launch
  filters (`cloudprovider/aws/instance/launch.py`). For each option, the cheapest of its offerings;
  when that is cheaper than the launch, why it was not taken, checked in Karpenter's order: the
  offering is unavailable (no capacity in the catalog, or ICE'd); its zone or capacity type is not
  allowed by the NodeClaim's requirements; the type (or its spot offering) was dropped by the launch
  filters before CreateFleet (exotic types, spot above the cheapest on-demand, the 60 cheapest); its
  capacity type is not the one `getCapacityType` chose (spot before on-demand).
- Pending pods: `plan`'s reason and `explain_pod`'s per-NodePool explanation, for the first
  `MAX_EXPLAINED` pending pods (each explanation is a scheduling pass). Pods another Karpenter
  serves (EKS Auto Mode, KWOK) are not pending: they are listed apart, with who serves them.

Called by the CLI's `plan --report` and `demo --report` (through `report/page.py`). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.catalog import Catalog
from gpucap.cloudprovider.aws.instance.launch import choose_capacity_type, filter_instance_types
from gpucap.cloudprovider.types import InsufficientCapacityError
from gpucap.controllers.provisioning import Plan, PlannedNodeClaim
from gpucap.operator.plan import explain_pod
from gpucap.scheduling.explanation import PoolExplanation
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "MAX_EXPLAINED",
    "MAX_OPTIONS",
    "ClaimView",
    "OptionView",
    "PendingView",
    "PlanView",
    "not_taken_reason",
    "plan_view",
]

MAX_EXPLAINED = 25  # pending pods explained (each is a scheduling pass)
MAX_OPTIONS = 12  # options shown per NodeClaim, cheapest first (the launched one always)


@dataclass(frozen=True, slots=True)
class OptionView:
    instance_type: str
    offering: str  # "spot in us-east-1a"
    price: float | None
    status: str  # "launched" | "cheaper, not taken" | "dearer"
    why: str


@dataclass(frozen=True, slots=True)
class ClaimView:
    name: str
    node_pool: str
    pass_number: int
    static: bool
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price: float | None
    launch_error: str | None
    pods: list[str]
    option_count: int
    options: list[OptionView]


@dataclass(frozen=True, slots=True)
class PendingView:
    pod: str
    reason: str
    explanation: list[PoolExplanation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlanView:
    claims: list[ClaimView]
    existing: dict[str, list[str]]
    pending: list[PendingView]
    unexplained: int  # pending pods past MAX_EXPLAINED
    notes: list[str]
    price_per_hour: float
    # Pods another Karpenter serves (EKS Auto Mode, KWOK): pod key -> "served by ...".
    not_planned: dict[str, str] = field(default_factory=dict)


def _offering_words(o: Offering) -> str:
    return f"{o.capacity_type} in {o.zone}"


def not_taken_reason(
    it: InstanceType,
    offering: Offering,
    reqs: Requirements,
    remaining: Sequence[InstanceType],
    capacity_type: str,
) -> str:
    """Why `offering` of option `it`, cheaper than the launch, was not taken (the module
    docstring's order). `remaining` are the types the launch filters kept, `capacity_type` the
    one Karpenter chose."""
    if not offering.available:
        return f"no capacity: {offering.capacity_type} {it.name} in {offering.zone} is unavailable"
    zones = reqs.get(ZONE)
    if zones is not None and not zones.has(offering.zone):
        return f"zone {offering.zone} is not allowed by the NodeClaim's requirements"
    caps = reqs.get(CAPACITY_TYPE)
    if caps is not None and not caps.has(offering.capacity_type):
        return f"{offering.capacity_type} is not allowed by the NodeClaim's requirements"
    kept = next((k for k in remaining if k.name == it.name), None)
    if kept is None:
        return (
            "dropped by Karpenter's launch filters before CreateFleet (exotic types, spot above "
            "on-demand, the 60 cheapest types)"
        )
    if not any(
        o.zone == offering.zone and o.capacity_type == offering.capacity_type
        for o in kept.offerings
    ):
        return (
            "spot offering priced above the cheapest on-demand one: Karpenter's spot filter "
            "drops it"
        )
    if offering.capacity_type != capacity_type:
        return (
            f"Karpenter launches {capacity_type} when the NodeClaim allows it and some is "
            f"available; {offering.capacity_type} is its fallback"
        )
    return "EC2 Fleet passed it over"


def _options(
    claim: PlannedNodeClaim, reqs: Requirements | None, requests: dict[str, int]
) -> list[OptionView]:
    launch = claim.launch
    remaining: list[InstanceType] = []
    capacity_type = launch.capacity_type if launch is not None else ""
    if reqs is not None:
        try:
            remaining = filter_instance_types(claim.instance_types, reqs, requests)
            capacity_type = choose_capacity_type(remaining, reqs)
        except InsufficientCapacityError:
            remaining = []
    rows: list[tuple[float, OptionView]] = []
    for it in claim.instance_types:
        if not it.offerings:
            continue
        chosen = launch is not None and it.name == launch.instance_type
        cheaper = [o for o in it.offerings if launch is not None and o.price < launch.price]
        if chosen and launch is not None:
            why = f"launched: the cheapest {launch.capacity_type} offering CreateFleet was given"
            view = OptionView(
                it.name, f"{launch.capacity_type} in {launch.zone}", launch.price, "launched", why
            )
            rows.append((-1.0, view))
            continue
        if cheaper and reqs is not None:
            best = min(cheaper, key=lambda o: (o.price, o.capacity_type, o.zone))
            why = not_taken_reason(it, best, reqs, remaining, capacity_type)
            status = "cheaper, not taken"
        else:
            allowed = [o for o in it.offerings if reqs is None or o.allowed_by(reqs)]
            best = min(allowed or it.offerings, key=lambda o: (o.price, o.capacity_type, o.zone))
            why = "dearer than the launch" if launch is not None else "the launch failed"
            status = "dearer"
        rows.append(
            (best.price, OptionView(it.name, _offering_words(best), best.price, status, why))
        )
    rows.sort(key=lambda r: (r[0], r[1].instance_type))
    return [v for _, v in rows[:MAX_OPTIONS]]


def plan_view(plan: Plan, manifests: Manifests, catalog: Catalog) -> PlanView:
    """The report's data for `plan` (see the module docstring)."""
    # The scheduler's NodeClaims of each pass, in the order the loop turned them into claims.
    scheduled: dict[str, tuple[Requirements, dict[str, int]]] = {}
    for number, results in enumerate(plan.pass_results, 1):
        mine = [c for c in plan.node_claims if c.pass_number == number and not c.static]
        for planned, new in zip(mine, results.new_node_claims, strict=False):
            scheduled[planned.name] = (new.requirements, dict(new.requests))
    claims = []
    for c in plan.node_claims:
        reqs, requests = scheduled.get(c.name, (None, dict(c.requests)))
        launch = c.launch
        claims.append(
            ClaimView(
                name=c.name,
                node_pool=c.nodepool,
                pass_number=c.pass_number,
                static=c.static,
                instance_type=launch.instance_type if launch else None,
                zone=launch.zone if launch else None,
                capacity_type=launch.capacity_type if launch else None,
                price=launch.price if launch else None,
                launch_error=c.launch_error,
                pods=[p.key for p in c.pods],
                option_count=len(c.instance_types),
                options=_options(c, reqs, requests),
            )
        )
    pending = []
    keys = sorted(plan.pod_errors)
    for key in keys[:MAX_EXPLAINED]:
        explained = explain_pod(manifests, catalog, key) or []
        pending.append(PendingView(key, plan.pod_errors[key], explained))
    return PlanView(
        claims=claims,
        existing=dict(plan.existing),
        pending=pending,
        unexplained=max(0, len(keys) - MAX_EXPLAINED),
        notes=list(plan.notes),
        price_per_hour=round(sum(launch.price for launch in plan.launches.values()), 6),
        not_planned={k: np.reason for k, np in sorted(plan.not_planned.items())},
    )
