"""The report's data for a simulated run (`report/simulation.py`), from the event log alone:
each NodeClaim's life and why it came and went, the series on the shared time axis, and the
event table in the terminal's words. Hand-built logs for the rules, real stories for the whole."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.report.simulation import PHASES, gpu_limits, removal_words, simulation_view
from gpucap.sim.recorder import Event, Recorder
from gpucap.sim.summary import summarize
from gpucap.sim.timeline import timeline
from tests.report.runs import story


def view_of(name: str) -> Any:
    scenario, result = story(name)
    return simulation_view(
        result.events, result.summary, end=result.end, limits=gpu_limits(scenario)
    )


def bar(view: Any, name: str) -> Any:
    return next(b for b in view.nodes if b.name == name)


def log(*events: tuple[float, str, dict[str, Any]]) -> list[Event]:
    rec = Recorder()
    for t, kind, fields in events:
        rec.emit(t, kind, **fields)
    return rec.events


LAUNCH = {
    "nodePool": "gpu",
    "instanceType": "g5.xlarge",
    "zone": "us-east-1a",
    "capacityType": "spot",
    "pricePerHour": 0.3939,
    "gpus": 1,
}


def one_node(*extra: tuple[float, str, dict[str, Any]]) -> list[Event]:
    return log(
        (0, "PodCreated", {"pod": "default/a-0", "gpus": {"nvidia.com/gpu": 1}}),
        (1, "NodeClaimCreated", {"nodeClaim": "gpu-1", "nodePool": "gpu"}),
        (1, "PodNominated", {"pod": "default/a-0", "nodeClaim": "gpu-1"}),
        (1, "NodeClaimLaunched", {"nodeClaim": "gpu-1", **LAUNCH}),
        (1, "AMIResolved", {"nodeClass": "gpu", "alias": "al2023@v1", "image": "ami-1"}),
        (51, "NodeRegistered", {"nodeClaim": "gpu-1", "node": "gpu-1"}),
        (
            86,
            "NodeInitialized",
            {"nodeClaim": "gpu-1", "node": "gpu-1", "gpusAdvertised": {"nvidia.com/gpu": 4}},
        ),
        (86, "PodBound", {"pod": "default/a-0", "node": "gpu-1", "nodeClaim": "gpu-1"}),
        (90, "PodReady", {"pod": "default/a-0", "node": "gpu-1"}),
        *extra,
    )


# ---- a NodeClaim's life --------------------------------------------------------------------------
def test_a_node_removed_by_consolidation_carries_that_reason() -> None:
    view = view_of("underutilized.yaml")
    removed = bar(view, "gpu-1")
    assert removed.why_removed is not None
    assert removed.why_removed.startswith("consolidation: its pods fit elsewhere for less")
    assert "gpu-2" in removed.why_removed  # the decision's message names the replacement


def test_the_replacement_says_which_node_it_replaces_and_why() -> None:
    view = view_of("underutilized.yaml")
    assert bar(view, "gpu-2").why_created == "replacement for gpu-1 (Underutilized)"
    assert bar(view, "gpu-2").why_removed is None  # still running at the end


def test_a_node_made_for_a_pending_pod_names_the_pod() -> None:
    view = simulation_view(one_node(), {}, end=100)
    assert bar(view, "gpu-1").why_created == "for pending pod default/a-0"


def test_a_node_carries_its_offering_price_and_the_ami_its_node_class_resolved_to() -> None:
    node = bar(simulation_view(one_node(), {}, end=100), "gpu-1")
    assert (node.instance_type, node.zone, node.capacity_type) == (
        "g5.xlarge",
        "us-east-1a",
        "spot",
    )
    assert node.price_per_hour == pytest.approx(0.3939)
    assert node.ami == "ami-1"


def test_phases_follow_each_other_from_creation_to_termination() -> None:
    events = one_node(
        (200, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Empty"}),
        (210, "NodeClaimDeleted", {"nodeClaim": "gpu-1", "reason": "Empty"}),
        (230, "NodeTerminated", {"nodeClaim": "gpu-1"}),
    )
    node = bar(simulation_view(events, {}, end=300), "gpu-1")
    assert [(p.name, p.start, p.end) for p in node.phases] == [
        ("launching", 1, 51),
        ("registered", 51, 86),
        ("initialized", 86, 200),
        ("draining", 200, 230),
    ]
    assert node.why_removed == "consolidation: the node was empty"


def test_a_phase_still_open_at_the_end_ends_with_the_run() -> None:
    node = bar(simulation_view(one_node(), {}, end=100), "gpu-1")
    assert node.phases[-1].name == "initialized"
    assert node.phases[-1].end == 100
    assert node.why_removed is None


def test_an_abandoned_disruption_leaves_the_node_serving_with_no_removal_reason() -> None:
    events = one_node(
        (200, "DisruptionDecision", {"nodeClaim": "gpu-1", "reason": "Underutilized"}),
        (260, "DisruptionAbandoned", {"nodeClaim": "gpu-1"}),
    )
    node = bar(simulation_view(events, {}, end=300), "gpu-1")
    assert node.why_removed is None
    assert [p.name for p in node.phases] == ["launching", "registered", "initialized"]


def test_a_failed_launch_is_one_launching_phase_and_says_why() -> None:
    events = log(
        (1, "NodeClaimCreated", {"nodeClaim": "gpu-1", "nodePool": "gpu"}),
        (
            1,
            "LaunchFailed",
            {"nodeClaim": "gpu-1", "nodePool": "gpu", "reason": "InsufficientCapacity"},
        ),
        (1, "NodeClaimDeleted", {"nodeClaim": "gpu-1", "reason": "InsufficientCapacity"}),
    )
    node = bar(simulation_view(events, {}, end=100), "gpu-1")
    assert [p.name for p in node.phases] == ["launching"]
    assert node.why_removed == "launch failed: InsufficientCapacity"
    assert node.capacity_type is None


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("Empty", "consolidation: the node was empty"),
        ("Underutilized", "consolidation: its pods fit elsewhere for less"),
        ("Drifted", "drift: it no longer matches its NodePool or EC2NodeClass"),
        ("Expired", "expiration: it reached its NodePool's expireAfter"),
        ("Interrupted", "spot interruption: EC2 reclaimed the instance"),
        ("SomethingNew", "disrupted: SomethingNew"),
    ],
)
def test_disruption_reasons_in_words(reason: str, words: str) -> None:
    decision = Event(1, "DisruptionDecision", {"nodeClaim": "n", "reason": reason})
    assert removal_words(decision, None, None) == words


def test_an_interrupted_spot_node_says_so() -> None:
    view = view_of("interrupt.yaml")
    assert bar(view, "gpu-1").why_removed == "spot interruption: EC2 reclaimed the instance"


# ---- the series ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["underutilized.yaml", "spot-ice.yaml", "when-empty.yaml"])
def test_each_cost_series_ends_at_the_summarys_cost_for_its_capacity_type(name: str) -> None:
    _, result = story(name)
    view = view_of(name)
    by_capacity: dict[str, float] = {}
    for row in result.summary["costUSDByType"].values():
        for cap, dollars in row.items():
            by_capacity[cap] = by_capacity.get(cap, 0.0) + dollars
    assert {cap: series[-1][1] for cap, series in view.cost.items()} == pytest.approx(
        by_capacity, abs=1e-5
    )
    assert sum(series[-1][1] for series in view.cost.values()) == pytest.approx(
        result.summary["costUSD"], abs=1e-5
    )


def test_cost_never_decreases() -> None:
    for series in view_of("spot-ice.yaml").cost.values():
        dollars = [d for _, d in series]
        assert dollars == sorted(dollars)


def test_time_slicing_shows_as_more_gpus_advertised_than_launched_under_the_limit() -> None:
    view = view_of("timeslicing.yaml")
    assert view.limits == {"NodePool gpu limit (nvidia.com/gpu)": 6}
    peak_physical = max(physical for _, _, _, physical in view.gpus)
    peak_advertised = max(advertised for _, _, advertised, _ in view.gpus)
    assert peak_physical == 6  # the limit counts physical GPUs
    assert peak_advertised == 4 * peak_physical  # each advertises 4 time-sliced replicas


def test_pods_are_pending_then_bound_then_ready() -> None:
    view = simulation_view(one_node(), {}, end=100)
    assert [(t, p, b, r) for t, p, b, r in view.pods] == [
        (0, 1, 0, 0),
        (86, 0, 1, 0),
        (90, 0, 0, 1),
    ]


def test_pod_counts_add_up_to_the_pods_that_exist_at_the_end() -> None:
    _, result = story("limits.yaml")
    view = view_of("limits.yaml")
    _, pending, bound, ready = view.pods[-1]
    assert pending == len(result.summary["pendingAtEnd"])
    assert (
        pending + bound + ready
        == result.summary["pods"]["created"] - result.summary["pods"]["deleted"]
    )


# ---- the event table -----------------------------------------------------------------------------
def test_the_event_table_says_what_the_terminal_timeline_says() -> None:
    _, result = story("spot-ice.yaml")
    view = view_of("spot-ice.yaml")
    assert [r.text for r in view.timeline] == [line.text for line in timeline(result.events)]


def test_every_event_line_has_a_category_for_the_filter() -> None:
    categories = {r.category for r in view_of("interrupt.yaml").timeline}
    categories |= {r.category for r in view_of("spot-ice.yaml").timeline}
    assert categories == {"pods", "nodes", "disruption", "scenario"}


def test_the_view_of_a_log_ignores_events_after_its_end() -> None:
    events = one_node((200, "NodeTerminated", {"nodeClaim": "gpu-1"}))
    view = simulation_view(events, summarize(events, end=100), end=100)
    assert bar(view, "gpu-1").terminated is None
    assert PHASES[2] == bar(view, "gpu-1").phases[-1].name
