"""Why a pod cannot go where the scheduler tried it: the error, the value, and Karpenter's reasons.

Karpenter's scheduler answers a failed try with a Go `error` (`ExistingNode.CanAdd`,
`NodeClaim.CanAdd`, `Scheduler.add` in kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/{scheduler,existingnode,nodeclaim}.go` @ 2266468104f3)
and keeps the last one per pod in `Results.PodErrors`. gpucap's `SchedulingError` is that error,
with the wording Karpenter uses where it has one; `Refusal` is the same answer returned instead
of raised, on the hot path where most tries fail and no one reads their messages. Both carry
the reason's `Hold` for the pod classes (`podclasses.py`).

The bottom of the scheduler's vocabulary (with `poddata.py` and `options.py`): the scheduler,
its targets (`existingnode.py`, `nodeclaim.py`) and the provisioner read it; it imports none
of them.
"""

from __future__ import annotations

from collections.abc import Callable

from gpucap.scheduling.podclasses import Hold

__all__ = [
    "NODE_LIMITS_EXHAUSTED",
    "NO_DYNAMIC_NODEPOOLS",
    "NO_TEMPLATES",
    "TYPES_EXCEED_LIMITS",
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


class SchedulingError(Exception):
    """A pod cannot go where it was tried; the message is Karpenter's wording where it has one.

    Built lazily (from a string, another exception or a function): most failures are a pod
    not fitting one of many planned nodes, and their messages are never shown.
    """

    def __init__(self, message: str | Exception | Callable[[], str], hold: Hold = None) -> None:
        super().__init__()
        self._message = message
        # Why the target refused, for the pod classes (`podclasses.py`); None: not kept.
        self.hold = hold

    def __str__(self) -> str:
        m = self._message
        if isinstance(m, str):
            return m
        if isinstance(m, Exception):
            return str(m)
        return m()


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
