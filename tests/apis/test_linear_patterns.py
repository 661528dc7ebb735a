"""CRD patterns rewritten for Python's backtracking engine: the same language, linear time.

The API server matches the CRD patterns with Go's RE2, which is linear; Python's `re` is not,
and some patterns as written split a run of digits every possible way (issue 9 found seconds to
minutes of matching on a 20,000-digit price adjustment or 2,000 spaces in a schedule). Each
rewrite is compared with the CRD's own text on every short string hypothesis draws.
"""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from gpucap.apis.quantity import _SCAN
from gpucap.apis.validation import _OVERLAY_PRICE_ADJUSTMENT, _schedule_shape

# karpenter.sh_nodeoverlays.yaml, spec.priceAdjustment (kubernetes-sigs/karpenter @ 2266468104f3)
CRD_PRICE_ADJUSTMENT = re.compile(
    r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$", re.ASCII
)


@given(st.text(alphabet="+-.%019", max_size=12))
@example("+0.5")
@example("-.5")
@example("+10%")
@example("-15%")
@example("-100%")
@example("-100.5%")
@example("+5.")
@example("-5.5%")
def test_the_price_adjustment_pattern_is_the_crds(text: str) -> None:
    # fullmatch on both; the CRD's `$` would also take a trailing newline, which the alphabet
    # leaves out (gpucap matches whole strings, as Go's `$` does).
    expected = CRD_PRICE_ADJUSTMENT.fullmatch(text) is not None
    assert (_OVERLAY_PRICE_ADJUSTMENT.fullmatch(text) is not None) == expected


def test_a_price_adjustment_of_a_hundred_thousand_digits_is_answered() -> None:
    assert _OVERLAY_PRICE_ADJUSTMENT.fullmatch("+" + "1" * 100_000 + "x") is None
    assert _OVERLAY_PRICE_ADJUSTMENT.fullmatch("+" + "1" * 100_000) is not None


# karpenter.sh_nodepools.yaml, budgets[].schedule: matched by stepping its states, since
# Python's engine took minutes on 2,000 spaces and a newline.
_CRD_SCHEDULE = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$",
    re.ASCII,
)


@given(st.text(alphabet=" \t\n\r*/,0159a@dily", max_size=16))
@example("@daily")
@example("0 0 * * *")
@example("0  0 * * *")
@example("0 0 * *\n*")
@example("0 0 * * *\n")
def test_the_schedule_shape_check_is_the_crd_pattern(text: str) -> None:
    assert _schedule_shape(text) == (_CRD_SCHEDULE.fullmatch(text) is not None)


def test_the_schedule_shape_of_thousands_of_spaces_is_answered() -> None:
    assert not _schedule_shape(" " * 2000 + "\n")
    assert _schedule_shape("0" + " *" * 2000)


# apimachinery's quantity scanner as first written: a sign, digits, a fraction, then suffix letters,
# a sign and digits, each taking all it can (Python 3.11's possessive quantifiers said so).
_GREEDY_QUANTITY_SCAN = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)"
)


@given(st.text(alphabet="+-.019eEiKMmx", max_size=12))
@example("1.5Gi")
@example("-1e+3")
@example("+-5")
@example("12x")
@example(".")
def test_the_quantity_scanner_splits_a_text_as_the_greedy_grammar_does(text: str) -> None:
    ours, greedy = _SCAN.fullmatch(text), _GREEDY_QUANTITY_SCAN.fullmatch(text)
    assert (ours and ours.groupdict()) == (greedy and greedy.groupdict())


def test_a_quantity_of_a_hundred_thousand_digits_and_a_stray_letter_is_answered() -> None:
    assert _SCAN.fullmatch("1" * 100_000 + "x") is None
    assert _SCAN.fullmatch("-1." + "1" * 100_000 + "e" + "1" * 100_000 + "x") is None
    assert _SCAN.fullmatch("1" * 100_000 + "e" + "1" * 100_000) is not None
