"""Karpenter's provisioning batch window, on the simulator's clock.

Read from kubernetes-sigs/karpenter (2266468) `pkg/controllers/provisioning/batcher.go` and
`pkg/operator/options/options.go`: the first pending pod opens a window; every pod that becomes
pending afterwards pushes its end to 1 s after it (`BATCH_IDLE_DURATION`), but never past 10 s
after the window opened (`BATCH_MAX_DURATION`); then the provisioner runs one scheduling pass
for everything pending and the window is cleared. A pod already triggered in the open window
does not extend it (the batcher keeps a set of the pods it has seen).

Karpenter's batcher blocks a goroutine on timers; here it is a small object the caller drives:
`add(t)` when a pod becomes pending at `t` (seconds since the scenario start), `ready_at()` when
the pass should run (None: no window open), `reset()` after the pass. Called by the simulator's
provisioning reconciler.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BATCH_IDLE_SECONDS", "BATCH_MAX_SECONDS", "Batcher"]

BATCH_IDLE_SECONDS = 1.0  # options.go BATCH_IDLE_DURATION default
BATCH_MAX_SECONDS = 10.0  # options.go BATCH_MAX_DURATION default


@dataclass(slots=True)
class Batcher:
    """One batch window (see the module docstring)."""

    idle: float = BATCH_IDLE_SECONDS
    max_duration: float = BATCH_MAX_SECONDS
    _opened: float | None = None
    _last: float | None = None
    _seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.idle <= 0 or self.max_duration <= 0:
            raise ValueError(
                f"batch durations must be positive, got idle={self.idle} max={self.max_duration}"
            )

    def add(self, t: float, key: str | None = None) -> None:
        """A pod (`key`, e.g. namespace/name) became pending at `t`: open the window or push
        its idle end; a key already seen in this window changes nothing."""
        if key is not None:
            if key in self._seen:
                return
            self._seen.add(key)
        if self._opened is None:
            self._opened = t
        if self._last is None or t > self._last:
            self._last = t

    def ready_at(self) -> float | None:
        """When the window closes and the pass runs: 1 s after the last pod, at most 10 s
        after the first; None when no window is open."""
        if self._opened is None or self._last is None:
            return None
        return min(self._last + self.idle, self._opened + self.max_duration)

    def reset(self) -> None:
        """Close the window (after the pass ran)."""
        self._opened = None
        self._last = None
        self._seen.clear()
