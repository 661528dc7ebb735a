"""Pausing Python's cyclic garbage collector around work that makes many objects that all live
on and almost no cycles. Used by loading (`apis.serde.load_text`), the plan loop
(`controllers.provisioning.loop.run_passes`), a simulation's run (`sim.world.World.run`), plan
output (`cli.render`) and the `plan` command."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside; the collector runs again afterwards if it was on
    (nested pauses: the outermost gives it back). The collector's passes over a heap that
    only grows walk live objects: while a file loads they made validation cost more per pod
    the more pods it held (10,000 pods: 135 us a pod, against 54 without them)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # What was made meanwhile goes to the oldest generation (freeze, then unfreeze:
            # two list splices), else the first young collection afterwards walks all of it
            # (a tenth of a second after a 24-hour simulation).
            gc.freeze()
            gc.unfreeze()
            gc.enable()
