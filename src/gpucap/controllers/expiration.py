"""Expiration: a NodeClaim older than its `expireAfter` is deleted (kubernetes-sigs/karpenter
`pkg/controllers/nodeclaim/expiration/controller.go`).

A NodeClaim carries `spec.expireAfter` (copied from its NodePool at creation; default `720h`;
`Never` turns it off). It expires at `creationTimestamp + expireAfter`; from that instant on
(not before) it is deleted through `Termination.delete(name, "Expired")`. The decision is
forceful: no disruption budget, no `karpenter.sh/do-not-disrupt` (node or pod) and no
replacement comes first, and a claim that never registered expires too. Only the *decision*
is forceful: the drain that follows still honours PodDisruptionBudgets and do-not-disrupt pods
until the NodeClaim's terminationGracePeriod runs out (`controllers/nodeclaim/termination.py`).
Claims already being deleted are left alone.

gpucap reads the creation time from `metadata.creationTimestamp`; a NodeClaim created without
one (the simulator's provisioner does not stamp it) is dated by its earliest condition's
transition (the lifecycle sets the initial conditions when it first sees the claim), else by
the first `reconcile` that saw it.

Called by the simulator's world, which calls `reconcile()` and sets a timer `next_expiry()`
seconds ahead.
"""

from __future__ import annotations

import datetime as dt

from gpucap.apis.duration import DurationError, parse_karpenter_duration
from gpucap.apis.nodepool import NodeClaim
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.runtime.clock import Clock
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.state.cluster import Cluster

__all__ = ["EXPIRED", "Expiration"]

# metrics.ExpiredReason; the reason termination records for the deletion.
EXPIRED = "Expired"


class Expiration:
    """The expiration controller over a `Cluster` (see the module docstring)."""

    name = "expiration"

    def __init__(self, cluster: Cluster, termination: Termination, clock: Clock) -> None:
        self.cluster = cluster
        self.termination = termination
        self.clock = clock
        self._first_seen: dict[str, dt.datetime] = {}

    def expires_at(self, claim: NodeClaim) -> dt.datetime | None:
        """When `claim` expires; None for `Never` (or an expireAfter Karpenter cannot read,
        which its CRD pattern keeps out)."""
        try:
            seconds = parse_karpenter_duration(claim.spec.expire_after)
        except (DurationError, ValueError):
            return None
        if seconds is None:
            return None
        return self._created(claim) + dt.timedelta(seconds=seconds)

    def reconcile(self) -> list[str]:
        """Delete every NodeClaim that has expired by now; returns their names, in cluster
        order."""
        now = self.clock.now()
        deleted: list[str] = []
        live = set()
        for claim in self.cluster.node_claims():
            live.add(claim.name)
            if claim.metadata.deletion_timestamp is not None:
                continue
            at = self.expires_at(claim)
            # Karpenter: `!now.Before(expirationTime)`, so the instant itself expires it.
            if at is not None and now >= at and self.termination.delete(claim.name, EXPIRED):
                deleted.append(claim.name)
        for name in set(self._first_seen) - live:
            del self._first_seen[name]
        return deleted

    def next_expiry(self) -> float | None:
        """Seconds until the next NodeClaim not yet being deleted expires (0 when one already
        has); None when none ever will."""
        now = self.clock.now()
        soonest: float | None = None
        for claim in self.cluster.node_claims():
            if claim.metadata.deletion_timestamp is not None:
                continue
            at = self.expires_at(claim)
            if at is None:
                continue
            left = max((at - now).total_seconds(), 0.0)
            soonest = left if soonest is None else min(soonest, left)
        return soonest

    def _created(self, claim: NodeClaim) -> dt.datetime:
        if claim.metadata.creation_timestamp is not None:
            return claim.metadata.creation_timestamp
        times = [
            parse_rfc3339(c.last_transition_time)
            for c in claim.status.conditions
            if c.last_transition_time
        ]
        if times:
            return min(times)
        return self._first_seen.setdefault(claim.name, self.clock.now())
