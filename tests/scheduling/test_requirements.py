"""Karpenter's requirement algebra (`pkg/scheduling/requirement.go`, `requirements.go`).

Expected results come from Karpenter's own tests (`requirement_test.go`, `requirements_test.go`):
the operator-by-operator intersection matrix, the `Has`/`Operator`/`Len`/`Any`/`String` tables,
the compatibility matrices and the typo-hint messages. Where gpucap differs from Karpenter the
test still states Karpenter's result and is marked as a strict expected failure.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpucap.apis.core import NodeSelectorRequirement
from gpucap.apis.labels import ARCH, CORE_WELL_KNOWN_LABELS, INSTANCE_TYPE, OS, REGION, ZONE
from gpucap.apis.nodepool import NodeSelectorRequirementWithMinValues
from gpucap.scheduling.requirements import IncompatibleError, Requirement, Requirements

MAX_INT64 = 2**63 - 1


def req(
    operator: str, *values: str, key: str = "key", min_values: int | None = None
) -> Requirement:
    return Requirement.new(key, operator, values, min_values)


def raw(
    complement: bool,
    *values: str,
    gte: int | None = None,
    lte: int | None = None,
    min_values: int | None = None,
) -> Requirement:
    """A requirement by its internal shape, as Karpenter's tables spell some expected results."""
    return Requirement("key", complement, frozenset(values), gte, lte, min_values)


# Karpenter's fourteen fixture requirements, in the order of its tables.
REQS: dict[str, Requirement] = {
    "exists": req("Exists"),
    "dne": req("DoesNotExist"),
    "inA": req("In", "A"),
    "inB": req("In", "B"),
    "inAB": req("In", "A", "B"),
    "notInA": req("NotIn", "A"),
    "in1": req("In", "1"),
    "in9": req("In", "9"),
    "in19": req("In", "1", "9"),
    "notIn12": req("NotIn", "1", "2"),
    "gt1": req("Gt", "1"),
    "gt9": req("Gt", "9"),
    "lt1": req("Lt", "1"),
    "lt9": req("Lt", "9"),
}
NAMES = list(REQS)

# The minValues Karpenter gives each fixture in its "with flexibility" variants.
MIN_VALUES = dict.fromkeys(NAMES, 1) | {"inAB": 2, "in19": 2, "notIn12": 2}

# Results that are not themselves fixtures.
SPECIAL: dict[str, Requirement] = {
    "notInA12": raw(True, "A", "1", "2"),
    "gt1-notIn2": raw(True, "2", gte=2),
    "lt9-notIn12": raw(True, "1", "2", lte=8),
    "gt1-lt9": raw(True, gte=2, lte=8),
}

# row.intersection(column); columns in NAMES order.
INTERSECTION_MATRIX = {
    "exists": "exists dne inA inB inAB notInA in1 in9 in19 notIn12 gt1 gt9 lt1 lt9",
    "dne": "dne dne dne dne dne dne dne dne dne dne dne dne dne dne",
    "inA": "inA dne inA dne inA dne dne dne dne inA dne dne dne dne",
    "inB": "inB dne dne inB inB inB dne dne dne inB dne dne dne dne",
    "inAB": "inAB dne inA inB inAB inB dne dne dne inAB dne dne dne dne",
    "notInA": "notInA dne dne inB inB notInA in1 in9 in19 notInA12 gt1 gt9 lt1 lt9",
    "in1": "in1 dne dne dne dne in1 in1 dne in1 dne dne dne dne in1",
    "in9": "in9 dne dne dne dne in9 dne in9 in9 in9 in9 dne dne dne",
    "in19": "in19 dne dne dne dne in19 in1 in9 in19 in9 in9 dne dne in1",
    "notIn12": "notIn12 dne inA inB inAB notInA12 dne in9 in9 notIn12 gt1-notIn2 gt9 lt1 lt9-notIn12",
    "gt1": "gt1 dne dne dne dne gt1 dne in9 in9 gt1-notIn2 gt1 gt9 dne gt1-lt9",
    "gt9": "gt9 dne dne dne dne gt9 dne dne dne gt9 gt9 gt9 dne dne",
    "lt1": "lt1 dne dne dne dne lt1 dne dne dne lt1 dne dne lt1 lt1",
    "lt9": "lt9 dne dne dne dne lt9 in1 dne in1 lt9-notIn12 gt1-lt9 dne lt1 lt9",
}
PAIRS = [(a, b) for a in NAMES for b in NAMES]


