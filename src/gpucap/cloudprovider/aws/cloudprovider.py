"""AWSCloudProvider: Karpenter's AWS CloudProvider over the `EC2API` seam.

As aws `pkg/cloudprovider/cloudprovider.go`, it resolves the NodeClaim's or NodePool's
EC2NodeClass and hands each protocol call to a provider: instance types are listed here (the
catalog's types for the class with insufficient-capacity marks applied, fresh per call),
`create`, `get`, `list` and `delete` go to the `InstanceProvider` (`instance/provider.py`), the
AMIs to the `ImageProvider` (`amifamily/images.py`), `is_drifted` to `Drift` (`drift.py`), and
CreateFleet's and interruptions' insufficient-capacity marks live in `unavailable`
(`cache.py`). `create` then writes the launched instance back on the NodeClaim with the node
class's hash annotations. The same code runs over SimulatedEC2 (the default) and boto3 (real
AWS).

`nodeclass_readiness` is the EC2NodeClass's readiness as aws `pkg/controllers/nodeclass`
leaves it (AMIsReady decides it in gpucap: subnets, security groups and the instance profile
always resolve here): the NodePool readiness (`controllers/nodepool/readiness.py`) reads it,
and the provisioner ignores the NodePools of a class that is not Ready. `alias_readiness` is
what `plan` and `lint` ask (they see no user AMIs).

A NodePool whose EC2NodeClass does not exist: Karpenter's provider returns no instance types
(the NodePool is not Ready anyway) and `create` fails. That is the default here too. gpucap's
one other policy lives here as well, `default_nodeclass`: the provider then answers for the
missing class as for that one (`DEFAULT_EC2NODECLASS`: AL2023, no kubelet or block-device
settings, so a 20Gi root volume), which is what `plan` builds its provider with, because people
often plan with a NodePool alone (and `plan` says so in a note).

Called by the lifecycle controllers (launch, termination, drift), by `plan` (instance types,
through the Provisioner) and by the contract tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_TYPE,
    EC2NODECLASS,
    INSTANCE_TYPE,
    ZONE,
)
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.placeholders import placeholders
from gpucap.cloudprovider.aws.amifamily.images import (
    AMIS_READY,
    NODECLASS_READY,
    ImageProvider,
    ImageResolver,
    NodeClassReadiness,
)
from gpucap.cloudprovider.aws.cache import UnavailableOfferings
from gpucap.cloudprovider.aws.capacityreservation.provider import (
    CapacityReservation,
    CapacityReservationProvider,
)
from gpucap.cloudprovider.aws.capacityreservation.status import CapacityReservationStatus
from gpucap.cloudprovider.aws.drift import (
    NODECLASS_HASH_ANNOTATION,
    NODECLASS_HASH_VERSION,
    NODECLASS_HASH_VERSION_ANNOTATION,
    Drift,
)
from gpucap.cloudprovider.aws.ec2.api import EC2API
from gpucap.cloudprovider.aws.instance.launch import MinValuesPolicy
from gpucap.cloudprovider.aws.instance.provider import InstanceProvider, parse_provider_id
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.provider import InstanceTypeProvider
from gpucap.cloudprovider.aws.instancetype.reserved import (
    ReservedCapacity,
    with_reserved_offerings,
)
from gpucap.cloudprovider.types import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    launched_node_claim,
)
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType

__all__ = [
    "DEFAULT_EC2NODECLASS",
    "AWSCloudProvider",
    "alias_readiness",
]


# The EC2NodeClass a provider built with `default_nodeclass=DEFAULT_EC2NODECLASS` answers with
# for a NodePool whose class is not in its input: AL2023 and nothing else set, so the capacity
# model's defaults (`NodeClassSettings()`: a 20Gi root volume, no kubelet reservations).
DEFAULT_EC2NODECLASS = EC2NodeClass.model_validate(
    {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpucap-default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "gpucap"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "gpucap"}}],
        },
    }
)
# The instance-type cache key of the default class (no real EC2NodeClass name has a space).
_DEFAULT_KEY = "default EC2NodeClass"


def alias_readiness(
    provider: AWSCloudProvider, nodeclasses: Iterable[EC2NodeClass]
) -> dict[str, NodeClassReadiness]:
    """Each class's readiness as `plan` and `lint` see it, by name: a class that selects its
    AMI by alias is as `provider` resolves it (over a `SimulatedEC2` that published the bundled
    releases, as the simulator's does); one that selects its own AMIs (id, name, tags, an SSM
    parameter) is taken as Ready, since gpucap cannot see a user's images, and so is an alias
    with an unfilled `${VAR}` (a template such as the workshop's, planned before `gpucap
    render` fills it; lint reports the placeholder)."""
    out: dict[str, NodeClassReadiness] = {}
    for nc in nodeclasses:
        term = nc.alias
        alias = term.alias if term is not None else None
        if alias is None or placeholders(alias, braced_only=True):
            out[nc.name] = NODECLASS_READY
        else:
            out[nc.name] = provider.nodeclass_readiness(nc)
    return out


@dataclass(slots=True)
class AWSCloudProvider:
    """Karpenter's AWS CloudProvider (see the module docstring)."""

    api: EC2API
    catalog: Catalog
    clock: Clock
    nodeclasses: Mapping[str, EC2NodeClass]
    cluster_name: str = "gpucap"
    kubernetes_version: str = "1.36"
    # How AMIs are resolved: default Karpenter's resolution over the same EC2API (SSM + EC2).
    images: ImageResolver | None = None
    # What a NodePool or NodeClaim whose EC2NodeClass is missing gets (see the module
    # docstring); None: Karpenter's behaviour (no instance types, create fails).
    default_nodeclass: EC2NodeClass | None = None
    # Core `MIN_VALUES_POLICY` (an operator option): how `create` truncates with minValues.
    min_values_policy: MinValuesPolicy = "Strict"
    # The insufficient-capacity cache the providers below share (aws `pkg/cache`).
    unavailable: UnavailableOfferings = field(init=False)
    amis: ImageProvider = field(init=False)
    instances: InstanceProvider = field(init=False)
    drift: Drift = field(init=False)
    types: InstanceTypeProvider = field(init=False)
    # Karpenter's capacity-reservation provider over the same EC2API (the `ReservedCapacity`
    # feature gate is on by default in v1.14; gpucap always has it on).
    capacity_reservations: CapacityReservationProvider = field(init=False)
    # `instance_types_for`'s last answer per node class with reservations: the class's types
    # without them, the reservations' offerings as read, and the types with them.
    _reserved: dict[
        str, tuple[tuple[InstanceType, ...], tuple[ReservedCapacity, ...], tuple[InstanceType, ...]]
    ] = field(init=False)

    def __post_init__(self) -> None:
        self.unavailable = UnavailableOfferings(self.clock)
        self.types = InstanceTypeProvider(self.catalog, self.clock, self.unavailable)
        self.amis = ImageProvider(self.api, self.clock, self.kubernetes_version, self.images)
        self.capacity_reservations = CapacityReservationProvider(self.api, self.clock)
        self._reserved = {}
        self.instances = InstanceProvider(
            self.api,
            self.cluster_name,
            self.unavailable,
            self.amis,
            reservations=self.capacity_reservations,
        )
        self.drift = Drift(
            self.api,
            self.clock,
            self.amis,
            self.instances,
            self.unavailable,
            self.instance_types_for,
            reservation_ids=lambda nc: frozenset(r.id for r in self.reservations_for(nc)),
        )

    def name(self) -> str:
        return "aws"

    # ---- instance types ------------------------------------------------------------------------
    def instance_types_for(self, nodeclass: EC2NodeClass) -> tuple[InstanceType, ...]:
        """The node class's instance types with insufficient-capacity marks applied (the
        instance-type provider's `list`, keyed by the class's name or the default class's key),
        and a reserved offering per reservation the class selects (`instancetype/reserved.py`,
        Karpenter's `InjectOfferings`)."""
        key = _DEFAULT_KEY if nodeclass is self.default_nodeclass else nodeclass.name
        types = self.types.list(nodeclass, key)
        if not nodeclass.spec.capacity_reservation_selector_terms:
            return types
        reserved = tuple(self.reserved_capacity(nodeclass))
        kept = self._reserved.get(key)
        if kept is not None and kept[0] is types and kept[1] == reserved:
            return kept[2]
        out = with_reserved_offerings(types, reserved)
        self._reserved[key] = (types, reserved, out)
        return out

    def reservations_for(self, nodeclass: EC2NodeClass) -> list[CapacityReservation]:
        """The reservations the class selects now (the capacity-reservation provider's
        `list` of its `capacityReservationSelectorTerms`; none without terms)."""
        terms = nodeclass.spec.capacity_reservation_selector_terms
        return self.capacity_reservations.list(terms) if terms else []

    def reserved_capacity(self, nodeclass: EC2NodeClass) -> list[ReservedCapacity]:
        """What the class's reserved offerings read of each selected reservation: its kind,
        the provider's free count and whether it is `expiring` (a Capacity Block in its last
        40 minutes, the node class status's state)."""
        now = self.clock.now()
        return [
            ReservedCapacity(
                r.id,
                r.instance_type,
                r.zone,
                r.reservation_type,
                r.interruptible,
                self.capacity_reservations.get_available_instance_count(r.id),
                CapacityReservationStatus.of(r, now).state == "expiring",
            )
            for r in self.reservations_for(nodeclass)
        ]

    def nodeclass_for(self, name: str) -> EC2NodeClass | None:
        """The EC2NodeClass named `name`, else the default one (None when there is neither):
        the one place the missing-class policy is decided."""
        return self.nodeclasses.get(name, self.default_nodeclass)

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        nodeclass = self.nodeclass_for(nodepool.spec.template.spec.node_class_ref.name)
        if nodeclass is None:
            return ()
        return self.instance_types_for(nodeclass)

    # ---- create / get / list / delete ------------------------------------------------------
    def create(self, node_claim: NodeClaim) -> NodeClaim:
        """aws `CloudProvider.Create`: the claim's class (missing: insufficient capacity), its
        AMIs (none: not ready), its instance types, then the instance provider's launch written
        back on the claim with the class's hash."""
        ref = node_claim.spec.node_class_ref
        nodeclass = self.nodeclass_for(ref.name)
        if nodeclass is None:
            raise InsufficientCapacityError(
                f"resolving node class, ec2nodeclasses {ref.name!r} not found"
            )
        images = self.amis.list(nodeclass)
        instance = self.instances.create(
            node_claim,
            nodeclass,
            self.instance_types_for(nodeclass),
            images,
            self.min_values_policy,
        )
        return launched_node_claim(
            node_claim,
            instance_type=instance.instance_type,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            provider_id=instance.provider_id,
            image_id=instance.image_id,
            extra_labels={EC2NODECLASS: nodeclass.name, **instance.reservation_labels()},
            annotations={
                NODECLASS_HASH_ANNOTATION: self.drift.hash_of(nodeclass),
                NODECLASS_HASH_VERSION_ANNOTATION: NODECLASS_HASH_VERSION,
            },
        )

    def get(self, provider_id: str) -> NodeClaim:
        _, instance_id = parse_provider_id(provider_id)
        return self.instances.get(instance_id)

    def list(self) -> list[NodeClaim]:
        return self.instances.list()

    def delete(self, node_claim: NodeClaim) -> None:
        """aws `CloudProvider.Delete`; once the instance is confirmed gone, a reserved one's
        reservation gets its instance back (`MarkTerminated`)."""
        _, instance_id = parse_provider_id(node_claim.status.provider_id or "")
        try:
            self.instances.delete(instance_id)
        except NodeClaimNotFoundError:
            reservation = node_claim.metadata.labels.get(CAPACITY_RESERVATION_ID)
            if reservation:
                self.capacity_reservations.mark_terminated(reservation)
            raise

    # ---- drift ----------------------------------------------------------------------------
    def is_drifted(self, node_claim: NodeClaim) -> str:
        """`Drift.is_drifted` for the claim's EC2NodeClass; "" when the class no longer exists
        (Karpenter cannot tell then either)."""
        nodeclass = self.nodeclasses.get(node_claim.spec.node_class_ref.name)
        if nodeclass is None:
            return ""
        return self.drift.is_drifted(node_claim, nodeclass)

    # ---- interruption and status -----------------------------------------------------------
    def mark_interrupted(self, node_claim: NodeClaim) -> None:
        """A spot interruption marks the instance's offering unavailable, as an
        insufficient-capacity error does (aws `pkg/controllers/interruption`)."""
        labels = node_claim.metadata.labels
        if labels.get(CAPACITY_TYPE) == "spot" and INSTANCE_TYPE in labels and ZONE in labels:
            self.unavailable.mark_unavailable("spot", labels[INSTANCE_TYPE], labels[ZONE])

    def nodeclass_readiness(self, nodeclass: EC2NodeClass) -> NodeClassReadiness:
        """Whether the class is Ready: `ImageProvider.readiness`."""
        return self.amis.readiness(nodeclass)

    def nodeclass_status(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        """The EC2NodeClass status Karpenter writes: resolved AMIs with the requirements that
        map instance types to them, subnets, and the AMIsReady and Ready conditions."""
        readiness = self.nodeclass_readiness(nodeclass)
        if not readiness.ready:
            condition = {
                "status": readiness.status,
                **({"reason": readiness.reason} if readiness.reason else {}),
                "message": readiness.message,
            }
            return {
                "amis": [],
                "conditions": [
                    {"type": AMIS_READY, **condition},
                    {"type": "Ready", **condition},
                ],
            }
        images = self.amis.list(nodeclass)
        amis = [
            {
                "id": im.id,
                **({"name": str(n)} if (n := getattr(im, "name", None)) else {}),
                "requirements": [
                    {
                        "key": k,
                        "operator": r.operator,
                        **({"values": r.sorted_values()} if r.values else {}),
                    }
                    for k, r in sorted(im.requirements.items())
                ],
            }
            for im in images
        ]
        subnets = [{"id": s, "zone": z} for z, s in sorted(self.instances.subnet_by_zone().items())]
        return {
            "amis": amis,
            "subnets": subnets,
            "conditions": [
                {"type": AMIS_READY, "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        }
