"""A NodeClaim that has launched but whose Node has not registered yet, as cluster state sees it.

After a provisioning pass Karpenter creates its NodeClaims; the cloud provider launches each one
and writes back what it became, and the next pass waits for that (`Cluster.Synced` is false
while a NodeClaim has no provider ID). The next pass then sees the NodeClaim as a state node
(`pkg/controllers/state/statenode.go`, a StateNode with a NodeClaim and no Node):
- labels: the NodeClaim's (template labels and resolved custom labels) plus those the AWS
  provider adds at launch (`instanceToNodeClaim`): every requirement of the launched instance
  type with exactly one value, the zone and the capacity type;
- capacity and allocatable: the launched type's, zero values left out (`status.capacity`,
  `status.allocatable`), so it counts against its NodePool's limits with what it really is,
  not with the largest type it might have become;
- not initialized, so its startup taints and known ephemeral taints are ignored; its hostname
  is its name (`HostName()` falls back to the name without a hostname label).
Called by the provisioning loop (`controllers/provisioning/loop.py`) for the NodeClaims of each
pass and for a static NodePool's NodeClaims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, RESERVATION_KEYS, ZONE
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType

__all__ = ["launched_labels", "launched_node"]


def launched_labels(
    labels: Mapping[str, str],
    instance_type: InstanceType,
    zone: str,
    capacity_type: str,
    reservation: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The labels a launched NodeClaim carries: its own, then the single-valued requirements of
    the instance type it became, its zone, capacity type and instance type, and for a launch
    into a reservation its reservation labels (sorted by key)."""
    out = dict(labels)
    for key, req in sorted(instance_type.requirements.items()):
        # The reservation labels come with a reserved launch, never from the type (aws
        # `instanceToNodeClaim`: a type with one reservation has them single-valued).
        if req.operator == "In" and len(req.values) == 1 and key not in RESERVATION_KEYS:
            out.setdefault(key, next(iter(req.values)))
    out[ZONE] = zone
    out[CAPACITY_TYPE] = capacity_type
    out[INSTANCE_TYPE] = instance_type.name
    out.update(reservation or {})
    return dict(sorted(out.items()))


def launched_node(
    name: str,
    labels: Mapping[str, str],
    instance_type: InstanceType,
    *,
    taints: Sequence[Taint] = (),
    startup_taints: Sequence[Taint] = (),
    pods: Sequence[Pod] = (),
) -> StateNode:
    """The state node of a launched NodeClaim `name` with `labels` (from `launched_labels`),
    the `instance_type` it became, and the `pods` nominated to it (bound from here on)."""
    return StateNode(
        name=name,
        labels=dict(labels),
        allocatable={k: v for k, v in instance_type.allocatable.items() if v},
        capacity={k: v for k, v in instance_type.capacity.items() if v},
        taints=(*taints, *startup_taints),
        startup_taints=tuple(startup_taints),
        pods=tuple(pods),
        initialized=False,
    )