def expected_intersection(a: str, b: str) -> Requirement:
    name = INTERSECTION_MATRIX[a].split()[NAMES.index(b)]
    return REQS[name] if name in REQS else SPECIAL[name]


def with_min_values(name: str) -> Requirement:
    return replace(REQS[name], min_values=MIN_VALUES[name])


# ---- Requirement.new ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        ("In", ("A", "B", "A"), raw(False, "A", "B")),
        ("NotIn", ("A", "B"), raw(True, "A", "B")),
        ("Exists", (), raw(True)),
        ("DoesNotExist", (), raw(False)),
        ("Gt", ("1",), raw(True, gte=2)),
        ("Gt", ("-5",), raw(True, gte=-4)),
        ("Lt", ("9",), raw(True, lte=8)),
        ("Lt", ("0",), raw(True, lte=-1)),
        ("Gte", ("2",), raw(True, gte=2)),
        ("Lte", ("8",), raw(True, lte=8)),
        ("Gt", (str(MAX_INT64),), raw(False)),
        ("Gt", (str(MAX_INT64 - 1),), raw(True, gte=MAX_INT64)),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_new_canonicalises_each_operator_to_a_value_set_with_inclusive_bounds(
    operator: str, values: tuple[str, ...], expected: Requirement
) -> None:
    assert req(operator, *values) == expected


def test_gt_is_gte_of_the_next_integer_and_lt_is_lte_of_the_previous() -> None:
    assert req("Gt", "1") == req("Gte", "2")
    assert req("Lt", "9") == req("Lte", "8")
    for value in ("0", "1", "2", "8", "9", "100"):
        assert req("Gt", "1").has(value) == req("Gte", "2").has(value)
        assert req("Lt", "9").has(value) == req("Lte", "8").has(value)


def test_gt_max_int64_is_does_not_exist() -> None:
    r = req("Gt", str(MAX_INT64))
    assert r.operator == "DoesNotExist"
    assert len(r) == 0


def test_gt_max_int64_drops_min_values() -> None:
    assert req("Gt", str(MAX_INT64), min_values=2).min_values is None


@pytest.mark.parametrize("operator", ["In", "NotIn", "Exists", "Gte", "Lte", "Lt"])
def test_new_keeps_min_values(operator: str) -> None:
    values = ("3",) if operator in ("In", "NotIn", "Gte", "Lte", "Lt") else ()
    assert req(operator, *values, min_values=3).min_values == 3


@pytest.mark.parametrize(
    ("beta", "stable"),
    [
        ("failure-domain.beta.kubernetes.io/zone", ZONE),
        ("failure-domain.beta.kubernetes.io/region", REGION),
        ("beta.kubernetes.io/arch", ARCH),
        ("beta.kubernetes.io/os", OS),
        ("beta.kubernetes.io/instance-type", INSTANCE_TYPE),
    ],
)
def test_new_normalises_beta_label_keys_to_their_stable_names(beta: str, stable: str) -> None:
    assert req("In", "test", key=beta).key == stable
    assert list(Requirements.from_labels({beta: "test"})) == [stable]
    selector = NodeSelectorRequirement.model_validate(
        {"key": beta, "operator": "In", "values": ["test"]}
    )
    assert list(Requirements.from_node_selector([selector])) == [stable]


def test_requirements_store_normalised_keys_only() -> None:
    reqs = Requirements.of(req("In", "test", key="failure-domain.beta.kubernetes.io/zone"))
    assert "failure-domain.beta.kubernetes.io/zone" not in reqs
    assert reqs.get_or_exists(ZONE).has("test")


