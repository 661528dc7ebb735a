"""Karpenter's scheduling simulation: pending pods in, planned NodeClaims and reasons out.

This is `Scheduler.Solve` of kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/
scheduler.go` (with `queue.go`) @ 2266468104f3, pure:
- pods are queued by CPU then memory request (descending), then creation time and UID;
- each pod goes to the first existing node that takes it (initialized first, then by name), else
  to the emptiest in-flight NodeClaim that takes it, else to a new NodeClaim from the first
  NodePool (by weight, then name descending) that can take it; a pod that fails is relaxed one
  preference at a time and retried, and requeued when nothing is left to relax; the loop stops
  when a whole pass makes no progress;
- a NodeClaim keeps every instance type that still fits all its pods (it does not pick one);
  NodePool limits are checked against instance-type capacity and reduced pessimistically by the
  largest option of each new NodeClaim;
- after the loop each NodeClaim is finalized: its options ordered by price and cut to 600,
  minValues re-checked, and DaemonSet overhead added to its requests.

The placement targets are Karpenter's own files: `existingnode.py`, `nodeclaim.py` (with the
type filter, `filter.py`) and `nodeclaimtemplate.py`; what a build starts from is kept across
passes by `passcache.py`. Where Go leaves an order undefined (map iteration, unstable sorts,
random `Any()`), gpucap uses a total order (names, sorted domains), so the same input gives the
same plan every time. Called by `gpucap plan`, the provisioner and the disruption simulations.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    NODEPOOL,
)
from gpucap.apis.nodepool import NodePool
from gpucap.apis.quantity import base_units
from gpucap.apis.workloads import DaemonSet
from gpucap.scheduling import preferences
from gpucap.scheduling.existingnode import ExistingNode, StateNode
from gpucap.scheduling.explanation import PoolExplanation
from gpucap.scheduling.filter import (
    CLAIM_STEPS,
    NODE_CLASS,
    NODEPOOL_REQUIREMENTS,
    WITHIN_LIMITS,
    FilterInput,
    TracedStep,
    run_steps,
)
from gpucap.scheduling.instancetypes import (
    InstanceType,
    InstanceTypeTable,
    Mask,
    OfferingKey,
    offering_key,
    satisfies_min_values,
)
from gpucap.scheduling.nodeclaim import NodeClaim, template_refusal
from gpucap.scheduling.nodeclaimtemplate import (
    DaemonOverheadGroup,
    NodeClaimTemplate,
    custom_labels,
)
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.passcache import ENTRY_ORDER, NodeEntry, PassCache
from gpucap.scheduling.podclasses import PERMANENT, Hold, Refusals, class_key
from gpucap.scheduling.poddata import PodData, pod_data, pod_requirements, validate_pod
from gpucap.scheduling.refusal import (
    NODE_LIMITS_EXHAUSTED,
    TYPES_EXCEED_LIMITS,
    Cause,
    PodError,
    Refusal,
    SchedulingError,
    limited_pools,
)
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.reservationmanager import ReservationManager
from gpucap.scheduling.resources import Resources, add, fits
from gpucap.scheduling.topology import CountedPod, Topology, has_anti_affinity

__all__ = ["PoolInput", "Results", "Scheduler", "solve"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_DOES_NOT_EXIST_NODEPOOL = Requirement.new(NODEPOOL, "DoesNotExist")
# A pod class starts keeping its candidate NodeClaims after a scan that tried this many.
_KEEP_CANDIDATES = 16
# Requests this large skip no bucket (`InstanceTypeTable.fits` caps requests at 2**63 - 1,
# which would make the headroom test inexact).
_ROOM_BOUND = 2**62
# In a consolidation simulation, a node under its consolidateAfter refusing a pod moving off a
# candidate. Not kept by the pod classes (no `Hold`): the refusal is the pod's own, by key.
_HELD_BACK = Refusal("node is under its NodePool's consolidateAfter")
# `explain` filters with the NodePool's limits, not what is left of them: its line says so.
_WITHIN_LIMITS_IF_EMPTY = replace(WITHIN_LIMITS, name=f"{WITHIN_LIMITS.name} (if it were empty)")


@dataclass(frozen=True, slots=True)
class PoolInput:
    """A Ready NodePool and the instance types its node class offers (from the cloud provider)."""

    nodepool: NodePool
    instance_types: Sequence[InstanceType]


@dataclass(slots=True)
class Results:
    """What one scheduling pass decided."""

    new_node_claims: list[NodeClaim]
    existing_nodes: list[ExistingNode]
    pod_errors: dict[str, PodError]  # pod key -> why, for pods that did not schedule
    pool_notes: dict[str, str]  # NodePool -> why it took no part (no compatible instance type)
    pods: dict[str, Pod]  # pod key -> pod, every pod considered
    # The solve stopped once it planned more NodeClaims than its caller allowed (`solve`'s
    # `stop_past`): the claims are not finalized and the pod errors are not complete.
    stopped: bool = False
    # NodePool -> what was left of its limits when the pass ended (Karpenter's
    # `remainingResources`; only pools with limits): what `plan --explain` says a limit held.
    remaining: Mapping[str, Resources] = field(default_factory=dict)

    def pods_on_existing_nodes(self) -> dict[str, list[str]]:
        return {n.name: [p.key for p in n.pods] for n in self.existing_nodes if n.pods}

    def limited_pools(self, keys: Iterable[str] | None = None) -> list[str]:
        """The NodePools whose limits stopped a pod that did not schedule (of `keys` only,
        when given), sorted: read from the errors' causes, never from their text."""
        errors = self.pod_errors
        if keys is None:
            return limited_pools(errors.values())
        return limited_pools(errors[k] for k in keys if k in errors)


