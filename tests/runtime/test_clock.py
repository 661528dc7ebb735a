"""Injected time: the settable FakeClock and the wall-clock RealClock behind one protocol."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.runtime.clock import EPOCH, Clock, FakeClock, RealClock


def test_epoch_is_a_fixed_utc_instant() -> None:
    assert dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) == EPOCH
    assert EPOCH.utcoffset() == dt.timedelta(0)


def test_fake_clock_starts_at_epoch_with_zero_monotonic_time() -> None:
    clock = FakeClock()
    assert clock.now() == EPOCH
    assert clock.monotonic() == 0.0


def test_fake_clock_starts_where_it_is_told() -> None:
    start = dt.datetime(2030, 6, 1, 12, tzinfo=dt.timezone.utc)
    clock = FakeClock(start)
    assert clock.now() == start
    assert clock.monotonic() == 0.0


def test_fake_clock_advance_moves_now_and_monotonic_and_returns_the_new_time() -> None:
    clock = FakeClock()
    assert clock.advance(90) == EPOCH + dt.timedelta(seconds=90)
    assert clock.advance(0.5) == EPOCH + dt.timedelta(seconds=90.5)
    assert clock.now() == EPOCH + dt.timedelta(seconds=90.5)
    assert clock.monotonic() == 90.5


def test_fake_clock_advance_by_zero_stays_put() -> None:
    clock = FakeClock()
    assert clock.advance(0) == EPOCH
    assert clock.monotonic() == 0.0


def test_fake_clock_set_jumps_forward_and_monotonic_counts_from_the_start() -> None:
    clock = FakeClock()
    clock.set(EPOCH + dt.timedelta(hours=2))
    assert clock.now() == EPOCH + dt.timedelta(hours=2)
    assert clock.monotonic() == 7200.0
    clock.set(clock.now())  # setting to the current time is allowed
    assert clock.monotonic() == 7200.0


def test_fake_clock_never_advances_backwards() -> None:
    clock = FakeClock()
    clock.advance(10)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    assert clock.now() == EPOCH + dt.timedelta(seconds=10)


def test_fake_clock_never_set_backwards() -> None:
    clock = FakeClock()
    clock.advance(10)
    with pytest.raises(ValueError, match="backwards"):
        clock.set(EPOCH + dt.timedelta(seconds=9))
    assert clock.now() == EPOCH + dt.timedelta(seconds=10)
    assert clock.monotonic() == 10.0


def test_fake_clock_set_compares_instants_not_wall_times() -> None:
    clock = FakeClock()
    # 00:30 at UTC-1 is 01:30 UTC: later than EPOCH, although the wall time reads earlier.
    later = dt.datetime(2026, 1, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=-1)))
    clock.set(later)
    assert clock.monotonic() == 5400.0
    # 01:00 at UTC+1 is 00:00 UTC: earlier than now, although the wall time reads later.
    with pytest.raises(ValueError, match="backwards"):
        clock.set(dt.datetime(2026, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))))


def test_fake_clock_rejects_a_naive_start() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        FakeClock(dt.datetime(2026, 1, 1))


def test_fake_clocks_are_independent() -> None:
    a, b = FakeClock(), FakeClock()
    a.advance(60)
    assert b.now() == EPOCH
    assert b.monotonic() == 0.0


@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=20))
def test_fake_clock_monotonic_is_the_sum_of_whole_second_advances(steps: list[int]) -> None:
    clock = FakeClock()
    previous = clock.monotonic()
    for step in steps:
        clock.advance(step)
        assert clock.monotonic() >= previous
        previous = clock.monotonic()
    assert clock.monotonic() == sum(steps)
    assert clock.now() == EPOCH + dt.timedelta(seconds=sum(steps))


@given(st.lists(st.integers(min_value=-(10**6), max_value=10**6), max_size=20))
def test_fake_clock_time_never_goes_backwards(moves: list[int]) -> None:
    clock = FakeClock()
    for move in moves:
        before = clock.now()
        if move < 0:
            with pytest.raises(ValueError, match="backwards"):
                clock.set(before + dt.timedelta(seconds=move))
        else:
            clock.set(before + dt.timedelta(seconds=move))
        assert clock.now() >= before
    assert clock.monotonic() == sum(m for m in moves if m >= 0)


@pytest.mark.parametrize("make", [RealClock, FakeClock])
def test_both_clocks_satisfy_the_clock_protocol(make: type[Clock]) -> None:
    assert isinstance(make(), Clock)


def test_an_object_without_monotonic_is_not_a_clock() -> None:
    class OnlyNow:
        def now(self) -> dt.datetime:
            return EPOCH

    assert not isinstance(OnlyNow(), Clock)


def test_real_clock_now_is_aware_utc_and_current() -> None:
    before = dt.datetime.now(dt.timezone.utc)
    now = RealClock().now()
    after = dt.datetime.now(dt.timezone.utc)
    assert now.tzinfo is not None
    assert now.utcoffset() == dt.timedelta(0)
    assert before <= now <= after


def test_real_clock_monotonic_does_not_go_backwards() -> None:
    clock = RealClock()
    first = clock.monotonic()
    assert clock.monotonic() >= first
