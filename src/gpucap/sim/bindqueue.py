"""`BindQueue`: which nominations the simulator's kube-scheduler bind pass tries, the ones whose
inputs changed since their last try.

kube-scheduler does not retry an unschedulable pod on every pass: its scheduling queue parks the
pod and moves it back to the active queue on a cluster event that could make it schedulable
(kubernetes/kubernetes `pkg/scheduler/internal/queue/scheduling_queue.go`, the event-driven
requeue with QueueingHints). The simulator's bind try (`sim/binder.py` `KubeScheduler.try_bind`)
reads the pod's nomination in force, its NodeClaim's Node (`Bus.node_of_claim`: the kubelet
model's, or the Node with the NodeClaim's provider ID), that Node, the pod and the node's used
requests; with the same inputs it decides the same. So a pod is tried again only when
- its nomination came into force or changed (against the last pass's nominations: the keys the
  cluster logged as put in force since, `Nominations.log`, or the two compared when the
  cluster computed its answer whole meanwhile),
- its Pod object changed, or the NodeClaim it was nominated to,
- the Node its last try looked at changed, or one whose NodeClaim is its own appeared,
- the used requests of that node changed (`used_changed`, from the binder's own cache).
What was written the queue hears from the cluster's change feed (`Cluster.watch`, with
`Cluster.changing` naming the pod, Node or NodeClaim), as the scheduling queue hears informer
events; it looks at the written names when the pass next asks (`_collect`): work per change,
not per nomination and pass.
Within a pass the order is the plain
pass's (pod key order): a pod whose inputs change mid-pass (a bind before it used its node's room)
is tried in this pass if it comes later, else in the next, as the plain pass would.

Owned by `KubeScheduler` (`queue`; `KubeScheduler.retry_changed` false: no queue, every
nomination on every pass, the reference tests/sim/test_bind_fast_path.py compares whole runs
with).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from gpucap.apis.core import Node
from gpucap.sim.bus import Bus
from gpucap.state.changes import ClusterChange
from gpucap.state.cluster import Cluster

__all__ = ["BindQueue"]


class BindQueue:
    """The nominations to try, per pass (see the module docstring). Called by `KubeScheduler`:
    `start` at a pass's start, `next` for each pod to try, `tried`/`bound` after each try,
    `used_changed` when a node's used requests change, `forget` when a pod is deleted."""

    def __init__(self, cluster: Cluster, bus: Bus) -> None:
        self.cluster = cluster
        self.bus = bus
        self._dirty: set[str] = set()  # pods to try at the next pass
        self._heap: list[str] = []  # pods to try in this pass, after `_pos`
        self._queued: set[str] = set()  # what `_heap` holds
        self._pos = ""  # the last pod tried in this pass ("": none yet; keys are not empty)
        self._nominations: dict[str, str] = {}  # this pass's nominations in force
        self._last: dict[str, str] = {}  # the last pass's
        # Where the cluster's log of nominations put in force stood at the last pass
        # (`Nominations.epoch`, `len(log)`; see `start`).
        self._cursor = (-1, 0)
        # Per pod tried and not bound: the NodeClaim and Node its last try looked at; indexed.
        self._claim_of: dict[str, str] = {}
        self._node_of: dict[str, str] = {}
        self._by_claim: dict[str, set[str]] = {}
        self._by_node: dict[str, set[str]] = {}
        # The Nodes and NodeClaims (names) written since the last look (`heard`).
        self._names: set[str] = set()
        cluster.watch(self.heard)

    # ---- a pass ---------------------------------------------------------------------------------
    def start(self, nominations: dict[str, str]) -> None:
        """A pass over `nominations` (the nominations in force, the caller's dict) starts."""
        # Between passes `_nominations` is empty: what is marked now waits in `_dirty`. The
        # nominations new or changed against the last pass's: among the keys the cluster logged
        # as put in force since (`Nominations.log`), or, when it computed the answer whole
        # meanwhile, a comparison of the two.
        kept = self.cluster.kept_nominations
        last = self._last
        if self._cursor[0] == kept.epoch:
            logged = kept.log[self._cursor[1] :]
            self._mark(
                [k for k in logged if (c := nominations.get(k)) is not None and last.get(k) != c]
            )
        else:
            self._mark([k for k, _ in nominations.items() - last.items()])
        self._cursor = (kept.epoch, len(kept.log))
        self._collect()
        self._last = self._nominations = nominations
        # Dirty pods without a nomination in force are not tried (as in the plain pass); a
        # nomination coming into force later is new against `_last`.
        self._heap = sorted(k for k in self._dirty if k in nominations)
        self._queued = set(self._heap)
        self._dirty = set()
        self._pos = ""

    def next(self) -> str | None:
        """The next pod to try in this pass (key order), None at the pass's end."""
        self._collect()
        if not self._heap:
            self._nominations = {}
            return None
        key = heapq.heappop(self._heap)
        self._queued.discard(key)
        self._pos = key
        return key

    def tried(self, key: str, claim: str, node: str | None) -> None:
        """Pod `key` is tried against NodeClaim `claim`'s Node `node` (None: none yet)."""
        self._unindex(key)
        self._claim_of[key] = claim
        self._by_claim.setdefault(claim, set()).add(key)
        if node is not None:
            self._node_of[key] = node
            self._by_node.setdefault(node, set()).add(key)

    def bound(self, key: str) -> None:
        """Pod `key` was bound: no try of it waits on anything."""
        self._unindex(key)

    def forget(self, key: str) -> None:
        """Pod `key` was deleted."""
        self._unindex(key)
        self._dirty.discard(key)

    def used_changed(self, node: str) -> None:
        """The used requests of Node `node` changed (a pod placed or gone, the node gone)."""
        self._mark(self._by_node.get(node, ()))

    # ---- what changed ---------------------------------------------------------------------------
    def _mark(self, keys: Iterable[str]) -> None:
        """Pods `keys` are to be tried again: later in this pass if they come after the last
        one tried and have a nomination in force, else at the next pass."""
        for key in keys:
            if key > self._pos and key in self._nominations:
                if key not in self._queued:
                    heapq.heappush(self._heap, key)
                    self._queued.add(key)
            else:
                self._dirty.add(key)

    def heard(self, change: ClusterChange) -> None:
        """The cluster's change feed (`Cluster.watch`, `Cluster.changing` the name): a pod
        written is tried again; a Node's or NodeClaim's name is looked at by `_collect`."""
        name = self.cluster.changing
        if not name:
            return  # deletion marks, other objects: not what a bind try reads
        if change is ClusterChange.PODS:
            self._mark((name,))
        elif change is ClusterChange.NODES:
            self._names.add(name)

    def _collect(self) -> None:
        """Mark the pods waiting on the Nodes and NodeClaims written since the last look: those
        whose last try looked at the Node or NodeClaim of that name, and those nominated to
        the NodeClaim of a Node written (it may have just appeared for it)."""
        if not self._names:
            return
        names, self._names = self._names, set()
        for name in sorted(names):
            self._mark(tuple(self._by_node.get(name, ())))
            self._mark(tuple(self._by_claim.get(name, ())))
            node = self.cluster.node(name)
            for claim_name in (self.bus.claim_of_node(name), self._claim_by_id(node)):
                if claim_name is not None and claim_name != name:
                    self._mark(tuple(self._by_claim.get(claim_name, ())))

    def _claim_by_id(self, node: Node | None) -> str | None:
        if node is None or not node.spec.provider_id:
            return None
        claim = self.cluster.node_claim_for_node(node)
        return claim.name if claim is not None else None

    def _unindex(self, key: str) -> None:
        claim = self._claim_of.pop(key, None)
        if claim is not None:
            self._by_claim[claim].discard(key)
            if not self._by_claim[claim]:
                del self._by_claim[claim]
        node = self._node_of.pop(key, None)
        if node is not None:
            self._by_node[node].discard(key)
            if not self._by_node[node]:
                del self._by_node[node]