def test_from_node_selector_carries_min_values() -> None:
    selector = NodeSelectorRequirementWithMinValues.model_validate(
        {"key": "k", "operator": "In", "values": ["a", "b"], "minValues": 2}
    )
    assert Requirements.from_node_selector([selector])["k"] == req(
        "In", "a", "b", key="k", min_values=2
    )


# ---- intersection ---------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[f"{a}-and-{b}" for a, b in PAIRS])
def test_intersection_matches_karpenters_operator_matrix(a: str, b: str) -> None:
    assert REQS[a].intersection(REQS[b]) == expected_intersection(a, b)


@pytest.mark.parametrize("a", NAMES)
def test_intersection_keeps_the_larger_min_values(a: str) -> None:
    for b in NAMES:
        plain = expected_intersection(a, b)
        one_sided = with_min_values(a).intersection(REQS[b])
        assert one_sided == replace(plain, min_values=MIN_VALUES[a]), b
        both = with_min_values(a).intersection(with_min_values(b))
        assert both == replace(plain, min_values=max(MIN_VALUES[a], MIN_VALUES[b])), b


@pytest.mark.parametrize("a", NAMES)
def test_has_intersection_is_true_exactly_when_the_intersection_is_non_empty(a: str) -> None:
    for b in NAMES:
        non_empty = len(REQS[a].intersection(REQS[b])) > 0
        assert REQS[a].has_intersection(REQS[b]) == non_empty, b


def test_in_intersected_with_notin_removes_the_excluded_values() -> None:
    assert req("In", "A", "B", "C").intersection(req("NotIn", "B")) == req("In", "A", "C")
    assert req("NotIn", "B").intersection(req("In", "A", "B", "C")) == req("In", "A", "C")


def test_notin_intersected_with_notin_excludes_the_union() -> None:
    assert req("NotIn", "A").intersection(req("NotIn", "1", "2")) == req("NotIn", "A", "1", "2")


def test_bounds_drop_non_integer_values_from_the_intersection() -> None:
    assert req("In", "A", "5", "x7", "1").intersection(req("Gt", "1")) == req("In", "5")
    assert req("NotIn", "A", "5").intersection(req("Gt", "1")) == raw(True, "5", gte=2)


def test_concrete_intersection_forgets_the_bounds() -> None:
    result = req("In", "1", "9").intersection(req("Gt", "1"))
    assert (result.gte, result.lte) == (None, None)
    assert result == req("In", "9")


def test_crossed_bounds_intersect_to_does_not_exist_keeping_min_values() -> None:
    result = req("Gt", "9", min_values=2).intersection(req("Lt", "1"))
    assert result == req("DoesNotExist", min_values=2)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (req("Gt", "4"), req("Gte", "5"), raw(True, gte=5)),
        (req("Gt", "5"), req("Gte", "5"), raw(True, gte=6)),
        (req("Gt", "3"), req("Gte", "6"), raw(True, gte=6)),
        (req("Lt", "5"), req("Lte", "5"), raw(True, lte=4)),
        (req("Lt", "9"), req("Lte", "5"), raw(True, lte=5)),
        (req("Gte", "2"), req("Lte", "8"), raw(True, gte=2, lte=8)),
    ],
)
def test_intersected_bounds_keep_the_tighter_one(
    a: Requirement, b: Requirement, expected: Requirement
) -> None:
    assert a.intersection(b) == expected
    assert b.intersection(a) == expected


def test_gte_and_lte_are_inclusive() -> None:
    both = req("Gte", "2").intersection(req("Lte", "8"))
    assert [v for v in ("1", "2", "5", "8", "9") if both.has(v)] == ["2", "5", "8"]
    assert req("Gte", "0").has("0")
    assert not req("Gte", "0").has("-1")
    assert req("Lte", "0").has("0")
    assert not req("Lte", "0").has("1")


