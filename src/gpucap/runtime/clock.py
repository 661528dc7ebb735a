"""Time, injected. Controllers and the simulator ask a `Clock` for the time; nothing in gpucap's
core reads the wall clock, so tests and simulations assert exact instants and a seed reproduces
a run byte for byte.

- `RealClock`: the wall clock, for talking to real AWS.
- `FakeClock`: a settable clock, advanced explicitly (tests, and the simulator's event engine,
  which moves it to each event's time).

Pure functions take `now` as an argument instead of a clock.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Protocol, runtime_checkable

__all__ = ["EPOCH", "Clock", "FakeClock", "RealClock"]

# The default start of simulated time: fixed, so runs do not depend on when they are made.
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


@runtime_checkable
class Clock(Protocol):
    """Something that tells the time (timezone-aware UTC) and seconds on a monotonic scale."""

    def now(self) -> dt.datetime: ...

    def monotonic(self) -> float: ...


class RealClock:
    """The wall clock. Only the boto3-facing shell and the CLI's real mode use it."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to; starts at `start` (default `EPOCH`)."""

    def __init__(self, start: dt.datetime = EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start time")
        self._start = start.astimezone(dt.timezone.utc)
        self._now = self._start

    def now(self) -> dt.datetime:
        return self._now

    def monotonic(self) -> float:
        return (self._now - self._start).total_seconds()

    def advance(self, seconds: float) -> dt.datetime:
        """Move forward by `seconds` (never backwards) and return the new time."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards ({seconds}s)")
        self._now += dt.timedelta(seconds=seconds)
        return self._now

    def set(self, when: dt.datetime) -> None:
        """Jump to `when`; it must not be earlier than the current time."""
        if when.tzinfo is None:
            raise ValueError("FakeClock.set needs a timezone-aware time")
        when = when.astimezone(dt.timezone.utc)
        if when < self._now:
            raise ValueError(f"cannot move a clock backwards from {self._now} to {when}")
        self._now = when
