"""Laws the simulated world keeps in every scenario (hypothesis, issue 11): small random
scenarios (1-2 NodePools, 1-3 Deployments, 2-8 timed events, 2-30 h) are run end to end and
their event log and final state checked against six laws, each an oracle written here from
Karpenter's rules (karpenter-disruption.md), not from gpucap's controllers:

1. a graceful disruption (Empty, Drifted, Underutilized) is decided only while the NodePool's
   budget allows it;
2. the physical capacity of a NodePool's launched NodeClaims not being deleted never exceeds
   its limits (Karpenter stops counting a node once it is marked for deletion, and counts an
   initialized node by what it advertises: both overruns are Karpenter's and allowed here);
3. no pod is bound to a node whose taints it does not tolerate (the template's taints, and
   `karpenter.sh/disrupted:NoSchedule` once the node is being disrupted; the pod's
   tolerations as EKS stores them, with those its admission adds to a GPU pod);
4. no node is disrupted as Empty or Underutilized inside its NodePool's consolidateAfter;
5. at the end, every running instance has a NodeClaim and every launched NodeClaim not being
   deleted has a running instance;
6. a disruption command's candidate has no DisruptionBlocked in force when it is decided (one
   said and not followed by a DisruptionUnblocked; drift aside for what its pods hold), and a
   node's DisruptionBlocked is said only when it changes (never the same message twice in a
   row without a DisruptionUnblocked between).

`GPUCAP_LAW_EXAMPLES=500 pytest tests/sim/test_laws.py` runs more scenarios than the default.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, note, settings

from gpucap.sim.recorder import Event
from tests.sim.laws import (
    EXAMPLES,
    ROLLING,
    Laws,
    Story,
    allowance,
    check_laws,
    stories,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stories())
@example(ROLLING)
def test_every_random_scenario_keeps_the_six_laws(story: Story) -> None:
    note(story.to_yaml())
    broken, _ = check_laws(story)
    assert not broken, "\n".join(broken)


def test_the_rolling_example_exercises_drift_replacement_and_emptiness() -> None:
    broken, result = check_laws(ROLLING)
    assert broken == []
    reasons = [e.get("reason") for e in result.events if e.type == "DisruptionDecision"]
    assert reasons[:2] == ["Drifted", "Drifted"]
    assert "Empty" in reasons


# ---- the oracles catch what they are for ------------------------------------------------------------
@pytest.mark.parametrize(
    ("nodes", "total", "allowed"),
    [
        ("10%", 1, 1),
        ("10%", 10, 1),
        ("10%", 11, 2),
        ("50%", 3, 2),
        ("0", 5, 0),
        ("2", 1, 2),
        ("10%", 0, 0),
    ],
)
def test_percentages_round_up_and_counts_are_taken_literally(
    nodes: str, total: int, allowed: int
) -> None:
    assert allowance([{"nodes": nodes}], "Empty", total) == allowed


def test_the_allowance_is_the_minimum_over_the_budgets_for_the_reason() -> None:
    budgets: list[dict[str, Any]] = [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "2"}]
    assert allowance(budgets, "Drifted", 10) == 0
    assert allowance(budgets, "Empty", 10) == 2
    assert allowance(None, "Empty", 11) == 2  # the API default, 10%
    assert allowance([{"nodes": "0", "reasons": ["Drifted"]}], "Empty", 3) == math.inf


def _log(*rows: tuple[float, str, dict[str, Any]]) -> list[Event]:
    return [Event(t, type_, fields) for t, type_, fields in sorted(rows, key=lambda r: r[0])]


def _node(t: float, name: str) -> list[tuple[float, str, dict[str, Any]]]:
    return [
        (t, "NodeClaimCreated", {"nodeClaim": name, "nodePool": "gpu"}),
        (
            t,
            "NodeClaimLaunched",
            {"nodeClaim": name, "nodePool": "gpu", "instanceType": "g5.xlarge", "gpus": 1},
        ),
        (t + 50, "NodeRegistered", {"nodeClaim": name, "node": name}),
        (
            t + 85,
            "NodeInitialized",
            {"nodeClaim": name, "node": name, "gpusAdvertised": {"nvidia.com/gpu": 1}},
        ),
    ]


def test_the_laws_catch_a_second_disruption_beyond_the_budget_and_one_inside_consolidate_after() -> (
    None
):
    story = ROLLING  # default budget 10%, consolidateAfter 1h, limit 2 GPUs
    events = _log(
        *_node(0, "gpu-1"),
        *_node(0, "gpu-2"),
        (3000, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Drifted"}),
        (3000, "DisruptionDecision", {"nodeClaim": "gpu-2", "reason": "Empty"}),
    )
    broken = Laws(story).check(events, {})
    assert [b.split(":")[0] for b in broken] == [
        "budget exceeded at t=3000s",
        "inside consolidateAfter at t=3000s",
    ]
    # ... and not once the first node's instance is terminating, an hour after initialization.
    assert (
        Laws(story).check(
            [
                *events[:-1],
                Event(3000 + 3600, "DisruptionDecision", {"nodeClaim": "gpu-2", "reason": "Empty"}),
            ],
            {"gpu-1": 3001},
        )
        == []
    )


def test_the_laws_catch_a_third_gpu_over_the_limit_and_an_untolerated_taint() -> None:
    events = _log(
        *_node(0, "gpu-1"),
        *_node(0, "gpu-2"),
        (200, "PodBound", {"pod": "default/d0-0", "node": "gpu-1", "nodeClaim": "gpu-1"}),
        (300, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Expired"}),
        (300, "PodBound", {"pod": "default/d0-1", "node": "gpu-1", "nodeClaim": "gpu-1"}),
        *_node(400, "gpu-3"),  # gpu-1 is being deleted: it no longer counts
        *_node(500, "gpu-4"),
    )
    broken = Laws(ROLLING).check(events, {})
    assert broken[0].startswith("untolerated taint at t=300s: default/d0-1")
    assert "karpenter.sh/disrupted" in broken[0]
    assert broken[1].startswith("limit exceeded at t=500s: NodePool gpu has 3 nvidia.com/gpu")


def test_a_gpu_node_initialized_before_its_gpus_are_advertised_is_not_counted_against_the_limit() -> (
    None
):
    events = _log(*_node(0, "gpu-1"), *_node(0, "gpu-2"), *_node(400, "gpu-3"))
    events = [
        Event(e.t, e.type, {**e.fields, "gpusAdvertised": {"nvidia.com/gpu": 0}})
        if e.type == "NodeInitialized" and e.get("nodeClaim") == "gpu-1"
        else e
        for e in events
    ]
    assert Laws(ROLLING).check(events, {}) == []


def test_the_laws_catch_a_decision_on_a_blocked_node_and_a_block_said_twice() -> None:
    blocked = {"nodeClaim": "gpu-1", "node": "gpu-1", "message": "Pdb prevents pod evictions"}
    events = _log(
        *_node(0, "gpu-1"),
        (7000, "DisruptionBlocked", blocked),
        (7100, "DisruptionBlocked", blocked),
        (7200, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Drifted"}),
        (7300, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Empty"}),
    )
    broken = Laws(ROLLING).check(events, {})
    assert [b.split(" ")[:3] for b in broken] == [
        ["DisruptionBlocked", "said", "twice"],
        ["gpu-1", "disrupted", "as"],  # Empty, while its PDB holds it (drift may go on)
    ]
    # Freed in between, both are fine.
    freed = [*events[:-3], Event(7150, "DisruptionUnblocked", {"nodeClaim": "gpu-1"})]
    freed += [
        Event(7160, "DisruptionBlocked", blocked),
        Event(7170, "DisruptionUnblocked", {"nodeClaim": "gpu-1"}),
    ]
    freed += [Event(7300, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Empty"})]
    assert Laws(ROLLING).check(freed, {}) == []
