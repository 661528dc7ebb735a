"""The instance types of one region: `Catalog` and `load_catalog`.

aws/karpenter-provider-aws's instance-type provider (`pkg/providers/instancetype/instancetype.go`)
lists the region's types for an EC2NodeClass, resolving them once per node-class hash and
caching the list; `Catalog.instance_types(settings)` does the same over the catalog's data rows,
returning the scheduler's `InstanceType` values (resolved by `resolve.py`), cached per
`NodeClassSettings`: the catalog's one cache. `load_catalog` picks the rows (bundled, or a parsed
`--catalog`), the zones (`--zones`, else every zone the data knows for the region) and the prices
(`--prices` overrides, `pricing.py`); types not offered in the region are left out, as
DescribeInstanceTypeOfferings would leave them out. File formats: `docs/catalog-format.md`.

Flow::

    infos  = bundled_instance_type_infos()            # or parse_catalog_json(text, source=path)
    prices = parse_prices_json(text, source=path)     # optional
    catalog = load_catalog("us-east-1", infos=infos, prices=prices, zones=None)
    settings = node_class_settings(ec2nodeclass)       # or NodeClassSettings(ami_family=...)
    its = catalog.instance_types(settings)             # gpucap.scheduling's InstanceType
    details = catalog.details("g5.xlarge", settings)   # the row, overhead and prices

Called by the AWS cloud provider, the simulated EC2 API, `plan`, `simulate` and `lint` (through
the CLI's `--region`, `--zones`, `--catalog FILE` and `--prices FILE`). Immutable but for the
cache; every tuple it returns is sorted by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from gpucap.cloudprovider.aws.instancetype.data import (
    CatalogError,
    InstanceTypeInfo,
    bundled_instance_type_infos,
    bundled_region_zones,
)
from gpucap.cloudprovider.aws.instancetype.pricing import (
    PriceOverride,
    RegionPricing,
    region_pricing,
)
from gpucap.cloudprovider.aws.instancetype.resolve import (
    InstanceTypeDetails,
    instance_type_details,
    is_compatible,
    offered_zones,
    offering_price,
    resolve_instance_type,
)
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings
from gpucap.scheduling.instancetypes import InstanceType

__all__ = ["Catalog", "load_catalog"]


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

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled without the cache (the resolved types hold read-only views, which do not
        # pickle, and a worker resolves its own node classes once): the catalog goes whole to
        # the workers of a Ray engine (issue 26).
        return (Catalog, (self.region, self.zones, self.infos, dict(self.pricing)))

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
        """Every type resolved for `settings` (default: AL2023, no kubelet overrides), by name:
        what the scheduler and the launch read. Built once per node class; later calls return
        the same tuple of the same objects (callers memoise by identity)."""
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
        `instance_types()` (default settings), in its order. Called by `SimulatedEC2` to price
        launches.

        The rule is `resolve.offerings`' (offered in the zone, priced, compatible with the node
        class), applied through the same helpers, without building the types: reading the
        offerings of `instance_types()` would resolve the default node class's 1,340 types,
        which a simulation whose EC2NodeClass sets anything never otherwise does (bench/
        simulate.py: ~1 s more), and calling `offerings` per type builds every Offering
        (measured 7x this loop). `tests/.../test_catalog_prices.py` holds the two equal."""
        settings = NodeClassSettings()
        zones = sorted(set(self.zones))
        out: dict[tuple[str, str], float] = {}
        for info in self.infos:
            if capacity_type not in info.capacity_types:
                continue
            price = offering_price(self.pricing[info.name], capacity_type)
            if price is None or not is_compatible(info, settings):
                continue
            offered = offered_zones(info, self.region, self.zones)
            for zone in zones:
                if zone in offered:
                    out[(info.name, zone)] = price
        return out

    def instance_type(self, name: str, settings: NodeClassSettings | None = None) -> InstanceType:
        for it in self.instance_types(settings):
            if it.name == name:
                return it
        raise KeyError(name)

    def details(self, name: str, settings: NodeClassSettings | None = None) -> InstanceTypeDetails:
        """The data row, overhead (for `settings`) and prices of the type `name`, computed on
        each call: for the few callers that show them, not for the scheduler."""
        info = self.info(name)
        return instance_type_details(
            info, settings, region=self.region, pricing=self.pricing[info.name]
        )


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
        info.name: region_pricing(info, region, overrides.get(info.name)) for info in in_region
    }
    return Catalog(region=region, zones=zone_list, infos=in_region, pricing=pricing)
