"""One instance-type row resolved for a region and an EC2NodeClass: the scheduler's `InstanceType`.

aws/karpenter-provider-aws builds a `cloudprovider.InstanceType` from DescribeInstanceTypes'
`InstanceTypeInfo` in `pkg/providers/instancetype/types.go` (`NewInstanceType`: the requirements
from `computeRequirements`, the capacity from `computeCapacity`, the overhead from
`kubeReservedResources`, `systemReservedResources` and `evictionThreshold`), then gives it
offerings in `pkg/providers/instancetype/offering/base_resolver.go` (one per zone x capacity
type, available when the type is offered in the zone, priced, and compatible with the node class
per `compatibility/compatibility.go`). `resolve_instance_type` does both and returns
`gpucap.scheduling.instancetypes.InstanceType`, the one instance-type class the scheduler, the
launch and the lint rules read: its requirements hold every key of `WELL_KNOWN_LABEL_KEYS`
(`DoesNotExist` where the type has no value). The capacity formulas are in `capacity.py`.

What the scheduler does not read (the data row, the kubelet overhead, the region's prices) is in
`InstanceTypeDetails`, built by `instance_type_details` for the few callers that show it
(`Catalog.details`). Called by `instancetype/catalog.py` (each type once per node class) and the
lint rules (a type resolved in another region). Pure; no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from gpucap.apis.labels import normalize_label
from gpucap.cloudprovider.aws.instancetype import capacity as cap
from gpucap.cloudprovider.aws.instancetype.data import CatalogError, InstanceTypeInfo
from gpucap.cloudprovider.aws.instancetype.pricing import RegionPricing, region_pricing
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = [
    "WELL_KNOWN_LABEL_KEYS",
    "InstanceTypeDetails",
    "Overhead",
    "compute_requirements",
    "instance_type_details",
    "is_compatible",
    "offered_zones",
    "offering_price",
    "offerings",
    "resolve_instance_type",
    "scheduling_requirements",
]

# Every label key `compute_requirements` can set; `scheduling_requirements` gives a type
# `DoesNotExist` for each one it leaves out (Karpenter's `computeRequirements` starts each of
# these keys as DoesNotExist). Karpenter's other AWS well-known keys need data or features the
# catalog does not model and stay undefined in `scheduling_requirements`: zone-id (Karpenter
# sets it only when the subnets' zone IDs are known), nitro-sandbox (main only),
# capacity-reservation-* (only with reservations), placement-group-* (never on the type).
WELL_KNOWN_LABEL_KEYS: Final = frozenset(
    {
        cap.LABEL_INSTANCE_TYPE,
        cap.LABEL_ARCH,
        cap.LABEL_OS,
        cap.LABEL_ZONE,
        cap.LABEL_REGION,
        cap.LABEL_WINDOWS_BUILD,
        cap.LABEL_CAPACITY_TYPE,
        cap.LABEL_INSTANCE_CPU,
        cap.LABEL_INSTANCE_CPU_MANUFACTURER,
        cap.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
        cap.LABEL_INSTANCE_MEMORY,
        cap.LABEL_INSTANCE_EBS_BANDWIDTH,
        cap.LABEL_INSTANCE_NETWORK_BANDWIDTH,
        cap.LABEL_INSTANCE_CATEGORY,
        cap.LABEL_INSTANCE_CAPABILITY_FLEX,
        cap.LABEL_INSTANCE_FAMILY,
        cap.LABEL_INSTANCE_GENERATION,
        cap.LABEL_INSTANCE_LOCAL_NVME,
        cap.LABEL_INSTANCE_SIZE,
        cap.LABEL_INSTANCE_GPU_NAME,
        cap.LABEL_INSTANCE_GPU_MANUFACTURER,
        cap.LABEL_INSTANCE_GPU_COUNT,
        cap.LABEL_INSTANCE_GPU_MEMORY,
        cap.LABEL_INSTANCE_ACCELERATOR_NAME,
        cap.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
        cap.LABEL_INSTANCE_ACCELERATOR_COUNT,
        cap.LABEL_INSTANCE_HYPERVISOR,
        cap.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
        cap.LABEL_INSTANCE_TENANCY,
    }
)


@dataclass(frozen=True, slots=True)
class Overhead:
    """What the kubelet keeps back: kube-reserved, system-reserved and hard-eviction reserve."""

    kube_reserved: Mapping[str, int]
    system_reserved: Mapping[str, int]
    eviction_threshold: Mapping[str, int]

    def total(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for part in (self.kube_reserved, self.system_reserved, self.eviction_threshold):
            for resource, amount in part.items():
                total[resource] = total.get(resource, 0) + amount
        return total


@dataclass(frozen=True, slots=True)
class InstanceTypeDetails:
    """What the catalog knows of a resolved type beyond the scheduler's `InstanceType`: the data
    row, the kubelet overhead (allocatable = capacity - overhead.total()) and the prices in the
    catalog's region. Built on demand by `instance_type_details` (`Catalog.details`)."""

    info: InstanceTypeInfo
    overhead: Overhead
    pricing: RegionPricing


