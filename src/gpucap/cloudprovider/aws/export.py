"""`catalog export`: a region's EC2 instance types, read from the AWS APIs, as catalog-file entries.

For the CLI's `catalog export`, which passes a `BotoEC2API` (any `EC2API` works: tests pass a fake
or moto). The output is a JSON array in the catalog-file schema (`docs/catalog-format.md`, the
one of `../shared/data/ec2-instance-types.json`), sorted by name, that `parse_catalog` accepts,
so it can be given straight back to `--catalog`.

`export_catalog(api, region)` makes four kinds of call, each the way Karpenter's AWS provider
makes it (aws `pkg/providers/instancetype/instancetype.go`, `pkg/providers/pricing/pricing.go`):

1. DescribeInstanceTypes filtered to `supported-virtualization-type=hvm` and
   `processor-info.supported-architecture` in {x86_64, arm64} (the filter is applied again
   locally, for EC2API implementations that ignore filters);
2. DescribeInstanceTypeOfferings with `LocationType=availability-zone` -> `offerings`;
3. DescribeSpotPriceHistory for `Linux/UNIX` and `Linux/UNIX (Amazon VPC)` with
   `StartTime=now`, which returns the price in force now for every type and zone; the latest
   record per zone wins, and `spot_price_usd_per_hour[region]` is `{min, avg, max}` across zones
   (null without any price);
4. Pricing GetProducts (`ServiceCode=AmazonEC2`; filters regionCode, operatingSystem Linux,
   preInstalledSw NA, capacitystatus Used, marketoption OnDemand, and tenancy Shared with
   productFamily `Compute Instance` -- or, for bare-metal types, tenancy Dedicated with
   `Compute Instance (bare metal)`, as Karpenter does) -> `on_demand_price_usd_per_hour`. The
   smallest non-zero USD hourly price of a type's OnDemand terms is used; a type without one
   gets `{region: null}` (the catalog keeps it, never available).

With `instance_types=[...]` every call is narrowed to those types (up to `NARROW_REQUEST_LIMIT`
of them; GetProducts then asks per type, with an `instanceType` filter, for up to
`PER_TYPE_PRICING_LIMIT`); without it the whole region is exported (two region-wide GetProducts
queries, paginated). Requested names that are not exported are logged.

From DescribeInstanceTypes (Karpenter's `computeRequirements` / `computeCapacity` reading):
architecture (`arm64` if supported, else `amd64`), vCPUs, memory, CPU manufacturer and
sustained clock, GPUs (`gpu_count` sums the NVIDIA/AMD/Habana devices, the resource Karpenter
advertises, so fractional GPUs count 0 with `gpu_fraction` set; name, manufacturer and memory
from the first device, lower-kebab-cased; `gpu_device_entries` = number of device entries),
accelerators and Neuron devices, EFA interfaces, ENIs (`max_enis_default_card` is the
`DefaultNetworkCardIndex` card's `MaximumNetworkInterfaces`, `ipv4_per_eni` is
`Ipv4AddressesPerInterface`; the catalog derives max pods from them), network bandwidth (sum of
the cards' baseline, Mbps), EBS bandwidths, local NVMe, hypervisor, bare metal, encryption in
transit, and `capacity_types` from `SupportedUsageClasses`. Types usable neither on-demand nor
spot (capacity blocks only), or missing vCPUs, memory or ENI limits, are left out with a warning.
Branch ENIs, Spot Advisor figures and Karpenter's published allocatable are not in these APIs
and stay absent.

`export_reservations(api)` is the account's capacity reservations in the region (ODCRs, Capacity
Blocks, interruptible reservations; every state, every page of DescribeCapacityReservations)
as a reservations file (`apis/capacityreservation.py`): the response as boto3 returns it, items
sorted by ID, times in RFC 3339 as the AWS CLI prints them, so the file is what
`aws ec2 describe-capacity-reservations` prints and `--reservations` reads it back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from statistics import fmean
from typing import Any, Final

from gpucap.cloudprovider.aws.ec2.api import EC2API, Response
from gpucap.cloudprovider.aws.instancetype import capacity as cap
from gpucap.runtime.logging import get_logger
from gpucap.runtime.rfc3339 import parse_rfc3339

__all__ = [
    "ARCHITECTURE_LABELS",
    "NARROW_REQUEST_LIMIT",
    "PER_TYPE_PRICING_LIMIT",
    "PRICING_SERVICE_CODE",
    "SPOT_PRODUCT_DESCRIPTIONS",
    "catalog_entry",
    "export_catalog",
    "export_reservations",
    "instance_type_filters",
    "is_karpenter_instance_type",
    "latest_spot_prices",
    "on_demand_prices",
    "pricing_filters",
    "reservations_json",
    "spot_price_summary",
    "zone_offerings",
]

# EC2 processor architecture -> Kubernetes `kubernetes.io/arch`; the architectures Karpenter
# lists instance types for (aws `pkg/providers/instancetype/instancetype.go`).
ARCHITECTURE_LABELS: Final[Mapping[str, str]] = {"x86_64": "amd64", "arm64": "arm64"}
SPOT_PRODUCT_DESCRIPTIONS: Final = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
PRICING_SERVICE_CODE: Final = "AmazonEC2"
# Up to this many requested types, GetProducts is asked once per type (instanceType filter);
# beyond it, two region-wide queries cost fewer calls.
PER_TYPE_PRICING_LIMIT: Final = 20
# DescribeInstanceTypes takes at most 100 names; a longer list is exported from region-wide
# requests, filtered locally.
NARROW_REQUEST_LIMIT: Final = 100
_PRICE_DIGITS: Final = 6
_ON_DEMAND_PRODUCT: Final = ("Shared", "Compute Instance")
_BARE_METAL_PRODUCT: Final = ("Dedicated", "Compute Instance (bare metal)")

_log = get_logger(__name__)


# ==== requests ==================================================================================


def instance_type_filters() -> list[dict[str, Any]]:
    """DescribeInstanceTypes filters: the instance types Karpenter considers."""
    return [
        {"Name": "supported-virtualization-type", "Values": ["hvm"]},
        {"Name": "processor-info.supported-architecture", "Values": list(ARCHITECTURE_LABELS)},
    ]


def pricing_filters(
    region: str, *, bare_metal: bool = False, instance_type: str | None = None
) -> list[dict[str, str]]:
    """GetProducts filters for Linux on-demand hourly prices in `region` (Karpenter's)."""
    tenancy, product_family = _BARE_METAL_PRODUCT if bare_metal else _ON_DEMAND_PRODUCT
    terms = [
        ("regionCode", region),
        ("serviceCode", PRICING_SERVICE_CODE),
        ("preInstalledSw", "NA"),
        ("operatingSystem", "Linux"),
        ("capacitystatus", "Used"),
        ("marketoption", "OnDemand"),
        ("tenancy", tenancy),
        ("productFamily", product_family),
    ]
    if instance_type is not None:
        terms.append(("instanceType", instance_type))
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in terms]


