"""What `gpucap simulate` prints (`cli/simulate_render.py`): the timeline in plain words with
related events merged, the summary tables, the watch pane and the `-o json` document, with exact
expected text for small logs."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from gpucap.cli.simulate_render import (
    NodeRow,
    clock_time,
    format_age,
    format_duration,
    format_summary,
    format_timeline,
    format_watch,
    simulation_document,
    watch_lines,
    watch_rows,
)
from gpucap.runtime.clock import EPOCH
from gpucap.runtime.terminal import escape
from gpucap.sim.recorder import Event
from gpucap.sim.summary import summarize

GPU1 = {"nvidia.com/gpu": 1}


def ev(t: float, kind: str, /, **fields: Any) -> Event:
    return Event(t, kind, fields)


def launch(
    t: float,
    claim: str,
    *,
    it: str = "g5.xlarge",
    cap: str = "spot",
    zone: str = "us-east-1a",
    price: float = 0.3623,
    gpus: int = 1,
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


def created(t: float, claim: str) -> Event:
    return ev(t, "NodeClaimCreated", nodeClaim=claim, nodePool="gpu", instanceTypes=["g5.xlarge"])


def ice(t: float, it: str = "g5.xlarge", zone: str = "us-east-1a", cap: str = "spot") -> Event:
    return ev(
        t,
        "OfferingUnavailable",
        instanceType=it,
        zone=zone,
        capacityType=cap,
        reason="InsufficientInstanceCapacity",
    )


def failed(t: float, claim: str) -> Event:
    return ev(t, "LaunchFailed", nodeClaim=claim, nodePool="gpu", reason="InsufficientCapacity")


# A vLLM pod's first hour: spot ICE, on-demand fallback, time-sliced node, pull and load.
STORY = [
    ev(0, "ScenarioEvent", index=0, kind="apply", source="vllm.yaml"),
    ev(0, "PodCreated", pod="default/vllm-0", gpus=GPU1),
    ev(1, "PodUnschedulable", pod="default/vllm-0", reason="no nodes yet"),
    created(725, "gpu-1"),
    ev(725, "PodNominated", pod="default/vllm-0", nodeClaim="gpu-1"),
    ice(725),
    failed(725, "gpu-1"),
    ev(725, "NodeClaimDeleted", nodeClaim="gpu-1", reason="InsufficientCapacity"),
    created(726, "gpu-2"),
    ev(726, "PodNominated", pod="default/vllm-0", nodeClaim="gpu-2"),
    launch(726, "gpu-2", cap="on-demand", price=1.006),
    ev(776, "NodeRegistered", nodeClaim="gpu-2", node="ip-10-0-1-2"),
    ev(
        806,
        "NodeInitialized",
        nodeClaim="gpu-2",
        node="ip-10-0-1-2",
        gpusAdvertised={"nvidia.com/gpu": 4},
    ),
    ev(807, "PodBound", pod="default/vllm-0", node="ip-10-0-1-2", nodeClaim="gpu-2"),
    ev(
        1157,
        "PodReady",
        pod="default/vllm-0",
        node="ip-10-0-1-2",
        pullSeconds=245.2,
        loadSeconds=84,
    ),
    ev(3600, "PodDeleted", pod="default/vllm-0"),
    ev(3600, "DisruptionDecision", nodeClaim="gpu-2", reason="Empty"),
    ev(3600, "NodeClaimDeleted", nodeClaim="gpu-2", reason="Empty"),
    ev(3630, "NodeTerminated", nodeClaim="gpu-2", node="ip-10-0-1-2"),
]


def test_the_story_of_an_ice_the_fallback_and_a_pod_that_became_ready() -> None:
    assert format_timeline(STORY, start=EPOCH) == [
        "00:00:00 scenario events[0]: apply vllm.yaml",
        "00:00:00 pod default/vllm-0 created (1 nvidia.com/gpu)",
        "00:00:01 pod default/vllm-0 cannot be scheduled: no nodes yet",
        "00:12:05 spot g5.xlarge in us-east-1a unavailable (gpu-1 not launched) → on-demand "
        "g5.xlarge in us-east-1a launched (gpu-2, $1.0060/h)",
        "00:13:26 node ip-10-0-1-2 (gpu-2) initialized 30s after registering: "
        "4 nvidia.com/gpu advertised",
        "00:13:27 pod default/vllm-0 bound to ip-10-0-1-2 after 13m27s",
        "00:19:17 pod default/vllm-0 ready after 19m17s (pull 4m05s, load 1m24s)",
        "01:00:00 pod default/vllm-0 deleted",
        "01:00:00 NodeClaim gpu-2 deleted: disrupted (empty)",
        "01:00:30 node ip-10-0-1-2 (gpu-2) terminated after 48m24s, $0.81",
    ]


def test_times_are_the_start_time_plus_virtual_seconds() -> None:
    start = dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.timezone.utc)
    lines = format_timeline([ev(725.9, "PodDeleted", pod="default/a")], start=start)
    assert lines == ["09:42:05 pod default/a deleted"]


def test_an_ice_the_same_fleet_call_survived_is_one_line() -> None:
    log = [
        created(10, "gpu-1"),
        ice(10),
        ice(10, it="g6.xlarge"),
        launch(10, "gpu-1", zone="us-east-1b"),
    ]
    assert format_timeline(log) == [
        "00:00:10 spot g5.xlarge, g6.xlarge in us-east-1a unavailable → spot g5.xlarge in "
        "us-east-1b launched (gpu-1, $0.3623/h)"
    ]


def test_an_ice_with_no_launch_after_it_says_the_pods_wait() -> None:
    log = [created(10, "gpu-1"), ice(10), ice(10, zone="us-east-1b"), failed(10, "gpu-1")]
    assert format_timeline(log) == [
        "00:00:10 spot g5.xlarge in us-east-1a, us-east-1b unavailable: gpu-1 not launched, "
        "its pods wait"
    ]


def test_a_launch_long_after_an_ice_is_its_own_story() -> None:
    log = [created(10, "gpu-1"), ice(10), failed(10, "gpu-1"), created(200, "gpu-2")]
    log.append(launch(200, "gpu-2", cap="on-demand", price=1.006))
    assert format_timeline(log) == [
        "00:00:10 spot g5.xlarge in us-east-1a unavailable: gpu-1 not launched, its pods wait",
        "00:03:20 NodePool gpu: on-demand g5.xlarge in us-east-1a launched (gpu-2, $1.0060/h)",
    ]


def test_a_fallback_half_a_minute_later_says_how_much_later() -> None:
    log = [created(10, "gpu-1"), ice(10), failed(10, "gpu-1"), launch(45, "gpu-2", cap="on-demand")]
    assert format_timeline(log) == [
        "00:00:10 spot g5.xlarge in us-east-1a unavailable (gpu-1 not launched) → 35s later "
        "on-demand g5.xlarge in us-east-1a launched (gpu-2, $0.3623/h)"
    ]


def test_a_nodeclaim_created_and_launched_together_is_one_line_with_its_pods() -> None:
    log = [
        created(5, "gpu-1"),
        ev(5, "PodNominated", pod="default/a", nodeClaim="gpu-1"),
        ev(5, "PodNominated", pod="default/b", nodeClaim="gpu-1"),
        launch(5, "gpu-1"),
    ]
    assert format_timeline(log) == [
        "00:00:05 NodePool gpu: spot g5.xlarge in us-east-1a launched (gpu-1, $0.3623/h) "
        "for default/a, default/b"
    ]


def test_a_node_that_never_advertises_its_gpu_is_said_plainly() -> None:
    log = [
        created(5, "gpu-1"),
        launch(5, "gpu-1"),
        ev(55, "NodeRegistered", nodeClaim="gpu-1", node="gpu-1", devicePlugin=None),
    ]
    assert format_timeline(log)[-1] == (
        "00:00:55 node gpu-1 registered; GPU never advertised: no device plugin in the cluster"
    )
    s = summarize(log, end=3600)
    assert format_summary(s)[-3:] == [
        "Nodes never initialized (1):",
        "  node gpu-1 (g5.xlarge, registered 00:00:55): GPU never advertised: no device plugin "
        "in the cluster",
        "Pending at the end: none",
    ]


@pytest.mark.parametrize(
    ("registered", "gpus", "words"),
    [
        (
            {"devicePlugin": "daemonset/kube-system/nvdp"},
            1,
            "GPU not advertised by the end of the run (daemonset/kube-system/nvdp still starting)",
        ),
        ({}, 1, "GPU never advertised (no device plugin advertised it)"),
        ({}, 0, "not initialized by the end of the run"),
        ({"devicePlugin": None}, 0, "not initialized by the end of the run"),
    ],
)
def test_why_a_registered_node_never_initialized(
    registered: dict[str, Any], gpus: int, words: str
) -> None:
    log = [
        launch(5, "gpu-1", gpus=gpus),
        ev(55, "NodeRegistered", nodeClaim="gpu-1", node="ip-1", **registered),
    ]
    assert format_timeline(log)[-1] == f"00:00:55 node ip-1 (gpu-1) registered; {words}"


def test_a_node_whose_plugin_is_still_starting_at_the_end_is_not_blamed_on_a_missing_plugin() -> (
    None
):
    log = [
        launch(5, "gpu-1"),
        ev(55, "NodeRegistered", nodeClaim="gpu-1", node="gpu-1", devicePlugin="clusterpolicy/cp"),
    ]
    assert format_summary(summarize(log, end=100))[-2] == (
        "  node gpu-1 (g5.xlarge, registered 00:00:55): GPU not advertised yet "
        "(clusterpolicy/cp still starting)"
    )


def test_a_cpu_node_is_never_said_to_wait_for_a_device_plugin() -> None:
    # A CPU type registers with no device plugin on it (none selects it): nothing to wait for.
    log = [
        launch(5, "cpu-1", it="m6i.large", gpus=0),
        ev(55, "NodeRegistered", nodeClaim="cpu-1", node="ip-1", devicePlugin=None),
        ev(65, "NodeInitialized", nodeClaim="cpu-1", node="ip-1", gpusAdvertised={}),
    ]
    lines = format_timeline(log)
    assert not any("device plugin" in line for line in lines), lines
    assert lines[-1].startswith("00:01:05 node ip-1 (cpu-1) initialized")


def test_a_gpu_node_registering_without_a_device_plugin_says_so_when_it_registers() -> None:
    log = [
        launch(5, "gpu-1", gpus=1),
        ev(55, "NodeRegistered", nodeClaim="gpu-1", node="ip-1", devicePlugin=None),
        ev(95, "NodeInitialized", nodeClaim="gpu-1", node="ip-1", gpusAdvertised={}),
    ]
    assert "00:00:55 node ip-1 (gpu-1) registered; GPU not advertised: no device plugin yet" in (
        format_timeline(log)
    )


def test_registered_and_initialized_at_once_is_one_line() -> None:
    log = [
        ev(55, "NodeRegistered", nodeClaim="gpu-1", node="gpu-1"),
        ev(
            55,
            "NodeInitialized",
            nodeClaim="gpu-1",
            node="gpu-1",
            gpusAdvertised={"nvidia.com/gpu.shared": 4},
        ),
    ]
    assert format_timeline(log) == [
        "00:00:55 node gpu-1 registered and initialized: 4 nvidia.com/gpu.shared advertised"
    ]


def test_many_pods_at_once_are_one_line_each_kind() -> None:
    log = [ev(60, "PodCreated", pod=f"default/vllm-{i}", gpus=GPU1) for i in range(5)]
    log += [ev(90, "PodBound", pod=f"default/vllm-{i}", node="n1") for i in range(2)]
    log += [ev(90, "PodBound", pod="default/vllm-4", node="n2")]
    log += [
        ev(
            95,
            "PodUnschedulable",
            pod=f"default/vllm-{i}",
            reason='all available instance types exceed limits for nodepool: "gpu"',
        )
        for i in (2, 3)
    ]
    log += [
        ev(400, "PodReady", pod=f"default/vllm-{i}", node="n1", pullSeconds=240) for i in range(2)
    ]
    assert format_timeline(log) == [
        "00:01:00 5 pods created: default/vllm-0, default/vllm-1, default/vllm-2 and 2 more "
        "(1 nvidia.com/gpu each)",
        "00:01:30 2 pods bound to n1: default/vllm-0, default/vllm-1",
        "00:01:30 pod default/vllm-4 bound to n2 after 30s",
        "00:01:35 2 pods (default/vllm-2, default/vllm-3) cannot be scheduled: all available "
        'instance types exceed limits for nodepool: "gpu"',
        "00:06:40 2 pods ready after 5m40s (pull 4m00s): default/vllm-0, default/vllm-1",
    ]


def test_interruption_limits_capacity_and_amis_in_words() -> None:
    log = [
        launch(0, "gpu-1"),
        ev(5, "ScenarioEvent", index=2, kind="capacity"),
        ev(
            5,
            "CapacityChanged",
            instanceType="g5.xlarge",
            zone="us-east-1a",
            capacityType="spot",
            available=False,
        ),
        ev(
            7,
            "AMIResolved",
            nodeClass="gpu",
            alias="al2023@latest",
            image="ami-0abc",
            version="v20260827",
        ),
        ev(9, "LimitReached", nodePool="gpu", resource="nvidia.com/gpu", message="limit 6 reached"),
        ev(7200, "SpotInterruptionWarning", nodeClaim="gpu-1", node="gpu-1"),
        ev(7200, "DisruptionDecision", nodeClaim="gpu-1", reason="Interrupted"),
        ev(7200, "NodeClaimDeleted", nodeClaim="gpu-1", reason="Interrupted"),
        ice(7200),
        ev(7200, "PodEvicted", pod="default/a", node="gpu-1", reason="Interrupted"),
        ev(
            9000,
            "ScenarioEvent",
            index=3,
            kind="scale",
            object="Deployment default/vllm",
            replicas=0,
        ),
        ev(
            9001,
            "CapacityChanged",
            instanceType="g5.xlarge",
            zone=None,
            capacityType=None,
            available=True,
        ),
    ]
    assert format_timeline(log) == [
        "00:00:00 NodePool gpu: spot g5.xlarge in us-east-1a launched (gpu-1, $0.3623/h)",
        "00:00:05 scenario: spot g5.xlarge in us-east-1a: no capacity",
        "00:00:07 EC2NodeClass gpu: al2023@latest resolves to ami-0abc (v20260827)",
        "00:00:09 NodePool gpu reached its nvidia.com/gpu limit: limit 6 reached",
        "02:00:00 spot interruption warning for gpu-1 (spot g5.xlarge in us-east-1a): NodeClaim "
        "deleted, its pods will be provisioned again",
        "02:00:00 pod default/a evicted from gpu-1: interrupted",
        "02:30:00 scenario events[3]: scale Deployment default/vllm to 0",
        "02:30:01 scenario: g5.xlarge in every zone: capacity back",
    ]


def test_hostile_names_stay_inside_their_line() -> None:
    name = "default/x\n\x1b[2Jy"
    lines = format_timeline([ev(0, "PodDeleted", pod=name)])
    assert lines == [f"00:00:00 pod {name} deleted"]
    assert escape(lines[0]) == "00:00:00 pod default/x\\n\\x1b[2Jy deleted"


# ---- words for times ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45.9, "45s"), (60, "1m00s"), (245.2, "4m05s"), (3725, "1h02m05s"), (-1, "0s")],
)
def test_durations(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (95, "95s"),
        (119, "119s"),
        (120, "2m"),
        (330, "5m30s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600 + 300, "3h5m"),
        (7 * 3600, "7h"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (2 * 86400, "2d"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (12 * 86400 + 3600, "12d"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: float, text: str) -> None:
    assert format_age(seconds) == text


def test_a_run_past_midnight_says_which_day() -> None:
    assert clock_time(86400 + 65, EPOCH) == "+1d 00:01:05"
    assert clock_time(3599.999, EPOCH) == "00:59:59"


# ---- summary -------------------------------------------------------------------------------------
def test_the_summary_tables() -> None:
    log = [
        *STORY,
        ev(100, "PodCreated", pod="default/big-0", gpus={"nvidia.com/gpu": 16}),
        ev(101, "PodUnschedulable", pod="default/big-0", reason="no instance type has 16 GPUs"),
        launch(1000, "gpu-3", price=0.36),
        ev(1000, "LimitReached", nodePool="gpu", resource="nvidia.com/gpu", message="m"),
    ]
    s = summarize(sorted(log, key=lambda e: e.t), end=4600)
    assert format_summary(s) == [
        "Simulated 1h16m40s: $1.17 for 2 nodes",
        "",
        "INSTANCE TYPE  CAPACITY   NODES  NODE-HOURS  GPU-HOURS  COST",
        "g5.xlarge      on-demand  1      0.81        0.81       $0.81",
        "g5.xlarge      spot       1      1.00        1.00       $0.36",
        "total                     2      1.81        1.81       $1.17",
        "",
        "GPU RESOURCE    ADVERTISED GPU-HOURS  REQUESTED GPU-HOURS  REQUESTED/ADVERTISED",
        "nvidia.com/gpu  3.14                  0.78                 25%",
        "",
        "TIME FROM CREATION TO  PODS  P50     P95     MAX",
        "bound                  1     13m27s  13m27s  13m27s",
        "ready                  1     19m17s  19m17s  19m17s",
        "(percentiles are nearest-rank: an observed time, not interpolated)",
        "",
        "Disruptions: Empty 1",
        "NodeClaims: 2 created, 2 launched, 1 failed to launch, 1 initialized, 1 terminated",
        "NodePool limits reached: 1 time",
        "Pending at the end (1):",
        "  default/big-0 (since 00:01:40): no instance type has 16 GPUs",
        "Never Ready: 1 of 2 pods created",
    ]


def test_an_empty_run_has_a_short_summary() -> None:
    assert format_summary(summarize([], end=60)) == [
        "Simulated 1m00s: $0.00 for 0 nodes",
        "",
        "TIME FROM CREATION TO  PODS  P50  P95  MAX",
        "bound                  0     -    -    -",
        "ready                  0     -    -    -",
        "(percentiles are nearest-rank: an observed time, not interpolated)",
        "",
        "Disruptions: none",
        "NodeClaims: 0 created, 0 launched, 0 failed to launch, 0 initialized, 0 terminated",
        "Pending at the end: none",
    ]


# ---- watch ---------------------------------------------------------------------------------------
def test_the_watch_pane() -> None:
    rows = [
        NodeRow("gpu-2", "g5.xlarge", "on-demand", "us-east-1a", 4000, "Ready", 4, 1),
        NodeRow("gpu-3", "g6.xlarge", "spot", "us-east-1b", 95, "Registered", 0, 0),
    ]
    assert format_watch(3725, rows, pending=2, cost=1.2345) == [
        "01:02:05  2 nodes  2 pods pending  $1.23 so far",
        "NAME   TYPE       CAPACITY   ZONE        AGE  STATUS      GPUS (ADVERTISED/USED)",
        "gpu-2  g5.xlarge  on-demand  us-east-1a  66m  Ready       4/1",
        "gpu-3  g6.xlarge  spot       us-east-1b  95s  Registered  0/0",
    ]
    assert format_watch(0, [], pending=0, cost=0) == [
        "00:00:00  0 nodes  0 pods pending  $0.00 so far",
        "No nodes.",
    ]


def test_watch_rows_come_from_the_event_log() -> None:
    assert watch_rows(STORY, now=1000) == [
        NodeRow("gpu-2", "g5.xlarge", "on-demand", "us-east-1a", 274, "Ready", 4, 1)
    ]
    assert watch_rows(STORY, now=750) == [
        NodeRow("gpu-2", "g5.xlarge", "on-demand", "us-east-1a", 24, "Launched", 0, 0)
    ]
    assert watch_rows(STORY, now=3610)[0].status == "Deleting"
    assert watch_rows(STORY, now=3630) == []
    assert watch_lines(STORY, now=750)[0] == "00:12:30  1 node  1 pod pending  $0.01 so far"


# ---- -o json -------------------------------------------------------------------------------------
def test_the_json_document_holds_the_events_and_the_summary() -> None:
    s = summarize(STORY, end=4000)
    doc = simulation_document(STORY, s)
    assert list(doc) == ["apiVersion", "kind", "events", "summary"]
    assert doc["apiVersion"] == "gpucap.dev/v1alpha1"
    assert doc["kind"] == "Simulation"
    assert doc["events"][3] == {
        "t": 725.0,
        "type": "NodeClaimCreated",
        "nodeClaim": "gpu-1",
        "nodePool": "gpu",
        "instanceTypes": ["g5.xlarge"],
    }
    assert json.loads(json.dumps(doc))["summary"] == s


def test_a_node_registered_before_the_device_plugin_is_told_then_its_initialization() -> None:
    log = [
        ev(55, "NodeRegistered", nodeClaim="gpu-1", node="gpu-1", devicePlugin=None),
        ev(1835, "NodeInitialized", nodeClaim="gpu-1", node="gpu-1", gpusAdvertised=GPU1),
    ]
    assert format_timeline(log) == [
        "00:00:55 node gpu-1 registered; GPU not advertised: no device plugin yet",
        "00:30:35 node gpu-1 initialized 29m40s after registering: 1 nvidia.com/gpu advertised",
    ]


def test_a_pod_bound_again_after_an_eviction_counts_from_the_eviction() -> None:
    events = [
        Event(0.0, "PodCreated", {"pod": "default/vllm-0", "gpus": {"nvidia.com/gpu": 1}}),
        Event(60.0, "PodBound", {"pod": "default/vllm-0", "node": "gpu-1"}),
        Event(
            3600.0, "PodEvicted", {"pod": "default/vllm-0", "node": "gpu-1", "reason": "Drifted"}
        ),
        Event(3700.0, "PodBound", {"pod": "default/vllm-0", "node": "gpu-2"}),
    ]
    lines = format_timeline(events)
    assert lines[-1].endswith("pod default/vllm-0 bound to gpu-2 1m40s after its eviction")
    assert "bound to gpu-1 after 1m00s" in lines[1]
