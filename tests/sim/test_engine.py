"""The discrete-event engine (`sim/engine.py`): order, cancellation, reconcilers, bounds."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.runtime.clock import EPOCH, FakeClock
from gpucap.sim.engine import Engine, EngineStuckError


def make() -> Engine:
    return Engine(FakeClock())


@dataclass(eq=False)
class Counting:
    """A reconciler that records when it ran and returns the next requeue from a script."""

    engine: Engine
    requeues: list[float | None]
    name: str = "counting"
    runs: list[float] = field(default_factory=list)

    def reconcile(self) -> float | None:
        self.runs.append(self.engine.now)
        return self.requeues.pop(0) if self.requeues else None


def test_events_run_in_time_order_whatever_the_order_they_were_scheduled() -> None:
    e = make()
    seen: list[str] = []
    e.at(30, lambda: seen.append("c"))
    e.at(10, lambda: seen.append("a"))
    e.at(20, lambda: seen.append("b"))
    e.run(60)
    assert seen == ["a", "b", "c"]


def test_at_equal_times_the_lower_priority_runs_first_then_the_earlier_scheduled() -> None:
    e = make()
    seen: list[str] = []
    e.at(5, lambda: seen.append("p1-first"), priority=1)
    e.at(5, lambda: seen.append("p0"), priority=0)
    e.at(5, lambda: seen.append("p1-second"), priority=1)
    e.at(5, lambda: seen.append("p-1"), priority=-1)
    e.run(5)
    assert seen == ["p-1", "p0", "p1-first", "p1-second"]


def test_the_clock_shows_each_events_time_while_it_runs() -> None:
    clock = FakeClock()
    e = Engine(clock)
    seen: list[tuple[float, dt.datetime]] = []
    e.at(90.5, lambda: seen.append((e.now, clock.now())))
    e.run(100)
    assert seen == [(90.5, EPOCH + dt.timedelta(seconds=90.5))]


def test_run_stops_exactly_at_until_and_leaves_later_events_for_the_next_run() -> None:
    e = make()
    seen: list[float] = []
    e.at(10, lambda: seen.append(e.now))
    e.at(20, lambda: seen.append(e.now))
    e.at(20.000001, lambda: seen.append(e.now))
    e.run(20)
    assert seen == [10, 20]
    assert e.now == 20
    assert e.clock.now() == EPOCH + dt.timedelta(seconds=20)
    e.run(25)
    assert seen == [10, 20, 20.000001]
    assert e.now == 25


def test_run_moves_the_clock_to_until_even_with_nothing_scheduled() -> None:
    e = make()
    e.run(3600)
    assert e.now == 3600
    assert e.clock.now() == EPOCH + dt.timedelta(hours=1)


def test_a_cancelled_timer_never_fires() -> None:
    e = make()
    seen: list[str] = []
    timer = e.at(10, lambda: seen.append("cancelled"))
    e.at(10, lambda: seen.append("kept"))
    e.cancel(timer)
    e.run(20)
    assert seen == ["kept"]
    assert not timer.pending


def test_an_event_can_cancel_a_later_event_at_the_same_instant() -> None:
    e = make()
    seen: list[str] = []
    second = e.at(10, lambda: seen.append("second"), priority=1)
    e.at(10, lambda: e.cancel(second), priority=0)
    e.run(10)
    assert seen == []


def test_after_is_relative_to_the_current_event() -> None:
    e = make()
    seen: list[float] = []
    e.at(100, lambda: e.after(30, lambda: seen.append(e.now)))
    e.run(200)
    assert seen == [130]


def test_scheduling_in_the_past_is_refused() -> None:
    e = make()
    e.run(50)
    with pytest.raises(ValueError, match="before now"):
        e.at(10, lambda: None, label="late")
    with pytest.raises(ValueError, match="-1s from now"):
        e.after(-1, lambda: None)
    with pytest.raises(ValueError, match="at t=nan"):
        e.at(float("nan"), lambda: None)


def test_running_backwards_is_refused() -> None:
    e = make()
    e.run(50)
    with pytest.raises(ValueError, match="now is 50"):
        e.run(10)


def test_every_runs_the_reconciler_now_and_again_after_its_requeue() -> None:
    e = make()
    r = Counting(e, [10.0, 5.0, None])
    e.every(r, priority=0)
    e.run(100)
    assert r.runs == [0, 10, 15]


def test_a_reconciler_returning_none_runs_again_only_when_triggered() -> None:
    e = make()
    r = Counting(e, [None, None])
    e.every(r, priority=0)
    e.at(40, lambda: e.trigger(r))
    e.run(100)
    assert r.runs == [0, 40]


def test_triggers_coalesce_into_one_run() -> None:
    e = make()
    r = Counting(e, [])

    def burst() -> None:
        for _ in range(5):
            e.trigger(r, after=1.0)

    e.at(10, burst)
    e.run(100)
    assert r.runs == [11]


def test_an_earlier_trigger_brings_a_pending_run_forward() -> None:
    e = make()
    r = Counting(e, [60.0, None])
    e.every(r, priority=0)  # runs at 0, asks for 60
    e.at(20, lambda: e.trigger(r, after=1.0))
    e.run(100)
    assert r.runs == [0, 21]


def test_a_later_trigger_does_not_delay_a_pending_run() -> None:
    e = make()
    r = Counting(e, [30.0, None])
    e.every(r, priority=0)
    e.at(20, lambda: e.trigger(r, after=50.0))
    e.run(100)
    assert r.runs == [0, 30]


def test_reconcilers_at_one_instant_run_in_priority_order() -> None:
    e = make()
    order: list[str] = []

    @dataclass(eq=False)
    class Named:
        name: str

        def reconcile(self) -> float | None:
            order.append(self.name)
            return None

    e.every(Named("late"), priority=5)
    e.every(Named("early"), priority=1)
    e.run(0)
    assert order == ["early", "late"]


def test_a_reconciler_requeueing_at_zero_forever_stops_the_run_with_an_error() -> None:
    e = Engine(FakeClock(), max_per_instant=500)

    @dataclass(eq=False)
    class Spinner:
        name: str = "spinner"

        def reconcile(self) -> float | None:
            return 0.0

    e.every(Spinner(), priority=0)
    with pytest.raises(EngineStuckError, match=r"more than 500 events at t=0.0s.*spinner x"):
        e.run(10)


def test_many_events_at_one_instant_below_the_cap_are_fine() -> None:
    e = Engine(FakeClock(), max_per_instant=1000)
    seen: list[int] = []
    for i in range(1000):
        e.at(7, lambda i=i: seen.append(i))
    e.run(7)
    assert seen == list(range(1000))


def test_a_negative_requeue_is_an_error_naming_the_reconciler() -> None:
    e = make()

    @dataclass(eq=False)
    class Bad:
        name: str = "bad"

        def reconcile(self) -> float | None:
            return -1.0

    e.every(Bad(), priority=0)
    with pytest.raises(ValueError, match=r"bad asked to run again in -1\.0s"):
        e.run(1)


def test_on_step_is_called_once_per_instant_with_events_and_at_the_end() -> None:
    e = make()
    for t in (5, 5, 8):
        e.at(t, lambda: None)
    steps: list[float] = []
    e.run(10, on_step=steps.append)
    assert steps == [5, 8, 10]


def test_the_seeded_random_repeats_with_the_seed() -> None:
    a = Engine(FakeClock(), seed=7).random.random()
    b = Engine(FakeClock(), seed=7).random.random()
    c = Engine(FakeClock(), seed=8).random.random()
    assert a == b != c


# ---- the law ------------------------------------------------------------------------------
timer_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=50).map(float),  # t
        st.integers(min_value=-2, max_value=2),  # priority
        st.booleans(),  # cancel it
        st.integers(min_value=0, max_value=3),  # children it schedules when it fires
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(timer_specs, st.integers(min_value=0, max_value=60).map(float))
def test_any_interleaving_fires_in_t_priority_seq_order_and_never_moves_the_clock_back(
    specs: list[tuple[float, int, bool, int]], until: float
) -> None:
    e = make()
    fired: list[tuple[float, int, int]] = []
    clock_times: list[dt.datetime] = []
    keys: dict[int, tuple[float, int, int]] = {}

    def schedule(t: float, priority: int, children: int, depth: int) -> int:
        box: list[int] = []

        def action() -> None:
            me = keys[box[0]]
            fired.append(me)
            clock_times.append(e.clock.now())
            assert e.now == me[0]
            # The law: what fires is the smallest (t, priority, seq) of everything pending.
            pending = [keys[x[3].seq] for x in e._heap if x[3].pending]
            assert all(me < k for k in pending)
            if depth < 2:
                for k in range(children):
                    schedule(e.now + k % 2 * 3.0, priority - k, children, depth + 1)

        timer = e.at(t, action, priority=priority)
        box.append(timer.seq)
        keys[timer.seq] = (timer.t, timer.priority, timer.seq)
        return timer.seq

    cancelled: set[int] = set()
    timers = []
    for t, priority, cancel, children in specs:
        seq = schedule(t, priority, children, 0)
        timers.append((seq, cancel))
    for seq, cancel in timers:
        if cancel:
            cancelled.add(seq)
    by_seq = {t.seq: t for t in (entry[3] for entry in e._heap)}
    for seq in cancelled:
        e.cancel(by_seq[seq])

    e.run(until)

    assert not {k[2] for k in fired} & cancelled
    # Time never goes backwards, on the engine or on the clock.
    assert [k[0] for k in fired] == sorted(k[0] for k in fired)
    assert clock_times == sorted(clock_times)
    assert all(k[0] <= until for k in fired)
    # Every timer scheduled before the run, due by `until`, not cancelled, fired, in key order.
    upfront = sorted(keys[s] for s, _ in timers if s not in cancelled and keys[s][0] <= until)
    assert [k for k in fired if k[2] in {s for s, _ in timers}] == upfront
    assert e.now == until


def test_registering_a_triggered_reconciler_keeps_one_pending_run_at_the_new_priority() -> None:
    e = make()
    order: list[str] = []

    @dataclass(eq=False)
    class Named:
        name: str

        def reconcile(self) -> float | None:
            order.append(self.name)
            return None

    a, b = Named("a"), Named("b")
    e.trigger(a)  # priority 0 until registered
    e.every(b, priority=5)
    e.every(a, priority=9)
    e.run(0)
    assert order == ["b", "a"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=30).map(float),  # when the trigger is made
            st.integers(min_value=0, max_value=10).map(float),  # its delay
        ),
        max_size=30,
    )
)
def test_triggers_law_every_request_is_served_in_its_window_and_runs_never_exceed_requests(
    triggers: list[tuple[float, float]],
) -> None:
    e = make()
    log: list[tuple[str, float, float]] = []  # ("request", made, due) | ("run", t, t)
    pending: list[int] = []

    @dataclass(eq=False)
    class Watcher:
        name: str = "watcher"

        def reconcile(self) -> float | None:
            log.append(("run", e.now, e.now))
            return None

    w = Watcher()

    def request(delay: float) -> None:
        log.append(("request", e.now, e.now + delay))
        e.trigger(w, after=delay)
        pending.append(sum(1 for x in e._heap if x[3].pending and x[3].label == "watcher"))

    for made, delay in triggers:
        e.at(made, lambda d=delay: request(d))
    e.run(100)
    runs = [i for i, entry in enumerate(log) if entry[0] == "run"]
    for i, (what, made, due) in enumerate(log):
        if what == "request":
            # Served by the first run after it, no later than it was due.
            served = next(j for j in runs if j > i)
            assert made <= log[served][1] <= due
    # Coalescing: between two runs there is at least one request (no run without a cause).
    previous = -1
    for j in runs:
        assert any(log[k][0] == "request" for k in range(previous + 1, j))
        previous = j
    assert all(n == 1 for n in pending)  # at most one pending run, always


# ---- idle reconcilers ----------------------------------------------------------------------------
@dataclass(eq=False)
class Watcher:
    """A reconciler that acts when its input changed since it last looked and otherwise does
    nothing: either requeueing every `period` (`idles=False`) or idling until woken."""

    engine: Engine
    log: list[tuple[str, float, int]]
    period: float
    busy_requeue: float
    idles: bool
    name: str = "watcher"
    input: int = 0
    seen: int = 0
    runs: int = 0

    def reconcile(self) -> float | None:
        self.runs += 1
        if self.input == self.seen:
            if self.idles:
                self.engine.idle(self, self.period)
                return None
            return self.period
        self.seen = self.input
        self.log.append(("acted", self.engine.now, self.input))
        return self.busy_requeue


# One scripted event: (time, priority, what), what: "change" (the watcher's input), "trigger"
# (a trigger of the watcher `after` seconds), or "late" (a change scheduled at the same instant
# by an event of a higher priority than the watcher's, so it runs after the watcher's run).
script = st.lists(
    st.tuples(
        st.integers(0, 400).map(lambda t: t / 4),
        st.sampled_from([0, 10, 30, 31, 32, 40]),
        st.sampled_from(["change", "trigger", "late"]),
        st.sampled_from([0.0, 2.5, 10.0]),
    ),
    max_size=25,
)


def _run_watcher(
    events: list[tuple[float, int, str, float]], period: float, busy: float, *, idles: bool
) -> list[tuple[str, float, int]]:
    e = make()
    log: list[tuple[str, float, int]] = []
    w = Watcher(e, log, period, busy, idles)

    def change(label: str) -> None:
        w.input += 1
        log.append((label, e.now, w.input))
        e.wake(w)  # a no-op for the watcher that requeues

    for i, (t, priority, what, after) in enumerate(events):
        if what == "change":
            e.at(t, lambda i=i: change(f"change {i}"), priority=priority)
        elif what == "trigger":
            e.at(t, lambda after=after: e.trigger(w, after=after), priority=priority)
        else:
            e.at(
                t,
                lambda i=i: e.at(e.now, lambda: change(f"late {i}"), priority=0),
                priority=40,
            )
    e.every(w, priority=31)
    e.run(120)
    return log


@settings(max_examples=300, deadline=None)
@given(script, st.sampled_from([10.0, 3.7, 0.3]), st.sampled_from([10.0, 1.25, 0.0]))
def test_an_idle_reconciler_acts_exactly_when_one_requeueing_every_period_would(
    events: list[tuple[float, int, str, float]], period: float, busy: float
) -> None:
    # The runs an idle reconciler skips did nothing; the ones after a wake or a trigger land
    # on the same times and in the same place among the events of their instant.
    requeueing = _run_watcher(events, period, busy, idles=False)
    idling = _run_watcher(events, period, busy, idles=True)
    assert idling == requeueing


def test_an_idle_reconciler_does_not_run_until_woken() -> None:
    e = make()
    log: list[tuple[str, float, int]] = []
    w = Watcher(e, log, 10.0, 10.0, idles=True)
    e.every(w, priority=1)
    e.at(95, lambda: (setattr(w, "input", 1), e.wake(w)))
    e.run(200)
    assert log == [("acted", 100.0, 1)]  # the 10-s grid from 0: the first run after 95
    assert w.runs == 3  # at 0 (idles), 100 (acts), 110 (idles); none at 10..90 or after 110


class Resuming:
    """A reconciler that idles until `resume_at` (its own requeues would reach it)."""

    name = "resuming"

    def __init__(self, engine: Engine, resume_at: float) -> None:
        self.engine = engine
        self.resume_at = resume_at
        self.runs: list[float] = []

    def reconcile(self) -> float | None:
        self.runs.append(self.engine.now)
        if self.engine.now < self.resume_at:
            self.engine.idle(self, 10.0, resume_at=self.resume_at)
        return None


def test_an_idle_reconciler_with_a_resume_time_runs_then_when_nothing_wakes_it() -> None:
    e = make()
    r = Resuming(e, 25.0)
    e.every(r, priority=1)
    e.run(100)
    assert r.runs == [0.0, 25.0]


def test_a_wake_whose_grid_run_comes_after_the_resume_time_keeps_the_resume_run() -> None:
    e = make()
    r = Resuming(e, 25.0)
    e.every(r, priority=1)
    e.at(21, lambda: e.wake(r))  # the grid's next run is at 30
    e.run(100)
    assert r.runs == [0.0, 25.0]


def test_a_wake_whose_grid_run_comes_first_runs_then_and_not_again_at_the_resume_time() -> None:
    e = make()
    r = Resuming(e, 25.0)
    e.every(r, priority=1)
    e.at(5, lambda: e.wake(r))  # the grid's next run is at 10, which idles to 25 again
    e.run(100)
    assert r.runs == [0.0, 10.0, 25.0]


def test_a_trigger_of_a_reconciler_idle_until_a_resume_time_runs_it_at_once() -> None:
    e = make()
    r = Resuming(e, 25.0)
    e.every(r, priority=1)
    e.at(7, lambda: e.trigger(r))
    e.run(100)
    assert r.runs == [0.0, 7.0, 25.0]
