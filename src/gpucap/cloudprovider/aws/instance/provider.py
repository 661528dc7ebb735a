"""The `InstanceProvider`: EC2 instances for NodeClaims, through the `EC2API` seam.

aws `pkg/providers/instance/instance.go` (`Create`, `launchInstance`, `getLaunchTemplateConfigs`,
`getOverrides`, `updateUnavailableOfferingsCache`, `Get`, `List`, `Delete`) with the launch
template provider's first-use creation (`pkg/providers/launchtemplate`) and, from aws `pkg/
cloudprovider/cloudprovider.go`, `instanceToNodeClaim`.

`create` runs the launch filters under the `min_values_policy` and picks the capacity type
(`launch.py`), maps each type to the first AMI whose requirements it meets (types without one
are dropped), builds the CreateFleet request (one override per type x zone with the zone's
subnet, the AMI and the offering price as priority; `price-capacity-optimized` for spot,
`lowest-price` for on-demand; tags on the instance, its volumes and the fleet in the request
itself, so an instance is never untagged), calls CreateFleet, marks every override that failed
with an insufficient-capacity code unavailable for 3 minutes (after every call, successes too),
and returns the launched `Instance` or raises Karpenter's error. The cloud provider turns the
`Instance` into the launched NodeClaim.

A reserved launch (capacity type `reserved`: the claim holds reservations and one has room)
goes into a reservation as Karpenter sends it: one launch template per reservation (preference
`capacity-reservations-only`, the reservation as target; the market type `capacity-block` or
`interruptible-capacity-reservation` where it is one), each with its overrides, and the fleet's
default target capacity type `capacity-block`, `reserved-capacity` (interruptible, with
`ReservedCapacityOptions`) or `on-demand` (an ODCR). Its errors do not go to the
insufficient-capacity cache: each reservation an unfulfillable error names is marked as having
no instance left (`reservations.mark_unavailable`), and a launch into one counts it down
(`mark_launched`). Reading an instance back, it is `reserved` while EC2 describes it in a
reservation with that preference (`capacityTypeFromInstance`): an ODCR that ended leaves it
on-demand.

Not modelled: launch templates other than one per node class and one per reservation (Karpenter
also splits by AMI/maxPods/EFA), placement groups, subnet IP accounting.
Called by `AWSCloudProvider` (create, get, list, delete, the node class status) and by drift
(`drift.py`: the instance's subnet).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import (
    CAPACITY_TYPE,
    EC2NODECLASS,
    INSTANCE_TYPE,
    NODEPOOL,
    ZONE,
    reservation_labels,
)
from gpucap.apis.meta import ObjectMeta
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import Quantity, base_units
from gpucap.cloudprovider.aws.amifamily.images import ImageProvider, ResolvedImage
from gpucap.cloudprovider.aws.cache import (
    ICE_ERROR_CODES,
    SERVICE_LINKED_ROLE_ERROR,
    UnavailableOfferings,
)
from gpucap.cloudprovider.aws.ec2.api import EC2API, EC2APIError
from gpucap.cloudprovider.aws.instance.filters import CAPACITY_BLOCK_TYPE as CAPACITY_BLOCK
from gpucap.cloudprovider.aws.instance.filters import RESERVED
from gpucap.cloudprovider.aws.instance.launch import (
    FleetOverride,
    MinValuesPolicy,
    launch_options,
)
from gpucap.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
)
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "CLUSTER_NAME_TAG",
    "NODECLAIM_TAG",
    "Instance",
    "InstanceProvider",
    "ReservationMarks",
    "parse_provider_id",
]

NODECLAIM_TAG = "karpenter.sh/nodeclaim"
CLUSTER_NAME_TAG = "eks:eks-cluster-name"


class ReservationMarks(Protocol):
    """The capacity-reservation provider's availability counts the launch changes (aws
    `capacityreservation.Provider`'s `MarkLaunched`, `MarkUnavailable`)."""

    def mark_launched(self, reservation_id: str) -> None: ...

    def mark_unavailable(self, *reservation_ids: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Instance:
    """The instance CreateFleet launched (aws `instance.Instance`): what the cloud provider
    writes back on the NodeClaim; a reserved one names its reservation."""

    id: str
    instance_type: InstanceType
    zone: str
    capacity_type: str
    image_id: str
    reservation_id: str = ""
    reservation_type: str = ""
    interruptible: bool = False

    def reservation_labels(self) -> dict[str, str]:
        """The reservation labels of a reserved instance's node (none otherwise)."""
        return reservation_labels(self.reservation_id, self.reservation_type, self.interruptible)

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.id}"


