"""The HPA controller's normalization, as kubernetes/kubernetes
`pkg/controller/podautoscaler/horizontal.go` does it: clamping, stabilization windows over the
recommendations, Pods/Percent policies with selectPolicy, scale events over their periods.
Rows are hand-computed from horizontal.go's functions (named per test)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.horizontalpodautoscaler import (
    DEFAULT_SCALE_DOWN,
    DEFAULT_SCALE_UP,
    HPAScalingPolicy,
    HPAScalingRules,
)
from gpucap.controllers.podautoscaler.horizontal import HorizontalController


def controller(
    lo: int = 1,
    hi: int = 100,
    up: HPAScalingRules = DEFAULT_SCALE_UP,
    down: HPAScalingRules = DEFAULT_SCALE_DOWN,
) -> HorizontalController:
    return HorizontalController(lo, hi, up, down)


def rules(window: int, select: str, *policies: tuple[str, int, int]) -> HPAScalingRules:
    return HPAScalingRules(
        stabilization_window_seconds=window,
        select_policy=select,  # type: ignore[arg-type]
        policies=[HPAScalingPolicy(type=t, value=v, period_seconds=p) for t, v, p in policies],  # type: ignore[arg-type]
    )


def test_default_scale_up_is_the_larger_of_double_and_four_pods_per_15_seconds() -> None:
    # calculateScaleUpLimitWithScalingRules: from 1, max(1 + 4, ceil(1 x 2)) = 5.
    assert controller().sync(0, 1, [50]).desired == 5
    # from 10, max(10 + 4, 20) = 20.
    assert controller().sync(0, 10, [50]).desired == 20


def test_scale_ups_within_the_period_count_against_the_limit() -> None:
    c = controller()
    assert c.sync(0, 1, [50]).desired == 5
    # 15 s later the first event is no longer within (now - 15, now]: a fresh period.
    assert c.sync(15, 5, [50]).desired == 10
    # A sync within the period: the period started at 5 (10 - 5 added): max(9, 10) = 10.
    assert c.sync(20, 10, [50]).desired == 10


def test_default_scale_down_waits_for_the_300_second_window() -> None:
    c = controller()
    assert c.sync(0, 10, [10]).desired == 10  # recommendation 10 recorded
    d = c.sync(15, 10, [2])
    assert d.desired == 10  # the highest recommendation of the last 300 s is 10
    assert c.sync(299, 10, [2]).desired == 10  # the 0 s sample is still within 300 s
    # At 300 s it is at the cutoff, which is not after it: every sample left asks for 2.
    assert c.sync(300, 10, [2]).desired == 2


def test_the_first_sync_scales_down_at_once_with_no_recommendations_yet() -> None:
    # stabilizeRecommendationWithBehaviors with an empty list: the proposal alone.
    assert controller().sync(0, 10, [2]).desired == 2


def test_max_and_min_replicas_clamp_the_proposal() -> None:
    assert controller(hi=6).sync(0, 5, [9]).desired == 6
    assert controller(lo=3, down=rules(0, "Max", ("Percent", 100, 15))).sync(0, 5, [1]).desired == 3


def test_a_count_outside_min_max_is_brought_back_at_once() -> None:
    assert controller(lo=2, hi=4).sync(0, 9, [9]).desired == 4
    assert controller(lo=2, hi=4).sync(0, 1, [1]).desired == 2


def test_zero_replicas_switch_the_hpa_off() -> None:
    d = controller().sync(0, 0, [10])
    assert (d.desired, d.rescale) == (0, False)


def test_select_policy_min_takes_the_least_permissive_policy() -> None:
    up = rules(0, "Min", ("Pods", 2, 60), ("Percent", 100, 60))
    # min(4 + 2, 8) = 6.
    assert controller(up=up).sync(0, 4, [20]).desired == 6


def test_select_policy_disabled_forbids_the_direction() -> None:
    up = rules(0, "Disabled")
    assert controller(up=up).sync(0, 4, [20]).desired == 4


def test_percent_scale_down_rounds_down() -> None:
    # 50 % of 5 per minute: int(5 x 0.5) = 2 is the floor.
    down = rules(0, "Max", ("Percent", 50, 60))
    assert controller(down=down).sync(0, 5, [1]).desired == 2


def test_a_scale_up_window_keeps_the_lowest_recent_recommendation() -> None:
    up = rules(60, "Max", ("Percent", 900, 15))
    c = controller(up=up)
    assert c.sync(0, 4, [4]).desired == 4
    assert c.sync(15, 4, [12]).desired == 4  # the 4 of t=0 is within 60 s
    assert c.sync(75, 4, [12]).desired == 12


def test_an_invalid_metric_blocks_a_scale_down_not_a_scale_up() -> None:
    assert controller(down=rules(0, "Max", ("Percent", 100, 15))).sync(0, 5, [2, None]).desired == 5
    assert controller().sync(0, 5, [8, None]).desired == 8
    assert controller().sync(0, 5, [None]).desired == 5


def test_the_largest_metric_proposal_wins() -> None:
    assert controller().sync(0, 4, [5, 7, 6]).desired == 7


@given(
    lo=st.integers(1, 5),
    span=st.integers(0, 20),
    start=st.integers(1, 25),
    proposals=st.lists(st.integers(0, 60), min_size=1, max_size=40),
)
def test_every_decision_stays_within_min_and_max_once_inside(
    lo: int, span: int, start: int, proposals: list[int]
) -> None:
    hi = lo + span
    c = controller(lo, hi)
    current = start
    for i, p in enumerate(proposals):
        d = c.sync(15.0 * i, current, [p])
        if lo <= current <= hi:
            assert lo <= d.desired <= hi
        current = d.desired


@given(proposals=st.lists(st.integers(1, 50), min_size=2, max_size=40))
def test_the_default_scale_down_never_goes_below_a_recommendation_of_the_last_300_seconds(
    proposals: list[int],
) -> None:
    c = controller(1, 100)
    current = 10
    for i, p in enumerate(proposals):
        now = 15.0 * i
        d = c.sync(now, current, [p])
        if d.desired < current:
            recent = [p2 for j, p2 in enumerate(proposals[: i + 1]) if now - 15.0 * j < 300]
            assert d.desired >= max(recent) or d.desired == current
        current = d.desired
