"""The HorizontalPodAutoscaler in the simulator (`sim/podautoscaler.py`): it scales its target
through the same path as a scenario's scale event, every 15 s, and the summary counts the
replica-seconds asked for that were not Ready (`serving`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.summary import summarize
from gpucap.sim.timeline import format_timeline
from gpucap.sim.world import SimulationResult, simulate

HERE = Path(__file__).parent / "scenarios"


@cache
def _catalog() -> Catalog:
    return load_catalog("us-east-1")


@cache
def run(name: str) -> SimulationResult:
    return simulate(load_scenario(str(HERE / "hpa" / f"{name}.yaml"), _catalog()), _catalog())


def scaled(result: SimulationResult) -> list[tuple[float, int, int]]:
    return [
        (e.t, e.fields["previous"], e.fields["replicas"])
        for e in result.events
        if e.type == "HorizontalPodAutoscalerScaled"
    ]


def test_the_hpa_scales_up_at_the_sync_that_sees_the_demand() -> None:
    # demand.csv: 400 req/s from t=600; AverageValue 80: ceil(400 / 80) = 5, at once (the
    # default scale-up allows max(+4, x2) per 15 s: 1 -> 5).
    assert scaled(run("hpa-step"))[0] == (600, 1, 5)


def test_the_scale_down_waits_out_the_default_300_second_window() -> None:
    # Demand drops at t=2400; the last sync that saw 400 req/s was t=2385, so the highest
    # recommendation of the window is 5 until t=2385 + 300.
    assert scaled(run("hpa-step"))[1] == (2685, 5, 1)


def test_the_hpa_makes_and_deletes_pods_as_a_scale_event_does() -> None:
    events = run("hpa-step").events
    created = [e.fields["pod"] for e in events if e.type == "PodCreated" and e.t == 600]
    deleted = [e.fields["pod"] for e in events if e.type == "PodDeleted" and e.t == 2685]
    assert created == [f"default/vllm-{i}" for i in range(1, 5)]
    assert sorted(deleted) == [f"default/vllm-{i}" for i in range(1, 5)]


def test_the_timeline_tells_the_rescale_with_its_metric() -> None:
    result = run("hpa-step")
    lines = format_timeline(result.events, start=result.start)
    assert any(
        "HPA vllm: 1 -> 5 replicas (requests_per_second 400 / target 80 per replica)" in line
        for line in lines
    )


def test_slow_gpu_cold_starts_show_as_serving_lost() -> None:
    serving = run("hpa-step").summary["serving"]
    # 1 replica asked for from t=0, Ready at ~399 s; 4 more from 600 s, Ready at ~999 s.
    assert serving["lostReplicaSeconds"] > 4 * 300
    assert serving["lostReplicaSeconds"] == pytest.approx(
        serving["requestedReplicaSeconds"] - serving["readyReplicaSeconds"], abs=0.002
    )
    assert 0 < serving["lostFraction"] < 1
    assert serving["hpaRescales"] == 2


def test_a_pods_metric_waits_for_a_ready_pod_to_report() -> None:
    result = run("hpa-pods")
    first_ready = min(e.t for e in result.events if e.type == "PodReady")
    (t, before, after), *_ = scaled(result)
    # No Ready pod, no sample: the HPA cannot compute (Kubernetes' "did not receive metrics
    # for any ready pods") until the first pod is Ready; then 400 req/s over 1 pod / 80.
    assert t > first_ready
    assert (before, after) == (1, 5)


def test_a_scenario_without_an_hpa_has_no_serving_block_nor_its_events() -> None:
    scenario = load_scenario(str(HERE / "good" / "basic.yaml"), _catalog())
    result = simulate(scenario, _catalog())
    assert "serving" not in result.summary
    assert not [e for e in result.events if e.type.startswith(("Serving", "Horizontal"))]


def test_serving_counts_requested_minus_ready_replica_seconds() -> None:
    events = [
        Event.made(
            0, "ServingReplicas", {"object": "Deployment/default/a", "requested": 2, "ready": 0}
        ),
        Event.made(
            100, "ServingReplicas", {"object": "Deployment/default/a", "requested": 2, "ready": 1}
        ),
        Event.made(
            150, "ServingReplicas", {"object": "Deployment/default/a", "requested": 1, "ready": 3}
        ),
    ]
    serving = summarize(events, end=200)["serving"]
    # 0-100: 2 asked, 0 Ready; 100-150: 2 asked, 1 Ready; 150-200: 1 asked, 3 Ready (counts 1).
    assert serving["requestedReplicaSeconds"] == 200 + 100 + 50
    assert serving["readyReplicaSeconds"] == 0 + 50 + 50
    assert serving["lostReplicaSeconds"] == 250
    assert serving["lostFraction"] == pytest.approx(250 / 350, abs=1e-6)


def test_an_hpa_without_behavior_at_most_doubles_or_reaches_4_per_sync() -> None:
    # Kubernetes' normalizeDesiredReplicas path (no `behavior`): calculateScaleUpLimit allows
    # max(2 x 1, 4) = 4 at t=600, then max(2 x 4, 4) = 8 >= 5 at the next sync.
    assert scaled(run("hpa-step-legacy"))[:2] == [(600, 1, 4), (615, 4, 5)]


def test_an_hpa_without_behavior_scales_down_after_the_controllers_300_second_window() -> None:
    # The highest recommendation of the last 300 s (the controller's flag default) holds 5; this
    # path keeps a sample exactly at the cutoff (Go: not timestamp.Before(cutoff)), where the
    # behavior path drops it (timestamp.After(cutoff)): the 2385 sample still counts at 2685, so
    # the scale-down comes one sync later than with a behavior.
    assert scaled(run("hpa-step-legacy"))[2] == (2700, 5, 1)
