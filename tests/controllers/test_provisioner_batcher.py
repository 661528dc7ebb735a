"""The provisioning batch window (`controllers/provisioning/batcher.py`): idle 1 s after the
last pending pod, at most 10 s after the first, as Karpenter's batcher.go."""

from __future__ import annotations

import pytest

from gpucap.controllers.provisioning.batcher import Batcher


def test_no_window_is_open_before_a_pod_is_pending() -> None:
    assert Batcher().ready_at() is None


def test_a_lone_pod_is_provisioned_one_idle_second_later() -> None:
    b = Batcher()
    b.add(5.0)
    assert b.ready_at() == 6.0


def test_each_new_pending_pod_pushes_the_window_one_idle_second_on() -> None:
    b = Batcher()
    for t in (0.0, 0.5, 1.2, 2.0):
        b.add(t)
    assert b.ready_at() == 3.0


def test_a_steady_stream_of_pods_is_cut_ten_seconds_after_the_first() -> None:
    b = Batcher()
    for i in range(40):
        b.add(i * 0.5)  # a pod every half second for 20 s
    assert b.ready_at() == 10.0


def test_a_pod_seen_in_the_window_does_not_extend_it() -> None:
    b = Batcher()
    b.add(0.0, "default/a")
    b.add(0.8, "default/a")
    assert b.ready_at() == 1.0
    b.add(0.8, "default/b")
    assert b.ready_at() == 1.8


def test_reset_closes_the_window_and_forgets_the_pods() -> None:
    b = Batcher()
    b.add(0.0, "default/a")
    b.reset()
    assert b.ready_at() is None
    b.add(30.0, "default/a")  # pending again later: a new window
    assert b.ready_at() == 31.0


def test_a_pod_added_out_of_order_keeps_the_latest_idle_end() -> None:
    b = Batcher()
    b.add(2.0)
    b.add(1.0)
    assert b.ready_at() == 3.0


@pytest.mark.parametrize(("idle", "max_duration"), [(0.0, 10.0), (1.0, 0.0), (-1.0, 10.0)])
def test_durations_must_be_positive(idle: float, max_duration: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        Batcher(idle=idle, max_duration=max_duration)
