"""The summary of a run (`sim/summary.py`), from hand-built event logs with exact numbers, and
the laws it keeps on any log (hypothesis)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.sim.recorder import Event, Recorder, read_events
from gpucap.sim.summary import BOUND_NOT_READY, NO_DECISION, nearest_rank, summarize

GPU1 = {"nvidia.com/gpu": 1}


def ev(t: float, kind: str, /, **fields: Any) -> Event:
    return Event(t, kind, fields)


def launch(
    t: float,
    claim: str,
    *,
    it: str = "g5.xlarge",
    cap: str = "spot",
    price: float = 0.36,
    gpus: int = 1,
    zone: str = "us-east-1a",
) -> Event:
    return ev(
        t,
        "NodeClaimLaunched",
        nodeClaim=claim,
        nodePool="gpu",
        instanceType=it,
        zone=zone,
        capacityType=cap,
        pricePerHour=price,
        gpus=gpus,
    )


# ---- cost, node-hours, GPU-hours ----------------------------------------------------------------
def test_a_node_is_billed_from_launch_to_termination_at_its_launch_price() -> None:
    s = summarize([launch(100, "gpu-1"), ev(3700, "NodeTerminated", nodeClaim="gpu-1")], end=7200)
    assert s["costUSD"] == 0.36
    assert s["nodeHours"] == {"g5.xlarge": {"spot": 1.0}}
    assert s["billing"] == [
        {
            "nodeClaim": "gpu-1",
            "nodePool": "gpu",
            "instanceType": "g5.xlarge",
            "zone": "us-east-1a",
            "capacityType": "spot",
            "pricePerHour": 0.36,
            "launched": 100.0,
            "terminated": 3700.0,
            "billedSeconds": 3600.0,
            "costUSD": 0.36,
        }
    ]


def test_a_node_still_running_is_billed_until_the_end() -> None:
    s = summarize([launch(0, "gpu-1", price=1.006)], end=1800)
    assert s["costUSD"] == 0.503
    assert s["billing"][0]["terminated"] is None


def test_events_after_the_end_are_not_counted() -> None:
    log = [launch(0, "gpu-1"), ev(7200, "NodeTerminated", nodeClaim="gpu-1"), launch(7300, "gpu-2")]
    s = summarize(log, end=3600)
    assert s["costUSD"] == 0.36
    assert s["nodeClaims"]["terminated"] == 0
    assert s["nodeClaims"]["launched"] == 1


def test_hours_and_cost_are_split_by_instance_type_and_capacity_type() -> None:
    log = [
        launch(0, "a", it="g5.xlarge", cap="spot", price=0.4),
        launch(0, "b", it="g5.xlarge", cap="on-demand", price=1.0),
        launch(0, "c", it="g6.12xlarge", cap="on-demand", price=4.6, gpus=4),
        launch(1800, "d", it="g5.xlarge", cap="spot", price=0.4),
        ev(1800, "NodeTerminated", nodeClaim="c"),
    ]
    s = summarize(log, end=3600)
    assert s["nodeHours"] == {
        "g5.xlarge": {"on-demand": 1.0, "spot": 1.5},
        "g6.12xlarge": {"on-demand": 0.5},
    }
    assert s["gpuHours"] == {
        "g5.xlarge": {"on-demand": 1.0, "spot": 1.5},
        "g6.12xlarge": {"on-demand": 2.0},
    }
    assert s["nodes"] == {"g5.xlarge": {"on-demand": 1, "spot": 2}, "g6.12xlarge": {"on-demand": 1}}
    assert s["costUSDByType"] == {
        "g5.xlarge": {"on-demand": 1.0, "spot": 0.6},
        "g6.12xlarge": {"on-demand": 2.3},
    }
    assert s["costUSD"] == 3.9


def test_a_failed_launch_costs_nothing() -> None:
    log = [
        ev(0, "NodeClaimCreated", nodeClaim="a", nodePool="gpu"),
        ev(0, "LaunchFailed", nodeClaim="a", nodePool="gpu", reason="InsufficientCapacity"),
    ]
    s = summarize(log, end=3600)
    assert s["costUSD"] == 0
    assert s["nodeClaims"] == {
        "created": 1,
        "launched": 0,
        "failed": 1,
        "registered": 0,
        "initialized": 0,
        "deleted": 0,
        "terminated": 0,
    }


# ---- advertised vs requested GPU-hours ------------------------------------------------------------
def test_advertised_gpu_hours_run_from_initialization_to_termination() -> None:
    log = [
        launch(0, "a", gpus=1),
        ev(60, "NodeRegistered", nodeClaim="a", node="n-a"),
        ev(900, "NodeInitialized", nodeClaim="a", node="n-a", gpusAdvertised={"nvidia.com/gpu": 4}),
        ev(2700, "NodeTerminated", nodeClaim="a", node="n-a"),
    ]
    s = summarize(log, end=3600)
    assert s["gpuHoursAdvertised"] == {"nvidia.com/gpu": 2.0}  # 4 GPUs x 30 min (time-sliced x4)
    assert s["gpuHours"] == {"g5.xlarge": {"spot": 0.75}}  # the physical GPU, launch to end


def test_requested_gpu_hours_run_while_the_pod_is_bound() -> None:
    log = [
        ev(0, "PodCreated", pod="default/a", gpus={"nvidia.com/gpu": 2}),
        ev(0, "PodCreated", pod="default/b", gpus={"nvidia.com/gpu": 1}),
        ev(0, "PodCreated", pod="default/cpu", gpus={}),
        ev(600, "PodBound", pod="default/a", node="n1", nodeClaim="a"),
        ev(600, "PodBound", pod="default/b", node="n1", nodeClaim="a"),
        ev(600, "PodBound", pod="default/cpu", node="n1", nodeClaim="a"),
        ev(1800, "PodEvicted", pod="default/a", node="n1", reason="Interrupted"),
        ev(2400, "PodBound", pod="default/a", node="n2", nodeClaim="b"),
        ev(3000, "PodDeleted", pod="default/b"),
    ]
    s = summarize(log, end=3600)
    # a: 600-1800 and 2400-3600 = 40 min x 2; b: 600-3000 = 40 min x 1
    assert s["gpuHoursRequested"] == {"nvidia.com/gpu": 2.0}


# ---- time to bound and ready ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("p", "expected"),
    [(5, 15), (30, 20), (40, 20), (50, 35), (75, 40), (95, 50), (100, 50)],
)
def test_nearest_rank_percentiles(p: int, expected: float) -> None:
    assert nearest_rank([35, 20, 15, 50, 40], p) == expected


def test_times_to_bound_and_ready_are_measured_from_creation_per_pod() -> None:
    log: list[Event] = []
    for i in range(20):
        log.append(ev(i, "PodCreated", pod=f"default/p{i}", gpus=GPU1))
    for i in range(20):  # pod i is bound i+1 seconds after it was created, ready 100 s later
        log.append(ev(2 * i + 1, "PodBound", pod=f"default/p{i}", node="n"))
        log.append(ev(2 * i + 101, "PodReady", pod=f"default/p{i}", node="n"))
    s = summarize(sorted(log, key=lambda e: e.t), end=3600)
    assert s["timeToBound"] == {"p50": 10.0, "p95": 19.0, "max": 20.0, "count": 20}
    assert s["timeToReady"] == {"p50": 110.0, "p95": 119.0, "max": 120.0, "count": 20}
    assert s["percentiles"] == "nearest-rank"


def test_a_pod_bound_again_after_eviction_counts_its_first_bind_only() -> None:
    log = [
        ev(0, "PodCreated", pod="default/a", gpus=GPU1),
        ev(30, "PodBound", pod="default/a", node="n1"),
        ev(90, "PodEvicted", pod="default/a", node="n1", reason="Interrupted"),
        ev(500, "PodBound", pod="default/a", node="n2"),
    ]
    assert summarize(log, end=600)["timeToBound"] == {
        "p50": 30.0,
        "p95": 30.0,
        "max": 30.0,
        "count": 1,
    }


def test_no_pod_bound_gives_no_times() -> None:
    s = summarize([ev(0, "PodCreated", pod="default/a", gpus=GPU1)], end=10)
    assert s["timeToBound"] == {"p50": None, "p95": None, "max": None, "count": 0}


# ---- disruptions, limits, pending -------------------------------------------------------------
def test_disruptions_are_counted_once_per_nodeclaim_and_reason() -> None:
    log = [
        ev(10, "SpotInterruptionWarning", nodeClaim="a", node="n-a"),
        ev(10, "DisruptionDecision", nodeClaim="a", reason="Interrupted"),
        ev(20, "DisruptionDecision", nodeClaim="b", reason="Empty"),
        ev(30, "DisruptionDecision", nodeClaim="c", reason="Empty"),
        ev(40, "LimitReached", nodePool="gpu", resource="nvidia.com/gpu", message="m"),
        ev(50, "LimitReached", nodePool="gpu", resource="nvidia.com/gpu", message="m"),
    ]
    s = summarize(log, end=60)
    assert s["disruptions"] == {"Empty": 2, "Interrupted": 1}
    assert s["limitReached"] == 2


def test_pods_pending_at_the_end_say_why() -> None:
    log = [
        ev(0, "PodCreated", pod="default/big", gpus={"nvidia.com/gpu": 16}),
        ev(0, "PodCreated", pod="default/late", gpus=GPU1),
        ev(0, "PodCreated", pod="default/vllm", gpus=GPU1),
        ev(0, "PodCreated", pod="default/moved", gpus=GPU1),
        ev(0, "PodCreated", pod="default/gone", gpus=GPU1),
        ev(1, "PodUnschedulable", pod="default/big", reason="no instance type has 16 GPUs"),
        ev(1, "PodUnschedulable", pod="default/vllm", reason="first reason"),
        ev(2, "NodeClaimCreated", nodeClaim="gpu-1", nodePool="gpu"),
        ev(2, "PodNominated", pod="default/vllm", nodeClaim="gpu-1"),
        launch(2, "gpu-1"),
        ev(50, "NodeRegistered", nodeClaim="gpu-1", node="ip-1", devicePlugin=None),
        ev(60, "PodBound", pod="default/moved", node="ip-0"),
        ev(70, "PodEvicted", pod="default/moved", node="ip-0", reason="Interrupted"),
        ev(80, "PodDeleted", pod="default/gone"),
    ]
    s = summarize(log, end=3600)
    assert s["pendingAtEnd"] == [
        {"pod": "default/big", "since": 0.0, "reason": "no instance type has 16 GPUs"},
        {"pod": "default/late", "since": 0.0, "reason": NO_DECISION},
        {"pod": "default/moved", "since": 70.0, "reason": NO_DECISION},
        {
            "pod": "default/vllm",
            "since": 0.0,
            "reason": "nominated to NodeClaim gpu-1: its node registered but never initialized "
            "(GPU never advertised)",
            "nodeClaim": "gpu-1",
        },
    ]
    assert s["uninitializedAtEnd"] == [
        {
            "nodeClaim": "gpu-1",
            "node": "ip-1",
            "instanceType": "g5.xlarge",
            "gpus": 1,
            "registered": 50.0,
            "devicePlugin": None,
        }
    ]
    assert s["pods"] == {
        "created": 5,
        "bound": 1,
        "ready": 0,
        "evicted": 1,
        "deleted": 1,
        "neverReady": 5,
    }


def test_the_summary_is_the_same_from_the_events_file() -> None:
    sink = io.StringIO()
    r = Recorder(sink=sink)
    r.emit(0, "PodCreated", pod="default/a", gpus=GPU1)
    r.emit(1 / 3, "NodeClaimCreated", nodeClaim="gpu-1", nodePool="gpu")
    r.emit(
        1 / 3,
        "NodeClaimLaunched",
        nodeClaim="gpu-1",
        nodePool="gpu",
        instanceType="g5.xlarge",
        zone="us-east-1a",
        capacityType="spot",
        pricePerHour=0.3623,
        gpus=1,
    )
    r.emit(100.1234, "PodBound", pod="default/a", node="n1", nodeClaim="gpu-1")
    back = read_events(io.StringIO(sink.getvalue()))
    assert summarize(back, end=999.5) == summarize(r.events, end=999.5)


def test_a_bad_end_is_refused() -> None:
    with pytest.raises(ValueError, match="the end of a run"):
        summarize([], end=float("nan"))


# ---- laws ----------------------------------------------------------------------------------------
MS = st.integers(min_value=0, max_value=10_000_000).map(lambda ms: ms / 1000)


@st.composite
def logs(draw: st.DrawFn, prefix: str) -> list[Event]:
    """A well-formed log of a few nodes and pods, their names starting with `prefix`."""
    events: list[Event] = []
    for i in range(draw(st.integers(0, 4))):
        claim = f"{prefix}node-{i}"
        t0 = draw(MS)
        price = draw(st.integers(0, 50_000)) / 1000
        events.append(launch(t0, claim, price=price, gpus=draw(st.integers(0, 8))))
        t_init = t0 + draw(MS)
        n = draw(st.integers(0, 16))
        if draw(st.booleans()):
            events.append(
                ev(t_init, "NodeInitialized", nodeClaim=claim, node=claim, gpusAdvertised={"r": n})
            )
        if draw(st.booleans()):
            events.append(ev(t_init + draw(MS), "NodeTerminated", nodeClaim=claim, node=claim))
    for i in range(draw(st.integers(0, 4))):
        pod = f"default/{prefix}pod-{i}"
        t0 = draw(MS)
        events.append(ev(t0, "PodCreated", pod=pod, gpus={"r": draw(st.integers(0, 8))}))
        if draw(st.booleans()):
            t_bound = t0 + draw(MS)
            events.append(ev(t_bound, "PodBound", pod=pod, node="n"))
            if draw(st.booleans()):
                events.append(ev(t_bound + draw(MS), "PodDeleted", pod=pod))
    return sorted(events, key=lambda e: e.t)


@settings(max_examples=200, deadline=None)
@given(log=logs("a-"), end=MS)
def test_cost_is_never_negative_and_no_node_is_billed_longer_than_the_run(
    log: list[Event], end: float
) -> None:
    s = summarize(log, end=end)
    assert s["costUSD"] >= 0
    for bill in s["billing"]:
        assert 0 <= bill["billedSeconds"] <= end


@settings(max_examples=200, deadline=None)
@given(a=logs("a-"), b=logs("b-"), end=MS)
def test_advertised_and_requested_gpu_hours_add_up_over_nodes_and_pods(
    a: list[Event], b: list[Event], end: float
) -> None:
    both = summarize(sorted(a + b, key=lambda e: e.t), end=end)
    sa, sb = summarize(a, end=end), summarize(b, end=end)
    for key in ("gpuHoursAdvertised", "gpuHoursRequested"):
        resources = set(both[key]) | set(sa[key]) | set(sb[key])
        for r in resources:
            parts = sa[key].get(r, 0.0) + sb[key].get(r, 0.0)
            assert both[key].get(r, 0.0) == pytest.approx(parts, abs=2e-6)
    assert both["costUSD"] == pytest.approx(sa["costUSD"] + sb["costUSD"], abs=2e-6)


def test_serving_lost_counts_an_evicted_ready_pod_until_it_is_ready_again() -> None:
    events = [
        Event(0.0, "PodCreated", {"pod": "default/vllm-0", "gpus": {"nvidia.com/gpu": 1}}),
        Event(10.0, "PodBound", {"pod": "default/vllm-0", "node": "gpu-1"}),
        Event(400.0, "PodReady", {"pod": "default/vllm-0", "node": "gpu-1"}),
        Event(
            1000.0, "PodEvicted", {"pod": "default/vllm-0", "node": "gpu-1", "reason": "Drifted"}
        ),
        Event(1010.0, "PodBound", {"pod": "default/vllm-0", "node": "gpu-2"}),
        Event(1400.0, "PodReady", {"pod": "default/vllm-0", "node": "gpu-2"}),
        # A pod evicted before it was ready loses no serving.
        Event(0.0, "PodCreated", {"pod": "default/web", "gpus": {}}),
        Event(5.0, "PodBound", {"pod": "default/web", "node": "gpu-1"}),
        Event(1000.0, "PodEvicted", {"pod": "default/web", "node": "gpu-1", "reason": "Drifted"}),
        # A serving pod evicted and never back counts until the end.
        Event(0.0, "PodCreated", {"pod": "default/late", "gpus": {}}),
        Event(5.0, "PodBound", {"pod": "default/late", "node": "gpu-1"}),
        Event(6.0, "PodReady", {"pod": "default/late", "node": "gpu-1"}),
        Event(1800.0, "PodEvicted", {"pod": "default/late", "node": "gpu-1", "reason": "Expired"}),
    ]
    events.sort(key=lambda e: e.t)
    s = summarize(events, end=2000.0)
    assert s["servingPodsEvicted"] == 2
    assert s["servingLostSeconds"] == 400.0 + 200.0


# ---- pods that never became Ready ---------------------------------------------------------------
def test_pods_deleted_before_they_were_ready_are_counted_and_say_why_they_waited() -> None:
    why = 'nodepool "gpu": not ready, EC2NodeClass gpus not found (did you mean gpu?)'
    s = summarize(
        [
            ev(0, "PodCreated", pod="default/vllm-0", gpus=GPU1),
            ev(1, "PodUnschedulable", pod="default/vllm-0", reason=why),
            ev(0, "PodCreated", pod="default/web", gpus={}),
            ev(5, "PodBound", pod="default/web", node="n"),
            ev(9, "PodReady", pod="default/web", node="n"),
            ev(0, "PodCreated", pod="default/vllm-1", gpus=GPU1),
            ev(40, "PodBound", pod="default/vllm-1", node="n"),
            ev(1200, "PodDeleted", pod="default/vllm-0"),
            ev(1200, "PodDeleted", pod="default/vllm-1"),
            ev(1300, "PodDeleted", pod="default/web"),
        ],
        end=1800,
    )
    assert s["pendingAtEnd"] == []
    assert s["pods"]["neverReady"] == 2
    assert s["deletedBeforeReady"] == [
        {"pod": "default/vllm-0", "created": 0, "deleted": 1200, "reason": why},
        {"pod": "default/vllm-1", "created": 0, "deleted": 1200, "reason": BOUND_NOT_READY},
    ]


def test_a_pod_still_pending_at_the_end_counts_as_never_ready_but_not_as_deleted() -> None:
    s = summarize([ev(0, "PodCreated", pod="default/p", gpus={})], end=60)
    assert (s["pods"]["neverReady"], s["deletedBeforeReady"]) == (1, [])


@settings(max_examples=200, deadline=None)
@given(log=logs("a-"), end=MS)
def test_never_ready_is_every_creation_without_a_ready_and_bounds_the_deleted_ones(
    log: list[Event], end: float
) -> None:
    s = summarize(log, end=end)
    pods = s["pods"]
    assert pods["neverReady"] == pods["created"] - pods["ready"]
    assert len(s["deletedBeforeReady"]) <= pods["neverReady"]
    assert len(s["deletedBeforeReady"]) + len(s["pendingAtEnd"]) <= pods["neverReady"]
