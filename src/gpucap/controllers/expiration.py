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

Called by the simulator's world (`sim/nodeclaims.py`), which sets a timer at each NodeClaim's
`expires_at` and calls `reconcile()` there.

Fast path (`indexed`, on by default): a fleet whose NodeClaims were all created in one second has
as many timers at that second, and a plain `reconcile` reads every NodeClaim (and parses its
expireAfter) on each, quadratic in the fleet. Here the expiry of a NodeClaim whose creation time is
its own (`creationTimestamp` or a condition's transition) is kept per NodeClaim object (frozen
models), and a `reconcile` at a time before the soonest expiry its last full scan saw, with the
NodeClaims unchanged since (`Cluster.claims_version`: the same objects, so the same deletion marks
and expiries), returns at once: the scan would delete nothing, and every live name already has its
first-seen time. `indexed` off scans every time (the reference the law in
tests/controllers/test_expiration_index.py compares with over random histories).
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
        # See the module docstring: off, every `reconcile` scans (the reference).
        self.indexed = True
        # Per NodeClaim object (by id; the entry holds it): its expiry, for those whose
        # creation time is their own (`_own_created`).
        self._expiry: dict[int, tuple[NodeClaim, dt.datetime | None]] = {}
        # The claims version of the last full scan, and the soonest expiry of a NodeClaim not
        # being deleted it saw (None: none expires).
        self._scanned: tuple[int, dt.datetime | None] | None = None
        self._live = 0  # how many NodeClaims the last full scan saw (bounds `_expiry`)

    def expires_at(self, claim: NodeClaim) -> dt.datetime | None:
        """When `claim` expires; None for `Never` (or an expireAfter Karpenter cannot read,
        which its CRD pattern keeps out)."""
        if not self.indexed:
            return self._expires_at(claim)
        kept = self._expiry.get(id(claim))
        if kept is not None and kept[0] is claim:
            return kept[1]
        at = self._expires_at(claim)
        if _own_created(claim):
            if len(self._expiry) > 4 * self._live + 64:
                self._expiry.clear()  # entries of NodeClaims gone (each holds its object)
            self._expiry[id(claim)] = (claim, at)
        return at

    def _expires_at(self, claim: NodeClaim) -> dt.datetime | None:
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
        version = self.cluster.claims_version
        scanned = self._scanned
        if (
            self.indexed
            and scanned is not None
            and scanned[0] == version
            and (scanned[1] is None or now < scanned[1])
        ):
            return []  # the same NodeClaims, none expired yet (see the module docstring)
        deleted: list[str] = []
        live = set()
        soonest: dt.datetime | None = None
        for claim in self.cluster.node_claims():
            live.add(claim.name)
            if claim.metadata.deletion_timestamp is not None:
                continue
            at = self.expires_at(claim)
            # Karpenter: `!now.Before(expirationTime)`, so the instant itself expires it.
            if at is not None and now >= at and self.termination.delete(claim.name, EXPIRED):
                deleted.append(claim.name)
            elif at is not None and (soonest is None or at < soonest):
                soonest = at
        for name in set(self._first_seen) - live:
            del self._first_seen[name]
        self._live = len(live)
        # A deletion wrote its NodeClaim (the version moved on); one that `delete` refused
        # stays and counts for the soonest.
        self._scanned = (self.cluster.claims_version, soonest)
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
        """When `claim` was created (see the module docstring); `_own_created` says when
        that is a function of the object alone."""
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


def _own_created(claim: NodeClaim) -> bool:
    """Whether `Expiration._created` reads `claim` alone (its creationTimestamp or a
    condition's transition), not the first-seen table."""
    return claim.metadata.creation_timestamp is not None or any(
        c.last_transition_time for c in claim.status.conditions
    )
