"""The NodePool hash controller (kubernetes-sigs/karpenter `pkg/controllers/nodepool/hash/
controller.go`): what keeps a hash-algorithm change from drifting every node.

Karpenter annotates each NodePool with its current hash and hash version. When it finds a
NodePool whose version annotation is not the current one (a Karpenter upgrade changed how the
hash is computed), it first re-stamps that pool's NodeClaims of another version: the version is
set to the current one and, only for a NodeClaim with no `Drifted` condition, the hash too (one
already drifted stays drifted: its old hash cannot be compared any more). Then the NodePool
carries the current version and this never runs for it again.

gpucap computes a NodePool's hash when it needs it (`apis/hashing.py`) rather than writing it
back into the applied manifest, so this controller remembers which NodePools it has stamped.
A NodePool is stamped on first sight unless its manifest already carries the current version
(an export of a live cluster). In gpucap this matters for NodeClaims given in a scenario's
input without (or with old) hash annotations: they get the hash of the NodePool as it is then,
as Karpenter's upgrade path gives them; NodeClaims the provisioner creates carry the current
version from the start. Called by drift detection (`drift.py`) before it compares hashes.
"""

from __future__ import annotations

from gpucap.apis.hashing import (
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    nodepool_hash,
)
from gpucap.apis.labels import NODEPOOL
from gpucap.controllers.nodeclaim.conditions import condition
from gpucap.state.cluster import Cluster

__all__ = ["DRIFTED", "NodePoolHash"]

# The NodeClaim condition drift detection sets (pkg/apis/v1/nodeclaim_status.go).
DRIFTED = "Drifted"


class NodePoolHash:
    """The hash controller over a `Cluster` (see the module docstring)."""

    name = "nodepool.hash"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._stamped: set[str] = set()

    def reconcile(self) -> list[str]:
        """Stamp the NodePools not yet stamped; the NodeClaims re-annotated, in cluster order."""
        changed: list[str] = []
        for nodepool in self.cluster.nodepools():
            if nodepool.name in self._stamped:
                continue
            self._stamped.add(nodepool.name)
            annotations = nodepool.metadata.annotations
            if annotations.get(NODEPOOL_HASH_VERSION_ANNOTATION) == NODEPOOL_HASH_VERSION:
                continue
            current = nodepool_hash(nodepool)
            for claim in self.cluster.node_claims():
                mine = claim.metadata.annotations
                if claim.metadata.labels.get(NODEPOOL) != nodepool.name:
                    continue
                if mine.get(NODEPOOL_HASH_VERSION_ANNOTATION) == NODEPOOL_HASH_VERSION:
                    continue
                stamped = {**mine, NODEPOOL_HASH_VERSION_ANNOTATION: NODEPOOL_HASH_VERSION}
                if condition(claim, DRIFTED) is None:
                    stamped[NODEPOOL_HASH_ANNOTATION] = current
                meta = claim.metadata.model_copy(update={"annotations": stamped})
                self.cluster.update_node_claim(claim.model_copy(update={"metadata": meta}))
                changed.append(claim.name)
        return changed
