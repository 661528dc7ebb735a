"""The instance-type data: `InstanceTypeInfo` rows, the catalog-file parser and the bundled data.

One `InstanceTypeInfo` is one instance type as EC2's DescribeInstanceTypes and the price tables
describe it, for every region at once; `instancetype/resolve.py` turns a row into the scheduler's
`InstanceType` for one region and EC2NodeClass, as aws/karpenter-provider-aws turns an
`ec2types.InstanceTypeInfo` into one in `pkg/providers/instancetype/types.go`. Here: the row,
`parse_catalog`/`parse_catalog_json` (a `--catalog FILE`, validated field by field), the bundled
catalog (`bundled_instance_type_infos`, `bundled_region_zones`) and its column packing
(`pack_catalog_columns`/`unpack_catalog_columns`, also used by `scripts/build_catalog.py`).
The file formats are described in `docs/catalog-format.md`.

Called by `instancetype/pricing.py`, `resolve.py` and `catalog.py`, the CLI (`--catalog`), the
simulator's kubelet (`Catalog.info`) and the lint rules. Pure: the only I/O is reading the bundled
file with `importlib.resources`; the CLI reads user files and passes their text in. Bad input
raises `CatalogError` (a `ValueError`), one line naming the file, the entry (index and name) and
the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Final, TypeGuard

from gpucap.apis.reading import InputError, load_json
from gpucap.cloudprovider.aws.instancetype import capacity as cap
from gpucap.runtime.errors import GpucapInputError

__all__ = [
    "ARCHITECTURES",
    "BUNDLED_CATALOG_RESOURCE",
    "CATALOG_COLUMNS_FORMAT",
    "MAX_INTEGER",
    "MAX_NUMBER",
    "SPOT_PRICE_SOURCES",
    "CatalogError",
    "InstanceTypeInfo",
    "PublishedAllocatable",
    "SpotAdvisor",
    "bundled_catalog_entries",
    "bundled_instance_type_infos",
    "bundled_region_zones",
    "load_document",
    "pack_catalog_columns",
    "parse_catalog",
    "parse_catalog_json",
    "price_problem",
    "show_value",
    "unpack_catalog_columns",
]

BUNDLED_CATALOG_RESOURCE: Final = ("gpucap", "data/catalog/instance-types.json")
CATALOG_COLUMNS_FORMAT: Final = "gpucap.dev/catalog-columns/v1"
ARCHITECTURES: Final = ("amd64", "arm64")
# Where a resolved spot price came from, best first.
SPOT_PRICE_SOURCES: Final = ("override", "sampled", "catalog", "advisor-estimate", "on-demand")


class CatalogError(GpucapInputError, ValueError):
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

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its fields, the read-only views as plain dicts (a mappingproxy does not
        # pickle), rebuilt through __init__, which makes them views again: the catalog goes
        # whole to the workers of a Ray engine (issue 26).
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in state.items():
            if isinstance(value, MappingProxyType):
                state[name] = dict(value)
        return (_instance_type_info, (state,))

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


def _instance_type_info(state: dict[str, Any]) -> InstanceTypeInfo:
    """An unpickled `InstanceTypeInfo` (its `__reduce__`)."""
    return InstanceTypeInfo(**state)


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
    return parse_catalog(load_document(text, source=source), source=source)


def load_document(text: str, *, source: str) -> object:
    """A catalog or prices file's text as JSON; a problem becomes one `CatalogError` line."""
    try:
        return load_json(text, source)
    except InputError as err:
        raise CatalogError(str(err)) from None


# The largest number a catalog or prices file may hold (prices, bandwidths, IOPS...): far above
# anything EC2 sells (its dearest instance is a few hundred dollars an hour), and low enough
# that sums and products of them stay finite floats.
MAX_NUMBER: Final = 1e12
# The largest integer field (vCPUs, memory in MiB, ENIs, bandwidth in Mbps): int32, as the
# Kubernetes quantities and EC2 API fields they become.
MAX_INTEGER: Final = 2**31 - 1


def _is_price(value: object) -> TypeGuard[int | float]:
    """A number >= 0 (at most MAX_NUMBER: see `price_problem`)."""
    return price_problem(value) is None


def price_problem(value: object) -> str | None:
    """What is wrong with `value` as a price or a measure, or None."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        return "must be a number >= 0"
    # An int too large for a float, inf and NaN (`value < 0` is False for NaN) end here.
    if isinstance(value, float) and math.isnan(value):
        return "must be a number >= 0"
    if value > MAX_NUMBER:
        return f"must be at most {MAX_NUMBER:.0e}"
    return None


def show_value(value: object) -> str:
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
            raise self.error(name, f"must be a non-empty string, got {show_value(value)}")
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
            raise self.error(name, f"must be an integer >= {minimum}, got {show_value(value)}")
        if value > MAX_INTEGER:
            raise self.error(name, f"must be at most {MAX_INTEGER}, got {show_value(value)}")
        return value

    def req_int(self, name: str, *, minimum: int = 0) -> int:
        value = self.int_(name, required=True, minimum=minimum)
        assert value is not None
        return value

    def number(self, name: str) -> float | None:
        value = self._get(name, False)
        if value is None:
            return None
        problem = price_problem(value)
        if problem is not None or not isinstance(value, int | float):
            raise self.error(name, f"{problem}, got {show_value(value)}")
        return float(value)

    def bool_(self, name: str, default: bool) -> bool:
        value = self._get(name, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, got {show_value(value)}")
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
        problem = price_problem(value)
        if problem is not None:
            raise e.error(
                field_name, f"must be {{region: price}} or a number, got {show_value(value)}"
            )
        return {"*": float(value)}
    prices: dict[str, float] = {}
    for region, price in value.items():
        if price is None:
            continue
        problem = price_problem(price)
        if problem is not None:
            raise e.error(f"{field_name}.{region}", f"{problem}, got {show_value(price)}")
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
            problem = price_problem(avg)
            if problem is not None:
                raise e.error(where + ".avg", f"{problem}, got {show_value(avg)}")
            spot[region], sources[region] = float(avg), "sampled"
        elif _is_price(value):
            source = declared.get(region, "catalog")
            if source not in SPOT_PRICE_SOURCES:
                raise e.error(f"spot_price_source.{region}", f"unknown source {source!r}")
            spot[region], sources[region] = float(value), str(source)
        else:
            raise e.error(where, f"must be a price or {{min, avg, max}}, got {show_value(value)}")
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
