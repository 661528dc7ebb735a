"""The EC2 instance-type catalog: instance data + zone offerings + prices -> `InstanceType` values.

Called by the AWS cloud provider, `plan` and `simulate` (through the CLI's `--region`, `--zones`,
`--catalog FILE` and `--prices FILE`). Pure: the only I/O is reading the bundled data with
`importlib.resources`; the CLI reads user files and passes their text to `parse_catalog_json` /
`parse_prices_json`. No clock, no randomness; every tuple it returns is sorted.

Flow::

    infos  = bundled_instance_type_infos()            # or parse_catalog_json(text, source=path)
    prices = parse_prices_json(text, source=path)     # optional
    catalog = load_catalog("us-east-1", infos=infos, prices=prices, zones=None)
    settings = node_class_settings(ec2nodeclass)       # or NodeClassSettings(ami_family=...)
    its = catalog.instance_types(settings)
    scheduler_its = catalog.scheduling_instance_types(settings)

`InstanceTypeInfo` is one row of data (region independent). `Catalog.instance_types(settings)`
resolves every row for the catalog's region and one EC2NodeClass (`NodeClassSettings`), the way
Karpenter's `NewInstanceType` does: requirements (well-known labels), capacity, overhead,
allocatable (formulas in `capacity.py`) and offerings (zone x capacity type, with prices; the
scheduler's `Offering` class). `Catalog.scheduling_instance_types(settings)` gives the same
types as `gpucap.scheduling.instancetypes.InstanceType` values, whose requirements hold every
well-known key (`DoesNotExist` where the type has no value), for the scheduler and the launch.

Bundled data
------------
`gpucap/data/catalog/instance-types.json`, written by `scripts/build_catalog.py` from
`../shared/data/ec2-instance-types.json` and `ec2-instance-type-offerings.json` (see the README
there for sources) and the regional sources that script names (`SOURCES.md` beside the bundled
file records them). It holds catalog-file entries (below) packed in columns to stay small:
`{"format": CATALOG_COLUMNS_FORMAT, "fields": [...], "rows": [[...], ...]}`, one row per type,
null cells meaning "absent", `offerings` as `{region: "abf"}` (zone suffix letters) and
`spot_advisor` as `{region: [savings %, interruption frequency]}`; `unpack_catalog_columns`
turns it back into entries. Each entry has two derived fields: `spot_price_usd_per_hour` holds
one resolved price per region and `spot_price_source` says where it came from (`sampled`: the
vantage average across zones; `advisor-estimate`: on-demand x (1 - Spot Advisor savings %)).
Zone offerings cover 30 commercial regions (zones by name, as one account's EC2 API named
them). On-demand prices: every type in us-east-1 (Karpenter's table), GPU/accelerator types and
eleven system-pod families in us-west-2 and eu-west-1, GPU/accelerator types in 25 other
regions (instances.vantage.sh data); spot prices are the sampled average or the Spot Advisor
estimate per region, not per zone. `bundled_priced_regions()` lists the regions with a price;
the CLI refuses any other region in one line (`region_is_priced`), since nothing could launch
there. A type offered in a region without a price there is kept but never available.

Catalog file (`--catalog FILE`)
-------------------------------
A JSON array of objects in the schema of `../shared/data/ec2-instance-types.json`. Required:
`name`, `family`, `size` (both must agree with the name), `architecture` (`amd64`|`arm64`),
`vcpus`, `memory_mib`, `gpu_count`, `max_pods_eni` or both `max_enis_default_card` and
`ipv4_per_eni` (if all three are given they must agree), and `on_demand_price_usd_per_hour`
(`{region: price | null}`, or one number for every region). Everything else is optional, e.g.
`gpu_name`, `gpu_manufacturer` (selects `nvidia.com/gpu`, `amd.com/gpu` or `habana.ai/gaudi`;
`nvidia` when absent), `gpu_memory_mib`, `neuron_device_count`, `efa_interfaces`, `branch_enis` +
`trunking_compatible`, `local_nvme_gb`, `hypervisor` (a `bare_metal` type without one gets
Karpenter's empty value), bandwidths, and:

- `offerings`: `{region: [zone, ...]}` restricts the zones; without it the type is offered in
  every zone of the region. A type whose `offerings` omit the region is not in that region.
- `capacity_types`: list, subset of `["on-demand", "spot"]` (default both).
- `spot_price_usd_per_hour`: `{region: {"avg": p, ...} | p | null}`; `spot_advisor`:
  `{region: {"savings_vs_on_demand_pct": s, "interruption_frequency": "<5%"} | null}`. The spot
  price of a region is the sampled price, else on-demand x (1 - s/100), else on-demand.
- gpucap extensions: `gpu_device_entries` (EC2 `GpuInfo.Gpus` length, default 1; GPU labels need
  exactly one, as in Karpenter) and `in_karpenter_vpc_limits` (default true; false means
  Karpenter's VPC limits table lacks the type, so Windows nodes get no PrivateIPv4Address).
- `category`/`generation`/`capability_flex` are derived from the name, as Karpenter does; other
  unknown fields are ignored.

Prices file (`--prices FILE`)
-----------------------------
``{"us-east-1": {"g5.xlarge": {"on-demand": 1.006, "spot": 0.42}}}``: per region, per instance
type, either or both prices in USD per hour. An override replaces the catalog's price; a spot
price estimated from the Spot Advisor is re-estimated from an overridden on-demand price. An
instance type the catalog does not have in the selected region is an error; other regions are
ignored.

Zones and availability
----------------------
`zones` (`--zones`) plays the role of the EC2NodeClass subnets' zones (default: every zone of
the region that the catalog knows). As in Karpenter, each type gets one offering per zone x
capacity type; an offering is available only when the type is offered in that zone, has a
price, and is compatible with the node class. Types with no price in the region are therefore
kept but never available (`Catalog.unpriced` names them); types not offered in the region at all
are left out, as DescribeInstanceTypes would not return them.

Errors: bad input to the loaders raises `CatalogError` (a `ValueError`), one line naming the
file, the entry (index and name) and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Final, TypeGuard

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import normalize_label
from gpucap.apis.quantity import QuantityError, parse_resource_value
from gpucap.apis.reading import InputError, load_json
from gpucap.cloudprovider.aws import capacity as cap
from gpucap.cloudprovider.aws.capacity import (
    AMIFamilyTraits,
    BlockDeviceSettings,
    NetworkInterfaceSettings,
)
from gpucap.scheduling import instancetypes as scheduling
from gpucap.scheduling.instancetypes import Offering
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = [
    "ARCHITECTURES",
    "BUNDLED_CATALOG_RESOURCE",
    "CATALOG_COLUMNS_FORMAT",
    "SPOT_PRICE_SOURCES",
    "WELL_KNOWN_LABEL_KEYS",
    "BlockDeviceSettings",
    "Catalog",
    "CatalogError",
    "InstanceType",
    "InstanceTypeInfo",
    "NetworkInterfaceSettings",
    "NodeClassSettings",
    "Offering",
    "Overhead",
    "PriceOverride",
    "PublishedAllocatable",
    "RegionPricing",
    "SpotAdvisor",
    "bundled_catalog_entries",
    "bundled_instance_type_infos",
    "bundled_priced_regions",
    "bundled_region_zones",
    "estimate_spot_price",
    "load_catalog",
    "node_class_settings",
    "pack_catalog_columns",
    "parse_catalog",
    "parse_catalog_json",
    "parse_prices",
    "parse_prices_json",
    "priced_regions",
    "region_is_priced",
    "resolve_instance_type",
    "resolve_spot_price",
    "scheduling_instance_type",
    "scheduling_requirements",
    "unpack_catalog_columns",
]

BUNDLED_CATALOG_RESOURCE: Final = ("gpucap", "data/catalog/instance-types.json")
CATALOG_COLUMNS_FORMAT: Final = "gpucap.dev/catalog-columns/v1"
ARCHITECTURES: Final = ("amd64", "arm64")
# Where a resolved spot price came from, best first.
SPOT_PRICE_SOURCES: Final = ("override", "sampled", "catalog", "advisor-estimate", "on-demand")
# Every label key the catalog can put in `InstanceType.requirements`; a key missing from a type's
# requirements means `DoesNotExist` for it (Karpenter's `computeRequirements` starts each of
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


class CatalogError(ValueError):
    """A catalog or prices file (or a resolution) that gpucap cannot use; fix the named field."""


# ==== values ===================================================================================


@dataclass(frozen=True, slots=True)
class SpotAdvisor:
    """AWS Spot Instance Advisor figures for one region."""

    savings_vs_on_demand_pct: float
    interruption_frequency: str | None = None


@dataclass(frozen=True, slots=True)
class PublishedAllocatable:
    """What Karpenter's instance-types docs publish (AL2023, no block devices): the oracle."""

    cpu_millicores: int | None = None
    memory_mib: int | None = None
    ephemeral_storage_gib: int | None = None
    max_pods: int | None = None
    pod_eni: int | None = None
    docs_status: str | None = None


