"""When Karpenter's disruption loop, drift detection and garbage collection run in the
simulator: the cadence of the three loops, and the passes it skips because they would find
nothing.

Karpenter's disruption controller polls every 10 s (`disruption/controller.go`); a pass that
found nothing to do, with no command queued or waiting for validation, is skipped here until
something it reads changes: the cluster (the bus's version and the insufficient-capacity marks)
or the clock crossing a time it depends on (a NodeClaim's consolidateAfter running out, a minute
boundary while a NodePool has scheduled budgets, a do-not-disrupt duration ending, the
consolidation state's reset). The engine holds the idle loop's chain of requeues
(`Engine.idle`, `_resume_at`); `idle_chains` off runs every link instead (the reference the laws
compare with). `_due_time` is the kept form of `next_disruption_time(due_inputs(...))`, the plain
computation the laws compare it with. Drift detection (`controllers/disruption/drift.py`)
runs at its requeue and when NodePools, EC2NodeClasses or AMI releases change; garbage
collection (`controllers/garbagecollection.py`) is skipped while nothing it reads changed (the
bus's `claims_touched` and the instances EC2 has).

Built by the `World` (`sim/world.py`), which registers the three loops with the engine and
points the bus's `changed` and `claims_changed` at them. What the passes decide goes to the
NodeClaim events through the bus (`sim/bus.py`: `disrupted`, `collected`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping

from gpucap.apis.labels import NODEPOOL
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.controllers.disruption.candidates import (
    consolidate_after_start,
    next_do_not_disrupt_expiry,
)
from gpucap.controllers.disruption.constants import POLLING_PERIOD_S
from gpucap.controllers.disruption.controller import Disruption
from gpucap.controllers.disruption.drift import REQUEUE_AFTER as DRIFT_REQUEUE_S
from gpucap.controllers.disruption.drift import DriftDetection
from gpucap.controllers.garbagecollection import GarbageCollection
from gpucap.runtime.clock import Clock
from gpucap.sim.bus import Bus, Loop
from gpucap.state.cluster import Cluster

__all__ = ["GC_IDLE_RECHECK_S", "DisruptionCadence", "due_inputs", "next_disruption_time"]

# How often a skipped garbage-collection pass looks again whether anything it reads changed
# (the instance collector's own period, garbagecollection.go).
GC_IDLE_RECHECK_S = 10.0
# At most this many runs of an idle disruption loop's chain are skipped at once (`_resume_at`).
_CHAIN_STEPS = 10_000


class DisruptionCadence:
    """The disruption, drift and garbage collection loops (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        disruption: Disruption,
        *,
        aws: AWSCloudProvider,
        ec2: SimulatedEC2,
        drift: DriftDetection,
        garbage: GarbageCollection,
        clock: Clock,
    ) -> None:
        self.bus = bus
        self.engine = bus.engine
        self.cluster = cluster
        self.disruption = disruption
        self.aws = aws
        self.ec2 = ec2
        self.drift = drift
        self.garbage = garbage
        self.clock = clock
        self.disruption_loop = Loop("disruption", self._disrupt)
        self.drift_loop = Loop("drift", self._detect_drift)
        self.collection_loop = Loop("garbagecollection", self._collect)
        self._idle_key: tuple[int, tuple[str, ...]] | None = None  # see `_disrupt`
        self._idle_until = 0.0
        # Whether an idle disruption loop's runs are held by the engine (`_resume_at`); off:
        # each runs and requeues (the reference the laws compare with).
        self.idle_chains = True
        self._gc_idle: tuple[int, int] | None = None  # see `_collect`
        self._could: tuple[int, bool] = (-1, False)  # see `_could_disrupt`
        # The cluster version a skipped pass last spoke for, and when (see `_disrupt`).
        self._held_version = -1
        self._held_at = -math.inf
        # NodeClaim -> (the object, whether it is Drifted=True) (`_could_now`).
        self._drifted: dict[str, tuple[NodeClaim, bool]] = {}
        # What `_next_disruption_time` keeps: the NodePool objects, by name, whether one has a
        # scheduled budget, and per NodeClaim object (by id; the entry holds it) where its
        # consolidateAfter counts from and its length (None: not counting, or run out).
        self._due: (
            tuple[
                tuple[NodePool, ...],
                dict[str, NodePool],
                bool,
                dict[int, tuple[NodeClaim, dt.datetime | None, int]],
            ]
            | None
        ) = None

    def _disrupt(self) -> float | None:
        """Karpenter's disruption loop and queue (`controllers/disruption/controller.py`).

        A pass that found nothing to do, with no command queued or waiting for validation,
        is repeated every 10 s in Karpenter; here it is skipped until something it reads
        changes: the cluster (the version counter and the insufficient-capacity marks) or the
        clock crossing a time it depends on (a NodeClaim's consolidateAfter running out, a
        minute boundary while a NodePool has scheduled budgets). The methods are deterministic
        functions of those, so the skipped passes would have found nothing too."""
        key = (self.bus.version, tuple(self.aws.unavailable.active()))
        if key == self._idle_key and self.bus.now < self._idle_until:
            if not self.idle_chains:
                return min(POLLING_PERIOD_S, self._idle_until - self.bus.now)
            # Every run of the chain of requeues below (10 s, then what is left to the idle
            # time) would come here again until the cluster changes (`Bus.changed` wakes it), a
            # mark expires or the idle time is reached: the engine holds them and runs the
            # one at which the first of those two clocks runs out (`_resume_at`).
            self.engine.idle(self.disruption_loop, POLLING_PERIOD_S, resume_at=self._resume_at())
            return None
        if (
            not self.disruption.commands()
            and self.disruption.waiting() is None
            and not self._could_disrupt()
        ):
            # No NodePool consolidates (consolidateAfter Never everywhere) and nothing drifted:
            # every method's candidates are empty, the pass would find nothing. What it would
            # say is held back (it reads the cluster only) is said when the cluster changed,
            # at most once per polling period, as Karpenter's 10-s passes say it.
            if self._held_version != self.bus.version:
                wait = self._held_at + POLLING_PERIOD_S - self.bus.now
                if wait > 0:
                    return wait
                self._held_version, self._held_at = self.bus.version, self.bus.now
                self.bus.disrupted(self.disruption.held_back())
            if self._idle_key is None or self._idle_key[0] != self.bus.version:
                # Until the version changes, every run every 10 s would come here again (the
                # check above needs this version; the queue and the memo of `_could_disrupt`
                # stay as they are): the engine holds them until `Bus.changed` wakes it.
                self.engine.idle(self.disruption_loop, POLLING_PERIOD_S)
                return None
            return POLLING_PERIOD_S
        polls = self.clock.monotonic() >= self.disruption.next_poll
        result = self.disruption.reconcile()
        self.bus.disrupted(result)
        idle = (
            polls
            and result.decided is None
            and not result.deleting
            and not result.abandoned
            and not self.disruption.commands()
            and self.disruption.waiting() is None
        )
        if idle:
            self._idle_key = (self.bus.version, tuple(self.aws.unavailable.active()))
            self._idle_until = self._next_disruption_time()
        else:
            self._idle_key = None
        return result.requeue_after if result.requeue_after is not None else POLLING_PERIOD_S

    def _resume_at(self) -> float | None:
        """The first run of an idle disruption loop's chain of requeues (`_disrupt`: 10 s
        while more is left to `_idle_until`, then what is left, each added to the engine's
        time as the engine adds a requeue) at which the run may not return at once: the idle
        time reached, or the clock at or past the soonest insufficient-capacity mark's end
        (the marks are part of the pass's key; new marks come with a change, which wakes the
        loop). None: neither ever (the plain 10-s grid of `Engine.idle`). A long chain is
        cut at `_CHAIN_STEPS` runs: that run then finds the same and idles again."""
        until = self._idle_until
        expiry = self.aws.unavailable.next_expiry()
        if expiry is None and math.isinf(until):
            return None
        t = self.bus.now
        for _ in range(_CHAIN_STEPS):
            t = t + min(POLLING_PERIOD_S, until - t)
            if t >= until or (expiry is not None and self.engine.clock_at(t) >= expiry):
                break
        return t

    def _could_disrupt(self) -> bool:
        """Whether some method could have a candidate: a NodePool whose consolidateAfter is
        not Never (emptiness, consolidation), or a drifted NodeClaim (drift). Memoised per
        cluster version (both are cluster state)."""
        if self._could[0] != self.bus.version:
            self._could = (self.bus.version, self._could_now())
        return self._could[1]

    def _could_now(self) -> bool:
        if any(
            np.spec.disruption.consolidate_after_seconds is not None
            for np in self.cluster.nodepools()
        ):
            return True
        # Whether a NodeClaim is drifted, per NodeClaim object (frozen models).
        seen: dict[str, tuple[NodeClaim, bool]] = {}
        found = False
        for claim in self.cluster.node_claims():
            name = claim.metadata.name
            kept = self._drifted.get(name)
            if kept is None or kept[0] is not claim:
                conditions = claim.status.conditions
                drifted = any(c.type == "Drifted" and c.status == "True" for c in conditions)
                kept = (claim, drifted)
            seen[name] = kept
            found = found or kept[1]
        self._drifted = seen
        return found

    def _next_disruption_time(self) -> float:
        """The next time an idle disruption pass could find something without the cluster
        changing (see `_disrupt`): the soonest of `_due_time` and, when the last pass skipped
        a method as consolidated, the consolidation state's reset (`Disruption.revisit_at`):
        that method runs again then, and what turned consolidatable meanwhile (the clock
        alone) is looked at."""
        soonest = self._due_time()
        now = self.clock.now()
        # A pod's do-not-disrupt with a duration running out makes its node a candidate
        # (`IsDoNotDisruptActive`): the clock alone changes what the pass finds.
        ends = next_do_not_disrupt_expiry(self.cluster, now)
        if ends is not None:
            soonest = min(soonest, self.bus.now + (ends - now).total_seconds())
        revisit = self.disruption.revisit_at()
        if revisit is not None:
            soonest = min(soonest, self.bus.now + max(0.0, revisit - self.clock.monotonic()))
        return soonest

    def _due_time(self) -> float:
        """The next time the clock alone changes what a disruption pass reads of the cluster:
        `next_disruption_time` of `due_inputs`, from what is kept.
        Per NodeClaim object (frozen) where its consolidateAfter counts from, while the
        NodePool objects are the same; a NodeClaim whose consolidateAfter has run out is not
        looked at again until it changes (the clock only moves on, and the due time is
        non-increasing in it: the difference of datetimes is exact and `total_seconds` and
        the additions are monotone), so an idle pass walks the NodeClaims by identity only.
        The arithmetic for the others is `next_disruption_time`'s, on every call."""
        now = self.clock.now()
        seconds = self.bus.now
        pools = tuple(self.cluster.nodepools())
        kept = self._due
        if (
            kept is None
            or len(kept[0]) != len(pools)
            or any(a is not b for a, b in zip(kept[0], pools, strict=True))
        ):
            by_name = {np.name: np for np in pools}
            kept = self._due = (pools, by_name, _scheduled(by_name.values()), {})
        _, by_name, scheduled, starts = kept
        claims = self.cluster.node_claims()
        if len(starts) > 4 * len(claims) + 64:
            starts.clear()  # entries of NodeClaims gone (each holds its object)
        soonest = (seconds // 60 + 1) * 60 if scheduled else float("inf")
        for claim in claims:
            entry = starts.get(id(claim))
            if entry is None or entry[0] is not claim:
                entry = starts[id(claim)] = (claim, *_due_of(claim, by_name))
            start = entry[1]
            if start is None:
                continue
            due = (start - now).total_seconds() + entry[2]
            if due > 0:
                soonest = min(soonest, seconds + due)
            else:
                starts[id(claim)] = (claim, None, 0)  # run out, and stays so
        return soonest

    def _detect_drift(self) -> float | None:
        for name, reason in self.drift.reconcile():
            self.bus.emit("NodeClaimDrifted", nodeClaim=name, reason=reason)
            self.engine.trigger(self.disruption_loop)
        return DRIFT_REQUEUE_S

    def _collect(self) -> float | None:
        # What garbage collection reads: the cluster's NodeClaims and Nodes and the instances
        # EC2 has; every change to them goes through the places that bump the bus's `claims_touched`
        # (launch, registration, deletion, termination) or adds an instance. Unchanged since a
        # pass that collected nothing: this pass would collect nothing either.
        seen = (self.bus.claims_touched, len(self.ec2.instances))
        if seen == self._gc_idle:
            # Every run every 10 s would come here again until `Bus.claims_changed` (instances are
            # only created by launches, which it follows): the engine holds them until then.
            self.engine.idle(self.collection_loop, GC_IDLE_RECHECK_S)
            return None
        collected = self.garbage.collect()
        self._gc_idle = (
            seen
            if not (collected.instances or collected.node_claims or collected.released)
            else None
        )
        self.bus.collected(collected)
        return self.garbage.requeue_after()


def due_inputs(
    claims: Iterable[NodeClaim], nodepools: Iterable[NodePool]
) -> tuple[bool, tuple[tuple[dt.datetime, int], ...]]:
    """What `next_disruption_time` reads of the cluster: whether a NodePool has a scheduled
    budget, and per NodeClaim of a NodePool with a non-zero consolidateAfter, where that counts
    from and its length in seconds (in the NodeClaims' order; NodeClaims not Initialized and
    of unknown NodePools left out). The reference `DisruptionCadence._due_time` keeps."""
    pools = {np.name: np for np in nodepools}
    starts: list[tuple[dt.datetime, int]] = []
    for claim in claims:
        start, after = _due_of(claim, pools)
        if start is not None:
            starts.append((start, after))
    return _scheduled(pools.values()), tuple(starts)


def _scheduled(nodepools: Iterable[NodePool]) -> bool:
    return any(b.schedule for np in nodepools for b in (np.spec.disruption.budgets or []))


def _due_of(claim: NodeClaim, pools: Mapping[str, NodePool]) -> tuple[dt.datetime | None, int]:
    """Where the NodeClaim's consolidateAfter counts from and its length (None, 0: it does
    not count: unknown NodePool, Never or zero, not Initialized)."""
    np = pools.get(claim.metadata.labels.get(NODEPOOL, ""))
    if np is None:
        return None, 0
    after = np.spec.disruption.consolidate_after_seconds
    if not after:
        return None, 0
    start = consolidate_after_start(claim)
    return (start, after) if start is not None else (None, 0)


def next_disruption_time(
    now: dt.datetime,
    seconds: float,
    scheduled: bool,
    starts: Iterable[tuple[dt.datetime, int]],
) -> float:
    """The next time (seconds since the start; `seconds` is now) at which an idle disruption
    pass could find something the cluster did not change: the next minute boundary while a
    NodePool has a scheduled budget, the soonest consolidateAfter still running
    (`due_inputs`); infinity when none."""
    soonest = (seconds // 60 + 1) * 60 if scheduled else float("inf")
    for start, after in starts:
        due = (start - now).total_seconds() + after
        if due > 0:
            soonest = min(soonest, seconds + due)
    return soonest
