"""Garbage collection: cloud instances without a NodeClaim, and NodeClaims without an instance
(karpenter-disruption.md §8). Two Karpenter controllers, run here on their own schedules:

- **Instances** (aws/karpenter-provider-aws `pkg/controllers/nodeclaim/garbagecollection/
  controller.go`): the cloud provider's instances (`CloudProvider.list()`: for AWS the
  instances tagged for the cluster with `karpenter.sh/nodepool`, pending to stopped) that are
  not shutting down, whose provider ID no NodeClaim in the cluster has, and that were launched
  more than `INSTANCE_GRACE` (30 s) ago are terminated (`CloudProvider.delete`); a Node with
  that provider ID is deleted too (its pods pend again), unless the instance was already gone.
  Every `INSTANCE_FAST_PERIOD` (10 s) for the first `INSTANCE_FAST_RUNS` (20) passes that
  succeed, then every `INSTANCE_PERIOD` (2 min). The grace period covers the moment between a
  launch and the NodeClaim recording its provider ID.
- **NodeClaims** (kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/garbagecollection/
  controller.go`), every `NODECLAIM_PERIOD` (2 min): a NodeClaim that is `Registered=True`, not
  being deleted, and whose provider ID the cloud provider no longer lists is deleted (reason
  `garbage_collected`, through termination) unless its Node is `Ready=True` (the kubelet still
  runs, whatever the cloud API says). A NodeClaim that never registered is left to the launch
  and registration timeouts (`controllers/nodeclaim/lifecycle.py`).

Neither checks disruption budgets or do-not-disrupt. `reconcile()` runs whichever part is due on
the clock (both on the first call) and returns what it collected; `requeue_after()` says when
the next part is due. A cloud provider error skips that part until its next period (Karpenter
backs off and retries; the instance pass's fast-run count only grows on success). Called by
the simulator's world and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.types import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from gpucap.controllers.nodeclaim.conditions import REGISTERED, is_true
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.runtime.clock import Clock
from gpucap.state.cluster import Cluster

__all__ = [
    "GARBAGE_COLLECTED",
    "INSTANCE_FAST_PERIOD",
    "INSTANCE_FAST_RUNS",
    "INSTANCE_GRACE",
    "INSTANCE_PERIOD",
    "NODECLAIM_PERIOD",
    "Collected",
    "GarbageCollection",
]

# The metric reason label Karpenter records for a NodeClaim it garbage-collects.
GARBAGE_COLLECTED = "garbage_collected"
# aws garbagecollection/controller.go: `time.Since(nc.CreationTimestamp.Time) > time.Second*30`
# (the CreationTimestamp of an instance's NodeClaim is its launch time).
INSTANCE_GRACE = 30.0
# aws garbagecollection/controller.go: `lo.Ternary(c.successfulCount <= 20, time.Second*10,
# time.Minute*2)`.
INSTANCE_FAST_PERIOD = 10.0
INSTANCE_FAST_RUNS = 20
INSTANCE_PERIOD = 120.0
# core garbagecollection/controller.go: `RequeueAfter: time.Minute * 2`.
NODECLAIM_PERIOD = 120.0


@dataclass(frozen=True, slots=True)
class Collected:
    """What one `collect()` did."""

    instances: tuple[str, ...] = ()  # provider IDs of orphaned instances terminated
    nodes: tuple[str, ...] = ()  # Nodes of those instances deleted
    node_claims: tuple[str, ...] = ()  # NodeClaims whose instance is gone, now deleting
    released: tuple[str, ...] = ()  # pods pending again (their Node was deleted)
    deleted_pods: tuple[str, ...] = ()  # DaemonSet pods gone with those Nodes


class GarbageCollection:
    """Both garbage collectors over a `Cluster` (see the module docstring). NodeClaims are
    deleted through `termination` (the world's, so it finalizes them as any deletion; a private
    one when none is given)."""

    name = "garbagecollection"

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
        self.last = Collected()
        self._instance_runs = 0
        self._instances_due: float | None = None  # clock seconds; None: now
        self._claims_due: float | None = None
        # Within `collect()`: the instance pass's listing while nothing was deleted since.
        self._listed: list[NodeClaim] | None = None

    def reconcile(self) -> list[str]:
        """Run the parts that are due; the provider IDs of instances terminated, then the
        names of NodeClaims deleted (`last` has the detail)."""
        collected = self.collect()
        return [*collected.instances, *collected.node_claims]

    def collect(self) -> Collected:
        """Run the parts that are due and return what they did (also kept as `last`)."""
        now = self.clock.monotonic()
        out = Collected()
        try:
            if self._instances_due is None or now >= self._instances_due:
                out, self._listed = self._collect_instances()
            if self._claims_due is None or now >= self._claims_due:
                claims = self.collect_node_claims()
                out = Collected(out.instances, out.nodes, claims, out.released, out.deleted_pods)
        finally:
            self._listed = None
        self.last = out
        return out

    def _list(self) -> list[NodeClaim]:
        """`cloud_provider.list()`, or within one `collect()` the instance pass's answer when
        that pass changed nothing since (no instance deleted: the same instant, the same
        instances, so the same answer; one DescribeInstances instead of two)."""
        if self._listed is not None:
            return self._listed
        return self.cloud_provider.list()

    def requeue_after(self) -> float:
        """Seconds until the next part is due (0: one is due now)."""
        if self._instances_due is None or self._claims_due is None:
            return 0.0
        return max(0.0, min(self._instances_due, self._claims_due) - self.clock.monotonic())

    # ---- orphaned instances -------------------------------------------------------------------
    def collect_instances(self) -> Collected:
        """One pass of the instance collector (whether due or not)."""
        return self._collect_instances()[0]

    def _collect_instances(self) -> tuple[Collected, list[NodeClaim] | None]:
        """`collect_instances`, and the cloud provider's listing when no instance was deleted
        (None after a delete was attempted or when listing failed)."""
        start = self.clock.monotonic()
        listed: list[NodeClaim] | None
        try:
            listed = self.cloud_provider.list()
        except CloudProviderError:
            self._instances_due = start + self._instance_period()
            return Collected(), None
        cloud = [c for c in listed if c.metadata.deletion_timestamp is None]
        known = {c.status.provider_id for c in self.cluster.node_claims() if c.status.provider_id}
        now = self.clock.now()
        instances: list[str] = []
        nodes: list[str] = []
        released: list[str] = []
        deleted_pods: list[str] = []
        failed = False
        for orphan in cloud:
            pid = orphan.status.provider_id or ""
            if not pid or pid in known:
                continue
            created = orphan.metadata.creation_timestamp
            if created is not None and (now - created).total_seconds() <= INSTANCE_GRACE:
                continue
            listed = None  # a delete is attempted: the listing may be stale from here
            try:
                self.cloud_provider.delete(orphan)
            except NodeClaimNotFoundError:
                continue  # gone meanwhile: Karpenter leaves its Node alone then
            except CloudProviderError:
                failed = True
                continue
            instances.append(pid)
            for node in [n for n in self.cluster.nodes() if n.spec.provider_id == pid]:
                gone = self.cluster.delete_node(node.metadata.name)
                nodes.append(node.metadata.name)
                released.extend(gone.pending)
                deleted_pods.extend(gone.deleted)
        if not failed:
            self._instance_runs += 1
        self._instances_due = start + self._instance_period()
        out = Collected(tuple(instances), tuple(nodes), (), tuple(released), tuple(deleted_pods))
        return out, listed

    def _instance_period(self) -> float:
        return (
            INSTANCE_FAST_PERIOD if self._instance_runs <= INSTANCE_FAST_RUNS else INSTANCE_PERIOD
        )

    # ---- NodeClaims without an instance ---------------------------------------------------------
    def collect_node_claims(self) -> tuple[str, ...]:
        """One pass of the NodeClaim collector (whether due or not): the NodeClaims deleted."""
        self._claims_due = self.clock.monotonic() + NODECLAIM_PERIOD
        try:
            cloud = {
                c.status.provider_id for c in self._list() if c.metadata.deletion_timestamp is None
            }
        except CloudProviderError:
            return ()
        deleted: list[str] = []
        for claim in self.cluster.node_claims():
            if not self._vanished(claim, cloud):
                continue
            if self.termination.delete(claim.name, GARBAGE_COLLECTED):
                deleted.append(claim.name)
        return tuple(deleted)

    def _vanished(self, claim: NodeClaim, cloud: set[str | None]) -> bool:
        # Side-effect-free tests joined by "and": the cheapest first (nearly every claim's
        # instance is listed), the condition scan after.
        if claim.status.provider_id in cloud:
            return False
        if not is_true(claim, REGISTERED) or claim.metadata.deletion_timestamp is not None:
            return False
        nodes = self.cluster.nodes_for_claim(claim)
        # Karpenter's NodeForNodeClaim: two Nodes for one claim is an error and counts as none.
        return not (len(nodes) == 1 and nodes[0].is_ready)
