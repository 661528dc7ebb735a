"""Termination: how a deleted NodeClaim and its Node go away (kubernetes-sigs/karpenter
`pkg/controllers/node/termination/controller.go`, `terminator/terminator.go` and
`terminator/eviction.go` for the Node, `pkg/controllers/nodeclaim/lifecycle/controller.go:
finalize` for the NodeClaim).

`delete(name, reason)` is `kubectl delete nodeclaim`: the NodeClaim gets a deletionTimestamp
(its finalizer holds it) and is marked for deletion in cluster state; a NodeClaim with
`spec.terminationGracePeriod` also gets its drain deadline, the annotation
`karpenter.sh/nodeclaim-termination-timestamp` = deletion time + terminationGracePeriod.
`reconcile(name)` then does, pass by pass, what the two finalizers do:
1. a NodeClaim that never launched (no provider ID) is removed at once;
2. its Node, if registered, is cordoned with `karpenter.sh/disrupted:NoSchedule` (a taint of the
   same key with another effect is replaced; the node is labelled to leave load balancers);
3. drain. The pods waiting eviction are those not finished, not tolerating the disrupted taint
   and not mirror pods (do-not-disrupt pods included: they hold the drain). Then:
   - with a deadline, a pod whose own grace period (`terminationGracePeriodSeconds`, 30 s when
     unset, the API server's default) would run past it (`now > deadline - grace`) is deleted
     at once, in any tier, whatever its PodDisruptionBudget or do-not-disrupt;
   - the others are evicted tier by tier: non-critical non-DaemonSet pods, then non-critical
     DaemonSet pods, then critical non-DaemonSet, then critical DaemonSet (critical: priority
     class `system-cluster-critical` or `system-node-critical`); a tier starts only once the
     earlier ones are empty, one tier per pass;
   - an eviction goes through the Eviction API's check: a pod with an active
     `karpenter.sh/do-not-disrupt` is not evicted; a pod two PodDisruptionBudgets select is
     refused; a pod whose PDB allows no disruption now is refused (an unready pod passes under
     `unhealthyPodEvictionPolicy: AlwaysAllow`, or while the PDB has its healthy pods). A refused
     pod is retried with the eviction queue's per-pod back-off, 100 ms doubling to 10 s;
   - an evicted pod pends again (its controller recreates it; gpucap keeps the pod, unbound); an
     evicted DaemonSet pod is deleted (its controller does not recreate it on the tainted node);
   Drained is set once no pod waits and `MIN_DRAIN_TIME` has passed since draining started;
4. `CloudProvider.delete` (InstanceTerminating), again every `INSTANCE_TERMINATION_REQUEUE`
   until the provider says the instance is gone; then the Node is removed (pods still on it,
   those that tolerated the taint, pend again; DaemonSet pods go with it) and the NodeClaim is
   removed (pods nominated to it pend again).
A Node that is not Ready and whose instance the provider no longer has skips the drain.

PodDisruptionBudgets are the applied `policy/v1` objects (`Cluster.pdbs()`); gpucap has no
disruption controller writing their status, so the Eviction API's `disruptionsAllowed` is
computed live from the pods, as candidate selection computes it (`utils/pdb.py`, one
module for both: `Limits.eviction_refusal`). Not modelled: pod shutdown time (an evicted or deleted
pod is gone at once), pods stuck terminating, volume detachment (no volumes), the eviction
queue's global rate limit. Called by the lifecycle controller (its own deletions), the
interruption and expiration controllers, disruption, and the simulator's world, which requeues
it by `requeue_after`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

from gpucap.apis.core import Node, Pod, Taint, Toleration
from gpucap.apis.duration import DurationError, parse_karpenter_duration
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
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.scheduling.taints import DISRUPTED_TAINT
from gpucap.state.cluster import Cluster
from gpucap.utils.pdb import Limits
from gpucap.utils.pod import do_not_disrupt_active, do_not_disrupt_ends

__all__ = [
    "DO_NOT_DISRUPT",
    "DRAIN_REQUEUE",
    "EVICTION_BACKOFF_BASE",
    "EVICTION_BACKOFF_MAX",
    "EXCLUDE_BALANCERS",
    "TERMINATION_TIMESTAMP",
    "Termination",
    "TerminationResult",
    "do_not_disrupt_active",
    "do_not_disrupt_ends",
]

# k8s.io/api `LabelNodeExcludeBalancers`; terminator.go `Taint` sets it to "karpenter".
EXCLUDE_BALANCERS = "node.kubernetes.io/exclude-from-external-load-balancers"
# pkg/apis/v1/labels.go: the pod (and node) annotation, and the NodeClaim's drain deadline.
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"
# controller.go: the drain is looked at again every second while pods remain.
DRAIN_REQUEUE = 1.0
# eviction.go `evictionQueueBaseDelay` / `evictionQueueMaxDelay`: a refused eviction is retried
# after 100 ms, doubling per refusal, at most every 10 s.
EVICTION_BACKOFF_BASE = 0.1
EVICTION_BACKOFF_MAX = 10.0
# core/v1 defaults: a pod's terminationGracePeriodSeconds when unset.
DEFAULT_POD_GRACE_SECONDS = 30
_CRITICAL = ("system-cluster-critical", "system-node-critical")


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
    deleted_pods: tuple[str, ...] = ()  # DaemonSet pods gone with the Node or evicted
    # pods deleted past the terminationGracePeriod deadline (PDBs and do-not-disrupt ignored);
    # those that are not DaemonSet pods are in `evicted` too (they pend again)
    force_deleted: tuple[str, ...] = ()
    # pods the drain waits for in this pass, with why: "do-not-disrupt", "pdb <ns/name>",
    # "multiple pdbs", or "backoff"
    blocked: tuple[tuple[str, str], ...] = field(default_factory=tuple)
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
            or self.deleted_pods
        )


def _tolerates_disrupted(pod: Pod) -> bool:
    return any(_tolerates(t, DISRUPTED_TAINT) for t in pod.spec.tolerations)


def _tolerates(t: Toleration, taint: Taint) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.operator == "Exists":
        return not t.key or t.key == taint.key
    return t.key == taint.key and (t.value or "") == (taint.value or "")


def _waiting_eviction(pod: Pod) -> bool:
    """Karpenter's `IsWaitingEviction` without the stuck-terminating case (gpucap pods do not
    linger terminating): not finished, not tolerating the disrupted taint, not a mirror pod."""
    return (
        pod.status.phase not in ("Succeeded", "Failed")
        and not _tolerates_disrupted(pod)
        and not any(o.kind == "Node" for o in pod.metadata.owner_references)
    )


def _is_daemon(pod: Pod) -> bool:
    return any(o.kind == "DaemonSet" for o in pod.metadata.owner_references)


def _tier(pod: Pod) -> int:
    """terminator.go `groupPodsByPriority`: 0 non-critical, 1 non-critical DaemonSet,
    2 critical, 3 critical DaemonSet."""
    critical = pod.spec.priority_class_name in _CRITICAL
    return 2 * critical + _is_daemon(pod)


def _grace_seconds(pod: Pod) -> int:
    grace = pod.spec.termination_grace_period_seconds
    return DEFAULT_POD_GRACE_SECONDS if grace is None else grace


class Termination:
    """The termination controllers over a `Cluster` (see the module docstring)."""

    name = "termination"

    def __init__(self, cluster: Cluster, cloud_provider: CloudProvider, clock: Clock) -> None:
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.clock = clock
        self._reasons: dict[str, str] = {}
        # pod key -> (refusals so far, monotonic time of the next try): the eviction queue's
        # per-pod exponential back-off
        self._backoff: dict[str, tuple[int, float]] = {}

    def delete(self, name: str, reason: str) -> bool:
        """Delete NodeClaim `name` for `reason` (a deletionTimestamp; the finalizers run in
        `reconcile`). False when it does not exist or is already being deleted."""
        claim = self.cluster.node_claim(name)
        if claim is None or claim.metadata.deletion_timestamp is not None:
            return False
        now = self.clock.now()
        update: dict[str, object] = {"deletion_timestamp": now}
        grace = self._grace_period(claim)
        if grace is not None and TERMINATION_TIMESTAMP not in claim.metadata.annotations:
            # lifecycle/controller.go ensureTerminationGracePeriodTerminationTimeAnnotation
            deadline = now + dt.timedelta(seconds=grace)
            update["annotations"] = {
                **claim.metadata.annotations,
                TERMINATION_TIMESTAMP: deadline.isoformat().replace("+00:00", "Z"),
            }
        meta = claim.metadata.model_copy(update=update)
        self.cluster.update_node_claim(claim.model_copy(update={"metadata": meta}))
        self.cluster.mark_for_deletion(name)
        self._reasons[name] = reason
        return True

    @staticmethod
    def _grace_period(claim: NodeClaim) -> int | None:
        text = claim.spec.termination_grace_period
        if not text:
            return None
        try:
            return parse_karpenter_duration(text)
        except (DurationError, ValueError):
            return None

    @staticmethod
    def deadline(claim: NodeClaim) -> dt.datetime | None:
        """The drain deadline termination works to (the termination-timestamp annotation),
        None without a terminationGracePeriod."""
        text = claim.metadata.annotations.get(TERMINATION_TIMESTAMP)
        if not text:
            return None
        try:
            return parse_rfc3339(text)
        except ValueError:
            return None

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
        if not node.is_ready and self._instance_gone(claim):
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
        result, waiting_after = self._drain(node_name, self.deadline(claim), result)
        if waiting_after is not None:
            return replace(result, requeue_after=waiting_after)
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

    # ---- the drain ------------------------------------------------------------------------------
    def _drain(
        self, node_name: str, deadline: dt.datetime | None, result: TerminationResult
    ) -> tuple[TerminationResult, float | None]:
        """One pass of terminator.go `Drain` and the eviction queue (see the module docstring).
        Returns the result and, while pods still wait eviction, when to look again."""
        now = self.clock.now()
        mono = self.clock.monotonic()
        waiting = [p for p in self.cluster.pods_on(node_name) if _waiting_eviction(p)]
        force: list[Pod] = []
        graceful: list[Pod] = []
        for pod in waiting:
            past = deadline is not None and now > deadline - dt.timedelta(
                seconds=_grace_seconds(pod)
            )
            (force if past else graceful).append(pod)
        evicted: list[str] = []
        deleted: list[str] = []
        for pod in force:
            self._remove_pod(pod, evicted, deleted)
        forced = tuple(p.key for p in force)
        blocked: list[tuple[str, str]] = []
        wakeups: list[float] = []
        tier = min((_tier(p) for p in graceful), default=None)
        for pod in graceful:
            if _tier(pod) != tier:
                continue
            why = self._refusal(pod, now, mono)
            if why is None:
                self._backoff.pop(pod.key, None)
                self._remove_pod(pod, evicted, deleted)
                continue
            blocked.append((pod.key, why))
            if why != "backoff":
                failures = self._backoff.get(pod.key, (0, 0.0))[0]
                delay = min(EVICTION_BACKOFF_BASE * 2 ** min(failures, 16), EVICTION_BACKOFF_MAX)
                self._backoff[pod.key] = (failures + 1, mono + delay)
            wakeups.append(self._backoff[pod.key][1] - mono)
            if why == "do-not-disrupt":
                ends = do_not_disrupt_ends(pod)
                if ends is not None and ends > now:
                    wakeups.append((ends - now).total_seconds())
            if deadline is not None:
                force_at = deadline - dt.timedelta(seconds=_grace_seconds(pod))
                # needsForceDelete is `now.After(...)`: look just past the instant
                wakeups.append(max((force_at - now).total_seconds(), 0.0) + 0.001)
        result = replace(
            result,
            evicted=(*result.evicted, *evicted),
            deleted_pods=(*result.deleted_pods, *deleted),
            force_deleted=forced,
            blocked=tuple(blocked),
        )
        remaining = [p for p in self.cluster.pods_on(node_name) if _waiting_eviction(p)]
        if not remaining:
            return result, None
        if not blocked:  # the next tier starts on the next pass
            return result, DRAIN_REQUEUE
        if not wakeups:
            return result, DRAIN_REQUEUE
        # rounded to the microsecond: differences of float clock readings carry noise
        return result, round(max(min(wakeups), EVICTION_BACKOFF_BASE), 6)

    def _remove_pod(self, pod: Pod, evicted: list[str], deleted: list[str]) -> None:
        if _is_daemon(pod):
            self.cluster.delete_pod(pod.key)
            deleted.append(pod.key)
        else:
            self.cluster.unbind(pod.key)
            evicted.append(pod.key)

    def _refusal(self, pod: Pod, now: dt.datetime, mono: float) -> str | None:
        """Why the eviction queue does not evict `pod` now, or None: do-not-disrupt active,
        still backing off, or the Eviction API refuses it for its PDB(s)."""
        if do_not_disrupt_active(pod, now):
            return "do-not-disrupt"
        backoff = self._backoff.get(pod.key)
        if backoff is not None and mono < backoff[1]:
            return "backoff"
        return self._pdb_refusal(pod)

    def _pdb_refusal(self, pod: Pod) -> str | None:
        """The Eviction API's PodDisruptionBudget check for `pod` (`Limits.eviction_refusal`)."""
        return Limits.of(self.cluster).eviction_refusal(pod)

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

    def _live_pods(self) -> set[str]:
        return {p.key for p in self.cluster.pods() if p.spec.node_name}

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
        for key in [k for k in self._backoff if k not in self._live_pods()]:
            del self._backoff[key]
        return replace(
            result, removed=True, released=(*result.released, *released.pending), requeue_after=None
        )
