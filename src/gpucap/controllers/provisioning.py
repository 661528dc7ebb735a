"""One provisioning pass: what Karpenter's provisioner would launch for the pending pods.

Karpenter's `Provisioner.Schedule` (`pkg/controllers/provisioning/provisioner.go`) gathers the
Ready NodePools with the instance types their node class offers, the cluster state and the
DaemonSets, runs the scheduler, and creates NodeClaims that the cloud provider launches. `plan`
does the same over loaded manifests and the catalog, and adds, for each planned NodeClaim, the
launch CreateFleet would make (`cloudprovider/aws/launch.py`). No time passes.

Where gpucap differs: a NodePool whose EC2NodeClass is not in the input is planned with a
default EC2NodeClass (AL2023, 20Gi root volume) and a note, instead of being ignored as
not Ready, because people often plan with a NodePool alone; NodeOverlays are applied
(`scheduling/nodeoverlay.py`) although Karpenter needs a feature gate for them, and a note says so.
Called by `gpucap plan` and, per batch, by the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.catalog import Catalog, NodeClassSettings, node_class_settings
from gpucap.cloudprovider.aws.launch import InsufficientCapacityError, Launch, choose_launch
from gpucap.scheduling.nodeoverlay import PoolTypes, apply_overlays, evaluate_overlays
from gpucap.scheduling.solver import (
    NodeClaim,
    PoolInput,
    Results,
    Scheduler,
    SchedulingOptions,
)
from gpucap.state.snapshot import snapshot

__all__ = ["Plan", "plan"]


@dataclass(slots=True)
class Plan:
    """A scheduling pass and the launch chosen for each new NodeClaim."""

    results: Results
    launches: dict[str, Launch] = field(default_factory=dict)
    launch_errors: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    scheduler: Scheduler | None = None

    @property
    def node_claims(self) -> list[NodeClaim]:
        return self.results.new_node_claims


def pools_for(manifests: Manifests, catalog: Catalog, notes: list[str]) -> list[PoolInput]:
    """Each NodePool with the instance types its EC2NodeClass offers in the catalog's region."""
    nodeclasses = {nc.name: nc for nc in manifests.nodeclasses}
    pools: list[PoolInput] = []
    for np in manifests.nodepools:
        ref = np.spec.template.spec.node_class_ref
        if ref.group != "karpenter.k8s.aws" or ref.kind != "EC2NodeClass":
            notes.append(
                f"NodePool {np.name}: node class {ref.group}/{ref.kind} is not an EC2NodeClass; "
                "ignored (it would never become Ready)"
            )
            continue
        nodeclass = nodeclasses.get(ref.name)
        if nodeclass is None:
            notes.append(
                f"NodePool {np.name}: EC2NodeClass {ref.name} is not in the input; "
                "planned with a default one (AL2023, 20Gi root volume)"
            )
            settings = NodeClassSettings()
        else:
            settings = node_class_settings(nodeclass)
        pools.append(PoolInput(np, catalog.scheduling_instance_types(settings)))
    return _with_overlays(pools, manifests.nodeoverlays, notes)


def _with_overlays(
    pools: list[PoolInput], overlays: list[NodeOverlay], notes: list[str]
) -> list[PoolInput]:
    """The pools with the NodeOverlays Karpenter would accept applied to their instance types."""
    if not overlays:
        return pools
    views = [
        PoolTypes(p.nodepool.name, p.nodepool.spec.template.metadata.labels, p.instance_types)
        for p in pools
    ]
    accepted, conflicts = evaluate_overlays(overlays, views)
    notes.extend(str(c) for c in conflicts)
    out = []
    applied = apply_overlays(accepted, views)
    for pool, (types, changed) in zip(pools, applied, strict=True):
        if changed:
            notes.append(
                f"NodePool {pool.nodepool.name}: NodeOverlays change {changed} instance type"
                f"{'' if changed == 1 else 's'} (Karpenter applies them only with the "
                "NodeOverlay feature gate on; it is off by default)"
            )
        out.append(PoolInput(pool.nodepool, types))
    return out


def plan(
    manifests: Manifests,
    catalog: Catalog,
    *,
    options: SchedulingOptions | None = None,
) -> Plan:
    """Schedule the pending pods of `manifests` and pick each new NodeClaim's launch."""
    notes: list[str] = list(manifests.notes)
    pools = pools_for(manifests, catalog, notes)
    snap = snapshot(manifests.pods, manifests.nodes, manifests.nodeclaims)
    for pod in snap.unknown_node_pods:
        notes.append(
            f"pod {pod.key} is bound to node {pod.spec.node_name}, which is not in the input; "
            "it is not counted"
        )
    scheduler = Scheduler(
        pools,
        state_nodes=snap.nodes,
        daemonsets=manifests.daemonsets,
        pending_pods=snap.pending,
        options=options,
    )
    results = scheduler.solve(snap.pending)
    out = Plan(results, notes=notes, scheduler=scheduler)
    for pool, note in sorted(results.pool_notes.items()):
        notes.append(f"NodePool {pool}: {note}")
    for claim in results.new_node_claims:
        try:
            out.launches[claim.name] = choose_launch(
                claim.instance_types,
                claim.requirements,
                claim.requests,
                min_values_policy=(options or SchedulingOptions()).min_values_policy,
            )
        except InsufficientCapacityError as err:
            out.launch_errors[claim.name] = str(err)
    return out
