"""The catalog a command runs on, from `--region`, `--zones`, `--catalog` and `--prices`.

Used by `plan`, `lint` and `simulate`. `load_catalog` is a module attribute that
`catalog_from_options` calls through this module, so a caller can replace it: the fuzzer's
driver (tests/fuzz/driver.py) shares one bundled catalog between its cases.
"""

from __future__ import annotations

from typing import Any

from gpucap.apis.reading import read_path
from gpucap.cli.errors import BadInputError
from gpucap.cloudprovider.aws.instancetype import catalog as aws_catalog
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.data import parse_catalog_json
from gpucap.cloudprovider.aws.instancetype.pricing import (
    parse_prices_json,
    priced_regions,
    region_is_priced,
)

__all__ = ["catalog_from_options", "load_catalog"]


def load_catalog(region: str, **kw: Any) -> Catalog:
    """`cloudprovider.aws.instancetype.catalog.load_catalog` (replaceable: see the module
    docstring)."""
    return aws_catalog.load_catalog(region, **kw)


def catalog_from_options(
    region: str,
    zones: str | None,
    catalog_file: str | None,
    prices_file: str | None,
    where: str = "--region",
) -> Catalog:
    """The catalog for `plan`/`simulate`/`lint`: bundled, or `--catalog`, with `--prices`
    overrides. `where` names what chose the region (the option, or a scenario's spec.region)
    for the one-line refusal of a region the catalog prices nothing in."""
    zone_list = [z.strip() for z in zones.split(",") if z.strip()] if zones is not None else None
    infos = None
    if catalog_file is not None:
        infos = parse_catalog_json(read_path(catalog_file), source=catalog_file)
    prices = None
    if prices_file is not None:
        prices = parse_prices_json(read_path(prices_file), source=prices_file)
    if not region_is_priced(region, infos=infos, prices=prices):
        _check_zone_names(region, zone_list)
        # Nothing could launch: every pod would stay Pending and the plan would blame the
        # NodePools. Said once, with the regions there is data for.
        known = priced_regions(infos=infos, prices=prices)
        raise BadInputError(
            f"{where} {region}: the catalog prices no instance type in {region} "
            f"(regions it prices: {', '.join(known) or 'none'}); give prices with "
            "--prices or --catalog"
        )
    catalog = load_catalog(  # this module's attribute: replaceable
        region, infos=infos, prices=prices, zones=zone_list, prices_source=prices_file or ""
    )
    _check_zone_names(region, zone_list)
    return catalog


def _check_zone_names(region: str, zones: list[str] | None) -> None:
    """Every AWS zone name (us-east-1a, Local Zone us-east-1-bos-1a, Wavelength
    us-east-1-wl1-bos-wlz-1) starts with its region's. The catalog checks the zones of a region
    it knows (and lists them); this holds for a region it knows nothing about."""
    foreign = [z for z in zones or [] if not z.startswith(region)]
    if foreign:
        raise BadInputError(f"--zones: '{foreign[0]}' is not a zone of region {region}")
