"""`costFloorUSD` in the summary (`sim/summary.py`): the `CostFloor` events' $/hour integrated
from each change to the next or the end, on hand-built logs and as a law."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.report.summary import summary_view
from gpucap.sim.recorder import Event
from gpucap.sim.summary import summarize


def ev(t: float, kind: str, /, **fields: Any) -> Event:
    return Event(t, kind, fields)


def test_the_floor_is_each_rate_from_its_change_to_the_next_or_the_end() -> None:
    log = [
        ev(0.0, "CostFloor", usdPerHour=2.012),
        ev(1800.0, "CostFloor", usdPerHour=1.006),
        ev(5400.0, "CostFloor", usdPerHour=0.0),
    ]
    # Half an hour at $2.012, an hour at $1.006, then nothing until the end.
    assert summarize(log, end=7200.0)["costFloorUSD"] == pytest.approx(1.006 + 1.006)
    # At 45 minutes the run had had half an hour at $2.012 and a quarter at $1.006.
    assert summarize(log, end=2700.0)["costFloorUSD"] == pytest.approx(1.006 + 0.2515)


def test_no_floor_before_the_first_change_and_none_without_one() -> None:
    assert "costFloorUSD" not in summarize([], end=3600.0)  # a run without --cost-floor
    log = [ev(600.0, "CostFloor", usdPerHour=3.6)]
    assert summarize(log, end=4200.0)["costFloorUSD"] == pytest.approx(3.6)


def test_the_floor_sits_after_the_cost_and_is_rounded_as_it_is() -> None:
    log = [ev(0.0, "CostFloor", usdPerHour=1.0)]
    summary = summarize(log, end=1.0)
    keys = list(summary)
    assert keys[keys.index("costUSD") + 1] == "costFloorUSD"
    assert summary["costFloorUSD"] == round(1 / 3600, 6)


_RATES = st.lists(
    st.tuples(
        st.floats(0, 86_400, allow_nan=False).map(lambda t: round(t, 3)),
        st.floats(0, 500, allow_nan=False).map(lambda r: round(r, 6)),
    ),
    max_size=12,
)


@given(_RATES, st.floats(0, 100_000, allow_nan=False).map(lambda t: round(t, 3)))
def test_the_floor_is_the_sum_of_its_pieces_and_never_negative(
    changes: list[tuple[float, float]], end: float
) -> None:
    log = [ev(t, "CostFloor", usdPerHour=r) for t, r in sorted(changes, key=lambda c: c[0])]
    inside = [e for e in log if e.t <= end]
    pieces = 0.0
    for i, e in enumerate(inside):
        until = inside[i + 1].t if i + 1 < len(inside) else end
        pieces += e.fields["usdPerHour"] * (until - e.t) / 3600
    summary = summarize(log, end=end)
    if not inside:
        assert "costFloorUSD" not in summary  # not recorded: no floor, not a floor of 0
        return
    floor = summary["costFloorUSD"]
    assert floor >= 0.0
    assert floor == pytest.approx(round(pieces, 6), abs=1e-6)


def test_the_text_says_the_floor_and_how_far_the_bill_is_above_it() -> None:
    log = [
        ev(0.0, "NodeClaimCreated", nodeClaim="gpu-1", nodePool="gpu"),
        ev(
            0.0,
            "NodeClaimLaunched",
            nodeClaim="gpu-1",
            nodePool="gpu",
            instanceType="g5.12xlarge",
            zone="us-east-1a",
            capacityType="on-demand",
            pricePerHour=3.0,
            gpus=4,
        ),
        ev(0.0, "CostFloor", usdPerHour=2.0),
    ]
    view = summary_view(summarize(log, end=3600.0))
    said = [f.text for f in view.facts if getattr(f, "key", "") == "cost-floor"]
    assert said == ["Cost floor: $2.00 (the bill is 50.0% above)"]


def test_no_floor_line_without_a_floor_nor_in_a_summary_recorded_before_it() -> None:
    summary = summarize([ev(0.0, "CostFloor", usdPerHour=0.0)], end=60.0)
    assert summary["costFloorUSD"] == 0.0
    assert not [f for f in summary_view(summary).facts if getattr(f, "key", "") == "cost-floor"]
    del summary["costFloorUSD"]
    assert not [f for f in summary_view(summary).facts if getattr(f, "key", "") == "cost-floor"]
