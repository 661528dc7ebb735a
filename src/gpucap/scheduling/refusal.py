"""Why a pod cannot go where the scheduler tried it: the error, the value, and Karpenter's reasons.

Karpenter's scheduler answers a failed try with a Go `error` (`ExistingNode.CanAdd`,
`NodeClaim.CanAdd`, `Scheduler.add` in kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/{scheduler,existingnode,nodeclaim}.go` @ 2266468104f3)
and keeps the last one per pod in `Results.PodErrors`. gpucap's `SchedulingError` is that error,
with the wording Karpenter uses where it has one; `Refusal` is the same answer returned instead
of raised, on the hot path where most tries fail and no one reads their messages. Both carry
the reason's `Hold` for the pod classes (`podclasses.py`).

`PodError` is what a pod's entry in `Results.pod_errors` holds: the text Karpenter prints and,
beside it, what the readers act on (the `Cause`, and the NodePool it is about). Karpenter's
readers do the same with typed Go errors (`IsReservedOfferingError`, `IsDRAError`, the
`NodePool` key `serrors.Wrap` attaches to the limit errors in `addToNewNodeClaim`), never by
reading the message back: a substring test on the message would blame NodePool `gpu` for a
limit of `gpu-small`.

The bottom of the scheduler's vocabulary (with `poddata.py` and `options.py`): the scheduler,
its targets (`existingnode.py`, `nodeclaim.py`) and the provisioner read it; it imports none
of them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gpucap.scheduling.podclasses import Hold

__all__ = [
    "NODE_LIMITS_EXHAUSTED",
    "NO_DYNAMIC_NODEPOOLS",
    "NO_TEMPLATES",
    "TYPES_EXCEED_LIMITS",
    "Cause",
    "PodError",
    "Refusal",
    "SchedulingError",
]

# provisioner.go: the decision recorded for every pending pod when no NodePool is dynamic
# (not static), Ready and managed by the cloud provider (`ErrNodePoolsNotFound`'s text is
# "no nodepools found"; the pod decision and the log line say "dynamic" since v1.9.0).
NO_DYNAMIC_NODEPOOLS = "no dynamic nodepools found"
# scheduler.go `add`: dynamic NodePools exist but none kept an instance type.
NO_TEMPLATES = "nodepool requirements filtered out all available instance types"
# scheduler.go `addToNewNodeClaim`: a NodePool's limits leave no room for a new NodeClaim.
NODE_LIMITS_EXHAUSTED = "node limits have been exhausted for nodepool"
TYPES_EXCEED_LIMITS = "all available instance types exceed limits for nodepool"


class Cause(enum.Enum):
    """What kind of reason a `PodError` gives (what its readers tell apart)."""

    # `validate_pod`: Karpenter does not consider the pod at all (provisioner.go `Validate`).
    INVALID_POD = "invalid pod"
    NO_DYNAMIC_NODEPOOLS = "no dynamic NodePool"
    NO_TEMPLATES = "no NodePool kept an instance type"
    # A NodePool's limits: no NodeClaim left, or every instance type above what is left.
    NODE_LIMITS_EXHAUSTED = "node limits exhausted"
    TYPES_EXCEED_LIMITS = "instance types exceed limits"
    # A new NodeClaim of the NodePool refused the pod (`NodeClaim.CanAdd`: taints,
    # requirements, topology, the instance-type filter).
    INCOMPATIBLE = "incompatible"
    # The NodeClaim the pod was planned on lost it when finalized (`Solve`'s minValues check).
    MIN_VALUES = "minValues not met"
    # Every NodePool refused: one part per NodePool (`multierr.Combine` in `addToNewNodeClaim`).
    NODEPOOLS = "every NodePool refused"
    # Karpenter's `ReservedOfferingError` (the provisioner's strict reserved-offering mode): a
    # compatible reservation is there but other planned NodeClaims hold all of it, or the pod
    # would take the NodeClaim off every reservation it holds. Not relaxed, no lower-weight
    # NodePool tried; the pod waits for a later pass (no FailedScheduling event).
    RESERVED_OFFERING = "reserved offering"


# The causes that are a NodePool's limits (the `LimitReached` event, plan's --passes note).
_LIMITS = frozenset({Cause.NODE_LIMITS_EXHAUSTED, Cause.TYPES_EXCEED_LIMITS})
# The fixed wording of the causes that have one.
_TEXT = {
    Cause.NO_DYNAMIC_NODEPOOLS: NO_DYNAMIC_NODEPOOLS,
    Cause.NO_TEMPLATES: NO_TEMPLATES,
    Cause.NODE_LIMITS_EXHAUSTED: NODE_LIMITS_EXHAUSTED,
    Cause.TYPES_EXCEED_LIMITS: TYPES_EXCEED_LIMITS,
}


@dataclass(frozen=True, slots=True)
class PodError:
    """Why a pod did not schedule (its entry in `Results.pod_errors`): `str()` is the text
    Karpenter prints, `cause` and `nodepool` (None: about no single NodePool) are what callers
    read. A `Cause.NODEPOOLS` error holds one part per NodePool tried, in the order tried;
    its text joins theirs as `nodepool "NAME": why` with "; " (multierr's separator)."""

    nodepool: str | None
    cause: Cause
    text: str
    parts: tuple[PodError, ...] = ()

    def __str__(self) -> str:
        return self.text

    @classmethod
    def of(cls, cause: Cause, nodepool: str | None = None) -> PodError:
        """An error whose cause has a fixed wording (the limits, no NodePool)."""
        return cls(nodepool, cause, _TEXT[cause])

    @classmethod
    def of_nodepools(cls, parts: Sequence[PodError]) -> PodError:
        """Every NodePool refused the pod, each for its own reason (`parts`, in order)."""
        text = "; ".join(f'nodepool "{p.nodepool}": {p.text}' for p in parts)
        return cls(None, Cause.NODEPOOLS, text, tuple(parts))

    def limited_pools(self) -> frozenset[str]:
        """The NodePools whose limits stopped the pod (in any part)."""
        return frozenset(
            e.nodepool for e in (self, *self.parts) if e.cause in _LIMITS and e.nodepool is not None
        )


def limited_pools(errors: Iterable[PodError]) -> list[str]:
    """The NodePools whose limits stopped any of `errors`' pods, sorted."""
    out: set[str] = set()
    for error in errors:
        out |= error.limited_pools()
    return sorted(out)


class SchedulingError(Exception):
    """A pod cannot go where it was tried; the message is Karpenter's wording where it has one.

    Built lazily (from a string, another exception or a function): most failures are a pod
    not fitting one of many planned nodes, and their messages are never shown.
    """

    def __init__(
        self,
        message: str | Exception | PodError | Callable[[], str],
        hold: Hold = None,
        *,
        cause: Cause = Cause.INCOMPATIBLE,
    ) -> None:
        super().__init__()
        self._message = message
        # Why the target refused, for the pod classes (`podclasses.py`); None: not kept.
        self.hold = hold
        self.cause = cause

    def __str__(self) -> str:
        m = self._message
        if isinstance(m, str):
            return m
        if isinstance(m, Exception | PodError):
            return str(m)
        return m()

    def pod_error(self, nodepool: str | None = None) -> PodError:
        """This error as a pod's `PodError` (about `nodepool`, when it is one NodePool's)."""
        m = self._message
        if isinstance(m, PodError):
            return m
        return PodError(nodepool, self.cause, str(self))


class Refusal:
    """Why a target refused a pod, returned rather than raised where the scheduler tries
    every pod on many targets (`ExistingNode.try_add`): most tries fail, and their messages
    are never shown, so no exception is built and unwound per try. `why` and `hold` are
    `SchedulingError`'s; `error()` is the exception the raising API (`can_add`) raises."""

    __slots__ = ("hold", "why")

    def __init__(self, why: str | Exception | Callable[[], str], hold: Hold = None) -> None:
        self.why = why
        self.hold = hold

    def error(self) -> SchedulingError:
        return SchedulingError(self.why, self.hold)

    def __str__(self) -> str:
        return str(self.error())