class Scheduler:
    """One scheduling pass over a snapshot (Karpenter's `Scheduler`)."""

    def __init__(
        self,
        pools: Sequence[PoolInput],
        *,
        state_nodes: Sequence[StateNode] = (),
        daemonsets: Sequence[DaemonSet] = (),
        pending_pods: Sequence[Pod] = (),
        options: SchedulingOptions | None = None,
        cache: PassCache | None = None,
        pod_classes: bool = True,
    ) -> None:
        """Karpenter's `NewScheduler`. `cache`: shared by the caller's passes (the
        provisioner's); without one, this pass makes its own (the same answers)."""
        # `pod_classes=False` tries every pod on every target, as Karpenter does; the
        # equivalence test compares the two (the plans must be identical).
        self.pod_classes = pod_classes
        self.options = options or SchedulingOptions()
        self.relax_min_values = self.options.min_values_policy == "BestEffort"
        cache = cache if cache is not None else PassCache()
        # Pending pods' requests per PodSpec object, kept by the cache for its passes.
        self._requests_of = cache.pod_requests
        self.daemons, daemon_keys, daemon_serial = cache.daemons_of(daemonsets)
        ordered = sorted(
            (p for p in pools if not p.nodepool.is_static),
            key=lambda p: (-p.nodepool.effective_weight, _desc(p.nodepool.name)),
        )
        # Static NodePools never take part (their nodes come in as state nodes); with no
        # dynamic pool at all, Karpenter's provisioner does not schedule (`NewScheduler`).
        self.dynamic_pools = bool(ordered)
        self.templates, self.pool_notes = cache.templates(
            [(p.nodepool, p.instance_types) for p in ordered],
            self.daemons,
            daemon_keys,
            daemon_serial,
            self.relax_min_values,
        )
        self.tolerate_prefer_no_schedule = any(
            t.effect == "PreferNoSchedule"
            for p in ordered
            for t in p.nodepool.spec.template.spec.taints
        )
        live = [n for n in state_nodes if not n.marked_for_deletion]
        entries, self.topology = _topology(
            cache,
            pools,
            live,
            pending_pods=pending_pods,
            daemons=self.daemons,
            daemon_serial=daemon_serial,
            options=self.options,
        )
        self.remaining_resources: dict[str, Resources] = _limits(pools, live, entries)
        # Initialized nodes first, then by name (a stable sort of the entries' kept keys).
        # `remaining` is replaced, never changed in place, and the host ports are copied
        # before a pod adds to them (`ExistingNode.add`): both are shared with the entry.
        # A consolidation simulation builds the nodes under consolidateAfter as such
        # (Karpenter's `IsConsolidationSimulation`, scheduler.go `calculateExistingNodeClaims`).
        held = self.options.held_back if self.options.consolidation else frozenset()
        self.existing: list[ExistingNode] = [
            ExistingNode(
                e.state,
                e.remaining,
                e.requirements,
                e.taints,
                e.host_ports,
                under_consolidate_after=e.state.name in held,
            )
            for e in sorted(entries, key=ENTRY_ORDER)
        ]
        # The pods those nodes refuse (none when no node is held back).
        self._movers = self.options.movers if held else frozenset()
        self.new_node_claims: list[NodeClaim] = []
        # The pass's reservations (`ReservationManager`), None when no pool offers one.
        manager = ReservationManager(p.instance_types for p in ordered)
        self.reservations: ReservationManager | None = manager if manager else None
        self.strict_reservations = self.options.reserved_offering_mode == "Strict"
        # Planned NodeClaims by pod count, each bucket in creation order (see `_add`).
        self._by_count: dict[int, list[NodeClaim]] = {}
        # Per bucket, an upper bound of what its claims have left (see `_bucket_full`).
        self._room: dict[int, dict[str, int]] = {}
        self._seq: dict[int, int] = {}
        # Per bucket, the creation numbers of its claims (sorted, as the bucket is).
        self._seqs: dict[int, list[int]] = {}
        # Per pod class, the targets that refused it (`podclasses.py`).
        self._refusals: dict[object, Refusals] = {}
        # Per topology part of a class, the refusals only topology decided (shared).
        self._topology_refusals: dict[object, dict[int, tuple[Hold, int]]] = {}
        self._hostnames = 0
        self._pod_data: dict[str, PodData] = {}
        # NodePool -> (its remaining limits, the types within them, whether any is)
        self._within: dict[str, tuple[Resources, Mask, bool]] = {}
        self._limit_errors: dict[tuple[str, Cause], PodError] = {}

    # ---- the main loop -----------------------------------------------------------------------
    def solve(self, pods: Sequence[Pod], *, stop_past: int | None = None) -> Results:
        """Schedule `pods` (Karpenter's `Solve`). `stop_past`: stop as soon as more than this
        many new NodeClaims are planned (`Results.stopped`), for a caller that acts on no
        such plan (consolidation). Claims are only added while solving and, when no NodePool
        has minValues (or the policy relaxes them), finalizing keeps them all: so a stopped
        solve is one whose full plan has more than `stop_past` claims. Where finalizing may
        drop a claim (minValues), the solve runs to the end."""
        if (
            stop_past is not None
            and not self.relax_min_values
            and any(t.requirements.has_min_values() for t in self.templates)
        ):
            stop_past = None
        errors: dict[str, PodError] = {}
        considered: dict[str, Pod] = {}
        # Each pod with its key, computed once (a relaxed copy keeps the pod's metadata, so
        # its key too).
        entries: list[tuple[Pod, str]] = []
        order: dict[str, int] = {}
        for i, pod in enumerate(pods):
            key = pod.key
            considered[key] = pod
            invalid = validate_pod(pod)
            if invalid is not None:
                errors[key] = PodError(None, Cause.INVALID_POD, invalid)
                continue
            if _DOES_NOT_EXIST_NODEPOOL in pod_requirements(pod).values():
                continue  # the pod opted out of Karpenter: ignored silently
            order[key] = i
            self._update(pod, key)
            entries.append((pod, key))
        entries.sort(key=lambda e: self._queue_key(e[0], e[1], order[e[1]]))
        if any(v < 0 for d in self._pod_data.values() for v in d.requests.values()):
            # A negative request (only from code, never from a manifest) would let a target's
            # room grow back, and "resources only shrink" is what lasting refusals rest on.
            self.pod_classes = False
        queue = deque(entries)
        last_len: dict[str, int] = {}
        while queue:
            pod, key = queue[0]
            if last_len.get(key) == len(queue):
                break  # a full cycle without progress
            queue.popleft()
            error = self._try_schedule(pod, key)
            if error is None:
                errors.pop(key, None)
                if stop_past is not None and len(self.new_node_claims) > stop_past:
                    return Results(
                        self.new_node_claims,
                        self.existing,
                        errors,
                        self.pool_notes,
                        considered,
                        stopped=True,
                    )
                continue
            errors[key] = error
            self._update(pod, key)
            queue.append((pod, key))
            last_len[key] = len(queue)
        self._finalize(errors)
        return Results(
            self.new_node_claims,
            self.existing,
            errors,
            self.pool_notes,
            considered,
            remaining=dict(self.remaining_resources),
        )

    def _queue_key(self, pod: Pod, key: str, index: int) -> tuple[int, int, dt.datetime, int, str]:
        # Karpenter sorts by creationTimestamp then UID; manifests have no timestamps, and the
        # order they list pods in is the order `kubectl apply` would create them.
        data = self._pod_data[key]
        created = pod.metadata.creation_timestamp or _EPOCH
        return (
            -data.requests.get("cpu", 0),
            -data.requests.get("memory", 0),
            created,
            index,
            pod.metadata.uid or "",
        )

    def _update(self, pod: Pod, key: str) -> None:
        self.topology.update(pod)
        self._pod_data[key] = pod_data(pod, self.options, self._requests_of)

    def _try_schedule(self, pod: Pod, key: str) -> PodError | None:
        current = pod
        while True:
            try:
                self._add(current, key)
                return None
            except SchedulingError as err:
                if err.cause is Cause.RESERVED_OFFERING:
                    # The pod may schedule as it is once a reservation has room (later in
                    # this pass or the next): its preferences are not relaxed (`trySchedule`).
                    return err.pod_error()
                relaxed = preferences.relax(
                    current, tolerate_prefer_no_schedule_taints=self.tolerate_prefer_no_schedule
                )
                if relaxed is None:
                    return err.pod_error()
                current = relaxed
                self._update(current, key)

    def _refusals_of(self, pod: Pod, data: PodData) -> Refusals | None:
        """The refusals kept for `pod`'s class (None: the pod is tried everywhere)."""
        if not self.pod_classes:
            return None
        keys = class_key(
            pod,
            data.requests,
            data.requirements,
            data.strict_requirements,
            self.topology.owned.get(pod.metadata.uid or pod.key, ()),
            host_ports=bool(data.ports),
        )
        if keys is None:
            return None
        refusals = self._refusals.get(keys[1])
        if refusals is None:
            shared = self._topology_refusals.setdefault(keys[0], {})
            refusals = self._refusals[keys[1]] = Refusals(shared=shared)
        else:
            refusals.revalidate()
        return refusals

    def _add(self, pod: Pod, key: str) -> None:
        data = self._pod_data[key]
        # Targets a pod of the same class was refused by, for a reason that still holds, are
        # skipped: they would refuse this pod too, so the first that accepts it is the same.
        refusals = self._refusals_of(pod, data)
        existing = self.existing

        def cannot_fit(target: object) -> bool:
            # The class's requests cannot fit the target (lasting: see `podclasses.py`).
            if isinstance(target, NodeClaim):
                return not target.may_fit(data.requests)
            assert isinstance(target, ExistingNode)
            return not fits(data.requests, target.remaining)

        # A pod moving off a candidate skips the nodes under their consolidateAfter
        # (Karpenter's `addToExistingNode`); never true outside a consolidation simulation.
        mover = bool(self._movers) and key in self._movers
        start = refusals.existing_prefix if refusals is not None else 0
        for i in range(start, len(existing)):
            node = existing[i]
            if refusals is not None and refusals.refused(node):
                continue
            reqs = (
                _HELD_BACK
                if mover and node.under_consolidate_after
                else node.try_add(pod, data, self.topology)
            )
            if isinstance(reqs, Refusal):
                if refusals is not None:
                    refusals.note(node, reqs.hold)
                continue
            node.add(pod, data, reqs, self.topology)
            if refusals is not None:
                refusals.extend(existing, cannot_fit)
            return
        if refusals is not None:
            refusals.extend(existing, cannot_fit)
        # Emptiest planned NodeClaim first (Go's sort.Slice is unstable; gpucap breaks ties by
        # creation order). Claims are kept in buckets by pod count, so no sort per pod.
        claims = self.new_node_claims

        def pods_on(claim: object) -> int:
            assert isinstance(claim, NodeClaim)
            return len(claim.pods)  # its bucket

        def take(claim: object) -> bool:
            assert isinstance(claim, NodeClaim)
            return self._try_claim(claim, pod, data, refusals)

        walked = refusals.walk(claims, pods_on, take) if refusals is not None else None
        if walked:
            return
        if walked is None:
            tried = 0
            placed = False
            for count in sorted(self._by_count):
                if self._bucket_full(count, data.requests):
                    continue
                for claim in self._by_count[count]:
                    tried += 1
                    if self._try_claim(claim, pod, data, refusals):
                        placed = True
                        break
                if placed:
                    break
            if refusals is not None and tried >= _KEEP_CANDIDATES:
                # Many refused: from now on the class walks the claims that may take it.
                refusals.keep_candidates(claims, pods_on)
            if placed:
                return
        if not self.templates:
            none = Cause.NO_TEMPLATES if self.dynamic_pools else Cause.NO_DYNAMIC_NODEPOOLS
            raise SchedulingError(PodError.of(none))
        errors: list[PodError] = []
        for template in self.templates:
            # A pool out of limits refuses every pod until one of its claims changes them:
            # answered from the memo, without building a claim (pods x pools otherwise).
            full = self._limits_exhausted(template)
            if full is not None:
                errors.append(full)
                continue
            try:
                self._add_to_new_node_claim(template, pod, data)
                return
            except SchedulingError as err:
                # Formatted now: a topology message reads counts that later pods change.
                errors.append(err.pod_error(template.name))
                if err.cause is Cause.RESERVED_OFFERING:
                    # A NodePool with a reservation the pod could use: no lower-weight pool
                    # is tried (`addToNewNodeClaim`); the pod waits for the reservation.
                    raise SchedulingError(err.pod_error(template.name), cause=err.cause) from err
        raise SchedulingError(PodError.of_nodepools(errors))

    def _try_claim(
        self, claim: NodeClaim, pod: Pod, data: PodData, refusals: Refusals | None
    ) -> bool:
        """Add `pod` to the planned `claim` if it takes it (noting why it refused)."""
        if refusals is not None and refusals.refused(claim):
            return False
        if self.topology.rejects_host(pod, claim.hostname):
            if refusals is not None:
                refusals.note_topology(claim)
            return False
        if not claim.may_fit(data.requests):
            if refusals is not None:
                refusals.note(claim, PERMANENT)
            return False
        group = self.topology.rejects_domains(pod, data.strict_requirements, claim.requirements)
        if group is not None:
            if refusals is not None:
                refusals.note(claim, group)
            return False
        try:
            reqs, its, reserve = claim.can_add(pod, data, self.topology, relax_min_values=False)
        except SchedulingError as err:
            if refusals is not None:
                refusals.note(claim, err.hold)
            return False
        count = len(claim.pods)
        claim.add(pod, data, reqs, its, self.topology, reserve=reserve)
        self._rebucket(claim, count)
        return True

    def _within_limits(
        self, template: NodeClaimTemplate, remaining: Resources
    ) -> tuple[Mask, bool]:
        """The template's types within the pool's remaining limits, and whether there is any.
        Kept until the limits change (each change is a new dict)."""
        cached = self._within.get(template.name)
        if cached is None or cached[0] is not remaining:
            assert template.table is not None
            within, some = template.table.within(remaining)
            cached = self._within[template.name] = (remaining, within, some)
        return cached[1], cached[2]

    def _limits_exhausted(self, template: NodeClaimTemplate) -> PodError | None:
        """Why the pool's limits refuse any new NodeClaim (None when they do not)."""
        remaining = self.remaining_resources.get(template.name)
        if remaining is None:
            return None
        if remaining.get("nodes") == 0 and "nodes" in remaining:
            cause = Cause.NODE_LIMITS_EXHAUSTED
        elif not self._within_limits(template, remaining)[1]:
            cause = Cause.TYPES_EXCEED_LIMITS
        else:
            return None
        # One value per pool and cause (it is immutable): pods x pools otherwise.
        error = self._limit_errors.get((template.name, cause))
        if error is None:
            error = self._limit_errors[template.name, cause] = PodError.of(cause, template.name)
        return error

    def _widen_room(self, count: int, claim: NodeClaim) -> None:
        """Raise bucket `count`'s room to cover `claim`, which is joining it with its pods."""
        room = self._room.setdefault(count, {})
        for k, v in claim.headroom().items():
            if v > room.get(k, 0):
                room[k] = v

    def _bucket_full(self, count: int, requests: Resources) -> bool:
        """True when no claim of bucket `count` can hold `requests` (`NodeClaim.may_fit` would
        refuse each). The room is an upper bound, per resource, of the claims' headroom: it
        only grows while the bucket lives, and a claim's headroom only shrinks as it takes pods,
        which moves it to the next bucket. So a pod that needs more than the room skips the
        bucket in one look instead of one `may_fit` per full claim (pods x claims)."""
        room = self._room.get(count, {})
        return any(0 < v < _ROOM_BOUND and v > room.get(k, 0) for k, v in requests.items())

    def _rebucket(self, claim: NodeClaim, old_count: int) -> None:
        seq = self._seq[id(claim)]
        bucket, seqs = self._by_count[old_count], self._seqs[old_count]
        i = bisect.bisect_left(seqs, seq)
        del bucket[i], seqs[i]
        if not bucket:
            del self._by_count[old_count], self._seqs[old_count], self._room[old_count]
        self._widen_room(old_count + 1, claim)
        target = self._by_count.setdefault(old_count + 1, [])
        seqs = self._seqs.setdefault(old_count + 1, [])
        i = bisect.bisect(seqs, seq)
        target.insert(i, claim)
        seqs.insert(i, seq)

    def _add_to_new_node_claim(self, template: NodeClaimTemplate, pod: Pod, data: PodData) -> None:
        table = template.table
        assert table is not None
        options = np.ones(len(table.types), dtype=np.bool_)
        remaining = self.remaining_resources.get(template.name)
        if remaining is not None:
            if remaining.get("nodes") == 0 and "nodes" in remaining:
                raise SchedulingError(NODE_LIMITS_EXHAUSTED, cause=Cause.NODE_LIMITS_EXHAUSTED)
            within, some = self._within_limits(template, remaining)
            if not some:
                raise SchedulingError(TYPES_EXCEED_LIMITS, cause=Cause.TYPES_EXCEED_LIMITS)
            options = within.copy()
        self._hostnames += 1
        hostname = f"hostname-placeholder-{self._hostnames:04d}"
        claim = NodeClaim(
            template=template,
            hostname=hostname,
            requirements=template.requirements.add(Requirement.new(HOSTNAME, "In", [hostname])),
            options=options,
            daemon_groups=[
                DaemonOverheadGroup(g.instance_types, g.overhead, g.host_ports.copy(), g.mask)
                for g in template.daemon_groups
            ],
            reservations=self.reservations,
            strict_reservations=self.strict_reservations,
        )
        reqs, fitting, reserve = claim.can_add(
            pod, data, self.topology, relax_min_values=self.relax_min_values
        )
        claim.min_values_relaxed = any(
            (orig := template.requirements.get(k)) is not None
            and orig.min_values is not None
            and r.min_values is not None
            and r.min_values < orig.min_values
            for k, r in reqs.items()
        )
        claim.add(pod, data, reqs, fitting, self.topology, reserve=reserve)
        self.new_node_claims.append(claim)
        self._seq[id(claim)] = len(self._seq)
        self._widen_room(1, claim)
        self._by_count.setdefault(1, []).append(claim)
        self._seqs.setdefault(1, []).append(self._seq[id(claim)])
        if remaining is not None:
            # Pessimistic: the NodeClaim may become its largest option.
            largest = table.max_capacity(claim.options, remaining)
            self.remaining_resources[template.name] = {
                k: v - largest.get(k, 0) for k, v in remaining.items()
            }

    # ---- explanation ---------------------------------------------------------------------------
    def explain(self, pod: Pod, pools: Sequence[PoolInput]) -> list[PoolExplanation]:
        """NodePool by NodePool, whether a new NodeClaim could take `pod` on its own, and how
        many instance types survive each of the scheduler's filters (for `gpucap plan
        --explain`): the steps of `filter.SCHEDULER_STEPS`, traced, with the template's
        taints and requirements checked where `NodeClaim.can_add` checks them."""
        data = pod_data(pod, self.options, self._requests_of)
        templates = {t.name: t for t in self.templates}
        # One table per type list (the pools of a node class share theirs).
        tables: dict[int, InstanceTypeTable] = {}
        out: list[PoolExplanation] = []
        ordered = sorted(
            pools, key=lambda p: (-p.nodepool.effective_weight, _desc(p.nodepool.name))
        )
        for pool in ordered:
            name, weight = pool.nodepool.name, pool.nodepool.effective_weight
            table = tables.get(id(pool.instance_types))
            if table is None:
                table = tables[id(pool.instance_types)] = InstanceTypeTable(pool.instance_types)
            everything = np.ones(len(table.types), dtype=np.bool_)
            template = templates.get(name)
            if template is None:
                # No template: static, or the NodePool's step left nothing (its note says why).
                _, head = run_steps(
                    (NODE_CLASS,), FilterInput(table, Requirements()), everything, trace=True
                )
                verdict = self.pool_notes.get(name, "static NodePool (replicas set)")
                out.append(_explanation(name, weight, head, verdict))
                continue
            pool_input = FilterInput(
                table, template.requirements, relax_min_values=self.relax_min_values
            )
            _, head = run_steps(
                (NODE_CLASS, NODEPOOL_REQUIREMENTS), pool_input, everything, trace=True
            )
            refused = template_refusal(template.taints, template.requirements, pod, data)
            if refused is not None:
                out.append(_explanation(name, weight, head, str(refused)))
                continue
            # The rest over the template's table: the types the NodePool's step kept.
            assert template.table is not None
            limits = pool.nodepool.spec.limits
            pod_input = FilterInput(
                template.table,
                template.requirements.merge(data.requirements),
                pod,
                template.daemon_groups,
                data.requests,
                data.ports,
                limits=base_units(limits) if limits is not None else None,
                pod_reqs=data.requirements,
            )
            steps = CLAIM_STEPS if limits is None else (*CLAIM_STEPS, _WITHIN_LIMITS_IF_EMPTY)
            left, tail = run_steps(
                steps, pod_input, np.ones(len(template.table.types), dtype=np.bool_), trace=True
            )
            verdict = "usable" if left.any() else "no instance type left"
            out.append(_explanation(name, weight, [*head, *tail], verdict))
        return out

    # ---- finalisation ------------------------------------------------------------------------
    def _finalize(self, errors: dict[str, PodError]) -> None:
        counters: dict[str, int] = {}
        kept: list[NodeClaim] = []
        # Claims narrow to a few distinct option sets: the price order, the instance-type
        # requirement and the capacity types are functions of (table, options, the offering
        # requirements, the instance-type minValues), computed once per such key.
        ordered_by: dict[
            tuple[int, bytes, OfferingKey],
            tuple[np.ndarray[Any, np.dtype[np.intp]], list[InstanceType]],
        ] = {}
        finished_by: dict[
            tuple[int, bytes, OfferingKey, int | None],
            tuple[Requirement, list[str]],
        ] = {}
        for claim in sorted(self.new_node_claims, key=lambda c: c.hostname):
            claim.requirements = claim.requirements.without(HOSTNAME)
            claim.requests = add(claim.requests, _min_daemon_overhead(claim))
            table = claim.table
            key = (id(table), claim.options.tobytes(), offering_key(claim.requirements))
            hit = ordered_by.get(key)
            if hit is None:
                index = table.order_by_price_index(claim.options, claim.requirements)[
                    : self.options.max_instance_types
                ]
                types = table.types
                hit = ordered_by[key] = (index, [types[i] for i in index.tolist()])
            index, shared = hit
            ordered = list(shared)
            _, unmet = satisfies_min_values(ordered, claim.requirements)
            if unmet and not self.relax_min_values:
                error = PodError(
                    claim.nodepool,
                    Cause.MIN_VALUES,
                    "pod didn't schedule because NodePool couldn't meet minValues "
                    f'requirements (NodePool="{claim.nodepool}")',
                )
                for pod in claim.pods:
                    errors[pod.key] = error
                continue
            claim.final_types = ordered
            min_values = claim.requirements.get_or_exists(INSTANCE_TYPE).min_values
            finished_key = (*key, min_values)
            finished = finished_by.get(finished_key)
            if finished is None:
                names = Requirement.new(
                    INSTANCE_TYPE, "In", [it.name for it in ordered], min_values=min_values
                )
                # Adding the instance-type requirement leaves the zone and capacity type as
                # they are, so the capacity types read the same two requirements.
                finished = finished_by[finished_key] = (
                    names,
                    table.capacity_types(index, claim.requirements.add(names)),
                )
            names, capacity_types = finished
            claim.requirements = claim.requirements.add(names)
            if capacity_types:
                claim.requirements = claim.requirements.add(
                    Requirement.new(CAPACITY_TYPE, "In", capacity_types)
                )
            if claim.reserved:
                # `FinalizeScheduling`: a claim holding reservations launches into one of them
                # (the capacity type replaced, not narrowed, by `reserved`).
                claim.requirements = claim.requirements.without(CAPACITY_TYPE).add(
                    Requirement.new(CAPACITY_TYPE, "In", ["reserved"]),
                    Requirement.new(
                        CAPACITY_RESERVATION_ID,
                        "In",
                        sorted({o.reservation_id for o in claim.reserved}),
                    ),
                )
            counters[claim.nodepool] = counters.get(claim.nodepool, 0) + 1
            claim.name = f"{claim.nodepool}-{counters[claim.nodepool]}"
            claim.labels = {**claim.template.labels, **custom_labels(claim.requirements)}
            kept.append(claim)
        self.new_node_claims = kept


