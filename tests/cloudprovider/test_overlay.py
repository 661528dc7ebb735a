"""NodeOverlays as a decoration of the provider's answer (`cloudprovider/overlay.py`), as
Karpenter's `overlay.Decorate`: only `get_instance_types` changes; conflicts are decided across
every NodePool, whatever pool is asked about first, and again whenever the NodePools or the
overlays change (the NodeOverlay controller's watches); the wrapped provider's later answers (ICE
marks) show through."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.overlay import OverlaidCloudProvider, decorate
from gpucap.cloudprovider.types import CloudProvider, FakeCloudProvider, node_claim_for
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirements
from tests.builders import load, nodepool
from tests.scheduling.builders import GPU_TYPES
from tests.scheduling.overlays import overlay

POOLS: list[NodePool] = load(nodepool("gpu"), nodepool("other")).objects.nodepools
PRICE = {"price": "0.01"}


def by_name(types: object) -> dict[str, InstanceType]:
    assert isinstance(types, tuple | list)
    return {it.name: it for it in types}


def test_the_decorated_provider_is_a_cloud_provider() -> None:
    assert isinstance(decorate(FakeCloudProvider(GPU_TYPES), []), CloudProvider)


def test_without_overlays_the_providers_answer_is_passed_through_unchanged() -> None:
    fake = FakeCloudProvider(GPU_TYPES)
    assert decorate(fake, []).get_instance_types(POOLS[0]) is fake.instance_types


def test_an_overlay_changes_the_price_the_pools_see() -> None:
    cp = decorate(FakeCloudProvider(GPU_TYPES), [overlay("cheap", **PRICE)], POOLS)
    g5 = by_name(cp.get_instance_types(POOLS[0]))["g5.xlarge"]
    assert {o.price for o in g5.offerings} == {0.01}


def test_evaluation_rejects_conflicts_and_counts_the_changed_types_per_pool() -> None:
    ovs = [overlay("a", **PRICE), overlay("b", price="0.02")]
    cp = decorate(FakeCloudProvider(GPU_TYPES), ovs, POOLS)
    evaluation = cp.evaluate()
    assert [c.overlay for c in evaluation.conflicts] == ["a"]  # same weight: "b" first
    changed = dict(evaluation.changed)
    assert changed["gpu"] == changed["other"] > 0
    g5 = by_name(cp.get_instance_types(POOLS[0]))["g5.xlarge"]
    assert {o.price for o in g5.offerings} == {0.02}


def test_create_is_the_wrapped_providers_own() -> None:
    fake = FakeCloudProvider(GPU_TYPES)
    cp = decorate(fake, [overlay("cheap", **PRICE)])
    claim = node_claim_for("gpu-1", "gpu", Requirements(), {"nvidia.com/gpu": 1})
    launched = cp.create(claim)
    assert ("create", "gpu-1") in fake.calls
    assert cp.get(launched.status.provider_id or "") == launched


def test_the_wrapped_providers_new_answer_shows_through() -> None:
    fake = FakeCloudProvider(GPU_TYPES)
    cp = decorate(fake, [overlay("cheap", **PRICE)], POOLS)
    cp.evaluate()
    # The provider marks every offering unavailable (as an ICE mark would).
    fake.instance_types = [
        InstanceType(
            it.name,
            it.requirements,
            it.capacity,
            it.allocatable,
            tuple(Offering(o.zone, o.capacity_type, o.price, False) for o in it.offerings),
        )
        for it in GPU_TYPES
    ]
    g5 = by_name(cp.get_instance_types(POOLS[0]))["g5.xlarge"]
    assert not any(o.available for o in g5.offerings)
    assert {o.price for o in g5.offerings} == {0.01}


# Two same-weight overlays aimed only at pool "b" both set g5.xlarge's price: "z" comes first
# (equal weights: names descending), so "y", which also time-slices the GPU, is a conflict, but
# only pool "b" shows it.
ONLY_B = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["b"]}
G5_XLARGE = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}


def conflicting_overlays() -> list[NodeOverlay]:
    return [
        overlay("z", G5_XLARGE, ONLY_B, price="0.01"),
        overlay("y", G5_XLARGE, ONLY_B, price="0.02", capacity={"nvidia.com/gpu": "4"}),
    ]


def seen(types: Sequence[InstanceType]) -> list[tuple[object, ...]]:
    """What the scheduler reads of each type (InstanceType compares by identity)."""
    return [(it.name, it.capacity, it.allocatable, it.offerings) for it in types]


def gpus(types: object, name: str = "g5.xlarge") -> int:
    return by_name(types)[name].capacity["nvidia.com/gpu"]


A, B, C = load(nodepool("a"), nodepool("b"), nodepool("c")).objects.nodepools


def as_plan(overlays: Sequence[NodeOverlay], pools: Sequence[NodePool]) -> OverlaidCloudProvider:
    """`plan`'s form: fixed overlays and NodePools, the controller's pass run first."""
    cp = decorate(FakeCloudProvider(GPU_TYPES), overlays, pools)
    cp.evaluate()
    return cp


# The simulator's forms: the World's accessors (the Cluster's `nodeoverlays`/`nodepools`), and
# the two-argument form it had, which judges the pools asked about so far.
SIM_FORMS: dict[str, Callable[[list[NodeOverlay], list[NodePool]], OverlaidCloudProvider]] = {
    "accessors": lambda ovs, pools: decorate(
        FakeCloudProvider(GPU_TYPES), lambda: ovs, lambda: pools
    ),
    "sequences": lambda ovs, pools: decorate(FakeCloudProvider(GPU_TYPES), ovs, pools),
    "overlays only": lambda ovs, _: decorate(FakeCloudProvider(GPU_TYPES), ovs),
}


@pytest.mark.parametrize("form", SIM_FORMS)
def test_an_overlay_conflict_is_judged_against_every_nodepool_whatever_pool_is_asked_first(
    form: str,
) -> None:
    as_sim = SIM_FORMS[form](conflicting_overlays(), [A, B])
    as_sim.get_instance_types(A)  # the simulator asks for pool "a" first
    assert gpus(as_plan(conflicting_overlays(), [A, B]).get_instance_types(B)) == 1  # "y" rejected
    assert gpus(as_sim.get_instance_types(B)) == 1


def test_adding_a_nodepool_later_judges_the_overlays_again_for_every_pool() -> None:
    # "y" time-slices g5.xlarge everywhere; "z" prices it in pool "b" alone, so the two clash
    # only once "b" exists, and then "y" is rejected for "a" too.
    ovs = [
        overlay("z", G5_XLARGE, ONLY_B, price="0.01"),
        overlay("y", G5_XLARGE, price="0.02", capacity={"nvidia.com/gpu": "4"}),
    ]
    pools = [A]
    cp = decorate(FakeCloudProvider(GPU_TYPES), lambda: ovs, lambda: pools)
    assert gpus(cp.get_instance_types(A)) == 4
    pools = [A, B]
    assert gpus(cp.get_instance_types(A)) == 1
    pools = [A]  # deleted again
    assert gpus(cp.get_instance_types(A)) == 4


def test_a_changed_overlay_set_judges_the_overlays_again() -> None:
    ovs = conflicting_overlays()
    cp = decorate(FakeCloudProvider(GPU_TYPES), lambda: ovs, lambda: [A, B])
    assert gpus(cp.get_instance_types(B)) == 1
    ovs = ovs[1:]  # "z" deleted: "y" no longer conflicts
    assert gpus(cp.get_instance_types(B)) == 4


def test_the_verdict_is_kept_while_the_overlays_and_nodepools_are_the_same_objects() -> None:
    fake = FakeCloudProvider(GPU_TYPES)
    ovs, pools = conflicting_overlays(), [A, B, C]
    cp = decorate(fake, lambda: list(ovs), lambda: list(pools))  # new lists, same objects
    cp.get_instance_types(A)
    asked = len(fake.calls)  # "a", then the controller's pass over "a", "b" and "c"
    for pool in (A, B, C, A, B, C):
        cp.get_instance_types(pool)
    assert len(fake.calls) - asked == 6  # one question per call: no pass ran again
    pools = [A, B, C.model_copy()]  # "c" re-applied: a new object
    cp.get_instance_types(A)
    assert len(fake.calls) - asked == 6 + 1 + 3


@settings(max_examples=40, deadline=None)
@given(
    order=st.permutations([A, B, C]),
    asked=st.integers(min_value=1, max_value=3),
    chosen=st.lists(st.sampled_from(range(4)), min_size=1, max_size=4, unique=True),
)
def test_law_each_pool_gets_what_the_controllers_pass_over_every_pool_gives_it(
    order: list[NodePool], asked: int, chosen: list[int]
) -> None:
    only_b_or_c = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["b", "c"]}
    candidates = [
        overlay("z", G5_XLARGE, ONLY_B, price="0.01"),
        overlay("y", G5_XLARGE, price="0.02", capacity={"nvidia.com/gpu": "4"}),
        overlay("x", only_b_or_c, capacity={"nvidia.com/gpu": "2"}),
        overlay("w", price="0.03", weight=5),
    ]
    ovs = [candidates[i] for i in chosen]
    pools = [A, B, C]
    reference = as_plan(ovs, pools)
    for form in SIM_FORMS.values():
        cp = form(ovs, pools)
        for pool in order[:asked]:  # the simulator asks for some pools before others
            cp.get_instance_types(pool)
        if form is SIM_FORMS["overlays only"]:
            continue  # that form knows only the pools asked so far
        for pool in pools:
            assert seen(cp.get_instance_types(pool)) == seen(reference.get_instance_types(pool))
