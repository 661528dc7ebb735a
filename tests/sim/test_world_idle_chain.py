"""An idle disruption loop's chain of requeues is held by the engine
(`DisruptionCadence._disrupt` calls `Engine.idle` with `resume_at` from
`DisruptionCadence._resume_at`; `Bus.changed` wakes it): a run gives the same event log as one
whose loop runs every link of the chain (`idle_chains` off), on random scenarios
(`test_laws.stories`: consolidateAfter values that run out between polls, scheduled and default
budgets, capacity windows whose insufficient-capacity marks expire while the loop idles) and on
the stories with consolidation, budgets and capacity windows. Hand-made mutations are caught:
the marks' end or the idle time left out of the resume time."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, example, given, note, settings

from gpucap.sim.cadence import DisruptionCadence
from gpucap.sim.world import World
from tests.sim import laws
from tests.sim.laws import EXAMPLES, ROLLING, Story, stories
from tests.sim.pod_trigger_stories import WAITING


class _Chained(World):
    """The reference: every run of the idle chain happens and requeues."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.cadence.idle_chains = False


class _MarksIgnoredCadence(DisruptionCadence):
    """A mutation: the resume time ignores the insufficient-capacity marks."""

    def _resume_at(self) -> float | None:
        until = self._idle_until
        if math.isinf(until):
            return None
        t = self.bus.now
        while t < until:
            t = t + min(10.0, until - t)
        return t


class _MarksIgnored(World):
    cadence_type = _MarksIgnoredCadence


class _UntilIgnoredCadence(DisruptionCadence):
    """A mutation: the resume time ignores when a consolidateAfter runs out."""

    def _resume_at(self) -> float | None:
        until = self._idle_until
        self._idle_until = float("inf")
        try:
            return super()._resume_at()
        finally:
            self._idle_until = until


class _UntilIgnored(World):
    cadence_type = _UntilIgnoredCadence


# g5.xlarge cannot be launched from 1m to 11m; the pod scaled up at 2m lands on a g5.2xlarge;
# consolidation's cheaper replacement fails on the window twice, and each time only the
# insufficient-capacity marks' end (3 minutes on) changes what the idle loop reads, until the
# replacement succeeds after the window.
MARKS = laws.window_story(
    "marks",
    types=["g5.xlarge", "g5.2xlarge"],
    policy="WhenEmptyOrUnderutilized",
    # 2 minutes: the pod's readiness (a cluster change that wakes the loop) comes well before
    # the pod's consolidateAfter runs out, so the marks' end is what the idle loop must see.
    after="2m",
    replicas=0,
    window_at="1m",
    scale_at="2m",
    scale_to=1,
)

CONSOLIDATING = ["underutilized", "when-empty", "budget-1", "drift-window", "spot-ice"]


@pytest.mark.parametrize("name", CONSOLIDATING)
def test_stories_are_the_same_with_the_idle_chain_held(name: str) -> None:
    assert laws.file_events(name, World) == laws.file_events(name, _Chained)


def test_the_marks_story_replaces_after_the_window_the_same_with_the_chain_held() -> None:
    held = laws.story_events(MARKS, World)
    assert held == laws.story_events(MARKS, _Chained)
    decided = [e for e in held if e["type"] == "DisruptionDecision"]
    assert [(e["reason"], e["instanceType"]) for e in decided] == [("Underutilized", "g5.2xlarge")]
    assert float(decided[0]["t"]) > 11 * 60


def test_the_law_catches_a_resume_time_that_ignores_the_marks() -> None:
    assert laws.story_events(MARKS, _MarksIgnored) != laws.story_events(MARKS, _Chained)


def test_the_law_catches_a_resume_time_that_ignores_the_idle_time() -> None:
    assert any(
        laws.file_events(name, _UntilIgnored) != laws.file_events(name, _Chained)
        for name in CONSOLIDATING
    )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stories())
@example(ROLLING)
@example(WAITING)
@example(MARKS)
def test_a_held_idle_chain_gives_the_chained_loops_events(story: Story) -> None:
    note(story.to_yaml())
    assert laws.story_events(story, World) == laws.story_events(story, _Chained)