def _topology(
    cache: PassCache,
    pools: Sequence[PoolInput],
    live: Sequence[StateNode],
    *,
    pending_pods: Sequence[Pod],
    daemons: Sequence[Pod],
    daemon_serial: int,
    options: SchedulingOptions,
) -> tuple[list[NodeEntry], Topology]:
    """The live nodes' entries (`NodeEntry`, from `cache`) and the pass's topology: domains
    from every dynamic pool and its instance types (static pools are not passed to
    `NewTopology`; their nodes add domains as state nodes), counts from bound pods."""
    # One requirement list per type list: `build_domain_groups` shares the work of pools
    # whose types are the same object (the catalog resolves one tuple per node class).
    type_reqs: dict[int, list[Requirements]] = {}
    for p in pools:
        if id(p.instance_types) not in type_reqs:
            type_reqs[id(p.instance_types)] = cache.requirements_of(p.instance_types)
    domain_inputs = []
    for p in pools:
        if p.nodepool.is_static:
            continue
        parts = cache.parts_of(p.nodepool)
        domain_inputs.append(
            (parts.domain_requirements, parts.taints, type_reqs[id(p.instance_types)])
        )
    domain_groups = cache.domain_groups_of(domain_inputs)
    pending_keys = {p.key for p in pending_pods}
    # One walk over the live nodes: each node's entry (the kept entries' hits read inline,
    # `PassCache.node_entry` for the rest: a build per simulation asks for every live node),
    # its bound pods as the topology counts them (less any pod pending again), its domains and
    # hostname. The same lists, in the same order, as one walk per list.
    entries: list[NodeEntry] = []
    counted: list[CountedPod] = []
    inverse: list[CountedPod] = []
    node_domains: list[tuple[Mapping[str, str], tuple[Taint, ...]]] = []
    hostnames: list[str] = []
    kept_get, entry_of = cache.node_entries.get, cache.node_entry
    for n in live:
        entry = kept_get(n.name)
        if entry is None or entry.state is not n or entry.daemon_serial != daemon_serial:
            entry = entry_of(n, daemons, daemon_serial)
        entries.append(entry)
        if pending_keys.isdisjoint(entry.pods.keys):
            counted.extend(entry.counted)
            inverse.extend(entry.inverse)
        else:
            kept = [
                c
                for c, key in zip(entry.counted, entry.pods.keys, strict=True)
                if key not in pending_keys
            ]
            counted.extend(kept)
            inverse.extend(c for c in kept if has_anti_affinity(c.pod))
        node_domains.append((n.labels, n.taints))
        hostnames.append(entry.hostname)
    topology = Topology(
        domain_groups,
        existing_pods=counted,
        existing_node_domains=node_domains,
        ignore_preferences=options.preference_policy == "Ignore",
        inverse_pods=inverse,
    )
    topology.register_all(HOSTNAME, hostnames)
    return entries, topology


