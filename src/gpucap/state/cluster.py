"""The cluster as it changes: what the simulator and `plan` both feed (Karpenter's
`state.Cluster`, kubernetes-sigs/karpenter `pkg/controllers/state/cluster.go`).

A `Cluster` holds the objects a cluster would have after `kubectl apply`: pods (bound,
nominated or pending), Nodes, NodeClaims, and the applied NodePools, EC2NodeClasses,
DaemonSets, NodeOverlays, ConfigMaps, ClusterPolicies and workloads (objects are keyed by kind,
namespace and name; re-applying one replaces it where it stood, as `Manifests` orders them).
`snapshot()` is the cluster-state view the scheduler reads, with exactly the rules of
`state.snapshot.snapshot` (a Node and its NodeClaim are one state node, an uninitialized node
takes missing or zero resources from its NodeClaim, ...), plus what only a live cluster has:

- *Nominations.* A pod the provisioner placed on a NodeClaim is nominated to it until it is
  bound or the nomination ends (`until`, in the clock's seconds; Karpenter's window is
  `NOMINATION_WINDOW`). A nominated pod is not pending; it counts on its NodeClaim's state node
  (its requests are taken there), so a second pass does not launch for it again. Deleting the
  NodeClaim returns its nominated pods to pending. Karpenter re-solves nominated pods each pass
  (they stay pending) and lands them on the same in-flight capacity; gpucap keeps them there,
  as `plan`'s passes already do (docs/design/scheduling.md, "Provisioning loop").
- *Marked for deletion* (`mark_for_deletion`): disruption's decision before the NodeClaim is
  deleted; such state nodes do not count against limits and take no pods.
- *NodePool usage* (`nodepool_usage`): Karpenter's `NodePoolResourcesFor`, the sum over the
  pool's state nodes not marked for deletion of `Capacity()` plus `nodes: 1`. A NodeClaim in
  flight, or a node not yet initialized, counts its instance type's capacity (the physical GPUs
  its NodeClaim status carries) for every resource its Node does not report yet; an initialized
  node counts what its Node advertises (a GPU time-sliced 4 ways counts 4). So a pool limited to
  `nvidia.com/gpu: 6` can launch six one-GPU nodes while they come up and is then at 24.
- *Consolidation state* (`consolidation`, `state/consolidation.py`), which this class marks from
  its own mutations (`mark_unconsolidated`), and the run's *memos* (`memos`, `runtime/memo.py`):
  what the controllers keep about this cluster's objects from pass to pass, dropped with it.
- *Change feed* (`watch`, `version`): every mutation calls the watchers with what it changed
  (`ClusterChange`), from inside the mutation, as Karpenter's controllers hear of changes
  through the API server's watches; the simulator's bus is the watcher (`sim/bus.py`).

Called by the simulator's world (`sim/world.py`), the controllers (`controllers/nodeclaim`,
`controllers/nodeclaim/termination.py`, `controllers/interruption.py`) and the provisioner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

from gpucap.apis.admission import admit
from gpucap.apis.core import ConfigMap, Node, Pod, PodDisruptionBudget, PodStatus
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.expansion import POD_CREATORS, PodCreator, expand_keys
from gpucap.apis.gpuoperator import ClusterPolicy
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.quantity import base_units
from gpucap.apis.serde import KINDS, KubeObject, Manifest, Manifests, Source
from gpucap.apis.workloads import DaemonSet
from gpucap.runtime.clock import Clock
from gpucap.runtime.memo import Memos
from gpucap.scheduling.existingnode import StateNode
from gpucap.state.changes import ClusterChange, pod_change
from gpucap.state.consolidation import ConsolidationState, same_view, state_node_view
from gpucap.state.nominations import Nominations
from gpucap.state.snapshot import (
    UNITS,
    Snapshot,
    claim_of,
    claim_state,
    claims_by_node,
    is_pending,
    node_state,
)

__all__ = [
    "NOMINATION_WINDOW",
    "Applied",
    "Cluster",
    "Released",
    "object_key",
]

# pkg/controllers/state/statenode.go `nominationWindow`: max(2 x BATCH_MAX_DURATION, 10s), with
# BATCH_MAX_DURATION = 10s by default (pkg/operator/options/options.go): 20 seconds.
NOMINATION_WINDOW = 20.0

_OWN_STORES = ("Pod", "Node", "NodeClaim")
# Kinds whose every change marks the cluster unconsolidated: Karpenter's NodePool informer
# (`pkg/controllers/state/informer/nodepool.go`) and NodeOverlay controller
# (`pkg/controllers/nodeoverlay/controller.go`, after it updates the instance type store).
_UNCONSOLIDATING_KINDS = frozenset({"NodePool", "NodeOverlay"})


def object_key(kind: str, namespace: str | None, name: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of an object; cluster-scoped kinds have namespace "" and
    namespaced ones default to "default" (as `kubectl apply` puts them)."""
    namespaced = KINDS[kind][2] if kind in KINDS else True
    return (kind, (namespace or "default") if namespaced else "", name)


def _key_of(obj: KubeObject) -> tuple[str, str, str]:
    return object_key(obj.kind, obj.metadata.namespace, obj.metadata.name)


@dataclass(frozen=True, slots=True)
class Applied:
    """What an apply or delete changed among the pods: created (pending) and deleted, by key."""

    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Released:
    """Pods a removal let go: back to pending (`pending`) or gone with their node (`deleted`,
    DaemonSet pods)."""

    pending: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


