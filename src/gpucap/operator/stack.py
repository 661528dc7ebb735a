"""The provider stack, assembled in one place: EC2 (simulated), Karpenter's AWS CloudProvider
over it, the NodeOverlay decorator over that, and the Provisioner over the decorated provider.

Karpenter builds its stack once, at start-up (aws/karpenter-provider-aws
`cmd/controller/main.go`: `cloudprovider.New`, then `overlay.Decorate`, then the cluster state;
the providers come from `pkg/operator/operator.go` `NewOperator`). gpucap has two callers that
need the same stack: `plan` (`operator/plan.py`, once, without time) and the simulator
(`sim/world.py`, on the scenario's clock). Both get it from `simulated_aws`, so what the
simulator launches and what `plan` previews come from the same assembly: the decorator judges
NodeOverlays against every NodePool of the source it is given (a fixed list for `plan`, the
Cluster's accessor for the simulator, re-judged whenever either set changes).

Called by `operator/plan.py` and `sim/world.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis.capacityreservation import Reservations
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.overlay import OverlaidCloudProvider, Source, decorate
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import Clock
from gpucap.scheduling.options import SchedulingOptions

__all__ = ["AWSStack", "simulated_aws"]


@dataclass(frozen=True, slots=True)
class AWSStack:
    """One assembled stack: `ec2` (the simulated EC2 API, which scenarios close capacity in),
    `aws` (Karpenter's AWS CloudProvider), `cloud` (`aws` with the NodeOverlays applied: what
    every controller is given) and `provisioner` (over `cloud`)."""

    ec2: SimulatedEC2
    aws: AWSCloudProvider
    cloud: OverlaidCloudProvider
    provisioner: Provisioner


def simulated_aws(
    catalog: Catalog,
    clock: Clock,
    *,
    nodeclasses: Mapping[str, EC2NodeClass],
    overlays: Source[NodeOverlay],
    nodepools: Source[NodePool],
    kubernetes_version: str,
    default_nodeclass: EC2NodeClass | None = None,
    options: SchedulingOptions | None = None,
    ami_releases: Mapping[str, Sequence[str]] | None = None,
    reservations: Reservations | None = None,
) -> AWSStack:
    """The stack over a fresh `SimulatedEC2` of `catalog` on `clock`, with the bundled EKS AMI
    releases of `kubernetes_version` published and then `ami_releases` (per Kubernetes minor,
    oldest first: the last is `latest`). `nodeclasses` is held, not copied (the simulator adds
    to it as the scenario applies EC2NodeClasses); `overlays` and `nodepools` are fixed
    sequences or accessors (`cloudprovider/overlay.py`). `default_nodeclass` is what a NodePool
    whose EC2NodeClass is missing gets (`plan`'s policy; None: Karpenter's, no types).
    `options` set the Provisioner's and the provider's minValues policy; `reservations` are
    the account's capacity reservations (EC2's, a reservations file)."""
    ec2 = SimulatedEC2(catalog, clock)
    if reservations is not None:
        ec2.reservations = reservations
    ec2.publish_amis(kubernetes_version)
    for k8s, versions in sorted((ami_releases or {}).items()):
        for version in sorted(versions):
            ec2.publish_release(k8s, version)
    aws = AWSCloudProvider(
        ec2,
        catalog,
        clock,
        nodeclasses,
        kubernetes_version=kubernetes_version,
        default_nodeclass=default_nodeclass,
        min_values_policy=(options or SchedulingOptions()).min_values_policy,
    )
    cloud = decorate(aws, overlays, nodepools)
    return AWSStack(ec2, aws, cloud, Provisioner(cloud, options=options))
