"""AWSCloudProvider: Karpenter's AWS provider over the `EC2API` seam.

`create` follows aws `pkg/cloudprovider/cloudprovider.go: Create` and `pkg/providers/instance/
instance.go`: resolve the EC2NodeClass (missing ⇒ insufficient capacity, unless the provider
was given a `default_nodeclass`; AMIs unresolvable ⇒ not ready), list instance types fresh
(insufficient-capacity marks applied), run the launch filters under the `min_values_policy`
and pick the capacity type (`launch.py`), map each type to the first AMI whose
requirements it meets (types without one are dropped), build the CreateFleet request (one
override per type x zone with the zone's subnet, the AMI and the offering price as priority;
`price-capacity-optimized` for spot, `lowest-price` for on-demand; tags on the instance, its
volumes and the fleet in the request itself, so an instance is never untagged), call
CreateFleet, mark every override that failed with an insufficient-capacity code unavailable for
3 minutes (after every call, successes too), and turn the result into the launched NodeClaim or
Karpenter's error. The same code runs over SimulatedEC2 (the default) and boto3 (real AWS).

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

Not modelled: launch templates (one named template per node class stands in for Karpenter's
split by AMI/maxPods/EFA), capacity reservations, placement groups, subnet IP accounting.
Called by the lifecycle controllers (launch, termination, drift), by `plan` (instance types,
through the Provisioner) and by the contract tests.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.hashing import structure_hash
from gpucap.apis.labels import CAPACITY_TYPE, EC2NODECLASS, INSTANCE_TYPE, NODEPOOL, ZONE
from gpucap.apis.meta import ObjectMeta
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.placeholders import placeholders
from gpucap.apis.quantity import Quantity, base_units
from gpucap.cloudprovider.aws.amifamily import (
    AMIDiscoveryError,
    AMIResolutionError,
    UnsupportedAliasError,
    resolve_amis,
)
from gpucap.cloudprovider.aws.amireleases import RELEASE_FAMILIES, known_releases
from gpucap.cloudprovider.aws.ec2.api import EC2API, EC2APIError
from gpucap.cloudprovider.aws.ice_cache import (
    ICE_ERROR_CODES,
    SERVICE_LINKED_ROLE_ERROR,
    UnavailableOfferings,
)
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.settings import node_class_settings
from gpucap.cloudprovider.aws.launch import MinValuesPolicy, launch_options
from gpucap.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    launched_node_claim,
)
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "DEFAULT_EC2NODECLASS",
    "NODECLASS_READY",
    "AWSCloudProvider",
    "NodeClassReadiness",
    "ResolvedImage",
    "alias_readiness",
    "parse_provider_id",
]

NODECLAIM_TAG = "karpenter.sh/nodeclaim"
CLUSTER_NAME_TAG = "eks:eks-cluster-name"


class ResolvedImage(Protocol):
    """An AMI the node class resolved to, with the instance types it applies to."""

    @property
    def id(self) -> str: ...

    @property
    def requirements(self) -> Requirements: ...


ImageResolver = Callable[[EC2NodeClass], Sequence[ResolvedImage]]


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

NODECLASS_HASH_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODECLASS_HASH_VERSION = "v6"
# pkg/providers/ssm: resolved SSM parameters (and so alias AMIs) are cached for 24 hours.
AMI_CACHE_TTL = dt.timedelta(hours=24)
# Fields Karpenter leaves out of the node class hash (`hash:"ignore"` in pkg/apis/v1/
# ec2nodeclass.go): drift on them is detected dynamically (AMI, subnet, security group), or not
# at all. The resolved AMI family and the kubelet settings are hashed explicitly.
_UNHASHED = (
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "ipPrefixCount",
    "amiSelectorTerms",
    "amiFamily",
)


@dataclass(frozen=True, slots=True)
class NodeClassReadiness:
    """An EC2NodeClass's readiness: `status` of its Ready condition ("True", "False",
    "Unknown"), and the condition that decides it (`condition`, its `reason` and `message`).

    Read from aws `pkg/controllers/nodeclass/ami.go` @ v1.14.1: an AL2 alias on Kubernetes
    1.33+ or a Windows 2025 alias before 1.35 sets AMIsReady False, reason `UnsupportedAlias`;
    selector terms that match no image set it False, `AMINotFound` ("AMISelector did not match
    any AMIs"); any other error (an alias none of whose SSM parameters exists: "failed to
    discover any AMIs for alias", an AWS call that fails) is returned without a condition, so
    AMIsReady stays Unknown, and so does Ready (`status.NewReadyConditions`: Ready is True only
    when every condition is). The message gpucap adds for an alias names the releases it
    knows (`amireleases.known_releases`)."""

    status: str
    condition: str = "Ready"
    reason: str = ""
    message: str = ""

    @property
    def ready(self) -> bool:
        return self.status == "True"


NODECLASS_READY = NodeClassReadiness("True")
AMIS_READY = "AMIsReady"


def nodeclass_hash(nodeclass: EC2NodeClass) -> str:
    """The EC2NodeClass's static hash (aws `EC2NodeClass.Hash`, with `apis/hashing.py`'s
    stand-in for hashstructure): the spec without its `hash:"ignore"` fields, plus the resolved
    AMI family (so `amiFamily: AL2023` added to an `al2023@...` alias changes nothing). Lists
    are sets (reordering tags or block devices changes nothing). A change here drifts every
    NodeClaim launched from the class (`NodeClassDrift`). Karpenter also hashes the cluster's
    CA bundle, which gpucap does not model."""
    spec = nodeclass.spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    for name in _UNHASHED:
        spec.pop(name, None)
    return structure_hash({"spec": spec, "amiFamily": nodeclass.ami_family})


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


def _not_resolved(cause: BaseException) -> str:
    """Why a class resolved no AMI, in words; an alias names the releases gpucap knows."""
    if isinstance(cause, AMIDiscoveryError) and cause.alias is not None:
        alias, k8s = cause.alias, cause.kubernetes_version
        text = f"failed to discover any AMIs for alias {alias} on Kubernetes {k8s}"
        if alias.family in RELEASE_FAMILIES:
            text += f" ({known_releases(k8s, alias.family, near=_date_of(alias.version))})"
        return text
    return str(cause)


def _date_of(version: str) -> dt.date | None:
    """The date a release version (`v20250715`) names, None when it names none."""
    digits = version.removeprefix("v")
    if len(digits) != 8 or not digits.isascii() or not digits.isdigit():
        return None
    try:
        return dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        return None


def _image_for(it: InstanceType, images: Sequence[ResolvedImage]) -> ResolvedImage | None:
    """aws `amifamily.MapToInstanceTypes` for one type: the first image whose requirements the
    type's are `Compatible` with. Launch and AMI drift both ask this."""
    return next((im for im in images if it.requirements.is_compatible(im.requirements)), None)


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
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def parse_provider_id(provider_id: str) -> tuple[str, str]:
    """`aws:///us-east-1a/i-0123` -> (zone, instance id)."""
    prefix = "aws:///"
    if not provider_id.startswith(prefix) or provider_id.count("/") != 4:
        raise NodeClaimNotFoundError(f"provider id {provider_id!r} is not an AWS instance")
    zone, instance_id = provider_id[len(prefix) :].split("/", 1)
    return zone, instance_id


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
    unavailable: UnavailableOfferings = field(init=False)
    _types: dict[tuple[str, tuple[str, ...]], tuple[InstanceType, ...]] = field(
        default_factory=dict
    )
    _subnets: dict[str, str] | None = None
    _templates: set[str] = field(default_factory=set)
    _ami_cache: dict[tuple[str, str], tuple[dt.datetime, Sequence[ResolvedImage]]] = field(
        default_factory=dict
    )
    # Drift checks run for every NodeClaim every 5 minutes: what they derive is kept while its
    # inputs are the same objects (the class; its AMIs and instance types) or, for what EC2
    # says about subnets, for one instant of the clock.
    _class_hash: dict[str, tuple[EC2NodeClass, str]] = field(default_factory=dict)
    _chosen: dict[tuple[str, str], tuple[object, object, str | None, bool]] = field(
        default_factory=dict
    )
    _network: tuple[dt.datetime, frozenset[str]] | None = None
    _verdicts: dict[str, tuple[tuple[object, ...], str]] = field(default_factory=dict)
    _terms: dict[str, tuple[EC2NodeClass, str]] = field(default_factory=dict)
    # The image each type's requirements map to, per AMI list (both by identity, both held):
    # every create asks it of up to 60 types, and the provider's types share requirements.
    _image_memo: dict[
        tuple[int, int], tuple[Sequence[ResolvedImage], Requirements, ResolvedImage | None]
    ] = field(default_factory=dict)
    # `instance_types_for`'s last answer per node-class key, with the class object, the marks'
    # sequence number and the span of the clock it holds for: from the instant it was built
    # until the first mark then in force expires (None: none was). The answer reads only the
    # class and the marks in force; with no mark made since (same sequence number) those are
    # the same at every instant of that span (`expire` drops only marks no lookup sees), so the
    # answer is too. Drift asks it for every NodeClaim every 5 minutes, provisioning every pass.
    _types_now: dict[
        str,
        tuple[EC2NodeClass, int, dt.datetime, dt.datetime | None, tuple[InstanceType, ...]],
    ] = field(default_factory=dict)
    # `_to_node_claim`'s answer per instance ID with the description fields it read: garbage
    # collection lists every instance about twice a minute and the NodeClaims are frozen, so
    # one built from the same fields is the same value.
    _claims_of: dict[str, tuple[tuple[object, ...], NodeClaim, Mapping[str, Any]]] = field(
        default_factory=dict
    )
    # `list`'s last answer with the descriptions it was built from (see `list`).
    _listed: tuple[list[Mapping[str, Any]], list[NodeClaim]] | None = None
    # `is_drifted`'s per-class inputs (hash, AMIs, types, subnet IDs) per class name, with the
    # class object, instant and marks' sequence number they were derived at (see `is_drifted`).
    _drift_inputs: dict[
        str,
        tuple[
            EC2NodeClass,
            dt.datetime,
            int,
            str,
            Sequence[ResolvedImage],
            tuple[InstanceType, ...],
            frozenset[str],
        ],
    ] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.unavailable = UnavailableOfferings(self.clock)

    def name(self) -> str:
        return "aws"

    # ---- instance types ------------------------------------------------------------------------
    def instance_types_for(self, nodeclass: EC2NodeClass) -> tuple[InstanceType, ...]:
        """The node class's instance types with insufficient-capacity marks applied (rebuilt
        only when the set of active marks changes, as Karpenter keys its cache on them: a mark
        is made or one in force expires, see `_types_now`)."""
        name = _DEFAULT_KEY if nodeclass is self.default_nodeclass else nodeclass.name
        now = self.clock.now()
        last = self._types_now.get(name)
        if (
            last is not None
            and last[0] is nodeclass
            and last[1] == self.unavailable.seq
            and last[2] <= now
            and (last[3] is None or now < last[3])
        ):
            return last[4]
        result = self._instance_types_for(nodeclass, name)
        self._types_now[name] = (
            nodeclass,
            self.unavailable.seq,
            now,
            self.unavailable.next_expiry(),
            result,
        )
        return result

    def _instance_types_for(self, nodeclass: EC2NodeClass, name: str) -> tuple[InstanceType, ...]:
        self.unavailable.expire()
        marks = tuple(self.unavailable.active())
        key = (name, marks)
        cached = self._types.get(key)
        if cached is not None:
            return cached
        base = self.catalog.instance_types(node_class_settings(nodeclass))
        if not marks:
            # The catalog's own list: node classes with equal settings share it, and so do
            # the scheduler's tables built from it.
            self._types[key] = base
            return base
        out = []
        for it in base:
            offerings = tuple(
                Offering(
                    o.zone,
                    o.capacity_type,
                    o.price,
                    o.available
                    and not self.unavailable.is_unavailable(o.capacity_type, it.name, o.zone),
                )
                for o in it.offerings
            )
            if offerings == it.offerings:
                out.append(it)
            else:
                out.append(
                    InstanceType(it.name, it.requirements, it.capacity, it.allocatable, offerings)
                )
        result = tuple(out)
        if len(self._types) > 64:
            self._types.clear()
        self._types[key] = result
        return result

    def nodeclass_for(self, name: str) -> EC2NodeClass | None:
        """The EC2NodeClass named `name`, else the default one (None when there is neither):
        the one place the missing-class policy is decided."""
        return self.nodeclasses.get(name, self.default_nodeclass)

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        nodeclass = self.nodeclass_for(nodepool.spec.template.spec.node_class_ref.name)
        if nodeclass is None:
            return ()
        return self.instance_types_for(nodeclass)

    # ---- create ----------------------------------------------------------------------------------
    def create(self, node_claim: NodeClaim) -> NodeClaim:
        ref = node_claim.spec.node_class_ref
        nodeclass = self.nodeclass_for(ref.name)
        if nodeclass is None:
            raise InsufficientCapacityError(
                f"resolving node class, ec2nodeclasses {ref.name!r} not found"
            )
        images = self._images(nodeclass)
        reqs = Requirements.from_node_selector(node_claim.spec.requirements)
        requests = base_units(node_claim.spec.resources.requests)
        options = launch_options(
            self.instance_types_for(nodeclass),
            reqs,
            requests,
            min_values_policy=self.min_values_policy,
        )
        capacity_type = options.capacity_type()
        # Each type launches with the first AMI whose requirements it meets.
        image_of: dict[str, str] = {}
        for it in options.types:
            image = self._image_of(it, images)
            if image is not None:
                image_of[it.name] = image.id
        with_image = [it.name in image_of for it in options.types]
        types = [it for it, ok in zip(options.types, with_image, strict=True) if ok]
        if not types:
            raise CreateError("LaunchFailed", "no instance types satisfy requirements of amis")
        overrides = options.overrides(capacity_type, only=with_image)
        subnets = self._subnet_by_zone()
        request = self._create_fleet_request(
            node_claim,
            nodeclass,
            capacity_type,
            [
                {
                    "InstanceType": o.instance_type,
                    "SubnetId": subnets[o.zone],
                    "ImageId": image_of[o.instance_type],
                    "AvailabilityZone": o.zone,
                    "Priority": o.price,
                }
                for o in overrides
                if o.zone in subnets
            ],
        )
        self._ensure_launch_template(
            request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"][
                "LaunchTemplateName"
            ],
            nodeclass,
        )
        try:
            response = self.api.create_fleet(**request)
        except EC2APIError as err:
            raise CreateError("CreateFleetFailed", str(err)) from err
        errors = response.get("Errors") or []
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
            return launched_node_claim(
                node_claim,
                instance_type=it,
                zone=zone,
                capacity_type=capacity_type,
                provider_id=f"aws:///{zone}/{instances[0]}",
                image_id=chosen.get("ImageId") or image_of[it.name],
                extra_labels={EC2NODECLASS: nodeclass.name},
                annotations={
                    NODECLASS_HASH_ANNOTATION: self._hash_of(nodeclass),
                    NODECLASS_HASH_VERSION_ANNOTATION: NODECLASS_HASH_VERSION,
                },
            )
        except (KeyError, StopIteration, ValueError) as err:
            # Never leave an instance behind that no NodeClaim will track.
            self.api.terminate_instances(InstanceIds=instances)
            raise CreateError("LaunchFailed", f"unexpected CreateFleet response: {err!r}") from err

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
        overrides: list[dict[str, Any]],
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
        template = (
            "karpenter.k8s.aws/"
            + hashlib.sha256(f"{self.cluster_name}/{nodeclass.name}".encode()).hexdigest()[:20]
        )
        request: dict[str, Any] = {
            "Type": "instant",
            "TargetCapacitySpecification": {
                "DefaultTargetCapacityType": capacity_type,
                "TotalTargetCapacity": 1,
            },
            "LaunchTemplateConfigs": [
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": template,
                        "Version": "$Latest",
                    },
                    "Overrides": overrides,
                }
            ],
            "TagSpecifications": [
                {"ResourceType": r, "Tags": tag_list} for r in ("instance", "volume", "fleet")
            ],
        }
        if capacity_type == "spot":
            request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
        else:
            request["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
        if nodeclass.spec.context:
            request["Context"] = nodeclass.spec.context
        return request

    def _ensure_launch_template(self, name: str, nodeclass: EC2NodeClass) -> None:
        """Karpenter's launch template provider creates the node class's template on first use
        (user data, block devices, metadata options, security groups live there)."""
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
            try:
                self.api.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data)
            except EC2APIError as create_err:
                if "AlreadyExists" not in create_err.code:
                    raise CreateError("LaunchTemplateFailed", str(create_err)) from create_err
        self._templates.add(name)

    def _subnet_by_zone(self) -> dict[str, str]:
        if self._subnets is None:
            subnets = self.api.describe_subnets().get("Subnets", [])
            by_zone: dict[str, tuple[int, str]] = {}
            for s in subnets:
                # One subnet per zone: the one with the most free IPs (ties by id).
                candidate = (-int(s.get("AvailableIpAddressCount", 0)), s["SubnetId"])
                zone = s["AvailabilityZone"]
                if zone not in by_zone or candidate < by_zone[zone]:
                    by_zone[zone] = candidate
            self._subnets = {z: v[1] for z, v in by_zone.items()}
        return self._subnets

    def _images(self, nodeclass: EC2NodeClass) -> Sequence[ResolvedImage]:
        """The node class's AMIs, cached for 24 hours on the clock (Karpenter's SSM cache): a
        new `recommended` release is seen, and `@latest` nodes drift, within a day."""
        known = self._terms.get(nodeclass.name)
        if known is not None and known[0] is nodeclass:
            terms = known[1]
        else:
            terms = json.dumps(
                [
                    t.model_dump(by_alias=True, exclude_none=True)
                    for t in nodeclass.spec.ami_selector_terms
                ],
                sort_keys=True,
            )
            self._terms[nodeclass.name] = (nodeclass, terms)
        key = (nodeclass.name, terms)
        cached = self._ami_cache.get(key)
        now = self.clock.now()
        if cached is not None and now < cached[0]:
            return cached[1]
        images = self._resolve_images(nodeclass)
        self._ami_cache[key] = (now + AMI_CACHE_TTL, images)
        return images

    def _resolve_images(self, nodeclass: EC2NodeClass) -> Sequence[ResolvedImage]:
        try:
            if self.images is not None:
                images = self.images(nodeclass)
            else:
                images = resolve_amis(
                    nodeclass, self.kubernetes_version, self.api, now=self.clock.now()
                )
        except (EC2APIError, AMIResolutionError, ValueError) as err:
            raise NodeClassNotReadyError(
                f"resolving AMIs for EC2NodeClass {nodeclass.name}: {err}"
            ) from err
        if not images:
            raise NodeClassNotReadyError(f"EC2NodeClass {nodeclass.name} resolved no AMI")
        return images

    # ---- interruption and status -----------------------------------------------------------
    def mark_interrupted(self, node_claim: NodeClaim) -> None:
        """A spot interruption marks the instance's offering unavailable, as an
        insufficient-capacity error does (aws `pkg/controllers/interruption`)."""
        labels = node_claim.metadata.labels
        if labels.get(CAPACITY_TYPE) == "spot" and INSTANCE_TYPE in labels and ZONE in labels:
            self.unavailable.mark_unavailable("spot", labels[INSTANCE_TYPE], labels[ZONE])

    def nodeclass_readiness(self, nodeclass: EC2NodeClass) -> NodeClassReadiness:
        """Whether the class is Ready, from the AMIs it resolves now (through the 24-hour
        cache, as Karpenter's reconciler reads its SSM cache): see `NodeClassReadiness`."""
        try:
            self._images(nodeclass)
        except NodeClassNotReadyError as err:
            cause = err.__cause__
            if isinstance(cause, UnsupportedAliasError):
                return NodeClassReadiness("False", AMIS_READY, "UnsupportedAlias", str(cause))
            if cause is None:  # resolved, to nothing
                return NodeClassReadiness(
                    "False", AMIS_READY, "AMINotFound", "AMISelector did not match any AMIs"
                )
            return NodeClassReadiness("Unknown", AMIS_READY, message=_not_resolved(cause))
        return NODECLASS_READY

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
        images = self._images(nodeclass)
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
        subnets = [{"id": s, "zone": z} for z, s in sorted(self._subnet_by_zone().items())]
        return {
            "amis": amis,
            "subnets": subnets,
            "conditions": [
                {"type": AMIS_READY, "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        }

    # ---- get / list / delete --------------------------------------------------------------
    def _instance(self, instance_id: str) -> dict[str, Any]:
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

    def _to_node_claim(self, inst: Mapping[str, Any]) -> NodeClaim:
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
        labels = {
            INSTANCE_TYPE: inst["InstanceType"],
            ZONE: zone,
            CAPACITY_TYPE: "spot" if inst.get("InstanceLifecycle") == "spot" else "on-demand",
        }
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

    def get(self, provider_id: str) -> NodeClaim:
        _, instance_id = parse_provider_id(provider_id)
        return self._to_node_claim(self._instance(instance_id))

    def list(self) -> list[NodeClaim]:
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
        # description, `_to_node_claim`).
        kept = self._listed
        if (
            kept is not None
            and len(kept[0]) == len(described)
            and all(a is b for a, b in zip(kept[0], described, strict=True))
        ):
            return list(kept[1])
        out = sorted(
            (self._to_node_claim(inst) for inst in described),
            key=lambda nc: nc.status.provider_id or "",
        )
        self._listed = (described, out)
        return list(out)

    def delete(self, node_claim: NodeClaim) -> None:
        _, instance_id = parse_provider_id(node_claim.status.provider_id or "")
        self._instance(instance_id)  # NodeClaimNotFoundError once it is gone
        try:
            self.api.terminate_instances(InstanceIds=[instance_id])
        except EC2APIError as err:
            if err.code.startswith("InvalidInstanceID"):
                raise NodeClaimNotFoundError(f"instance {instance_id} not found") from err
            raise CreateError("TerminateFailed", str(err)) from err

    # ---- drift --------------------------------------------------------------------------------
    def is_drifted(self, node_claim: NodeClaim) -> str:
        """Why the NodeClaim no longer matches its EC2NodeClass (aws `pkg/cloudprovider/
        drift.go: isNodeClassDrifted`), in Karpenter's order, the first that applies:

        - `NodeClassDrift`: the class's static hash (`nodeclass_hash`) is not the one the
          NodeClaim was launched with, under the same hash version;
        - `AMIDrift`: the AMI Karpenter would now pick for the claim's instance type (the first
          of the class's resolved AMIs whose requirements the type meets) is not the claim's
          `status.imageID`. The AMIs come through the 24-hour SSM cache (`_images`), so an
          `@latest` alias drifts its nodes once the cache serves a new release; a pinned alias
          resolves to the same image for ever and never drifts on a release;
        - `SubnetDrift`: the instance's subnet is not among the class's subnets (gpucap does not
          filter subnets by selector, so this is "the subnet is gone").

        "" when none applies, and when the NodeClaim's class no longer exists (Karpenter cannot
        tell then either). Raises `NodeClassNotReadyError` when the class resolves no AMI and
        `NodeClaimNotFoundError` when the instance is gone: Karpenter's drift check errors and
        leaves the Drifted condition as it was. Not modelled: `SecurityGroupDrift` (gpucap
        neither resolves security-group selectors nor attaches groups at launch, so it cannot
        compare them), capacity-reservation and placement-group drift (gpucap has neither)."""
        nodeclass = self.nodeclasses.get(node_claim.spec.node_class_ref.name)
        if nodeclass is None:
            return ""
        annotations = node_claim.metadata.annotations
        now = self.clock.now()
        seq = self.unavailable.seq
        derived = self._drift_inputs.get(nodeclass.name)
        if (
            derived is not None
            and derived[0] is nodeclass
            and derived[1] == now
            and derived[2] == seq
        ):
            # The same class object at the same instant with no mark made since: each input
            # below would come from its own cache unchanged (the hash per class object, the
            # AMIs' cache entry is valid at this instant, the subnets per instant, the types
            # per class, instant and marks), so they are taken as a whole.
            class_hash, images, types, subnets = derived[3:]
            if (
                annotations.get(NODECLASS_HASH_VERSION_ANNOTATION) == NODECLASS_HASH_VERSION
                and NODECLASS_HASH_ANNOTATION in annotations
                and annotations[NODECLASS_HASH_ANNOTATION] != class_hash
            ):
                return "NodeClassDrift"
        else:
            class_hash = self._hash_of(nodeclass)
            if (
                annotations.get(NODECLASS_HASH_VERSION_ANNOTATION) == NODECLASS_HASH_VERSION
                and NODECLASS_HASH_ANNOTATION in annotations
                and annotations[NODECLASS_HASH_ANNOTATION] != class_hash
            ):
                return "NodeClassDrift"
            images = self._images(nodeclass)  # NodeClassNotReadyError: no AMI resolves
            types = self.instance_types_for(nodeclass)
            subnets = self._now_known()
            self._drift_inputs[nodeclass.name] = (
                nodeclass,
                now,
                seq,
                class_hash,
                images,
                types,
                subnets,
            )
        inputs = (node_claim, nodeclass, images, types, subnets)
        kept = self._verdicts.get(node_claim.name)
        if kept is not None and (
            (k := kept[0])[0] is node_claim
            and k[1] is nodeclass
            and k[2] is images
            and k[3] is types
            and (k[4] is subnets or k[4] == subnets)
        ):
            # The same objects (the subnet IDs: the same set): nothing it depends on changed
            # (an instance gone since would make Karpenter's check fail and keep the
            # condition: the same verdict).
            return kept[1]
        verdict = self._dynamic_drift(node_claim, nodeclass, images, types, subnets)
        if len(self._verdicts) > 8192:
            self._verdicts.clear()
        self._verdicts[node_claim.name] = (inputs, verdict)
        return verdict

    def _dynamic_drift(
        self,
        node_claim: NodeClaim,
        nodeclass: EC2NodeClass,
        images: Sequence[ResolvedImage],
        types: Sequence[InstanceType],
        subnets: frozenset[str],
    ) -> str:
        """AMI then subnet drift (see `is_drifted`)."""
        if self._ami_drifted(node_claim, nodeclass, images, types):
            return "AMIDrift"
        instance = self._instance(parse_provider_id(node_claim.status.provider_id or "")[1])
        if subnets and instance.get("SubnetId") and instance["SubnetId"] not in subnets:
            return "SubnetDrift"
        return ""

    def _image_of(self, it: InstanceType, images: Sequence[ResolvedImage]) -> ResolvedImage | None:
        """`_image_for`, memoised by the AMI list and the type's requirements (identity)."""
        key = (id(images), id(it.requirements))
        kept = self._image_memo.get(key)
        if kept is not None and kept[0] is images and kept[1] is it.requirements:
            return kept[2]
        image = _image_for(it, images)
        if len(self._image_memo) >= 8192:
            self._image_memo.clear()
        self._image_memo[key] = (images, it.requirements, image)
        return image

    def _hash_of(self, nodeclass: EC2NodeClass) -> str:
        kept = self._class_hash.get(nodeclass.name)
        if kept is not None and kept[0] is nodeclass:
            return kept[1]
        value = nodeclass_hash(nodeclass)
        self._class_hash[nodeclass.name] = (nodeclass, value)
        return value

    def _now_known(self) -> frozenset[str]:
        """The IDs of the subnets EC2 describes, asked once per instant of the clock."""
        now = self.clock.now()
        if self._network is not None and self._network[0] == now:
            return self._network[1]
        ids = frozenset(s["SubnetId"] for s in self.api.describe_subnets().get("Subnets", []))
        self._network = (now, ids)
        return ids

    def _ami_drifted(
        self,
        node_claim: NodeClaim,
        nodeclass: EC2NodeClass,
        images: Sequence[ResolvedImage],
        types: Sequence[InstanceType],
    ) -> bool:
        """aws `isAMIDrifted`: the claim's image is not the one `MapToInstanceTypes` gives its
        instance type from the class's AMIs now. A claim without an image or an instance type
        Karpenter errors on; gpucap calls it not drifted."""
        image_id = node_claim.status.image_id
        type_name = node_claim.metadata.labels.get(INSTANCE_TYPE)
        if not image_id or not type_name:
            return False
        key = (nodeclass.name, type_name)
        kept = self._chosen.get(key)
        if kept is not None and kept[0] is images and kept[1] is types:
            wanted, found = kept[2], kept[3]
        else:
            it = next((t for t in types if t.name == type_name), None)
            image = _image_for(it, images) if it is not None else None
            wanted, found = (image.id if image is not None else None), it is not None
            self._chosen[key] = (images, types, wanted, found)
        return found and wanted != image_id
