"""The replicas one metric asks for, as kubernetes/kubernetes
`pkg/controller/podautoscaler/replica_calculator.go` computes them. The tables are rows of its
own `replica_calculator_test.go` (test names cited per row); the rules are sentences."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.controllers.podautoscaler.replica_calculator import (
    PodCounts,
    external_per_pod_replicas,
    external_replicas,
    pods_replicas,
)


@pytest.mark.parametrize(
    ("test", "current", "ready", "total", "target", "expected"),
    [
        # TestReplicaCalcScaleUpCMExternal: 1 replica, qps 8600 over a 4400 target.
        ("ScaleUpCMExternal", 1, 1, 8600, 4400, 2),
        # TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods: 3 replicas, 1 Ready.
        ("ScaleUpCMExternalIgnoresUnreadyPods", 3, 1, 8600, 4400, 2),
        # TestReplicaCalcScaleDownCMExternal: 5 replicas, 8600 over 14334.
        ("ScaleDownCMExternal", 5, 5, 8600, 14334, 3),
        # TestReplicaCalcToleranceCMExternal: 8600 / 8888 is within 10 %.
        ("ToleranceCMExternal", 3, 3, 8600, 8888, 3),
    ],
)
def test_external_value_rows_of_kubernetes_tests(  # noqa: PLR0917 - a table's columns
    test: str, current: int, ready: int, total: float, target: float, expected: int
) -> None:
    assert external_replicas(current, ready, total, target) == expected, test


@pytest.mark.parametrize(
    ("test", "status", "total", "target", "expected"),
    [
        # TestReplicaCalcScaleUpPerPodCMExternal: 3 replicas, 8600 over 2150 per pod.
        ("ScaleUpPerPodCMExternal", 3, 8600, 2150, 4),
        # TestReplicaCalcScaleDownPerPodCMExternal: 5 replicas, 8600 over 2867 per pod.
        ("ScaleDownPerPodCMExternal", 5, 8600, 2867, 3),
        # TestReplicaCalcTolerancePerPodCMExternal: 8600 / (2900 x 3) is within 10 %.
        ("TolerancePerPodCMExternal", 3, 8600, 2900, 3),
    ],
)
def test_external_average_value_rows_of_kubernetes_tests(
    test: str, status: int, total: float, target: float, expected: int
) -> None:
    assert external_per_pod_replicas(status, total, target) == expected, test


@pytest.mark.parametrize(
    ("test", "current", "per_pod", "target", "expected"),
    [
        # TestReplicaCalcScaleUpCM: levels 20000/10000/30000 (mean 20000) over 15000.
        ("ScaleUpCM", 3, 20000, 15000, 4),
        # TestReplicaCalcScaleDownCM: five pods at 12000 over 20000.
        ("ScaleDownCM", 5, 12000, 20000, 3),
        # TestReplicaCalcToleranceCM: levels 20000/21000/21000 (mean 20667) over 20000.
        ("ToleranceCM", 3, 20667, 20000, 3),
    ],
)
def test_pods_metric_rows_of_kubernetes_tests(
    test: str, current: int, per_pod: float, target: float, expected: int
) -> None:
    assert pods_replicas(current, PodCounts(ready=current), per_pod, target) == expected, test


def test_within_the_ten_percent_tolerance_the_count_stands() -> None:
    assert external_replicas(4, 4, 109, 100) == 4
    assert external_replicas(4, 4, 111, 100) == 5


def test_an_external_value_target_scales_from_the_ready_pods_only() -> None:
    # 3 replicas, 1 Ready, demand twice the target: 2 replicas asked, not 6.
    assert external_replicas(3, 1, 200, 100) == 2


def test_an_average_value_target_asks_total_over_target_whatever_the_pods() -> None:
    assert external_per_pod_replicas(2, 412, 80) == 6


def test_a_pods_metric_with_no_ready_pod_cannot_be_computed() -> None:
    assert pods_replicas(3, PodCounts(ready=0, ignored=3), 0, 80) is None


def test_pending_pods_count_at_zero_on_a_way_up() -> None:
    # 2 Ready at 160 (ratio 2), 2 Pending: (320 + 0 + 0) / 4 / 80 = 1.0: within tolerance.
    assert pods_replicas(4, PodCounts(ready=2, ignored=2), 160, 80) == 4
    # Without the pending pods the ratio alone would ask for 4 too, from 2 samples.
    assert pods_replicas(2, PodCounts(ready=2), 160, 80) == 4


def test_missing_pods_count_at_the_target_on_a_way_down() -> None:
    # 2 Ready at 40 (ratio 0.5), 2 Running but not Ready: (80 + 160) / 4 / 80 = 0.75 -> 3.
    assert pods_replicas(4, PodCounts(ready=2, missing=2), 40, 80) == 3


@given(
    current=st.integers(1, 200),
    total=st.floats(0, 1e6, allow_nan=False),
    target=st.floats(1, 1e4, allow_nan=False),
)
def test_the_proposal_moves_the_way_the_ratio_points(
    current: int, total: float, target: float
) -> None:
    got = external_replicas(current, current, total, target)
    ratio = total / target
    if ratio > 1.1:
        assert got > current
    elif ratio < 0.9:
        assert got <= current
    else:
        assert got == current
