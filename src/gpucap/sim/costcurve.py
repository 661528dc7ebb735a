"""A run's cumulative cost over time, sampled on a fixed grid: the curve `simulate --runs` keeps
of each run for the set's fan chart (p5-p95 of the runs' cost at each instant, `--report`).

`cost_curve(events, end=..., points=...)` reads the event log alone, as `sim/summary.py` does,
and bills as it does: a node from its first `NodeClaimLaunched` (at that event's `pricePerHour`)
until its first `NodeTerminated` or its instance's `InstanceTerminated`, whichever comes first,
or `end`. The cost at time t is then what the summary's `costUSD` would say of the run as it
stood at t, so the curve's last point is the run's cost (tests/sim/test_costcurve.py).

The grid is `points` instants evenly spaced from 0 to `end` inclusive, the same for every run of
a scenario, so the runs' curves line up point by point. Called by `sim/runset.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpucap.sim.recorder import Event

__all__ = ["COST_CURVE_POINTS", "cost_curve", "curve_times"]

# Points of a run's curve: enough for a smooth fan chart, small next to the run's summary.
COST_CURVE_POINTS = 200
_DOLLARS = 6  # decimals, as the summary's dollars


def curve_times(end: float, points: int = COST_CURVE_POINTS) -> list[float]:
    """The grid: `points` instants (at least 2) from 0 to `end`, evenly spaced."""
    if points < 2:
        raise ValueError(f"a cost curve has at least 2 points, not {points}")
    return [end * i / (points - 1) for i in range(points)]


def cost_curve(
    events: Sequence[Event], *, end: float, points: int = COST_CURVE_POINTS
) -> tuple[float, ...]:
    """The run's cumulative cost in dollars at each instant of `curve_times(end, points)`."""
    if not math.isfinite(end) or end < 0:
        raise ValueError(f"the end of a run is a time >= 0, not {end}")
    launched: dict[str, tuple[float, float]] = {}  # claim -> (time, $/hour)
    stopped: dict[str, float] = {}  # claim -> the first of its node's and its instance's end
    for e in sorted((e for e in events if e.t <= end), key=lambda e: e.t):
        claim = e.get("nodeClaim")
        if claim is None:
            continue
        if e.type == "NodeClaimLaunched" and claim not in launched:
            launched[claim] = (e.t, e.fields["pricePerHour"])
        elif e.type in ("NodeTerminated", "InstanceTerminated"):
            stopped[claim] = min(stopped.get(claim, math.inf), e.t)
    # The cost is piecewise linear: its slope rises by a node's price at its launch and falls
    # back when billing stops. One sweep over those changes and the grid, in time order.
    changes: list[tuple[float, float]] = []
    for claim, (t, price) in launched.items():
        stop = min(stopped.get(claim, end), end)
        if stop > t:
            changes += [(t, price / 3600), (stop, -price / 3600)]
    changes.sort()
    curve: list[float] = []
    cost = slope = last = 0.0
    i = 0
    for t in curve_times(end, points):
        while i < len(changes) and changes[i][0] <= t:
            at, delta = changes[i]
            cost += slope * (at - last)
            last, slope = at, slope + delta
            i += 1
        # Never below the last point: float rounding of a slope back to zero is not a refund.
        curve.append(max(round(cost + slope * (t - last), _DOLLARS), curve[-1] if curve else 0.0))
    return tuple(curve)
