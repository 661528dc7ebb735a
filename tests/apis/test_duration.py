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
    parse_go_duration_ns,
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


# ----- Go's int64 range (issue 9) ---------------------------------------------------------------
# Go's time.ParseDuration (src/time/format.go @ 08d24035) accumulates unsigned nanoseconds and
# fails once they pass 2^63 (2^63 - 1 for a positive duration); it never wraps.
GO_MAX_NS = 2**63 - 1


@pytest.mark.parametrize(
    ("text", "go_ns"),
    [
        ("2562047h47m16.854775807s", GO_MAX_NS),
        ("9223372036854775807ns", GO_MAX_NS),
        ("-9223372036854775808ns", -(2**63)),  # one more nanosecond on the negative side
        ("-2562047h47m16.854775808s", -(2**63)),
        ("2562047h", 2562047 * 3600 * 10**9),
        ("1." + "1" * 5000 + "s", 1_111_111_111),  # fraction digits past int64 add no precision
        ("0.1s", 100_000_000),
        ("1.5h", 5400 * 10**9),
        ("1h0.5m", 3630 * 10**9),
    ],
)
def test_go_duration_nanoseconds_are_go_s(text: str, go_ns: int) -> None:
    assert parse_go_duration_ns(text) == go_ns


@pytest.mark.parametrize(
    "text",
    [
        "2562047h47m16.854775808s",
        "9223372036854775808ns",
        "-9223372036854775809ns",
        "2562048h",
        "1" + "0" * 39 + "s",  # the Scenario duration of 10^39 seconds
        "1" * 100_000 + "h",
        "2562047h2562047h",  # each term fits; the sum does not
        "9223372036854775807ns1ns",
    ],
    ids=lambda t: t if len(t) < 30 else f"{t[:12]}...({len(t)})",
)
def test_a_go_duration_past_int64_nanoseconds_is_an_error_not_a_wrap(text: str) -> None:
    with pytest.raises(DurationError, match="out of range: a Go duration is at most"):
        parse_go_duration_ns(text)


@pytest.mark.parametrize("text", ["\u0665m", "\uff15m", "\u00b2s", "1\u0660s"])
def test_a_go_duration_in_non_ascii_digits_is_rejected(text: str) -> None:
    with pytest.raises(DurationError):
        parse_go_duration_ns(text)


@pytest.mark.parametrize("text", ["2562048h", "99999999999999999999s", "153722867281m"])
def test_a_karpenter_duration_past_go_range_is_rejected(text: str) -> None:
    assert NILLABLE_DURATION_PATTERN.fullmatch(text)  # the CRD pattern takes it
    with pytest.raises(DurationError, match="out of range"):
        parse_karpenter_duration(text)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**21),
            st.sampled_from(["ns", "us", "ms", "s", "m", "h"]),
        ),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_whole_go_durations_are_exact_within_int64_and_errors_beyond(
    terms: list[tuple[int, str]], negative: bool
) -> None:
    unit = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
    text = ("-" if negative else "") + "".join(f"{n}{u}" for n, u in terms)
    total = sum(n * unit[u] for n, u in terms)
    # Go fails as soon as a term or a running sum passes 2^63, so "fits at the end" is enough
    # only when every partial sum fits too; with non-negative terms the last sum is the largest.
    limit = 2**63 if negative else 2**63 - 1
    if total <= limit:
        assert parse_go_duration_ns(text) == (-total if negative else total)
    else:
        with pytest.raises(DurationError):
            parse_go_duration_ns(text)


@pytest.mark.parametrize("text", [" 5m", "5m ", "5m\n", "\t1h"])
def test_a_go_duration_is_not_trimmed(text: str) -> None:
    # Go's ParseDuration reads the text as given; Karpenter ignores a do-not-disrupt annotation
    # of " 5m" (time.ParseDuration fails) and so does gpucap.
    with pytest.raises(DurationError):
        parse_go_duration_ns(text)
