"""kube-scheduler in the simulator: which pods are on which node (its cache), and binding a
nominated pod once its node can take it.

Karpenter nominates a pod to the NodeClaim it launches for it; kube-scheduler, not Karpenter,
binds the pod, once the NodeClaim's Node is Ready, carries no NoSchedule/NoExecute taint the pod
does not tolerate and has room for the pod's requests (and `pods: 1`) in what it advertises
(karpenter-provisioning.md §5.5). So a GPU pod waits for the device plugin, and a pod nominated to
a node whose GPU never appears stays Pending. A pod the provisioner places on a node no NodeClaim
owns is bound at once (`bind`). Not modelled: kube-scheduler's own placement of pods Karpenter
did not nominate, preemption, and any filter but taints and room.

Built by the `World` (`sim/world.py`), which hands `place`/`unplace` to the DaemonSet controller
and wires the bus's `trigger_bind`, `pod_left`, `bind` and `node_removed` here. It tells the
others through the bus (`sim/bus.py`): the kubelet starts a bound pod (`start_pod`), the pod
controller forgets the pod's unschedulable reason (`pod_bound`).

Which nominations a pass tries (`retry_changed`): kube-scheduler itself does not retry an
unschedulable pod on every pass; its scheduling queue parks it and moves it back when a cluster
event could make it schedulable (kubernetes/kubernetes `pkg/scheduler/internal/queue`
`scheduling_queue.go`, the event-driven requeue with QueueingHints). Here a bind try reads only
the pod's nomination, its NodeClaim's Node (`node_of_claim`), that Node, the pod's spec and the
node's used requests, so a pass tries only the nominations one of those changed for since their
last try (`sim/bindqueue.py`, a whole run's events are the same as when every nomination is
tried on every pass: tests/sim/test_bind_fast_path.py).
"""

from __future__ import annotations

from gpucap.apis.core import Node, Pod, PodSpec
from gpucap.apis.quantity import base_units
from gpucap.controllers.nodeclaim.podevents import PodEvents
from gpucap.runtime.clock import Clock
from gpucap.runtime.memo import Memo
from gpucap.scheduling.resources import Resources, add, fits, pod_requests, subtract
from gpucap.scheduling.taints import untolerated
from gpucap.sim.bindqueue import BindQueue
from gpucap.sim.bus import Bus, Loop
from gpucap.state.cluster import Cluster

__all__ = ["KubeScheduler"]


