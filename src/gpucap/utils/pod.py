"""What the disruption controller and the drain ask of a pod (kubernetes-sigs/karpenter
`pkg/utils/pod/scheduling.go` and `pkg/utils/disruption/disruption.go` @ 2266468104f3; below
the controllers, as Karpenter's `pkg/utils`).

- `is_active`: not Succeeded/Failed and not terminating (no deletionTimestamp).
- `is_reschedulable`: active, or a terminating StatefulSet pod; and not a DaemonSet's, not a
  static/mirror pod (owned by a Node). Only these move when their node goes.
- `do_not_disrupt_active`: `karpenter.sh/do-not-disrupt` on an active pod: `"true"` for ever, a
  positive Go duration while the pod is younger than it (no start time: protected), anything
  else ignored (`IsDoNotDisruptActive`). A duration counts from `status.startTime` (what the
  kubelet sets when it takes the pod; the simulator sets it at binding), not from creation;
  `do_not_disrupt_ends` is that instant plus the duration, `do_not_disrupt_until` the first
  such instant still ahead among a node's pods (when the disruption loop must look again).
- `is_evictable`: Karpenter would call the Eviction API for it (`IsEvictable`): active, not
  tolerating `karpenter.sh/disrupted:NoSchedule`, not a mirror pod, no active do-not-disrupt.
- `eviction_cost`: 1, plus pod-deletion-cost / 2^27, plus priority / 2^25, clamped to [-10, 10]
  (`EvictionCost`); `lifetime_remaining` scales a node's disruption cost by how much of its
  expireAfter is left (`LifetimeRemaining`).
Called by candidate selection (`controllers/disruption/candidates.py`), the PDB limits
(`utils/pdb.py`), the scheduling simulation and the drain (`controllers/nodeclaim/termination.py`).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable

from gpucap.apis.core import Pod
from gpucap.apis.duration import DurationError, parse_go_duration_ns, parse_karpenter_duration
from gpucap.apis.goparse import parse_float
from gpucap.apis.nodepool import NodeClaim
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.scheduling.taints import DISRUPTED_TAINT

__all__ = [
    "DO_NOT_DISRUPT",
    "POD_DELETION_COST",
    "do_not_disrupt_active",
    "do_not_disrupt_ends",
    "do_not_disrupt_until",
    "eviction_cost",
    "expiry",
    "is_active",
    "is_evictable",
    "is_mirror",
    "is_reschedulable",
    "lifetime_at",
    "lifetime_remaining",
    "tolerates_disrupted",
]

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def _owned_by(pod: Pod, kind: str) -> bool:
    return any(o.kind == kind for o in pod.metadata.owner_references)


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def is_active(pod: Pod) -> bool:
    return not is_terminal(pod) and pod.metadata.deletion_timestamp is None


def is_reschedulable(pod: Pod) -> bool:
    """Whether the pod moves when its node goes (see the module docstring). Candidate
    selection asks it once per state node object (`candidates._OnNode`)."""
    terminating = pod.metadata.deletion_timestamp is not None
    return (
        (is_active(pod) or (_owned_by(pod, "StatefulSet") and terminating))
        and not _owned_by(pod, "DaemonSet")
        and not _owned_by(pod, "Node")
    )


def do_not_disrupt_active(pod: Pod, now: dt.datetime) -> bool:
    """`pkg/utils/pod/scheduling.go: IsDoNotDisruptActive` for an active pod: `"true"` protects
    for good; a positive Go duration protects while the pod has run less than it (no start
    time: protected); anything else (zero, negative, unreadable) is ignored. Used by candidate
    selection and by the drain (termination.py)."""
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT)
    if value is None or not is_active(pod):
        return False
    if value == "true":
        return True
    protection = _protection(value)
    if protection is None:
        return False
    if not pod.status.start_time:
        return True  # fail safe, as Karpenter does
    return now < _started(pod.status.start_time) + protection


def do_not_disrupt_ends(pod: Pod) -> dt.datetime | None:
    """When the pod's do-not-disrupt duration stops protecting it: its `status.startTime` plus
    the duration (`IsDoNotDisruptActive` compares the pod's age with the duration, strictly:
    at that instant it is no longer protected). None when nothing ends: no annotation, `"true"`,
    a value Karpenter ignores, no start time yet (protected until one is set), or the pod is
    not active."""
    value = pod.metadata.annotations.get(DO_NOT_DISRUPT)
    if value is None or value == "true" or not pod.status.start_time or not is_active(pod):
        return None
    protection = _protection(value)
    if protection is None:
        return None
    return _started(pod.status.start_time) + protection


def do_not_disrupt_until(pods: Iterable[Pod], now: dt.datetime) -> dt.datetime | None:
    """The first instant after `now` at which one of `pods`' do-not-disrupt durations runs
    out (`do_not_disrupt_ends`), None when none is still running. Pure: the caller (the
    simulator's disruption cadence) wakes the loop then, as Karpenter's 10-second poll would
    find the node a candidate again once the last protection on it ran out."""
    ends = (do_not_disrupt_ends(p) for p in pods if DO_NOT_DISRUPT in p.metadata.annotations)
    return min((e for e in ends if e is not None and e > now), default=None)


@functools.lru_cache(maxsize=256)
def _protection(value: str) -> dt.timedelta | None:
    """A do-not-disrupt value's duration, rounded up to the microsecond (a datetime's
    resolution: at the rounded instant the pod's age is not below the duration, so the clock
    never stops just short of it); None for a value Karpenter ignores (`parseDoNotDisrupt`:
    not a Go duration, or not positive)."""
    try:
        nanos = parse_go_duration_ns(value)
    except (DurationError, ValueError):
        return None
    if nanos <= 0:
        return None
    return dt.timedelta(microseconds=-(-nanos // 1000))


def _started(text: str) -> dt.datetime:
    return parse_rfc3339(text)


def is_mirror(pod: Pod) -> bool:
    """A static pod's mirror (owned by its Node: `IsOwnedByNode`)."""
    return _owned_by(pod, "Node")


