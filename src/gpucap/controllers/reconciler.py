"""The `Reconciler` protocol: what a controller looks like to the simulator's event engine.

Karpenter's controllers are controller-runtime reconcilers: each run looks at the cluster, acts,
and returns a `reconcile.Result` saying when to run again (`RequeueAfter`), never sleeping.
Here a reconciler's `reconcile()` returns the seconds until it wants to run again, or None to
run only when something triggers it (`sim/engine.Engine.trigger`, as a watch event would).
Implemented by the controllers (`controllers/`); driven by `sim/engine.Engine.every`.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Reconciler"]


class Reconciler(Protocol):
    """A controller the engine runs: `name` labels its events; `reconcile` does one pass."""

    name: str

    def reconcile(self) -> float | None:
        """One pass. Seconds until the next wanted pass (0: as soon as possible, after what is
        already queued for this instant), or None: only when triggered."""
        ...