def test_has_intersection_of_two_complements_ignores_excluded_values() -> None:
    """Karpenter only checks the bounds when both sides are complements: `{2} minus {2}` counts."""
    only_two = req("Gt", "1").intersection(req("Lt", "3"))
    assert only_two.has_intersection(req("NotIn", "2"))
    assert not any(only_two.has(v) and req("NotIn", "2").has(v) for v in map(str, range(-5, 10)))


# ---- has, operator, len, any, str -----------------------------------------------------------

HAS_VALUES = ["A", "B", "1", "2", "9"]
HAS_MATRIX = {  # "o": has the value in HAS_VALUES order
    "exists": "ooooo",
    "dne": ".....",
    "inA": "o....",
    "inB": ".o...",
    "inAB": "oo...",
    "notInA": ".oooo",
    "in1": "..o..",
    "in9": "....o",
    "in19": "..o.o",
    "notIn12": "oo..o",
    "gt1": "...oo",
    "gt9": ".....",
    "lt1": ".....",
    "lt9": "..oo.",
}


@pytest.mark.parametrize("name", NAMES)
def test_has_matches_karpenters_table(name: str) -> None:
    row = "".join("o" if REQS[name].has(v) else "." for v in HAS_VALUES)
    assert row == HAS_MATRIX[name]


OPERATOR_AND_LEN = {
    "exists": ("Exists", MAX_INT64),
    "dne": ("DoesNotExist", 0),
    "inA": ("In", 1),
    "inB": ("In", 1),
    "inAB": ("In", 2),
    "notInA": ("NotIn", MAX_INT64 - 1),
    "in1": ("In", 1),
    "in9": ("In", 1),
    "in19": ("In", 2),
    "notIn12": ("NotIn", MAX_INT64 - 2),
    "gt1": ("Exists", MAX_INT64),
    "gt9": ("Exists", MAX_INT64),
    "lt1": ("Exists", MAX_INT64),
    "lt9": ("Exists", MAX_INT64),
}


@pytest.mark.parametrize("name", NAMES)
def test_operator_reports_bounded_requirements_as_exists(name: str) -> None:
    assert REQS[name].operator == OPERATOR_AND_LEN[name][0]


@pytest.mark.parametrize("name", NAMES)
def test_len_counts_complements_down_from_max_int64(name: str) -> None:
    assert len(REQS[name]) == OPERATOR_AND_LEN[name][1]


def test_any_returns_an_allowed_value_for_karpenters_fixtures() -> None:
    assert REQS["exists"].any() != ""
    assert REQS["dne"].any() == ""
    assert REQS["inA"].any() == "A"
    assert REQS["inB"].any() == "B"
    assert REQS["inAB"].any() in {"A", "B"}
    assert REQS["notInA"].any() not in {"", "A"}
    assert REQS["in1"].any() == "1"
    assert REQS["in9"].any() == "9"
    assert REQS["in19"].any() in {"1", "9"}
    assert REQS["notIn12"].any() not in {"", "1", "2"}
    assert int(REQS["gt1"].any()) >= 2
    assert 10 <= int(REQS["gt9"].any()) < MAX_INT64
    assert REQS["lt1"].any() == "0"
    assert 0 <= int(REQS["lt9"].any()) < 9
    assert int(req("Gte", "5").any()) >= 5
    assert int(req("Lte", "10").any()) <= 10


@pytest.mark.parametrize(
    "requirement",
    [
        pytest.param(req("Lt", "9"), id="lt9"),
        pytest.param(req("Lte", "10"), id="lte10"),
        pytest.param(req("Gte", "5").intersection(req("Lte", "7")), id="gte5-lte7"),
        pytest.param(req("Gte", "-10").intersection(req("Lte", "-5")), id="gte-10-lte-5"),
        pytest.param(req("Lt", "0"), id="lt0"),
        pytest.param(req("Lte", "-5"), id="lte-5"),
        pytest.param(req("Lt", "2").intersection(req("NotIn", "0", "1")), id="lt2-notin01"),
    ],
)
def test_any_never_returns_a_value_above_the_upper_bound(requirement: Requirement) -> None:
    # Where Karpenter's range [max(gte, 0), lte] is empty it panics (or, for lt2-notin01,
    # returns an excluded value); gpucap returns "" (no value) instead.
    assert requirement.lte is not None
    value = requirement.any()
    assert value == "" or (int(value) <= requirement.lte and requirement.has(value))


