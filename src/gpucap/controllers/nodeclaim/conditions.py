"""A NodeClaim's status conditions, set as Karpenter sets them (awslabs/operatorpkg
`status/condition_set.go`, used through `NodeClaim.StatusConditions`): Launched, Registered and
Initialized start `Unknown` on the first reconcile, and a condition's `lastTransitionTime` moves
only when its status changes (a new reason or message keeps it), which is what the liveness
timeouts count from. `Ready` is True when the three are. Called by the lifecycle and
termination controllers.
"""

from __future__ import annotations

import datetime as dt

from gpucap.apis.nodepool import NodeClaim, NodeClaimCondition
from gpucap.runtime.rfc3339 import parse_rfc3339

__all__ = [
    "DRAINED",
    "INITIALIZED",
    "INSTANCE_TERMINATING",
    "LAUNCHED",
    "READY",
    "REGISTERED",
    "condition",
    "is_true",
    "seconds_since",
    "with_condition",
    "with_initial_conditions",
]

LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"
READY = "Ready"
DRAINED = "Drained"
INSTANCE_TERMINATING = "InstanceTerminating"
_LIFECYCLE = (LAUNCHED, REGISTERED, INITIALIZED)


def condition(claim: NodeClaim, type_: str) -> NodeClaimCondition | None:
    return next((c for c in claim.status.conditions if c.type == type_), None)


def is_true(claim: NodeClaim, type_: str) -> bool:
    c = condition(claim, type_)
    return c is not None and c.status == "True"


def seconds_since(cond: NodeClaimCondition, now: dt.datetime) -> float:
    """Seconds from the condition's last transition to `now` (0 when it has none)."""
    if not cond.last_transition_time:
        return 0.0
    return (now - parse_rfc3339(cond.last_transition_time)).total_seconds()


def with_condition(
    claim: NodeClaim,
    type_: str,
    status: str,
    now: dt.datetime,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> NodeClaim:
    """`claim` with condition `type_` set; its transition time moves only when the status
    changes. Setting a lifecycle condition recomputes Ready."""
    conditions = _set(
        list(claim.status.conditions), type_, status, now, reason=reason, message=message
    )
    if type_ in _LIFECYCLE:
        ready = all(any(c.type == t and c.status == "True" for c in conditions) for t in _LIFECYCLE)
        conditions = _set(conditions, READY, "True" if ready else "Unknown", now)
    return claim.model_copy(
        update={"status": claim.status.model_copy(update={"conditions": conditions})}
    )


def with_initial_conditions(claim: NodeClaim, now: dt.datetime) -> NodeClaim:
    """`claim` with every lifecycle condition it lacks set Unknown at `now` (what the first
    access to `StatusConditions()` does)."""
    missing = [t for t in (*_LIFECYCLE, READY) if condition(claim, t) is None]
    if not missing:
        return claim
    conditions = list(claim.status.conditions)
    for t in missing:
        conditions = _set(conditions, t, "Unknown", now)
    return claim.model_copy(
        update={"status": claim.status.model_copy(update={"conditions": conditions})}
    )


def _set(
    conditions: list[NodeClaimCondition],
    type_: str,
    status: str,
    now: dt.datetime,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> list[NodeClaimCondition]:
    out: list[NodeClaimCondition] = []
    found = False
    for c in conditions:
        if c.type != type_:
            out.append(c)
            continue
        found = True
        when = c.last_transition_time if c.status == status else now.isoformat()
        out.append(
            NodeClaimCondition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=when,
            )
        )
    if not found:
        out.append(
            NodeClaimCondition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=now.isoformat(),
            )
        )
    return out
