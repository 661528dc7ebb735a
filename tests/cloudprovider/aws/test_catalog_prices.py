"""`Catalog.available_prices` (SimulatedEC2's launch prices, built without resolving the types)
against the offerings `instance_types()` resolves: the same map, in the same order."""

from __future__ import annotations

import pytest

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.pricing import PriceOverride


def _from_offerings(catalog_region: str, capacity_type: str, **kw: object) -> tuple[object, ...]:
    catalog = load_catalog(catalog_region, **kw)  # type: ignore[arg-type]
    resolved = [
        ((it.name, o.zone), o.price)
        for it in catalog.instance_types()
        for o in it.offerings
        if o.capacity_type == capacity_type and o.available
    ]
    return tuple(resolved), tuple(catalog.available_prices(capacity_type).items())


@pytest.mark.parametrize("region", ["us-east-1", "us-west-2", "eu-west-1"])
@pytest.mark.parametrize("capacity_type", ["on-demand", "spot"])
def test_available_prices_are_the_resolved_available_offerings(
    region: str, capacity_type: str
) -> None:
    resolved, direct = _from_offerings(region, capacity_type)
    assert resolved, "the region prices something"
    assert direct == resolved


@pytest.mark.parametrize("capacity_type", ["on-demand", "spot"])
def test_overridden_prices_are_the_ones_given(capacity_type: str) -> None:
    override = {"us-east-1": {"g5.xlarge": PriceOverride(on_demand=1.5, spot=0.5)}}
    resolved, direct = _from_offerings("us-east-1", capacity_type, prices=override)
    assert direct == resolved
    wanted = 1.5 if capacity_type == "on-demand" else 0.5
    assert {p for (key, p) in direct if key[0] == "g5.xlarge"} == {wanted}  # type: ignore[index]