# What one state node is built from (`Cluster.snapshot`): its Node (None for a NodeClaim no
# Node matched), its NodeClaim, the version at which its bound pods last changed, the pods
# nominated to it and whether it is marked for deletion. A plain tuple: one is made per state
# node per snapshot.
_StateInputs = tuple[Node | None, NodeClaim | None, int, tuple[Pod, ...], bool]
# One state node of the snapshot's layout: its key in `Cluster._states` (whether it is a
# Node's, and its name), the name of its Node (None: a NodeClaim no Node matched) and of its
# NodeClaim (None: a Node no NodeClaim matched).
_Slot = tuple[tuple[bool, str], str | None, str | None]


def _same_inputs(a: _StateInputs, b: _StateInputs) -> bool:
    """Whether two state nodes' inputs are the same objects (see `Cluster.snapshot`)."""
    return (
        a[0] is b[0]
        and a[1] is b[1]
        and a[2] == b[2]
        and a[4] == b[4]
        and len(a[3]) == len(b[3])
        and all(x is y for x, y in zip(a[3], b[3], strict=True))
    )


def _index(index: dict[str, set[str]], key: str | None, name: str) -> None:
    if key:
        index.setdefault(key, set()).add(name)


def _unindex(index: dict[str, set[str]], key: str | None, name: str) -> None:
    # An emptied entry goes: the indexes are read with `get`, and the pods-on-node one is
    # walked per snapshot (a day's fleet has names of thousands of Nodes long gone).
    names = index.get(key) if key else None
    if key and names is not None:
        names.discard(name)
        if not names:
            del index[key]


def _is_daemon(pod: Pod) -> bool:
    return any(o.kind == "DaemonSet" for o in pod.metadata.owner_references)


def _unbound(pod: Pod) -> Pod:
    """The pod as its controller recreates it after eviction: unbound, Pending."""
    spec = pod.spec.model_copy(update={"node_name": None})
    status = pod.status.model_copy(
        update={"phase": "Pending", "conditions": [], "nominated_node_name": None}
    )
    return pod.model_copy(update={"spec": spec, "status": status})


