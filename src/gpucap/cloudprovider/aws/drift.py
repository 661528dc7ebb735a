"""Why a NodeClaim no longer matches its EC2NodeClass: aws `pkg/cloudprovider/drift.go`.

`Drift.is_drifted` is `isNodeClassDrifted` (its static hash, `nodeclass_hash`, is aws
`EC2NodeClass.Hash` in `pkg/apis/v1/ec2nodeclass.go`, and `hash_of` is what the cloud provider
writes on a launched NodeClaim). Drift checks run for every NodeClaim every 5 minutes, so what
they derive is kept while its inputs are the same objects (the class; its AMIs and instance
types) or, for what EC2 says about subnets, for one instant of the clock.
Called by `AWSCloudProvider.is_drifted` (with the claim's class resolved) and `create` (the
hash annotation).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.hashing import structure_hash
from gpucap.apis.labels import INSTANCE_TYPE
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.aws.amifamily.images import ImageProvider, ResolvedImage, image_for
from gpucap.cloudprovider.aws.cache import UnavailableOfferings
from gpucap.cloudprovider.aws.ec2.api import EC2API
from gpucap.cloudprovider.aws.instance.provider import InstanceProvider, parse_provider_id
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType

__all__ = [
    "NODECLASS_HASH_ANNOTATION",
    "NODECLASS_HASH_VERSION",
    "NODECLASS_HASH_VERSION_ANNOTATION",
    "Drift",
    "nodeclass_hash",
]

NODECLASS_HASH_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODECLASS_HASH_VERSION = "v6"
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


@dataclass(slots=True)
class Drift:
    """The AWS provider's drift check and its memos (see the module docstring)."""

    api: EC2API
    clock: Clock
    images: ImageProvider
    instances: InstanceProvider
    # The cloud provider's insufficient-capacity cache: its sequence number says whether the
    # instance types may have changed.
    unavailable: UnavailableOfferings
    # The cloud provider's instance types for a class (marks applied).
    instance_types: Callable[[EC2NodeClass], tuple[InstanceType, ...]]
    _class_hash: dict[str, tuple[EC2NodeClass, str]] = field(default_factory=dict)
    _chosen: dict[tuple[str, str], tuple[object, object, str | None, bool]] = field(
        default_factory=dict
    )
    _network: tuple[dt.datetime, frozenset[str]] | None = None
    _verdicts: dict[str, tuple[tuple[object, ...], str]] = field(default_factory=dict)
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
    # The IDs of the reservations a class selects now (its `status.capacityReservations`);
    # None: reservations are not modelled by this stack.
    reservation_ids: Callable[[EC2NodeClass], frozenset[str]] | None = None

    def is_drifted(self, node_claim: NodeClaim, nodeclass: EC2NodeClass) -> str:
        """Why the NodeClaim no longer matches `nodeclass`, its EC2NodeClass (aws
        `isNodeClassDrifted`), in Karpenter's order, the first that applies:

        - `NodeClassDrift`: the class's static hash (`nodeclass_hash`) is not the one the
          NodeClaim was launched with, under the same hash version;
        - `AMIDrift`: the AMI Karpenter would now pick for the claim's instance type (the first
          of the class's resolved AMIs whose requirements the type meets) is not the claim's
          `status.imageID`. The AMIs come through the 24-hour SSM cache (`ImageProvider`), so
          an `@latest` alias drifts its nodes once the cache serves a new release; a pinned
          alias resolves to the same image for ever and never drifts on a release;
        - `SubnetDrift`: the instance's subnet is not among the class's subnets (gpucap does not
          filter subnets by selector, so this is "the subnet is gone");
        - `CapacityReservationDrift`: EC2 still describes the instance in a reservation (its
          `CapacityReservationId`) that the class no longer selects (aws
          `isCapacityReservationDrifted`); an instance whose reservation ended reads without
          the ID and never drifts this way (it is demoted to on-demand instead).

        "" when none applies. Raises `NodeClassNotReadyError` when the class resolves no AMI
        and `NodeClaimNotFoundError` when the instance is gone: Karpenter's drift check errors
        and leaves the Drifted condition as it was. Not modelled: `SecurityGroupDrift` (gpucap
        neither resolves security-group selectors nor attaches groups at launch, so it cannot
        compare them) and placement-group drift (gpucap has no placement groups)."""
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
            class_hash = self.hash_of(nodeclass)
            if (
                annotations.get(NODECLASS_HASH_VERSION_ANNOTATION) == NODECLASS_HASH_VERSION
                and NODECLASS_HASH_ANNOTATION in annotations
                and annotations[NODECLASS_HASH_ANNOTATION] != class_hash
            ):
                return "NodeClassDrift"
            images = self.images.list(nodeclass)  # NodeClassNotReadyError: no AMI resolves
            types = self.instance_types(nodeclass)
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
        """AMI, subnet, then capacity-reservation drift (see `is_drifted`)."""
        if self._ami_drifted(node_claim, nodeclass, images, types):
            return "AMIDrift"
        instance = self.instances.describe(
            parse_provider_id(node_claim.status.provider_id or "")[1]
        )
        if subnets and instance.get("SubnetId") and instance["SubnetId"] not in subnets:
            return "SubnetDrift"
        reservation = instance.get("CapacityReservationId")
        if (
            reservation
            and self.reservation_ids is not None
            and reservation not in self.reservation_ids(nodeclass)
        ):
            return "CapacityReservationDrift"
        return ""

    def hash_of(self, nodeclass: EC2NodeClass) -> str:
        """`nodeclass_hash`, kept per class object."""
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
            image = image_for(it, images) if it is not None else None
            wanted, found = (image.id if image is not None else None), it is not None
            self._chosen[key] = (images, types, wanted, found)
        return found and wanted != image_id