def _eni_limited_pods(
    info: InstanceTypeInfo, *, reserved_enis: int, settings: NodeClassSettings
) -> int:
    efa_only_on_card0 = sum(
        1
        for nic in settings.network_interfaces or ()
        if nic.is_efa_only and nic.network_card_index == 0
    )
    if info.max_enis_default_card is not None and info.ipv4_per_eni is not None:
        return cap.eni_limited_pods(
            info.max_enis_default_card,
            info.ipv4_per_eni,
            reserved_enis=reserved_enis,
            efa_only_on_card0=efa_only_on_card0,
        )
    if reserved_enis or efa_only_on_card0:
        raise CatalogError(
            f"{info.name}: reserved ENIs and EFA-only interfaces need max_enis_default_card "
            "and ipv4_per_eni in the catalog, not only max_pods_eni"
        )
    return info.max_pods_eni


def is_compatible(info: InstanceTypeInfo, settings: NodeClassSettings) -> bool:
    """Karpenter's node-class compatibility checks the data supports (`compatibility.go`)."""
    if settings.ami_family == "AL2023" and info.name.startswith(cap.AL2023_UNSUPPORTED_PREFIX):
        return False
    # No Windows AMI exists for arm64; Karpenter gives such a type an `os In []` requirement.
    if settings.traits.is_windows and info.architecture != "amd64":
        return False
    nics = settings.network_interfaces
    if nics is not None:
        for nic in nics:
            if info.network_card_count is not None and nic.network_card_index >= (
                info.network_card_count
            ):
                return False
            # Only the default card's ENI count is in the data; other cards are not checked.
            if (
                nic.network_card_index == 0
                and info.max_enis_default_card is not None
                and nic.device_index >= info.max_enis_default_card
            ):
                return False
        efa_only = sum(1 for nic in nics if nic.is_efa_only)
        if efa_only > info.efa_interfaces:
            return False
    return True