# ==== pure transforms ===========================================================================


def is_karpenter_instance_type(info: Mapping[str, Any]) -> bool:
    """HVM and x86_64/arm64: the DescribeInstanceTypes filter Karpenter applies."""
    virtualization = info.get("SupportedVirtualizationTypes") or []
    architectures = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or []
    return "hvm" in virtualization and any(a in ARCHITECTURE_LABELS for a in architectures)


def _lower_kebab(value: str) -> str:
    # Karpenter's lowerKebabCase (aws pkg/providers/instancetype/types.go).
    return value.replace(" ", "-").lower()


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _gpu_fields(info: Mapping[str, Any]) -> dict[str, Any]:
    gpus = [g for g in (info.get("GpuInfo") or {}).get("Gpus") or [] if isinstance(g, Mapping)]
    if not gpus:
        return {
            "gpu_count": 0,
            "gpu_name": None,
            "gpu_manufacturer": None,
            "gpu_memory_mib": None,
            "gpu_fraction": None,
            "gpu_device_entries": None,
        }
    first = gpus[0]
    # Karpenter advertises nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi as the sum of Count
    # over the devices of that manufacturer (computeCapacity).
    count = sum(
        _int(g.get("Count")) or 0
        for g in gpus
        if str(g.get("Manufacturer", "")).lower() in cap.GPU_RESOURCE_BY_MANUFACTURER
    )
    partition = _number(first.get("GpuPartitionSize"))
    name, manufacturer = first.get("Name"), first.get("Manufacturer")
    return {
        "gpu_count": count,
        "gpu_name": _lower_kebab(name) if isinstance(name, str) and name else None,
        "gpu_manufacturer": (
            _lower_kebab(manufacturer) if isinstance(manufacturer, str) and manufacturer else None
        ),
        "gpu_memory_mib": _int((first.get("MemoryInfo") or {}).get("SizeInMiB")),
        "gpu_fraction": partition if partition is not None and 0 < partition < 1 else None,
        "gpu_device_entries": len(gpus),
    }