@pytest.mark.parametrize(
    ("requirement", "text"),
    [
        (REQS["exists"], "key Exists"),
        (REQS["dne"], "key DoesNotExist"),
        (REQS["inA"], "key In [A]"),
        (REQS["inAB"], "key In [A B]"),
        (REQS["notInA"], "key NotIn [A]"),
        (REQS["in19"], "key In [1 9]"),
        (REQS["notIn12"], "key NotIn [1 2]"),
        (REQS["gt1"], "key Exists >=2"),
        (REQS["gt9"], "key Exists >=10"),
        (REQS["lt1"], "key Exists <=0"),
        (REQS["lt9"], "key Exists <=8"),
        (REQS["gt1"].intersection(REQS["lt9"]), "key Exists >=2 <=8"),
        (REQS["gt9"].intersection(REQS["lt1"]), "key DoesNotExist"),
        (req("In", *"abcdefgh"), "key In [a b c d e and 3 others]"),
        (req("Exists", min_values=3), "key Exists minValues 3"),
    ],
)
def test_str_renders_like_karpenter(requirement: Requirement, text: str) -> None:
    assert str(requirement) == text


# ---- integer parsing of bounded values (Go's strconv.Atoi) ----------------------------------


@pytest.mark.parametrize("value", ["+7", "07", "-0"])
def test_bounds_accept_signed_and_zero_padded_decimal_values(value: str) -> None:
    assert req("Gte", "0").intersection(req("Lte", "7")).has(value)


@pytest.mark.parametrize("value", ["", "+", "7.0", " 7", "0x7", "1_0", "seven"])
def test_bounds_reject_values_atoi_rejects(value: str) -> None:
    assert not req("Gt", "-100").has(value)


@pytest.mark.parametrize(
    ("requirement", "value"),
    [
        pytest.param(req("Gt", "1"), "\u0663", id="arabic-indic-3"),
        pytest.param(req("Gt", "1"), "\uff13", id="fullwidth-3"),
        pytest.param(req("Gt", "1"), "\u00b2", id="superscript-2"),
        pytest.param(req("Gt", "1"), str(MAX_INT64 + 1), id="above-int64"),
        pytest.param(req("Lt", "1"), str(-MAX_INT64 - 2), id="below-int64"),
        pytest.param(req("Gt", "1"), str(MAX_INT64), id="max-int64"),
    ],
)
def test_bounds_admit_only_values_atoi_parses(requirement: Requirement, value: str) -> None:
    in_value = req("In", value)
    parses = value == str(MAX_INT64)
    assert requirement.has(value) is parses
    assert requirement.has_intersection(in_value) is parses
    assert requirement.intersection(in_value) == (in_value if parses else req("DoesNotExist"))


# ---- Requirements ---------------------------------------------------------------------------


def test_add_intersects_requirements_for_the_same_key() -> None:
    reqs = Requirements.of(req("In", "A", "B", key="a"), req("Exists", key="b"))
    added = reqs.add(req("In", "B", "C", key="a"), req("Gt", "3", key="b"), req("In", "x", key="c"))
    assert dict(added) == {
        "a": req("In", "B", key="a"),
        "b": req("Gt", "3", key="b"),
        "c": req("In", "x", key="c"),
    }
    assert dict(reqs) == {"a": req("In", "A", "B", key="a"), "b": req("Exists", key="b")}


def test_add_of_disjoint_values_leaves_does_not_exist() -> None:
    reqs = Requirements.of(req("In", "A", key="a"), req("In", "B", key="a"))
    assert reqs["a"] == req("DoesNotExist", key="a")


def test_get_or_exists_of_a_missing_key_is_exists() -> None:
    reqs = Requirements.of(req("In", "A", key="a"))
    assert reqs.get_or_exists("a") == req("In", "A", key="a")
    missing = reqs.get_or_exists("b")
    assert missing == req("Exists", key="b")
    assert missing.operator == "Exists"
    assert "b" not in reqs


