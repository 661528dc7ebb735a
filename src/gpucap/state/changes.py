"""`ClusterChange`: what a mutation of the `Cluster` changed, as its change feed says.

The `Cluster` (`state/cluster.py`) calls its watchers (`Cluster.watch`) from inside every
mutation with one of these, as Karpenter's controllers learn of changes from the API server's
watches rather than from whoever made them; the simulator's bus (`sim/bus.py`) is the watcher
that wakes the loops reading what changed.
"""

from __future__ import annotations

import enum

from gpucap.apis.core import Pod

__all__ = ["ClusterChange", "pod_change"]


class ClusterChange(enum.Enum):
    """What a mutation of the `Cluster` changed (see the module docstring)."""

    PODS = "pods"  # a pod added, replaced, bound, unbound or deleted; a nomination made
    # Only a pod's status conditions changed (it turned Ready), its spec, metadata and phase
    # the same objects: what only PodDisruptionBudgets read (their healthy pods).
    POD_STATUS = "podStatus"
    NODES = "nodes"  # a Node or NodeClaim added, changed or removed; a deletion mark
    OBJECTS = "objects"  # any other object applied or deleted (NodePools, DaemonSets, ...)


def pod_change(old: Pod | None, new: Pod) -> ClusterChange:
    """What writing `new` over `old` (None: a new pod) changed: `POD_STATUS` when only the
    status conditions did (the same spec and metadata objects, the same phase: a pod turning
    Ready), else `PODS`."""
    if (
        old is not None
        and old.spec is new.spec
        and old.metadata is new.metadata
        and old.status.phase == new.status.phase
    ):
        return ClusterChange.POD_STATUS
    return ClusterChange.PODS
