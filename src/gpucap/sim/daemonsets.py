"""The DaemonSet controller of `gpucap simulate`: one bound pod per DaemonSet on every node it
selects (kubernetes `pkg/controller/daemon/daemon_controller.go`, `NodeShouldRunDaemonPod`, and
`pkg/controller/daemon/util/daemonset_util.go`, `AddOrUpdateDaemonPodTolerations`).

For a node and a DaemonSet the controller asks two things, as Kubernetes' does:
- *should run*: the pod's node selector and one of its required node-affinity terms meet the
  node's labels, and it tolerates every NoSchedule and NoExecute taint of the node
  (`scheduling.daemonsets.lands_on`); the pod is created when the node has none;
- *should continue running*: the same, with only the NoExecute taints; a pod the controller made
  is deleted when this turns false (a NoSchedule taint such as `karpenter.sh/disrupted` does not
  remove a running daemon, it only keeps a new one off).
The tolerations are the template's plus those the DaemonSet controller gives every daemon pod
(not-ready and unreachable NoExecute; disk, memory and PID pressure and unschedulable
NoSchedule; gpucap's pods have no host network, so not network-unavailable). On a GPU node (label
`karpenter.k8s.aws/instance-gpu-count` above 0) a selector or affinity on the labels GPU Feature
Discovery and node-feature-discovery add at run time (`RUNTIME_LABEL_PREFIXES`) is taken as met,
as the kubelet model does for device plugins (`sim/kubelet.py`).

The pod is `<daemonset>-<node>` in the DaemonSet's namespace, controlled by the DaemonSet (owner
reference kind DaemonSet, the template's labels and annotations), bound to the node and Running.
A pod the input already put on the node for the DaemonSet (same owner) counts as its pod: no
second one is made. When a DaemonSet is applied again with another template, the pods it made
are replaced at once (no rolling update); when it is deleted they go. Pods bound to a Node that
goes are dropped by `Cluster.delete_node`; evicted ones by termination.

Not modelled: a daemon pod that does not fit the node's room (it is placed anyway: no pending
daemon pod, no preemption), its image pull and start-up (the kubelet model's `daemonset_start`
covers the DaemonSets the node needs), `spec.template.spec.nodeName`, update strategies.

Pure bookkeeping over the `Cluster`; the kubelet actor (`sim/nodes.py`) calls `node_changed` when
a Node registers, loses its startup taints or is initialized, the world (`sim/world.py`) when the
scenario applies a Node and `daemonsets_changed` when a DaemonSet is applied or deleted; it is
told of every pod placed or removed through the callbacks the world gives (kube-scheduler's cache
in `sim/binder.py`, the bus's change counter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpucap.apis.core import Node, Pod, Taint, Toleration
from gpucap.apis.labels import INSTANCE_GPU_COUNT
from gpucap.apis.workloads import DaemonSet, build_pod, pod_uid
from gpucap.runtime.clock import Clock
from gpucap.runtime.memo import Memos
from gpucap.scheduling.daemonsets import RUNTIME_FREE, lands_on, without_runtime_labels
from gpucap.state.cluster import Cluster

__all__ = ["DAEMON_TOLERATIONS", "DaemonSetController", "daemon_pod_for", "should_run"]

# What `AddOrUpdateDaemonPodTolerations` gives every daemon pod (daemonset_util.go).
DAEMON_TOLERATIONS = (
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/disk-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/pid-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
)

_DsKey = tuple[str, str]  # (namespace, name)


def _ds_key(ds: DaemonSet) -> _DsKey:
    return (ds.metadata.namespace, ds.metadata.name)


def _owner(pod: Pod) -> _DsKey | None:
    for ref in pod.metadata.owner_references:
        if ref.kind == "DaemonSet":
            return (pod.metadata.namespace, ref.name)
    return None


@dataclass(frozen=True, slots=True)
class _Template:
    """A DaemonSet as the controller reads it: the object, and its pod with the daemon
    tolerations (the one the checks use and the one bound pods are made from)."""

    ds: DaemonSet
    pod: Pod


def _template(ds: DaemonSet) -> _Template:
    spec = ds.spec.template.spec
    extra = (t for t in DAEMON_TOLERATIONS if t not in spec.tolerations)
    tolerations = [*spec.tolerations, *extra]
    spec = spec.model_copy(update={"tolerations": tolerations})
    meta = ds.spec.template.metadata
    pod = build_pod(ds, ds.metadata.name, spec, meta.labels, meta.annotations)
    return _Template(ds, pod)


def daemon_pod_for(ds: DaemonSet) -> Pod:
    """The pod the DaemonSet controller makes from `ds` (unbound): the template's, named after
    the DaemonSet, with the daemon tolerations added."""
    return _template(ds).pod


def _gpu_node(labels: Mapping[str, str]) -> bool:
    text = labels.get(INSTANCE_GPU_COUNT, "0")
    return text.isdigit() and int(text) > 0


def should_run(pod: Pod, node: Node, memos: Memos | None = None) -> tuple[bool, bool]:
    """`NodeShouldRunDaemonPod` for a daemon pod (tolerations included) and a Node: (should
    run, should continue running); see the module docstring. `memos`: the run's, to keep the
    pod's runtime-label-free variants (`RUNTIME_FREE`)."""
    labels = node.metadata.labels
    if _gpu_node(labels):
        memo = memos[RUNTIME_FREE] if memos is not None else None
        pod = without_runtime_labels(pod, labels, memo)
    taints = node.spec.taints
    if lands_on(pod, labels, taints):
        return True, True
    no_execute: list[Taint] = [t for t in taints if t.effect == "NoExecute"]
    return False, lands_on(pod, labels, no_execute)


