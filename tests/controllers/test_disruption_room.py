"""Consolidation's pre-check (`controllers/disruption/room.py`): the candidate sets it rules
out are exactly ones whose scheduling simulation would end in no command."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpucap.apis.labels import ZONE
from gpucap.controllers.disruption.consolidation import (
    MultiNodeConsolidation,
    SingleNodeConsolidation,
)
from gpucap.controllers.disruption.room import offering_neutral
from tests.builders import load
from tests.controllers.disruption_builders import env, gpu_pod, pool
from tests.controllers.room_fleets import (
    GPUS,
    _candidates,
    _fleet,
    _room,
    fleets,
)
from tests.scheduling.builders import ZONES


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleets,
    st.sampled_from([("on-demand",), ("spot", "on-demand"), ("spot",)]),
    st.frozensets(st.sampled_from(sorted(GPUS))),
    st.booleans(),
    st.booleans(),
    st.sampled_from([ZONES, ("us-east-1a",)]),
)
# A zoned pod on a spot node where no type has spot left in its zone: the replacement is
# pinned on-demand although every type still has spot elsewhere.
@example(
    [("g5.12xlarge", "spot", 1), ("g5.12xlarge", "on-demand", 4)],
    ("spot", "on-demand"),
    frozenset(GPUS),
    False,
    True,
    ("us-east-1a",),
)
def test_a_candidate_set_the_pre_check_rules_out_would_get_no_command_from_its_simulation(  # noqa: PLR0917
    fleet: list[tuple[str, str, int]],
    capacity_types: tuple[str, ...],
    spot_gone: frozenset[str],
    spot_to_spot: bool,
    zoned: bool,
    gone_in: tuple[str, ...],
) -> None:
    e = _fleet(
        fleet,
        capacity_types=capacity_types,
        spot_gone=spot_gone,
        spot_to_spot=spot_to_spot,
        zoned=zoned,
        gone_in=gone_in,
    )
    single = e.disruption.methods[4]
    multi = e.disruption.methods[3]
    assert isinstance(single, SingleNodeConsolidation)
    assert isinstance(multi, MultiNodeConsolidation)
    candidates = _candidates(e, single)
    room = _room(e, single)
    batches = [[c] for c in candidates] + [candidates[:n] for n in range(2, len(candidates) + 1)]
    for batch in batches:
        if room.may_move(batch):
            continue
        # Outside a pass, compute_consolidation simulates without the pre-check.
        assert single.compute_consolidation(batch) is None, [c.name for c in batch]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleets,
    st.sampled_from([("on-demand",), ("spot", "on-demand"), ("spot",)]),
    st.frozensets(st.sampled_from(sorted(GPUS))),
    st.booleans(),
    st.booleans(),
    st.sampled_from([ZONES, ("us-east-1a",)]),
)
def test_the_pre_check_of_one_candidate_answers_as_the_pre_check_of_a_set_of_one(  # noqa: PLR0917
    fleet: list[tuple[str, str, int]],
    capacity_types: tuple[str, ...],
    spot_gone: frozenset[str],
    spot_to_spot: bool,
    zoned: bool,
    gone_in: tuple[str, ...],
) -> None:
    e = _fleet(
        fleet,
        capacity_types=capacity_types,
        spot_gone=spot_gone,
        spot_to_spot=spot_to_spot,
        zoned=zoned,
        gone_in=gone_in,
    )
    single = e.disruption.methods[4]
    assert isinstance(single, SingleNodeConsolidation)
    room = _room(e, single)
    for c in _candidates(e, single):
        assert room.may_move([c]) == room._may_move_many([c]), c.name


def test_a_candidates_own_room_does_not_count_for_whole_pods_of_its_kind() -> None:
    # Pods of 15 CPUs and a GPU. n0 runs two: its own room holds one more, which must not
    # count. n1 holds one; the cheaper types (up to 8 CPUs) none. The sums allow the two
    # (CPUs 30 of n1's ~30 and the 8 of a g5.2xlarge, GPUs 1 + 1), whole pods only one.
    big = {"cpu": "15"}
    e = env(
        pool(),
        *(gpu_pod(f"k{i}", **big) for i in range(3)),
        gpu_pod("a"),
        gpu_pod("b"),
    )
    e.node("n0", "g5.12xlarge", gpus=4, pods=("default/k0", "default/k1"))
    e.node("n1", "g5.12xlarge", gpus=4, pods=("default/k2", "default/a", "default/b"))
    single = e.disruption.methods[4]
    assert isinstance(single, SingleNodeConsolidation)
    n0 = next(c for c in _candidates(e, single) if c.name == "n0")
    room = _room(e, single)
    assert not room.may_move([n0])
    assert not room._may_move_many([n0])
    assert single.compute_consolidation([n0]) is None


def test_a_spot_node_whose_pod_needs_a_new_node_is_ruled_out_while_every_type_offers_spot() -> None:
    # n0: a spot g5.12xlarge with one pod; n1 is full. Moving the pod needs a new node, which
    # may launch as spot: with spot-to-spot off that is no command, so no simulation either.
    e = _fleet(
        [("g5.12xlarge", "spot", 1), ("g5.12xlarge", "on-demand", 4)],
        capacity_types=("spot", "on-demand"),
        spot_gone=frozenset(),
        spot_to_spot=False,
        zoned=False,
    )
    single = e.disruption.methods[4]
    assert isinstance(single, SingleNodeConsolidation)
    n0 = next(c for c in _candidates(e, single) if c.name == "n0")
    assert not _room(e, single).may_move([n0])
    assert single.compute_consolidation([n0]) is None


def test_a_spot_node_is_simulated_when_a_cheaper_type_has_no_spot_left() -> None:
    # The same fleet, g5.xlarge spot gone: the replacement could be an on-demand g5.xlarge
    # ($1.006 < the spot g5.12xlarge's $2.27), so the pre-check lets the simulation decide.
    e = _fleet(
        [("g5.12xlarge", "spot", 1), ("g5.12xlarge", "on-demand", 4)],
        capacity_types=("spot", "on-demand"),
        spot_gone=frozenset({"g5.xlarge"}),
        spot_to_spot=False,
        zoned=False,
    )
    single = e.disruption.methods[4]
    assert isinstance(single, SingleNodeConsolidation)
    n0 = next(c for c in _candidates(e, single) if c.name == "n0")
    assert _room(e, single).may_move([n0])


def test_free_gpus_on_another_node_let_a_spot_node_be_simulated() -> None:
    # n1 has a free GPU: n0's pod could move there (a delete), whatever the prices.
    e = _fleet(
        [("g5.12xlarge", "spot", 1), ("g5.12xlarge", "on-demand", 3)],
        capacity_types=("spot", "on-demand"),
        spot_gone=frozenset(),
        spot_to_spot=False,
        zoned=False,
    )
    single = e.disruption.methods[4]
    assert isinstance(single, SingleNodeConsolidation)
    n0 = next(c for c in _candidates(e, single) if c.name == "n0")
    assert _room(e, single).may_move([n0])


def test_a_pod_naming_a_zone_or_capacity_type_is_not_offering_neutral() -> None:
    pods = load(
        gpu_pod("plain"),
        gpu_pod("zoned", nodeSelector={ZONE: "us-east-1a"}),
        gpu_pod("spot", nodeSelector={"karpenter.sh/capacity-type": "spot"}),
        gpu_pod("other", nodeSelector={"karpenter.k8s.aws/instance-family": "g5"}),
    ).objects.pods
    assert {p.metadata.name: offering_neutral(p) for p in pods} == {
        "plain": True,
        "zoned": False,
        "spot": False,
        "other": True,
    }