def compute_requirements(
    info: InstanceTypeInfo,
    settings: NodeClassSettings,
    *,
    region: str,
    zones: Sequence[str],
) -> dict[str, tuple[str, ...]]:
    """Karpenter's `computeRequirements` (types.go): label key -> allowed values, for the node
    class's `zones` (the type's zone values are those of them where it is offered). A key left
    out, or given no values (Windows on arm64), is `DoesNotExist` once `scheduling_requirements`
    turns the result into the type's requirements."""
    traits = settings.traits
    type_zones = sorted(offered_zones(info, region, zones) & set(zones))
    req: dict[str, tuple[str, ...]] = {
        cap.LABEL_INSTANCE_TYPE: (info.name,),
        cap.LABEL_ARCH: (info.architecture,),
        cap.LABEL_ZONE: tuple(type_zones),
        cap.LABEL_REGION: (region,),
        cap.LABEL_CAPACITY_TYPE: info.capacity_types,
        cap.LABEL_INSTANCE_CPU: (str(info.vcpus),),
        cap.LABEL_INSTANCE_MEMORY: (str(info.memory_mib),),
        cap.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: (
            "true" if info.encryption_in_transit_supported else "false",
        ),
        cap.LABEL_INSTANCE_TENANCY: cap.TENANCIES,
    }
    if traits.is_windows:
        req[cap.LABEL_OS] = ("windows",) if info.architecture == "amd64" else ()
        assert traits.windows_build is not None
        req[cap.LABEL_WINDOWS_BUILD] = (traits.windows_build,)
    else:
        req[cap.LABEL_OS] = ("linux",)
    if info.cpu_manufacturer is not None:
        req[cap.LABEL_INSTANCE_CPU_MANUFACTURER] = (_lower_kebab(info.cpu_manufacturer),)
    if info.cpu_sustained_clock_mhz is not None:
        req[cap.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ] = (str(info.cpu_sustained_clock_mhz),)
    if info.ebs_max_bandwidth_mbps is not None:
        req[cap.LABEL_INSTANCE_EBS_BANDWIDTH] = (str(info.ebs_max_bandwidth_mbps),)
    if info.network_bandwidth_mbps is not None:
        req[cap.LABEL_INSTANCE_NETWORK_BANDWIDTH] = (str(info.network_bandwidth_mbps),)
    scheme = cap.INSTANCE_TYPE_SCHEME.search(info.name)
    if scheme is not None:
        req[cap.LABEL_INSTANCE_CATEGORY] = (scheme.group(1),)
        req[cap.LABEL_INSTANCE_GENERATION] = (scheme.group(3),)
    parts = info.name.split(".")
    if len(parts) == 2:
        req[cap.LABEL_INSTANCE_FAMILY] = (parts[0],)
        req[cap.LABEL_INSTANCE_SIZE] = (parts[1],)
    flex = cap.CAPABILITY_FLEX_MARKER in parts[0]
    req[cap.LABEL_INSTANCE_CAPABILITY_FLEX] = ("true" if flex else "false",)
    if info.local_nvme_gb > 0:
        req[cap.LABEL_INSTANCE_LOCAL_NVME] = (str(info.local_nvme_gb),)
    # GPU labels only when EC2 lists exactly one GPU device entry (types.go computeRequirements).
    if info.has_gpu and info.gpu_device_entries == 1:
        if info.gpu_name is not None:
            req[cap.LABEL_INSTANCE_GPU_NAME] = (_lower_kebab(info.gpu_name),)
        if info.gpu_manufacturer is not None:
            req[cap.LABEL_INSTANCE_GPU_MANUFACTURER] = (_lower_kebab(info.gpu_manufacturer),)
        req[cap.LABEL_INSTANCE_GPU_COUNT] = (str(info.gpu_count),)
        if info.gpu_memory_mib is not None:
            req[cap.LABEL_INSTANCE_GPU_MEMORY] = (str(info.gpu_memory_mib),)
    if info.accelerator_name is not None:
        req[cap.LABEL_INSTANCE_ACCELERATOR_NAME] = (_lower_kebab(info.accelerator_name),)
        if info.accelerator_manufacturer is not None:
            req[cap.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER] = (
                _lower_kebab(info.accelerator_manufacturer),
            )
        req[cap.LABEL_INSTANCE_ACCELERATOR_COUNT] = (str(info.accelerator_count),)
    # EC2 reports no hypervisor for bare metal; Karpenter then has the value "" (not DoesNotExist).
    if info.hypervisor is not None:
        req[cap.LABEL_INSTANCE_HYPERVISOR] = (info.hypervisor,)
    elif info.bare_metal:
        req[cap.LABEL_INSTANCE_HYPERVISOR] = ("",)
    return req


def _lower_kebab(value: str) -> str:
    return value.replace(" ", "-").lower()


def _capacity(
    info: InstanceTypeInfo, settings: NodeClassSettings, *, eni_limited: int
) -> dict[str, int]:
    traits = settings.traits
    capacity = {
        "cpu": info.vcpus * 1000,
        "memory": cap.memory_capacity_bytes(
            info.memory_mib,
            info.architecture,
            vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
        ),
        "ephemeral-storage": cap.ephemeral_storage_bytes(
            traits,
            settings.block_device_mappings,
            instance_store_policy=settings.instance_store_policy,
            # Only NVMe instance store is in the data; other instance stores count as none.
            instance_store_gb=info.local_nvme_gb or None,
        ),
        "pods": cap.pods_capacity(
            traits,
            eni_limited=eni_limited,
            vcpus=info.vcpus,
            max_pods=settings.max_pods,
            pods_per_core=settings.pods_per_core,
        ),
        cap.RESOURCE_POD_ENI: (info.branch_enis or 0) if info.trunking_compatible else 0,
        cap.RESOURCE_NVIDIA_GPU: 0,
        cap.RESOURCE_AMD_GPU: 0,
        cap.RESOURCE_HABANA_GAUDI: 0,
        cap.RESOURCE_AWS_NEURON: info.neuron_device_count,
        cap.RESOURCE_AWS_NEURON_CORE: info.neuron_core_count,
        cap.RESOURCE_EFA: cap.efa_capacity(info.efa_interfaces, settings.network_interfaces),
    }
    gpu_resource = info.gpu_resource
    if gpu_resource is not None:
        capacity[gpu_resource] = info.gpu_count
    if traits.is_windows and info.architecture == "amd64":
        known = info.in_karpenter_vpc_limits and info.ipv4_per_eni is not None
        capacity[cap.RESOURCE_PRIVATE_IPV4_ADDRESS] = (
            info.ipv4_per_eni - 1 if known and info.ipv4_per_eni is not None else 0
        )
    return capacity


