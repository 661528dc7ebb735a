"""A `karpenter.sh/do-not-disrupt` with a duration holds a pod's node only while the pod has run
less than it (kubernetes-sigs/karpenter `pkg/utils/pod` `IsDoNotDisruptActive`, counted from the
pod's start). When it runs out nothing in the cluster changes, so the simulator, which skips
Karpenter's idle 10-second polls, must wake the disruption loop at that instant itself, as it
does for consolidateAfter."""

from __future__ import annotations

from tests.sim.storyruns import decisions, of_type, run

MINUTE = 60.0
POLL = 10.0
VALIDATION = 15.0
HOLD = 20 * MINUTE
# The consolidation state moves at most 5 minutes after it last did.
STATE_RESET = 5 * MINUTE


def test_a_node_held_by_a_do_not_disrupt_duration_is_consolidated_when_the_hold_runs_out() -> None:
    result = run("underutilized-held")
    bound = of_type(result, "PodBound", pod="default/sliced-0")[0]
    assert bound.get("nodeClaim") == "gpu-1"
    (decision,) = decisions(result)
    assert decision.get("nodeClaim") == "gpu-1"
    assert decision.get("decision") == "replace"
    # Not while the hold lasts; soon after it ends (the next poll, the consolidation state's
    # reset at the latest, and the 15 s validation).
    assert decision.t >= bound.t + HOLD
    assert decision.t <= bound.t + HOLD + STATE_RESET + POLL + VALIDATION


def test_the_same_node_without_the_hold_is_consolidated_sooner() -> None:
    held = decisions(run("underutilized-held"))[0].t
    free = decisions(run("underutilized-still"))[0].t
    assert free < held
