"""Kubernetes quantities: the grammar, exact nano-unit values, rounding up, canonical text."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

import pydantic
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gpucap.apis import quantity as quantity_module
from gpucap.apis.quantity import (
    MAX_UNITS,
    MILLI_RESOURCES,
    Quantity,
    QuantityError,
    base_units,
    format_base_units,
    format_resource_value,
    parse_resource_value,
)

NANO = 10**9
KI = 1024

MAX_NANOS = MAX_UNITS * NANO

# Any integer count of nanos, weighted towards the edges (zero, tiny, int64 and far beyond).
nanos = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, 1, -1, NANO, -NANO, 2**63 - 1, -(2**63), 2**70 * NANO, 10**30 + 1]),
)
# The nanos a manifest can write: at most 2^63-1 whole units either way.
in_range_nanos = st.one_of(
    st.integers(min_value=-MAX_NANOS, max_value=MAX_NANOS),
    st.sampled_from([0, 1, -1, NANO, -NANO, MAX_NANOS, -MAX_NANOS, MAX_NANOS - 1, 2**63 - 1]),
)


# ----- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected_nanos"),
    [
        ("500m", 500 * 10**6),
        ("16Gi", 16 * 2**30 * NANO),
        ("1e3", 1000 * NANO),
        ("1E3", 1000 * NANO),
        ("1E", 10**18 * NANO),  # a bare E is the exa suffix, not an exponent
        ("1e-3", 10**6),
        ("1e+3", 1000 * NANO),
        ("0.5", 500 * 10**6),
        ("1.", NANO),
        (".5", 500 * 10**6),
        ("100M", 100 * 10**6 * NANO),
        ("100k", 100 * 10**3 * NANO),
        ("1.5Gi", 3 * 2**29 * NANO),
        ("0.1n", 1),  # finer than a nano rounds up to 1n
        ("1u", 1000),
        ("7n", 7),
        ("-2Mi", -2 * 2**20 * NANO),
        ("+3", 3 * NANO),
        ("0", 0),
        ("-0", 0),
        ("007", 7 * NANO),
        ("0.0000000001", 1),
        # JSON/YAML numbers
        (2, 2 * NANO),
        (0, 0),
        (-3, -3 * NANO),
        (0.5, 500 * 10**6),
        (2.5e-3, 25 * 10**5),
        (1e18, 10**18 * NANO),
        (1e-10, 1),
        (-0.0, 0),
    ],
)
def test_quantity_parses_to_exact_nanos(text: str | float, expected_nanos: int) -> None:
    assert Quantity.parse(text).nanos == expected_nanos


@pytest.mark.parametrize(
    ("suffix", "power"), [("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)]
)
def test_binary_suffixes_are_powers_of_1024(suffix: str, power: int) -> None:
    assert Quantity.parse(f"3{suffix}").value() == 3 * KI**power


@pytest.mark.parametrize(
    ("suffix", "exponent"),
    [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ],
)
def test_decimal_suffixes_are_powers_of_ten(suffix: str, exponent: int) -> None:
    assert Fraction(Quantity.parse(f"3{suffix}").nanos, NANO) == 3 * Fraction(10) ** exponent


@pytest.mark.parametrize(
    "bad",
    [
        "abc",
        "1.5.5",
        "Pi",  # no digits, and too wide for Kubernetes' fast path (see the digitless table)
        "1 Gi",
        "1KiB",
        "",
        "   ",
        "1e",  # an exponent needs digits; lower-case e is no suffix
        "1K",  # kilo is lower-case k
        "1e3Gi",
        "--1",
        "1-",
        "0x10",
        "inf",
        "nan",
        True,
        False,
        None,
        [1],
        float("inf"),
        float("nan"),
    ],
)
def test_non_quantities_are_rejected(bad: Any) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


def test_quantity_error_is_a_value_error_naming_the_input() -> None:
    with pytest.raises(ValueError, match="'1KiB'"):
        Quantity.parse("1KiB")


@given(st.integers(min_value=-MAX_UNITS, max_value=MAX_UNITS))
def test_parsing_an_int_is_from_value(n: int) -> None:
    assert Quantity.parse(n) == Quantity.from_value(n)


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_from_milli_is_a_thousandth_of_from_value(n: int) -> None:
    assert Quantity.from_milli(1000 * n) == Quantity.from_value(n)
    assert Quantity.from_milli(n).milli_value() == n


# ----- rounding -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("1500m", 2, 1500),
        ("1001m", 2, 1001),
        ("1n", 1, 1),
        ("0.1m", 1, 1),
        ("0", 0, 0),
        ("-1500m", -2, -1500),
        ("-1n", -1, -1),
        ("-0.5m", -1, -1),
        ("16Gi", 16 * 2**30, 16 * 2**30 * 1000),
    ],
)
def test_value_and_milli_value_round_away_from_zero_as_kubernetes_does(
    text: str, value: int, milli: int
) -> None:
    q = Quantity.parse(text)
    assert (q.value(), q.milli_value()) == (value, milli)


@given(nanos)
def test_value_is_whole_units_rounded_away_from_zero(n: int) -> None:
    q = Quantity(n)

    def away(x: Fraction) -> int:
        return math.ceil(x) if x >= 0 else -math.ceil(-x)

    assert q.value() == away(Fraction(n, NANO))
    assert q.milli_value() == away(Fraction(n, 10**6))


@given(nanos)
def test_is_integer_and_is_zero_follow_the_nanos(n: int) -> None:
    q = Quantity(n)
    assert q.is_zero() == (n == 0)
    assert q.is_integer() == (n % NANO == 0)
    if q.is_integer():
        assert Quantity.from_value(q.value()) == q


# ----- canonical text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("16Gi", "16Gi"),
        ("1024", "1Ki"),
        ("1000", "1k"),
        ("1e3", "1k"),
        ("1E", "1E"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("2048Ki", "2Mi"),
        ("10112k", "9875Ki"),  # binary and decimal equally short: binary wins
        ("1024000", "1024k"),  # decimal shorter than 1000Ki
        ("1536", "1536"),
        ("1.5", "1500m"),
        ("0.5", "500m"),
        ("-1500m", "-1500m"),
        ("0.001", "1m"),
        ("2000n", "2u"),
        ("1500n", "1500n"),
        ("0.1n", "1n"),
        ("0", "0"),
        ("-0", "0"),
        ("+2", "2"),
        ("100M", "100M"),
        ("-2Mi", "-2Mi"),
    ],
)
def test_str_is_the_shortest_canonical_form(text: str, canonical: str) -> None:
    assert str(Quantity.parse(text)) == canonical
    assert repr(Quantity.parse(text)) == f"Quantity({canonical!r})"


@given(in_range_nanos)
@example(0)
@example(-1)
@example(MAX_NANOS)
def test_str_parses_back_to_the_same_quantity(n: int) -> None:
    q = Quantity(n)
    assert Quantity.parse(str(q)) == q


@given(in_range_nanos)
def test_str_is_a_fixed_point_of_parse(n: int) -> None:
    text = str(Quantity(n))
    assert str(Quantity.parse(text)) == text


# ----- value semantics ------------------------------------------------------------------------


@given(in_range_nanos, in_range_nanos)
def test_order_follows_the_nanos_and_survives_formatting(a: int, b: int) -> None:
    qa, qb = Quantity(a), Quantity(b)
    assert (qa < qb) == (a < b)
    assert (qa <= qb) == (a <= b)
    assert (qa > qb) == (a > b)
    assert (qa == qb) == (a == b)
    pa, pb = Quantity.parse(str(qa)), Quantity.parse(str(qb))
    assert (pa < pb) == (a < b)
    assert (pa == pb) == (a == b)


@given(st.integers(), st.integers())
def test_strictly_smaller_ints_give_strictly_smaller_quantities(a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    if lo == hi:
        hi += 1
    assert Quantity(lo) < Quantity(hi)
    assert Quantity.from_value(lo) < Quantity.from_value(hi)
    assert not Quantity(hi) < Quantity(lo)


@given(in_range_nanos)
def test_equal_quantities_hash_equal(n: int) -> None:
    assert hash(Quantity(n)) == hash(Quantity.parse(str(Quantity(n))))


def test_equivalent_spellings_are_one_quantity() -> None:
    spellings = {Quantity.parse(t) for t in ("1Ki", "1024", "1.024k", "1024e0", 1024, 1024.0)}
    assert spellings == {Quantity(1024 * NANO)}


def test_quantity_is_not_equal_to_its_number_or_text() -> None:
    q = Quantity.parse("1")
    assert q != 1
    assert q != "1"


def test_quantity_is_immutable() -> None:
    q = Quantity.parse("1Gi")
    with pytest.raises(AttributeError):
        q._nanos = 0  # type: ignore[misc]
    assert q == Quantity.parse("1Gi")


# ----- resource values in base units ----------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "text", "base"),
    [
        ("cpu", "500m", 500),
        ("cpu", "2", 2000),
        ("cpu", "0.1m", 1),  # rounds up to a whole millicore
        ("cpu", 1.5, 1500),
        ("memory", "16Gi", 16 * 2**30),
        ("memory", "1.5", 2),  # rounds up to a whole byte
        ("memory", "1k", 1000),
        ("nvidia.com/gpu", "4", 4),
        ("nvidia.com/gpu", 8, 8),
        ("pods", "110", 110),
    ],
)
def test_parse_resource_value_uses_millicores_for_cpu_only(
    resource: str, text: str | float, base: int
) -> None:
    assert parse_resource_value(resource, text) == base


def test_only_cpu_is_a_milli_resource() -> None:
    assert frozenset({"cpu"}) == MILLI_RESOURCES


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("cpu", 500, "500m"),
        ("cpu", 2000, "2"),
        ("cpu", 1500, "1500m"),
        ("memory", 16 * 2**30, "16Gi"),
        ("memory", 1000, "1k"),
        ("nvidia.com/gpu", 4, "4"),
        ("memory", 0, "0"),
    ],
)
def test_format_resource_value_is_canonical(resource: str, value: int, text: str) -> None:
    assert format_resource_value(resource, value) == text


@given(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods"]),
    st.integers(min_value=-MAX_UNITS, max_value=MAX_UNITS),
)
def test_resource_values_round_trip_through_text(resource: str, value: int) -> None:
    text = format_resource_value(resource, value)
    assert parse_resource_value(resource, text) == value
    assert format_resource_value(resource, parse_resource_value(resource, text)) == text


def test_base_units_converts_a_resource_list() -> None:
    resources = {
        "cpu": Quantity.parse("1.5"),
        "memory": Quantity.parse("1Gi"),
        "nvidia.com/gpu": Quantity.parse("1"),
        "ephemeral-storage": Quantity.parse("0.5"),
    }
    assert base_units(resources) == {
        "cpu": 1500,
        "memory": 2**30,
        "nvidia.com/gpu": 1,
        "ephemeral-storage": 1,
    }


def test_format_base_units_sorts_by_name_and_formats_each() -> None:
    out = format_base_units({"pods": 3, "memory": 2**31, "cpu": 250})
    assert list(out.items()) == [("cpu", "250m"), ("memory", "2Gi"), ("pods", "3")]


# ----- pydantic integration -------------------------------------------------------------------


class _Limits(pydantic.BaseModel):
    amount: Quantity


@pytest.mark.parametrize(
    ("raw", "canonical"), [("1.5Gi", "1536Mi"), ("1e3", "1k"), (2, "2"), (0.25, "250m")]
)
def test_pydantic_field_validates_and_serialises_canonically(raw: Any, canonical: str) -> None:
    model = _Limits.model_validate({"amount": raw})
    assert model.amount == Quantity.parse(raw)
    assert model.model_dump() == {"amount": canonical}
    assert model.model_dump_json() == f'{{"amount":"{canonical}"}}'
    assert _Limits.model_validate_json(model.model_dump_json()) == model


def test_pydantic_field_keeps_a_quantity_instance() -> None:
    q = Quantity.parse("3Gi")
    assert _Limits(amount=q).amount is q


@pytest.mark.parametrize("raw", ["1KiB", True, None, ""])
def test_pydantic_field_reports_invalid_quantities(raw: Any) -> None:
    with pytest.raises(pydantic.ValidationError, match="quantity") as info:
        _Limits.model_validate({"amount": raw})
    assert info.value.errors()[0]["type"] == "quantity"
    assert info.value.errors()[0]["loc"] == ("amount",)


# ----- Kubernetes' grammar at its edges, and gpucap's bounds ------------------------------------
# Each row is Kubernetes' own answer (apimachinery pkg/api/resource quantity.go, suffix.go and
# quantity_test.go @ eed236ce): the value it parses to, in nanos, or None where it rejects.
def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 30 else f"{text[:20]}...({len(text)})"


KUBERNETES_ANSWERS: list[tuple[str, int | None]] = [
    # "Things written by trolls" and other accepted spellings in quantity_test.go
    (".001", 10**6),
    ("1.", NANO),
    ("1.G", 10**9 * NANO),
    ("0.000000000001Ki", 2),  # rounds up to 1n first, then 1.024n rounds up to 2n
    ("100.035Ki", 102_435_840 * 10**6),
    ("3.001n", 4),
    ("1.1E-9", 2),
    ("0.00000012345", 124),
    ("1E-3", 10**6),
    ("1.3E+6", 1_300_000 * NANO),
    ("9E", 9 * 10**18 * NANO),  # E alone is exa
    ("9Ei", MAX_NANOS),  # binary values are capped at 2^63-1, silently
    ("9223372036854775807Ki", MAX_NANOS),
    ("-9Ei", -MAX_NANOS),
    ("8Ei", MAX_NANOS),  # 2^63 itself is one past the cap
    ("7Ei", 7 * 2**60 * NANO),
    # the invalid list of quantity_test.go
    ("1.1.M", None),
    ("1+1.0M", None),
    ("0.1mi", None),
    ("0.1am", None),
    ("aoeu", None),
    (".5i", None),
    ("1i", None),
    ("-3.01i", None),
    ("-3.01e-", None),
    # exponents: Go's ParseInt reads them, so a sign and leading zeros are fine
    ("1e+0003", 1000 * NANO),
    ("1e-0009", 1),
    ("1e", None),
    ("1e+", None),
    ("1ee3", None),
    ("1e3.5", None),  # the CRD pattern allows a fractional exponent; the parser does not
    # below a nano: Kubernetes rounds any non-zero value up to 1n, whatever the exponent
    ("1e-999999999", 1),
    ("-1e-999999999", -1),
    ("1e-2147483648", 1),
    ("0e-2147483648", 0),
    ("0." + "0" * 5000 + "1", 1),
    ("1." + "0" * 5000 + "1", NANO + 1),
    # Unicode digits are not digits to Go
    ("\u00b2", None),
    ("\u0663", None),  # ARABIC-INDIC DIGIT THREE
    ("\uff15", None),  # FULLWIDTH DIGIT FIVE
    ("1\u0663", None),
]


@pytest.mark.parametrize(("text", "kubernetes"), KUBERNETES_ANSWERS, ids=_short)
def test_quantity_grammar_edges_give_kubernetes_answer(text: str, kubernetes: int | None) -> None:
    if kubernetes is None:
        with pytest.raises(QuantityError):
            Quantity.parse(text)
    else:
        assert Quantity.parse(text).nanos == kubernetes


# Kubernetes' parser reads a quantity without a single digit as 0 on its int64 fast path
# (scale >= -9, binary suffixes up to Ti), and rejects it on its inf.Dec path ("no digits").
@pytest.mark.parametrize(
    ("text", "kubernetes"),
    [
        (".", 0),
        ("-", 0),
        ("+", 0),
        ("-.", 0),
        ("m", 0),
        ("n", 0),
        ("E", 0),
        ("e5", 0),
        ("e-9", 0),
        ("Ki", 0),
        ("Gi", 0),
        ("Ti", 0),
        ("e-10", None),
        ("Pi", None),
        ("Ei", None),
    ],
)
def test_a_quantity_without_digits_is_zero_where_kubernetes_fast_path_takes_it(
    text: str, kubernetes: int | None
) -> None:
    if kubernetes is None:
        with pytest.raises(QuantityError, match="no digits"):
            Quantity.parse(text)
    else:
        assert Quantity.parse(text).nanos == kubernetes


@pytest.mark.parametrize(
    "text",
    [
        "9223372036854775808",
        "-9223372036854775808",
        "1e19",
        "9.3E",
        "1e999999999",
        "1e5000",
        "1e2147483647",
        "10000000000P",
        "1" + "0" * 5000,
    ],
)
def test_a_decimal_quantity_beyond_int64_units_is_rejected_naming_the_limit(text: str) -> None:
    with pytest.raises(QuantityError, match="larger than 9223372036854775807"):
        Quantity.parse(text)


@pytest.mark.parametrize("text", ["1e2147483648", "1e-2147483649", "1e4294967296", "1e" + "9" * 30])
def test_an_exponent_outside_int32_is_rejected_not_truncated(text: str) -> None:
    # Kubernetes before PR #141203 narrowed it to int32 (1e4294967296 read as 1).
    with pytest.raises(QuantityError, match="exponent is outside"):
        Quantity.parse(text)


@pytest.mark.parametrize(
    "number", [2**63, -(2**63), 10**30, 10**5000], ids=["2^63", "-2^63", "10^30", "10^5000"]
)
def test_an_integer_beyond_int64_units_is_rejected(number: int) -> None:
    with pytest.raises(QuantityError, match="larger than"):
        Quantity.parse(number)


def test_the_largest_int64_is_accepted_as_a_number_and_as_text() -> None:
    assert Quantity.parse(MAX_UNITS) == Quantity.parse(str(MAX_UNITS)) == Quantity(MAX_NANOS)


def test_an_error_message_shortens_a_huge_input() -> None:
    with pytest.raises(QuantityError) as info:
        Quantity.parse("1" * 100_000)
    assert len(str(info.value)) < 300
    assert "100000 characters" in str(info.value)


# A quantity text the hypothesis laws draw: Kubernetes' grammar with any suffix, exponents
# from tame to far beyond int32, mantissas long or empty.
_suffixes = st.one_of(
    st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]),
    st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]),
    st.builds(
        lambda e, exp: f"{e}{exp}",
        st.sampled_from(["e", "E", "e+", "e-", "E-"]),
        st.one_of(
            st.integers(0, 40),
            st.integers(0, 2**31 + 10),
            st.integers(0, 10**25),
        ),
    ),
)
_quantity_texts = st.builds(
    lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", max_size=30),
    st.one_of(st.just(""), st.builds(lambda f: "." + f, st.text("0123456789", max_size=30))),
    _suffixes,
)


@given(_quantity_texts)
@example("1e999999999")
@example("1e-999999999")
@example("123456789012345678901234567890e-2147483648")
@example("0.5e2147483647Ei")
def test_parse_never_computes_beyond_the_order_of_magnitude_it_checked(text: str) -> None:
    # The law behind "bounded": the only arithmetic on a parsed value is `_magnitude_nanos`, and
    # the parser calls it only after placing the value within a few dozen orders of magnitude
    # of a unit, so its integers stay short whatever exponent the text writes.
    calls: list[tuple[str, int, int]] = []
    real = quantity_module._magnitude_nanos

    def spy(digits: str, exp10: int, bits: int) -> int:
        calls.append((digits, exp10, bits))
        return real(digits, exp10, bits)

    quantity_module._magnitude_nanos = spy
    try:
        Quantity.parse(text)
    except QuantityError:
        pass
    finally:
        quantity_module._magnitude_nanos = real
    for digits, exp10, bits in calls:
        assert -40 <= len(digits) + exp10 <= 25
        assert len(digits) <= len(text)
        assert bits <= 60


def _kubernetes_nanos(text: str) -> int | None:
    """An independent reading of Kubernetes' rules with exact fractions, for tame exponents."""
    if not text:
        return None  # ErrFormatWrong
    m = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", text)
    assert m is not None
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    decimal = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
    binary = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
    if suffix in decimal:
        factor, exp10, bits = Fraction(10) ** decimal[suffix], decimal[suffix], 0
    elif suffix in binary:
        factor, exp10, bits = Fraction(2) ** binary[suffix], 0, binary[suffix]
    else:
        exp10 = int(suffix[1:])
        if not -(2**31) <= exp10 < 2**31:
            return None
        factor, bits = Fraction(10) ** exp10, 0
    if not whole and not frac:
        fast = bits <= 40 if bits else exp10 >= -9
        return 0 if fast else None
    value = Fraction(int(whole + frac or "0"), 10 ** len(frac)) * factor
    nanos = math.ceil(value * NANO)
    if nanos > MAX_NANOS:
        if not bits:
            return None
        nanos = MAX_NANOS
    return -nanos if sign == "-" else nanos


@given(
    st.builds(
        lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
        st.sampled_from(["", "+", "-"]),
        st.text("0123456789", max_size=22),
        st.one_of(st.just(""), st.builds(lambda f: "." + f, st.text("0123456789", max_size=22))),
        st.one_of(
            st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]),
            st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]),
            st.builds(lambda e, x: f"{e}{x}", st.sampled_from(["e", "E"]), st.integers(-60, 40)),
        ),
    )
)
@example("0.5Mi")
@example("9Ei")
@example("9223372036854775807.0000000001")
def test_parse_agrees_with_an_exact_fraction_reading_of_kubernetes_rules(text: str) -> None:
    expected = _kubernetes_nanos(text)
    if expected is None:
        with pytest.raises(QuantityError):
            Quantity.parse(text)
    else:
        assert Quantity.parse(text).nanos == expected


@given(in_range_nanos)
def test_every_in_range_value_round_trips_through_its_text(n: int) -> None:
    assert Quantity.parse(str(Quantity(n))).nanos == n
