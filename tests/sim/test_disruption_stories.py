"""Disruption, scenario by scenario: small YAML stories (tests/sim/stories/) run end to end, one
rule of Karpenter's node lifecycle each (issue 11's "Done when" list), asserting on the event log
and the summary. Expected behaviour: ../shared/design/karpenter-disruption.md (§1-§3, §5, §7)."""

from __future__ import annotations

import pytest

from tests.sim.storyruns import (
    HOUR,
    commands,
    decisions,
    most_disrupted_at_once,
    of_type,
    run,
)


def test_when_empty_removes_an_empty_node_no_earlier_than_two_hours_after_its_last_pod_left() -> (
    None
):
    result = run("when-empty")
    (gone,) = of_type(result, "PodDeleted")
    (decision,) = decisions(result)
    assert (decision.get("reason"), decision.get("method"), decision.get("decision")) == (
        "Empty",
        "emptiness",
        "delete",
    )
    assert decision.get("nodeClaim") == "gpu-2"  # the node vllm-1 ran on
    assert decision.get("replacements") == []
    assert decision.t >= gone.t + 2 * HOUR
    # Karpenter's loop polls every 10 s and validates an emptiness command for 15 s.
    assert decision.t <= gone.t + 2 * HOUR + 10 + 15
    (deleted,) = of_type(result, "NodeClaimDeleted")
    assert deleted.get("nodeClaim") == "gpu-2"
    assert deleted.t >= decision.t
    assert [e.get("nodeClaim") for e in of_type(result, "NodeTerminated")] == ["gpu-2"]
    assert result.summary.get("disruptions") == {"Empty": 1}


def test_when_empty_never_removes_a_node_with_a_running_gpu_pod() -> None:
    result = run("when-empty")
    (bound,) = of_type(result, "PodBound", pod="default/vllm-0")
    assert bound.get("nodeClaim") == "gpu-1"
    assert decisions(result, nodeClaim="gpu-1") == []
    billed = {b["nodeClaim"]: b for b in result.summary.get("billing")}
    assert billed["gpu-1"]["terminated"] is None  # running to the end, 3.5 h
    assert of_type(result, "PodEvicted") == []


# ---- WhenEmptyOrUnderutilized ------------------------------------------------------------------------
def test_when_empty_or_underutilized_replaces_an_underused_g5_2xlarge_with_a_g5_xlarge() -> None:
    result = run("underutilized")
    first, replacement = of_type(result, "NodeClaimLaunched")
    assert (first.get("instanceType"), first.get("capacityType")) == ("g5.2xlarge", "on-demand")
    (decision,) = decisions(result)
    assert (decision.get("reason"), decision.get("decision")) == ("Underutilized", "replace")
    assert decision.get("method") == "single-node-consolidation"
    assert decision.get("nodeClaim") == first.get("nodeClaim")
    assert decision.get("replacements") == [replacement.get("nodeClaim")]
    assert (replacement.get("instanceType"), replacement.get("capacityType")) == (
        "g5.xlarge",
        "on-demand",
    )
    assert replacement.get("pricePerHour") < first.get("pricePerHour")  # strictly cheaper
    # consolidateAfter 5m, from the last pod event on the node (the 6-CPU pod leaving at 30m).
    (left,) = of_type(result, "PodDeleted", pod="default/big-0")
    assert decision.t >= left.t + 5 * 60
    # The replacement is up before the candidate is drained; the small pod moves onto it.
    (up,) = of_type(result, "NodeInitialized", nodeClaim=replacement.get("nodeClaim"))
    (evicted,) = of_type(result, "PodEvicted", pod="default/sliced-0")
    assert evicted.t >= up.t
    assert of_type(result, "PodBound", pod="default/sliced-0")[-1].get("nodeClaim") == (
        replacement.get("nodeClaim")
    )
    assert result.summary.get("disruptions") == {"Underutilized": 1}


def test_a_spot_node_is_not_replaced_by_a_cheaper_spot_node_while_spot_to_spot_is_off() -> None:
    result = run("underutilized-spot")
    (launch,) = of_type(result, "NodeClaimLaunched")
    assert (launch.get("instanceType"), launch.get("capacityType")) == ("g5.2xlarge", "spot")
    assert decisions(result) == []
    assert result.summary.get("disruptions") == {}


# ---- budgets -------------------------------------------------------------------------------------------
def test_a_budget_of_one_node_never_lets_two_nodes_be_disrupted_at_once() -> None:
    result = run("budget-1")
    assert commands(result) == [["gpu-1"], ["gpu-2"], ["gpu-3"]]
    # Strictly: between a node's decision and its deletion, no other decision of the pool.
    assert most_disrupted_at_once(result, "gpu") == 1
    assert result.summary.get("disruptions") == {"Empty": 3}


