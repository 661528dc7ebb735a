"""A run's cumulative cost curve (`sim/costcurve.py`): the cost the summary would say of the run
as it stood at each instant of the grid, read from the events alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.costcurve import cost_curve, curve_times
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.summary import summarize
from gpucap.sim.world import simulate

STORIES = Path(__file__).resolve().parent / "stories"


def _launched(t: float, claim: str, price: float) -> Event:
    return Event(
        t,
        "NodeClaimLaunched",
        {
            "nodeClaim": claim,
            "nodePool": "gpu",
            "instanceType": "g5.xlarge",
            "zone": "us-east-1a",
            "capacityType": "spot",
            "pricePerHour": price,
            "gpus": 1,
        },
    )


def test_the_grid_runs_from_the_start_to_the_end_evenly() -> None:
    assert curve_times(100.0, 5) == [0.0, 25.0, 50.0, 75.0, 100.0]
    with pytest.raises(ValueError, match="at least 2 points"):
        curve_times(100.0, 1)


def test_a_node_costs_its_price_from_launch_until_its_node_terminates() -> None:
    events = [_launched(0, "gpu-1", 3.6), Event(50, "NodeTerminated", {"nodeClaim": "gpu-1"})]
    # $3.60/h is $0.001/s: 50 s billed, nothing after.
    assert cost_curve(events, end=100, points=5) == (0.0, 0.025, 0.05, 0.05, 0.05)


def test_billing_stops_when_ec2_takes_the_instance_back_before_the_node_goes() -> None:
    events = [
        _launched(0, "gpu-1", 3.6),
        Event(40, "InstanceTerminated", {"nodeClaim": "gpu-1"}),
        Event(90, "NodeTerminated", {"nodeClaim": "gpu-1"}),
    ]
    assert cost_curve(events, end=100, points=3)[-1] == 0.04


def test_the_last_point_of_a_real_runs_curve_is_its_cost() -> None:
    scenario = load_scenario(str(STORIES / "interrupt.yaml"), load_catalog)
    result = simulate(scenario, load_catalog(scenario.region))
    curve = cost_curve(result.events, end=result.end)
    assert len(curve) == 200
    assert curve[0] == 0.0
    assert curve[-1] == pytest.approx(result.summary["costUSD"], abs=1e-6)


_node = st.tuples(
    st.integers(0, 3600),  # launched
    st.one_of(st.none(), st.integers(0, 3600)),  # node terminated
    st.one_of(st.none(), st.integers(0, 3600)),  # instance terminated
    st.sampled_from([0.1, 1.006, 3.5, 12.0]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_node, max_size=8))
def test_the_cost_at_each_instant_is_the_summary_of_the_run_cut_there(
    nodes: list[tuple[int, int | None, int | None, float]],
) -> None:
    events = []
    for i, (launched, node_gone, instance_gone, price) in enumerate(nodes):
        claim = f"gpu-{i}"
        events.append(_launched(launched, claim, price))
        if node_gone is not None:
            events.append(Event(max(launched, node_gone), "NodeTerminated", {"nodeClaim": claim}))
        if instance_gone is not None:
            t = max(launched, instance_gone)
            events.append(Event(t, "InstanceTerminated", {"nodeClaim": claim}))
    events.sort(key=lambda e: e.t)
    curve = cost_curve(events, end=3600, points=13)
    for t, cost in zip(curve_times(3600, 13), curve, strict=True):
        assert cost == pytest.approx(summarize(events, end=t)["costUSD"], abs=2e-6)
    assert list(curve) == sorted(curve)  # cumulative: it never goes down
