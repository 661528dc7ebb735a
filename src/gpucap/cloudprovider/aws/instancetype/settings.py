"""The EC2NodeClass inputs of an instance type's capacity: `NodeClassSettings`.

Karpenter's AWS provider resolves instance types per EC2NodeClass: its kubelet settings, AMI
family, block devices, instance-store policy and network interfaces change capacity, overhead and
offerings, and the instance-type cache is keyed by a hash of them (`cacheKey` in
`pkg/providers/instancetype/instancetype.go`). `NodeClassSettings` is that key: immutable,
hashable, in base units; `node_class_settings` reads it from an `EC2NodeClass`. Called by the
AWS cloud provider, the lint context and the auto-mode types; `resolve.py` and `Catalog` read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.quantity import QuantityError, parse_resource_value
from gpucap.cloudprovider.aws.instancetype import capacity as cap
from gpucap.cloudprovider.aws.instancetype.capacity import (
    AMIFamilyTraits,
    BlockDeviceSettings,
    NetworkInterfaceSettings,
)

__all__ = ["NodeClassSettings", "node_class_settings"]


@dataclass(frozen=True, slots=True)
class NodeClassSettings:
    """The EC2NodeClass (and operator) inputs of the capacity model, in base units.

    `kube_reserved`/`system_reserved`: resource -> amount (cpu millicores, memory and
    ephemeral-storage bytes); `eviction_hard`: signal -> value as written (`500Mi`, `10%`);
    `network_interfaces` None means the NodeClass does not set `networkInterfaces`.
    `reserved_enis` and `vm_memory_overhead_percent` are Karpenter operator settings.
    """

    ami_family: str = "AL2023"
    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Mapping[str, int] = field(default_factory=dict)
    system_reserved: Mapping[str, int] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    block_device_mappings: tuple[BlockDeviceSettings, ...] = ()
    instance_store_policy: str | None = None
    network_interfaces: tuple[NetworkInterfaceSettings, ...] | None = None
    reserved_enis: int = cap.RESERVED_ENIS
    vm_memory_overhead_percent: float = cap.VM_MEMORY_OVERHEAD_PERCENT

    def __post_init__(self) -> None:
        if self.ami_family not in cap.AMI_FAMILIES:
            known = ", ".join(sorted(cap.AMI_FAMILIES))
            raise ValueError(f"amiFamily {self.ami_family!r} is not one of {known}")
        for name in ("max_pods", "pods_per_core"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        for name in ("kube_reserved", "system_reserved"):
            values = dict(getattr(self, name))
            for resource, amount in values.items():
                if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                    raise ValueError(f"{name}[{resource!r}] must be an integer >= 0")
            object.__setattr__(self, name, MappingProxyType(values))
        hard = dict(self.eviction_hard)
        for signal, value in hard.items():
            try:
                cap.eviction_signal_bytes(0, value)
            except (QuantityError, ValueError) as err:
                raise ValueError(f"evictionHard[{signal!r}]: {err}") from None
        object.__setattr__(self, "eviction_hard", MappingProxyType(hard))
        object.__setattr__(self, "block_device_mappings", tuple(self.block_device_mappings))
        if sum(1 for m in self.block_device_mappings if m.root_volume) > 1:
            raise ValueError("at most one block device mapping may be the root volume")
        if self.instance_store_policy not in (None, cap.INSTANCE_STORE_POLICY_RAID0):
            raise ValueError(f"instanceStorePolicy {self.instance_store_policy!r} is not RAID0")
        if self.network_interfaces is not None:
            object.__setattr__(self, "network_interfaces", tuple(self.network_interfaces))
        if self.reserved_enis < 0:
            raise ValueError(f"reserved_enis must be >= 0, got {self.reserved_enis}")
        if not 0 <= self.vm_memory_overhead_percent < 1:
            raise ValueError("vm_memory_overhead_percent must be in [0, 1)")

    def __hash__(self) -> int:
        return hash(
            (
                self.ami_family,
                self.max_pods,
                self.pods_per_core,
                tuple(sorted(self.kube_reserved.items())),
                tuple(sorted(self.system_reserved.items())),
                tuple(sorted(self.eviction_hard.items())),
                self.block_device_mappings,
                self.instance_store_policy,
                self.network_interfaces,
                self.reserved_enis,
                self.vm_memory_overhead_percent,
            )
        )

    @property
    def traits(self) -> AMIFamilyTraits:
        return cap.AMI_FAMILIES[self.ami_family]


def node_class_settings(
    nodeclass: EC2NodeClass,
    *,
    reserved_enis: int = cap.RESERVED_ENIS,
    vm_memory_overhead_percent: float = cap.VM_MEMORY_OVERHEAD_PERCENT,
) -> NodeClassSettings:
    """The capacity-model inputs of an EC2NodeClass (plus the two operator settings).

    amiFamily (set or inferred from the alias); kubelet maxPods, podsPerCore, kubeReserved and
    systemReserved (quantities in base units: cpu millicores, others bytes or counts),
    evictionHard (as written); blockDeviceMappings (volumeSize in bytes, deviceName,
    rootVolume); instanceStorePolicy; networkInterfaces. A value the capacity model cannot use
    raises ValueError naming the EC2NodeClass and the field.
    """
    spec = nodeclass.spec
    where = f"EC2NodeClass {nodeclass.name}"
    kubelet = spec.kubelet

    def reserved(name: str, values: Mapping[str, str] | None) -> dict[str, int]:
        out: dict[str, int] = {}
        for resource, text in sorted((values or {}).items()):
            try:
                out[resource] = parse_resource_value(resource, text)
            except QuantityError as err:
                raise ValueError(f"{where}: spec.kubelet.{name}[{resource!r}]: {err}") from None
        return out

    mappings: list[BlockDeviceSettings] = []
    for index, mapping in enumerate(spec.block_device_mappings or ()):
        size_text = mapping.ebs.volume_size if mapping.ebs is not None else None
        size: int | None = None
        if size_text is not None:
            try:
                size = parse_resource_value("storage", size_text)
            except QuantityError as err:
                raise ValueError(
                    f"{where}: spec.blockDeviceMappings[{index}].ebs.volumeSize: {err}"
                ) from None
        mappings.append(BlockDeviceSettings(mapping.device_name, size, mapping.root_volume))
    nics = (
        None
        if spec.network_interfaces is None
        else tuple(
            NetworkInterfaceSettings(nic.network_card_index, nic.device_index, nic.interface_type)
            for nic in spec.network_interfaces
        )
    )
    kube_reserved = reserved("kubeReserved", kubelet.kube_reserved if kubelet else None)
    system_reserved = reserved("systemReserved", kubelet.system_reserved if kubelet else None)
    try:
        return NodeClassSettings(
            ami_family=nodeclass.ami_family,
            max_pods=kubelet.max_pods if kubelet is not None else None,
            pods_per_core=kubelet.pods_per_core if kubelet is not None else None,
            kube_reserved=kube_reserved,
            system_reserved=system_reserved,
            eviction_hard=dict((kubelet.eviction_hard if kubelet else None) or {}),
            block_device_mappings=tuple(mappings),
            instance_store_policy=spec.instance_store_policy,
            network_interfaces=nics,
            reserved_enis=reserved_enis,
            vm_memory_overhead_percent=vm_memory_overhead_percent,
        )
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
