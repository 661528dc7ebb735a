"""EC2NodeClass (`karpenter.k8s.aws/v1`): how nodes are built (AMI, subnets, security groups,
IAM role, block devices, kubelet), with the CRD's defaults.

Fields and defaults follow the CRD (`aws/karpenter-provider-aws:pkg/apis/crds/`
`karpenter.k8s.aws_ec2nodeclasses.yaml`, main, 2026-08). The only CRD default is
`metadataOptions`; the AMI family is *inferred* from the alias when `amiFamily` is absent
(`EC2NodeClass.ami_family`), as the provider does at runtime. `kubelet` is typed as in v1.14.1;
on Karpenter's main branch it became an open map checked by the controller, so unknown kubelet
keys are kept rather than rejected (see docs/design/apis.md).
Called by `apis/serde.py`; read by the catalog (capacity), AMI resolution, launch and lint.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr

from gpucap.apis.meta import KarpenterModel, ObjectMeta

__all__ = [
    "AMISelectorTerm",
    "BlockDevice",
    "BlockDeviceMapping",
    "EC2NodeClass",
    "KubeletConfiguration",
]

AMIFamily = Literal[
    "AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"
]

# alias family (lower-case, as written in `family@version`) -> amiFamily value
ALIAS_FAMILIES: dict[str, AMIFamily] = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}


class SelectorTerm(KarpenterModel):
    tags: dict[str, StrictStr] | None = None
    id: StrictStr | None = None
    name: StrictStr | None = None


class SubnetSelectorTerm(KarpenterModel):
    tags: dict[str, StrictStr] | None = None
    id: StrictStr | None = None


class CapacityReservationSelectorTerm(KarpenterModel):
    tags: dict[str, StrictStr] | None = None
    id: StrictStr | None = None
    owner_id: StrictStr | None = Field(default=None, alias="ownerID")
    instance_match_criteria: Literal["open", "targeted"] | None = None


class AMISelectorTerm(KarpenterModel):
    alias: StrictStr | None = None
    tags: dict[str, StrictStr] | None = None
    id: StrictStr | None = None
    name: StrictStr | None = None
    owner: StrictStr | None = None
    ssm_parameter: StrictStr | None = None

    @property
    def alias_family(self) -> str | None:
        return self.alias.split("@", 1)[0] if self.alias else None

    @property
    def alias_version(self) -> str | None:
        if not self.alias or "@" not in self.alias:
            return None
        return self.alias.split("@", 1)[1]


class BlockDevice(KarpenterModel):
    delete_on_termination: StrictBool | None = None
    encrypted: StrictBool | None = None
    iops: StrictInt | None = None
    kms_key_id: StrictStr | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: StrictStr | None = Field(default=None, alias="snapshotID")
    throughput: StrictInt | None = None
    volume_initialization_rate: StrictInt | None = None
    volume_size: StrictStr | None = None
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None


class BlockDeviceMapping(KarpenterModel):
    device_name: StrictStr | None = None
    ebs: BlockDevice | None = None
    root_volume: StrictBool = False


class MetadataOptions(KarpenterModel):
    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(
        default="disabled", alias="httpProtocolIPv6"
    )
    http_put_response_hop_limit: StrictInt = 1
    http_tokens: Literal["required", "optional"] = "required"


class KubeletConfiguration(KarpenterModel):
    # Main-branch Karpenter accepts any upstream KubeletConfiguration key here.
    model_config = ConfigDict(extra="allow")

    cluster_dns: list[StrictStr] | None = Field(default=None, alias="clusterDNS")
    max_pods: StrictInt | None = None
    pods_per_core: StrictInt | None = None
    system_reserved: dict[str, StrictStr] | None = None
    kube_reserved: dict[str, StrictStr] | None = None
    eviction_hard: dict[str, StrictStr] | None = None
    eviction_soft: dict[str, StrictStr] | None = None
    eviction_soft_grace_period: dict[str, StrictStr] | None = None
    eviction_max_pod_grace_period: StrictInt | None = None
    image_gc_high_threshold_percent: StrictInt | None = Field(
        default=None, alias="imageGCHighThresholdPercent"
    )
    image_gc_low_threshold_percent: StrictInt | None = Field(
        default=None, alias="imageGCLowThresholdPercent"
    )
    cpu_cfs_quota: StrictBool | None = Field(default=None, alias="cpuCFSQuota")


class NetworkInterface(KarpenterModel):
    device_index: Annotated[StrictInt, Field(ge=0)]
    network_card_index: Annotated[StrictInt, Field(ge=0)]
    interface_type: Literal["interface", "efa-only"]


class PlacementGroupSelector(KarpenterModel):
    id: StrictStr | None = None
    name: StrictStr | None = None


class ConnectionTracking(KarpenterModel):
    tcp_established_timeout: StrictInt | None = None
    udp_stream_timeout: StrictInt | None = None
    udp_timeout: StrictInt | None = None


class CPUOptions(KarpenterModel):
    nested_virtualization: Literal["enabled", "disabled"] | None = None


class EC2NodeClassSpec(KarpenterModel):
    subnet_selector_terms: list[SubnetSelectorTerm]
    security_group_selector_terms: list[SelectorTerm]
    ami_selector_terms: list[AMISelectorTerm]
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] | None = None
    associate_public_ip_address: StrictBool | None = Field(
        default=None, alias="associatePublicIPAddress"
    )
    ami_family: AMIFamily | None = None
    user_data: StrictStr | None = None
    role: StrictStr | None = None
    instance_profile: StrictStr | None = None
    tags: dict[str, StrictStr] | None = None
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: list[BlockDeviceMapping] | None = None
    instance_store_policy: Literal["RAID0"] | None = None
    detailed_monitoring: StrictBool | None = None
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    context: StrictStr | None = None
    network_interfaces: list[NetworkInterface] | None = None
    placement_group_selector: PlacementGroupSelector | None = None
    connection_tracking: ConnectionTracking | None = None
    cpu_options: CPUOptions | None = None
    ip_prefix_count: Annotated[StrictInt, Field(ge=0)] | None = None


class EC2NodeClass(KarpenterModel):
    api_version: Literal["karpenter.k8s.aws/v1"] = "karpenter.k8s.aws/v1"
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    metadata: ObjectMeta
    spec: EC2NodeClassSpec
    status: dict[str, object] | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def alias(self) -> AMISelectorTerm | None:
        """The alias term, if the AMI is chosen by `family@version` (it is then the only term)."""
        return next((t for t in self.spec.ami_selector_terms if t.alias), None)

    @property
    def ami_family(self) -> str:
        """amiFamily as set, else inferred from the alias, else Custom."""
        if self.spec.ami_family:
            return self.spec.ami_family
        term = self.alias
        if term and term.alias_family in ALIAS_FAMILIES:
            return ALIAS_FAMILIES[term.alias_family]
        return "Custom"
