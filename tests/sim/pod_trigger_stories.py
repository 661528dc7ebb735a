"""Stories of pods that wait for the pod controller's trigger, shared by the world's trigger and
idle-chain tests (not a test module)."""

from __future__ import annotations

from collections.abc import Callable

from gpucap.sim.podcontroller import PodController
from gpucap.sim.world import POD_RETRY_SECONDS, World
from tests.sim import laws


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
