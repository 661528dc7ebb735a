"""Instance-type prices: one region's resolved prices, `--prices` overrides and spot estimates.

aws/karpenter-provider-aws keeps its prices in `pkg/providers/pricing/pricing.go` (on-demand
from the AWS pricing API, spot from DescribeSpotPriceHistory, with static tables as the fallback);
gpucap prices from the catalog's data instead: the bundled on-demand and sampled spot prices,
a Spot Advisor estimate where no spot price was sampled, and the user's `--prices FILE`
(format in `docs/catalog-format.md`). `region_pricing` resolves one type's prices in one region
(called by `instancetype/catalog.py` for each type, and by `resolve.py` when no pricing is
given); `region_is_priced`/`priced_regions` let the CLI refuse a region nothing is priced in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from gpucap.cloudprovider.aws.instancetype.data import (
    CatalogError,
    InstanceTypeInfo,
    bundled_instance_type_infos,
    bundled_region_zones,
    load_document,
    price_problem,
    show_value,
)

__all__ = [
    "PriceOverride",
    "RegionPricing",
    "bundled_priced_regions",
    "estimate_spot_price",
    "parse_prices",
    "parse_prices_json",
    "priced_regions",
    "region_is_priced",
    "region_pricing",
    "resolve_spot_price",
]


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


def region_pricing(
    info: InstanceTypeInfo, region: str, override: PriceOverride | None
) -> RegionPricing:
    """`info`'s prices in `region`: an override first, then the catalog's on-demand price and
    its spot price (sampled, else the Spot Advisor estimate, else on-demand). A spot price the
    data estimated from the advisor is estimated again from an overridden on-demand price."""
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


def parse_prices_json(text: str, *, source: str) -> dict[str, dict[str, PriceOverride]]:
    """A prices file's text -> {region: {instance type: PriceOverride}}."""
    return parse_prices(load_document(text, source=source), source=source)


def parse_prices(doc: object, *, source: str) -> dict[str, dict[str, PriceOverride]]:
    """Validate a parsed prices document (format: `docs/catalog-format.md`)."""
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
                problem = None if value is None else price_problem(value)
                if problem is not None:
                    raise CatalogError(
                        f"{where}: field {key!r}: {problem}, got {show_value(value)}"
                    )
                values[key] = None if value is None else float(value)
            result[region][name] = PriceOverride(on_demand=values["on-demand"], spot=values["spot"])
    return result


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