def test_a_drift_schedule_window_blocks_drift_outside_it_and_the_budget_still_holds_inside() -> (
    None
):
    result = run("drift-window")
    drifted = of_type(result, "NodeClaimDrifted")
    again = 4 * HOUR + 10 * 60
    assert [(e.get("nodeClaim"), e.t) for e in drifted] == [
        ("gpu-1", HOUR),
        ("gpu-2", HOUR),
        ("gpu-3", again),
        ("gpu-4", again),
    ]
    replaced = decisions(result, reason="Drifted")
    # The Drifted budget is 0 from 04:00 for 22 h: closed from 1h (drift) to 02:00, open until
    # 04:00 (the scenario starts at midnight UTC), closed again when the replacements drift.
    assert [e.get("nodeClaim") for e in replaced] == ["gpu-1", "gpu-2"]
    assert replaced[0].t == pytest.approx(2 * HOUR)
    assert all(2 * HOUR <= e.t < 4 * HOUR for e in replaced)
    assert result.summary.get("disruptions") == {"Drifted": 2}
    assert decisions(result, reason="Empty") == []
    # One at a time: a drifted node counts until its instance is terminating (drained).
    assert most_disrupted_at_once(result, "gpu", until_drained=True) == 1


def test_a_budget_of_two_nodes_lets_drift_replace_two_nodes_at_once() -> None:
    result = run("drift-budget-2")
    first, second = decisions(result, reason="Drifted")
    (up,) = of_type(result, "NodeInitialized", nodeClaim=first.get("replacements")[0])
    # The loop runs again at once after a command; budget 2 - 1 disrupting = 1 left.
    assert second.t < up.t
    assert second.t - first.t <= 10
    assert most_disrupted_at_once(result, "gpu", until_drained=True) == 2


@pytest.mark.parametrize(
    ("story", "expected"),
    [
        # ceil(10% x 3) = 1, then ceil(10% x 2) = 1, then 1.
        ("budget-10pct", [["gpu-1"], ["gpu-2"], ["gpu-3"]]),
        # ceil(50% x 3) = 2 in one emptiness command, then ceil(50% x 1) = 1.
        ("budget-50pct", [["gpu-1", "gpu-2"], ["gpu-3"]]),
    ],
)
def test_percentage_budgets_round_up_as_karpenter_rounds(
    story: str, expected: list[list[str]]
) -> None:
    result = run(story)
    assert commands(result) == expected
    assert most_disrupted_at_once(result, "gpu") == len(expected[0])
    assert result.summary.get("disruptions") == {"Empty": 3}


# ---- AMI releases: @latest rolls the fleet, a pinned alias keeps it --------------------------------
def test_at_latest_plus_a_release_rolls_the_fleet_within_the_budget_after_the_ssm_cache_expires() -> (
    None
):
    result = run("ami-rollout")
    resolved = of_type(result, "AMIResolved")
    assert [e.get("version") for e in resolved] == ["v20260827", "v20261001"]
    drifted = of_type(result, "NodeClaimDrifted")
    assert sorted(e.get("nodeClaim") for e in drifted) == ["gpu-1", "gpu-2", "gpu-3"]
    assert {e.get("reason") for e in drifted} == {"AMIDrift"}
    # Released at 30m, seen once the alias read at the first launch is 24 h old.
    assert all(e.t >= resolved[0].t + 24 * HOUR for e in drifted)
    rolled = decisions(result, reason="Drifted")
    assert [e.get("nodeClaim") for e in rolled] == ["gpu-1", "gpu-2", "gpu-3"]
    assert all(e.get("decision") == "replace" and len(e.get("replacements")) == 1 for e in rolled)
    # The first replacement is the first launch on the new release.
    first_replacement = rolled[0].get("replacements")[0]
    (launch,) = of_type(result, "NodeClaimLaunched", nodeClaim=first_replacement)
    assert resolved[1].t == launch.t
    assert most_disrupted_at_once(result, "gpu", until_drained=True) == 1
    assert sorted(e.get("nodeClaim") for e in of_type(result, "NodeTerminated")) == [
        "gpu-1",
        "gpu-2",
        "gpu-3",
    ]
    assert result.summary.get("pendingAtEnd") == []
    assert result.summary.get("disruptions") == {"Drifted": 3}


def test_a_pinned_alias_keeps_the_fleet_through_a_release() -> None:
    result = run("ami-pinned")
    assert [e.get("version") for e in of_type(result, "AMIResolved")] == ["v20260827"]
    assert of_type(result, "NodeClaimDrifted") == []
    assert decisions(result) == []
    assert result.summary.get("disruptions") == {}
    assert len(of_type(result, "NodeClaimLaunched")) == 3