def test_intersects_ignores_keys_only_one_side_defines() -> None:
    left = Requirements.of(req("In", "A", key="a"))
    right = Requirements.of(req("In", "B", key="b"), req("DoesNotExist", key="c"))
    assert left.intersects(right) is None
    assert right.intersects(left) is None


def test_intersects_reports_a_shared_key_whose_values_cannot_overlap() -> None:
    err = Requirements.of(req("In", "A")).intersects(Requirements.of(req("In", "B")))
    assert isinstance(err, IncompatibleError)
    assert str(err) == "key key, key In [B] not in key In [A]"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (req("NotIn", "A"), req("NotIn", "A")),
        (req("DoesNotExist"), req("NotIn", "A")),
        (req("NotIn", "A"), req("DoesNotExist")),
        (req("DoesNotExist"), req("DoesNotExist")),
        (
            # NotIn with crossed bounds: no value overlaps, but both sides only exclude.
            req("NotIn", "12").intersection(req("Gt", "9")),
            req("NotIn", "0").intersection(req("Lt", "1")),
        ),
    ],
)
def test_notin_and_does_not_exist_on_both_sides_never_conflict(
    left: Requirement, right: Requirement
) -> None:
    assert Requirements.of(left).intersects(Requirements.of(right)) is None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (req("Exists"), req("DoesNotExist")),
        (req("In", "A"), req("DoesNotExist")),
        (req("In", "A"), req("NotIn", "A")),
        (req("Gt", "9"), req("Lt", "1")),
    ],
)
def test_a_required_value_set_conflicts_with_one_it_cannot_overlap(
    left: Requirement, right: Requirement
) -> None:
    assert Requirements.of(left).intersects(Requirements.of(right)) is not None
    assert Requirements.of(right).intersects(Requirements.of(left)) is not None


def test_intersects_reports_every_conflicting_key() -> None:
    left = Requirements.of(req("In", "1", key="a"), req("In", "1", key="b"))
    right = Requirements.of(req("In", "2", key="a"), req("In", "2", key="b"))
    message = str(left.intersects(right))
    assert "key a," in message
    assert "key b," in message


# Karpenter's compatibility matrices, keyed on the zone label: `row.compatible(column)`.
COMPAT_NAMES = ["unconstrained", *NAMES]
COMPATIBLE_ALLOWING_WELL_KNOWN = {
    "unconstrained": "ooooooooooooooo",
    "exists": "ooxoooooooooooo",
    "dne": "oxoxxxoxxxoxxxx",
    "inA": "ooxoxoxxxxoxxxx",
    "inB": "ooxxoooxxxoxxxx",
    "inAB": "ooxooooxxxoxxxx",
    "notInA": "oooxooooooooooo",
    "in1": "ooxxxxooxoxxxxo",
    "in9": "ooxxxxoxooooxxx",
    "in19": "ooxxxxooooooxxo",
    "notIn12": "oooooooxooooooo",
    "gt1": "ooxxxxoxoooooxo",
    "gt9": "ooxxxxoxxxoooxx",
    "lt1": "ooxxxxoxxxoxxoo",
    "lt9": "ooxxxxooxoooxoo",
}
# Without allowed-undefined keys only the unconstrained row changes: zone becomes a custom label
# that must be defined unless the other side excludes it (NotIn/DoesNotExist).
COMPATIBLE_STRICTLY = COMPATIBLE_ALLOWING_WELL_KNOWN | {"unconstrained": "oxoxxxoxxxoxxxx"}


def zone_requirements(name: str) -> Requirements:
    if name == "unconstrained":
        return Requirements()
    return Requirements.of(replace(REQS[name], key=ZONE))


