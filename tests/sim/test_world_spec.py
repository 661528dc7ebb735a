"""`spec.world` of a scenario (`sim/worldspec.py`): absent is today's world; every bad value is
one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.scenario import ScenarioError, load_scenario
from gpucap.sim.worldspec import SpotWorld, WorldConfig, advisor_buckets

STORIES = Path(__file__).parent / "stories"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


def _scenario(tmp_path: Path, world: str, region: str = "us-east-1") -> str:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        f"spec:\n  region: {region}\n  manifests: [{STORIES / 'nodepool.yaml'}]\n{world}"
    )
    return str(path)


def test_a_scenario_without_world_loads_none(tmp_path: Path, catalog: Catalog) -> None:
    assert load_scenario(_scenario(tmp_path, ""), catalog).world is None


def test_a_world_without_spot_is_the_none_model(tmp_path: Path, catalog: Catalog) -> None:
    world = load_scenario(_scenario(tmp_path, "  world: {}\n"), catalog).world
    assert world == WorldConfig()
    assert not world.spot.active


def test_rates_by_family_and_type_are_kept(tmp_path: Path, catalog: Catalog) -> None:
    text = "  world: {spot: {model: advisor, ratePerHour: {g5: 0.5, g6.xlarge: 2}}}\n"
    world = load_scenario(_scenario(tmp_path, text), catalog).world
    assert world is not None
    assert world.spot == SpotWorld("advisor", {"g5": 0.5, "g6.xlarge": 2.0})


def test_an_explicit_rate_alone_turns_the_market_on(tmp_path: Path, catalog: Catalog) -> None:
    text = "  world: {spot: {ratePerHour: {g5: 0.5}}}\n"
    world = load_scenario(_scenario(tmp_path, text), catalog).world
    assert world is not None
    assert world.spot.model == "none"
    assert world.spot.active


@pytest.mark.parametrize(
    ("world", "message"),
    [
        (
            "  world: {spot: {ratePerHour: {g5.xlargr: 1}}}\n",
            "world.spot.ratePerHour[g5.xlargr]: 'g5.xlargr' is not an instance family or type in the "
            "catalog (did you mean 'g5.xlarge'?)",
        ),
        (
            "  world: {spot: {ratePerHour: {g5: -1}}}\n",
            "world.spot.ratePerHour.g5: -1.0 is not a rate gpucap runs: reclaims per pool-hour, "
            "from 0 to 60",
        ),
        (
            "  world: {spot: {ratePerHour: {g5: .inf}}}\n",
            "world.spot.ratePerHour.g5: inf is not a rate gpucap runs: reclaims per pool-hour, "
            "from 0 to 60",
        ),
    ],
)
def test_a_bad_world_is_one_line_naming_file_and_field(
    tmp_path: Path, catalog: Catalog, world: str, message: str
) -> None:
    path = _scenario(tmp_path, world)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, catalog)
    assert str(err.value) == f"{path}: {message}"


def test_an_unknown_model_is_one_line_naming_the_field(tmp_path: Path, catalog: Catalog) -> None:
    path = _scenario(tmp_path, "  world: {spot: {model: stormy}}\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, catalog)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"{path}: ")
    assert "world.spot.model" in line


def test_the_advisor_extract_has_the_seed_types_of_us_east_1() -> None:
    # world-data.md §1.1: g5.xlarge 4, g5.2xlarge 3, g6.xlarge 4, g6e.xlarge 1, p4d.24xlarge 2
    buckets = advisor_buckets("us-east-1")
    assert (buckets["g5.xlarge"], buckets["g5.2xlarge"], buckets["g6.xlarge"]) == (4, 3, 4)
    assert (buckets["g6e.xlarge"], buckets["p4d.24xlarge"]) == (1, 2)