# ---- expiration ----------------------------------------------------------------------------------------
def test_expire_after_replaces_nodes_even_under_a_zero_budget() -> None:
    result = run("expire-zero-budget")
    created = {e.get("nodeClaim"): e.t for e in of_type(result, "NodeClaimCreated")}
    expired = decisions(result, reason="Expired")
    assert [e.get("nodeClaim") for e in expired] == ["gpu-1", "gpu-2"]
    for e in expired:
        assert e.get("method") == "expiration"
        assert e.t == pytest.approx(created[e.get("nodeClaim")] + HOUR)
    assert [e.get("nodeClaim") for e in of_type(result, "NodeTerminated")] == ["gpu-1", "gpu-2"]
    # The pods run again on new nodes; no voluntary method touched anything.
    for pod in ("default/vllm-0", "default/vllm-1"):
        assert of_type(result, "PodBound", pod=pod)[-1].get("nodeClaim") in ("gpu-3", "gpu-4")
    assert commands(result) == []
    assert result.summary.get("disruptions") == {"Expired": 2}


# ---- do-not-disrupt ------------------------------------------------------------------------------------
def test_do_not_disrupt_on_a_pod_blocks_consolidation() -> None:
    protected, plain = run("do-not-disrupt"), run("underutilized")
    # The same underused g5.2xlarge: consolidated without the annotation, left alone with it.
    assert decisions(plain, reason="Underutilized")
    assert decisions(protected, reason="Underutilized") == []
    assert commands(protected) == []


def test_do_not_disrupt_on_a_pod_does_not_block_expiration() -> None:
    result = run("do-not-disrupt")
    (created,) = (e for e in of_type(result, "NodeClaimCreated") if e.get("nodeClaim") == "gpu-1")
    (expired,) = decisions(result, reason="Expired")
    assert expired.get("nodeClaim") == "gpu-1"
    assert expired.t == pytest.approx(created.t + 2 * HOUR)
    # The drain does not evict the protected pod; terminationGracePeriod (10m) forces it out,
    # early enough for its own 30 s grace period to end by the deadline.
    (evicted,) = of_type(result, "PodEvicted", pod="default/sliced-0")
    assert evicted.t == pytest.approx(expired.t + 10 * 60 - 30)
    (deleted,) = of_type(result, "NodeClaimDeleted", nodeClaim="gpu-1")
    assert deleted.t >= evicted.t
    assert of_type(result, "PodBound", pod="default/sliced-0")[-1].get("nodeClaim") == "gpu-2"


# ---- spot interruption ---------------------------------------------------------------------------------
def test_a_spot_interruption_drains_and_reprovisions_within_the_two_minute_notice() -> None:
    result = run("interrupt")
    (warning,) = of_type(result, "SpotInterruptionWarning")
    notice_ends = warning.t + 120
    (decision,) = decisions(result)
    assert (decision.get("nodeClaim"), decision.get("reason")) == ("gpu-1", "Interrupted")
    (evicted,) = of_type(result, "PodEvicted")
    assert warning.t <= evicted.t < notice_ends
    replacement = of_type(result, "NodeClaimLaunched")[-1]
    assert replacement.get("nodeClaim") != "gpu-1"
    assert warning.t < replacement.t < notice_ends
    (terminated,) = of_type(result, "NodeTerminated")
    assert terminated.get("nodeClaim") == "gpu-1"
    assert terminated.t < notice_ends


# ---- drift of a NodePool change ------------------------------------------------------------------------
def test_changing_a_nodepools_taints_drifts_and_replaces_its_nodes() -> None:
    result = run("nodepool-taint-drift")
    drifted = of_type(result, "NodeClaimDrifted")
    assert [(e.get("nodeClaim"), e.get("reason")) for e in drifted] == [
        ("gpu-1", "NodePoolDrifted"),
        ("gpu-2", "NodePoolDrifted"),
    ]
    assert all(e.t == HOUR for e in drifted)
    replaced = decisions(result, reason="Drifted")
    assert [e.get("nodeClaim") for e in replaced] == ["gpu-1", "gpu-2"]
    assert all(e.get("decision") == "replace" for e in replaced)
    assert sorted(e.get("nodeClaim") for e in of_type(result, "NodeTerminated")) == [
        "gpu-1",
        "gpu-2",
    ]
    # The default budget (10% of 2, rounded up: 1) still holds.
    assert most_disrupted_at_once(result, "gpu", until_drained=True) == 1
    assert result.summary.get("pendingAtEnd") == []


def test_changing_a_nodepools_limits_or_weight_does_not_drift_its_nodes() -> None:
    result = run("nodepool-limits-no-drift")
    applied = of_type(result, "ScenarioEvent", kind="apply")
    assert [e.get("source") for e in applied] == ["nodepool-limits-changed.yaml"]
    assert of_type(result, "NodeClaimDrifted") == []
    assert decisions(result) == []
    assert result.summary.get("disruptions") == {}
