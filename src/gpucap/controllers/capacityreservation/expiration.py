"""Capacity Block expiration: the NodeClaims of a Capacity Block within 40 minutes of its end
are deleted (aws/karpenter-provider-aws `pkg/controllers/capacityreservation/expiration/
controller.go`, `Controller.Reconcile`).

A singleton that runs every minute. It collects the reservation IDs on the NodeClaims' labels
(`karpenter.k8s.aws/capacity-reservation-id`), looks those reservations up through the
capacity-reservation provider (the same 1-minute query cache the node class reads) and asks
which are `expiring` in Karpenter's sense: a Capacity Block whose end is 40 minutes or less
away (`ec2nodeclass_status.go` `CapacityReservationFromEC2`); an ODCR never is. Each NodeClaim
in an expiring reservation is deleted with a plain delete: not a disruption method, so no
budget, no do-not-disrupt and no replacement comes first; termination drains the node as for
any deletion (honouring PodDisruptionBudgets until the terminationGracePeriod). Ten minutes
later EC2 starts reclaiming the block's instances itself. Claims already deleting are left
alone. Controllers do not import the AWS provider: the lookup is a `ReservationStates`
(the simulator adapts the provider to it). Called by the simulator's world and by tests.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from gpucap.apis.labels import CAPACITY_RESERVATION_ID
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.state.cluster import Cluster

__all__ = [
    "CAPACITY_BLOCK_EXPIRING",
    "REQUEUE_SECONDS",
    "CapacityReservationExpiration",
    "ReservationStates",
]

# The reason termination records for the deletion (Karpenter logs "initiating delete for
# capacity block expiration"; it has no reason constant: gpucap's word).
CAPACITY_BLOCK_EXPIRING = "CapacityBlockExpiring"
# The controller's RequeueAfter.
REQUEUE_SECONDS = 60.0


class ReservationStates(Protocol):
    """Karpenter's state (`active` | `expiring`) of each of `ids` it still discovers (an ended
    or unknown reservation is absent)."""

    def states(self, ids: Collection[str]) -> Mapping[str, str]: ...


class CapacityReservationExpiration:
    """The `capacityreservation.expiration` controller (see the module docstring)."""

    name = "capacityreservation.expiration"

    def __init__(
        self, cluster: Cluster, termination: Termination, reservations: ReservationStates
    ) -> None:
        self.cluster = cluster
        self.termination = termination
        self.reservations = reservations

    def reconcile(self) -> list[str]:
        """One pass: the NodeClaims it started deleting, by name."""
        claims = [
            c for c in self.cluster.node_claims() if c.metadata.labels.get(CAPACITY_RESERVATION_ID)
        ]
        if not claims:
            return []
        ids = sorted({c.metadata.labels[CAPACITY_RESERVATION_ID] for c in claims})
        states = self.reservations.states(ids)
        expiring = {rid for rid, state in states.items() if state == "expiring"}
        return [
            c.name
            for c in claims
            if c.metadata.labels[CAPACITY_RESERVATION_ID] in expiring
            and self.termination.delete(c.name, CAPACITY_BLOCK_EXPIRING)
        ]
