"""The pod controller's 10-s retrigger idles while no pod became pending
(`PodController._retrigger` calls `Engine.idle`; `PodController.pending` wakes it): a run gives
the same event log as one whose retrigger polls every 10 s, on random scenarios
(`test_laws.stories`) and on the stories whose pods wait for capacity. A hand-made mutation (a
pending pod that does not wake the trigger) is caught."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, note, settings

from gpucap.sim.world import World
from tests.sim import laws
from tests.sim.laws import EXAMPLES, ROLLING, Story, stories
from tests.sim.pod_trigger_stories import (
    WAITING,
    _Polling,
    _Unwoken,
)


@pytest.mark.parametrize("name", ["spot-ice", "limits", "pending-only", "interrupt"])
def test_stories_with_waiting_pods_are_the_same_with_the_idle_retrigger(name: str) -> None:
    assert laws.file_events(name, World) == laws.file_events(name, _Polling)


def test_the_waiting_story_needs_the_retrigger_and_is_the_same_with_it_idle() -> None:
    idle = laws.story_events(WAITING, World)
    assert idle == laws.story_events(WAITING, _Polling)
    bound = [e for e in idle if e["type"] == "PodBound"]
    assert len(bound) == 2
    assert float(bound[1]["t"]) > 30 * 60  # after the window


def test_the_law_catches_a_pending_pod_that_does_not_wake_the_retrigger() -> None:
    assert laws.story_events(WAITING, _Unwoken) != laws.story_events(WAITING, _Polling)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stories())
@example(ROLLING)
@example(WAITING)
def test_an_idle_retrigger_gives_the_polling_retriggers_events(story: Story) -> None:
    note(story.to_yaml())
    assert laws.story_events(story, World) == laws.story_events(story, _Polling)