def _limits(
    pools: Sequence[PoolInput], live: Sequence[StateNode], entries: Sequence[NodeEntry]
) -> dict[str, Resources]:
    """Per NodePool with limits, what is left of them after the capacity of its live nodes
    (`entries` are `live`'s, in order): Karpenter's `remainingResources`."""
    remaining: dict[str, Resources] = {}
    for pool in pools:
        limits = pool.nodepool.spec.limits
        if limits is not None:
            remaining[pool.nodepool.name] = base_units(limits)
    # Per pool with limits, the capacities of its live nodes: subtracted once below (the
    # same integers as one subtraction per node, and `subtract` keeps the limit's keys).
    used: dict[str, list[Mapping[str, int]]] = {}
    if remaining:
        for n, e in zip(live, entries, strict=True):
            if e.nodepool in remaining:
                used.setdefault(e.nodepool, []).append(n.capacity)
    for name, capacities in used.items():
        remaining[name] = {
            k: v - (len(capacities) if k == "nodes" else sum([c.get(k, 0) for c in capacities]))
            for k, v in remaining[name].items()
        }
    return remaining


def _min_daemon_overhead(claim: NodeClaim) -> Resources:
    """The least DaemonSet overhead among the groups of the claim's remaining types (per
    resource); groups carry a mask over the claim's table."""
    table, options = claim.table, claim.options
    if not any(g.overhead for g in claim.daemon_groups):
        return {}  # no DaemonSet requests anything (whichever groups the options reach)
    overheads = [
        g.overhead
        for g in claim.daemon_groups
        if bool(
            ((g.mask if g.mask is not None else table.mask_of(g.instance_types)) & options).any()
        )
    ]
    if not overheads:
        return {}
    keys = set().union(*overheads)
    return {k: min(o.get(k, 0) for o in overheads) for k in sorted(keys)}


def _explanation(
    nodepool: str, weight: int, trace: Sequence[TracedStep], verdict: str
) -> PoolExplanation:
    """A NodePool's explanation from its traced steps: each step's count, and the cause
    given by the step that left nothing (if one did)."""
    steps = [(t.name, len(t.kept)) for t in trace]
    causes = next((t.cause for t in trace if t.cause), [])
    return PoolExplanation(nodepool, weight, steps, verdict, causes)


def _desc(name: str) -> tuple[int, ...]:
    # Sort key that orders names descending inside an ascending sort.
    return (*tuple(-ord(c) for c in name), 1)


def solve(
    pods: Sequence[Pod],
    pools: Sequence[PoolInput],
    *,
    state_nodes: Sequence[StateNode] = (),
    daemonsets: Sequence[DaemonSet] = (),
    options: SchedulingOptions | None = None,
) -> Results:
    """Schedule `pods` (pending) onto existing nodes and new NodeClaims from `pools`."""
    scheduler = Scheduler(
        pools,
        state_nodes=state_nodes,
        daemonsets=daemonsets,
        pending_pods=pods,
        options=options,
    )
    return scheduler.solve(pods)
