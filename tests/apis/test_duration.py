"""Durations: Karpenter's CRD duration patterns and Go's `time.ParseDuration` grammar."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gpucap.apis.duration import (
    BUDGET_DURATION_PATTERN,
    NILLABLE_DURATION_PATTERN,
    TERMINATION_GRACE_PERIOD_PATTERN,
    DurationError,
    format_seconds,
    parse_go_duration,
    parse_karpenter_duration,
)

# ----- Karpenter CRD durations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("720h", 2_592_000),
        ("1h30m", 5400),
        ("30s", 30),
        ("0s", 0),
        ("90m", 5400),
        ("1h1h", 7200),  # repeated units add up, as the pattern allows
        ("8h0s", 28_800),
        ("1s1m1h", 3661),
        ("Never", None),
    ],
)
def test_karpenter_duration_is_whole_seconds_or_never(text: str, seconds: int | None) -> None:
    assert parse_karpenter_duration(text) == seconds


@pytest.mark.parametrize(
    "bad", ["30d", "1.5h", "", "never", "NEVER", "h", "5", "-5m", "1h 30m", "300ms", "1H"]
)
def test_karpenter_duration_rejects_anything_but_whole_h_m_s(bad: str) -> None:
    with pytest.raises(DurationError):
        parse_karpenter_duration(bad)


@pytest.mark.parametrize(
    ("pattern", "text", "accepted"),
    [
        (NILLABLE_DURATION_PATTERN, "720h", True),
        (NILLABLE_DURATION_PATTERN, "1h30m", True),
        (NILLABLE_DURATION_PATTERN, "30s", True),
        (NILLABLE_DURATION_PATTERN, "Never", True),
        (NILLABLE_DURATION_PATTERN, "never", False),
        (NILLABLE_DURATION_PATTERN, "30d", False),
        (NILLABLE_DURATION_PATTERN, "1.5h", False),
        (NILLABLE_DURATION_PATTERN, "", False),
        (NILLABLE_DURATION_PATTERN, "10mNever", False),
        (TERMINATION_GRACE_PERIOD_PATTERN, "48h", True),
        (TERMINATION_GRACE_PERIOD_PATTERN, "1h30m10s", True),
        (TERMINATION_GRACE_PERIOD_PATTERN, "Never", False),
        (TERMINATION_GRACE_PERIOD_PATTERN, "", False),
        (TERMINATION_GRACE_PERIOD_PATTERN, "1.5h", False),
        (BUDGET_DURATION_PATTERN, "10m", True),
        (BUDGET_DURATION_PATTERN, "8h", True),
        (BUDGET_DURATION_PATTERN, "1h30m", True),
        (BUDGET_DURATION_PATTERN, "8h0s", True),
        (BUDGET_DURATION_PATTERN, "10m0s", True),
        (BUDGET_DURATION_PATTERN, "1h30m0s", True),
        (BUDGET_DURATION_PATTERN, "30s", False),
        (BUDGET_DURATION_PATTERN, "10m30s", False),
        (BUDGET_DURATION_PATTERN, "30m1h", False),
        (BUDGET_DURATION_PATTERN, "1h30m1h", False),
        (BUDGET_DURATION_PATTERN, "Never", False),
        (BUDGET_DURATION_PATTERN, "", False),
    ],
)
def test_crd_duration_patterns(pattern: re.Pattern[str], text: str, accepted: bool) -> None:
    # validation.py checks fields with `pattern.fullmatch`, so that is the call under test.
    assert (pattern.fullmatch(text) is not None) == accepted


@pytest.mark.parametrize(
    "pattern",
    [NILLABLE_DURATION_PATTERN, TERMINATION_GRACE_PERIOD_PATTERN, BUDGET_DURATION_PATTERN],
    ids=["nillable", "termination-grace-period", "budget"],
)
def test_crd_duration_patterns_reject_a_trailing_newline(pattern: re.Pattern[str]) -> None:
    assert pattern.fullmatch("10m\n") is None


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from("hms")), min_size=1, max_size=4))
def test_termination_grace_period_pattern_is_what_parse_karpenter_duration_accepts(
    terms: list[tuple[int, str]],
) -> None:
    text = "".join(f"{n}{u}" for n, u in terms)
    assert TERMINATION_GRACE_PERIOD_PATTERN.match(text)
    unit = {"h": 3600, "m": 60, "s": 1}
    assert parse_karpenter_duration(text) == sum(n * unit[u] for n, u in terms)


# ----- Go durations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("0", 0.0),
        ("+0", 0.0),
        ("-0", 0.0),
        ("0s", 0.0),
        ("-5m", -300.0),
        ("+5m", 300.0),
        ("1h2m3s", 3723.0),
        ("1h30m", 5400.0),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("2m0.5s", 120.5),
        ("1ns", 1e-9),
        ("1500us", 0.0015),
        ("1500µs", 0.0015),  # micro sign U+00B5
        ("1500μs", 0.0015),  # Greek mu U+03BC
        ("1m1m", 120.0),
        ("-1h30m", -5400.0),  # the sign applies to the whole duration
    ],
)
def test_go_duration_seconds(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    "bad",
    ["5", "h", "1x", "", "-", "+", ".s", "1h5", "1d", "1hr", "1 h", "1h-5m", "5M", "1e3s", "--5m"],
)
def test_go_duration_rejects_non_durations(bad: str) -> None:
    with pytest.raises(DurationError):
        parse_go_duration(bad)


@given(st.integers(0, 10**4), st.integers(0, 59), st.integers(0, 59))
def test_go_duration_sums_hours_minutes_seconds(h: int, m: int, s: int) -> None:
    assert parse_go_duration(f"{h}h{m}m{s}s") == h * 3600 + m * 60 + s
    assert parse_go_duration(f"-{h}h{m}m{s}s") == -(h * 3600 + m * 60 + s)


# ----- format_seconds -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (60, "1m"),
        (90, "1m30s"),
        (3600, "1h"),
        (7200, "2h"),
        (5400, "1h30m"),
        (3601, "1h1s"),
        (3723, "1h2m3s"),
        (2_592_000, "720h"),
        (3600.0, "1h"),
        (0.5, "0.5s"),
        (90.5, "1m30.5s"),
        (-90, "-1m30s"),
        (-0.5, "-0.5s"),
    ],
)
def test_format_seconds_is_compact(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


# The whole seconds a Go duration (int64 nanoseconds) holds.
GO_SECONDS = 9_223_372_036


@given(st.integers(min_value=0, max_value=GO_SECONDS))
@example(0)
@example(59)
@example(3600)
@example(GO_SECONDS)
def test_formatted_whole_seconds_parse_back(seconds: int) -> None:
    assert parse_go_duration(format_seconds(seconds)) == seconds


@given(st.integers(min_value=-GO_SECONDS, max_value=GO_SECONDS))
def test_formatted_whole_seconds_parse_back_with_their_sign(seconds: int) -> None:
    assert parse_go_duration(format_seconds(seconds)) == seconds


def test_formatted_fractional_seconds_are_exact_go_durations() -> None:
    assert parse_go_duration(format_seconds(1_234_567.5)) == 1_234_567.5
