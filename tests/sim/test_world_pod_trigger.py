"""The pod controller's 10-s retrigger idles while no pod became pending
(`PodController._retrigger` calls `Engine.idle`; `PodController.pending` wakes it): a run gives
the same event log as one whose retrigger polls every 10 s, on random scenarios
(`test_laws.stories`) and on the stories whose pods wait for capacity. A hand-made mutation (a
pending pod that does not wake the trigger) is caught."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, note, settings

import tests.sim.test_laws as laws
from gpucap.sim.podcontroller import PodController
from gpucap.sim.world import POD_RETRY_SECONDS, World
from tests.sim.test_laws import EXAMPLES, ROLLING, Story, stories


class _PollingController(PodController):
    """The reference: the retrigger runs every 10 s whether or not a pod is pending."""

    def _retrigger(self) -> float | None:
        if not self._maybe_pending:
            return POD_RETRY_SECONDS
        return super()._retrigger()


class _Polling(World):
    pod_controller_type = _PollingController


class _UnwokenController(PodController):
    """The mutation: a pod that becomes pending (or is left to the retrigger after a failed
    launch) does not wake the idle retrigger."""

    def _unwoken(self, method: Callable[[str], None], key: str) -> None:
        wake = self.engine.wake
        self.engine.wake = lambda r: None if r is self.pod_trigger else wake(r)  # type: ignore[method-assign]
        try:
            method(key)
        finally:
            self.engine.wake = wake  # type: ignore[method-assign]

    def pending(self, key: str) -> None:
        self._unwoken(super().pending, key)

    def requeued(self, key: str) -> None:
        self._unwoken(super().requeued, key)


class _Unwoken(World):
    pod_controller_type = _UnwokenController


@pytest.mark.parametrize("name", ["spot-ice", "limits", "pending-only", "interrupt"])
def test_stories_with_waiting_pods_are_the_same_with_the_idle_retrigger(name: str) -> None:
    assert laws.file_events(name, World) == laws.file_events(name, _Polling)


# One on-demand g5.xlarge runs a pod; from 20m to 30m no g5.xlarge can be launched and at 25m
# the Deployment scales to 2: the new pod waits, and after the window only the retrigger
# notices that the insufficient-capacity marks have expired.
WAITING = laws.window_story(
    "waiting",
    types=["g5.xlarge"],
    policy="WhenEmpty",
    after="Never",
    replicas=1,
    window_at="20m",
    scale_at="25m",
    scale_to=2,
)


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
