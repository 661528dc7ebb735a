"""Karpenter's NodeClaim lifecycle over a `Cluster` and a `CloudProvider`
(kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/`: `controller.go`, `launch.go`,
`registration.go`, `initialization.go`, `liveness.go`; karpenter-provisioning.md §5).

Each `reconcile(name)` runs the four sub-reconcilers in Karpenter's order on one NodeClaim:

- **Launch**: a NodeClaim not yet Launched (and without a provider ID) is created through
  `CloudProvider.create`. `InsufficientCapacityError` deletes the NodeClaim (reason
  `insufficient_capacity`) and the pods nominated to it pend again, for the next provisioning
  batch (where the insufficient-capacity marks steer them elsewhere); `NodeClassNotReadyError`
  deletes it too (`nodeclass_not_ready`); a `CreateError` leaves Launched Unknown with its reason
  and message, other provider errors reason `LaunchFailed` (message cut to 300 characters), and
  the launch is retried with Karpenter's backoff. Success writes back what the provider returned
  (its labels under the NodeClaim's own, annotations, provider ID, image, capacity and
  allocatable) and sets Launched.
- **Registration**: the Node whose provider ID is the NodeClaim's (the simulator's kubelet
  creates it: `register(node)`) gets the NodeClaim's taints and startup taints merged in (unless
  it carries `karpenter.sh/do-not-sync-taints=true`), its labels and annotations, loses the
  `karpenter.sh/unregistered` taint and gains `karpenter.sh/registered=true`; Registered is set
  and `status.nodeName` recorded. No Node: Unknown `NodeNotFound`; two: False
  `MultipleNodesFound`.
- **Initialization**, once registered, exactly Karpenter's checks in order: the Node exists,
  is Ready, has none of the NodeClaim's startup taints and no known ephemeral taint, and every
  resource the NodeClaim requests with a non-zero quantity is non-zero in the Node's allocatable
  (checked in name order; Go's map order is random). Then the Node is labelled
  `karpenter.sh/initialized=true` and Initialized set. Otherwise Initialized stays Unknown with
  the reason (`ResourceNotRegistered` for a GPU no device plugin advertised) — for ever: there
  is no initialization timeout, so such a node stays, uninitialized and billed.
- **Liveness**: not Launched `LAUNCH_TIMEOUT` after the Launched condition last changed, or not
  Registered `REGISTRATION_TIMEOUT` after Registered last changed (both start Unknown at the first
  reconcile, when the NodeClaim launches), deletes the NodeClaim (`launch_timeout`,
  `registration_timeout`); its instance is terminated by termination.

A NodeClaim being deleted is handed to termination (`controllers/nodeclaim/termination.py`).
`reconcile` returns what changed and when to run again (`requeue_after`, seconds: the
registration deadline while unregistered, the backoff after a failed launch, termination's
requeue; None: run again only when something changes, e.g. the Node).

Not modelled: the 1-hour launch cache against double launches (a claim with a provider ID is
not launched again), registration hooks, finalizers and owner references on the Node, the
NodePool's NodeRegistrationHealthy condition, DRA ResourceSlices. Called by the simulator's
world (`sim/world.py`) and tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpucap.apis.core import Node, Taint
from gpucap.apis.labels import DO_NOT_SYNC_TAINTS, INITIALIZED, REGISTERED
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import base_units
from gpucap.cloudprovider.types import (
    CloudProvider,
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from gpucap.controllers.nodeclaim import conditions as cond
from gpucap.controllers.nodeclaim.constants import (
    LAUNCH_TIMEOUT,
    MESSAGE_LIMIT,
    REGISTRATION_TIMEOUT,
    backoff,
)
from gpucap.controllers.nodeclaim.termination import Termination, TerminationResult
from gpucap.runtime.clock import Clock
from gpucap.scheduling.taints import UNREGISTERED_TAINT, is_known_ephemeral
from gpucap.state.cluster import Cluster

__all__ = [
    "INSUFFICIENT_CAPACITY",
    "LAUNCH_TIMEOUT_REASON",
    "NODECLASS_NOT_READY",
    "REGISTRATION_TIMEOUT_REASON",
    "Lifecycle",
    "LifecycleResult",
]

# The reasons Karpenter records when the lifecycle deletes a NodeClaim (metric `reason` label
# in launch.go and liveness.go).
INSUFFICIENT_CAPACITY = "insufficient_capacity"
NODECLASS_NOT_READY = "nodeclass_not_ready"
LAUNCH_TIMEOUT_REASON = "launch_timeout"
REGISTRATION_TIMEOUT_REASON = "registration_timeout"


@dataclass(frozen=True, slots=True)
class LifecycleResult:
    """What one reconcile of NodeClaim `node_claim` changed, and when to run it again.

    `launched`/`registered`/`initialized` are set in the pass that made them true (`registered`
    and `initialized` carry the Node's name); `deleted` is the reason when this pass deleted the
    NodeClaim (`insufficient_capacity`, `nodeclass_not_ready`, `launch_timeout`,
    `registration_timeout`); `error` the launch error (`reason: message`), `error_reason` and
    `error_message` its parts (the Launched condition's); `waiting` the reason of the
    first lifecycle condition that is not True (`NodeNotFound`, `ResourceNotRegistered`, ...);
    `released` the pods pending again; `termination` what termination did in this pass."""

    node_claim: str
    launched: bool = False
    registered: str | None = None
    initialized: str | None = None
    deleted: str | None = None
    error: str | None = None
    error_reason: str | None = None
    error_message: str | None = None
    waiting: str | None = None
    released: tuple[str, ...] = ()
    termination: TerminationResult | None = None
    requeue_after: float | None = None
    gone: bool = field(default=False)  # the NodeClaim no longer exists after this pass

    @property
    def changed(self) -> bool:
        return bool(
            self.launched
            or self.registered
            or self.initialized
            or self.deleted
            or self.error
            or self.released
            or (self.termination is not None and self.termination.changed)
        )


def _min(*delays: float | None) -> float | None:
    values = [d for d in delays if d is not None]
    return min(values) if values else None


def _truncate(message: str) -> str:
    return message if len(message) < MESSAGE_LIMIT else message[:MESSAGE_LIMIT] + "..."


def _match(a: Taint, b: Taint) -> bool:
    """Kubernetes `MatchTaint`: same key and effect."""
    return a.key == b.key and a.effect == b.effect


def _format_taint(t: Taint) -> str:
    return f"{t.key}:{t.effect}" if not t.value else f"{t.key}={t.value}:{t.effect}"


class Lifecycle:
    """The NodeClaim lifecycle controller (see the module docstring)."""

    name = "nodeclaim.lifecycle"

    def __init__(
        self,
        cluster: Cluster,
        cloud_provider: CloudProvider,
        clock: Clock,
        *,
        termination: Termination | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.clock = clock
        self.termination = termination or Termination(cluster, cloud_provider, clock)
        self._failures: dict[str, int] = {}

    # ---- entry points ---------------------------------------------------------------------------
    def reconcile(self, name: str) -> LifecycleResult:
        """One pass over NodeClaim `name` (see the module docstring)."""
        claim = self.cluster.node_claim(name)
        if claim is None:
            return LifecycleResult(name, gone=True)
        if claim.metadata.deletion_timestamp is not None:
            t = self.termination.reconcile(name)
            return LifecycleResult(
                name,
                released=(*t.evicted, *t.released),
                termination=t,
                requeue_after=t.requeue_after,
                gone=t.removed,
            )
        now = self.clock.now()
        stored = claim
        claim = cond.with_initial_conditions(claim, now)
        result = LifecycleResult(name)

        claim, result, deleted = self._launch(claim, result)
        if deleted:
            return result
        claim, result = self._register(claim, result)
        claim, result = self._initialize(claim, result)
        if claim != stored:
            self.cluster.update_node_claim(claim)
        result = self._liveness(claim, result)
        if not result.deleted:
            result = replace(result, waiting=self._waiting(claim))
        return result

    def reconcile_all(self) -> list[LifecycleResult]:
        """A pass over every NodeClaim, in cluster order."""
        return [self.reconcile(c.name) for c in self.cluster.node_claims()]

    def register(self, node: Node) -> LifecycleResult | None:
        """The kubelet registered `node` (or updated it): store it and reconcile its NodeClaim
        (None when no NodeClaim has its provider ID)."""
        if self.cluster.node(node.metadata.name) is None:
            self.cluster.add_node(node)
        else:
            self.cluster.update_node(node)
        claim = self.cluster.node_claim_for_node(node)
        return self.reconcile(claim.name) if claim is not None else None

    node_changed = register

    def delete(self, name: str, reason: str) -> LifecycleResult:
        """Delete NodeClaim `name` for `reason` and run termination's first pass."""
        if not self.termination.delete(name, reason):
            return LifecycleResult(name, gone=self.cluster.node_claim(name) is None)
        return replace(self.reconcile(name), deleted=reason)

    # ---- launch.go ------------------------------------------------------------------------------
    def _launch(
        self, claim: NodeClaim, result: LifecycleResult
    ) -> tuple[NodeClaim, LifecycleResult, bool]:
        if cond.is_true(claim, cond.LAUNCHED):
            return claim, result, False
        now = self.clock.now()
        if claim.status.provider_id:
            # Launched by someone else (a plan pass, a restored NodeClaim): only the condition.
            return cond.with_condition(claim, cond.LAUNCHED, "True", now), result, False
        try:
            created = self.cloud_provider.create(claim)
        except InsufficientCapacityError as err:
            return claim, self._remove(claim, result, INSUFFICIENT_CAPACITY, str(err)), True
        except NodeClassNotReadyError as err:
            return claim, self._remove(claim, result, NODECLASS_NOT_READY, str(err)), True
        except CloudProviderError as err:
            if isinstance(err, CreateError):
                reason, message = err.reason, err.message
            else:
                reason, message = "LaunchFailed", _truncate(str(err))
            failures = self._failures.get(claim.name, 0) + 1
            self._failures[claim.name] = failures
            claim = cond.with_condition(
                claim, cond.LAUNCHED, "Unknown", now, reason=reason, message=message
            )
            return (
                claim,
                replace(
                    result,
                    error=f"{reason}: {message}",
                    error_reason=reason,
                    error_message=message,
                    requeue_after=backoff(failures),
                ),
                False,
            )
        self._failures.pop(claim.name, None)
        meta = claim.metadata.model_copy(
            update={
                "labels": {**created.metadata.labels, **claim.metadata.labels},
                "annotations": {**claim.metadata.annotations, **created.metadata.annotations},
            }
        )
        status = claim.status.model_copy(
            update={
                "provider_id": created.status.provider_id,
                "image_id": created.status.image_id,
                "allocatable": dict(created.status.allocatable),
                "capacity": dict(created.status.capacity),
            }
        )
        claim = claim.model_copy(update={"metadata": meta, "status": status})
        claim = cond.with_condition(claim, cond.LAUNCHED, "True", now)
        return claim, replace(result, launched=True), False

    def _remove(
        self, claim: NodeClaim, result: LifecycleResult, reason: str, message: str
    ) -> LifecycleResult:
        """Delete a NodeClaim that did not launch: nothing to terminate, it goes at once."""
        self._failures.pop(claim.name, None)
        released = self.cluster.delete_node_claim(claim.name)
        return replace(result, deleted=reason, error=message, released=released.pending, gone=True)

    # ---- registration.go --------------------------------------------------------------------
    def _register(
        self, claim: NodeClaim, result: LifecycleResult
    ) -> tuple[NodeClaim, LifecycleResult]:
        registered = cond.condition(claim, cond.REGISTERED)
        if registered is not None and registered.status != "Unknown":
            return claim, result
        now = self.clock.now()
        nodes = self.cluster.nodes_for_claim(claim)
        if not nodes:
            claim = cond.with_condition(
                claim,
                cond.REGISTERED,
                "Unknown",
                now,
                reason="NodeNotFound",
                message="Node not registered with cluster",
            )
            return claim, result
        if len(nodes) > 1:
            claim = cond.with_condition(
                claim,
                cond.REGISTERED,
                "False",
                now,
                reason="MultipleNodesFound",
                message="Invariant violated, matched multiple nodes",
            )
            return claim, result
        node = nodes[0]
        taints = list(node.spec.taints)
        if node.metadata.labels.get(DO_NOT_SYNC_TAINTS) != "true":
            for t in (*claim.spec.taints, *claim.spec.startup_taints):
                taint = t.as_taint()
                if not any(_match(taint, x) for x in taints):
                    taints.append(taint)
        taints = [t for t in taints if not _match(t, UNREGISTERED_TAINT)]
        labels = {**node.metadata.labels, **claim.metadata.labels, REGISTERED: "true"}
        annotations = {**node.metadata.annotations, **claim.metadata.annotations}
        node = node.model_copy(
            update={
                "metadata": node.metadata.model_copy(
                    update={"labels": labels, "annotations": annotations}
                ),
                "spec": node.spec.model_copy(update={"taints": taints}),
            }
        )
        self.cluster.update_node(node)
        claim = cond.with_condition(claim, cond.REGISTERED, "True", now)
        claim = claim.model_copy(
            update={"status": claim.status.model_copy(update={"node_name": node.metadata.name})}
        )
        return claim, replace(result, registered=node.metadata.name)

    # ---- initialization.go -----------------------------------------------------------------
    def _initialize(
        self, claim: NodeClaim, result: LifecycleResult
    ) -> tuple[NodeClaim, LifecycleResult]:
        initialized = cond.condition(claim, cond.INITIALIZED)
        if initialized is not None and initialized.status != "Unknown":
            return claim, result
        if not cond.is_true(claim, cond.REGISTERED):
            return claim, result
        now = self.clock.now()

        def unknown(reason: str, message: str) -> NodeClaim:
            return cond.with_condition(
                claim, cond.INITIALIZED, "Unknown", now, reason=reason, message=message
            )

        nodes = self.cluster.nodes_for_claim(claim)
        if not nodes:
            return unknown("NodeNotFound", "Node not registered with cluster"), result
        node = nodes[0]
        if not node.is_ready:
            return unknown("NodeNotReady", "Node status is NotReady"), result
        startup = [t.as_taint() for t in claim.spec.startup_taints]
        for taint in node.spec.taints:
            if any(_match(s, taint) for s in startup):
                return unknown(
                    "StartupTaintsExist", f"StartupTaint {_format_taint(taint)!r} still exists"
                ), result
        for taint in node.spec.taints:
            if is_known_ephemeral(taint):
                return unknown(
                    "KnownEphemeralTaintsExist",
                    f"KnownEphemeralTaint {_format_taint(taint)!r} still exists",
                ), result
        allocatable = base_units(node.status.allocatable)
        for resource, quantity in sorted(claim.spec.resources.requests.items()):
            if not quantity.is_zero() and allocatable.get(resource, 0) == 0:
                return unknown(
                    "ResourceNotRegistered",
                    f'Resource "{resource}" was requested but not registered',
                ), result
        labels = {**node.metadata.labels, INITIALIZED: "true"}
        self.cluster.update_node(
            node.model_copy(
                update={"metadata": node.metadata.model_copy(update={"labels": labels})}
            )
        )
        claim = cond.with_condition(claim, cond.INITIALIZED, "True", now)
        return claim, replace(result, initialized=node.metadata.name)

    # ---- liveness.go ----------------------------------------------------------------------------
    def _liveness(self, claim: NodeClaim, result: LifecycleResult) -> LifecycleResult:
        if cond.is_true(claim, cond.REGISTERED):
            return result
        now = self.clock.now()
        launched = cond.condition(claim, cond.LAUNCHED)
        if launched is None:
            return result
        if launched.status != "True":
            left = LAUNCH_TIMEOUT - cond.seconds_since(launched, now)
            if left > 0:
                return replace(result, requeue_after=_min(result.requeue_after, left))
            return self._timeout(claim, result, LAUNCH_TIMEOUT_REASON)
        registered = cond.condition(claim, cond.REGISTERED)
        if registered is None:
            return result
        left = REGISTRATION_TIMEOUT - cond.seconds_since(registered, now)
        if left > 0:
            return replace(result, requeue_after=_min(result.requeue_after, left))
        return self._timeout(claim, result, REGISTRATION_TIMEOUT_REASON)

    def _timeout(self, claim: NodeClaim, result: LifecycleResult, reason: str) -> LifecycleResult:
        self._failures.pop(claim.name, None)
        self.termination.delete(claim.name, reason)
        t = self.termination.reconcile(claim.name)
        return replace(
            result,
            deleted=reason,
            released=(*result.released, *t.evicted, *t.released),
            termination=t,
            requeue_after=t.requeue_after,
            gone=t.removed,
        )

    @staticmethod
    def _waiting(claim: NodeClaim) -> str | None:
        for type_ in (cond.LAUNCHED, cond.REGISTERED, cond.INITIALIZED):
            c = cond.condition(claim, type_)
            if c is not None and c.status != "True":
                return c.reason or c.status
        return None
