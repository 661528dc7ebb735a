"""The cost floor over a run: what the cheapest fleet the NodePools allow would cost, per hour,
for the pods they serve at each moment (issue 27; docs/design/optimal.md).

The pods counted are those Karpenter's NodePools serve: bound to a Node of a NodeClaim, or
pending as the provisioner considers them (unbound, not finished, not refused by its
`validate_pod`), nominated or not. DaemonSet pods are not counted: they are the overhead each
node carries (`instance.pack_instance` reads it from the DaemonSets). A pending pod no NodePool
could take fits no bin and drops out of the model by itself.

The population is kept as it changes: the cluster's change feed names each pod written, and
at the end of that instant (this actor's loop runs after every other) the pods named are looked
at again and counted by class. A class is the pod's namespace, spec (its node aside) and, when
the pod has pod (anti-)affinity or topology spreads, its labels (what its hostname groups
select): alike pods for the model. The floor of the population, over the NodePools and instance
types of the provisioner's last pass (`Provisioner.last_pools`: the Ready dynamic NodePools
and their offerings, those an insufficient-capacity mark closed open again for the floor;
asking the cloud provider here would move when its caches refresh, and so the run) and the
DaemonSets, comes from `optimal.floor.CostFloors`, which
solves an LP only for a population it has not seen under the same NodePools, instance types
and DaemonSets. Before the first pass there are no pools and the floor is 0; a pass with new
pools counts as a change. A `CostFloor` event (`usdPerHour`) is recorded when the value
changes; the summary integrates it (`costFloorUSD`). So the floor follows the pods (a Job's
pods finishing lower it at once) rather than provisioning passes, which a pod deleted does not
start.

Built and wired by the `World` (`sim/world.py`): `cluster_changed` watches the cluster and
`loop` is registered with the engine. It reads the cluster and the provisioner (its last
pass's pools, the scheduler's cross-pass cache); it changes nothing but the event log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gpucap.apis.core import Pod, PodSpec
from gpucap.apis.meta import ObjectMeta
from gpucap.controllers.provisioning.optimal.floor import CostFloors
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.scheduling.poddata import validate_pod
from gpucap.scheduling.scheduler import PoolInput
from gpucap.sim.bus import Bus, Loop
from gpucap.state.changes import ClusterChange
from gpucap.state.cluster import Cluster

__all__ = ["CostFloorActor", "pod_class"]

# Spec keys remembered by spec object (the pods of a template share theirs) before starting again.
_SPECS_MAX = 4096


class CostFloorActor:
    """The cost floor of the pods served, recorded as it changes (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        provisioner: Provisioner,
    ) -> None:
        self.bus = bus
        self.cluster = cluster
        self.provisioner = provisioner
        self.loop = Loop("costfloor", self._sample)
        self.floors = CostFloors(provisioner.provisioning_options, provisioner.cache)
        self._dirty: set[str] = set()  # pods written since the last sample
        self._stale = True  # NodePools, DaemonSets, ... applied: sample again
        self._pools: Sequence[PoolInput] = ()  # the pass's pools the last floor was of
        self._classes: dict[str, tuple[ObjectMeta, str]] = {}  # pod -> (metadata, class)
        self._specs: dict[int, tuple[PodSpec, str]] = {}  # id(spec) -> (spec, its key)
        self._counted: dict[str, str] = {}  # pod -> its class, while counted
        self._population: dict[str, tuple[Pod, int]] = {}  # class -> (a pod of it, count)
        # The last value recorded; None before the first sample, which is always recorded
        # (a run with the floor on has a `CostFloor` event, so its summary has the key).
        self.usd_per_hour: float | None = None

    def cluster_changed(self, change: ClusterChange) -> None:
        """The cluster's change feed: a pod written is looked at again at the end of the
        instant; an object applied (a NodePool, a DaemonSet) may change the floor itself."""
        if change is ClusterChange.PODS:
            key = self.cluster.changing
            if key:
                if not self._dirty and not self._stale:
                    self.bus.engine.trigger(self.loop)
                self._dirty.add(key)
        elif change is ClusterChange.OBJECTS:
            if not self._dirty and not self._stale:
                self.bus.engine.trigger(self.loop)
            self._stale = True

    def _sample(self) -> float | None:
        # Most instants move pods between pending and bound, which leaves the population as
        # it was: then the memo is not asked (unless a pass came with new pools).
        moved = [key for key in sorted(self._dirty) if self._recount(key)]
        self._dirty.clear()
        pools = self.provisioner.last_pools
        if not moved and not self._stale and pools is self._pools:
            return None
        self._stale, self._pools = False, pools
        value = (
            self.floors.floor(pools, self.cluster.daemonsets(), self._population)
            if self._population and pools
            else 0.0
        )
        if value != self.usd_per_hour:
            self.usd_per_hour = value
            self.bus.emit("CostFloor", usdPerHour=value)
        return None

    def _recount(self, key: str) -> bool:
        """Pod `key` counted again: out of its old class, into its class if it is served.
        Whether the population changed (not when the pod stays in its class)."""
        was = self._counted.pop(key, None)
        now = self._class_of(key)
        if now == was:
            if now is not None:
                self._counted[key] = now
            return False
        if was is not None:
            rep, n = self._population[was]
            if n > 1:
                self._population[was] = (rep, n - 1)
            else:
                del self._population[was]
        if now is None:
            return True
        self._counted[key] = now
        held = self._population.get(now)
        if held is None:
            pod = self.cluster.pod(key)
            if pod.spec.node_name:  # the scheduler takes pods pending
                spec = pod.spec.model_copy(update={"node_name": None})
                pod = pod.model_copy(update={"spec": spec})
            self._population[now] = (pod, 1)
        else:
            self._population[now] = (held[0], held[1] + 1)
        return True

    def _class_of(self, key: str) -> str | None:
        """The class of pod `key` if it is served now, else None."""
        try:
            pod = self.cluster.pod(key)
        except KeyError:
            self._classes.pop(key, None)
            return None
        if not self._served(pod):
            return None
        known = self._classes.get(key)
        if known is not None and known[0] is pod.metadata:
            return known[1]
        cls = pod_class(pod, self._spec_key(pod.spec))
        self._classes[key] = (pod.metadata, cls)
        return cls

    def _served(self, pod: Pod) -> bool:
        """Whether Karpenter's NodePools serve `pod` now (see the module docstring)."""
        if pod.status.phase in ("Succeeded", "Failed"):
            return False
        if any(o.kind == "DaemonSet" for o in pod.metadata.owner_references):
            return False
        name = pod.spec.node_name
        if not name:
            return validate_pod(pod) is None
        node = self.cluster.node(name)
        return node is not None and self.cluster.node_claim_for_node(node) is not None

    def _spec_key(self, spec: PodSpec) -> str:
        hit = self._specs.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        if len(self._specs) >= _SPECS_MAX:
            self._specs.clear()
        text = spec.model_dump_json(exclude={"node_name"})
        self._specs[id(spec)] = (spec, text)
        return text


def pod_class(pod: Pod, spec_key: str) -> str:
    """The class key of `pod` whose spec (node aside) reads `spec_key`: its namespace, the spec,
    and its labels when its own constraints may select it (see the module docstring)."""
    aff = pod.spec.affinity
    grouped = bool(pod.spec.topology_spread_constraints) or (
        aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)
    )
    labels = json.dumps(sorted(pod.metadata.labels.items())) if grouped else ""
    return f"{pod.metadata.namespace or ''}\n{labels}\n{spec_key}"
