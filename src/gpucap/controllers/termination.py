"""Termination: how a deleted NodeClaim and its Node go away (kubernetes-sigs/karpenter
`pkg/controllers/node/termination/controller.go` and `terminator/terminator.go` for the Node,
`pkg/controllers/nodeclaim/lifecycle/controller.go: finalize` for the NodeClaim).

`delete(name, reason)` is `kubectl delete nodeclaim`: the NodeClaim gets a deletionTimestamp
(its finalizer holds it) and is marked for deletion in cluster state. `reconcile(name)` then
does, pass by pass, what the two finalizers do:
1. a NodeClaim that never launched (no provider ID) is removed at once;
2. its Node, if registered, is cordoned with `karpenter.sh/disrupted:NoSchedule` (a taint of the
   same key with another effect is replaced; the node is labelled to leave load balancers);
3. drain: every pod on it that is drainable (not finished, not tolerating the disrupted taint,
   not a mirror pod) and not a DaemonSet's is evicted, and pends again (its controller
   recreates it; gpucap keeps the pod, unbound); Drained is set once `MIN_DRAIN_TIME` has passed
   since draining started;
4. `CloudProvider.delete` (InstanceTerminating), again every `INSTANCE_TERMINATION_REQUEUE`
   until the provider says the instance is gone; then the Node is removed (pods still on it,
   those that tolerated the taint, pend again; DaemonSet pods go with it) and the NodeClaim is
   removed (pods nominated to it pend again).
A Node that is not Ready and whose instance the provider no longer has skips the drain.

Not modelled: PodDisruptionBudgets and eviction tiers (all drainable pods are evicted at once,
immediately), `terminationGracePeriod`, volume detachment (no volumes), the do-not-disrupt
annotation. Called by the lifecycle controller (its own deletions), the interruption controller,
disruption, and the simulator's world, which requeues it by `requeue_after`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpucap.apis.core import Node, Pod, Taint, Toleration
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.types import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from gpucap.controllers.nodeclaim.conditions import (
    DRAINED,
    INSTANCE_TERMINATING,
    condition,
    seconds_since,
    with_condition,
)
from gpucap.controllers.nodeclaim.constants import INSTANCE_TERMINATION_REQUEUE, MIN_DRAIN_TIME
from gpucap.runtime.clock import Clock
from gpucap.scheduling.taints import DISRUPTED_TAINT
from gpucap.state.cluster import Cluster

__all__ = ["EXCLUDE_BALANCERS", "Termination", "TerminationResult"]

# k8s.io/api `LabelNodeExcludeBalancers`; terminator.go `Taint` sets it to "karpenter".
EXCLUDE_BALANCERS = "node.kubernetes.io/exclude-from-external-load-balancers"


@dataclass(frozen=True, slots=True)
class TerminationResult:
    """What one termination pass did for NodeClaim `node_claim`."""

    node_claim: str
    node: str | None = None
    reason: str | None = None  # why it is being deleted (as given to `delete`)
    cordoned: bool = False  # the disrupted taint was added in this pass
    evicted: tuple[str, ...] = ()  # pods evicted in this pass (pending again)
    instance_terminating: bool = False  # CloudProvider.delete first succeeded in this pass
    node_removed: bool = False
    removed: bool = False  # the NodeClaim is gone
    released: tuple[str, ...] = ()  # pods pending again as the Node or NodeClaim went
    deleted_pods: tuple[str, ...] = ()  # DaemonSet pods gone with the Node
    requeue_after: float | None = None

    @property
    def changed(self) -> bool:
        return bool(
            self.cordoned
            or self.evicted
            or self.instance_terminating
            or self.node_removed
            or self.removed
            or self.released
        )


def _tolerates_disrupted(pod: Pod) -> bool:
    return any(_tolerates(t, DISRUPTED_TAINT) for t in pod.spec.tolerations)


def _tolerates(t: Toleration, taint: Taint) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.operator == "Exists":
        return not t.key or t.key == taint.key
    return t.key == taint.key and (t.value or "") == (taint.value or "")


def _drainable(pod: Pod) -> bool:
    """Karpenter's `IsWaitingEviction` without the stuck-terminating case: not finished, not
    tolerating the disrupted taint, not a mirror pod; DaemonSet pods go with the node here."""
    owners = pod.metadata.owner_references
    return (
        pod.status.phase not in ("Succeeded", "Failed")
        and not _tolerates_disrupted(pod)
        and not any(o.kind in ("Node", "DaemonSet") for o in owners)
    )


def _ready(node: Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


class Termination:
    """The termination controllers over a `Cluster` (see the module docstring)."""

    name = "termination"

    def __init__(self, cluster: Cluster, cloud_provider: CloudProvider, clock: Clock) -> None:
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.clock = clock
        self._reasons: dict[str, str] = {}

    def delete(self, name: str, reason: str) -> bool:
        """Delete NodeClaim `name` for `reason` (a deletionTimestamp; the finalizers run in
        `reconcile`). False when it does not exist or is already being deleted."""
        claim = self.cluster.node_claim(name)
        if claim is None or claim.metadata.deletion_timestamp is not None:
            return False
        meta = claim.metadata.model_copy(update={"deletion_timestamp": self.clock.now()})
        self.cluster.update_node_claim(claim.model_copy(update={"metadata": meta}))
        self.cluster.mark_for_deletion(name)
        self._reasons[name] = reason
        return True

    def deleting(self) -> list[str]:
        """NodeClaims being deleted, in cluster order."""
        return [
            c.name for c in self.cluster.node_claims() if c.metadata.deletion_timestamp is not None
        ]

    def reconcile(self, name: str) -> TerminationResult:
        """One pass of both finalizers for NodeClaim `name` (see the module docstring)."""
        claim = self.cluster.node_claim(name)
        reason = self._reasons.get(name)
        if claim is None or claim.metadata.deletion_timestamp is None:
            return TerminationResult(name, reason=reason)
        if not claim.status.provider_id:
            return self._remove(claim, TerminationResult(name, reason=reason))
        nodes = self.cluster.nodes_for_claim(claim)
        node = nodes[0] if nodes else None
        if node is None and claim.status.node_name:
            node = self.cluster.node(claim.status.node_name)
        if node is None:
            return self._terminate_instance(claim, TerminationResult(name, reason=reason))
        return self._finalize_node(claim, node, reason)

    # ---- the Node's finalizer -----------------------------------------------------------------
    def _finalize_node(self, claim: NodeClaim, node: Node, reason: str | None) -> TerminationResult:
        now = self.clock.now()
        node_name = node.metadata.name
        result = TerminationResult(claim.name, node=node_name, reason=reason)
        if not _ready(node) and self._instance_gone(claim):
            return self._remove_node(claim, node_name, result)
        cordoned = False
        if not any(
            t.key == DISRUPTED_TAINT.key and t.effect == DISRUPTED_TAINT.effect
            for t in node.spec.taints
        ):
            taints = [t for t in node.spec.taints if t.key != DISRUPTED_TAINT.key]
            taints.append(DISRUPTED_TAINT)
            node = node.model_copy(
                update={
                    "spec": node.spec.model_copy(update={"taints": taints}),
                    "metadata": node.metadata.model_copy(
                        update={
                            "labels": {**node.metadata.labels, EXCLUDE_BALANCERS: "karpenter"},
                            "deletion_timestamp": node.metadata.deletion_timestamp or now,
                        }
                    ),
                }
            )
            self.cluster.update_node(node)
            cordoned = True
        result = replace(result, cordoned=cordoned)
        # awaitDrain
        if condition(claim, DRAINED) is None:
            claim = with_condition(
                claim, DRAINED, "Unknown", now, reason="Draining", message="Draining"
            )
            self.cluster.update_node_claim(claim)
        evicted = tuple(p.key for p in self.cluster.pods_on(node_name) if _drainable(p))
        for key in evicted:
            self.cluster.unbind(key)
        result = replace(result, evicted=evicted)
        drained = condition(claim, DRAINED)
        if drained is not None and drained.status == "Unknown":
            waited = seconds_since(drained, now)
            if waited < MIN_DRAIN_TIME:
                return replace(result, requeue_after=MIN_DRAIN_TIME - waited)
            claim = with_condition(claim, DRAINED, "True", now)
            self.cluster.update_node_claim(claim)
        # awaitInstanceTermination
        terminated = self._terminate_instance(claim, result, remove_claim=False)
        if terminated.requeue_after is not None:
            return terminated
        return self._remove_node(claim, node_name, terminated)

    def _remove_node(
        self, claim: NodeClaim, node_name: str, result: TerminationResult
    ) -> TerminationResult:
        released = self.cluster.delete_node(node_name)
        result = replace(
            result,
            node_removed=True,
            released=(*result.released, *released.pending),
            deleted_pods=(*result.deleted_pods, *released.deleted),
        )
        current = self.cluster.node_claim(claim.name) or claim
        return self._terminate_instance(current, result)

    # ---- the instance and the NodeClaim's finalizer ------------------------------------------
    def _terminate_instance(
        self, claim: NodeClaim, result: TerminationResult, *, remove_claim: bool = True
    ) -> TerminationResult:
        """CloudProvider.delete until the instance is gone; then (with `remove_claim`) the
        NodeClaim goes."""
        try:
            self.cloud_provider.delete(claim)
        except NodeClaimNotFoundError:
            return self._remove(claim, result) if remove_claim else result
        except CloudProviderError:
            return replace(result, requeue_after=INSTANCE_TERMINATION_REQUEUE)
        first = condition(claim, INSTANCE_TERMINATING) is None
        if first:
            claim = with_condition(claim, INSTANCE_TERMINATING, "True", self.clock.now())
            self.cluster.update_node_claim(claim)
        return replace(
            result,
            instance_terminating=result.instance_terminating or first,
            requeue_after=INSTANCE_TERMINATION_REQUEUE,
        )

    def _instance_gone(self, claim: NodeClaim) -> bool:
        try:
            self.cloud_provider.get(claim.status.provider_id or "")
        except NodeClaimNotFoundError:
            return True
        except CloudProviderError:
            return False
        return False

    def _remove(self, claim: NodeClaim, result: TerminationResult) -> TerminationResult:
        released = self.cluster.delete_node_claim(claim.name)
        self._reasons.pop(claim.name, None)
        return replace(
            result, removed=True, released=(*result.released, *released.pending), requeue_after=None
        )
