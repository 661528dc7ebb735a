"""Instance types and offerings as the scheduler sees them (`pkg/cloudprovider/types.go`).

An `InstanceType` is a name, its requirements (every well-known label: `In` its values, or
`DoesNotExist`), capacity, allocatable and offerings; an `Offering` is one zone x capacity type
with a price and whether it is available now (not ICE'd, priced, compatible). The cloud provider
builds them (`cloudprovider/aws/catalog.py`); the scheduler only reads them.

The helpers here are Karpenter's: which offerings a requirement set allows, price ordering (the
cheapest available compatible offering; gpucap breaks ties by name where Go's sort is unstable),
minValues accounting and truncation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "MAX_INSTANCE_TYPES",
    "InstanceType",
    "Offering",
    "cheapest_offering",
    "compatible_offerings",
    "order_by_price",
    "satisfies_min_values",
    "truncate",
]

# kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go:
# a NodeClaim carries at most this many instance types (60 before core v1.7.0).
MAX_INSTANCE_TYPES = 600


@dataclass(frozen=True, slots=True)
class Offering:
    """One zone x capacity type of an instance type, price in USD/hour."""

    zone: str
    capacity_type: str
    price: float
    available: bool

    def allowed_by(self, reqs: Requirements) -> bool:
        """Karpenter's offering compatibility: the zone and capacity type are allowed."""
        zone = reqs.get(ZONE)
        ct = reqs.get(CAPACITY_TYPE)
        return (zone is None or zone.has(self.zone)) and (ct is None or ct.has(self.capacity_type))


@dataclass(frozen=True, slots=True, eq=False)
class InstanceType:
    """What the scheduler needs of an instance type. Compared by identity."""

    name: str
    requirements: Requirements
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    offerings: tuple[Offering, ...]
    # Memoised per requirement set: the same claim requirements are asked about many times.
    _cheapest: dict[Requirements, float | None] = field(
        default_factory=dict, repr=False, compare=False
    )

    def cheapest_price(self, reqs: Requirements) -> float | None:
        """The price of the cheapest available offering `reqs` allows; None when there is none."""
        if reqs in self._cheapest:
            return self._cheapest[reqs]
        best = cheapest_offering(self, reqs)
        price = best.price if best is not None else None
        self._cheapest[reqs] = price
        return price

    def has_available_offering(self, reqs: Requirements) -> bool:
        return self.cheapest_price(reqs) is not None


def compatible_offerings(it: InstanceType, reqs: Requirements) -> list[Offering]:
    """Available offerings of `it` that `reqs` allows."""
    return [o for o in it.offerings if o.available and o.allowed_by(reqs)]


def cheapest_offering(it: InstanceType, reqs: Requirements) -> Offering | None:
    offerings = compatible_offerings(it, reqs)
    if not offerings:
        return None
    return min(offerings, key=lambda o: (o.price, o.capacity_type, o.zone))


def order_by_price(types: Iterable[InstanceType], reqs: Requirements) -> list[InstanceType]:
    """Karpenter's `OrderByPrice`; types without an allowed offering go last; ties by name."""

    def key(it: InstanceType) -> tuple[float, str]:
        price = it.cheapest_price(reqs)
        return (price if price is not None else float("inf"), it.name)

    return sorted(types, key=key)


def satisfies_min_values(
    types: Sequence[InstanceType], reqs: Requirements
) -> tuple[int, dict[str, int]]:
    """Karpenter's `SatisfiesMinValues`: walking `types` in order, how many are needed until every
    requirement with minValues has seen that many distinct values, and for each key that never
    gets there, how many distinct values it reached (empty when satisfied)."""
    wanted = {k: r.min_values for k, r in reqs.items() if r.min_values is not None}
    if not wanted:
        return 0, {}
    seen: dict[str, set[str]] = {k: set() for k in wanted}
    for i, it in enumerate(types):
        for key in wanted:
            seen[key].update(it.requirements.get_or_exists(key).values)
        if all(len(seen[k]) >= n for k, n in wanted.items()):
            return i + 1, {}
    return len(types), {k: len(seen[k]) for k, n in wanted.items() if len(seen[k]) < n}


def truncate(
    types: Sequence[InstanceType], reqs: Requirements, limit: int = MAX_INSTANCE_TYPES
) -> tuple[list[InstanceType], dict[str, int]]:
    """Order by price and keep `limit`; report minValues keys the kept list no longer meets."""
    ordered = order_by_price(types, reqs)[:limit]
    _, unmet = satisfies_min_values(ordered, reqs)
    return ordered, unmet