def _accelerator_fields(info: Mapping[str, Any]) -> dict[str, Any]:
    neuron = [
        d
        for d in (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
        if isinstance(d, Mapping)
    ]
    inference = [
        a
        for a in (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
        if isinstance(a, Mapping)
    ]
    devices = neuron or inference
    name = manufacturer = None
    if devices:
        raw_name, raw_manufacturer = devices[0].get("Name"), devices[0].get("Manufacturer")
        name = _lower_kebab(raw_name) if isinstance(raw_name, str) and raw_name else None
        if isinstance(raw_manufacturer, str) and raw_manufacturer:
            manufacturer = _lower_kebab(raw_manufacturer)
        elif neuron:
            manufacturer = "aws"
    neuron_devices = sum(_int(d.get("Count")) or 0 for d in neuron)
    neuron_cores = 0
    if neuron:
        cores = _int((neuron[0].get("CoreInfo") or {}).get("Count")) or 0
        neuron_cores = (_int(neuron[0].get("Count")) or 0) * cores
    return {
        "accelerator_name": name,
        "accelerator_manufacturer": manufacturer,
        "accelerator_count": sum(_int(d.get("Count")) or 0 for d in devices),
        "neuron_device_count": neuron_devices,
        "neuron_core_count": neuron_cores,
    }


def _network_fields(network: Mapping[str, Any]) -> dict[str, Any]:
    cards = [c for c in network.get("NetworkCards") or [] if isinstance(c, Mapping)]
    default_index = _int(network.get("DefaultNetworkCardIndex")) or 0
    default_card = next(
        (c for c in cards if (_int(c.get("NetworkCardIndex")) or 0) == default_index), None
    )
    if default_card is not None:
        default_enis = _int(default_card.get("MaximumNetworkInterfaces"))
    else:  # older responses without NetworkCards: one card holds every interface
        default_enis = _int(network.get("MaximumNetworkInterfaces"))
    bandwidths = [_number(c.get("BaselineBandwidthInGbps")) for c in cards]
    known = [b for b in bandwidths if b is not None]
    efa = network.get("EfaInfo") or {}
    return {
        "max_enis": _int(network.get("MaximumNetworkInterfaces")),
        "max_enis_default_card": default_enis,
        "network_card_count": _int(network.get("MaximumNetworkCards")) or (len(cards) or None),
        "ipv4_per_eni": _int(network.get("Ipv4AddressesPerInterface")),
        "efa_interfaces": (
            (_int(efa.get("MaximumEfaInterfaces")) or 0) if network.get("EfaSupported") else 0
        ),
        "network_bandwidth_mbps": round(sum(known) * 1000) if known else None,
        "encryption_in_transit_supported": bool(network.get("EncryptionInTransitSupported")),
    }


def catalog_entry(info: Mapping[str, Any]) -> dict[str, Any] | None:
    """One DescribeInstanceTypes item as a catalog-file entry, without offerings or prices.

    None when the catalog cannot use the type (see the module docstring).
    """
    name = info.get("InstanceType")
    if not isinstance(name, str) or "." not in name or not is_karpenter_instance_type(info):
        return None
    family, size = name.split(".", 1)
    processor = info.get("ProcessorInfo") or {}
    architectures = processor.get("SupportedArchitectures") or []
    architecture = "arm64" if "arm64" in architectures else "amd64"
    vcpus = _int((info.get("VCpuInfo") or {}).get("DefaultVCpus"))
    memory_mib = _int((info.get("MemoryInfo") or {}).get("SizeInMiB"))
    network = _network_fields(info.get("NetworkInfo") or {})
    usage = info.get("SupportedUsageClasses") or []
    capacity_types = [ct for ct in cap.CAPACITY_TYPES if ct in usage]
    missing = [
        field
        for field, value in (
            ("vcpus", vcpus),
            ("memory_mib", memory_mib),
            ("max_enis_default_card", network["max_enis_default_card"]),
            ("ipv4_per_eni", network["ipv4_per_eni"]),
        )
        if not value
    ]
    if missing or not capacity_types:
        why = f"no {', '.join(missing)}" if missing else f"usage classes {usage}"
        _log.warning("catalog export: leaving out %s (%s)", name, why)
        return None
    clock = _number(processor.get("SustainedClockSpeedInGhz"))
    manufacturer = processor.get("Manufacturer")
    ebs = (info.get("EbsInfo") or {}).get("EbsOptimizedInfo") or {}
    storage = info.get("InstanceStorageInfo") or {}
    # Karpenter's instance-local-nvme label: total instance store when it is NVMe.
    has_nvme = bool(storage) and storage.get("NvmeSupport", "unsupported") != "unsupported"
    hypervisor = info.get("Hypervisor")
    return {
        "name": name,
        "family": family,
        "size": size,
        "architecture": architecture,
        "cpu_manufacturer": (
            manufacturer.lower() if isinstance(manufacturer, str) and manufacturer else None
        ),
        "cpu_sustained_clock_mhz": round(clock * 1000) if clock else None,
        "vcpus": vcpus,
        "memory_mib": memory_mib,
        **_gpu_fields(info),
        **_accelerator_fields(info),
        **network,
        "ebs_max_bandwidth_mbps": _int(ebs.get("MaximumBandwidthInMbps")),
        "ebs_baseline_bandwidth_mbps": _number(ebs.get("BaselineBandwidthInMbps")),
        "ebs_baseline_throughput_mbytes_per_s": _number(ebs.get("BaselineThroughputInMBps")),
        "ebs_baseline_iops": _number(ebs.get("BaselineIops")),
        "local_nvme_gb": (_int(storage.get("TotalSizeInGB")) or 0) if has_nvme else 0,
        "hypervisor": hypervisor if isinstance(hypervisor, str) and hypervisor else None,
        "bare_metal": bool(info.get("BareMetal")),
        "capacity_types": capacity_types,
    }


def zone_offerings(response: Mapping[str, Any]) -> dict[str, list[str]]:
    """DescribeInstanceTypeOfferings (availability zones) -> instance type -> sorted zones."""
    zones: dict[str, set[str]] = {}
    for offering in response.get("InstanceTypeOfferings") or []:
        if offering.get("LocationType", "availability-zone") != "availability-zone":
            continue
        name, zone = offering.get("InstanceType"), offering.get("Location")
        if isinstance(name, str) and isinstance(zone, str) and zone:
            zones.setdefault(name, set()).add(zone)
    return {name: sorted(zs) for name, zs in sorted(zones.items())}


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str) and value:
        try:
            parsed = parse_rfc3339(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return None


def _price(value: object) -> float | None:
    """A price as AWS writes it (a decimal string), or None when it is not a finite one >= 0."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        price = float(value)
    except ValueError:
        return None
    return price if math.isfinite(price) and price >= 0 else None


def latest_spot_prices(response: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """DescribeSpotPriceHistory -> instance type -> zone -> the latest Linux price.

    Records of other products, without a timestamp or with an unreadable price are skipped
    (as Karpenter's `spotPage` does); on equal timestamps the higher price wins, so the result
    does not depend on record order.
    """
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    for record in response.get("SpotPriceHistory") or []:
        if record.get("ProductDescription") not in SPOT_PRODUCT_DESCRIPTIONS:
            continue
        name, zone = record.get("InstanceType"), record.get("AvailabilityZone")
        when = _timestamp(record.get("Timestamp"))
        price = _price(record.get("SpotPrice"))
        if not (isinstance(name, str) and isinstance(zone, str)):
            continue
        if when is None or price is None:
            continue
        key = (name, zone)
        if key not in latest or (when, price) > latest[key]:
            latest[key] = (when, price)
    prices: dict[str, dict[str, float]] = {}
    for (name, zone), (_, price) in sorted(latest.items()):
        prices.setdefault(name, {})[zone] = price
    return prices


def spot_price_summary(zone_prices: Mapping[str, float]) -> dict[str, float] | None:
    """`{min, avg, max}` of a type's per-zone spot prices (None without any)."""
    if not zone_prices:
        return None
    values = list(zone_prices.values())
    return {
        "min": round(min(values), _PRICE_DIGITS),
        "avg": round(fmean(values), _PRICE_DIGITS),
        "max": round(max(values), _PRICE_DIGITS),
    }


def _price_item(item: str | Mapping[str, Any]) -> Mapping[str, Any] | None:
    if isinstance(item, Mapping):
        return item
    try:
        parsed = json.loads(item)
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, Mapping) else None


def on_demand_prices(
    price_list: Iterable[str | Mapping[str, Any]], *, currency: str = "USD"
) -> dict[str, float]:
    """GetProducts `PriceList` items (JSON strings) -> instance type -> hourly on-demand price.

    Reads `product.attributes.instanceType` and every `terms.OnDemand.*.priceDimensions.*
    .pricePerUnit[currency]`; zero and unreadable prices are skipped (Karpenter's
    `onDemandPage`), and of several prices for one type the smallest is kept.
    """
    prices: dict[str, float] = {}
    for raw in price_list:
        item = _price_item(raw)
        if item is None:
            continue
        name = ((item.get("product") or {}).get("attributes") or {}).get("instanceType")
        if not isinstance(name, str) or not name:
            continue
        for term in ((item.get("terms") or {}).get("OnDemand") or {}).values():
            for dimension in (term.get("priceDimensions") or {}).values():
                price = _price((dimension.get("pricePerUnit") or {}).get(currency))
                if price is not None and price > 0:
                    prices[name] = min(price, prices.get(name, math.inf))
    return prices


# ==== orchestration =============================================================================


def _fetch_on_demand_prices(
    api: EC2API, region: str, entries: Sequence[Mapping[str, Any]], *, per_type: bool
) -> dict[str, float]:
    prices: dict[str, float] = {}
    if per_type:
        for entry in entries:
            filters = pricing_filters(
                region, bare_metal=bool(entry["bare_metal"]), instance_type=entry["name"]
            )
            response = api.get_products(ServiceCode=PRICING_SERVICE_CODE, Filters=filters)
            found = on_demand_prices(response.get("PriceList") or [])
            if entry["name"] in found:
                prices[entry["name"]] = found[entry["name"]]
        return prices
    for bare_metal in (False, True):
        filters = pricing_filters(region, bare_metal=bare_metal)
        response = api.get_products(ServiceCode=PRICING_SERVICE_CODE, Filters=filters)
        for name, price in on_demand_prices(response.get("PriceList") or []).items():
            prices[name] = min(price, prices.get(name, math.inf))
    return prices


def export_catalog(
    api: EC2API,
    region: str,
    *,
    instance_types: Sequence[str] | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """Catalog-file entries for `region`'s instance types (all, or `instance_types`), by name.

    `now` is the spot-price sampling time (default: the current time). Raises `EC2APIError`
    when a call fails (an unknown name in `instance_types` is EC2's `InvalidInstanceType`).
    """
    wanted = sorted(set(instance_types)) if instance_types is not None else None
    if wanted == []:
        return []
    type_request: dict[str, Any] = {"Filters": instance_type_filters()}
    offering_request: dict[str, Any] = {"LocationType": "availability-zone"}
    spot_request: dict[str, Any] = {
        "ProductDescriptions": list(SPOT_PRODUCT_DESCRIPTIONS),
        "StartTime": now if now is not None else datetime.now(timezone.utc),
    }
    if wanted is not None and len(wanted) <= NARROW_REQUEST_LIMIT:
        type_request["InstanceTypes"] = wanted
        offering_request["Filters"] = [{"Name": "instance-type", "Values": wanted}]
        spot_request["InstanceTypes"] = wanted

    entries: dict[str, dict[str, Any]] = {}
    types: Response = api.describe_instance_types(**type_request)
    for info in types.get("InstanceTypes") or []:
        entry = catalog_entry(info)
        if entry is not None and (wanted is None or entry["name"] in wanted):
            entries[entry["name"]] = entry
    if wanted is not None and len(entries) < len(wanted):
        left_out = [name for name in wanted if name not in entries]
        _log.warning("catalog export: not exporting %s", ", ".join(left_out))
    if not entries:
        return []
    ordered = [entries[name] for name in sorted(entries)]

    zones = zone_offerings(api.describe_instance_type_offerings(**offering_request))
    spot = latest_spot_prices(api.describe_spot_price_history(**spot_request))
    per_type = wanted is not None and len(ordered) <= PER_TYPE_PRICING_LIMIT
    on_demand = _fetch_on_demand_prices(api, region, ordered, per_type=per_type)

    for entry in ordered:
        name = entry["name"]
        entry["offerings"] = {region: zones.get(name, [])}
        entry["on_demand_price_usd_per_hour"] = {region: on_demand.get(name)}
        entry["spot_price_usd_per_hour"] = {region: spot_price_summary(spot.get(name, {}))}
    return ordered


# ==== capacity reservations =====================================================================


def export_reservations(api: EC2API) -> dict[str, Any]:
    """The region's capacity reservations as a reservations file's document (see the module
    docstring). Raises `EC2APIError` when the call fails."""
    response = api.describe_capacity_reservations()
    items = sorted(
        (dict(r) for r in response.get("CapacityReservations") or []),
        key=lambda r: str(r.get("CapacityReservationId", "")),
    )
    return {"CapacityReservations": items}


def _json_time(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def reservations_json(document: Mapping[str, Any]) -> str:
    """A reservations document as the file's text: JSON, times as ISO 8601 / RFC 3339."""
    return json.dumps(document, indent=4, default=_json_time) + "\n"
