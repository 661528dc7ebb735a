"""The launch choice on `LaunchTable` arrays is the reference one-type-at-a-time choice.

`launch.launch_options` runs Karpenter's launch filters on numpy tables; with `reference=True`
it runs them as written (`reference_filter_instance_types`, `choose_capacity_type`,
`fleet_overrides`). On random instance types (shared and duplicate names, equal prices,
unavailable and reserved offerings, exotic and metal types, custom and bounded requirements,
negative allocatable) and random claims (capacity types, zones, named types, Gt/Lt bounds,
minValues, requests), given as a tuple, as a list and as a list drawn from a larger tuple
(`among`), both give the same types in the same order with the same offerings, the same error,
the same capacity type, the same CreateFleet overrides and the same launch; also when a
NodePool's claims follow one another on the same tables, sharing what steps 2-7 answered. The
`LaunchTrace` of either path is the same, and its steps (`filters.py`) account for every type.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instance import launch
from gpucap.cloudprovider.aws.instance.launch import (
    FleetOverride,
    InsufficientCapacityError,
    Launch,
    LaunchOptions,
    LaunchTrace,
    MinValuesPolicy,
    choose_launch,
    fleet_pick,
    launch_filter,
    launch_options,
)
from gpucap.cloudprovider.aws.instance.launchtable import LaunchTable
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirement, Requirements

CT = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
SIZE = "karpenter.k8s.aws/instance-size"
GENERATION = "karpenter.k8s.aws/instance-generation"
TEAM = "example.com/team"  # not well-known
ZONES = ("z-a", "z-b", "z-c")
CAPACITY_TYPES = ("on-demand", "spot", "reserved")
NAMES = tuple(f"t{i}.large" for i in range(8))
PRICES = (0.05, 0.1, 0.1, 0.2, 0.3, 0.5)
SIZES = ("large", "xlarge", "metal", "metal-24xl")
LAWS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- strategies ---------------------------------------------------------------------------------


@st.composite
def requirement(draw: st.DrawFn, key: str, values: tuple[str, ...], bounds: bool = False) -> Any:
    ops = ["In", "NotIn", "Exists", "DoesNotExist"] + (["Gt", "Lt"] if bounds else [])
    op = draw(st.sampled_from(ops))
    if op in ("Gt", "Lt"):
        return Requirement.new(key, op, [str(draw(st.integers(0, 8)))])
    if op in ("Exists", "DoesNotExist"):
        return Requirement.new(key, op)
    return Requirement.new(key, op, draw(st.lists(st.sampled_from(values), min_size=1, max_size=3)))


@st.composite
def instance_type(draw: st.DrawFn) -> InstanceType:
    name = draw(st.sampled_from(NAMES))
    reqs = [
        Requirement.new(INSTANCE_TYPE, "In", [name])
        if draw(st.integers(0, 9))
        else draw(requirement(INSTANCE_TYPE, NAMES)),
        Requirement.new(ARCH, "In", [draw(st.sampled_from(("amd64", "arm64")))]),
    ]
    if draw(st.booleans()):
        reqs.append(
            Requirement.new(SIZE, "In", [draw(st.sampled_from(SIZES))])
            if draw(st.integers(0, 4))
            else draw(requirement(SIZE, SIZES))
        )
    if draw(st.booleans()):
        reqs.append(Requirement.new(GENERATION, "In", [str(draw(st.integers(1, 8)))]))
    if draw(st.integers(0, 3)) == 0:
        reqs.append(draw(requirement(TEAM, ("ml", "web"))))
    offerings = tuple(
        Offering(
            draw(st.sampled_from(ZONES)),
            draw(st.sampled_from(CAPACITY_TYPES)),
            draw(st.sampled_from(PRICES)),
            draw(st.integers(0, 4)) > 0,
        )
        for _ in range(draw(st.integers(0, 5)))
    )
    cpu = draw(st.sampled_from((1000, 2000, 4000, -1)))
    capacity = {"cpu": max(cpu, 0), "memory": 8 * 2**30}
    if draw(st.integers(0, 3)) == 0:
        capacity["nvidia.com/gpu"] = draw(st.integers(0, 2))
    allocatable = {"cpu": cpu, "memory": 8 * 2**30 - 1}
    if "nvidia.com/gpu" in capacity:
        allocatable["nvidia.com/gpu"] = capacity["nvidia.com/gpu"]
    return InstanceType(name, Requirements.of(*reqs), capacity, allocatable, offerings)


@st.composite
def claim(draw: st.DrawFn) -> Requirements:
    reqs: list[Requirement] = []
    if draw(st.integers(0, 4)):
        reqs.append(
            Requirement.new(
                CT, "In", draw(st.lists(st.sampled_from(CAPACITY_TYPES), min_size=1, max_size=3))
            )
        )
    if draw(st.booleans()):
        reqs.append(draw(requirement(ZONE, ZONES)))
    if draw(st.booleans()):
        reqs.append(draw(requirement(INSTANCE_TYPE, NAMES)))
    if draw(st.integers(0, 3)) == 0:
        reqs.append(draw(requirement(ARCH, ("amd64", "arm64"))))
    if draw(st.integers(0, 3)) == 0:
        reqs.append(draw(requirement(GENERATION, ("2", "5", "7"), bounds=True)))
    if draw(st.integers(0, 3)) == 0:
        reqs.append(draw(requirement(TEAM, ("ml", "web"))))
    if draw(st.integers(0, 5)) == 0:
        key = draw(st.sampled_from((INSTANCE_TYPE, ARCH, SIZE)))
        reqs.append(Requirement.new(key, "Exists", min_values=draw(st.integers(1, 3))))
    reqs.append(Requirement.new("karpenter.sh/nodepool", "In", ["default"]))
    return Requirements.of(*reqs)


requests = st.fixed_dictionaries(
    {"cpu": st.sampled_from((0, 500, 1500, 3000))},
    optional={"nvidia.com/gpu": st.integers(0, 1), "example.com/dongle": st.integers(0, 1)},
)


# ---- comparison -----------------------------------------------------------------------------------


def _outcome(
    types: Any,
    reqs: Requirements,
    wanted: dict[str, int],
    policy: MinValuesPolicy,
    limit: int,
    *,
    reference: bool,
    among: tuple[InstanceType, ...] | None = None,
) -> tuple[Any, ...]:
    try:
        options = launch_options(
            types,
            reqs,
            wanted,
            min_values_policy=policy,
            max_instance_types=limit,
            among=among,
            reference=reference,
        )
    except InsufficientCapacityError as err:
        return ("error", str(err), err.unmet_min_values)
    return _described(options, types)


def _described(options: LaunchOptions, given: Any) -> tuple[Any, ...]:
    inputs = {id(it) for it in given}
    kept = [(it.name, id(it.requirements), it.offerings, id(it) in inputs) for it in options.types]
    capacity_type = options.capacity_type()
    # The cloud provider offers only the types with an AMI: every other one here.
    only = [i % 2 == 0 for i in range(len(options.types))]
    return (
        kept,
        capacity_type,
        {ct: options.overrides(ct) for ct in CAPACITY_TYPES},
        options.overrides(capacity_type, only=only),
    )


@LAWS
@given(
    types=st.lists(instance_type(), max_size=12),
    reqs=claim(),
    wanted=requests,
    policy=st.sampled_from(("Strict", "BestEffort")),
    limit=st.sampled_from((1, 2, 3, 60)),
    seed=st.integers(0, 2**16),
)
def test_the_tables_choose_what_the_reference_chooses(
    *,
    types: list[InstanceType],
    reqs: Requirements,
    wanted: dict[str, int],
    policy: MinValuesPolicy,
    limit: int,
    seed: int,
) -> None:
    # The same object twice in a list is a case of its own (a row given twice).
    if types and seed % 5 == 0:
        types.append(types[seed % len(types)])
    as_tuple = tuple(types)
    expected = _outcome(as_tuple, reqs, wanted, policy, limit, reference=True)
    assert _outcome(as_tuple, reqs, wanted, policy, limit, reference=False) == expected
    assert _outcome(list(types), reqs, wanted, policy, limit, reference=False) == expected
    # Drawn from a larger tuple, in another order (as `plan` passes a claim's options).
    shuffled = list(types)
    random.Random(seed).shuffle(shuffled)
    universe = (*shuffled, *types[:2])
    for among in (universe, tuple(types[1:])):
        assert _outcome(
            shuffled, reqs, wanted, policy, limit, reference=False, among=among
        ) == _outcome(shuffled, reqs, wanted, policy, limit, reference=True)


def _traced(trace: LaunchTrace) -> tuple[Any, ...]:
    if trace.error is not None:
        return ("error", str(trace.error), trace.error.unmet_min_values)
    return ([(it.name, it.offerings) for it in trace.types], trace.capacity_type)


@LAWS
@given(
    types=st.lists(instance_type(), max_size=12),
    reqs=claim(),
    wanted=requests,
    policy=st.sampled_from(("Strict", "BestEffort")),
    limit=st.sampled_from((1, 2, 3, 60)),
)
def test_the_launch_trace_on_tables_is_the_filters_run_one_step_at_a_time(
    *,
    types: list[InstanceType],
    reqs: Requirements,
    wanted: dict[str, int],
    policy: MinValuesPolicy,
    limit: int,
) -> None:
    given_types = tuple(types)
    fast = launch_filter(
        given_types, reqs, wanted, min_values_policy=policy, max_instance_types=limit
    )
    reference = launch_filter(
        given_types,
        reqs,
        wanted,
        min_values_policy=policy,
        max_instance_types=limit,
        reference=True,
    )
    assert _traced(fast) == _traced(reference)
    # Each step splits what the one before kept into kept and rejected (by name: a step that
    # prunes offerings keeps a narrowed copy), and the last step keeps what is offered.
    steps = fast.steps()
    before = [it.name for it in given_types]
    for step in steps:
        assert sorted(it.name for it in [*step.kept, *step.rejected]) == sorted(before)
        before = [it.name for it in step.kept]
    if fast.error is None:
        assert [(it.name, it.offerings) for it in steps[-1].kept] == _traced(fast)[0]
    else:
        assert not steps[-1].kept or steps[-1].name == "truncate"


def _reference_launch(types: Any, reqs: Requirements, wanted: dict[str, int]) -> Launch:
    options = launch_options(types, reqs, wanted, reference=True)
    capacity_type = options.capacity_type()
    overrides = options.overrides(capacity_type)
    best = fleet_pick(overrides).chosen
    assert best is not None
    return Launch(best.instance_type, best.zone, capacity_type, best.price, overrides)


CATALOG = load_catalog("us-east-1").instance_types()


@pytest.mark.parametrize(
    ("reqs", "wanted"),
    [
        (Requirements.of(Requirement.new(CT, "In", ["spot", "on-demand"])), {"cpu": 2000}),
        (
            Requirements.of(
                Requirement.new(CT, "In", ["on-demand"]),
                Requirement.new(ZONE, "NotIn", ["us-east-1a"]),
                Requirement.new(GENERATION, "Gt", ["5"]),
            ),
            {"cpu": 16000, "memory": 64 * 2**30},
        ),
        (
            Requirements.of(Requirement.new("karpenter.k8s.aws/instance-gpu-count", "Exists")),
            {"nvidia.com/gpu": 1},
        ),
        (Requirements.of(Requirement.new(INSTANCE_TYPE, "In", ["g5.xlarge", "m5.large"])), {}),
        (
            Requirements.of(
                Requirement.new("karpenter.k8s.aws/instance-family", "Exists", min_values=5)
            ),
            {},
        ),
    ],
)
def test_the_catalog_launch_is_the_reference_launch(
    reqs: Requirements, wanted: dict[str, int]
) -> None:
    expected = _reference_launch(CATALOG, reqs, wanted)
    assert choose_launch(CATALOG, reqs, wanted) == expected
    # A claim's options as `plan` passes them: a list of some of the node class's types.
    options = [it for it in CATALOG if it.name.startswith(("g", "m5", "c6i"))]
    expected = _reference_launch(options, reqs, wanted)
    assert choose_launch(options, reqs, wanted, among=CATALOG) == expected
    assert choose_launch(options, reqs, wanted) == expected


def test_a_launch_carries_the_offerings_own_prices() -> None:
    it = InstanceType(
        "a.large",
        Requirements.of(Requirement.new(INSTANCE_TYPE, "In", ["a.large"])),
        {"cpu": 2000},
        {"cpu": 2000},
        (Offering("z-a", "spot", 0.1 + 0.2, True), Offering("z-b", "spot", 0.3, True)),
    )
    launch = choose_launch((it,), Requirements())
    assert launch.overrides == (
        FleetOverride("a.large", "z-b", 0.3),
        FleetOverride("a.large", "z-a", 0.1 + 0.2),
    )
    assert type(launch.price) is float


NAN_TYPE = InstanceType(
    "n.large", Requirements(), {}, {}, (Offering("z", "spot", float("nan"), True),)
)


def test_a_nan_price_takes_the_reference_path() -> None:
    assert not LaunchTable((NAN_TYPE,)).exact
    assert [it.name for it in launch_options((NAN_TYPE,), Requirements()).types] == ["n.large"]


def test_a_list_drawn_from_a_tuple_uses_that_tuples_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `among` is a speed-up: the claim's types are looked up in the NodePool's table, so no
    # table is built for the claim's own list.
    options = list(CATALOG[:50])
    expected = [it.name for it in launch_options(options, Requirements(), among=CATALOG).types]

    def no_new_table(types: object) -> LaunchTable:
        raise AssertionError("built a table for the claim's list")

    monkeypatch.setattr(launch, "LaunchTable", no_new_table)
    offered = launch_options(options, Requirements(), among=CATALOG).types
    assert [it.name for it in offered] == expected
    with pytest.raises(AssertionError, match="built a table"):
        launch_options(options, Requirements())
    with pytest.raises(AssertionError, match="built a table"):
        launch_options([*options, NAN_TYPE], Requirements(), among=CATALOG)


def _marked(types: list[InstanceType], flips: list[int]) -> tuple[InstanceType, ...]:
    """The provider's answer after insufficient-capacity marks: the types with the offerings
    at `flips` (indices over all offerings) toggled, as copies sharing everything else."""
    out, k = [], 0
    for it in types:
        offerings = []
        for o in it.offerings:
            offerings.append(
                Offering(o.zone, o.capacity_type, o.price, not o.available) if k in flips else o
            )
            k += 1
        changed = tuple(offerings) != it.offerings or any(
            a is not b for a, b in zip(offerings, it.offerings, strict=True)
        )
        out.append(
            InstanceType(it.name, it.requirements, it.capacity, it.allocatable, tuple(offerings))
            if changed
            else it
        )
    return tuple(out)


@LAWS
@given(
    types=st.lists(instance_type(), min_size=1, max_size=10),
    flips=st.lists(st.integers(0, 30), max_size=6),
    reqs=claim(),
    wanted=requests,
)
def test_a_table_derived_for_new_availability_chooses_what_the_reference_chooses(
    types: list[InstanceType], flips: list[int], reqs: Requirements, wanted: dict[str, int]
) -> None:
    before = tuple(types)
    first = launch._tables(before)
    after = _marked(types, flips)
    derived = launch._tables(after)
    # Derived from the previous table: its requirement memos are shared, not rebuilt (a table
    # with a reserved offering is not exact: the reference path runs for it, nothing derived).
    assert not first.exact or derived is first or derived._answers is first._answers
    for given_types in (before, after):
        assert _outcome(given_types, reqs, wanted, "Strict", 60, reference=False) == _outcome(
            given_types, reqs, wanted, "Strict", 60, reference=True
        )


def test_a_table_is_not_derived_when_more_than_availability_changed() -> None:
    it = InstanceType("a.large", Requirements(), {}, {}, (Offering("z-a", "spot", 0.1, True),))
    repriced = InstanceType(
        "a.large",
        it.requirements,
        it.capacity,
        it.allocatable,
        (Offering("z-a", "spot", 0.2, True),),
    )
    marked = InstanceType(
        "a.large",
        it.requirements,
        it.capacity,
        it.allocatable,
        (Offering("z-a", "spot", 0.1, False),),
    )
    table = LaunchTable((it,))
    assert table.with_availability_of((repriced,)) is None
    assert table.with_availability_of((it, it)) is None
    derived = table.with_availability_of((marked,))
    assert derived is not None
    assert derived.available.tolist() == [False]
    assert table.available.tolist() == [True]


# ---- what claims share on one table ---------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    types=st.lists(instance_type(), min_size=1, max_size=10),
    claims=st.lists(
        st.tuples(claim(), requests, st.sampled_from(("Strict", "BestEffort"))),
        min_size=2,
        max_size=8,
    ),
    limit=st.sampled_from((1, 2, 60)),
    seed=st.integers(0, 2**16),
)
def test_claims_sharing_a_table_each_get_the_reference_launch(
    *,
    types: list[InstanceType],
    claims: list[tuple[Requirements, dict[str, int], MinValuesPolicy]],
    limit: int,
    seed: int,
) -> None:
    # One NodePool's claims, one after another on the same tables (the memos of what steps 2-7
    # answered for an earlier claim, and the rows of a list seen before, are in use): each
    # answer is still the reference's for that claim. Claims are repeated, and given the same
    # list again, as `plan` gives a NodePool's claims.
    universe = tuple(types)
    rng = random.Random(seed)
    drawn = [it for it in universe if rng.random() < 0.8] or [universe[0]]
    runs = claims + claims[: rng.randint(0, len(claims))]
    rng.shuffle(runs)
    for reqs, wanted, policy in runs:
        for given_types, among in ((universe, None), (drawn, universe), (list(drawn), universe)):
            expected = _outcome(given_types, reqs, wanted, policy, limit, reference=True)
            got = _outcome(given_types, reqs, wanted, policy, limit, reference=False, among=among)
            assert got == expected
            if expected[0] != "error" and policy == "Strict" and limit == 60:
                launched = choose_launch(given_types, reqs, wanted, among=among)
                assert launched == _reference_launch(given_types, reqs, wanted)


def test_claims_that_differ_only_in_what_step_one_reads_share_steps_two_to_seven() -> None:
    # Two claims of a NodePool with other requests and another custom label, whose step 1
    # keeps the same types: steps 2-7 are computed once; a claim in another zone is not
    # given the first claim's launch.
    types = tuple(CATALOG[:40])
    base = Requirements.of(
        Requirement.new(CT, "In", ["spot", "on-demand"]),
        Requirement.new(ZONE, "In", ["us-east-1a"]),
    )
    small = launch_options(types, base.add(Requirement.new(TEAM, "In", ["ml"])), {"cpu": 100})
    other = launch_options(types, base.add(Requirement.new(TEAM, "In", ["web"])), {"cpu": 200})
    assert [it.name for it in small.types] == [it.name for it in other.types]
    assert small._arrays is not None
    assert other._arrays is not None
    assert small._arrays.kept is other._arrays.kept
    first = choose_launch(types, base, {"cpu": 100})
    assert choose_launch(types, base, {"cpu": 300}) is first
    elsewhere = base.add(Requirement.new(ZONE, "In", ["us-east-1b"]))
    moved = base.without(ZONE).add(Requirement.new(ZONE, "In", ["us-east-1b"]))
    assert elsewhere.get(ZONE) != base.get(ZONE) or moved.get(ZONE) != base.get(ZONE)
    launched = choose_launch(types, moved, {"cpu": 100})
    assert launched.zone == "us-east-1b"
    assert launched == _reference_launch(types, moved, {"cpu": 100})


def test_rows_seen_before_are_not_kept_for_a_table_of_new_availability() -> None:
    types = list(CATALOG[:30])
    table = LaunchTable(tuple(types))
    rows = table.rows(types[5:])
    assert rows is not None
    assert rows.tolist() == list(range(5, 30))
    assert table.rows(types[5:]) is rows  # memoised by identity
    assert table.rows([*types[5:], NAN_TYPE]) is None
    # By identity: a copy equal in every field is not a row.
    twin = InstanceType(
        types[7].name,
        types[7].requirements,
        types[7].capacity,
        types[7].allocatable,
        types[7].offerings,
    )
    assert table.rows([*types[5:7], twin, *types[8:]]) is None
    assert table.rows(types[5:]) is rows
    marked = _marked(types, [0])
    derived = table.with_availability_of(marked)
    assert derived is not None
    assert derived.after_step_one == {}
    assert derived.after_step_one is not table.after_step_one
    # The unmarked types are the same objects: found again, in the derived table's rows.
    assert derived.rows(types[5:]) is not rows
    assert derived.rows([marked[0]]) is not None
    assert derived.rows([types[0]]) is None  # the marked type's old object is not a row


def test_a_claim_with_min_values_is_not_given_the_launch_of_one_without() -> None:
    # Same rows after step 1, same zone and capacity type: with minValues the exotic filter is
    # skipped (the metal type stays), and under Strict an unmet minValues fails even when the
    # same claim under BestEffort was answered first.
    def typed(name: str, size: str, price: float) -> InstanceType:
        reqs = Requirements.of(
            Requirement.new(INSTANCE_TYPE, "In", [name]), Requirement.new(SIZE, "In", [size])
        )
        return InstanceType(
            name, reqs, {"cpu": 4000}, {"cpu": 4000}, (Offering("z-a", "on-demand", price, True),)
        )

    types = (typed("m.metal", "metal", 0.1), typed("m.large", "large", 0.2))
    plain = Requirements.of(Requirement.new(CT, "In", ["on-demand"]))
    assert [it.name for it in launch_options(types, plain).types] == ["m.large"]
    two_sizes = plain.add(Requirement.new(SIZE, "Exists", min_values=2))
    assert [it.name for it in launch_options(types, two_sizes).types] == ["m.metal", "m.large"]
    assert choose_launch(types, two_sizes).instance_type == "m.metal"
    three_sizes = plain.add(Requirement.new(SIZE, "Exists", min_values=3))
    relaxed = launch_options(types, three_sizes, min_values_policy="BestEffort")
    assert [it.name for it in relaxed.types] == ["m.metal", "m.large"]
    with pytest.raises(InsufficientCapacityError) as raised:
        launch_options(types, three_sizes, min_values_policy="Strict")
    assert raised.value.unmet_min_values == {SIZE: 2}  # what the types offer
