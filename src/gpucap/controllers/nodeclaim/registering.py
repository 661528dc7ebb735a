"""The Node a launched NodeClaim's kubelet registers, and the device plugin's later update.

Karpenter's launch configuration (aws `pkg/providers/amifamily/bootstrap`) passes the
NodeClaim's labels as kubelet `--node-labels` and its taints, startup taints and
`karpenter.sh/unregistered:NoExecute` as `--register-with-taints`; the kubelet reports the
instance's capacity, with every extended resource (anything but cpu, memory, pods,
ephemeral-storage and hugepages) at zero until a device plugin registers it. `advertise` is that
registration (e.g. `nvidia.com/gpu: 4` from a plugin time-slicing one GPU 4 ways). Called by the
simulator's world when its kubelet model says a node joins or a plugin comes up, and by tests.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpucap.apis.core import Node, NodeCondition, NodeSpec, NodeStatus
from gpucap.apis.labels import HOSTNAME
from gpucap.apis.meta import ObjectMeta
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import Quantity
from gpucap.scheduling.taints import UNREGISTERED_TAINT

__all__ = ["advertise", "is_extended", "registering_node", "with_ready"]

_NATIVE = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def is_extended(resource: str) -> bool:
    """Whether the kubelet zeroes `resource` until a device plugin registers it."""
    return resource not in _NATIVE and not resource.startswith("hugepages-")


def registering_node(claim: NodeClaim, name: str | None = None, *, ready: bool = True) -> Node:
    """The Node the kubelet of launched NodeClaim `claim` registers (named `name`, by default
    the NodeClaim's name): its labels and hostname, its taints, startup taints and the
    unregistered taint, the launched type's capacity with extended resources at zero, and a
    Ready condition."""
    node_name = name or claim.name

    def zeroed(resources: Mapping[str, Quantity]) -> dict[str, Quantity]:
        return {k: (Quantity.from_value(0) if is_extended(k) else q) for k, q in resources.items()}

    taints = [UNREGISTERED_TAINT]
    for t in (*claim.spec.taints, *claim.spec.startup_taints):
        taint = t.as_taint()
        if not any(x.key == taint.key and x.effect == taint.effect for x in taints):
            taints.append(taint)
    return Node(
        metadata=ObjectMeta(name=node_name, labels={**claim.metadata.labels, HOSTNAME: node_name}),
        spec=NodeSpec(provider_id=claim.status.provider_id, taints=taints),
        status=NodeStatus(
            capacity=zeroed(claim.status.capacity),
            allocatable=zeroed(claim.status.allocatable),
            conditions=[NodeCondition(type="Ready", status="True" if ready else "False")],
        ),
    )


def advertise(node: Node, resources: Mapping[str, int]) -> Node:
    """`node` after a device plugin registered `resources` (name -> count): capacity and
    allocatable set to them."""
    values = {k: Quantity.from_value(v) for k, v in resources.items()}
    status = node.status.model_copy(
        update={
            "capacity": {**node.status.capacity, **values},
            "allocatable": {**node.status.allocatable, **values},
        }
    )
    return node.model_copy(update={"status": status})


def with_ready(node: Node, ready: bool) -> Node:
    """`node` with its Ready condition set (the kubelet's heartbeat, or its loss)."""
    conditions = [c for c in node.status.conditions if c.type != "Ready"]
    conditions.append(NodeCondition(type="Ready", status="True" if ready else "False"))
    return node.model_copy(
        update={"status": node.status.model_copy(update={"conditions": conditions})}
    )
