"""`plan`'s composition root: the simulator's provider stack, the Provisioner and the loop.

`plan` builds what `simulate` runs on, once and without time: a throwaway `SimulatedEC2` over
the catalog on a `FakeClock`, the `AWSCloudProvider` over it (the input's EC2NodeClasses, and
`DEFAULT_EC2NODECLASS` for a NodePool whose class is missing), the NodeOverlay decoration
(`cloudprovider/overlay.py`), then `Provisioner.pools` (each Ready NodePool's instance types
from that provider) and the provisioning loop (`loop.py`) with the AWS launch preview
(`launch.LaunchPreview`: the launch filters and `fleet_pick` that the provider's `create` and
the simulated CreateFleet run).

This is the one module under `controllers/` that may import `cloudprovider.aws` (the
import-linter contract "controllers do not reach into the AWS provider" names it as its only
exception): `from gpucap.controllers.provisioning import plan` keeps working for the callers
that had it, and the rest of `controllers/` sees only the CloudProvider seam.

Called by `gpucap plan` (and `--explain`), the demo, bench and tests.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucap.apis.core import Pod
from gpucap.apis.nodepool import NodePool
from gpucap.apis.serde import Manifests
from gpucap.apis.workloads import DaemonSet
from gpucap.cloudprovider.aws.catalog import Catalog
from gpucap.cloudprovider.aws.cloudprovider import DEFAULT_EC2NODECLASS, AWSCloudProvider
from gpucap.cloudprovider.aws.launch import LaunchPreview
from gpucap.cloudprovider.aws.simulated import SimulatedEC2
from gpucap.cloudprovider.overlay import OverlaidCloudProvider, decorate
from gpucap.controllers.provisioning.loop import (
    DEFAULT_MAX_PASSES,
    Plan,
    explain_first_pass,
    run_passes,
)
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.solver import PoolExplanation, PoolInput, SchedulingOptions, StateNode
from gpucap.state.snapshot import snapshot

__all__ = ["explain_pod", "plan", "plan_provider", "pools_for", "provision", "ready_nodepools"]


def plan_provider(
    manifests: Manifests, catalog: Catalog, *, options: SchedulingOptions | None = None
) -> OverlaidCloudProvider:
    """The provider stack `plan` asks for instance types: AWS over a fresh simulated EC2 (no
    capacity closed, no insufficient-capacity marks), with the input's NodeOverlays."""
    clock = FakeClock()
    aws = AWSCloudProvider(
        SimulatedEC2(catalog, clock),
        catalog,
        clock,
        {nc.name: nc for nc in manifests.nodeclasses},
        default_nodeclass=DEFAULT_EC2NODECLASS,
        min_values_policy=(options or SchedulingOptions()).min_values_policy,
    )
    return decorate(aws, manifests.nodeoverlays, manifests.nodepools)


def ready_nodepools(manifests: Manifests, notes: list[str]) -> list[NodePool]:
    """The NodePools `plan` plans, with a note for each one it leaves out or plans with the
    default EC2NodeClass (input order)."""
    nodeclasses = {nc.name for nc in manifests.nodeclasses}
    ready: list[NodePool] = []
    for np in manifests.nodepools:
        ref = np.spec.template.spec.node_class_ref
        if ref.is_auto_mode:
            notes.append(
                f"NodePool {np.name}: an EKS Auto Mode NodeClass; not planned (EKS's managed "
                "Karpenter serves it, with its own instance selection)"
            )
            continue
        if not ref.is_ec2nodeclass:
            notes.append(
                f"NodePool {np.name}: node class {ref.group}/{ref.kind} is not an EC2NodeClass; "
                "ignored (it would never become Ready)"
            )
            continue
        if ref.name not in nodeclasses:
            notes.append(
                f"NodePool {np.name}: EC2NodeClass {ref.name} is not in the input; "
                "planned with a default one (AL2023, 20Gi root volume)"
            )
        ready.append(np)
    return ready


def _pools(
    manifests: Manifests,
    provider: OverlaidCloudProvider,
    provisioner: Provisioner,
    notes: list[str],
) -> list[PoolInput]:
    nodepools = ready_nodepools(manifests, notes)
    if provider.overlays:
        # The NodeOverlay controller's pass: which overlays Karpenter accepts for these pools.
        evaluation = provider.evaluate(nodepools)
        notes.extend(str(c) for c in evaluation.conflicts)
        for name, changed in evaluation.changed:
            if changed:
                notes.append(
                    f"NodePool {name}: NodeOverlays change {changed} instance type"
                    f"{'' if changed == 1 else 's'} (Karpenter applies them only with the "
                    "NodeOverlay feature gate on; it is off by default)"
                )
    return provisioner.pools(nodepools)


def pools_for(
    manifests: Manifests,
    catalog: Catalog,
    notes: list[str],
    *,
    options: SchedulingOptions | None = None,
) -> list[PoolInput]:
    """Each Ready NodePool with the instance types `plan`'s provider stack answers for it."""
    provider = plan_provider(manifests, catalog, options=options)
    return _pools(manifests, provider, Provisioner(provider, options=options), notes)


def plan(
    manifests: Manifests,
    catalog: Catalog,
    *,
    options: SchedulingOptions | None = None,
    max_passes: int = DEFAULT_MAX_PASSES,
) -> Plan:
    """Schedule the pending pods of `manifests` as Karpenter's provisioning loop would, and
    preview each new NodeClaim's launch."""
    notes: list[str] = list(manifests.notes)
    pools = pools_for(manifests, catalog, notes, options=options)
    snap = snapshot(manifests.pods, manifests.nodes, manifests.nodeclaims)
    for pod in snap.unknown_node_pods:
        notes.append(
            f"pod {pod.key} is bound to node {pod.spec.node_name}, which is not in the input; "
            "it is not counted"
        )
    out = provision(
        pools,
        state_nodes=snap.nodes,
        pending=snap.pending,
        daemonsets=manifests.daemonsets,
        options=options,
        max_passes=max_passes,
    )
    out.notes[:0] = notes
    return out


def provision(
    pools: Sequence[PoolInput],
    *,
    state_nodes: Sequence[StateNode] = (),
    pending: Sequence[Pod] = (),
    daemonsets: Sequence[DaemonSet] = (),
    options: SchedulingOptions | None = None,
    max_passes: int = DEFAULT_MAX_PASSES,
) -> Plan:
    """The provisioning loop (`loop.run_passes`) over pools already resolved, with the AWS
    launch preview under the options' minValues policy."""
    opts = options or SchedulingOptions()
    return run_passes(
        pools,
        preview=LaunchPreview(opts.min_values_policy),
        state_nodes=state_nodes,
        pending=pending,
        daemonsets=daemonsets,
        options=opts,
        max_passes=max_passes,
    )


def explain_pod(
    manifests: Manifests,
    catalog: Catalog,
    pod_key: str,
    *,
    options: SchedulingOptions | None = None,
) -> list[PoolExplanation] | None:
    """`plan --explain`: why each NodePool can or cannot take `pod_key` in the first pass
    (None when the input has no such pending pod)."""
    opts = options or SchedulingOptions()
    pools = pools_for(manifests, catalog, [], options=opts)
    snap = snapshot(manifests.pods, manifests.nodes, manifests.nodeclaims)
    return explain_first_pass(
        pod_key,
        pools,
        preview=LaunchPreview(opts.min_values_policy),
        state_nodes=snap.nodes,
        pending=snap.pending,
        daemonsets=manifests.daemonsets,
        options=opts,
    )
