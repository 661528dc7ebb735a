"""A snapshot of cluster state built from manifests: which pods are pending, which nodes exist
and what the scheduler may use on them.

Mirrors Karpenter's `state.StateNode` (`pkg/controllers/state/statenode.go`):
- a Node and the NodeClaim that launched it are one state node (matched by `status.nodeName`
  or `providerID`); a NodeClaim without a Node yet is a state node of its own, with the
  NodeClaim's labels, taints, capacity and allocatable;
- while a Karpenter node is not initialized, every resource its Node reports as zero or missing
  (the kubelet zeroes extended resources until the device plugin registers them) is taken from
  the NodeClaim, so pending GPU pods are still nominated to it (`Allocatable()`, `Capacity()`);
- a node is initialized when it carries `karpenter.sh/initialized=true`; nodes Karpenter does not
  manage (no `karpenter.sh/nodepool` label) count as initialized;
- nodes being deleted (deletionTimestamp, or the `karpenter.sh/disrupted` taint) are marked.
Pending pods are those with no `spec.nodeName` that a provisioner would consider: not owned by a
DaemonSet, not finished. Called by `gpucap plan` and the simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis.core import Node, Pod, Taint
from gpucap.apis.labels import INITIALIZED, NODEPOOL
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import Quantity, base_units
from gpucap.runtime.memo import Memo
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.taints import DISRUPTED_TAINT

__all__ = [
    "UNITS",
    "Snapshot",
    "claim_of",
    "claim_state",
    "claims_by_node",
    "is_pending",
    "node_state",
    "snapshot",
]


@dataclass(frozen=True, slots=True)
class Snapshot:
    pending: tuple[Pod, ...]
    nodes: tuple[StateNode, ...]
    unknown_node_pods: tuple[Pod, ...]  # bound to a node that is not in the input


# `base_units` per resource map object of a Node or NodeClaim status (frozen models: the
# same map, the same numbers), the run's (`Cluster.memos[UNITS]`): the simulator snapshots
# every pass, mostly the same objects. Entries hold the map; `node_state` and `claim_state`
# copy what they read (callers may build on it). Bounded.
UNITS = Memo.identity(base_units, size=8192)

# Base units of a resource map (`base_units`, or a run's `UNITS` lookup); read-only.
Units = Callable[[Mapping[str, Quantity]], Mapping[str, int]]


def _fill(primary: Mapping[str, int], fallback: Mapping[str, int]) -> dict[str, int]:
    out = dict(primary)
    for k, v in fallback.items():
        if out.get(k, 0) == 0:
            out[k] = v
    return out


def is_pending(pod: Pod) -> bool:
    """Whether a provisioner would consider the pod: unbound, not a DaemonSet's, not finished."""
    if pod.spec.node_name:
        return False
    if any(o.kind == "DaemonSet" for o in pod.metadata.owner_references):
        return False
    return pod.status.phase not in ("Succeeded", "Failed")


def claims_by_node(nodeclaims: Sequence[NodeClaim]) -> dict[str, NodeClaim]:
    """NodeClaims by the Node they match: `status.nodeName`, and `providerID:<id>` (a later
    NodeClaim with the same key wins, as in input order). Read with `claim_of`."""
    out: dict[str, NodeClaim] = {}
    for nc in nodeclaims:
        if nc.status.node_name:
            out[nc.status.node_name] = nc
        if nc.status.provider_id:
            out["providerID:" + nc.status.provider_id] = nc
    return out


def claim_of(node: Node, by_node: Mapping[str, NodeClaim]) -> NodeClaim | None:
    """The NodeClaim of `node` in a `claims_by_node` map: by name, else by provider ID."""
    return by_node.get(node.metadata.name) or by_node.get(
        "providerID:" + (node.spec.provider_id or "")
    )


def node_state(
    node: Node, claim: NodeClaim | None, pods: Sequence[Pod], units: Units = base_units
) -> StateNode:
    """The state node of a Node, its NodeClaim (None: none matched) and its bound `pods`;
    `units` reads resource maps (the cluster's memo, `UNITS`)."""
    labels = dict(node.metadata.labels)
    managed = NODEPOOL in labels
    initialized = (not managed) or labels.get(INITIALIZED) == "true"
    allocatable = dict(units(node.status.allocatable))
    capacity = dict(units(node.status.capacity))
    startup: tuple[Taint, ...] = ()
    if claim is not None:
        startup = tuple(t.as_taint() for t in claim.spec.startup_taints)
        if managed and not initialized:
            allocatable = _fill(allocatable, units(claim.status.allocatable))
            capacity = _fill(capacity, units(claim.status.capacity))
    deleting = node.metadata.deletion_timestamp is not None or any(
        t.key == DISRUPTED_TAINT.key and t.effect == DISRUPTED_TAINT.effect
        for t in node.spec.taints
    )
    return StateNode(
        name=node.metadata.name,
        labels=labels,
        allocatable=allocatable,
        capacity=capacity,
        taints=tuple(node.spec.taints),
        startup_taints=startup,
        pods=tuple(pods),
        initialized=initialized,
        marked_for_deletion=deleting,
    )


def claim_state(nc: NodeClaim, units: Units = base_units) -> StateNode:
    """The state node of a NodeClaim no Node matched (yet); `units` as `node_state`'s."""
    return StateNode(
        name=nc.name,
        labels=dict(nc.metadata.labels),
        allocatable=dict(units(nc.status.allocatable)),
        capacity=dict(units(nc.status.capacity)),
        taints=tuple(t.as_taint() for t in (*nc.spec.taints, *nc.spec.startup_taints)),
        startup_taints=tuple(t.as_taint() for t in nc.spec.startup_taints),
        initialized=False,
        marked_for_deletion=nc.metadata.deletion_timestamp is not None,
    )


def snapshot(
    pods: Sequence[Pod], nodes: Sequence[Node] = (), nodeclaims: Sequence[NodeClaim] = ()
) -> Snapshot:
    """Cluster state from loaded manifests (see the module docstring for the rules)."""
    by_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.spec.node_name:
            by_node.setdefault(pod.spec.node_name, []).append(pod)
    claims = claims_by_node(nodeclaims)
    state: list[StateNode] = []
    matched: set[str] = set()
    for node in nodes:
        claim = claim_of(node, claims)
        if claim is not None:
            matched.add(claim.name)
        state.append(node_state(node, claim, by_node.get(node.metadata.name, ())))
    state.extend(claim_state(nc) for nc in nodeclaims if nc.name not in matched)
    known = {n.name for n in state}
    unknown = tuple(p for p in pods if p.spec.node_name and p.spec.node_name not in known)
    return Snapshot(tuple(p for p in pods if is_pending(p)), tuple(state), unknown)
