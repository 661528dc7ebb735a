"""The summary of a simulated run, computed from its event log alone (contract.md, `simulate`).

`summarize(events, end=...)` reads nothing but the events (`sim/recorder.py`), so the summary of a
run can be recomputed from its `--events` file and tested on hand-built logs. Events after `end`
are ignored: `summarize(events, end=t)` is the run as it stood at `t` (the watch pane's "cost so
far"). Called by the simulate command and `cli/simulate_render.py`.

What it counts, and how:
- Billing: a node is billed from its `NodeClaimLaunched` to its `NodeTerminated` (or its
  instance's `InstanceTerminated`, when EC2 took it back first; or `end`) at the
  launch event's `pricePerHour`, prorated to the millisecond. EC2 bills Linux instances per second
  from the `running` state until `shutting-down`, with a 60-second minimum; gpucap starts at
  Launched (the instance is `pending` then, ~20 s early), stops at termination, and does not apply
  the minimum or whole-second rounding: at most a minute per node either way (docs/design/sim.md).
- The cost floor (`costFloorUSD`, only in a run recorded with `--cost-floor`): each `CostFloor`
  event's `usdPerHour` (the LP relaxation's cheapest fleet for the pods Karpenter's NodePools serve
  then, `sim/costfloor.py`) from its time to the next one's or `end`, none before the first; the
  same rounding as the cost. No fleet that honours the modelled rules could have served those pods
  for less, so the bill's excess over it is what the packing (and the waiting for nodes) cost.
- Node-hours and GPU-hours (physical GPUs, the launch event's `gpus`) by instance type and
  capacity type, and the cost by the same keys.
- GPU-hours advertised: each resource of `NodeInitialized.gpusAdvertised` from initialization to
  termination (or `end`). Requested: the `gpus` of a pod's `PodCreated`, from each `PodBound`
  until `PodEvicted`/`PodDeleted` (or `end`). Time-slicing shows as advertised > physical.
- Time from `PodCreated` to the first `PodBound` and to the first `PodReady` after it, per pod
  creation: p50, p95 and max over the pods that got there. Percentiles are nearest-rank: the value
  at rank ceil(p/100 * n) of the n sorted samples (an observed value, never interpolated).
- Disruptions by reason: `DisruptionDecision` reasons, and `Interrupted` for a
  `SpotInterruptionWarning`, once per NodeClaim and reason.
- Pods pending at the end (created, not deleted, not bound) with why: the later of their last
  `PodUnschedulable` reason and their last `PodNominated` claim (with what became of that claim)
  since they last became pending; nodes registered but never initialized. A pod whose last word
  is `PodNotPlanned` (a NodePool of EKS Auto Mode or the KWOK provider would take it) is not
  pending: it is in `notPlanned` (only when there is one) with who serves it.
- Serving (`serving`, only when the scenario has a HorizontalPodAutoscaler): from the HPA actor's
  `ServingReplicas` events, the replica-seconds each HPA target was asked for (its
  `spec.replicas` over time) and those that were Ready; `lostReplicaSeconds` and `lostFraction`
  are the difference: cold starts, evictions and pending pods under load show as lost capacity.
- Pods that never became Ready (`pods.neverReady`: pod creations without a `PodReady`), and of
  those the ones deleted first (`deletedBeforeReady`: when, and why they were still waiting), so
  a workload scaled to 0 before its pods ever ran is not hidden by "Pending at the end: none".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucap.sim.recorder import Event

__all__ = [
    "BOUND_NOT_READY",
    "NO_DECISION",
    "billed_seconds",
    "cost_floor_usd",
    "nearest_rank",
    "summarize",
]

NO_DECISION = "no scheduling decision yet"
BOUND_NOT_READY = "bound to its node, not Ready yet (image pull or start-up)"
_HOURS = 6  # decimals of hours and dollars in the summary
_SECONDS = 3  # decimals of seconds (milliseconds, as events)


def nearest_rank(samples: Sequence[float], p: int) -> float:
    """The p-th percentile (0 < p <= 100) by nearest rank: sorted sample number ceil(p*n/100)."""
    if not samples or not 0 < p <= 100:
        raise ValueError("nearest_rank needs samples and 0 < p <= 100")
    ordered = sorted(samples)
    return ordered[(p * len(ordered) + 99) // 100 - 1]


def _stats(samples: list[float]) -> dict[str, Any]:
    if not samples:
        return {"p50": None, "p95": None, "max": None, "count": 0}
    return {
        "p50": round(nearest_rank(samples, 50), _SECONDS),
        "p95": round(nearest_rank(samples, 95), _SECONDS),
        "max": round(max(samples), _SECONDS),
        "count": len(samples),
    }


def billed_seconds(launched: float, terminated: float | None, end: float) -> float:
    """Seconds a node launched at `launched` is billed by `end` (terminated or not)."""
    stop = end if terminated is None else min(terminated, end)
    return max(0.0, stop - launched)


@dataclass(slots=True)
class _Claim:
    name: str
    node_pool: str | None = None
    launch: Mapping[str, Any] | None = None
    launched: float | None = None
    registered: Event | None = None
    initialized: float | None = None
    advertised: Mapping[str, int] = field(default_factory=dict)
    deleted: float | None = None
    terminated: float | None = None
    instance_gone: float | None = None  # EC2 terminated the instance (`InstanceTerminated`)

    @property
    def billed_until(self) -> float | None:
        """When EC2 stopped billing: the instance's end, or the node's, whichever came first."""
        ends = [t for t in (self.terminated, self.instance_gone) if t is not None]
        return min(ends) if ends else None


@dataclass(slots=True)
class _Pod:
    created: float | None
    gpus: Mapping[str, int]
    bound_since: float | None = None  # while bound: since when (requested GPU-hours)
    first_bound: float | None = None
    first_ready: float | None = None
    deleted: bool = False
    pending_since: float = 0.0
    wait_reason: str | None = None  # the last PodUnschedulable reason while pending
    nominated: str | None = None  # or the NodeClaim it was last nominated to
    not_planned: Mapping[str, Any] | None = None  # PodNotPlanned's fields while pending
    serving: bool = False  # Ready and not evicted since
    lost_since: float | None = None  # evicted while serving: serving lost since then


def _add(table: dict[str, dict[str, float]], a: str, b: str, value: float) -> None:
    row = table.setdefault(a, {})
    row[b] = row.get(b, 0.0) + value


def _rounded(table: dict[str, dict[str, float]], digits: int) -> dict[str, dict[str, float]]:
    return {
        a: {b: round(v, digits) for b, v in sorted(row.items())} for a, row in sorted(table.items())
    }


def _nomination_reason(claim: _Claim | None, name: str) -> str:
    text = f"nominated to NodeClaim {name}"
    if claim is None:
        return text
    if claim.deleted is not None or claim.terminated is not None:
        return f"{text}, which was deleted"
    if claim.registered is not None and claim.initialized is None:
        if claim.launch is not None and not claim.launch.get("gpus"):
            return f"{text}: its node registered, not initialized by the end of the run"
        return f"{text}: its node registered but never initialized (GPU never advertised)"
    if claim.launched is not None and claim.registered is None:
        return f"{text}: launched, its node not registered yet"
    if claim.launched is None:
        return f"{text}: not launched"
    return text


def _waiting(p: _Pod, claims: Mapping[str, _Claim]) -> str:
    """Why a pending pod waits: its NodeClaim and what became of it, else its last reason."""
    if p.nominated is not None:
        return _nomination_reason(claims.get(p.nominated), p.nominated)
    return p.wait_reason or NO_DECISION


def _serving(log: Sequence[Event], end: float) -> dict[str, Any] | None:
    """The `serving` block (None without `ServingReplicas` events, i.e. without an HPA): for
    each HPA target, its `spec.replicas` (requested) and Ready replicas over time, as
    replica-seconds; lost is requested minus Ready (a Ready replica beyond the request serves
    nothing asked for). Each event holds until the next for its object, or `end`."""
    state: dict[str, tuple[float, int, int]] = {}  # object -> (since, requested, ready)
    totals: dict[str, list[float]] = {}  # object -> [requested s, ready s, rescales]

    def close(obj: str, t: float) -> None:
        since, requested, ready = state[obj]
        row = totals.setdefault(obj, [0.0, 0.0, 0])
        row[0] += (t - since) * requested
        row[1] += (t - since) * min(ready, requested)

    for e in log:
        if e.type == "ServingReplicas":
            obj = e.fields["object"]
            if obj in state:
                close(obj, e.t)
            state[obj] = (e.t, e.fields["requested"], e.fields["ready"])
            totals.setdefault(obj, [0.0, 0.0, 0])
        elif e.type == "HorizontalPodAutoscalerScaled":
            totals.setdefault(e.fields["object"], [0.0, 0.0, 0])[2] += 1
    if not state:
        return None
    for obj in state:
        close(obj, end)

    def block(requested: float, ready: float) -> dict[str, Any]:
        return {
            "requestedReplicaSeconds": round(requested, _SECONDS),
            "readyReplicaSeconds": round(ready, _SECONDS),
            "lostReplicaSeconds": round(requested - ready, _SECONDS),
            "lostFraction": round((requested - ready) / requested, _HOURS) if requested else 0.0,
        }

    return {
        **block(sum(r[0] for r in totals.values()), sum(r[1] for r in totals.values())),
        "hpaRescales": int(sum(r[2] for r in totals.values())),
        "byObject": {
            obj: {**block(r[0], r[1]), "hpaRescales": int(r[2])}
            for obj, r in sorted(totals.items())
        },
    }


def cost_floor_usd(log: Sequence[Event], end: float) -> float | None:
    """The integral of the `CostFloor` events' $/hour over time (see the module docstring),
    unrounded; None when the run recorded no floor (no `--cost-floor`). `log` sorted by time,
    none after `end`."""
    total, since, rate, seen = 0.0, 0.0, 0.0, False
    for e in log:
        if e.type == "CostFloor":
            total += rate * (e.t - since) / 3600
            since, rate, seen = e.t, float(e.fields["usdPerHour"]), True
    return total + rate * max(0.0, end - since) / 3600 if seen else None


def summarize(events: Sequence[Event], *, end: float) -> dict[str, Any]:
    """The run's summary at `end` seconds (keys in SIM-INTERFACES.md; the module docstring says
    how each is computed). Deterministic: equal logs give equal summaries, key order included."""
    if not math.isfinite(end) or end < 0:
        raise ValueError(f"the end of a run is a time >= 0, not {end}")
    log = sorted((e for e in events if e.t <= end), key=lambda e: e.t)
    claims: dict[str, _Claim] = {}
    pods: dict[str, _Pod] = {}
    requested: dict[str, float] = {}  # resource -> GPU-seconds
    to_bound: list[float] = []
    to_ready: list[float] = []
    serving_lost = 0.0  # pod-seconds of serving lost to evictions
    evicted_serving = 0
    disrupted: dict[str, set[str]] = {}  # reason -> claims
    counts = {"created": 0, "launched": 0, "failed": 0, "registered": 0, "initialized": 0}
    counts |= {"deleted": 0, "terminated": 0}
    pod_counts = {"created": 0, "bound": 0, "ready": 0, "evicted": 0, "deleted": 0}
    limit_reached = 0
    never_ready: list[tuple[str, _Pod, float, str]] = []  # deleted before ever Ready

    def claim(name: str) -> _Claim:
        c = claims.get(name)
        if c is None:
            c = claims[name] = _Claim(name)
        return c

    def pod(key: str) -> _Pod:
        p = pods.get(key)
        if p is None:  # a pod the log never created (the world's bug): no times, no GPUs
            p = pods[key] = _Pod(created=None, gpus={})
        return p

    def unbind(p: _Pod, t: float) -> None:
        if p.bound_since is not None:
            for resource, n in p.gpus.items():
                requested[resource] = requested.get(resource, 0.0) + n * (t - p.bound_since)
            p.bound_since = None

    for e in log:
        t, f = e.t, e.fields
        match e.type:
            case "PodCreated":
                old = pods.get(f["pod"])
                if old is not None:
                    unbind(old, t)
                pods[f["pod"]] = _Pod(created=t, gpus=dict(f.get("gpus") or {}), pending_since=t)
                pod_counts["created"] += 1
            case "PodNominated":
                p = pod(f["pod"])
                p.nominated, p.wait_reason, p.not_planned = f["nodeClaim"], None, None
            case "PodUnschedulable":
                p = pod(f["pod"])
                p.wait_reason, p.nominated, p.not_planned = f["reason"], None, None
            case "PodNotPlanned":
                p = pod(f["pod"])
                p.wait_reason, p.nominated, p.not_planned = None, None, f
            case "PodBound":
                p = pod(f["pod"])
                p.not_planned = None
                if p.bound_since is None:
                    p.bound_since = t
                if p.first_bound is None:
                    p.first_bound = t
                    pod_counts["bound"] += 1
                    if p.created is not None:
                        to_bound.append(t - p.created)
            case "PodReady":
                p = pod(f["pod"])
                p.serving = True
                if p.lost_since is not None:
                    serving_lost += t - p.lost_since
                    p.lost_since = None
                if p.first_ready is None:
                    p.first_ready = t
                    pod_counts["ready"] += 1
                    if p.created is not None:
                        to_ready.append(t - p.created)
            case "PodEvicted":
                p = pod(f["pod"])
                if p.serving:
                    p.serving, p.lost_since = False, t
                    evicted_serving += 1
                unbind(p, t)
                p.pending_since, p.wait_reason, p.nominated, p.not_planned = t, None, None, None
                pod_counts["evicted"] += 1
            case "PodDeleted":
                p = pod(f["pod"])
                if p.first_ready is None and p.created is not None and not p.deleted:
                    why = BOUND_NOT_READY if p.bound_since is not None else _waiting(p, claims)
                    never_ready.append((f["pod"], p, t, why))
                if p.lost_since is not None:
                    serving_lost += t - p.lost_since
                    p.lost_since = None
                p.serving = False
                unbind(p, t)
                p.deleted = True
                pod_counts["deleted"] += 1
            case "NodeClaimCreated":
                claim(f["nodeClaim"]).node_pool = f["nodePool"]
                counts["created"] += 1
            case "NodeClaimLaunched":
                c = claim(f["nodeClaim"])
                if c.launched is None:
                    c.launched, c.launch = t, f
                    counts["launched"] += 1
            case "LaunchFailed":
                counts["failed"] += 1
            case "NodeRegistered":
                c = claim(f["nodeClaim"])
                if c.registered is None:
                    c.registered = e
                    counts["registered"] += 1
            case "NodeInitialized":
                c = claim(f["nodeClaim"])
                if c.initialized is None:
                    c.initialized, c.advertised = t, dict(f["gpusAdvertised"])
                    counts["initialized"] += 1
            case "NodeClaimDeleted":
                c = claim(f["nodeClaim"])
                if c.deleted is None:
                    c.deleted = t
                    counts["deleted"] += 1
            case "NodeTerminated":
                c = claim(f["nodeClaim"])
                if c.terminated is None:
                    c.terminated = t
                    counts["terminated"] += 1
            case "InstanceTerminated":
                c = claim(f["nodeClaim"])
                if c.instance_gone is None:
                    c.instance_gone = t
            case "DisruptionDecision":
                disrupted.setdefault(f["reason"], set()).add(f["nodeClaim"])
            case "SpotInterruptionWarning":
                disrupted.setdefault("Interrupted", set()).add(f["nodeClaim"])
            case "LimitReached":
                limit_reached += 1
            case _:
                pass

    pending = []
    not_planned = []
    for key, p in sorted(pods.items()):
        if p.deleted or p.bound_since is not None:
            continue
        if p.not_planned is not None:
            served = p.not_planned
            not_planned.append(
                {
                    "pod": key,
                    "since": p.pending_since,
                    "servedBy": served["servedBy"],
                    "reason": served["reason"],
                }
            )
            continue
        entry: dict[str, Any] = {"pod": key, "since": p.pending_since}
        entry["reason"] = _waiting(p, claims)
        if p.nominated is not None:
            entry["nodeClaim"] = p.nominated
        pending.append(entry)
    deleted_before_ready = [
        {"pod": key, "created": p.created, "deleted": t, "reason": why}
        for key, p, t, why in sorted(never_ready, key=lambda x: (x[2], x[0]))
    ]
    pod_counts["neverReady"] = pod_counts["created"] - pod_counts["ready"]
    for p in pods.values():  # still bound at the end: requested until the end
        unbind(p, end)

    node_hours: dict[str, dict[str, float]] = {}
    gpu_hours: dict[str, dict[str, float]] = {}
    cost_by_type: dict[str, dict[str, float]] = {}
    node_count: dict[str, dict[str, int]] = {}
    advertised: dict[str, float] = {}
    billing: list[dict[str, Any]] = []
    uninitialized: list[dict[str, Any]] = []
    cost = 0.0
    for c in claims.values():
        if c.launch is not None and c.launched is not None:
            seconds = billed_seconds(c.launched, c.billed_until, end)
            it, cap = c.launch["instanceType"], c.launch["capacityType"]
            dollars = seconds / 3600 * c.launch["pricePerHour"]
            cost += dollars
            _add(node_hours, it, cap, seconds / 3600)
            _add(gpu_hours, it, cap, seconds / 3600 * c.launch["gpus"])
            _add(cost_by_type, it, cap, dollars)
            row = node_count.setdefault(it, {})
            row[cap] = row.get(cap, 0) + 1
            billing.append(
                {
                    "nodeClaim": c.name,
                    "nodePool": c.launch["nodePool"],
                    "instanceType": it,
                    "zone": c.launch["zone"],
                    "capacityType": cap,
                    "pricePerHour": c.launch["pricePerHour"],
                    "launched": c.launched,
                    "terminated": c.terminated,
                    "billedSeconds": round(seconds, _SECONDS),
                    "costUSD": round(dollars, _HOURS),
                }
            )
        if c.initialized is not None:
            seconds = billed_seconds(c.initialized, c.terminated, end)
            for resource, n in c.advertised.items():
                advertised[resource] = advertised.get(resource, 0.0) + n * seconds
        elif c.registered is not None and c.terminated is None:
            stuck: dict[str, Any] = {
                "nodeClaim": c.name,
                "node": c.registered.fields["node"],
                "instanceType": c.launch["instanceType"] if c.launch else None,
                "gpus": c.launch["gpus"] if c.launch else None,
                "registered": c.registered.t,
            }
            if "devicePlugin" in c.registered.fields:
                stuck["devicePlugin"] = c.registered.fields["devicePlugin"]
            uninitialized.append(stuck)
    billing.sort(key=lambda b: (b["launched"], b["nodeClaim"]))

    # Only a run that recorded the floor (`--cost-floor`) has one: its first sample is always
    # an event (`sim/costfloor.py`).
    floor_usd = cost_floor_usd(log, end)
    floor = {} if floor_usd is None else {"costFloorUSD": round(floor_usd, _HOURS)}
    return {
        "durationSeconds": round(float(end), _SECONDS),
        "costUSD": round(cost, _HOURS),
        **floor,
        "nodeHours": _rounded(node_hours, _HOURS),
        "gpuHours": _rounded(gpu_hours, _HOURS),
        "costUSDByType": _rounded(cost_by_type, _HOURS),
        "nodes": {a: dict(sorted(row.items())) for a, row in sorted(node_count.items())},
        "gpuHoursAdvertised": {r: round(s / 3600, _HOURS) for r, s in sorted(advertised.items())},
        "gpuHoursRequested": {r: round(s / 3600, _HOURS) for r, s in sorted(requested.items())},
        "timeToBound": _stats(to_bound),
        "timeToReady": _stats(to_ready),
        "percentiles": "nearest-rank",
        "disruptions": {r: len(cs) for r, cs in sorted(disrupted.items())},
        # Pod-seconds a serving (Ready) pod spent evicted until Ready again (or deleted, or the
        # end): what each eviction of a model server costs in serving, load time included.
        "servingLostSeconds": round(
            serving_lost
            + sum(end - p.lost_since for p in pods.values() if p.lost_since is not None),
            _SECONDS,
        ),
        "servingPodsEvicted": evicted_serving,
        # Only with a HorizontalPodAutoscaler: other summaries stay as they were.
        **({"serving": serving} if (serving := _serving(log, end)) else {}),
        "pendingAtEnd": pending,
        # Only when some pod is another Karpenter's: other summaries stay as they were.
        **({"notPlanned": not_planned} if not_planned else {}),
        "deletedBeforeReady": deleted_before_ready,
        "uninitializedAtEnd": uninitialized,
        "nodeClaims": counts,
        "limitReached": limit_reached,
        "pods": pod_counts,
        "billing": billing,
    }
