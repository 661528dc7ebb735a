"""Capacity-type demotion: a NodeClaim labelled `reserved` whose instance EC2 no longer
describes in a reservation is relabelled `on-demand` (aws/karpenter-provider-aws
`pkg/controllers/capacityreservation/capacitytype/controller.go`, `Controller.Reconcile`,
`syncCapacityType`).

A singleton that runs every minute. It reads every instance back through the cloud provider
(`CloudProvider.list`: the AWS provider reports an instance `reserved` only while EC2 still
gives it a `CapacityReservationId`, so once an ODCR ends, is cancelled or the instance leaves
it, the instance reads `on-demand`). For each NodeClaim not being deleted whose label says
`reserved` and whose instance reads `on-demand`, it sets `karpenter.sh/capacity-type:
on-demand` and removes the reservation labels Karpenter lists in `ReservedCapacityLabels`
(the id and the type; `-interruptible` stays, as in Karpenter), on the NodeClaim and on each
of its Nodes not being deleted that still says `reserved`. Never the other way round, and the
reservation's availability count is not touched. Consolidation then prices the node at its
on-demand price. Called by the simulator's world and by tests.
"""

from __future__ import annotations

from gpucap.apis.labels import CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE, CAPACITY_TYPE
from gpucap.cloudprovider.types import CloudProvider
from gpucap.state.cluster import Cluster

__all__ = ["RESERVED_CAPACITY_LABELS", "CapacityTypeDemotion"]

# aws pkg/apis/v1/doc.go: the set `cloudprovider.ReservedCapacityLabels` holds.
RESERVED_CAPACITY_LABELS = (CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE)


class CapacityTypeDemotion:
    """The `capacityreservation.capacitytype` controller (see the module docstring)."""

    name = "capacityreservation.capacitytype"

    def __init__(self, cluster: Cluster, cloud: CloudProvider) -> None:
        self.cluster = cluster
        self.cloud = cloud

    def reconcile(self) -> list[str]:
        """One pass: the NodeClaims it demoted, by name."""
        reserved = [
            c
            for c in self.cluster.node_claims()
            if c.metadata.labels.get(CAPACITY_TYPE) == "reserved"
            and c.metadata.deletion_timestamp is None
            and c.status.provider_id
        ]
        if not reserved:
            return []
        cloud = {
            c.status.provider_id: c.metadata.labels.get(CAPACITY_TYPE)
            for c in self.cloud.list()
            if c.status.provider_id
        }
        demoted: list[str] = []
        for claim in reserved:
            if cloud.get(claim.status.provider_id or "") != "on-demand":
                continue
            labels = _demoted(claim.metadata.labels)
            meta = claim.metadata.model_copy(update={"labels": labels})
            self.cluster.update_node_claim(claim.model_copy(update={"metadata": meta}))
            for node in self.cluster.nodes_for_claim(claim):
                if (
                    node.metadata.deletion_timestamp is None
                    and node.metadata.labels.get(CAPACITY_TYPE) == "reserved"
                ):
                    nmeta = node.metadata.model_copy(
                        update={"labels": _demoted(node.metadata.labels)}
                    )
                    self.cluster.update_node(node.model_copy(update={"metadata": nmeta}))
            demoted.append(claim.name)
        return demoted


def _demoted(labels: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in labels.items() if k not in RESERVED_CAPACITY_LABELS}
    out[CAPACITY_TYPE] = "on-demand"
    return out