def resolve_instance_type(
    info: InstanceTypeInfo,
    settings: NodeClassSettings | None = None,
    *,
    region: str,
    zones: Sequence[str],
    pricing: RegionPricing | None = None,
) -> InstanceType:
    """Karpenter's `NewInstanceType` plus base offerings, for one region and node class.

    `zones` are the node class's zones (its subnets); the type's zone requirement is the part
    of them where the type is offered. `pricing` defaults to the info's own prices for `region`.
    Requirements per `scheduling_requirements`; capacity and allocatable are read-only views in
    base units (cpu millicores, memory/ephemeral-storage bytes, counts); offerings per
    `offerings`. Compared by identity: `Catalog` resolves each type once per node class.
    """
    settings = settings if settings is not None else NodeClassSettings()
    pricing = pricing if pricing is not None else region_pricing(info, region, None)
    capacity, overhead = _capacity_and_overhead(info, settings)
    allocatable = cap.compute_allocatable(
        capacity, overhead.kube_reserved, overhead.system_reserved, overhead.eviction_threshold
    )
    return InstanceType(
        name=info.name,
        requirements=scheduling_requirements(
            compute_requirements(info, settings, region=region, zones=zones)
        ),
        capacity=MappingProxyType(capacity),
        allocatable=MappingProxyType(allocatable),
        offerings=offerings(info, settings, region=region, zones=zones, pricing=pricing),
    )


def instance_type_details(
    info: InstanceTypeInfo,
    settings: NodeClassSettings | None = None,
    *,
    region: str,
    pricing: RegionPricing | None = None,
) -> InstanceTypeDetails:
    """The data row, overhead and prices of `info` resolved as `resolve_instance_type` resolves
    it (same defaults); computed again on each call, for the callers that show them."""
    settings = settings if settings is not None else NodeClassSettings()
    pricing = pricing if pricing is not None else region_pricing(info, region, None)
    _, overhead = _capacity_and_overhead(info, settings)
    return InstanceTypeDetails(info=info, overhead=overhead, pricing=pricing)


def offerings(
    info: InstanceTypeInfo,
    settings: NodeClassSettings,
    *,
    region: str,
    zones: Sequence[str],
    pricing: RegionPricing,
) -> tuple[Offering, ...]:
    """The base offerings of `info` (`offering/base_resolver.go`): one per zone of `zones` x
    capacity type of the type, in zone order. An offering is available when EC2 offers the type
    in that zone, the capacity type has a price, and the type is compatible with the node class
    (`is_compatible`); an unavailable one is kept, priced 0.0 when unknown, as in Karpenter."""
    offered = offered_zones(info, region, zones)
    compatible = is_compatible(info, settings)
    out: list[Offering] = []
    for zone in sorted(set(zones)):
        for capacity_type in info.capacity_types:
            price = offering_price(pricing, capacity_type)
            out.append(
                Offering(
                    zone=zone,
                    capacity_type=capacity_type,
                    price=price if price is not None else 0.0,
                    available=compatible and price is not None and zone in offered,
                )
            )
    return tuple(out)


def offered_zones(info: InstanceTypeInfo, region: str, zones: Sequence[str]) -> set[str]:
    """The zones EC2 offers `info` in, in `region` (every zone of `zones` when the data says
    nothing about its offerings: a catalog file without `offerings`). Also read by
    `Catalog.available_prices`."""
    return set(zones) if info.offerings is None else set(info.offerings.get(region, ()))


def offering_price(pricing: RegionPricing, capacity_type: str) -> float | None:
    """The price of a `capacity_type` offering (None: unpriced, so never available). Also read
    by `Catalog.available_prices`."""
    return pricing.on_demand if capacity_type == "on-demand" else pricing.spot