@dataclass(frozen=True, slots=True)
class InstanceTypeInfo:
    """One instance type as the data describes it, for every region (the catalog file's row).

    Mapping-valued fields are read-only views and take no part in hashing.
    """

    name: str
    family: str
    size: str
    architecture: str
    vcpus: int
    memory_mib: int
    gpu_count: int = 0
    max_pods_eni: int = 0
    max_enis_default_card: int | None = None
    ipv4_per_eni: int | None = None
    max_enis: int | None = None
    network_card_count: int | None = None
    cpu_manufacturer: str | None = None
    cpu_sustained_clock_mhz: int | None = None
    gpu_name: str | None = None
    gpu_manufacturer: str | None = None
    gpu_memory_mib: int | None = None
    gpu_fraction: float | None = None
    gpu_model: str | None = None
    gpu_compute_capability: float | None = None
    gpu_resource_name: str | None = None
    gpu_device_entries: int = 1
    accelerator_name: str | None = None
    accelerator_manufacturer: str | None = None
    accelerator_count: int = 0
    neuron_device_count: int = 0
    neuron_core_count: int = 0
    efa_interfaces: int = 0
    branch_enis: int | None = None
    trunking_compatible: bool = False
    in_karpenter_vpc_limits: bool = True
    network_bandwidth_mbps: int | None = None
    ebs_max_bandwidth_mbps: int | None = None
    ebs_baseline_bandwidth_mbps: float | None = None
    ebs_baseline_throughput_mbytes_per_s: float | None = None
    ebs_baseline_iops: float | None = None
    local_nvme_gb: int = 0
    hypervisor: str | None = None
    bare_metal: bool = False
    encryption_in_transit_supported: bool = False
    capacity_types: tuple[str, ...] = cap.CAPACITY_TYPES
    on_demand_price: Mapping[str, float] = field(default_factory=dict, hash=False)
    spot_price: Mapping[str, float] = field(default_factory=dict, hash=False)
    spot_price_source: Mapping[str, str] = field(default_factory=dict, hash=False)
    spot_advisor: Mapping[str, SpotAdvisor] = field(default_factory=dict, hash=False)
    # None: offered in every zone of every region; else region -> zones.
    offerings: Mapping[str, tuple[str, ...]] | None = field(default=None, hash=False)
    published: PublishedAllocatable | None = None

    def __post_init__(self) -> None:
        for name in ("on_demand_price", "spot_price", "spot_price_source", "spot_advisor"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        if self.offerings is not None:
            object.__setattr__(self, "offerings", MappingProxyType(dict(self.offerings)))

    def on_demand_price_in(self, region: str) -> float | None:
        """The on-demand price in `region` (a catalog may give one price for every region)."""
        price = self.on_demand_price.get(region)
        return price if price is not None else self.on_demand_price.get("*")

    @property
    def gpu_resource(self) -> str | None:
        """The extended resource its GPUs are advertised as, or None without whole GPUs."""
        if self.gpu_count <= 0:
            return None
        if self.gpu_resource_name is not None:
            return self.gpu_resource_name
        manufacturer = (self.gpu_manufacturer or "nvidia").lower()
        return cap.GPU_RESOURCE_BY_MANUFACTURER.get(manufacturer)

    @property
    def has_gpu(self) -> bool:
        """A GPU device is present (fractional GPUs included, whose gpu_count is 0)."""
        return self.gpu_count > 0 or self.gpu_name is not None


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
class RegionPricing:
    """A type's resolved prices in one region (None = no price, so no available offering)."""

    on_demand: float | None
    spot: float | None
    spot_source: str | None
    interruption_frequency: str | None = None


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """One `--prices` entry (either price may be absent)."""

    on_demand: float | None = None
    spot: float | None = None


@dataclass(frozen=True, slots=True, eq=False)
class InstanceType:
    """An instance type resolved for one region and one node class, as Karpenter schedules it.

    - `requirements`: label key -> allowed values (`In`); a well-known key that is absent is
      `DoesNotExist`. Multi-valued: zone, capacity type, tenancy. An empty tuple never matches.
    - `capacity`: every resource key Karpenter sets, zero-valued ones included (Karpenter keeps
      them; its docs omit them). cpu in millicores, memory/ephemeral-storage in bytes.
    - `allocatable`: capacity - overhead.total(), per capacity key.
    - `offerings`: one per zone x capacity type; unavailable ones too (not offered in the zone,
      no price, or incompatible with the node class), priced 0.0 when unknown, as in Karpenter.
    Compared and hashed by identity: `Catalog` resolves each type once per node class.
    """

    name: str
    requirements: Mapping[str, tuple[str, ...]]
    capacity: Mapping[str, int]
    overhead: Overhead
    allocatable: Mapping[str, int]
    offerings: tuple[Offering, ...]
    pricing: RegionPricing
    info: InstanceTypeInfo

    @property
    def labels(self) -> dict[str, str]:
        """The single-valued requirements: the labels a node of this type gets from the type."""
        return {k: v[0] for k, v in sorted(self.requirements.items()) if len(v) == 1}

    def available_offerings(self) -> tuple[Offering, ...]:
        return tuple(o for o in self.offerings if o.available)


# ==== pricing ==================================================================================


def estimate_spot_price(on_demand: float, savings_pct: float) -> float:
    """On-demand x (1 - savings/100), rounded to 1e-6 USD so the bundled data stays stable."""
    return round(on_demand * (1 - savings_pct / 100), 6)


def resolve_spot_price(
    on_demand: float | None, *, sampled: float | None = None, savings_pct: float | None = None
) -> tuple[float | None, str | None]:
    """(price, source): the sampled price, else the Spot Advisor estimate, else on-demand."""
    if sampled is not None:
        return sampled, "sampled"
    if on_demand is None:
        return None, None
    if savings_pct is not None:
        return estimate_spot_price(on_demand, savings_pct), "advisor-estimate"
    return on_demand, "on-demand"


def _region_pricing(
    info: InstanceTypeInfo, region: str, override: PriceOverride | None
) -> RegionPricing:
    advisor = info.spot_advisor.get(region)
    od_overridden = override is not None and override.on_demand is not None
    on_demand = override.on_demand if override is not None and od_overridden else None
    if on_demand is None:
        on_demand = info.on_demand_price_in(region)
    spot: float | None
    source: str | None
    stored, stored_source = info.spot_price.get(region), info.spot_price_source.get(region)
    if override is not None and override.spot is not None:
        spot, source = override.spot, "override"
    elif stored is not None and not (od_overridden and stored_source == "advisor-estimate"):
        spot, source = stored, stored_source or "catalog"
    else:
        spot, source = resolve_spot_price(
            on_demand, savings_pct=advisor.savings_vs_on_demand_pct if advisor else None
        )
    return RegionPricing(
        on_demand=on_demand,
        spot=spot,
        spot_source=source,
        interruption_frequency=advisor.interruption_frequency if advisor else None,
    )


# ==== resolution ===============================================================================


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


def _is_compatible(info: InstanceTypeInfo, settings: NodeClassSettings) -> bool:
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


def _requirements(
    info: InstanceTypeInfo,
    settings: NodeClassSettings,
    *,
    region: str,
    zones: Sequence[str],
) -> dict[str, tuple[str, ...]]:
    traits = settings.traits
    req: dict[str, tuple[str, ...]] = {
        cap.LABEL_INSTANCE_TYPE: (info.name,),
        cap.LABEL_ARCH: (info.architecture,),
        cap.LABEL_ZONE: tuple(sorted(zones)),
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
    """
    settings = settings if settings is not None else NodeClassSettings()
    traits = settings.traits
    pricing = pricing if pricing is not None else _region_pricing(info, region, None)
    offered = set(zones) if info.offerings is None else set(info.offerings.get(region, ()))
    type_zones = sorted(offered & set(zones))

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
    allocatable = cap.compute_allocatable(
        capacity, overhead.kube_reserved, overhead.system_reserved, overhead.eviction_threshold
    )

    compatible = _is_compatible(info, settings)
    offerings: list[Offering] = []
    for zone in sorted(set(zones)):
        for capacity_type in info.capacity_types:
            price = pricing.on_demand if capacity_type == "on-demand" else pricing.spot
            offerings.append(
                Offering(
                    zone=zone,
                    capacity_type=capacity_type,
                    price=price if price is not None else 0.0,
                    available=compatible and price is not None and zone in offered,
                )
            )
    return InstanceType(
        name=info.name,
        requirements=MappingProxyType(
            _requirements(info, settings, region=region, zones=type_zones)
        ),
        capacity=MappingProxyType(capacity),
        overhead=overhead,
        allocatable=MappingProxyType(allocatable),
        offerings=tuple(offerings),
        pricing=pricing,
        info=info,
    )


# ==== the catalog ==============================================================================


@dataclass(frozen=True, slots=True, eq=False)
class Catalog:
    """The instance types of one region, with prices resolved; build with `load_catalog`."""

    region: str
    zones: tuple[str, ...]
    infos: tuple[InstanceTypeInfo, ...]
    pricing: Mapping[str, RegionPricing]
    # Resolved once per node class, as Karpenter caches them per NodeClass settings hash.
    _resolved: dict[NodeClassSettings, tuple[InstanceType, ...]] = field(
        default_factory=dict, init=False, repr=False
    )
    _scheduling: dict[NodeClassSettings, tuple[scheduling.InstanceType, ...]] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(info.name for info in self.infos)

    @property
    def unpriced(self) -> tuple[str, ...]:
        """Types kept in the catalog with no on-demand price here (never available on-demand)."""
        return tuple(i.name for i in self.infos if self.pricing[i.name].on_demand is None)

    def info(self, name: str) -> InstanceTypeInfo:
        for info in self.infos:
            if info.name == name:
                return info
        raise KeyError(name)

    def instance_types(self, settings: NodeClassSettings | None = None) -> tuple[InstanceType, ...]:
        """Every type resolved for `settings` (default: AL2023, no kubelet overrides), by name."""
        settings = settings if settings is not None else NodeClassSettings()
        cached = self._resolved.get(settings)
        if cached is None:
            cached = tuple(
                resolve_instance_type(
                    info,
                    settings,
                    region=self.region,
                    zones=self.zones,
                    pricing=self.pricing[info.name],
                )
                for info in self.infos
            )
            self._resolved[settings] = cached
        return cached

    def available_prices(self, capacity_type: str) -> dict[tuple[str, str], float]:
        """The price per (type, zone) of every available `capacity_type` offering of
        `instance_types()` (default settings), in its order, without resolving the types:
        the same rule as `resolve_instance_type`'s offerings (offered in the zone, priced,
        compatible with the node class). Called by `SimulatedEC2` to price launches."""
        settings = NodeClassSettings()
        zones = sorted(set(self.zones))
        out: dict[tuple[str, str], float] = {}
        for info in self.infos:
            if capacity_type not in info.capacity_types:
                continue
            pricing = self.pricing[info.name]
            price = pricing.on_demand if capacity_type == "on-demand" else pricing.spot
            if price is None or not _is_compatible(info, settings):
                continue
            offered = (
                set(self.zones)
                if info.offerings is None
                else set(info.offerings.get(self.region, ()))
            )
            for zone in zones:
                if zone in offered:
                    out[(info.name, zone)] = price
        return out

    def instance_type(self, name: str, settings: NodeClassSettings | None = None) -> InstanceType:
        for it in self.instance_types(settings):
            if it.name == name:
                return it
        raise KeyError(name)

    def scheduling_instance_types(
        self, settings: NodeClassSettings | None = None
    ) -> tuple[scheduling.InstanceType, ...]:
        """`instance_types(settings)` as the scheduler and the launch see them, by name.

        Built once per node class (like `instance_types`); see `scheduling_instance_type`.
        """
        settings = settings if settings is not None else NodeClassSettings()
        cached = self._scheduling.get(settings)
        if cached is None:
            cached = tuple(scheduling_instance_type(it) for it in self.instance_types(settings))
            self._scheduling[settings] = cached
        return cached


def scheduling_requirements(requirements: Mapping[str, tuple[str, ...]]) -> Requirements:
    """A catalog type's label requirements as the scheduler's `Requirements`.

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


def scheduling_instance_type(it: InstanceType) -> scheduling.InstanceType:
    """One resolved catalog type as a `scheduling.InstanceType`.

    Requirements per `scheduling_requirements`; capacity and allocatable are the catalog's own
    read-only views (base units: cpu millicores, memory/ephemeral-storage bytes, counts);
    offerings are the same `Offering` values.
    """
    return scheduling.InstanceType(
        name=it.name,
        requirements=scheduling_requirements(it.requirements),
        capacity=it.capacity,
        allocatable=it.allocatable,
        offerings=it.offerings,
    )


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


def load_catalog(
    region: str = "us-east-1",
    *,
    infos: Sequence[InstanceTypeInfo] | None = None,
    prices: Mapping[str, Mapping[str, PriceOverride]] | None = None,
    zones: Sequence[str] | None = None,
    prices_source: str = "--prices",
) -> Catalog:
    """The catalog for `region`: bundled data unless `infos` (a parsed `--catalog`) is given.

    `zones` (`--zones`) defaults to every zone of the region the catalog's offerings name, else
    the bundled data's zones for the region. `prices` come from `parse_prices_json`.
    The bundled catalog of a region with no overrides is built once per process (`Catalog` is
    immutable and resolves each node class's types once, so every caller, e.g. each run of the
    simulator benchmark, shares those lists instead of resolving 1,340 types again).
    """
    if infos is None and prices is None and zones is None:
        return _bundled_catalog(region)
    return _build_catalog(region, infos, prices, zones, prices_source)


@cache
def _bundled_catalog(region: str) -> Catalog:
    return _build_catalog(region, None, None, None, "--prices")


def _build_catalog(
    region: str,
    infos: Sequence[InstanceTypeInfo] | None,
    prices: Mapping[str, Mapping[str, PriceOverride]] | None,
    zones: Sequence[str] | None,
    prices_source: str,
) -> Catalog:
    rows = tuple(infos) if infos is not None else bundled_instance_type_infos()
    known = sorted({z for info in rows for z in (info.offerings or {}).get(region, ())})
    if zones is not None:
        zone_list = tuple(sorted(set(zones)))
        if not zone_list:
            raise CatalogError(f"no zones given for region {region}")
        region_zones = set(known) or set(bundled_region_zones().get(region, ()))
        foreign = [z for z in zone_list if region_zones and z not in region_zones]
        if foreign:
            # A zone of another region would leave every offering unavailable: nothing would
            # launch and the plan would blame the NodePools.
            raise CatalogError(
                f"zone {foreign[0]} is not a zone of {region} in the catalog "
                f"(known: {', '.join(sorted(region_zones))})"
            )
    else:
        zone_list = tuple(known) or bundled_region_zones().get(region, ())
        if not zone_list:
            raise CatalogError(
                f"no zones known for region {region}: give the zones (--zones) or "
                "`offerings` in the catalog"
            )
    in_region = tuple(
        sorted(
            (info for info in rows if info.offerings is None or info.offerings.get(region)),
            key=lambda info: info.name,
        )
    )
    overrides = dict((prices or {}).get(region, {}))
    names = {info.name for info in in_region}
    for name in sorted(overrides):
        if name not in names:
            raise CatalogError(
                f"{prices_source}: region {region}, instance type {name!r}: "
                "not an instance type of the catalog in this region"
            )
    pricing = {
        info.name: _region_pricing(info, region, overrides.get(info.name)) for info in in_region
    }
    return Catalog(region=region, zones=zone_list, infos=in_region, pricing=pricing)


# ==== bundled data =============================================================================


def bundled_catalog_entries() -> list[dict[str, Any]]:
    """The bundled catalog as catalog-file entries (e.g. to write a `--catalog` template)."""
    package, path = BUNDLED_CATALOG_RESOURCE
    text = resources.files(package).joinpath(path).read_text(encoding="utf-8")
    # The bundled file is ours and within `load_json`'s limits (a test checks both readers
    # agree on it), so the plain reader: the limit checks cost a tenth of a second per start.
    return unpack_catalog_columns(json.loads(text))


@cache
def bundled_instance_type_infos() -> tuple[InstanceTypeInfo, ...]:
    """The bundled catalog (`gpucap/data/catalog/instance-types.json`), parsed once."""
    package, path = BUNDLED_CATALOG_RESOURCE
    return parse_catalog(bundled_catalog_entries(), source=f"{package}/{path}")


@cache
def bundled_region_zones() -> Mapping[str, tuple[str, ...]]:
    """Every region of the bundled offerings data and its zones."""
    zones: dict[str, set[str]] = {}
    for info in bundled_instance_type_infos():
        for region, region_zones in (info.offerings or {}).items():
            zones.setdefault(region, set()).update(region_zones)
    return MappingProxyType({r: tuple(sorted(z)) for r, z in sorted(zones.items())})


def region_is_priced(
    region: str,
    *,
    infos: Sequence[InstanceTypeInfo] | None = None,
    prices: Mapping[str, Mapping[str, PriceOverride]] | None = None,
) -> bool:
    """Some type of the catalog (bundled unless `infos`) is offered in `region` and has a price
    there, its own or a `--prices` one: gpucap has data for the region. Called by the CLI, which
    refuses a region without (nothing could launch there)."""
    if infos is None and prices is None:
        return region in bundled_priced_regions()
    rows = infos if infos is not None else bundled_instance_type_infos()
    overrides = (prices or {}).get(region, {})
    for info in rows:
        if info.offerings is not None and not info.offerings.get(region):
            continue
        override = overrides.get(info.name)
        if override is not None and (override.on_demand is not None or override.spot is not None):
            return True
        if info.on_demand_price_in(region) is not None or region in info.spot_price:
            return True
    return False


def priced_regions(
    *,
    infos: Sequence[InstanceTypeInfo] | None = None,
    prices: Mapping[str, Mapping[str, PriceOverride]] | None = None,
) -> tuple[str, ...]:
    """The regions the catalog (bundled unless `infos`) names where `region_is_priced`, sorted
    (a region a catalog entry prices with one number for every region is not named)."""
    if infos is None and prices is None:
        return bundled_priced_regions()
    rows = infos if infos is not None else bundled_instance_type_infos()
    named: set[str] = set(prices or {})
    for info in rows:
        named.update(info.offerings or {})
        named.update(r for r in info.on_demand_price if r != "*")
        named.update(info.spot_price)
    return tuple(r for r in sorted(named) if region_is_priced(r, infos=rows, prices=prices))


@cache
def bundled_priced_regions() -> tuple[str, ...]:
    """The regions of the bundled catalog where some offered type has a price, sorted."""
    rows = bundled_instance_type_infos()
    return tuple(
        region
        for region in bundled_region_zones()
        if any(
            (info.offerings or {}).get(region)
            and (info.on_demand_price_in(region) is not None or region in info.spot_price)
            for info in rows
        )
    )


def pack_catalog_columns(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Catalog-file entries -> the column-packed bundled form (inverse of the unpacker)."""
    fields = ["name", *sorted({k for entry in entries for k in entry} - {"name"})]
    rows: list[list[Any]] = []
    for entry in entries:
        row: list[Any] = []
        for name in fields:
            value = entry.get(name)
            if name == "offerings" and value is not None:
                value = {region: _zone_letters(region, zones) for region, zones in value.items()}
            elif name == "spot_advisor" and value is not None:
                value = {
                    region: [a["savings_vs_on_demand_pct"], a.get("interruption_frequency")]
                    for region, a in value.items()
                }
            row.append(value)
        rows.append(row)
    return {"fields": fields, "format": CATALOG_COLUMNS_FORMAT, "rows": rows}


def _zone_letters(region: str, zones: Sequence[str]) -> str:
    for zone in zones:
        if len(zone) != len(region) + 1 or not zone.startswith(region):
            raise CatalogError(f"zone {zone!r} is not {region} plus one letter")
    return "".join(zone[-1] for zone in zones)


def unpack_catalog_columns(doc: object) -> list[dict[str, Any]]:
    """The column-packed bundled form -> catalog-file entries (null cells dropped)."""
    if not isinstance(doc, dict) or doc.get("format") != CATALOG_COLUMNS_FORMAT:
        raise CatalogError(f"bundled catalog: expected format {CATALOG_COLUMNS_FORMAT}")
    fields: list[str] = doc["fields"]
    entries: list[dict[str, Any]] = []
    for row in doc["rows"]:
        entry: dict[str, Any] = {}
        for name, cell in zip(fields, row, strict=True):
            if cell is None:
                continue
            if name == "offerings":
                entry[name] = {r: [r + letter for letter in zs] for r, zs in cell.items()}
            elif name == "spot_advisor":
                entry[name] = {
                    r: {"savings_vs_on_demand_pct": a[0], "interruption_frequency": a[1]}
                    for r, a in cell.items()
                }
            else:
                entry[name] = cell
        entries.append(entry)
    return entries


# ==== parsing ==================================================================================


def parse_catalog_json(text: str, *, source: str) -> tuple[InstanceTypeInfo, ...]:
    """A catalog file's text -> its instance types (sorted by name); `source` names the file."""
    return parse_catalog(_load_json(text, source=source), source=source)


def parse_prices_json(text: str, *, source: str) -> dict[str, dict[str, PriceOverride]]:
    """A prices file's text -> {region: {instance type: PriceOverride}}."""
    return parse_prices(_load_json(text, source=source), source=source)


def _load_json(text: str, *, source: str) -> object:
    try:
        return load_json(text, source)
    except InputError as err:
        raise CatalogError(str(err)) from None


def parse_prices(doc: object, *, source: str) -> dict[str, dict[str, PriceOverride]]:
    """Validate a parsed prices document (see the module docstring for the format)."""
    if not isinstance(doc, dict):
        raise CatalogError(f"{source}: must be an object {{region: {{instanceType: prices}}}}")
    result: dict[str, dict[str, PriceOverride]] = {}
    for region, types in sorted(doc.items()):
        if not isinstance(types, dict):
            raise CatalogError(f"{source}: region {region}: must be an object of instance types")
        result[region] = {}
        for name, entry in sorted(types.items()):
            where = f"{source}: region {region}, instance type {name!r}"
            if not isinstance(entry, dict) or not entry:
                raise CatalogError(f"{where}: must be an object with 'on-demand' and/or 'spot'")
            unknown = sorted(set(entry) - {"on-demand", "spot"})
            if unknown:
                raise CatalogError(f"{where}: field {unknown[0]!r}: unknown (use on-demand, spot)")
            values: dict[str, float | None] = {}
            for key in ("on-demand", "spot"):
                value = entry.get(key)
                problem = None if value is None else _price_problem(value)
                if problem is not None:
                    raise CatalogError(f"{where}: field {key!r}: {problem}, got {_show(value)}")
                values[key] = None if value is None else float(value)
            result[region][name] = PriceOverride(on_demand=values["on-demand"], spot=values["spot"])
    return result


# The largest number a catalog or prices file may hold (prices, bandwidths, IOPS...): far above
# anything EC2 sells (its dearest instance is a few hundred dollars an hour), and low enough
# that sums and products of them stay finite floats.
MAX_NUMBER = 1e12
# The largest integer field (vCPUs, memory in MiB, ENIs, bandwidth in Mbps): int32, as the
# Kubernetes quantities and EC2 API fields they become.
MAX_INTEGER = 2**31 - 1


def _is_price(value: object) -> TypeGuard[int | float]:
    """A number >= 0 (at most MAX_NUMBER: see `_price_problem`)."""
    return _price_problem(value) is None


def _price_problem(value: object) -> str | None:
    """What is wrong with `value` as a price or a measure, or None."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        return "must be a number >= 0"
    # An int too large for a float, inf and NaN (`value < 0` is False for NaN) end here.
    if isinstance(value, float) and math.isnan(value):
        return "must be a number >= 0"
    if value > MAX_NUMBER:
        return f"must be at most {MAX_NUMBER:.0e}"
    return None


def _show(value: object) -> str:
    """A value in an error message, cut short: a field may hold a whole document."""
    try:
        text = repr(value)
    except ValueError:  # an integer past Python's 4,300-digit conversion limit
        return "a very long integer"
    return text if len(text) <= 80 else text[:77] + "..."


class _Entry:
    """Typed, located access to one catalog entry; every problem becomes a one-line error."""

    def __init__(self, raw: object, *, index: int, source: str) -> None:
        self.source = source
        self.index = index
        name = raw.get("name") if isinstance(raw, dict) else None
        self.label = name if isinstance(name, str) and name else "unnamed"
        if not isinstance(raw, dict):
            raise self.error(None, "must be an object")
        self.raw: dict[str, Any] = raw

    def error(self, field_name: str | None, problem: str) -> CatalogError:
        where = f"{self.source}: entry {self.index} ({self.label})"
        if field_name is not None:
            where += f": field {field_name!r}"
        return CatalogError(f"{where}: {problem}")

    def has(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def _get(self, name: str, required: bool) -> object:
        value = self.raw.get(name)
        if value is None and required:
            raise self.error(name, "required field is missing")
        return value

    def str_(self, name: str, *, required: bool = False) -> str | None:
        value = self.raw.get(name)
        if type(value) is str and value:
            return value
        if value is None:
            if required:
                raise self.error(name, "required field is missing")
            return None
        if not isinstance(value, str) or not value:
            raise self.error(name, f"must be a non-empty string, got {_show(value)}")
        return value

    def req_str(self, name: str) -> str:
        value = self.str_(name, required=True)
        assert value is not None
        return value

    def int_(self, name: str, *, required: bool = False, minimum: int = 0) -> int | None:
        value = self.raw.get(name)
        if type(value) is int and minimum <= value <= MAX_INTEGER:
            return value  # the common case, first; anything else gets the checks below
        if value is None:
            if required:
                raise self.error(name, "required field is missing")
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(name, f"must be an integer >= {minimum}, got {_show(value)}")
        if value > MAX_INTEGER:
            raise self.error(name, f"must be at most {MAX_INTEGER}, got {_show(value)}")
        return value

    def req_int(self, name: str, *, minimum: int = 0) -> int:
        value = self.int_(name, required=True, minimum=minimum)
        assert value is not None
        return value

    def number(self, name: str) -> float | None:
        value = self._get(name, False)
        if value is None:
            return None
        problem = _price_problem(value)
        if problem is not None or not isinstance(value, int | float):
            raise self.error(name, f"{problem}, got {_show(value)}")
        return float(value)

    def bool_(self, name: str, default: bool) -> bool:
        value = self._get(name, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, got {_show(value)}")
        return value

    def region_map(self, name: str, *, required: bool = False) -> dict[str, object]:
        value = self._get(name, required)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(name, "must be an object {region: ...}")
        return {str(k): v for k, v in value.items() if v is not None}


def parse_catalog(doc: object, *, source: str) -> tuple[InstanceTypeInfo, ...]:
    """Validate a parsed catalog document (a JSON array of instance types), sorted by name."""
    if not isinstance(doc, list):
        raise CatalogError(f"{source}: must be a JSON array of instance types")
    infos: list[InstanceTypeInfo] = []
    first_index: dict[str, int] = {}
    for index, raw in enumerate(doc):
        entry = _Entry(raw, index=index, source=source)
        info = _parse_entry(entry)
        if info.name in first_index:
            raise entry.error(
                "name", f"duplicate instance type (first at entry {first_index[info.name]})"
            )
        first_index[info.name] = index
        infos.append(info)
    return tuple(sorted(infos, key=lambda info: info.name))


def _parse_entry(e: _Entry) -> InstanceTypeInfo:
    name = e.req_str("name")
    family = e.req_str("family")
    size = e.req_str("size")
    parts = name.split(".")
    if len(parts) == 2 and family != parts[0]:
        raise e.error("family", f"{family!r} does not match the name's family {parts[0]!r}")
    if len(parts) == 2 and size != parts[1]:
        raise e.error("size", f"{size!r} does not match the name's size {parts[1]!r}")
    architecture = e.req_str("architecture")
    if architecture not in ARCHITECTURES:
        raise e.error("architecture", f"must be amd64 or arm64, got {architecture!r}")
    vcpus = e.req_int("vcpus", minimum=1)
    memory_mib = e.req_int("memory_mib", minimum=1)
    gpu_count = e.req_int("gpu_count")

    enis = e.int_("max_enis_default_card")
    ipv4 = e.int_("ipv4_per_eni", minimum=1)
    max_pods_eni = e.int_("max_pods_eni")
    if enis is not None and ipv4 is not None:
        computed = cap.eni_limited_pods(enis, ipv4)
        if max_pods_eni is not None and max_pods_eni != computed:
            raise e.error(
                "max_pods_eni",
                f"{max_pods_eni} disagrees with max_enis_default_card x (ipv4_per_eni - 1) + 2"
                f" = {computed}",
            )
        max_pods_eni = computed
    elif max_pods_eni is None:
        if enis is not None:
            missing = "ipv4_per_eni"
        elif ipv4 is not None:
            missing = "max_enis_default_card"
        else:
            missing = "max_pods_eni"
        raise e.error(
            missing,
            "required field is missing (give max_pods_eni, or max_enis_default_card and "
            "ipv4_per_eni)",
        )

    gpu_resource_name = e.str_("gpu_resource_name")
    if gpu_resource_name is not None and gpu_resource_name not in set(
        cap.GPU_RESOURCE_BY_MANUFACTURER.values()
    ):
        raise e.error("gpu_resource_name", f"unknown GPU resource {gpu_resource_name!r}")

    on_demand = _parse_on_demand(e)
    spot, spot_source, advisor = _parse_spot(e)
    capacity_types = _parse_capacity_types(e)
    offerings = _parse_offerings(e)
    published = PublishedAllocatable(
        cpu_millicores=e.int_("karpenter_allocatable_cpu_millicores"),
        memory_mib=e.int_("karpenter_allocatable_memory_mib"),
        ephemeral_storage_gib=e.int_("karpenter_allocatable_ephemeral_storage_gib"),
        max_pods=e.int_("karpenter_max_pods"),
        pod_eni=e.int_("karpenter_pod_eni"),
        docs_status=e.str_("karpenter_docs_status"),
    )
    return InstanceTypeInfo(
        name=name,
        family=family,
        size=size,
        architecture=architecture,
        vcpus=vcpus,
        memory_mib=memory_mib,
        gpu_count=gpu_count,
        max_pods_eni=max_pods_eni,
        max_enis_default_card=enis,
        ipv4_per_eni=ipv4,
        max_enis=e.int_("max_enis"),
        network_card_count=e.int_("network_card_count", minimum=1),
        cpu_manufacturer=e.str_("cpu_manufacturer"),
        cpu_sustained_clock_mhz=e.int_("cpu_sustained_clock_mhz"),
        gpu_name=e.str_("gpu_name"),
        gpu_manufacturer=e.str_("gpu_manufacturer"),
        gpu_memory_mib=e.int_("gpu_memory_mib"),
        gpu_fraction=e.number("gpu_fraction"),
        gpu_model=e.str_("gpu_model"),
        gpu_compute_capability=e.number("gpu_compute_capability"),
        gpu_resource_name=gpu_resource_name,
        gpu_device_entries=e.int_("gpu_device_entries", minimum=1) or 1,
        accelerator_name=e.str_("accelerator_name"),
        accelerator_manufacturer=e.str_("accelerator_manufacturer"),
        accelerator_count=e.int_("accelerator_count") or 0,
        neuron_device_count=e.int_("neuron_device_count") or 0,
        neuron_core_count=e.int_("neuron_core_count") or 0,
        efa_interfaces=e.int_("efa_interfaces") or 0,
        branch_enis=e.int_("branch_enis"),
        trunking_compatible=e.bool_("trunking_compatible", False),
        in_karpenter_vpc_limits=e.bool_("in_karpenter_vpc_limits", True),
        network_bandwidth_mbps=e.int_("network_bandwidth_mbps"),
        ebs_max_bandwidth_mbps=e.int_("ebs_max_bandwidth_mbps"),
        ebs_baseline_bandwidth_mbps=e.number("ebs_baseline_bandwidth_mbps"),
        ebs_baseline_throughput_mbytes_per_s=e.number("ebs_baseline_throughput_mbytes_per_s"),
        ebs_baseline_iops=e.number("ebs_baseline_iops"),
        local_nvme_gb=e.int_("local_nvme_gb") or 0,
        hypervisor=e.str_("hypervisor"),
        bare_metal=e.bool_("bare_metal", False),
        encryption_in_transit_supported=e.bool_("encryption_in_transit_supported", False),
        capacity_types=capacity_types,
        on_demand_price=on_demand,
        spot_price=spot,
        spot_price_source=spot_source,
        spot_advisor=advisor,
        offerings=offerings,
        published=published if any(_published_values(published)) else None,
    )


def _published_values(p: PublishedAllocatable) -> tuple[object, ...]:
    return (p.cpu_millicores, p.memory_mib, p.ephemeral_storage_gib, p.max_pods, p.docs_status)


def _parse_on_demand(e: _Entry) -> dict[str, float]:
    field_name = "on_demand_price_usd_per_hour"
    value = e.raw.get(field_name)
    if field_name not in e.raw:
        raise e.error(field_name, "required field is missing")
    if value is None:
        return {}
    if not isinstance(value, dict):
        # One number: the same price in every region.
        problem = _price_problem(value)
        if problem is not None:
            raise e.error(field_name, f"must be {{region: price}} or a number, got {_show(value)}")
        return {"*": float(value)}
    prices: dict[str, float] = {}
    for region, price in value.items():
        if price is None:
            continue
        problem = _price_problem(price)
        if problem is not None:
            raise e.error(f"{field_name}.{region}", f"{problem}, got {_show(price)}")
        prices[str(region)] = float(price)
    return prices


def _parse_spot(
    e: _Entry,
) -> tuple[dict[str, float], dict[str, str], dict[str, SpotAdvisor]]:
    spot: dict[str, float] = {}
    sources: dict[str, str] = {}
    declared = e.region_map("spot_price_source")
    for region, value in e.region_map("spot_price_usd_per_hour").items():
        where = f"spot_price_usd_per_hour.{region}"
        if isinstance(value, dict):
            avg = value.get("avg")
            if avg is None:
                continue
            problem = _price_problem(avg)
            if problem is not None:
                raise e.error(where + ".avg", f"{problem}, got {_show(avg)}")
            spot[region], sources[region] = float(avg), "sampled"
        elif _is_price(value):
            source = declared.get(region, "catalog")
            if source not in SPOT_PRICE_SOURCES:
                raise e.error(f"spot_price_source.{region}", f"unknown source {source!r}")
            spot[region], sources[region] = float(value), str(source)
        else:
            raise e.error(where, f"must be a price or {{min, avg, max}}, got {_show(value)}")
    advisor: dict[str, SpotAdvisor] = {}
    for region, value in e.region_map("spot_advisor").items():
        where = f"spot_advisor.{region}"
        if not isinstance(value, dict):
            raise e.error(where, "must be an object {savings_vs_on_demand_pct, ...}")
        savings = value.get("savings_vs_on_demand_pct")
        if savings is None:
            continue
        if not _is_price(savings) or savings > 100:
            raise e.error(where + ".savings_vs_on_demand_pct", "must be a number in [0, 100]")
        frequency = value.get("interruption_frequency")
        if frequency is not None and not isinstance(frequency, str):
            raise e.error(where + ".interruption_frequency", "must be a string")
        advisor[region] = SpotAdvisor(float(savings), frequency)
    return spot, sources, advisor


def _parse_capacity_types(e: _Entry) -> tuple[str, ...]:
    value = e.raw.get("capacity_types")
    if value is None:
        return cap.CAPACITY_TYPES
    if not isinstance(value, list) or not value or any(v not in cap.CAPACITY_TYPES for v in value):
        raise e.error("capacity_types", f"must be a non-empty subset of {list(cap.CAPACITY_TYPES)}")
    return tuple(ct for ct in cap.CAPACITY_TYPES if ct in value)


def _parse_offerings(e: _Entry) -> dict[str, tuple[str, ...]] | None:
    value = e.raw.get("offerings")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise e.error("offerings", "must be an object {region: [zone, ...]}")
    offerings: dict[str, tuple[str, ...]] = {}
    for region, zones in value.items():
        if not isinstance(zones, list) or any(not isinstance(z, str) or not z for z in zones):
            raise e.error(f"offerings.{region}", "must be a list of zone names")
        offerings[str(region)] = tuple(sorted(set(zones)))
    return offerings