def parse_provider_id(provider_id: str) -> tuple[str, str]:
    """`aws:///us-east-1a/i-0123` -> (zone, instance id)."""
    prefix = "aws:///"
    if not provider_id.startswith(prefix) or provider_id.count("/") != 4:
        raise NodeClaimNotFoundError(f"provider id {provider_id!r} is not an AWS instance")
    zone, instance_id = provider_id[len(prefix) :].split("/", 1)
    return zone, instance_id


def reservation_preference(inst: Mapping[str, Any]) -> str | None:
    """An instance description's `CapacityReservationSpecification` preference."""
    spec = inst.get("CapacityReservationSpecification") or {}
    preference = spec.get("CapacityReservationPreference")
    return str(preference) if preference is not None else None


def _gib(size: str | None) -> int | None:
    """An EBS volume size (`200Gi`, `100G`, `1Ti`) in GiB, as EC2 takes it (rounded up)."""
    if size is None:
        return None
    return -(-Quantity.parse(size).value() // 2**30)


def _launch_time(value: object) -> dt.datetime | None:
    """EC2's `LaunchTime`: a datetime from boto3, an ISO string from SimulatedEC2."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, str):
        try:
            return parse_rfc3339(value)
        except ValueError:
            return None
    return None


@dataclass(slots=True)
class InstanceProvider:
    """Karpenter AWS's instance provider (see the module docstring)."""

    api: EC2API
    cluster_name: str
    # The cloud provider's insufficient-capacity cache: CreateFleet errors are marked in it.
    unavailable: UnavailableOfferings
    images: ImageProvider
    # The capacity-reservation provider's counts (None: no reservation in play).
    reservations: ReservationMarks | None = None
    _subnets: dict[str, str] | None = None
    _templates: set[str] = field(default_factory=set)
    # `to_node_claim`'s answer per instance ID with the description fields it read: garbage
    # collection lists every instance about twice a minute and the NodeClaims are frozen, so
    # one built from the same fields is the same value.
    _claims_of: dict[str, tuple[tuple[object, ...], NodeClaim, Mapping[str, Any]]] = field(
        default_factory=dict
    )
    # `list`'s last answer with the descriptions it was built from (see `list`).
    _listed: tuple[list[Mapping[str, Any]], list[NodeClaim]] | None = None

    # ---- create ----------------------------------------------------------------------------------
    def create(
        self,
        node_claim: NodeClaim,
        nodeclass: EC2NodeClass,
        instance_types: Sequence[InstanceType],
        images: Sequence[ResolvedImage],
        min_values_policy: MinValuesPolicy,
    ) -> Instance:
        """Launch one instance for the claim from `instance_types` with the class's `images`
        (see the module docstring)."""
        reqs = Requirements.from_node_selector(node_claim.spec.requirements)
        requests = base_units(node_claim.spec.resources.requests)
        options = launch_options(
            instance_types,
            reqs,
            requests,
            min_values_policy=min_values_policy,
        )
        capacity_type = options.capacity_type()
        # Each type launches with the first AMI whose requirements it meets.
        image_of: dict[str, str] = {}
        for it in options.types:
            image = self.images.image_of(it, images)
            if image is not None:
                image_of[it.name] = image.id
        with_image = [it.name in image_of for it in options.types]
        types = [it for it, ok in zip(options.types, with_image, strict=True) if ok]
        if not types:
            raise CreateError("LaunchFailed", "no instance types satisfy requirements of amis")
        overrides = options.overrides(capacity_type, only=with_image)
        subnets = self.subnet_by_zone()
        # One launch template per reservation ("" for spot and on-demand: the class's own).
        by_reservation: dict[str, list[dict[str, Any]]] = {}
        reserved_by_pool: dict[tuple[str, str], FleetOverride] = {}
        for o in overrides:
            if o.zone not in subnets:
                continue
            by_reservation.setdefault(o.reservation_id, []).append(
                {
                    "InstanceType": o.instance_type,
                    "SubnetId": subnets[o.zone],
                    "ImageId": image_of[o.instance_type],
                    "AvailabilityZone": o.zone,
                    "Priority": o.price,
                }
            )
            if o.reservation_id:
                reserved_by_pool[(o.instance_type, o.zone)] = o
        request = self._create_fleet_request(
            node_claim, nodeclass, capacity_type, by_reservation, reserved_by_pool
        )
        # Each reservation's template targets it (the first override naming it says how).
        into_of: dict[str, FleetOverride] = {}
        for o in reserved_by_pool.values():
            into_of.setdefault(o.reservation_id, o)
        for reservation_id in by_reservation or {"": []}:
            self._ensure_launch_template(
                self._template_name(nodeclass, reservation_id),
                nodeclass,
                into_of.get(reservation_id),
            )
        try:
            response = self.api.create_fleet(**request)
        except EC2APIError as err:
            raise CreateError("CreateFleetFailed", str(err)) from err
        errors = response.get("Errors") or []
        if capacity_type == RESERVED:
            self._record_reservation_errors(errors, reserved_by_pool)
        else:
            self._record_errors(errors, capacity_type)
        instances = [
            i for fleet in response.get("Instances") or [] for i in fleet.get("InstanceIds", [])
        ]
        if not instances:
            codes = sorted({e.get("ErrorCode", "") for e in errors})
            if errors and all(
                c in ICE_ERROR_CODES or c == SERVICE_LINKED_ROLE_ERROR for c in codes
            ):
                raise InsufficientCapacityError(
                    f"creating fleet, with fleet error(s), {'; '.join(codes)}"
                )
            raise CreateError(
                "LaunchFailed",
                f"creating fleet, no instance returned ({', '.join(codes) or 'no error'})",
            )
        try:
            first = response["Instances"][0]
            chosen = first["LaunchTemplateAndOverrides"]["Overrides"]
            it = next(t for t in types if t.name == chosen["InstanceType"])
            zone = chosen["AvailabilityZone"]
            into = reserved_by_pool.get((it.name, zone)) if capacity_type == RESERVED else None
            instance = Instance(
                id=instances[0],
                instance_type=it,
                zone=zone,
                capacity_type=capacity_type,
                image_id=chosen.get("ImageId") or image_of[it.name],
                reservation_id=into.reservation_id if into is not None else "",
                reservation_type=into.reservation_type if into is not None else "",
                interruptible=into.interruptible if into is not None else False,
            )
        except (KeyError, StopIteration, ValueError) as err:
            # Never leave an instance behind that no NodeClaim will track.
            self.api.terminate_instances(InstanceIds=instances)
            raise CreateError("LaunchFailed", f"unexpected CreateFleet response: {err!r}") from err
        if instance.reservation_id and self.reservations is not None:
            self.reservations.mark_launched(instance.reservation_id)
        return instance

    def _record_reservation_errors(
        self,
        errors: Sequence[Mapping[str, Any]],
        reserved_by_pool: Mapping[tuple[str, str], FleetOverride],
    ) -> None:
        """aws `updateUnavailableOfferingsCache` for a reserved launch: the reservations of the
        overrides an unfulfillable error names have no instance left (until the next listing
        from EC2); the insufficient-capacity cache is not touched."""
        gone: list[str] = []
        for e in errors:
            if e.get("ErrorCode", "") not in ICE_ERROR_CODES:
                continue
            override = (e.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            into = reserved_by_pool.get(
                (override.get("InstanceType", ""), override.get("AvailabilityZone", ""))
            )
            if into is not None and into.reservation_id not in gone:
                gone.append(into.reservation_id)
        if gone and self.reservations is not None:
            self.reservations.mark_unavailable(*gone)

    def _record_errors(self, errors: Sequence[Mapping[str, Any]], capacity_type: str) -> None:
        for e in errors:
            code = e.get("ErrorCode", "")
            override = (e.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            if code == SERVICE_LINKED_ROLE_ERROR:
                self.unavailable.mark_capacity_type_unavailable("spot")
            elif code in ICE_ERROR_CODES and override:
                self.unavailable.mark_unavailable(
                    capacity_type, override["InstanceType"], override["AvailabilityZone"]
                )

    def _create_fleet_request(
        self,
        node_claim: NodeClaim,
        nodeclass: EC2NodeClass,
        capacity_type: str,
        by_reservation: Mapping[str, list[dict[str, Any]]],
        reserved_by_pool: Mapping[tuple[str, str], FleetOverride],
    ) -> dict[str, Any]:
        nodepool = node_claim.metadata.labels.get(NODEPOOL, "")
        tags = {
            **(nodeclass.spec.tags or {}),
            NODEPOOL: nodepool,
            NODECLAIM_TAG: node_claim.name,
            EC2NODECLASS: nodeclass.name,
            CLUSTER_NAME_TAG: self.cluster_name,
            f"kubernetes.io/cluster/{self.cluster_name}": "owned",
        }
        tag_list = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        configs: list[dict[str, Any]] = []
        for reservation_id, overrides in (by_reservation or {"": []}).items():
            spec = {
                "LaunchTemplateName": self._template_name(nodeclass, reservation_id),
                "Version": "$Latest",
            }
            configs.append({"LaunchTemplateSpecification": spec, "Overrides": overrides})
        target = capacity_type
        first = next(iter(reserved_by_pool.values()), None)
        if capacity_type == RESERVED:
            # `defaultTargetCapacityType`: what kind of reservation the launch goes into.
            target = (
                "capacity-block"
                if first is not None and first.reservation_type == CAPACITY_BLOCK
                else "reserved-capacity"
                if first is not None and first.interruptible
                else "on-demand"
            )
        request: dict[str, Any] = {
            "Type": "instant",
            "TargetCapacitySpecification": {
                "DefaultTargetCapacityType": target,
                "TotalTargetCapacity": 1,
            },
            "LaunchTemplateConfigs": configs,
            "TagSpecifications": [
                {"ResourceType": r, "Tags": tag_list} for r in ("instance", "volume", "fleet")
            ],
        }
        if capacity_type == "spot":
            request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
        elif target == "reserved-capacity":
            request["ReservedCapacityOptions"] = {
                "ReservationTypes": ["interruptible-capacity-reservation"]
            }
        elif target != "capacity-block":
            request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
        if nodeclass.spec.context:
            request["Context"] = nodeclass.spec.context
        return request

    def _template_name(self, nodeclass: EC2NodeClass, reservation_id: str) -> str:
        """The launch template of the class (and of one reservation, for a reserved launch)."""
        key = f"{self.cluster_name}/{nodeclass.name}"
        if reservation_id:
            key += f"/{reservation_id}"
        return "karpenter.k8s.aws/" + hashlib.sha256(key.encode()).hexdigest()[:20]

    def _ensure_launch_template(
        self, name: str, nodeclass: EC2NodeClass, into: FleetOverride | None = None
    ) -> None:
        """Karpenter's launch template provider creates the node class's template on first use
        (user data, block devices, metadata options, security groups live there); `into`: the
        reservation a reserved launch's template targets (`CreateLaunchTemplateInputBuilder`)."""
        if name in self._templates:
            return
        try:
            self.api.describe_launch_templates(LaunchTemplateNames=[name])
        except EC2APIError as err:
            if "NotFound" not in err.code:
                raise CreateError("LaunchTemplateFailed", str(err)) from err
            meta = nodeclass.spec.metadata_options
            data: dict[str, Any] = {
                "MetadataOptions": {
                    "HttpEndpoint": meta.http_endpoint,
                    "HttpProtocolIpv6": meta.http_protocol_ipv6,
                    "HttpPutResponseHopLimit": meta.http_put_response_hop_limit,
                    "HttpTokens": meta.http_tokens,
                },
            }
            devices = [
                {
                    "DeviceName": b.device_name,
                    "Ebs": {
                        k: v
                        for k, v in (
                            ("VolumeSize", _gib(b.ebs.volume_size)),
                            ("VolumeType", b.ebs.volume_type),
                            ("Iops", b.ebs.iops),
                            ("Throughput", b.ebs.throughput),
                            ("Encrypted", b.ebs.encrypted),
                            ("DeleteOnTermination", b.ebs.delete_on_termination),
                            ("SnapshotId", b.ebs.snapshot_id),
                        )
                        if v is not None
                    },
                }
                for b in nodeclass.spec.block_device_mappings or []
                if b.device_name and b.ebs is not None
            ]
            if devices:
                data["BlockDeviceMappings"] = devices
            if into is not None:
                data["CapacityReservationSpecification"] = {
                    "CapacityReservationPreference": "capacity-reservations-only",
                    "CapacityReservationTarget": {"CapacityReservationId": into.reservation_id},
                }
                if into.reservation_type == CAPACITY_BLOCK:
                    data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
                elif into.interruptible:
                    data["InstanceMarketOptions"] = {
                        "MarketType": "interruptible-capacity-reservation"
                    }
            try:
                self.api.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data)
            except EC2APIError as create_err:
                if "AlreadyExists" not in create_err.code:
                    raise CreateError("LaunchTemplateFailed", str(create_err)) from create_err
        self._templates.add(name)

    def subnet_by_zone(self) -> dict[str, str]:
        """One subnet per zone, described once: the one with the most free IPs (ties by id)."""
        if self._subnets is None:
            subnets = self.api.describe_subnets().get("Subnets", [])
            by_zone: dict[str, tuple[int, str]] = {}
            for s in subnets:
                candidate = (-int(s.get("AvailableIpAddressCount", 0)), s["SubnetId"])
                zone = s["AvailabilityZone"]
                if zone not in by_zone or candidate < by_zone[zone]:
                    by_zone[zone] = candidate
            self._subnets = {z: v[1] for z, v in by_zone.items()}
        return self._subnets

    # ---- get / list / delete --------------------------------------------------------------
    def describe(self, instance_id: str) -> dict[str, Any]:
        """The instance's EC2 description; `NodeClaimNotFoundError` once it is shutting down,
        terminated or unknown."""
        try:
            reservations = self.api.describe_instances(InstanceIds=[instance_id]).get(
                "Reservations", []
            )
        except EC2APIError as err:
            if err.code.startswith("InvalidInstanceID"):
                raise NodeClaimNotFoundError(f"instance {instance_id} not found") from err
            raise CreateError("DescribeInstancesFailed", str(err)) from err
        for r in reservations:
            for inst in r.get("Instances", []):
                if inst["InstanceId"] == instance_id and inst["State"]["Name"] not in (
                    "shutting-down",
                    "terminated",
                ):
                    return dict(inst)
        raise NodeClaimNotFoundError(f"instance {instance_id} not found")

    def to_node_claim(self, inst: Mapping[str, Any]) -> NodeClaim:
        """aws `instanceToNodeClaim`, memoised on the description fields it reads (at once
        when the description is the very object the claim was built from: the simulated EC2
        hands out the same description while the instance is unchanged, and descriptions are
        only read)."""
        kept = self._claims_of.get(inst["InstanceId"])
        if kept is not None and kept[2] is inst:
            return kept[1]
        read = (
            tuple((t["Key"], t["Value"]) for t in inst.get("Tags", [])),
            inst["Placement"]["AvailabilityZone"],
            inst["InstanceType"],
            inst.get("InstanceLifecycle"),
            inst.get("LaunchTime"),
            inst.get("ImageId"),
            inst.get("CapacityReservationId"),
            reservation_preference(inst),
        )
        claim = kept[1] if kept is not None and kept[0] == read else self._build_node_claim(inst)
        if len(self._claims_of) >= 8192:
            self._claims_of.clear()
        # The description is kept with the claim: its identity cannot be reused meanwhile.
        self._claims_of[inst["InstanceId"]] = (read, claim, inst)
        return claim

    def _build_node_claim(self, inst: Mapping[str, Any]) -> NodeClaim:
        tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
        zone = inst["Placement"]["AvailabilityZone"]
        lifecycle = inst.get("InstanceLifecycle")
        labels = {
            INSTANCE_TYPE: inst["InstanceType"],
            ZONE: zone,
            CAPACITY_TYPE: "spot" if lifecycle == "spot" else "on-demand",
        }
        reservation = inst.get("CapacityReservationId")
        if reservation and reservation_preference(inst) == "capacity-reservations-only":
            # `capacityTypeFromInstance`: in a reservation it targeted; an ODCR that ended
            # (EC2 clears the ID) leaves it on-demand.
            labels[CAPACITY_TYPE] = RESERVED
            labels.update(
                reservation_labels(
                    reservation,
                    CAPACITY_BLOCK if lifecycle == CAPACITY_BLOCK else "default",
                    lifecycle == "interruptible-capacity-reservation",
                )
            )
        if NODEPOOL in tags:
            labels[NODEPOOL] = tags[NODEPOOL]
        meta = ObjectMeta(
            name=tags.get(NODECLAIM_TAG, inst["InstanceId"]),
            labels=labels,
            # aws `instanceToNodeClaim`: the instance's launch time is the NodeClaim's creation
            # (garbage collection spares instances younger than 30 s).
            creation_timestamp=_launch_time(inst.get("LaunchTime")),
        )
        return NodeClaim.model_validate(
            {
                "metadata": meta.model_dump(by_alias=True, exclude_none=True),
                "spec": {
                    "requirements": [
                        {"key": INSTANCE_TYPE, "operator": "In", "values": [inst["InstanceType"]]}
                    ],
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": tags.get(EC2NODECLASS, ""),
                    },
                },
                "status": {
                    "providerID": f"aws:///{zone}/{inst['InstanceId']}",
                    "imageID": inst.get("ImageId"),
                },
            }
        )

    def get(self, instance_id: str) -> NodeClaim:
        return self.to_node_claim(self.describe(instance_id))

    def list(self) -> list[NodeClaim]:
        """The cluster's instances (tagged with a NodePool and this cluster's name, not
        terminated) as NodeClaims, by provider ID."""
        response = self.api.describe_instances(
            Filters=[
                {"Name": "tag-key", "Values": [NODEPOOL]},
                {"Name": f"tag:{CLUSTER_NAME_TAG}", "Values": [self.cluster_name]},
                {
                    "Name": "instance-state-name",
                    "Values": ["pending", "running", "stopping", "stopped"],
                },
            ]
        )
        described = [
            inst for r in response.get("Reservations", []) for inst in r.get("Instances", [])
        ]
        # The same description objects as the last listing (the simulated EC2's unchanged
        # fleet): the same claims in the same order (each claim is a function of its
        # description, `to_node_claim`).
        kept = self._listed
        if (
            kept is not None
            and len(kept[0]) == len(described)
            and all(a is b for a, b in zip(kept[0], described, strict=True))
        ):
            return list(kept[1])
        out = sorted(
            (self.to_node_claim(inst) for inst in described),
            key=lambda nc: nc.status.provider_id or "",
        )
        self._listed = (described, out)
        return list(out)

    def delete(self, instance_id: str) -> None:
        self.describe(instance_id)  # NodeClaimNotFoundError once it is gone
        try:
            self.api.terminate_instances(InstanceIds=[instance_id])
        except EC2APIError as err:
            if err.code.startswith("InvalidInstanceID"):
                raise NodeClaimNotFoundError(f"instance {instance_id} not found") from err
            raise CreateError("TerminateFailed", str(err)) from err