class KubeScheduler:
    """kube-scheduler's cache and binder (see the module docstring)."""

    # Try only the nominations whose inputs changed since their last try (`BindQueue`);
    # false: every nomination on every pass (the reference tests/sim/test_bind_fast_path.py
    # compares whole runs with).
    retry_changed = True

    def __init__(self, bus: Bus, cluster: Cluster, pod_events: PodEvents, clock: Clock) -> None:
        self.bus = bus
        self.cluster = cluster
        self.pod_events = pod_events
        self.clock = clock
        # What a pod takes from a node, per PodSpec object (the run's: `Cluster.memos`).
        self.requests_of_spec = cluster.memos[_POD_TAKES].lookup
        self.loop = Loop("kube-scheduler", self.bind_all)
        self._on_node: dict[str, dict[str, Pod]] = {}  # node -> pods bound there
        self._where: dict[str, str] = {}  # pod -> its node
        self._used: dict[str, Resources] = {}  # node -> requests of its pods
        # Pod -> the (Node, pod, used requests) objects of its last failed bind (`try_bind`).
        self._unbindable: dict[str, tuple[Node, Pod, Resources | None]] = {}
        self.queue = BindQueue(cluster, bus) if self.retry_changed else None

    # ---- which pods are on which node (kube-scheduler's cache) -------------------------------
    def place(self, pod: Pod, node: str) -> None:
        self._on_node.setdefault(node, {})[pod.key] = pod
        self._where[pod.key] = node
        self._used[node] = add(self._used.get(node, {}), self.requests_of_spec(pod.spec))
        if self.queue is not None:
            self.queue.used_changed(node)

    def unplace(self, key: str) -> None:
        """Pod `key` left its node (deleted, evicted, its node gone): free its requests and
        record the pod event on the node's NodeClaim (consolidateAfter counts from it)."""
        node = self._where.pop(key, None)
        if node is None:
            return
        pod = self._on_node.get(node, {}).pop(key, None)
        if pod is None:
            return
        self._used[node] = subtract(self._used.get(node, {}), self.requests_of_spec(pod.spec))
        if self.queue is not None:
            self.queue.used_changed(node)
        if self.cluster.node(node) is not None:
            self.pod_events.pod_changed(pod, node)

    def deleted(self, key: str) -> None:
        """Pod `key` was deleted: forget its last failed bind and its place."""
        self._unbindable.pop(key, None)
        if self.queue is not None:
            self.queue.forget(key)
        self.unplace(key)

    def node_removed(self, node: str) -> None:
        """Node `node` went with its NodeClaim: its pods left it."""
        for key in list(self._on_node.get(node, {})):
            self.unplace(key)
        self._on_node.pop(node, None)
        self._used.pop(node, None)
        if self.queue is not None:
            self.queue.used_changed(node)

    # ---- binding ------------------------------------------------------------------------------
    def bind_all(self) -> float | None:
        """Bind every nominated pod whose node can take it now (nomination order): with the
        queue, try only those whose inputs changed since their last try (the others would
        fail again), in the same order."""
        nominations = self.cluster.nominations()
        if self.queue is None:
            for key, claim_name in sorted(nominations.items()):
                node = self.bus.node_of_claim(claim_name)
                if node is not None:
                    self.try_bind(key, node)
            return None
        queue = self.queue
        queue.start(nominations)
        while (pod_key := queue.next()) is not None:
            claim_name = nominations[pod_key]
            node_name = self.bus.node_of_claim(claim_name)
            queue.tried(pod_key, claim_name, node_name)
            if node_name is not None and self.try_bind(pod_key, node_name):
                queue.bound(pod_key)
        return None

    def try_bind(self, key: str, node_name: str) -> bool:
        """Bind pod `key` to `node_name` if the node can take it now. The answer depends on
        the Node, the pod and the node's used requests only (frozen models; `_used` entries
        are replaced, never changed in place): a try that failed is not repeated while all
        three are the same objects. True when it bound."""
        node = self.cluster.node(node_name)
        if node is None or node.metadata.deletion_timestamp is not None:
            return False
        pod = self.cluster.pod(key)
        if pod.spec.node_name:
            return False  # still on the node being deleted it was nominated away from
        used = self._used.get(node_name)
        failed = self._unbindable.get(key)
        if failed is not None and failed[0] is node and failed[1] is pod and failed[2] is used:
            return False
        if not self.can_bind(node, pod, used):
            self._unbindable[key] = (node, pod, used)
            return False
        self._unbindable.pop(key, None)
        self.bind(key, node_name)
        return True

    def can_bind(self, node: Node, pod: Pod, used: Resources | None) -> bool:
        if not node.is_ready:
            return False
        taints = [t for t in node.spec.taints if t.effect in ("NoSchedule", "NoExecute")]
        if untolerated(taints, pod.spec.tolerations) is not None:
            return False
        free = subtract(base_units(node.status.allocatable), used or {})
        return fits(self.requests_of(pod), free)

    def bind(self, key: str, node_name: str) -> None:
        status = self.cluster.pod(key).status.model_copy(
            update={"phase": "Running", "start_time": self.clock.now().isoformat()}
        )
        pod = self.cluster.bind(key, node_name, status=status)
        self.place(pod, node_name)
        self.pod_events.pod_changed(pod, node_name)
        claim = self.bus.claim_of_node(node_name)
        self.bus.emit("PodBound", pod=key, node=node_name, nodeClaim=claim)
        self.bus.pod_bound(key)
        self.bus.start_pod(pod, node_name, claim)

    def requests_of(self, pod: Pod) -> Resources:
        """What the pod takes from a node (its requests and `pods: 1`), shared per `PodSpec`
        object (frozen; the pods of a template share it): callers only read it."""
        return self.requests_of_spec(pod.spec)


def _pod_takes_of(spec: PodSpec) -> Resources:
    return add(pod_requests(spec), {"pods": 1})


_POD_TAKES = Memo.identity(_pod_takes_of, size=8192)
