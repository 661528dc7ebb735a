"""Karpenter's provisioner over the CloudProvider seam: one scheduling pass, and the NodeClaims
it decides as the objects `CloudProvider.create` takes.

Read from kubernetes-sigs/karpenter (2266468) `pkg/controllers/provisioning/provisioner.go:
NewScheduler` and `Schedule`: the Ready, dynamic (not static) NodePools, each with the instance
types `cloudProvider.GetInstanceTypes(nodePool)` answers (NodeOverlays come in as a decoration of
that answer, `cloudprovider/overlay.py`), ordered by weight, with the cluster's state nodes, the
DaemonSets and the pending pods, make a `Scheduler`, whose `Solve` gives the Results. Then
`scheduling/nodeclaimtemplate.go: ToNodeClaim` turns each new NodeClaim into the object that is
created: its requirements (the instance-type list, cheapest first and at most
`max_instance_types`, and the capacity types those types offer, both added when the pass
finalizes) without the scheduling-only keys (`karpenter.sh/registered`,
`karpenter.sh/initialized`), its resource requests, the NodePool template's labels with the
custom labels its requirements resolve, the template's annotations with the NodePool's hash and
hash version on top (`NewNodeClaimTemplate`; what static drift compares, `apis/hashing.py`),
node class reference, taints, startup taints, expiry and termination grace period.

Which NodePools are Ready is the caller's to say (`plan` leaves out EKS Auto Mode and
non-EC2NodeClass pools with a note); a NodePool whose class the provider does not know gets
what the provider answers (the AWS provider's `default_nodeclass` policy).

Launching is the caller's: the simulator's lifecycle controller calls `cloud_provider.create`
with `node_claims(results)`; `plan` previews the launch instead (`loop.py`). Not modelled here:
the overlay annotations Karpenter adds to a NodeClaim whose types carry a price or capacity
overlay, owner references and `generateName` (names are given: `<nodepool>-<n>`).

Called by `plan`'s provisioning loop (`loop.py`) and by the simulator.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Container, Sequence
from dataclasses import replace
from typing import Any

from gpucap.apis.core import Pod
from gpucap.apis.hashing import (
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    nodepool_hash,
)
from gpucap.apis.labels import INITIALIZED, REGISTERED
from gpucap.apis.meta import ObjectMeta
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.quantity import format_base_units
from gpucap.apis.workloads import DaemonSet
from gpucap.cloudprovider.types import CloudProvider
from gpucap.scheduling import nodeclaim
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.passcache import PassCache
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.scheduler import PoolInput, Results, Scheduler
from gpucap.utils.pdb import Limits

__all__ = [
    "SCHEDULING_SIMULATION_KEYS",
    "Provisioner",
    "deleting_node_pods",
    "new_scheduler",
    "node_selector",
    "to_node_claim",
]

# nodeclaimtemplate.go `schedulingSimulationKeys`: requirements only the scheduler uses.
SCHEDULING_SIMULATION_KEYS = (REGISTERED, INITIALIZED)


class Provisioner:
    """One provisioning path for `plan` and the simulator (see the module docstring)."""

    def __init__(
        self, cloud_provider: CloudProvider, *, options: SchedulingOptions | None = None
    ) -> None:
        self.cloud_provider = cloud_provider
        self.options = options or SchedulingOptions()
        # The provisioning passes' own (`Provisioner.Schedule` disables the reserved-capacity
        # fallback); every other simulation runs with `options` as given.
        self.provisioning_options = replace(self.options, reserved_offering_mode="Strict")
        # Shared by this provisioner's passes (the simulator runs many over the same type
        # tuples); see `PassCache` for why a hit is the same answer.
        self.cache = PassCache()
        # The pools of the last `schedule` pass: the simulator's cost floor reads the NodePools
        # and instance types the provisioner used rather than asking the provider itself
        # (which would move its caches' refreshes: `sim/costfloor.py`).
        self.last_pools: Sequence[PoolInput] = ()

    def pools(self, nodepools: Sequence[NodePool]) -> list[PoolInput]:
        """Each NodePool with the instance types the cloud provider answers for it, in the
        order given (the scheduler orders them by weight)."""
        return [PoolInput(np, self.cloud_provider.get_instance_types(np)) for np in nodepools]

    def scheduler(
        self,
        pools: Sequence[PoolInput],
        *,
        state_nodes: Sequence[StateNode] = (),
        daemonsets: Sequence[DaemonSet] = (),
        pending: Sequence[Pod] = (),
        options: SchedulingOptions | None = None,
    ) -> Scheduler:
        """Karpenter's `NewScheduler` over pools already asked for (static ones take no part).
        `options`: this pass's, when not the provisioner's (a consolidation simulation's)."""
        return new_scheduler(
            pools,
            state_nodes=state_nodes,
            daemonsets=daemonsets,
            pending=pending,
            options=options if options is not None else self.options,
            cache=self.cache,
        )

    def schedule(
        self,
        nodepools: Sequence[NodePool],
        *,
        state_nodes: Sequence[StateNode] = (),
        daemonsets: Sequence[DaemonSet] = (),
        pending: Sequence[Pod] = (),
    ) -> Results:
        """One scheduling pass: the dynamic ones of `nodepools` (the Ready ones) with their
        instance types from the cloud provider, the state nodes, DaemonSets and pending pods."""
        dynamic = [np for np in nodepools if not np.is_static]
        self.last_pools = self.pools(dynamic)
        scheduler = self.scheduler(
            self.last_pools,
            state_nodes=state_nodes,
            daemonsets=daemonsets,
            pending=pending,
            options=self.provisioning_options,
        )
        return scheduler.solve(pending)

    def node_claims(
        self, results: Results, *, names: Callable[[str], str] | None = None
    ) -> list[NodeClaim]:
        """The NodeClaims `results` decided, as `cloud_provider.create` takes them; `names`
        gives each one's name from its NodePool's (default: the pass's `<nodepool>-<n>`, which
        a caller running many passes must replace to keep names unique)."""
        return [
            to_node_claim(claim, name=names(claim.nodepool) if names is not None else None)
            for claim in results.new_node_claims
        ]


def deleting_node_pods(
    nodes: Sequence[StateNode], now: dt.datetime, limits: Limits, *, skip: Container[str] = ()
) -> list[Pod]:
    """The pods a provisioning pass schedules besides the pending ones: the currently
    reschedulable pods of the state nodes being deleted (kubernetes-sigs/karpenter
    `provisioner.go` `Schedule`: `nodes.Deleting().CurrentlyReschedulablePods`), as the
    scheduler takes them (unbound), in node then pod order. Currently reschedulable
    (`limits.is_currently_reschedulable`): active, not a DaemonSet's or mirror pod, no
    do-not-disrupt in force, not kept by a fully blocking PodDisruptionBudget. `skip`: keys of
    pods already placed (nominated to a NodeClaim). So the capacity for every pod of a node
    being drained is asked for in one pass, not one eviction at a time."""
    return [
        p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": None})})
        for n in nodes
        if n.marked_for_deletion
        for p in n.pods
        if p.key not in skip and limits.is_currently_reschedulable(p, now)
    ]


def new_scheduler(
    pools: Sequence[PoolInput],
    *,
    state_nodes: Sequence[StateNode] = (),
    daemonsets: Sequence[DaemonSet] = (),
    pending: Sequence[Pod] = (),
    options: SchedulingOptions | None = None,
    cache: PassCache | None = None,
) -> Scheduler:
    """The scheduler of one pass over `pools` (what `Provisioner.scheduler` and each pass of
    `plan`'s loop build); `cache` is shared between the passes of one caller."""
    return Scheduler(
        pools,
        state_nodes=state_nodes,
        daemonsets=daemonsets,
        pending_pods=pending,
        options=options,
        cache=cache,
    )


def node_selector(requirements: Requirements) -> list[dict[str, Any]]:
    """Requirements as a NodeClaim's `spec.requirements` (key order; values sorted; bounds as
    gpucap's inclusive `Gte`/`Lte`, which read back exactly; minValues kept)."""
    out: list[dict[str, Any]] = []
    for key, req in sorted(requirements.items()):
        entries: list[dict[str, Any]] = []
        if req.gte is not None:
            entries.append({"key": key, "operator": "Gte", "values": [str(req.gte)]})
        if req.lte is not None:
            entries.append({"key": key, "operator": "Lte", "values": [str(req.lte)]})
        if not entries:
            entry: dict[str, Any] = {"key": key, "operator": req.operator}
            if req.values:
                entry["values"] = req.sorted_values()
            entries.append(entry)
        if req.min_values is not None:
            entries[0]["minValues"] = req.min_values
        out.extend(entries)
    return out


def to_node_claim(claim: nodeclaim.NodeClaim, *, name: str | None = None) -> NodeClaim:
    """Karpenter's `NodeClaimTemplate.ToNodeClaim` for a new NodeClaim of a finished pass
    (named `name`, default the pass's `<nodepool>-<n>`)."""
    nodepool = claim.template.nodepool
    spec = nodepool.spec.template.spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    spec["requirements"] = node_selector(claim.requirements.without(*SCHEDULING_SIMULATION_KEYS))
    spec["resources"] = {"requests": format_base_units(claim.requests)}
    meta = ObjectMeta(
        name=name or claim.name,
        labels=dict(sorted(claim.labels.items())),
        annotations={
            **nodepool.spec.template.metadata.annotations,
            NODEPOOL_HASH_ANNOTATION: nodepool_hash(nodepool),
            NODEPOOL_HASH_VERSION_ANNOTATION: NODEPOOL_HASH_VERSION,
        },
    )
    return NodeClaim.model_validate(
        {"metadata": meta.model_dump(by_alias=True, exclude_none=True), "spec": spec}
    )