def _capacity_and_overhead(
    info: InstanceTypeInfo, settings: NodeClassSettings
) -> tuple[dict[str, int], Overhead]:
    """`computeCapacity` and the kubelet overhead (kube-reserved, system-reserved, eviction)."""
    traits = settings.traits
    eni_pods = _eni_limited_pods(info, reserved_enis=settings.reserved_enis, settings=settings)
    capacity = _capacity(info, settings, eni_limited=eni_pods)
    # kube-reserved memory counts ENI-limited pods with no reserved ENIs for the EKS AMIs, even
    # when maxPods is set; Bottlerocket and Windows count the node's actual max pods.
    if traits.uses_eni_limited_memory_overhead:
        overhead_pods = _eni_limited_pods(info, reserved_enis=0, settings=settings)
    else:
        overhead_pods = capacity["pods"]
    overhead = Overhead(
        kube_reserved=MappingProxyType(
            cap.kube_reserved(capacity["cpu"], overhead_pods, settings.kube_reserved)
        ),
        system_reserved=MappingProxyType(dict(settings.system_reserved)),
        eviction_threshold=MappingProxyType(
            cap.eviction_threshold(
                capacity["memory"], capacity["ephemeral-storage"], settings.eviction_hard
            )
        ),
    )
    return capacity, overhead


def scheduling_requirements(requirements: Mapping[str, tuple[str, ...]]) -> Requirements:
    """A type's label requirements (key -> allowed values) as the scheduler's `Requirements`.

    Every key of `WELL_KNOWN_LABEL_KEYS` gets a requirement: `In` its values, or `DoesNotExist`
    when the type has none (an absent key, or an empty tuple such as Windows on arm64). This is
    the key list Karpenter's `computeRequirements` (aws `pkg/providers/instancetype/types.go`)
    starts from; the keys it adds only with data gpucap lacks (zone-id, capacity reservations,
    nitro-sandbox) stay undefined, so a claim may require them as it may any well-known label.
    """
    memo_key = tuple(sorted(requirements.items()))
    found = _SCHEDULING_REQUIREMENTS.get(memo_key)
    if found is not None:
        return found
    plan = _key_plan(frozenset(requirements))
    if plan is not None:
        # What `Requirements.of(Requirement.new(key, "In" | "DoesNotExist", ...) ...)` builds,
        # without its per-key intersection when the normalised keys are distinct (they are
        # unless a deprecated key and its replacement are both present; then the general path).
        # Equal requirements are one shared object: many types have the same arch, os, zones.
        items: dict[str, Requirement] = {}
        for key, norm in plan:
            values = requirements.get(key, ())
            shared = _REQUIREMENT.get((norm, values))
            if shared is None:
                if len(_REQUIREMENT) >= _SCHEDULING_REQUIREMENTS_MAX:
                    _REQUIREMENT.clear()
                shared = _REQUIREMENT[(norm, values)] = Requirement(norm, False, frozenset(values))
            items[norm] = shared
        reqs = Requirements(items)
    else:
        keys = sorted(WELL_KNOWN_LABEL_KEYS | set(requirements))
        reqs = Requirements.of(
            *(
                Requirement.new(key, "In", values)
                if (values := requirements.get(key, ()))
                else Requirement.new(key, "DoesNotExist")
                for key in keys
            )
        )
    if len(_SCHEDULING_REQUIREMENTS) >= _SCHEDULING_REQUIREMENTS_MAX:
        _SCHEDULING_REQUIREMENTS.clear()
    _SCHEDULING_REQUIREMENTS[memo_key] = reqs
    return reqs


def _key_plan(present: frozenset[str]) -> tuple[tuple[str, str], ...] | None:
    """The sorted keys of a type with labels `present`, each with its normalised key, or None
    when two keys normalise to one (the general path then intersects them). Memoised: the
    catalog's types have a handful of distinct key sets."""
    if present in _KEY_PLANS:
        return _KEY_PLANS[present]
    keys = sorted(WELL_KNOWN_LABEL_KEYS | present)
    plan = tuple((key, normalize_label(key)) for key in keys)
    result = plan if len({norm for _, norm in plan}) == len(plan) else None
    if len(_KEY_PLANS) >= _SCHEDULING_REQUIREMENTS_MAX:
        _KEY_PLANS.clear()
    _KEY_PLANS[present] = result
    return result


_KEY_PLANS: dict[frozenset[str], tuple[tuple[str, str], ...] | None] = {}
# One `Requirement` per (normalised key, values as given): immutable, so types share them.
_REQUIREMENT: dict[tuple[str, tuple[str, ...]], Requirement] = {}


# `scheduling_requirements` by its input (sorted items): a catalog type's labels are the same
# for every node-class settings and every load of the catalog, and `Requirements` are
# immutable, so each is built once per process. Bounded; cleared when full.
_SCHEDULING_REQUIREMENTS: dict[tuple[tuple[str, tuple[str, ...]], ...], Requirements] = {}
_SCHEDULING_REQUIREMENTS_MAX = 50_000