class DaemonSetController:
    """Keeps one bound pod per DaemonSet on every node that should run it (see the module
    docstring). `place(pod, node)` and `unplace(key)` are called for every pod it binds or
    deletes (the cluster's change feed tells the rest of the simulator)."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        *,
        place: Callable[[Pod, str], None],
        unplace: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self._place = place
        self._unplace = unplace
        # Pod key -> the DaemonSet object it was made from (the pods this controller owns).
        self._made: dict[str, DaemonSet] = {}
        self._templates: dict[int, _Template] = {}  # id(DaemonSet) -> its template (holds it)

    def node_changed(self, node_name: str) -> None:
        """A Node appeared or changed (labels, taints): create or delete its daemon pods."""
        daemonsets = self.cluster.daemonsets()
        if not daemonsets:
            return
        self._sync(node_name, [self._of(ds) for ds in daemonsets])

    def daemonsets_changed(self) -> None:
        """A DaemonSet was applied or deleted: every node's daemon pods follow, the pods of a
        DaemonSet no longer applied go, those of one applied with another template are made
        again."""
        templates = [self._of(ds) for ds in self.cluster.daemonsets()]
        live = {_ds_key(t.ds): t.ds for t in templates}
        for key, ds in list(self._made.items()):
            now = live.get(_ds_key(ds))
            if now is None or (now is not ds and now != ds):
                self._delete(key)
            elif now is not ds:
                self._made[key] = now  # applied again, the same: the pod stays
        self._templates = {id(t.ds): t for t in templates}
        for node in self.cluster.nodes():
            self._sync(node.metadata.name, templates)

    # ---- internals ------------------------------------------------------------------------------
    def _of(self, ds: DaemonSet) -> _Template:
        hit = self._templates.get(id(ds))
        if hit is None or hit.ds is not ds:
            hit = self._templates[id(ds)] = _template(ds)
        return hit

    def _sync(self, node_name: str, templates: list[_Template]) -> bool:
        node = self.cluster.node(node_name)
        if node is None:
            return False
        have: dict[_DsKey, Pod] = {}
        for pod in self.cluster.pods_on(node_name):
            owner = _owner(pod)
            if owner is not None:
                have.setdefault(owner, pod)
        done = False
        for t in templates:
            run, keep = should_run(t.pod, node, self.cluster.memos)
            mine = have.get(_ds_key(t.ds))
            if mine is None:
                if run:
                    done = self._create(t, node_name) or done
            elif not keep and mine.key in self._made:
                done = self._delete(mine.key) or done
        return done

    def _create(self, t: _Template, node_name: str) -> bool:
        ds = t.ds
        name = f"{ds.metadata.name}-{node_name}"
        namespace = ds.metadata.namespace
        key = f"{namespace}/{name}"
        try:
            self.cluster.pod(key)
        except KeyError:
            pass
        else:
            return False  # a pod of that name exists (the input's): not ours to replace
        now = self.clock.now()
        meta = t.pod.metadata.model_copy(
            update={"name": name, "uid": pod_uid(namespace, name), "creation_timestamp": now}
        )
        spec = t.pod.spec.model_copy(update={"node_name": node_name})
        status = t.pod.status.model_copy(update={"phase": "Running", "start_time": now.isoformat()})
        pod = t.pod.model_copy(update={"metadata": meta, "spec": spec, "status": status})
        self.cluster.add_pod(pod)
        self._made[key] = ds
        self._place(pod, node_name)
        return True

    def _delete(self, key: str) -> bool:
        self._made.pop(key, None)
        if self.cluster.delete_pod(key) is None:
            return False
        self._unplace(key)
        return True
