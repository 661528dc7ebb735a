"""NodeOverlays as a decoration of the provider's answer (`cloudprovider/overlay.py`), as
Karpenter's `overlay.Decorate`: only `get_instance_types` changes; conflicts are decided across
every NodePool; the wrapped provider's later answers (ICE marks) show through."""

from __future__ import annotations

from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.overlay import decorate
from gpucap.cloudprovider.types import CloudProvider, FakeCloudProvider, node_claim_for
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirements
from tests.builders import load, nodepool
from tests.scheduling.builders import GPU_TYPES
from tests.scheduling.test_nodeoverlay import overlay

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
    cp = decorate(FakeCloudProvider(GPU_TYPES), [overlay("cheap", **PRICE)])
    g5 = by_name(cp.get_instance_types(POOLS[0]))["g5.xlarge"]
    assert {o.price for o in g5.offerings} == {0.01}


def test_evaluation_rejects_conflicts_and_counts_the_changed_types_per_pool() -> None:
    cp = decorate(FakeCloudProvider(GPU_TYPES), [overlay("a", **PRICE), overlay("b", price="0.02")])
    evaluation = cp.evaluate(POOLS)
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
    cp = decorate(fake, [overlay("cheap", **PRICE)])
    cp.evaluate(POOLS)
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


def gpus(types: object, name: str = "g5.xlarge") -> int:
    return by_name(types)[name].capacity["nvidia.com/gpu"]


def test_an_overlay_conflict_is_judged_against_every_nodepool_whatever_pool_is_asked_first() -> (
    None
):
    a, b = load(nodepool("a"), nodepool("b")).objects.nodepools
    as_plan = decorate(FakeCloudProvider(GPU_TYPES), conflicting_overlays())
    as_plan.evaluate([a, b])
    as_sim = decorate(FakeCloudProvider(GPU_TYPES), conflicting_overlays())
    as_sim.get_instance_types(a)  # the simulator asks for pool "a" first
    assert gpus(as_plan.get_instance_types(b)) == 1  # "y" rejected as a conflict
    assert gpus(as_sim.get_instance_types(b)) == gpus(as_plan.get_instance_types(b))
