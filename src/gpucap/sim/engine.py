"""The simulator's discrete-event engine: a heap of timers on the virtual clock.

Time is float seconds since the scenario start (`t`); the engine moves a `FakeClock` to each
event's time, so controllers reading `clock.now()` see simulated time and never sleep. Events
run in (t, priority, sequence) order: at equal times the lower priority first, then the one
scheduled first. Controllers are `Reconciler`s (`controllers/reconciler.py`): `every` runs one
now and again after whatever its `reconcile()` returns; `trigger` asks for a run (a watch event)
and coalesces, so a reconciler has at most one pending run. A reconciler whose runs would do
nothing until something it reads changes calls `idle` (and returns None): the engine fires none
of them and, on `wake` or a trigger, schedules the first one due on the same grid of times at
the same place in its instant (a 10-s poll that finds nothing costs nothing).

Deterministic: no wall clock and no global random; `engine.random` is a `random.Random` seeded
from the scenario's seed for whatever must be random. Bounded: more than `max_per_instant`
events without the clock moving (a reconciler requeueing at 0 s forever) stops the run with an
`EngineStuckError` naming the busiest labels. Built by `sim/world.py`.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from gpucap.controllers.reconciler import Reconciler
from gpucap.runtime.clock import FakeClock

__all__ = ["DEFAULT_MAX_PER_INSTANT", "Engine", "EngineStuckError", "Timer"]

# Events one instant may hold before the run is declared stuck. A 1,000-pod scale event makes a
# few thousand events at one instant (pod created, nominated, bound...); a requeue-at-0 loop
# makes this many in well under a second.
DEFAULT_MAX_PER_INSTANT = 100_000
# How many of the events before the cap the stuck error counts by label.
_STUCK_SAMPLE = 1_000


class EngineStuckError(RuntimeError):
    """More events at one instant than the engine allows: something requeues at 0 s forever."""


@dataclass(eq=False, slots=True)
class Timer:
    """One scheduled action; `Engine.cancel` it while `pending`."""

    t: float
    priority: int
    seq: int
    label: str
    action: Callable[[], None] = field(repr=False)
    cancelled: bool = False
    fired: bool = False

    @property
    def pending(self) -> bool:
        return not (self.cancelled or self.fired)


@dataclass(slots=True)
class _Registration:
    reconciler: Reconciler
    priority: int
    pending: Timer | None = None
    # `Engine.idle`: (the time of the run that went idle, its period); None when not idle.
    idle: tuple[float, float] | None = None


class Engine:
    """The event loop of one simulation (see the module docstring)."""

    def __init__(
        self,
        clock: FakeClock,
        *,
        seed: int = 0,
        max_per_instant: int = DEFAULT_MAX_PER_INSTANT,
    ) -> None:
        self.clock = clock
        self._start = clock.now()
        self._t = 0.0
        self._heap: list[tuple[float, int, int, Timer]] = []
        self._seq = 0
        self._registered: dict[int, _Registration] = {}
        self._max_per_instant = max_per_instant
        self._running = False
        # The highest priority fired at the current instant (see `_next_run_of_idle`).
        self._top = -math.inf
        self.random = random.Random(seed)

    @property
    def now(self) -> float:
        """Seconds since the start of the simulation."""
        return self._t

    @property
    def next_time(self) -> float | None:
        """When the next pending timer fires, or None when nothing is scheduled."""
        self._drop_cancelled()
        return self._heap[0][0] if self._heap else None

    def at(
        self, t: float, action: Callable[[], None], *, priority: int = 0, label: str = ""
    ) -> Timer:
        """Run `action` at time `t` (not before now)."""
        if math.isnan(t) or math.isinf(t):
            raise ValueError(f"cannot schedule {label or 'an event'} at t={t}")
        if t < self._t:
            raise ValueError(
                f"cannot schedule {label or 'an event'} at t={t}s, before now ({self._t}s)"
            )
        self._seq += 1
        timer = Timer(float(t), priority, self._seq, label, action)
        heapq.heappush(self._heap, (timer.t, priority, timer.seq, timer))
        return timer

    def after(
        self, delay: float, action: Callable[[], None], *, priority: int = 0, label: str = ""
    ) -> Timer:
        """Run `action` `delay` seconds from now."""
        if not delay >= 0:  # also refuses NaN
            raise ValueError(f"cannot schedule {label or 'an event'} {delay}s from now")
        return self.at(self._t + delay, action, priority=priority, label=label)

    def cancel(self, timer: Timer) -> None:
        """Stop `timer` from firing; nothing happens if it has fired or was cancelled."""
        if not timer.fired:
            timer.cancelled = True

    # ---- reconcilers ------------------------------------------------------------------------
    def every(self, reconciler: Reconciler, *, priority: int) -> None:
        """Register `reconciler` at `priority` and run it now; it runs again after what each
        `reconcile()` returns (None: only when triggered)."""
        reg = self._registered.get(id(reconciler))
        if reg is None:
            self._registered[id(reconciler)] = _Registration(reconciler, priority)
        else:
            # Registered again (or triggered before): the new priority, still one pending run.
            reg.priority = priority
            if reg.pending is not None:
                self.cancel(reg.pending)
                reg.pending = None
        self._request(reconciler, self._t)

    def trigger(self, reconciler: Reconciler, *, after: float = 0.0) -> None:
        """Ask for a run of `reconciler` `after` seconds from now. Coalesces: a run already
        pending at or before then covers it; a later pending run is brought forward."""
        if not after >= 0:
            raise ValueError(f"cannot trigger {reconciler.name} {after}s from now")
        self._request(reconciler, self._t + after)

    def idle(
        self, reconciler: Reconciler, period: float, *, resume_at: float | None = None
    ) -> None:
        """Called by `reconciler` from its `reconcile()`, which then returns None: it would
        run again every `period` seconds, and each of those runs would do nothing until
        `wake` is called (something it reads changed). Instead of firing those runs, the
        engine schedules the first one due at or after the wake (or a trigger), on the same
        grid of times (each `period` after the last, added one at a time as requeues are)
        and in the same place among the events of its instant. With `resume_at` (a time the
        reconciler's own requeues would reach, after which its runs may act by themselves)
        it runs then unless woken or triggered before; a wake before it whose grid run would
        come later keeps that run (the one its requeues would have made first)."""
        if not period > 0 or math.isinf(period):
            raise ValueError(f"{reconciler.name} cannot idle with a period of {period}s")
        reg = self._registered.get(id(reconciler))
        if reg is None:
            raise ValueError(f"{reconciler.name} is not registered (`every`)")
        reg.idle = (self._t, period)
        if resume_at is not None:
            reg.pending = self.at(
                resume_at,
                lambda: self._resume(reg),
                priority=reg.priority,
                label=reg.reconciler.name,
            )

    def wake(self, reconciler: Reconciler) -> None:
        """Something an idle reconciler reads changed: schedule its next run (see `idle`);
        nothing when it is not idle."""
        reg = self._registered.get(id(reconciler))
        if reg is not None and reg.idle is not None:
            self._wake(reg)

    def clock_at(self, t: float) -> dt.datetime:
        """What the clock reads when the engine is at `t` seconds (as `_move_to` sets it)."""
        return self._start + dt.timedelta(seconds=t)

    def _wake(self, reg: _Registration) -> None:
        assert reg.idle is not None
        t = self._next_run_of_idle(reg.idle, reg.priority)
        if reg.pending is not None and reg.pending.pending and reg.pending.t <= t:
            return  # the run at `resume_at` comes first (see `idle`)
        self._schedule(reg, t)

    def _resume(self, reg: _Registration) -> None:
        reg.idle = None
        self._reconcile(reg)

    def _next_run_of_idle(self, idle: tuple[float, float], priority: int) -> float:
        """The first run of the grid `idle` (last run, period) that has not happened yet: the
        current instant's, unless an event of a higher priority already fired at it (which
        runs after the reconciler's), else a later one."""
        t, period = idle
        t += period
        while t < self._t:
            t += period
        if t == self._t and self._top > priority:
            t += period
        return t

    def _request(self, reconciler: Reconciler, t: float) -> None:
        reg = self._registered.get(id(reconciler))
        if reg is None:
            # Triggered without `every`: runs only when triggered, at priority 0.
            reg = self._registered[id(reconciler)] = _Registration(reconciler, 0)
        if reg.idle is not None:
            # A trigger of an idle reconciler: its next run on the grid is pending.
            self._wake(reg)
        if reg.pending is not None and reg.pending.pending:
            if reg.pending.t <= t:
                return
            self.cancel(reg.pending)
        self._schedule(reg, t)

    def _schedule(self, reg: _Registration, t: float) -> None:
        if reg.pending is not None:
            self.cancel(reg.pending)  # an idle reconciler's run at `resume_at`
        reg.idle = None
        reg.pending = self.at(
            t, lambda: self._reconcile(reg), priority=reg.priority, label=reg.reconciler.name
        )

    def _reconcile(self, reg: _Registration) -> None:
        reg.pending = None
        requeue = reg.reconciler.reconcile()
        if requeue is None:
            return
        if not requeue >= 0 or math.isinf(requeue):
            raise ValueError(f"{reg.reconciler.name} asked to run again in {requeue}s")
        self._request(reg.reconciler, self._t + requeue)

    # ---- running ----------------------------------------------------------------------------
    def run(self, until: float, *, on_step: Callable[[float], None] | None = None) -> None:
        """Fire every timer due at or before `until`, in order, then leave the clock at
        `until`. `on_step(t)` is called once per instant that had events, after them, and once
        at `until` (a progress bar or watch pane redraws there)."""
        if self._running:
            raise RuntimeError("Engine.run called from inside an event")
        if math.isnan(until) or until < self._t:
            raise ValueError(f"cannot run until t={until}s: now is {self._t}s")
        self._running = True
        try:
            self._loop(until, on_step)
        finally:
            self._running = False
        if until > self._t and not math.isinf(until):
            self._move_to(until)
        if on_step is not None:
            on_step(self._t)

    def _loop(self, until: float, on_step: Callable[[float], None] | None) -> None:
        heap = self._heap
        here = 0  # events fired at the current instant
        cap = self._max_per_instant
        watch_from = max(0, cap - _STUCK_SAMPLE)
        recent: Counter[str] = Counter()
        while heap:
            t, _, _, timer = heap[0]
            if timer.cancelled:
                heapq.heappop(heap)
                continue
            if t > until:
                break
            if t > self._t:
                if here and on_step is not None:
                    on_step(self._t)
                self._move_to(t)
                here = 0
                recent.clear()
            heapq.heappop(heap)
            self._top = max(self._top, timer.priority)
            here += 1
            if here > watch_from:
                # Only the last events before the cap are counted: the error names who loops.
                recent[timer.label] += 1
                if here > cap:
                    raise self._stuck(recent)
            timer.fired = True
            timer.action()
        if here and on_step is not None and until > self._t:
            on_step(self._t)

    def _stuck(self, recent: Counter[str]) -> EngineStuckError:
        busiest = ", ".join(f"{name or '(unlabelled)'} x{n}" for name, n in recent.most_common(3))
        return EngineStuckError(
            f"more than {self._max_per_instant:,} events at t={self._t}s without time moving "
            f"(a controller requeueing at 0s forever?); the last {sum(recent.values()):,} were: "
            f"{busiest}"
        )

    def _move_to(self, t: float) -> None:
        self._t = t
        self._top = -math.inf
        self.clock.set(self._start + dt.timedelta(seconds=t))

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0][3].cancelled:
            heapq.heappop(self._heap)