class Cluster:
    """Mutable cluster state (module docstring); `clock` dates nominations (none: no end)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock
        self._objects: dict[tuple[str, str, str], Manifest] = {}
        self._kinds: dict[str, list[Any]] = {}  # `_of_kind`'s lists, until an object changes
        self._pods: dict[str, Pod] = {}
        # Index of `_pods` for `pods_on`: node name -> keys of the pods bound to it, and each
        # key's insertion number (its place in `_pods`' order). Kept by `_put` and `_drop`,
        # the only writers of `_pods`.
        self._on_node: dict[str, set[str]] = {}
        self._seq: dict[str, int] = {}
        self._next_seq = 0
        # Keys of the pods bound to no node (kept by `_put` and `_drop` too): the pending
        # pods are among them.
        self._unbound: set[str] = set()
        self._nodes: dict[str, Node] = {}
        self._claims: dict[str, NodeClaim] = {}
        self._marked: set[str] = set()
        self._applied = 0
        # Indexes of `_claims` and `_nodes` (see `_set_claim`).
        self._claim_seq: dict[str, int] = {}
        self._node_seq: dict[str, int] = {}
        self._claims_by_pid: dict[str, set[str]] = {}
        self._claims_by_node_name: dict[str, set[str]] = {}
        self._nodes_by_pid: dict[str, set[str]] = {}
        # Applied workload -> the keys of the pods it makes, from `apply` (see `_pod_keys`).
        self._made: dict[tuple[str, str, str], list[str]] = {}
        # Bumped by every change to pods, Nodes, NodeClaims, nominations and marks: what
        # `snapshot()` reads besides the clock (nominations expire).
        self._version = 0
        # Node name -> the version at which the pods bound to it last changed.
        self._pods_changed: dict[str, int] = {}
        # The last snapshot and its key; per state node, its inputs and the StateNode built
        # from them (see `snapshot`).
        self._snap: tuple[tuple[object, ...], Snapshot] | None = None
        self._states: dict[tuple[bool, str], tuple[_StateInputs, StateNode]] = {}
        # Bumped by `_set_claim`, `_pop_claim`, `_set_node` and `_pop_node` when what
        # `_layout_now` reads changes: an entry added or removed, a NodeClaim's nodeName or
        # provider ID, a Node's provider ID.
        self._structure = 0
        self._layout: tuple[int, list[_Slot], frozenset[str], dict[str, list[int]]] | None = None
        # The last build of the state nodes: its layout, the state nodes, the nominated pods
        # per state node and the marked names; and the names (Nodes, NodeClaims, Nodes whose
        # bound pods changed) written since (see `snapshot`).
        self._built: (
            tuple[list[_Slot], list[StateNode], dict[str, tuple[Pod, ...]], set[str]] | None
        ) = None
        self._dirty: set[str] = set()
        # Names of the NodeClaims without a provider ID (see `synced`).
        self._unlaunched: set[str] = set()
        # Karpenter's consolidation state, marked by `mark_unconsolidated`, which this class
        # calls from its own mutations (see there).
        self.consolidation = ConsolidationState()
        # This run's memos (`runtime/memo.py`): what the controllers keep from pass to pass
        # about this cluster's objects lives and dies with the cluster, not the process.
        self.memos = Memos()
        self._units = self.memos[UNITS].lookup
        # The change feed (`watch`): who hears of every mutation, and how many there were.
        self._watchers: list[Callable[[ClusterChange], None]] = []
        self._changes, self.changing = 0, ""
        # Bumped by `_set_claim`/`_pop_claim` (`_claims`' only writers; expiration's skip reads
        # it); the nominations, with the ones in force kept (`state/nominations.py`).
        self.claims_version = 0
        self.kept_nominations = Nominations(self._claims, self._pods)
        self._nominations = self.kept_nominations.all

    @classmethod
    def from_manifests(cls, manifests: Manifests, *, clock: Clock | None = None) -> Cluster:
        """The cluster holding `manifests`' objects, pods (workloads expanded), Nodes and
        NodeClaims, in input order."""
        out = cls(clock)
        for m in manifests.items:
            kind = m.obj.kind
            if kind == "Node":
                out._set_node(cast(Node, m.obj))
            elif kind == "NodeClaim":
                out._set_claim(cast(NodeClaim, m.obj))
            elif kind != "Pod":
                out._objects[_key_of(m.obj)] = m
                out._kinds.clear()  # (a Node or NodeClaim written may have asked for a kind)
        out._version += 1
        for pod in manifests.pods:
            out._put(pod)
        return out

    # ---- the view the scheduler reads -----------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Cluster state as `state.snapshot.snapshot` builds it from the same objects, with
        nominated pods on their NodeClaims' state nodes and `mark_for_deletion` applied.

        Built from what changed: the same snapshot object while nothing it reads changed
        (the version counter and the nominations in force), and per state node the same
        `StateNode` while its Node, NodeClaim, bound pods, nominated pods and mark are the
        same objects (frozen models and a frozen StateNode: the same inputs, the same
        value). The simulator snapshots every pass; most nodes did not change since the last."""
        nominated = self._active_nominations()
        key = (self._version, tuple(nominated.items()))
        if self._snap is not None and self._snap[0] == key:
            return self._snap[1]
        state_names: dict[str, str] = {}
        extra: dict[str, list[Pod]] = {}
        for pod_key, claim_name in nominated.items():
            name = state_names.get(claim_name)
            if name is None:
                name = state_names[claim_name] = self._state_node_name(claim_name)
            extra.setdefault(name, []).append(self._pods[pod_key])
        marked = {self._state_node_name(n) for n in self._marked}
        nominees = {name: tuple(pods) for name, pods in extra.items()}
        slots, known, where = self._layout_now()
        built = self._built
        if built is not None and built[0] is slots:
            # The same layout as the last build: only the state nodes whose inputs may have
            # changed since are looked at (a Node, NodeClaim or bound pod written, nominated
            # pods or a mark that differ); the others are the last build's.
            out = list(built[1])
            touched = self._touched(built, nominees, marked)
            for i in sorted({i for name in touched for i in where.get(name, ())}):
                out[i] = self._slot_state(self._states, slots[i], nominees, marked)
        elif built is not None:
            # A new layout (a Node or NodeClaim added or removed, a match changed): a slot the
            # last build had, the same (key, Node, NodeClaim), none of whose names was touched
            # since, has the same inputs, so the last build's state node; the others are
            # looked at as on the first build.
            touched = self._touched(built, nominees, marked)
            last = {slot: i for i, slot in enumerate(built[0])}
            states: dict[tuple[bool, str], tuple[_StateInputs, StateNode]] = {}
            out = []
            for slot in slots:
                was = last.get(slot)
                slot_key, node_of, claim_of_slot = slot
                if (
                    was is None
                    or slot_key[1] in touched
                    or node_of in touched
                    or claim_of_slot in touched
                ):
                    out.append(self._slot_state(states, slot, nominees, marked))
                else:
                    states[slot_key] = self._states[slot_key]
                    out.append(built[1][was])
            self._states = states
        else:
            states = {}
            out = [self._slot_state(states, slot, nominees, marked) for slot in slots]
            self._states = states
        self._dirty.clear()
        self._built = (slots, out, nominees, marked)
        seq = self._seq.__getitem__
        # The pods bound to a name no state node has (a set difference: most runs have none).
        on_node = self._on_node
        unknown = sorted((k for node in on_node.keys() - known for k in on_node[node]), key=seq)
        pending = sorted((k for k in self._unbound if k not in nominated), key=seq)
        snap = Snapshot(
            tuple(p for p in (self._pods[k] for k in pending) if is_pending(p)),
            tuple(out),
            tuple(self._pods[k] for k in unknown),
        )
        self._snap = (key, snap)
        return snap

    def _touched(
        self,
        built: tuple[list[_Slot], list[StateNode], dict[str, tuple[Pod, ...]], set[str]],
        nominees: dict[str, tuple[Pod, ...]],
        marked: set[str],
    ) -> set[str]:
        """The names whose state nodes' inputs may differ from the last build's: written since
        (`_dirty`), other nominated pods (by identity), or marked or unmarked."""
        touched = set(self._dirty)
        last_nominees = built[2]
        for name in nominees.keys() | last_nominees.keys():
            a, b = nominees.get(name, ()), last_nominees.get(name, ())
            if len(a) != len(b) or any(x is not y for x, y in zip(a, b, strict=True)):
                touched.add(name)
        touched |= marked ^ built[3]
        return touched

    def has_pending(self) -> bool:
        """Whether `snapshot().pending` has a pod, without building the snapshot: an unbound
        pod that is pending (`is_pending`) and not nominated now. The world asks it before a
        provisioning pass, which needs the snapshot only when a pod is pending."""
        nominated = self._active_nominations()
        pods = self._pods
        return any(k not in nominated and is_pending(pods[k]) for k in self._unbound)

    def _slot_state(
        self,
        states: dict[tuple[bool, str], tuple[_StateInputs, StateNode]],
        slot: _Slot,
        nominees: dict[str, tuple[Pod, ...]],
        marked: set[str],
    ) -> StateNode:
        """The state node of one layout slot now: the last one built when its inputs are the
        same objects, else built (and kept in `states`)."""
        key, node_of, claim_of_slot = slot
        node = self._nodes[node_of] if node_of is not None else None
        here = key[1]
        inputs: _StateInputs = (
            node,
            self._claims[claim_of_slot] if claim_of_slot is not None else None,
            self._pods_changed.get(here, 0) if node is not None else 0,
            nominees.get(here, ()),
            here in marked,
        )
        hit = self._states.get(key)
        if hit is not None and _same_inputs(hit[0], inputs):
            states[key] = hit
            return hit[1]
        return self._state(states, key, inputs)

    def _layout_now(self) -> tuple[list[_Slot], frozenset[str], dict[str, list[int]]]:
        """The state nodes in snapshot order, each with the name of its Node (None for a
        NodeClaim no Node matched) and of its NodeClaim, and their names: every Node in the
        map's order with the NodeClaim `claim_of` finds for it, then the NodeClaims no Node
        matched. A function of the two maps' orders, the Nodes' names and provider IDs and
        the NodeClaims' `status.nodeName` and provider IDs only: kept while none of those
        changed (`_structure`). Pod, nomination and mark changes and the NodeClaim updates of
        a running cluster (conditions, last pod event) do not touch it."""
        layout = self._layout
        if layout is not None and layout[0] == self._structure:
            return layout[1], layout[2], layout[3]
        claims = claims_by_node(list(self._claims.values()))
        slots: list[_Slot] = []
        matched: set[str] = set()
        for node in self._nodes.values():
            claim = claim_of(node, claims)
            if claim is not None:
                matched.add(claim.name)
            name = node.metadata.name
            slots.append(((True, name), name, claim.name if claim is not None else None))
        for nc in self._claims.values():
            if nc.name not in matched:
                slots.append(((False, nc.name), None, nc.name))
        known = frozenset(key[1] for key, _, _ in slots)
        # Name (of a state node, a Node or a NodeClaim) -> the slots it is part of.
        where: dict[str, list[int]] = {}
        for i, (key, node_of, claim_of_slot) in enumerate(slots):
            for part in {key[1], node_of, claim_of_slot}:
                if part is not None:
                    where.setdefault(part, []).append(i)
        self._layout = (self._structure, slots, known, where)
        return slots, known, where

    def _state(
        self,
        states: dict[tuple[bool, str], tuple[_StateInputs, StateNode]],
        key: tuple[bool, str],
        inputs: _StateInputs,
    ) -> StateNode:
        """The state node of `inputs` (a Node's when key[0], else an unmatched NodeClaim's),
        built now (`snapshot` reuses the last one when its inputs are the same objects)."""
        node, claim, _, nominated, marked = inputs
        if node is not None:
            base = node_state(node, claim, self.pods_on(node.metadata.name), self._units)
        else:
            assert claim is not None
            base = claim_state(claim, self._units)
        built = (
            replace(
                base,
                pods=(*base.pods, *nominated),
                marked_for_deletion=base.marked_for_deletion or marked,
            )
            if nominated or marked
            else base
        )
        states[key] = (inputs, built)
        return built

    def state_node(self, name: str) -> StateNode | None:
        """The state node named `name` (a Node's name, or an unregistered NodeClaim's)."""
        return next((n for n in self.snapshot().nodes if n.name == name), None)

    def nodepool_usage(self, name: str) -> dict[str, int]:
        """Karpenter's `NodePoolResourcesFor(name)`: capacity plus `nodes: 1` summed over the
        pool's state nodes not marked for deletion (base units; see the module docstring)."""
        usage: dict[str, int] = {}
        for n in self.snapshot().nodes:
            if n.nodepool != name or n.marked_for_deletion:
                continue
            for k, v in {**n.capacity, "nodes": 1}.items():
                usage[k] = usage.get(k, 0) + v
        return dict(sorted(usage.items()))

    def nodepool_exceeded(self, name: str) -> list[tuple[str, int, int]]:
        """(resource, usage, limit) for each limit of NodePool `name` its usage is strictly
        above (Karpenter's `Limits.ExceededBy`, checked before a NodeClaim is created)."""
        pool = self.nodepool(name)
        if pool is None or not pool.spec.limits:
            return []
        usage = self.nodepool_usage(name)
        limits = base_units(pool.spec.limits)
        return [(r, usage[r], lim) for r, lim in sorted(limits.items()) if usage.get(r, 0) > lim]

    def synced(self) -> bool:
        """Karpenter's `Cluster.Synced` once hydrated: every NodeClaim has launched (has a
        provider ID); the provisioner waits for it before a pass. From the set of NodeClaims
        without one that `_set_claim` and `_pop_claim` keep (the disruption loop asks every
        pass)."""
        return not self._unlaunched

    # ---- pods -------------------------------------------------------------------------------
    def pods(self) -> list[Pod]:
        return list(self._pods.values())

    def pod_count(self) -> int:
        """`len(pods())` without the list (the world checks it on every scale event)."""
        return len(self._pods)

    def pod(self, key: str) -> Pod:
        return self._pods[key]

    def add_pod(self, pod: Pod) -> None:
        """Add a pod, or replace the pod with its key where it stood."""
        self._put(pod)

    def delete_pod(self, key: str) -> Pod | None:
        if self.kept_nominations.pop(key) is not None:
            self._version += 1
        return self._drop(key)

    def bind(self, pod_key: str, node_name: str, *, status: PodStatus | None = None) -> Pod:
        """Bind a pod to a Node (kube-scheduler's binding); its nomination ends. With `status`
        the bound pod has it too (the kubelet's view once it runs), in the same write."""
        if node_name not in self._nodes:
            raise KeyError(f"no node {node_name!r} to bind {pod_key} to")
        pod = self._pods[pod_key]
        update: dict[str, object] = {"spec": pod.spec.model_copy(update={"node_name": node_name})}
        if status is not None:
            update["status"] = status
        bound = pod.model_copy(update=update)
        self._put(bound)
        self.kept_nominations.pop(pod_key)
        return bound

    def unbind(self, pod_key: str) -> Pod:
        """The pod evicted and recreated by its controller: unbound and pending, in its place.
        A nomination it got while its node was being deleted (the provisioner schedules the
        pods of deleting nodes) stays: kube-scheduler places it there."""
        pod = _unbound(self._pods[pod_key])
        self._put(pod)
        return pod

    def nominate(self, pod_key: str, claim_name: str, until: float | None = None) -> None:
        """Nominate a pending pod to NodeClaim `claim_name` until `until` (the clock's seconds;
        None: until bound or the NodeClaim is deleted)."""
        if pod_key not in self._pods:
            raise KeyError(f"no pod {pod_key!r}")
        if claim_name not in self._claims:
            raise KeyError(f"no NodeClaim {claim_name!r}")
        self.kept_nominations.set(pod_key, claim_name, until, self._now())
        self._version += 1
        self._changed(ClusterChange.PODS, pod_key)

    def nominations(self) -> dict[str, str]:
        """Pod key -> NodeClaim name, for the nominations in force (the caller's own dict)."""
        return dict(self._active_nominations())

    def nominated_to(self, claim_name: str) -> list[str]:
        return [k for k, c in self._active_nominations().items() if c == claim_name]

    def pending(self) -> list[Pod]:
        """Pods a provisioner would consider, nominated ones left out (see the module
        docstring), in the order they were added."""
        return list(self.snapshot().pending)

    def pods_on(self, node_name: str) -> list[Pod]:
        """The pods bound to `node_name`, in the order of `pods()` (from the index: the
        kube-scheduler model asks for every nomination it retries)."""
        keys = self._on_node.get(node_name)
        if not keys:
            return []
        return [self._pods[k] for k in sorted(keys, key=self._seq.__getitem__)]

    # ---- NodeClaims ---------------------------------------------------------------------------
    def node_claims(self) -> list[NodeClaim]:
        return list(self._claims.values())

    def node_claim(self, name: str) -> NodeClaim | None:
        return self._claims.get(name)

    def name_in_use(self, name: str) -> bool:
        """A NodeClaim or Node of this name exists (what a new NodeClaim may not be called:
        `controllers/provisioning/names.py`)."""
        return name in self._claims or name in self._nodes

    def add_node_claim(self, claim: NodeClaim) -> None:
        if claim.name in self._claims:
            raise KeyError(f"NodeClaim {claim.name!r} already exists")
        self._set_claim(claim)
        self._version += 1

    def update_node_claim(self, claim: NodeClaim) -> None:
        if claim.name not in self._claims:
            raise KeyError(f"no NodeClaim {claim.name!r}")
        self._set_claim(claim)
        self._version += 1

    def delete_node_claim(self, name: str) -> Released:
        """Remove a NodeClaim (its finalizer done); the pods nominated to it pend again."""
        self._pop_claim(name)
        self._marked.discard(name)
        self._version += 1
        return Released(pending=self.kept_nominations.release(name))

    def node_claim_for_node(self, node: Node) -> NodeClaim | None:
        """The NodeClaim a Node belongs to: by provider ID, else by `status.nodeName` (the
        first in the cluster's order, from the indexes `_set_claim` keeps)."""
        pid = node.spec.provider_id
        names = self._claims_by_pid.get(pid) if pid else None
        if not names:
            names = self._claims_by_node_name.get(node.metadata.name)
        if not names:
            return None
        if len(names) == 1:  # the usual case: no order to settle
            for name in names:
                return self._claims[name]
        return self._claims[min(names, key=self._claim_seq.__getitem__)]

    def nodes_for_claim(self, claim: NodeClaim) -> list[Node]:
        """Nodes whose provider ID is the NodeClaim's (Karpenter's `NodeForNodeClaim` lists
        these; more than one is an error there), in the cluster's order."""
        pid = claim.status.provider_id
        if not pid:
            return []
        names = self._nodes_by_pid.get(pid)
        if not names:
            return []
        return [self._nodes[n] for n in sorted(names, key=self._node_seq.__getitem__)]

    # ---- Nodes ----------------------------------------------------------------------------------
    def nodes(self) -> list[Node]:
        return list(self._nodes.values())

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def add_node(self, node: Node) -> None:
        if node.metadata.name in self._nodes:
            raise KeyError(f"node {node.metadata.name!r} already exists")
        self._set_node(node)
        self._version += 1

    def update_node(self, node: Node) -> None:
        if node.metadata.name not in self._nodes:
            raise KeyError(f"no node {node.metadata.name!r}")
        self._set_node(node)
        self._version += 1

    def delete_node(self, name: str) -> Released:
        """Remove a Node: its pods pend again (their controllers recreate them), its
        DaemonSet pods go with it."""
        self._pop_node(name)
        self._marked.discard(name)
        self._version += 1
        pending: list[str] = []
        deleted: list[str] = []
        # The pods bound to the node, in the pods' order: the `pods_on` index, not a scan.
        for key in sorted(self._on_node.get(name, ()), key=self._seq.__getitem__):
            pod = self._pods[key]
            if _is_daemon(pod):
                self._drop(key)
                deleted.append(key)
            else:
                self._put(_unbound(pod))
                pending.append(key)
        return Released(tuple(pending), tuple(deleted))

    # ---- the change feed -----------------------------------------------------------------------
    def watch(self, fn: Callable[[ClusterChange], None]) -> None:
        """Call `fn` with the kind of every mutation from now on, inside it (a mutation may call
        it more than once; `changing` names the pod key, Node or NodeClaim, else ""). The sim's
        bus watches (`sim/world.py`): what Karpenter's controllers learn from the API server's
        watches, its actors learn here, so no caller reports a change it made by hand."""
        self._watchers.append(fn)

    @property
    def version(self) -> int:
        """How many mutations the cluster has had (what `watch`'s callers heard)."""
        return self._changes

    def _changed(self, change: ClusterChange, name: str = "") -> None:
        self._changes, self.changing = self._changes + 1, name  # `changing`: see `watch`
        if change is ClusterChange.OBJECTS:  # `apply` and `delete`, the writers of `_objects`
            self._kinds.clear()
        for fn in self._watchers:
            fn(change)

    # ---- consolidation state -------------------------------------------------------------------
    def mark_unconsolidated(self) -> None:
        """Karpenter's `Cluster.MarkUnconsolidated` (kubernetes-sigs/karpenter
        `pkg/controllers/state/cluster.go` @ 2266468104f3): something changed that may let
        consolidation act where it could not before. Called from this class's own mutations,
        where Karpenter's cluster state calls it: a pod deleted (`DeletePod`; an eviction and a
        pod gone with its Node count as deletions), a pod bound to a node it was not bound to
        (`cleanupOldBindings`; DaemonSet pods too), a state node appearing or going
        (`triggerConsolidationOnChange`, `cleanupNodeClaim`: a NodeClaim getting its provider ID,
        a Node of its own, either deleted), a state node's Initialized or MarkedForDeletion
        turning (a deletion timestamp on a NodeClaim not marked for deletion already: a
        disruption command marks its candidates first, and `mark_for_deletion` itself does
        not count), a NodePool or NodeOverlay applied or deleted (Karpenter's NodePool and
        NodeOverlay informers). Not: a pod created, Ready or nominated, a Node registering to
        its NodeClaim, taints, insufficient-capacity marks (the 5-minute reset of the
        consolidation state covers those)."""
        self.consolidation.mark()

    def _consolidation_view(self, key: str) -> tuple[bool, bool] | None:
        """The state node of provider ID `key` (a Node without one: its name), as
        `triggerConsolidationOnChange` compares it: `(Initialized(), MarkedForDeletion())`, or
        None when there is no state node (no launched NodeClaim, no Node)."""
        claims = self._claims_by_pid.get(key)
        claim = self._claims[min(claims, key=self._claim_seq.__getitem__)] if claims else None
        nodes = self._nodes_by_pid.get(key)
        node: Node | None = None
        if nodes:
            node = self._nodes[min(nodes, key=self._node_seq.__getitem__)]
        elif key in self._nodes and not self._nodes[key].spec.provider_id:
            node = self._nodes[key]
        return state_node_view(claim, node, self._marked)

    def _consolidation_changed(self, before: tuple[bool, bool] | None, key: str) -> None:
        """Mark the cluster unconsolidated when state node `key` appeared, went, or turned
        Initialized or MarkedForDeletion since `before` (`triggerConsolidationOnChange`)."""
        if before != self._consolidation_view(key):
            self.mark_unconsolidated()

    # ---- disruption marks -------------------------------------------------------------------
    def mark_for_deletion(self, *names: str) -> None:
        """Mark NodeClaims or Nodes (by name) as about to be deleted (Karpenter's
        `MarkForDeletion`)."""
        self._marked.update(names)
        self._version += 1
        self._changed(ClusterChange.NODES)

    def unmark_for_deletion(self, *names: str) -> None:
        self._marked.difference_update(names)
        self._version += 1
        self._changed(ClusterChange.NODES)

    def marked_for_deletion(self) -> set[str]:
        return set(self._marked)

    # ---- applied objects ----------------------------------------------------------------------
    def apply(self, obj: KubeObject, source: Source | None = None) -> Applied:
        """Apply an object (create or replace by kind/namespace/name). A workload's pods follow
        it: pods it now makes that do not exist are created (pending), pods it no longer makes
        are deleted (by name, as a scale-down of its index-named pods)."""
        kind = obj.kind
        if kind == "Pod":
            pod = admit(cast(Pod, obj))  # as the API server stores it (`apis/admission.py`)
            created = () if pod.key in self._pods else (pod.key,)
            self.add_pod(pod)
            return Applied(created=created)
        if kind == "Node":
            node = cast(Node, obj)
            if node.metadata.name in self._nodes:
                self.update_node(node)
            else:
                self.add_node(node)
            return Applied()
        if kind == "NodeClaim":
            claim = cast(NodeClaim, obj)
            self._set_claim(claim)
            self._version += 1
            return Applied()
        key = _key_of(obj)
        previous = self._objects.get(key)
        if kind in _UNCONSOLIDATING_KINDS:
            self.mark_unconsolidated()
        if source is None:
            self._applied += 1
            source = Source("<applied>", self._applied)
        self._objects[key] = Manifest(obj, source, replaces=previous)
        self._changed(ClusterChange.OBJECTS)
        if not isinstance(obj, POD_CREATORS):
            return Applied()
        old = self._pod_keys(key, previous)
        new = expand_keys(obj)
        self._made[key] = [k for k, _ in new]
        return self._sync_pods(old, new)

    def delete(self, kind: str, namespace: str | None, name: str) -> Applied:
        """Delete an object by kind/namespace/name (a workload takes its pods with it)."""
        if kind == "Pod":
            key = f"{namespace or 'default'}/{name}"
            return Applied(deleted=(key,)) if self.delete_pod(key) is not None else Applied()
        if kind == "Node":
            self.delete_node(name)
            return Applied()
        if kind == "NodeClaim":
            self.delete_node_claim(name)
            return Applied()
        previous = self._objects.pop(object_key(kind, namespace, name), None)
        if previous is not None:
            self._changed(ClusterChange.OBJECTS)
        if previous is not None and kind in _UNCONSOLIDATING_KINDS:
            self.mark_unconsolidated()
        if previous is None or not isinstance(previous.obj, POD_CREATORS):
            return Applied()
        old = self._pod_keys(object_key(kind, namespace, name), previous)
        self._made.pop(object_key(kind, namespace, name), None)
        return self._sync_pods(old, [])

    def get(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        m = self._objects.get(object_key(kind, namespace, name))
        return m.obj if m is not None else None

    def objects(self) -> Manifests:
        """The applied objects other than pods, workloads, Nodes and NodeClaims (NodePools,
        node classes, DaemonSets, ConfigMaps, ClusterPolicies, ...), in the order applied:
        what the kubelet model reads for device plugins."""
        return Manifests(
            tuple(m for m in self._objects.values() if not isinstance(m.obj, POD_CREATORS))
        )

    def workloads(self) -> list[PodCreator]:
        return [m.obj for m in self._objects.values() if isinstance(m.obj, POD_CREATORS)]

    def nodepools(self) -> list[NodePool]:
        return self._of_kind("NodePool")

    def nodepool(self, name: str) -> NodePool | None:
        # `get("NodePool", None, name)` with the key spelled out (NodePools are
        # cluster-scoped: namespace ""): disruption asks it for every node of every pass.
        m = self._objects.get(("NodePool", "", name))
        return cast("NodePool | None", m.obj if m is not None else None)

    def nodeclasses(self) -> list[EC2NodeClass]:
        return self._of_kind("EC2NodeClass")

    def daemonsets(self) -> list[DaemonSet]:
        return self._of_kind("DaemonSet")

    def pdbs(self) -> list[PodDisruptionBudget]:
        """The applied PodDisruptionBudgets, in the order applied (read by the PDB limits of
        disruption and termination, `utils/pdb.py`)."""
        return self._of_kind("PodDisruptionBudget")

    def nodeoverlays(self) -> list[NodeOverlay]:
        return self._of_kind("NodeOverlay")

    def configmaps(self) -> list[ConfigMap]:
        return self._of_kind("ConfigMap")

    def cluster_policies(self) -> list[ClusterPolicy]:
        return self._of_kind("ClusterPolicy")

    # ---- internals ------------------------------------------------------------------------------
    # `_claims` and `_nodes` are written only here, which keep their indexes: names by
    # provider ID (and NodeClaims by `status.nodeName`), and each name's insertion number
    # (its place in the map's order, for the scans' "first").
    def _set_claim(self, claim: NodeClaim) -> None:
        self.claims_version += 1
        self._changed(ClusterChange.NODES, claim.name)
        self._dirty.add(claim.name)
        name = claim.name
        old = self._claims.get(name)
        pid = claim.status.provider_id
        viewed = pid if pid and not same_view(old, claim) else None  # else the view stays
        before = self._consolidation_view(viewed) if viewed else None
        if old is not None and old.status.provider_id and old.status.provider_id != pid:
            self.mark_unconsolidated()  # `cleanupNodeClaim` of its old provider ID
        if (
            old is None
            or old.status.node_name != claim.status.node_name
            or old.status.provider_id != claim.status.provider_id
        ):
            self._structure += 1
        if old is None:
            self._claim_seq[name] = self._next_seq
            self._next_seq += 1
            self.kept_nominations.claim_changed(name)
        else:
            _unindex(self._claims_by_pid, old.status.provider_id, name)
            _unindex(self._claims_by_node_name, old.status.node_name, name)
        self._claims[name] = claim
        if claim.status.provider_id:
            self._unlaunched.discard(name)
        else:
            self._unlaunched.add(name)
        _index(self._claims_by_pid, claim.status.provider_id, name)
        _index(self._claims_by_node_name, claim.status.node_name, name)
        if viewed:
            self._consolidation_changed(before, viewed)

    def _pop_claim(self, name: str) -> None:
        self.claims_version += 1
        self._changed(ClusterChange.NODES, name)
        self._dirty.add(name)
        old = self._claims.pop(name, None)
        self._unlaunched.discard(name)
        if old is not None:
            self.kept_nominations.claim_changed(name)
            if old.status.provider_id:
                self.mark_unconsolidated()  # `cleanupNodeClaim`: a launched NodeClaim went
            self._structure += 1
            del self._claim_seq[name]
            _unindex(self._claims_by_pid, old.status.provider_id, name)
            _unindex(self._claims_by_node_name, old.status.node_name, name)

    def _set_node(self, node: Node) -> None:
        self._changed(ClusterChange.NODES, node.metadata.name)
        self._dirty.add(node.metadata.name)
        name = node.metadata.name
        old = self._nodes.get(name)
        key = node.spec.provider_id or name
        viewed = not same_view(old, node)  # else the view stays as it was
        before = self._consolidation_view(key) if viewed else None
        if old is not None and (old.spec.provider_id or name) != key:
            self.mark_unconsolidated()  # `cleanupNode` of its old provider ID
        if old is None or old.spec.provider_id != node.spec.provider_id:
            self._structure += 1
        if old is None:
            self._node_seq[name] = self._next_seq
            self._next_seq += 1
        else:
            _unindex(self._nodes_by_pid, old.spec.provider_id, name)
        self._nodes[name] = node
        _index(self._nodes_by_pid, node.spec.provider_id, name)
        if viewed:
            self._consolidation_changed(before, key)

    def _pop_node(self, name: str) -> None:
        self._changed(ClusterChange.NODES, name)
        self._dirty.add(name)
        old = self._nodes.pop(name, None)
        if old is not None:
            self.mark_unconsolidated()  # `cleanupNode`
            self._structure += 1
            del self._node_seq[name]
            _unindex(self._nodes_by_pid, old.spec.provider_id, name)

    def _pod_keys(self, key: tuple[str, str, str], previous: Manifest | None) -> list[str]:
        """The pod keys the applied workload `previous` (at `key`) makes: kept from when it
        was applied (the same object, so the same keys; a scale event does not expand the
        old replica count again), else expanded."""
        if previous is None:
            return []
        kept = self._made.get(key)
        if kept is not None:
            return kept
        return [k for k, _ in expand_keys(cast(PodCreator, previous.obj))]

    def _of_kind(self, kind: str) -> list[Any]:
        if kind not in self._kinds:  # a NodePool's types ask for the NodeOverlays every time
            self._kinds[kind] = [m.obj for m in self._objects.values() if m.obj.kind == kind]
        return list(self._kinds[kind])

    def _sync_pods(
        self, old: Iterable[str], new: Iterable[tuple[str, Callable[[], Pod]]]
    ) -> Applied:
        """Delete the pods (keys) `old` had that `new` does not, create those of `new` the
        cluster lacks; a pod that exists stays as it is. Only created pods are built: a scale
        event of a 300-replica workload builds its few new pods, not 300 (pydantic)."""
        wanted = dict(new)
        deleted = tuple(k for k in old if k not in wanted and k in self._pods)
        for key in deleted:
            self.delete_pod(key)
        created = tuple(k for k in wanted if k not in self._pods)
        for key in created:
            self._put(wanted[key](), key)
        return Applied(created, deleted)

    def _put(self, pod: Pod, key: str | None = None) -> None:
        """`_pods[key] = pod` (key: the pod's), keeping the `pods_on` and unbound indexes and
        the version counters."""
        key = pod.key if key is None else key
        self._version += 1
        old = self._pods.get(key)
        self._changed(pod_change(old, pod), key)
        if old is None:
            self._seq[key] = self._next_seq
            self._next_seq += 1
            self.kept_nominations.pod_added(key)
        elif old.spec.node_name:
            _unindex(self._on_node, old.spec.node_name, key)
            self._pods_changed[old.spec.node_name] = self._version
            self._dirty.add(old.spec.node_name)
        else:
            self._unbound.discard(key)
        self._pods[key] = pod
        node = pod.spec.node_name
        if ((old.spec.node_name if old is not None else None) or None) != (node or None):
            # Bound to a node it was not on (`cleanupOldBindings`), or unbound: evicted and
            # made again by its controller, a deletion to Karpenter (`DeletePod`).
            self.mark_unconsolidated()
        if node:
            self._on_node.setdefault(node, set()).add(key)
            self._pods_changed[node] = self._version
            self._dirty.add(node)
        else:
            self._unbound.add(key)

    def _drop(self, key: str) -> Pod | None:
        """`_pods.pop(key, None)`, keeping the indexes and version counters (see `_put`)."""
        pod = self._pods.pop(key, None)
        if pod is not None:
            self.mark_unconsolidated()  # `DeletePod`
            self._version += 1
            self._changed(ClusterChange.PODS, key)
            del self._seq[key]
            self.kept_nominations.pod_removed(key)
            node = pod.spec.node_name
            if node:
                _unindex(self._on_node, node, key)
                self._pods_changed[node] = self._version
                self._dirty.add(node)
            else:
                self._unbound.discard(key)
        return pod

    def _now(self) -> float | None:
        return self._clock.monotonic() if self._clock is not None else None

    def _active_nominations(self) -> dict[str, str]:
        """The nominations in force (kept: `state/nominations.py`; callers here only read). A
        bound pod has one only while its node is being deleted (`unbind` keeps it)."""
        return self.kept_nominations.in_force(self._now())

    def _state_node_name(self, name: str) -> str:
        """The name of the state node a NodeClaim (or Node) `name` is part of: its Node's
        name once a Node matches it (by `status.nodeName` or provider ID), else its own."""
        claim = self._claims.get(name)
        if claim is None:
            return name
        if claim.status.node_name and claim.status.node_name in self._nodes:
            return claim.status.node_name
        nodes = self._nodes_by_pid.get(claim.status.provider_id or "")
        if nodes:
            return min(nodes, key=self._node_seq.__getitem__)
        return name
