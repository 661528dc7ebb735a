"""`spec.world` of a scenario, checked: what the simulated world does by itself.

Today that is the spot market (`spec.world.spot`, run by `sim/spotmarket.py`): `model` is
`none` (EC2 reclaims spot only where an `interrupt` event says so: the default, and what a
scenario without `world` gets), `advisor` (the Spot Instance Advisor's bucket per type and region,
`data/world/spot-advisor.json`) or `measured` (the fits in `sim/spotmarket.py`); `ratePerHour`
maps an instance family (`g5`) or type (`g5.xlarge`) to reclaims per pool-hour, over the model.

The simulator's loader (`sim/scenario.py` `_Loader.load`) calls `load_world` once; a problem is
one line naming the scenario file and the field (`basic.yaml: world.spot.ratePerHour.g9: 'g9'
is not an instance family or type in the catalog (did you mean 'g6'?)`), exit 2 like every
other scenario error.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files

from gpucap.apis.errors import FieldPath, closest_name
from gpucap.apis.scenario import Scenario
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog

__all__ = [
    "MAX_RATE_PER_HOUR",
    "SpotWorld",
    "WorldConfig",
    "advisor_buckets",
    "load_world",
]

# The highest `ratePerHour` gpucap accepts: a pool reclaimed once a minute. More is no market
# any NodePool could run on, and would be a run of millions of events.
MAX_RATE_PER_HOUR = 60.0


@dataclass(frozen=True, slots=True)
class SpotWorld:
    """`spec.world.spot`, checked: the model and the explicit rates (family or type -> reclaims
    per pool-hour)."""

    model: str = "none"  # "none" | "advisor" | "measured"
    rates: Mapping[str, float] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """Whether any pool is ever reclaimed by the market."""
        return self.model != "none" or any(r > 0 for r in self.rates.values())


@dataclass(frozen=True, slots=True)
class WorldConfig:
    """`spec.world`, checked. None on a `LoadedScenario`: the scenario has no `world` block."""

    spot: SpotWorld = field(default_factory=SpotWorld)


def load_world(
    sc: Scenario, catalog: Catalog, fail: Callable[[FieldPath, str], Exception]
) -> WorldConfig | None:
    """`sc.spec.world`, checked against `catalog` (`fail(path, message)` makes the loader's
    one-line error, which is raised)."""
    world = sc.spec.world
    if world is None:
        return None
    if world.spot is None:
        return WorldConfig()
    spot = world.spot
    families = {catalog.info(name).family for name in catalog.names}
    names = set(catalog.names)
    rates: dict[str, float] = {}
    for key, rate in spot.rate_per_hour.items():
        path: FieldPath = ("world", "spot", "ratePerHour", key)
        if key not in names and key not in families:
            hint = closest_name(key, sorted(names | families))
            raise fail(
                path,
                f"{key!r} is not an instance family or type in the catalog"
                + (f" (did you mean {hint!r}?)" if hint else ""),
            )
        if not math.isfinite(rate) or rate < 0 or rate > MAX_RATE_PER_HOUR:
            raise fail(
                path,
                f"{rate!r} is not a rate gpucap runs: reclaims per pool-hour, from 0 to "
                f"{MAX_RATE_PER_HOUR:g}",
            )
        rates[key] = float(rate)
    if spot.model == "advisor" and not advisor_buckets(sc.spec.region):
        raise fail(
            ("world", "spot", "model"),
            f"the bundled Spot Instance Advisor extract has no GPU types for {sc.spec.region}",
        )
    return WorldConfig(SpotWorld(spot.model, rates))


@functools.cache
def _advisor() -> dict[str, dict[str, list[int]]]:
    text = files("gpucap.data").joinpath("world/spot-advisor.json").read_text(encoding="utf-8")
    regions: dict[str, dict[str, list[int]]] = json.loads(text)["regions"]
    return regions


def advisor_buckets(region: str) -> dict[str, int]:
    """The Spot Instance Advisor's interruption bucket (0 `<5%` .. 4 `>20%`) of each GPU-family
    type in `region` (Linux), from the bundled extract (`data/world/SPOT-SOURCES.md`)."""
    return {name: r_s[0] for name, r_s in _advisor().get(region, {}).items()}
