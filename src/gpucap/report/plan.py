"""What the report shows of a plan: each NodeClaim with its pods, its launch and its price, the
instance-type options it had (the cheaper ones Karpenter did not take, and why), and the pending
pods with what ruled each NodePool out (`plan --explain`'s data).

`plan_view(plan, manifests, catalog)` reads the `Plan` of `controllers/provisioning` and asks the
same pure functions `plan` and `plan --explain` use; nothing is decided here:

- The options of a NodeClaim are its scheduler NodeClaim's remaining instance types, the
  requirements they were filtered with (both kept on the `PlannedNodeClaim`), and Karpenter's launch
  filters run on them once (`cloudprovider/aws/instance/launch.py: launch_filter`). For each
  option, the cheapest of its offerings; when that is cheaper than the launch, why it was not
  taken is the filters' trace's answer (`LaunchTrace.why`, which checks in Karpenter's order).
- Pending pods: `plan`'s reason and `explain_pod`'s per-NodePool explanation, for the first
  `MAX_EXPLAINED` pending pods (each explanation is a scheduling pass). Pods another Karpenter
  serves (EKS Auto Mode, KWOK) are not pending: they are listed apart, with who serves them.

With a reservations file (`--reservations`), the notes end with each selected reservation's
use (free, used by the plan, left: `plan`'s RESERVATIONS table) and why the others are not
selected.

Called by the CLI's `plan --report` and `demo --report` (through `report/page.py`). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.instance.launch import launch_filter
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.controllers.provisioning import Plan, PlannedNodeClaim
from gpucap.operator.plan import explain_pod, reservations_use
from gpucap.scheduling.explanation import PoolExplanation
from gpucap.scheduling.instancetypes import Offering
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "MAX_EXPLAINED",
    "MAX_OPTIONS",
    "ClaimView",
    "OptionView",
    "PendingView",
    "PlanView",
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


def _options(
    claim: PlannedNodeClaim, reqs: Requirements | None, requests: dict[str, int]
) -> list[OptionView]:
    launch = claim.launch
    trace = launch_filter(claim.instance_types, reqs, requests) if reqs is not None else None
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
        if cheaper and trace is not None:
            best = min(cheaper, key=lambda o: (o.price, o.capacity_type, o.zone))
            why = trace.why(it, best)
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
    claims = []
    for c in plan.node_claims:
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
                options=_options(c, c.requirements, dict(c.requests)),
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
        notes=[*plan.notes, *_reservation_notes(plan, manifests)],
        price_per_hour=round(sum(launch.price for launch in plan.launches.values()), 6),
        not_planned={k: np.reason for k, np in sorted(plan.not_planned.items())},
    )


def _reservation_notes(plan: Plan, manifests: Manifests) -> list[str]:
    """`plan`'s RESERVATIONS table as notes (none without reservations in the input)."""
    if not manifests.reservations.capacity_reservations:
        return []
    use = reservations_use(manifests, plan)
    out = []
    for u in use.uses:
        into = f" ({', '.join(u.node_claims)})" if u.node_claims else ""
        out.append(
            f"reservation {u.id} ({u.kind}, {u.instance_type} in {u.zone}): {u.available} "
            f"free, {u.used} used by this plan{into}, {u.available - u.used} left; reserved "
            "nodes are paid by the reservation, not by the hour"
        )
    out += [f"reservation {rid} is not selected: {why}" for rid, why in use.unselected]
    return out
