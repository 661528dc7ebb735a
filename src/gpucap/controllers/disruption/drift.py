"""Drift detection: the `Drifted` condition on NodeClaims (kubernetes-sigs/karpenter
`pkg/controllers/nodeclaim/disruption/drift.go` and `controller.go`, karpenter-disruption.md
§4). The disruption controller's Drift method replaces the nodes it marks
(`Candidate.drifted`); this module only decides and records.

For every NodeClaim, as Karpenter's nodeclaim disruption controller does:

- skipped (condition untouched): being deleted, without a `karpenter.sh/nodepool` label, or
  whose NodePool does not exist. Static NodePools (`replicas`) are checked like any other
  (their drifted nodes go to the StaticDrift method); a NodeClaim already drifted is checked
  again, and its condition cleared if it no longer is;
- not `Launched=True`: the condition is removed;
- otherwise the first reason that applies, in Karpenter's order:
  1. `NodePoolDrifted`: the NodeClaim's `karpenter.sh/nodepool-hash` is not the NodePool's
     hash now (`apis/hashing.py`: template labels, annotations, taints, startup taints,
     nodeClassRef, expireAfter, terminationGracePeriod; never weight, limits, disruption or
     replicas), when both carry a hash under the same hash version (`hash.py` re-stamps old
     versions first);
  2. `RequirementsDrifted`: the NodeClaim's labels no longer meet the NodePool's requirements
     (Karpenter's `Compatible`: a key the labels lack must be `NotIn`/`DoesNotExist`, a key they
     have must intersect): narrowing `In`, adding a requirement the node does not meet, or
     `DoesNotExist` on a label it has drift it; widening does not;
  3. `InstanceTypeNotFound`: only for a NodeClaim older than an hour, and at most every 30
     minutes after a check that passed: its instance type is no longer offered for the NodePool,
     or none of the type's offerings (available or not) matches its zone and capacity type;
  4. the cloud provider's reason (`CloudProvider.is_drifted`; AWS: `NodeClassDrift`,
     `AMIDrift`, `SubnetDrift`).
  Drifted: `Drifted=True` with that reason (its transition time kept while it stays True, as
  the Drift method orders candidates by it); not drifted: the condition removed. A cloud
  provider error (instance gone, node class not ready) leaves the condition as it was.

Karpenter re-checks each NodeClaim every `REQUEUE_AFTER` (5 min) and on NodeClaim, NodePool,
Pod and node-class events; the world calls `reconcile()` on those occasions. Where gpucap
differs: the NodeClaim's age for the instance-type check is its creationTimestamp, else (the
simulator does not set one) the first transition of any of its conditions; NodeClaims are not
filtered by node-class kind (one cloud provider serves every claim of a gpucap world).
Called by the simulator's world and tests.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from gpucap.apis.hashing import (
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    nodepool_hash,
)
from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    NODEPOOL,
    ZONE,
)
from gpucap.apis.nodepool import NodeClaim, NodeClaimCondition, NodePool
from gpucap.cloudprovider.types import CloudProvider, CloudProviderError
from gpucap.controllers.disruption.hash import DRIFTED, NodePoolHash
from gpucap.controllers.nodeclaim.conditions import LAUNCHED, condition, is_true, with_condition
from gpucap.runtime.clock import Clock
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.cluster import Cluster

__all__ = [
    "DRIFTED",
    "INSTANCE_TYPE_CHECK_AFTER",
    "INSTANCE_TYPE_CHECK_TTL",
    "INSTANCE_TYPE_NOT_FOUND",
    "NODEPOOL_DRIFTED",
    "REQUEUE_AFTER",
    "REQUIREMENTS_DRIFTED",
    "DriftDetection",
    "nodepool_hash",
]

# drift.go: the core drift reasons.
NODEPOOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"
INSTANCE_TYPE_NOT_FOUND = "InstanceTypeNotFound"
# drift.go `Reconcile`: a launched NodeClaim is checked again every 5 minutes.
REQUEUE_AFTER = 300.0
# drift.go `isDrifted`: the instance-type check waits until a NodeClaim is an hour old, and a
# check that passed is not repeated for 30 minutes (controller.go: `cache.New(time.Minute*30,
# ...)`; only passes are cached, so a transient gap in the offerings is seen again at once).
INSTANCE_TYPE_CHECK_AFTER = 3600.0
INSTANCE_TYPE_CHECK_TTL = 1800.0
_RESERVED = "reserved"


class DriftDetection:
    """Drift detection over a `Cluster` (see the module docstring)."""

    name = "nodeclaim.disruption.drift"

    def __init__(self, cluster: Cluster, cloud_provider: CloudProvider, clock: Clock) -> None:
        self.cluster = cluster
        self.cloud_provider = cloud_provider
        self.clock = clock
        self.hash = NodePoolHash(cluster)
        self._type_checked: dict[str, dt.datetime] = {}  # NodeClaim -> when a check passed
        self._requirements: dict[tuple[str, frozenset[tuple[str, str]]], tuple[NodePool, bool]]
        self._requirements = {}
        # The instance-type verdicts, per (type, zone, capacity type), for one answer of the
        # cloud provider (offerings are all that matter: their zone and capacity type).
        self._types_seen: tuple[object, dict[tuple[str | None, ...], bool]] | None = None
        # Per NodeClaim, what `_reconcile` derives from the NodeClaim and NodePool objects
        # alone (see `_Static`); the NodePool's hash per NodePool object.
        self._static: dict[str, _Static] = {}
        self._hashes: dict[str, tuple[NodePool, str]] = {}

    def reconcile(self) -> list[tuple[str, str]]:
        """Check every NodeClaim once; return (NodeClaim, reason) for each newly marked
        Drifted in this pass (a reason change of a claim already drifted is not new)."""
        self.hash.reconcile()
        marked: list[tuple[str, str]] = []
        claims = self.cluster.node_claims()
        names = {c.name for c in claims}
        self._type_checked = {k: v for k, v in self._type_checked.items() if k in names}
        self._static = {k: v for k, v in self._static.items() if k in names}
        pools: dict[str, NodePool | None] = {}
        for claim in claims:
            reason = self._reconcile(claim, pools)
            if reason:
                marked.append((claim.name, reason))
        return marked

    def reconcile_claim(self, name: str) -> str:
        """Check NodeClaim `name` alone (a NodeClaim event); the reason if newly drifted."""
        self.hash.reconcile()
        claim = self.cluster.node_claim(name)
        return "" if claim is None else self._reconcile(claim, {})

    # ---- one NodeClaim ------------------------------------------------------------------------
    def _reconcile(self, claim: NodeClaim, pools: dict[str, NodePool | None]) -> str:
        if claim.metadata.deletion_timestamp is not None:
            return ""
        pool_name = claim.metadata.labels.get(NODEPOOL)
        if not pool_name:
            return ""
        if pool_name in pools:
            nodepool = pools[pool_name]
        else:
            nodepool = pools[pool_name] = self.cluster.nodepool(pool_name)
        if nodepool is None:
            return ""
        static = self._static.get(claim.name)
        if static is None or static.claim is not claim or static.nodepool is not nodepool:
            static = self._static[claim.name] = self._static_of(claim, nodepool)
        if not static.launched:
            self._clear(claim, static.drifted)
            return ""
        try:
            reason = static.reason or self._dynamic_reason(nodepool, claim)
        except CloudProviderError:
            return ""
        if not reason:
            self._clear(claim, static.drifted)
            return ""
        current = static.drifted
        if current is None or current.status != "True" or current.reason != reason:
            marked = with_condition(
                claim, DRIFTED, "True", self.clock.now(), reason=reason, message=reason
            )
            self.cluster.update_node_claim(marked)
        return "" if static.was_drifted else reason

    def _static_of(self, claim: NodeClaim, nodepool: NodePool) -> _Static:
        drifted = condition(claim, DRIFTED)
        launched = is_true(claim, LAUNCHED)
        return _Static(
            claim,
            nodepool,
            launched,
            drifted,
            drifted is not None and drifted.status == "True",
            self._static_reason(nodepool, claim) if launched else "",
        )

    def _pool_hash(self, nodepool: NodePool) -> str:
        kept = self._hashes.get(nodepool.name)
        if kept is None or kept[0] is not nodepool:
            kept = self._hashes[nodepool.name] = (nodepool, nodepool_hash(nodepool))
        return kept[1]

    def _static_reason(self, nodepool: NodePool, claim: NodeClaim) -> str:
        """drift.go `isDrifted`, its first two checks, which depend on the NodeClaim and
        NodePool objects alone: the NodePool's hash, then its requirements."""
        annotations = claim.metadata.annotations
        if (
            NODEPOOL_HASH_ANNOTATION in annotations
            and annotations.get(NODEPOOL_HASH_VERSION_ANNOTATION) == NODEPOOL_HASH_VERSION
            and annotations[NODEPOOL_HASH_ANNOTATION] != self._pool_hash(nodepool)
        ):
            return NODEPOOL_DRIFTED
        if self._requirements_drifted(nodepool, claim):
            return REQUIREMENTS_DRIFTED
        return ""

    def _dynamic_reason(self, nodepool: NodePool, claim: NodeClaim) -> str:
        """drift.go `isDrifted`, its last two checks, which depend on the clock and the cloud:
        the instance type (once due), then the cloud provider's."""
        if self._instance_type_due(claim):
            if self._instance_type_gone(nodepool, claim):
                return INSTANCE_TYPE_NOT_FOUND
            self._type_checked[claim.name] = self.clock.now()
        return self.cloud_provider.is_drifted(claim)

    def _requirements_drifted(self, nodepool: NodePool, claim: NodeClaim) -> bool:
        """drift.go `areRequirementsDrifted`. NodeClaims of one type, zone and capacity type
        have the same labels: each label set is checked once per NodePool object."""
        key = (nodepool.name, frozenset(claim.metadata.labels.items()))
        kept = self._requirements.get(key)
        if kept is not None and kept[0] is nodepool:
            return kept[1]
        labels = Requirements.from_labels(claim.metadata.labels)
        wanted = Requirements.from_node_selector(nodepool.spec.template.spec.requirements)
        drifted = labels.compatible(wanted) is not None
        if len(self._requirements) > 4096:
            self._requirements.clear()
        self._requirements[key] = (nodepool, drifted)
        return drifted

    def _instance_type_due(self, claim: NodeClaim) -> bool:
        now = self.clock.now()
        passed = self._type_checked.get(claim.name)
        if passed is not None and (now - passed).total_seconds() < INSTANCE_TYPE_CHECK_TTL:
            return False
        created = _created(claim)
        return created is None or (now - created).total_seconds() > INSTANCE_TYPE_CHECK_AFTER

    def _instance_type_gone(self, nodepool: NodePool, claim: NodeClaim) -> bool:
        """drift.go `instanceTypeNotFound`: the claim's type is not among the NodePool's, or no
        offering of it (available or not) is in the claim's zone and capacity type."""
        labels = claim.metadata.labels
        types = self.cloud_provider.get_instance_types(nodepool)
        key = (labels.get(INSTANCE_TYPE), labels.get(ZONE), labels.get(CAPACITY_TYPE))
        if self._types_seen is None or self._types_seen[0] is not types:
            self._types_seen = (types, {})
        verdicts = self._types_seen[1]
        if key in verdicts:
            return verdicts[key]
        it = next((t for t in types if t.name == key[0]), None)
        if it is None:
            gone = True
        else:
            reqs = Requirements.from_labels(labels)
            if labels.get(CAPACITY_TYPE) == _RESERVED:
                # A reserved NodeClaim may since have been demoted to on-demand; its
                # reservation is the provider's to judge (`CapacityReservationDrift`), so the
                # reservation id and type labels (core `ReservedCapacityLabels`; not the
                # interruptible one, as in Karpenter) are not compared.
                reqs = reqs.without(
                    CAPACITY_TYPE, CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE
                ).add(Requirement.new(CAPACITY_TYPE, "In", [_RESERVED, "on-demand"]))
            gone = not any(o.allowed_by(reqs) for o in it.offerings)
        verdicts[key] = gone
        return gone

    def _clear(self, claim: NodeClaim, drifted: NodeClaimCondition | None) -> None:
        """operatorpkg `Clear`: the condition (`drifted`, the claim's) is removed, not set
        False."""
        if drifted is None:
            return
        kept = [c for c in claim.status.conditions if c.type != DRIFTED]
        status = claim.status.model_copy(update={"conditions": kept})
        self.cluster.update_node_claim(claim.model_copy(update={"status": status}))


@dataclass(frozen=True, slots=True)
class _Static:
    """What drift derives from one NodeClaim object and one NodePool object (frozen models: the
    same objects, the same answers), kept per NodeClaim across passes: whether it launched, its
    Drifted condition, whether that is True, and the static reason (`_static_reason`; "" when
    none or not launched). The clock- and cloud-dependent reasons are asked every pass."""

    claim: NodeClaim
    nodepool: NodePool
    launched: bool
    drifted: NodeClaimCondition | None
    was_drifted: bool
    reason: str


def _created(claim: NodeClaim) -> dt.datetime | None:
    """The NodeClaim's creation time; without one, its earliest condition transition."""
    if claim.metadata.creation_timestamp is not None:
        return claim.metadata.creation_timestamp
    times = [
        parse_rfc3339(c.last_transition_time)
        for c in claim.status.conditions
        if c.last_transition_time
    ]
    return min(times) if times else None
