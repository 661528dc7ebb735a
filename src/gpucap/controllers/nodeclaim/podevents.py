"""A NodeClaim's last pod event, which consolidateAfter counts from (kubernetes-sigs/karpenter
`pkg/controllers/nodeclaim/podevents/controller.go` @ 2266468104f3; karpenter-disruption.md
§1.6).

`pod_changed(pod, node_name)` is called when a pod is bound to a node, finishes (Succeeded or
Failed), starts terminating or is deleted; it sets `status.lastPodEventTime` of the node's
NodeClaim to now. DaemonSet pods and nodes Karpenter does not manage are ignored, and a time
written less than `DEDUPE_TIMEOUT` ago is kept (Karpenter's write throttle; smaller than the
15 s validation delay, so churn during validation still moves it). Called by the simulator's
world; read by disruption (`controllers/disruption/candidates.py: consolidatable`).
"""

from __future__ import annotations

from gpucap.apis.core import Pod
from gpucap.runtime.clock import Clock
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.state.cluster import Cluster

__all__ = ["DEDUPE_TIMEOUT", "PodEvents"]

# podevents/controller.go `dedupeTimeout`.
DEDUPE_TIMEOUT = 10.0


class PodEvents:
    """Stamps `lastPodEventTime` (see the module docstring)."""

    name = "nodeclaim.podevents"

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock

    def pod_changed(self, pod: Pod, node_name: str) -> bool:
        """Record a pod event on `node_name`; True when the NodeClaim's time was written."""
        if any(o.kind == "DaemonSet" for o in pod.metadata.owner_references):
            return False
        node = self.cluster.node(node_name)
        claim = self.cluster.node_claim_for_node(node) if node is not None else None
        if claim is None:
            return False
        now = self.clock.now()
        last = claim.status.last_pod_event_time
        if last and (now - parse_rfc3339(last)).total_seconds() < DEDUPE_TIMEOUT:
            return False
        status = claim.status.model_copy(update={"last_pod_event_time": now.isoformat()})
        self.cluster.update_node_claim(claim.model_copy(update={"status": status}))
        return True
