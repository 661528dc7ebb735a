"""Go's number parsing for manifest strings: exactly what strconv.Atoi and ParseFloat answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.goparse import INT64_MAX, INT64_MIN, atoi, parse_float


@pytest.mark.parametrize(
    ("text", "go"),
    [
        ("0", 0),
        ("42", 42),
        ("+42", 42),
        ("-42", -42),
        ("007", 7),
        ("9223372036854775807", INT64_MAX),
        ("-9223372036854775808", INT64_MIN),
        ("0" * 30 + "1", 1),  # leading zeros are not digits of magnitude
        ("9223372036854775808", None),
        ("-9223372036854775809", None),
        ("1" * 5000, None),
        ("", None),
        ("+", None),
        ("1_000", None),
        (" 1", None),
        ("1 ", None),
        ("0x10", None),
        ("\u00b2", None),
        ("\u0663", None),
        ("\uff15", None),
        ("--1", None),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_atoi_answers_as_go_strconv_atoi(text: str, go: int | None) -> None:
    assert atoi(text) == go


@given(st.integers(INT64_MIN, INT64_MAX))
def test_atoi_reads_back_every_int64(n: int) -> None:
    assert atoi(str(n)) == n


@pytest.mark.parametrize(
    ("text", "go"),
    [
        ("0.52", 0.52),
        ("1", 1.0),
        ("+10", 10.0),
        ("-0.5", -0.5),
        ("1e308", 1e308),
        ("9" * 308, float("9" * 308)),
        ("9" * 400, None),  # ErrRange: Go gives +Inf and an error
        ("1e400", None),
        ("0." + "0" * 400 + "1", 0.0),  # underflow is no error in Go
        ("\u0661\u0662", None),
        ("inf", None),  # Go reads it; no CRD pattern lets it reach ParseFloat
        ("nan", None),
        ("", None),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_parse_float_answers_as_go_parsefloat(text: str, go: float | None) -> None:
    assert parse_float(text) == go