@pytest.mark.parametrize("row", COMPAT_NAMES)
def test_compatible_allowing_well_known_labels_matches_karpenters_matrix(row: str) -> None:
    got = "".join(
        "o"
        if zone_requirements(row).is_compatible(zone_requirements(col), CORE_WELL_KNOWN_LABELS)
        else "x"
        for col in COMPAT_NAMES
    )
    assert got == COMPATIBLE_ALLOWING_WELL_KNOWN[row]


@pytest.mark.parametrize("row", COMPAT_NAMES)
def test_compatible_without_allowed_undefined_matches_karpenters_matrix(row: str) -> None:
    got = "".join(
        "o" if zone_requirements(row).is_compatible(zone_requirements(col)) else "x"
        for col in COMPAT_NAMES
    )
    assert got == COMPATIBLE_STRICTLY[row]


def test_compatible_requires_custom_keys_the_other_side_requires_to_be_defined() -> None:
    err = Requirements().compatible(Requirements.of(req("Exists", key="deployment")))
    assert isinstance(err, IncompatibleError)
    assert str(err) == 'label "deployment" does not have known values'


def test_compatible_allows_undefined_keys_in_the_allowed_set() -> None:
    other = Requirements.of(req("In", "a", key="team"))
    assert Requirements().compatible(other, frozenset({"team"})) is None


@pytest.mark.parametrize("operator", ["NotIn", "DoesNotExist"])
def test_compatible_accepts_undefined_keys_the_other_side_excludes(operator: str) -> None:
    values = ("a",) if operator == "NotIn" else ()
    assert Requirements().compatible(Requirements.of(req(operator, *values, key="team"))) is None


def test_compatible_is_not_symmetric_in_defined_keys() -> None:
    defined = Requirements.of(req("In", "a", key="team"))
    assert defined.compatible(Requirements()) is None
    assert Requirements().compatible(defined) is not None


def test_compatible_checks_undefined_keys_before_value_overlap() -> None:
    here = Requirements.of(req("In", "A", key="a"))
    there = Requirements.of(req("In", "B", key="a"), req("Exists", key="b"))
    assert str(here.compatible(there)) == 'label "b" does not have known values'


@pytest.mark.parametrize(
    ("bad", "suggestion"),
    [
        ("zone", "topology.kubernetes.io/zone"),
        ("region", "topology.kubernetes.io/region"),
        ("nodepool", "karpenter.sh/nodepool"),
        ("instance-type", "node.kubernetes.io/instance-type"),
        ("arch", "kubernetes.io/arch"),
        ("capacity-type", "karpenter.sh/capacity-type"),
        ("topology.kubernetesio/zone", "topology.kubernetes.io/zone"),
        ("node.io/zone", "topology.kubernetes.io/zone"),
        ("topology.kubernetes.io/regio", "topology.kubernetes.io/region"),
        ("node.kubernetes.io/region", "topology.kubernetes.io/region"),
        ("karpenter/nodepool", "karpenter.sh/nodepool"),
    ],
)
def test_compatible_hints_at_the_well_known_label_a_typo_meant(bad: str, suggestion: str) -> None:
    err = Requirements().compatible(Requirements.of(req("Exists", key=bad)), CORE_WELL_KNOWN_LABELS)
    assert str(err) == f'label "{bad}" does not have known values (typo of "{suggestion}"?)'


def test_compatible_hints_at_a_defined_key_a_typo_meant() -> None:
    here = Requirements.of(req("Exists", key="example.com/team"))
    err = here.compatible(Requirements.of(req("In", "a", key="team")))
    assert str(err) == 'label "team" does not have known values (typo of "example.com/team"?)'


def test_labels_are_the_single_valued_in_requirements() -> None:
    reqs = Requirements.of(
        req("In", "a", key="single"),
        req("In", "a", "b", key="multi"),
        req("In", "a", "b", key="narrowed"),
        req("In", "b", key="narrowed"),
        req("NotIn", "a", key="notin"),
        req("Exists", key="exists"),
        req("DoesNotExist", key="dne"),
        req("Gt", "3", key="gt"),
    )
    assert reqs.labels() == {"narrowed": "b", "single": "a"}


