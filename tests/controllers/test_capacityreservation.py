"""Karpenter AWS's capacity-reservation controllers and the reservation interruption, as rules
named after its tests: `pkg/controllers/capacityreservation/expiration/suite_test.go`,
`pkg/controllers/capacityreservation/capacitytype/suite_test.go`,
`pkg/controllers/interruption/suite_test.go` (the capacity reservation interruption cases)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import cast

from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_TYPE,
)
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.capacityreservation.capacitytype import CapacityTypeDemotion
from gpucap.controllers.capacityreservation.expiration import CapacityReservationExpiration
from gpucap.controllers.interruption import CAPACITY_RESERVATION_INTERRUPTED, Interruption
from gpucap.controllers.nodeclaim.registering import registering_node
from tests.controllers.lifecycle_builders import World, claim, world


class _States:
    def __init__(self, states: Mapping[str, str]) -> None:
        self.given = dict(states)
        self.asked: list[list[str]] = []

    def states(self, ids: Collection[str]) -> Mapping[str, str]:
        self.asked.append(sorted(ids))
        return {i: s for i, s in self.given.items() if i in ids}


class _Marker:
    def __init__(self) -> None:
        self.marked: list[str] = []

    def mark_unavailable(self, *reservation_ids: str) -> None:
        self.marked.extend(reservation_ids)


class _Cloud:
    """What `CloudProvider.list` reads back: provider ID -> capacity type."""

    def __init__(self, types: Mapping[str, str]) -> None:
        self.types = dict(types)

    def list(self) -> list[NodeClaim]:
        out = []
        for pid, ct in self.types.items():
            c = claim("cloud")
            meta = c.metadata.model_copy(update={"labels": {CAPACITY_TYPE: ct}})
            status = c.status.model_copy(update={"provider_id": pid})
            out.append(c.model_copy(update={"metadata": meta, "status": status}))
        return out


def _reserved(w: World, name: str, rid: str, rtype: str, *, interruptible: bool = False) -> None:
    c = claim(name)
    labels = {
        **c.metadata.labels,
        CAPACITY_TYPE: "reserved",
        CAPACITY_RESERVATION_ID: rid,
        CAPACITY_RESERVATION_TYPE: rtype,
        CAPACITY_RESERVATION_INTERRUPTIBLE: "true" if interruptible else "false",
    }
    meta = c.metadata.model_copy(update={"labels": labels})
    status = c.status.model_copy(update={"provider_id": f"aws:///us-east-1a/i-{name}"})
    w.cluster.add_node_claim(c.model_copy(update={"metadata": meta, "status": status}))


def _expiration(w: World, states: Mapping[str, str]) -> CapacityReservationExpiration:
    return CapacityReservationExpiration(w.cluster, w.lifecycle.termination, _States(states))


def _deleting(w: World, name: str) -> bool:
    c = w.cluster.node_claim(name)
    return c is not None and c.metadata.deletion_timestamp is not None


def test_should_delete_nodeclaims_associated_with_expiring_capacity_block_reservations() -> None:
    w = world()
    _reserved(w, "gpu-1", "cr-0block", "capacity-block")
    assert _expiration(w, {"cr-0block": "expiring"}).reconcile() == ["gpu-1"]
    assert _deleting(w, "gpu-1")


def test_should_not_delete_nodeclaims_associated_with_standard_capacity_reservations_within_the_capacity_block_expiration_window() -> (
    None
):
    w = world()
    _reserved(w, "gpu-1", "cr-0odcr", "default")
    _reserved(w, "gpu-2", "cr-0block", "capacity-block")
    # An ODCR is never `expiring` (its state stays active); a block before its window neither.
    assert _expiration(w, {"cr-0odcr": "active", "cr-0block": "active"}).reconcile() == []
    assert not _deleting(w, "gpu-1")
    assert not _deleting(w, "gpu-2")


def test_expiration_asks_only_for_the_reservations_on_nodeclaims() -> None:
    w = world()
    w.cluster.add_node_claim(claim("gpu-9"))  # no reservation label: never looked up
    states = _States({})
    assert (
        CapacityReservationExpiration(w.cluster, w.lifecycle.termination, states).reconcile() == []
    )
    assert states.asked == []
    _reserved(w, "gpu-1", "cr-0a", "capacity-block")
    CapacityReservationExpiration(w.cluster, w.lifecycle.termination, states).reconcile()
    assert states.asked == [["cr-0a"]]


def test_should_demote_nodeclaims_and_nodes_from_reserved_to_on_demand() -> None:
    w = world()
    _reserved(w, "gpu-1", "cr-0odcr", "default")
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    w.cluster.add_node(registering_node(nc, "ip-1"))
    cloud = _Cloud({"aws:///us-east-1a/i-gpu-1": "on-demand"})
    assert CapacityTypeDemotion(w.cluster, cast("CloudProvider", cloud)).reconcile() == ["gpu-1"]
    after = w.cluster.node_claim("gpu-1")
    node = w.cluster.node("ip-1")
    assert after is not None
    assert node is not None
    for labels in (after.metadata.labels, node.metadata.labels):
        assert labels[CAPACITY_TYPE] == "on-demand"
        assert CAPACITY_RESERVATION_ID not in labels
        assert CAPACITY_RESERVATION_TYPE not in labels
    # Karpenter's ReservedCapacityLabels hold only the id and the type.
    assert after.metadata.labels[CAPACITY_RESERVATION_INTERRUPTIBLE] == "false"


def test_a_reserved_nodeclaim_still_in_its_reservation_is_not_demoted() -> None:
    w = world()
    _reserved(w, "gpu-1", "cr-0odcr", "default")
    cloud = _Cloud({"aws:///us-east-1a/i-gpu-1": "reserved"})
    assert CapacityTypeDemotion(w.cluster, cast("CloudProvider", cloud)).reconcile() == []
    after = w.cluster.node_claim("gpu-1")
    assert after is not None
    assert after.metadata.labels[CAPACITY_TYPE] == "reserved"


def test_should_delete_the_nodeclaim_when_receiving_a_capacity_reservation_interruption_warning() -> (
    None
):
    w = world()
    _reserved(w, "gpu-1", "cr-0intr", "default", interruptible=True)
    interruption = Interruption(w.cluster, w.lifecycle.termination, reservations=_Marker())
    (result,) = interruption.handle(CAPACITY_RESERVATION_INTERRUPTED, ["i-gpu-1"])
    assert result.deleted
    # Termination ran at once: the claim is deleting, or gone (it never launched here).
    assert _deleting(w, "gpu-1") or w.cluster.node_claim("gpu-1") is None


def test_should_mark_the_capacity_reservation_as_unavailable_when_getting_an_interruption_warning() -> (
    None
):
    w = world()
    _reserved(w, "gpu-1", "cr-0intr", "default", interruptible=True)
    marker = _Marker()
    interruption = Interruption(w.cluster, w.lifecycle.termination, reservations=marker)
    (result,) = interruption.handle(CAPACITY_RESERVATION_INTERRUPTED, ["i-gpu-1"])
    assert result.marked_unavailable
    assert marker.marked == ["cr-0intr"]
