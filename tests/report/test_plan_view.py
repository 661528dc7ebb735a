"""The report's data for a plan (`report/plan.py`): each NodeClaim's options and why the cheaper
ones were not taken, checked in Karpenter's order, and the pending pods with `plan --explain`'s
reasons. The reasons are a table of offerings against one claim's requirements; the whole on the
bundled workshop."""

from __future__ import annotations

import pytest

from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.apis.serde import LoadResult, Manifest
from gpucap.apis.workloads import Deployment
from gpucap.cloudprovider.aws.instance.launch import LaunchOptions, LaunchTrace
from gpucap.operator.plan import plan
from gpucap.report.plan import MAX_OPTIONS, plan_view
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirement, Requirements
from tests.report.runs import catalog, workshop, workshop_plan


def g5(*offerings: Offering) -> InstanceType:
    base = catalog().instance_type("g5.xlarge")
    # A new object, not `dataclasses.replace`: that would share the catalog type's price memo.
    return InstanceType(base.name, base.requirements, base.capacity, base.allocatable, offerings)


SPOT_A = Offering("us-east-1a", "spot", 0.30, True)
SPOT_B_GONE = Offering("us-east-1b", "spot", 0.25, False)
SPOT_C = Offering("us-east-1c", "spot", 0.28, True)
OD_A = Offering("us-east-1a", "on-demand", 0.29, True)


def reqs(*rs: Requirement) -> Requirements:
    return Requirements.of(*rs)


def trace(requirements: Requirements, *kept: InstanceType) -> LaunchTrace:
    """A launch trace whose filters kept `kept` (the capacity type follows from them)."""
    return LaunchTrace(requirements, LaunchOptions(requirements, list(kept)))


@pytest.mark.parametrize(
    ("offering", "requirements", "kept", "why"),
    [
        (
            SPOT_B_GONE,
            reqs(),
            True,
            "no capacity: spot g5.xlarge in us-east-1b is unavailable",
        ),
        (
            SPOT_C,
            reqs(Requirement.new(ZONE, "In", ["us-east-1a"])),
            True,
            "zone us-east-1c is not allowed by the NodeClaim's requirements",
        ),
        (
            SPOT_C,
            reqs(Requirement.new(CAPACITY_TYPE, "In", ["on-demand"])),
            True,
            "spot is not allowed by the NodeClaim's requirements",
        ),
        (
            SPOT_C,
            reqs(),
            False,
            "dropped by Karpenter's launch filters before CreateFleet (exotic types, spot above on-demand, the 60 cheapest types)",
        ),
        (
            OD_A,
            reqs(),
            True,
            "Karpenter launches spot when the NodeClaim allows it and some is available; on-demand is its fallback",
        ),
    ],
)
def test_why_a_cheaper_offering_was_not_taken(
    offering: Offering, requirements: Requirements, kept: bool, why: str
) -> None:
    it = g5(SPOT_A, SPOT_B_GONE, SPOT_C, OD_A)
    assert trace(requirements, *([it] if kept else [])).why(it, offering) == why


def test_a_spot_offering_the_spot_filter_dropped_says_so() -> None:
    it = g5(SPOT_A, SPOT_C, OD_A)
    kept = g5(SPOT_A, OD_A)  # the filter left the type without its us-east-1c spot offering
    why = trace(reqs(), kept).why(it, SPOT_C)
    assert why.startswith("spot offering priced above the cheapest on-demand one")


def test_the_workshop_plan_launches_its_cheapest_option_and_lists_the_others_as_dearer() -> None:
    loaded, made = workshop_plan()
    view = plan_view(made, loaded.objects, catalog())
    (claim,) = view.claims
    assert (claim.instance_type, claim.capacity_type) == ("g6.xlarge", "spot")
    assert claim.pods == ["default/vllm-0"]
    statuses = [(o.instance_type, o.status) for o in claim.options]
    assert statuses[0] == ("g6.xlarge", "launched")
    assert {s for _, s in statuses[1:]} == {"dearer"}
    prices = [o.price for o in claim.options[1:]]
    assert prices == sorted(prices)
    assert all(p is not None and claim.price is not None and p >= claim.price for p in prices)
    assert len(claim.options) == claim.option_count <= MAX_OPTIONS


def test_pods_held_back_by_the_gpu_limit_come_with_plan_explains_reasons() -> None:
    loaded, made = workshop_plan(8)
    view = plan_view(made, loaded.objects, catalog())
    assert len(view.claims) == 6
    assert [p.pod for p in view.pending] == ["default/vllm-6", "default/vllm-7"]
    for p in view.pending:
        assert "exceed limits" in p.reason
        (pool,) = p.explanation
        assert pool.nodepool == "gpu"
        assert pool.verdict  # what --explain prints for the NodePool
    assert view.price_per_hour == pytest.approx(sum(c.price or 0 for c in view.claims))


def test_a_pod_that_allows_only_on_demand_sees_the_cheaper_spot_options_refused_by_its_requirements() -> (
    None
):
    loaded = workshop()
    pinned = LoadResult(issues=list(loaded.issues))
    for m in loaded.manifests:
        obj = m.obj
        if isinstance(obj, Deployment) and obj.metadata.name == "vllm":
            pod = obj.spec.template.spec.model_copy(
                update={"node_selector": {"karpenter.sh/capacity-type": "on-demand"}}
            )
            template = obj.spec.template.model_copy(update={"spec": pod})
            obj = obj.model_copy(
                update={"spec": obj.spec.model_copy(update={"template": template})}
            )
        pinned.manifests.append(Manifest(obj, m.source))
    made = plan(pinned.objects, catalog())
    (claim,) = plan_view(made, pinned.objects, catalog()).claims
    assert (claim.instance_type, claim.capacity_type) == ("g6.xlarge", "on-demand")
    cheaper = [o for o in claim.options if o.status == "cheaper, not taken"]
    assert [o.instance_type for o in cheaper] == ["g5.xlarge", "g6.2xlarge", "g5.2xlarge"]
    for o in cheaper:
        assert o.offering.startswith("spot in ")
        assert o.why == "spot is not allowed by the NodeClaim's requirements"
