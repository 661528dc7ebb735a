"""Karpenter's static provisioning: the NodeClaims a static NodePool (`spec.replicas`) keeps.

Read from kubernetes-sigs/karpenter `pkg/controllers/static/provisioning/controller.go` and
`pkg/controllers/state/statenodepool.go` (`ReserveNodeCount`): for a static NodePool managed by
the cloud provider, the controller creates `replicas - running` NodeClaims, no more than
`limits.nodes - (running + deleting)` when `limits.nodes` is set (and none when that is
negative), whatever the pods need. Each NodeClaim is the bare NodePool template: no
instance-type list is added (`ToNodeClaim` skips it for static NodeClaims) and it requests
nothing, so the cloud provider launches it from the template's requirements alone: every type of
the node class that is compatible with them and has an available allowed offering, through the
same launch filters and CreateFleet choice as any NodeClaim (the `LaunchPreviewer` the loop is
given; for AWS `cloudprovider/aws/instance/launch.py`: spot before on-demand when both are
allowed, then the cheapest offering). The static NodePool
is not used by the provisioner's scheduler (`NewScheduler` drops static pools), and it may only
have a `nodes` limit (CRD rule), which new dynamic NodeClaims do not touch.

Called by the provisioning loop (`controllers/provisioning/loop.py`), before its first pass: the
static controller reacts to the NodePool itself, not to pending pods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucap.apis.core import Taint
from gpucap.apis.labels import INITIALIZED, REGISTERED
from gpucap.cloudprovider.types import InsufficientCapacityError
from gpucap.controllers.launchpreview import LaunchPreviewer, PreviewedLaunch
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate, custom_labels
from gpucap.scheduling.scheduler import PoolInput

__all__ = ["StaticNodeClaims", "static_node_claims"]


@dataclass(frozen=True, slots=True)
class StaticNodeClaims:
    """`count` identical NodeClaims the static controller would create for `nodepool`."""

    nodepool: str
    count: int
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    # The types CreateFleet would be offered, cheapest first; empty when the launch fails.
    instance_types: tuple[InstanceType, ...]
    launch: PreviewedLaunch | None
    launch_error: str | None


def wanted(replicas: int, nodes_limit: int | None, running: int, deleting: int) -> int:
    """How many NodeClaims the static controller creates now (never negative)."""
    count = replicas - running
    if count <= 0:
        return 0
    if nodes_limit is not None:
        count = min(count, nodes_limit - running - deleting)
    return max(count, 0)


def static_node_claims(
    pools: Sequence[PoolInput],
    state_nodes: Sequence[StateNode],
    *,
    preview: LaunchPreviewer,
) -> list[StaticNodeClaims]:
    """The NodeClaims every static NodePool in `pools` is short of, given the nodes and
    NodeClaims of that pool already in `state_nodes`; pools in name order."""
    out: list[StaticNodeClaims] = []
    for pool in sorted(pools, key=lambda p: p.nodepool.name):
        np = pool.nodepool
        if np.spec.replicas is None:
            continue
        mine = [n for n in state_nodes if n.nodepool == np.name]
        running = sum(1 for n in mine if not n.marked_for_deletion)
        limit = (np.spec.limits or {}).get("nodes")
        count = wanted(
            np.spec.replicas,
            limit.value() if limit is not None else None,
            running,
            len(mine) - running,
        )
        if count == 0:
            continue
        template = NodeClaimTemplate.from_nodepool(np)
        # The NodeClaim leaves out the scheduling-only keys (`schedulingSimulationKeys`).
        reqs = template.requirements.without(REGISTERED, INITIALIZED)
        types: tuple[InstanceType, ...] = ()
        launch: PreviewedLaunch | None = None
        error: str | None = None
        try:
            types = tuple(preview.offered(pool.instance_types, reqs))
            launch = preview.launch(pool.instance_types, reqs)
        except InsufficientCapacityError as err:
            error = str(err)
        out.append(
            StaticNodeClaims(
                nodepool=np.name,
                count=count,
                labels={**template.labels, **custom_labels(reqs)},
                taints=template.taints,
                startup_taints=template.startup_taints,
                instance_types=types,
                launch=launch,
                launch_error=error,
            )
        )
    return out
