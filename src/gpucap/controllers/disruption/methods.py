"""Drift and static drift as disruption methods (kubernetes-sigs/karpenter
`pkg/controllers/disruption/drift.go`, `staticdrift.go` @ 2266468104f3; karpenter-disruption.md
§1.8). Whether a NodeClaim drifted is drift detection's (`drift.py` sets the Drifted condition);
these read it through `Candidate.drifted`.

Drift (eventual class: with a terminationGracePeriod on the NodeClaim, do-not-disrupt pods do
not hold it back): drifted candidates of dynamic NodePools, oldest drift first, empty ones
(no reschedulable pod) before the rest. The first whose NodePool has `Drifted` budget left and
whose pods all schedule (pending pods and pods of deleting nodes included; pods that will not
be evicted get no capacity) becomes the one command of the pass, with every new NodeClaim of
that simulation as its replacements (none, one or several). A candidate whose pods would not
all schedule is held back with the scheduler's errors (`blocked`: drift.go publishes them in a
DisruptionBlocked event, `NonPendingPodSchedulingErrors`: at most five pods, here in pod-key
order where Go's map order is random). No consolidateAfter, no
validation wait: the controller's next pass (immediately) takes the next node.

Static drift (only with the `StaticCapacity` feature gate, off by default as in Karpenter):
per static NodePool with budget, when it is not above its replicas, up to min(budget, drifted,
what `limits.nodes` leaves) drifted nodes are each disrupted, one command each. Karpenter
pre-creates a NodeClaim from the template for each; gpucap deletes the node and leaves the
replacement to the static NodePool controller (`controllers/static.py`), which tops the pool
back up to its replicas.
Called by the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.disruption.candidates import DRIFTED
from gpucap.controllers.disruption.simulation import simulate_scheduling
from gpucap.controllers.disruption.types import (
    EVENTUAL,
    Blocked,
    Candidate,
    PoolTotals,
    Proposal,
)
from gpucap.controllers.nodeclaim.conditions import condition
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import Clock
from gpucap.state.cluster import Cluster

__all__ = ["Drift", "StaticDrift", "not_all_pods_would_schedule"]

# scheduler.go `NonPendingPodSchedulingErrors`: the pods it names at most.
_MAX_ERRORS = 5


def not_all_pods_would_schedule(errors: Mapping[str, str]) -> Blocked:
    """Karpenter's `NonPendingPodSchedulingErrors` for the pods that must move but would not
    schedule (`errors`: pod key -> the scheduler's error), as a DisruptionBlocked reason: each
    pod and its error, the first five, then how many more; pods in key order (Go walks a map).
    """
    if not errors:
        return Blocked("No Pod Scheduling Errors")
    keys = sorted(errors)
    words = "".join(f"{k} => {errors[k]} " for k in keys[:_MAX_ERRORS])
    if len(keys) > _MAX_ERRORS:
        words += f" and {len(keys) - _MAX_ERRORS} other(s)"
    return Blocked("not all pods would schedule, " + words)


class Drift:
    """drift.go (see the module docstring)."""

    name = "drift"
    reason = "Drifted"
    disruption_class = EVENTUAL
    validates = False

    def __init__(
        self,
        cluster: Cluster,
        provisioner: Provisioner,
        clock: Clock,
        *,
        nodepools: Callable[[], Sequence[NodePool]],
    ) -> None:
        self.cluster = cluster
        self.provisioner = provisioner
        self.clock = clock
        self.nodepools = nodepools
        # The candidates the last `compute` held back because their pods would not all
        # schedule (read by the controller); None until a compute ran.
        self.blocked: dict[str, Blocked] | None = None

    def should_disrupt(self, c: Candidate) -> bool:
        return not c.static and bool(c.drifted)

    def compute(
        self,
        budgets: dict[str, int],
        candidates: list[Candidate],
        totals: Mapping[str, PoolTotals],
    ) -> list[Proposal]:
        def since(c: Candidate) -> tuple[str, str]:
            cond = condition(c.node_claim, DRIFTED)
            return ((cond.last_transition_time or "") if cond is not None else "", c.name)

        ordered = sorted(candidates, key=since)
        ordered = [c for c in ordered if not c.reschedulable_pods] + [
            c for c in ordered if c.reschedulable_pods
        ]
        self.blocked = {}
        for c in ordered:
            if budgets.get(c.nodepool.name, 0) <= 0:
                continue
            sim = simulate_scheduling(
                self.cluster,
                self.provisioner,
                [c],
                nodepools=self.nodepools,
                now=self.clock.now(),
                consolidation=False,
            )
            if sim is None:
                continue  # the candidate is deleting: retried next pass
            if not sim.all_non_pending_scheduled:
                self.blocked[c.node_claim.name] = not_all_pods_would_schedule(sim.errors)
                continue
            new = list(sim.results.new_node_claims)
            return [Proposal(self.name, self.reason, (c,), new, message=f"drifted ({c.drifted})")]
        return []

    def validate(self, proposal: Proposal) -> Proposal | None:
        return proposal

    def is_consolidated(self) -> bool:
        return False


class StaticDrift:
    """staticdrift.go (see the module docstring); `enabled` is the StaticCapacity gate."""

    name = "static-drift"
    reason = "Drifted"
    disruption_class = EVENTUAL
    validates = False

    def __init__(
        self,
        cluster: Cluster,
        provisioner: Provisioner,
        cloud_provider: CloudProvider,
        *,
        in_flight: Callable[[], Collection[str]],
        enabled: bool = False,
    ) -> None:
        self.cluster = cluster
        self.provisioner = provisioner
        self.cloud_provider = cloud_provider
        self.in_flight = in_flight
        self.enabled = enabled

    def should_disrupt(self, c: Candidate) -> bool:
        return self.enabled and c.static and bool(c.drifted)

    def compute(
        self,
        budgets: dict[str, int],
        candidates: list[Candidate],
        totals: Mapping[str, PoolTotals],
    ) -> list[Proposal]:
        by_pool: dict[str, list[Candidate]] = {}
        for c in candidates:
            by_pool.setdefault(c.nodepool.name, []).append(c)
        nodes = self.cluster.snapshot().nodes
        out: list[Proposal] = []
        for name in sorted(by_pool):
            members = by_pool[name]
            np = members[0].nodepool
            if budgets.get(name, 0) <= 0 or np.spec.replicas is None:
                continue
            mine = [n for n in nodes if n.nodepool == name]
            running = sum(1 for n in mine if not n.marked_for_deletion)
            if running > np.spec.replicas:
                continue
            count = min(budgets[name], len(members))
            limit = (np.spec.limits or {}).get("nodes")
            if limit is not None:
                count = min(count, max(0, limit.value() - len(mine)))
            for c in members[:count]:
                out.append(Proposal(self.name, self.reason, (c,), [], message="static drift"))
        return out

    def validate(self, proposal: Proposal) -> Proposal | None:
        return proposal

    def is_consolidated(self) -> bool:
        return False
