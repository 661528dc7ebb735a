"""Interruption: what Karpenter does with an EC2 spot interruption warning
(aws/karpenter-provider-aws `pkg/controllers/interruption/`: `controller.go` polls the SQS
queue, `utils.go` `handleMessage`/`handleNodeClaim`/`markUnavailableOfferings`/
`deleteNodeClaim`; `messages/spotinterruption`).

A message names EC2 instances; each NodeClaim whose provider ID ends in one of them is handled
by the message's kind. For a spot interruption (`spot_interrupted`) the action is
CordonAndDrain: the NodeClaim's offering (instance type, zone, spot) is marked unavailable in the
provider's insufficient-capacity cache (3 minutes, `cloudprovider/aws/cache.py`), then the
NodeClaim is deleted, unless already deleting, and termination cordons and drains its Node, so
its pods pend again and the next provisioning batch places them elsewhere, steered off that
offering. Controllers do not import the AWS provider: the mark goes through an
`OfferingMarker` (AWSCloudProvider's `mark_interrupted` is one). An interruptible capacity
reservation reclaimed by its owner (`capacity_reservation_interrupted`,
`messages/capacityreservationinterruption`) is CordonAndDrain too: the reservation named by the
NodeClaim's `capacity-reservation-id` label is marked unavailable (its count set to 0 through a
`ReservationMarker`, the capacity-reservation provider's `mark_unavailable`), then the NodeClaim
is deleted. Other message kinds (rebalance
recommendations, scheduled changes, state changes) are not modelled: they take no action.
Called by the simulator's world when its SimulatedEC2 sends a warning, and by tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gpucap.apis.labels import CAPACITY_RESERVATION_ID
from gpucap.apis.nodepool import NodeClaim
from gpucap.controllers.nodeclaim.termination import Termination, TerminationResult
from gpucap.state.cluster import Cluster

__all__ = [
    "CAPACITY_RESERVATION_INTERRUPTED",
    "SPOT_INTERRUPTED",
    "Interruption",
    "InterruptionResult",
    "OfferingMarker",
    "ReservationMarker",
    "instance_id",
]

# pkg/controllers/interruption/messages/types.go: `SpotInterruptionKind = "spot_interrupted"`,
# also the reason Karpenter records for the deletion.
SPOT_INTERRUPTED = "spot_interrupted"
# messages/types.go `CapacityReservationInterruptionKind`.
CAPACITY_RESERVATION_INTERRUPTED = "capacity_reservation_interrupted"


class OfferingMarker(Protocol):
    """Marks the offering of an interrupted spot NodeClaim unavailable (the provider's
    unavailable-offerings cache)."""

    def mark_interrupted(self, node_claim: NodeClaim) -> None: ...


class ReservationMarker(Protocol):
    """Sets the free count of reservations to 0 (the capacity-reservation provider's
    `MarkUnavailable`)."""

    def mark_unavailable(self, *reservation_ids: str) -> None: ...


@dataclass(frozen=True, slots=True)
class InterruptionResult:
    """What handling one message did for NodeClaim `node_claim`."""

    node_claim: str
    node: str | None
    kind: str
    marked_unavailable: bool
    deleted: bool  # this message started the deletion
    termination: TerminationResult | None


def instance_id(provider_id: str) -> str:
    """The instance ID at the end of a provider ID (`aws:///us-east-1a/i-0abc` -> `i-0abc`)."""
    return provider_id.rsplit("/", 1)[-1]


class Interruption:
    """The interruption controller over a `Cluster` (see the module docstring)."""

    name = "interruption"

    def __init__(
        self,
        cluster: Cluster,
        termination: Termination,
        *,
        marker: OfferingMarker | None = None,
        reservations: ReservationMarker | None = None,
    ) -> None:
        self.cluster = cluster
        self.termination = termination
        self.marker = marker
        self.reservations = reservations

    def handle(self, kind: str, instance_ids: list[str]) -> list[InterruptionResult]:
        """Act on one message of `kind` about `instance_ids` (every NodeClaim they match)."""
        wanted = set(instance_ids)
        return [
            self._handle(kind, claim)
            for claim in self.cluster.node_claims()
            if claim.status.provider_id and instance_id(claim.status.provider_id) in wanted
        ]

    def spot_interruption(self, node_claim: str) -> InterruptionResult | None:
        """A spot interruption warning for NodeClaim `node_claim`'s instance (None when it
        does not exist or has not launched)."""
        claim = self.cluster.node_claim(node_claim)
        if claim is None or not claim.status.provider_id:
            return None
        return self._handle(SPOT_INTERRUPTED, claim)

    def _handle(self, kind: str, claim: NodeClaim) -> InterruptionResult:
        nodes = self.cluster.nodes_for_claim(claim)
        node = nodes[0].metadata.name if nodes else claim.status.node_name
        if kind not in (SPOT_INTERRUPTED, CAPACITY_RESERVATION_INTERRUPTED):
            return InterruptionResult(claim.name, node, kind, False, False, None)
        marked = False
        if kind == CAPACITY_RESERVATION_INTERRUPTED:
            # utils.go markUnavailableOfferings: the reservation of the label, count 0.
            rid = claim.metadata.labels.get(CAPACITY_RESERVATION_ID)
            if rid and self.reservations is not None:
                self.reservations.mark_unavailable(rid)
                marked = True
        elif self.marker is not None:
            self.marker.mark_interrupted(claim)
            marked = True
        deleted = self.termination.delete(claim.name, kind)
        termination = self.termination.reconcile(claim.name)
        return InterruptionResult(claim.name, node, kind, marked, deleted, termination)