def tolerates_disrupted(pod: Pod) -> bool:
    """Whether the pod tolerates `karpenter.sh/disrupted:NoSchedule`
    (`ToleratesDisruptedNoScheduleTaint`): such a pod is neither evicted nor waited for."""
    return any(t.tolerates(DISRUPTED_TAINT) for t in pod.spec.tolerations)


def is_evictable(pod: Pod, now: dt.datetime) -> bool:
    """`IsEvictable`: Karpenter would evict it through the Eviction API when draining its node
    (active, not tolerating the disrupted taint, not a mirror pod, no active do-not-disrupt);
    only such pods are held to their PodDisruptionBudgets (`pdb.py`)."""
    return (
        is_active(pod)
        and not tolerates_disrupted(pod)
        and not is_mirror(pod)
        and not do_not_disrupt_active(pod, now)
    )


def eviction_cost(pod: Pod) -> float:
    """`EvictionCost` (see the module docstring). Candidate selection asks it once per state
    node object (`candidates._OnNode`)."""
    cost = 1.0
    deletion_cost = pod.metadata.annotations.get(POD_DELETION_COST)
    if deletion_cost is not None:
        value = parse_float(deletion_cost)
        if value is not None:
            cost += value / 2.0**27
    if pod.spec.priority is not None:
        cost += pod.spec.priority / 2.0**25
    return min(max(cost, -10.0), 10.0)


@functools.lru_cache(maxsize=64)
def _expire_seconds(text: str) -> int | None:
    """expireAfter in seconds, parsed once per value (None: Never or unreadable, both of
    which leave the whole lifetime ahead)."""
    try:
        return parse_karpenter_duration(text)
    except DurationError:
        return None


def lifetime_remaining(claim: NodeClaim, now: dt.datetime) -> float:
    """The fraction of the NodeClaim's expireAfter still ahead of it (1 for Never, or when its
    creation time is unknown)."""
    return lifetime_at(expiry(claim), now)


def expiry(claim: NodeClaim) -> tuple[int, dt.datetime] | None:
    """What `lifetime_remaining` reads of the NodeClaim: its expireAfter in seconds and its
    creation time; None when the whole lifetime is always ahead (Never, unreadable, not
    positive, or no creation time). Candidate selection keeps it per NodeClaim object."""
    total = _expire_seconds(claim.spec.expire_after)
    created = claim.metadata.creation_timestamp
    if total is None or total <= 0 or created is None:
        return None
    return total, created


def lifetime_at(parts: tuple[int, dt.datetime] | None, now: dt.datetime) -> float:
    """`lifetime_remaining` from the NodeClaim's `expiry`."""
    if parts is None:
        return 1.0
    total, created = parts
    age = (now - created).total_seconds()
    return min(max((total - age) / total, 0.0), 1.0)
