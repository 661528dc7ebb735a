"""The consolidation state's 5-minute reset in the simulator (kubernetes-sigs/karpenter
`pkg/controllers/state/cluster.go: ConsolidationState`, `pkg/controllers/disruption/
consolidation.go: IsConsolidated`): a method that found nothing is not run again until the
cluster changes or 5 minutes pass, and a NodeClaim turning consolidatable is no such change.
The simulator skips Karpenter's idle 10-second polls, so it must wake for the reset itself."""

from __future__ import annotations

from tests.sim.storyruns import decisions, of_type, run

MINUTE = 60.0
POLL = 10.0
VALIDATION = 15.0


def test_a_node_turning_consolidatable_in_a_still_cluster_is_consolidated_at_the_state_reset() -> (
    None
):
    result = run("underutilized-still")
    bound = of_type(result, "PodBound", pod="default/sliced-0")[0]
    assert bound.get("nodeClaim") == "gpu-1"  # the g5.2xlarge the 6-CPU pod had
    (decision,) = decisions(result)
    assert (decision.get("nodeClaim"), decision.get("method"), decision.get("decision")) == (
        "gpu-1",
        "single-node-consolidation",
        "replace",
    )
    # consolidateAfter (2m) ran out at bind + 2m, but the state last moved at the bind: the
    # method runs again at its 5-minute reset (at the next 10 s poll), then validates 15 s.
    assert decision.t >= bound.t + 5 * MINUTE
    assert decision.t <= bound.t + 5 * MINUTE + POLL + VALIDATION
    assert result.summary.get("disruptions") == {"Underutilized": 1}


def test_the_node_with_nothing_cheaper_stays() -> None:
    result = run("underutilized-still")
    (bound,) = of_type(result, "PodBound", pod="default/vllm-0")
    assert decisions(result, nodeClaim=bound.get("nodeClaim")) == []