def test_str_joins_requirements_sorted() -> None:
    reqs = Requirements.of(*(replace(r, key=name) for name, r in REQS.items()))
    assert str(reqs) == (
        "dne DoesNotExist, exists Exists, gt1 Exists >=2, gt9 Exists >=10, in1 In [1], "
        "in19 In [1 9], in9 In [9], inA In [A], inAB In [A B], inB In [B], lt1 Exists <=0, "
        "lt9 Exists <=8, notIn12 NotIn [1 2], notInA NotIn [A]"
    )


def test_str_leaves_out_the_restricted_hostname_label() -> None:
    reqs = Requirements.of(req("In", "n1", key="kubernetes.io/hostname"), req("Exists", key="z"))
    assert str(reqs) == "z Exists"


# ---- laws -----------------------------------------------------------------------------------

VALUES = ["A", "B", "a1", "1", "2", "5", "9", "10", "-3", "05", "+7"]
# Values outside every generated set: integers past every generated bound and fresh strings.
UNIVERSE = sorted({*VALUES, *(str(i) for i in range(-10, 30)), "fresh", "zz"})

_values = st.lists(st.sampled_from(VALUES), min_size=1, max_size=4)
_bound = st.integers(min_value=-3, max_value=12).map(str)
_min_values = st.none() | st.integers(min_value=1, max_value=3)


@st.composite
def single(draw: st.DrawFn) -> Requirement:
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    if operator in ("In", "NotIn"):
        values = draw(_values)
    elif operator in ("Gt", "Lt"):
        values = [draw(_bound)]
    else:
        values = []
    return req(operator, *values, min_values=draw(_min_values))


composed = st.lists(single(), min_size=1, max_size=3).map(
    lambda rs: reduce(Requirement.intersection, rs)
)
FAST = settings(max_examples=100, deadline=None)


@FAST
@given(single(), single())
def test_intersection_has_exactly_the_values_both_sides_have(
    a: Requirement, b: Requirement
) -> None:
    ab, ba = a.intersection(b), b.intersection(a)
    for v in UNIVERSE:
        assert ab.has(v) == ba.has(v) == (a.has(v) and b.has(v)), v


@FAST
@given(composed, composed)
def test_intersection_is_commutative(a: Requirement, b: Requirement) -> None:
    assert a.intersection(b) == b.intersection(a)
    ab = a.intersection(b)
    assert all(ab.has(v) == (a.has(v) and b.has(v)) for v in UNIVERSE)
    assert ab.min_values == max(
        (m for m in (a.min_values, b.min_values) if m is not None), default=None
    )


@FAST
@given(composed, composed, composed)
def test_intersection_is_associative_in_the_values_it_has(
    a: Requirement, b: Requirement, c: Requirement
) -> None:
    left = a.intersection(b).intersection(c)
    right = a.intersection(b.intersection(c))
    for v in UNIVERSE:
        assert left.has(v) == right.has(v) == (a.has(v) and b.has(v) and c.has(v)), v


@FAST
@given(single(), single())
def test_has_intersection_is_true_iff_some_value_is_had_by_both(
    a: Requirement, b: Requirement
) -> None:
    assert a.has_intersection(b) == any(a.has(v) and b.has(v) for v in UNIVERSE)


@FAST
@given(composed, composed)
def test_has_intersection_agrees_with_the_length_of_the_intersection(
    a: Requirement, b: Requirement
) -> None:
    assert a.has_intersection(b) == b.has_intersection(a) == (len(a.intersection(b)) > 0)


@FAST
@given(composed)
def test_any_returns_a_value_the_requirement_has(r: Requirement) -> None:
    assume(r.operator != "DoesNotExist")
    if r.complement and r.lte is not None:
        # Karpenter draws uniformly from [max(gte, 0), lte]: the law holds when that range is
        # non-empty and every integer in it is allowed (see the xfail cases above otherwise).
        low = r.gte if r.gte is not None else 0
        assume(low <= r.lte and all(r.has(str(i)) for i in range(low, r.lte + 1)))
    assert r.has(r.any())
