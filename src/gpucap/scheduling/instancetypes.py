"""Instance types and offerings as the scheduler sees them (`pkg/cloudprovider/types.go`).

An `InstanceType` is a name, its requirements (every well-known label: `In` its values, or
`DoesNotExist`), capacity, allocatable and offerings; an `Offering` is one zone x capacity type
with a price and whether it is available now (not ICE'd, priced, compatible), or, for capacity
type `reserved`, one capacity reservation (its id, type, whether interruptible and how many
instances it has free: Karpenter's `ReservationCapacity`). An offering's requirements are its
zone and capacity type and the three reservation labels: a reserved offering's values,
`DoesNotExist` for the others (aws `offering/base_resolver.go`,
`reserved_capacity_resolver.go`). The cloud
provider builds them (`cloudprovider/aws/instancetype/resolve.py`, reserved ones in
`instancetype/provider.py`); the scheduler only reads them.

The helpers here are Karpenter's: which offerings a requirement set allows, price ordering (the
cheapest available compatible offering; gpucap breaks ties by name where Go's sort is unstable),
minValues accounting and truncation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpucap.apis.labels import (
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_TYPE,
    ZONE,
)
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = [
    "MAX_INSTANCE_TYPES",
    "InstanceType",
    "InstanceTypeTable",
    "Mask",
    "Offering",
    "OfferingKey",
    "allows_no_reservation",
    "cheapest_offering",
    "compatible_offerings",
    "offering_key",
    "order_by_price",
    "reservation_requirements",
    "satisfies_min_values",
    "truncate",
]

# kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go:
# a NodeClaim carries at most this many instance types (60 before core v1.7.0).
MAX_INSTANCE_TYPES = 600

# A set of a table's instance types, one boolean per type in the table's order: what the
# scheduler narrows a NodeClaim's options with (`InstanceTypeTable.types_of` reads it back).
Mask = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass(frozen=True, slots=True)
class Offering:
    """One zone x capacity type of an instance type, price in USD/hour; a reserved one is one
    capacity reservation (`reservation_id` set, see the module docstring)."""

    zone: str
    capacity_type: str
    price: float
    available: bool
    reservation_id: str = ""
    reservation_type: str = ""  # "default" | "capacity-block" (reserved offerings only)
    interruptible: bool = False
    reservation_capacity: int = 0  # instances the reservation has free (Karpenter's cache)

    def allowed_by(self, reqs: Requirements) -> bool:
        """Karpenter's offering compatibility (`reqs.IsCompatible(offering requirements)`):
        the zone and capacity type are allowed, and so are its reservation labels."""
        zone = reqs.get(ZONE)
        ct = reqs.get(CAPACITY_TYPE)
        return (
            (zone is None or zone.has(self.zone))
            and (ct is None or ct.has(self.capacity_type))
            and self.reservation_allowed(reservation_requirements(reqs))
        )

    def reservation_allowed(self, reservation: _Reservation) -> bool:
        """Whether the reservation labels' requirements (`reservation_requirements`) allow
        this offering: a reserved one's values, or, for spot and on-demand, their absence (a
        `NotIn` or `DoesNotExist` only: Karpenter's `Intersects` lets two negative
        requirements meet)."""
        if reservation is None:
            return True
        if not self.reservation_id:
            return allows_no_reservation(reservation)
        values = (self.reservation_id, self.reservation_type, _bool(self.interruptible))
        return all(r is None or r.has(v) for r, v in zip(reservation, values, strict=True))


_ABSENT = frozenset({"NotIn", "DoesNotExist"})
# The requirements of the three reservation labels, or None when the set has none of them.
_Reservation = tuple[Requirement | None, Requirement | None, Requirement | None] | None
# What every offering question reads of a requirement set (the memo key of its answers).
OfferingKey = tuple[Requirement | None, Requirement | None, _Reservation]


def allows_no_reservation(reservation: _Reservation) -> bool:
    """Whether the reservation labels' requirements allow a spot or on-demand offering (one
    without the labels): each is absent, `NotIn` or `DoesNotExist`."""
    return reservation is None or all(r is None or r.operator in _ABSENT for r in reservation)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def reservation_requirements(reqs: Requirements) -> _Reservation:
    """The requirements on the reservation labels (id, type, interruptible), None when there
    is none (nearly always: only NodePools and pods that name a reservation have them)."""
    rid = reqs.get(CAPACITY_RESERVATION_ID)
    rtype = reqs.get(CAPACITY_RESERVATION_TYPE)
    rint = reqs.get(CAPACITY_RESERVATION_INTERRUPTIBLE)
    if rid is None and rtype is None and rint is None:
        return None
    return (rid, rtype, rint)


def offering_key(reqs: Requirements) -> OfferingKey:
    """What offering compatibility reads of `reqs`: its zone, capacity-type and reservation
    requirements (the key of every per-requirement memo of offerings)."""
    return (reqs.get(ZONE), reqs.get(CAPACITY_TYPE), reservation_requirements(reqs))


@dataclass(frozen=True, slots=True, eq=False)
class InstanceType:
    """What the scheduler needs of an instance type. Compared by identity."""

    name: str
    requirements: Requirements
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    offerings: tuple[Offering, ...]
    # Memoised by `offering_key`, the only requirements offerings depend on.
    _cheapest: dict[OfferingKey, float | None] = field(
        default_factory=dict, repr=False, compare=False
    )

    _compatible: dict[Requirements, bool] = field(default_factory=dict, repr=False, compare=False)

    def cheapest_price(self, reqs: Requirements) -> float | None:
        """The price of the cheapest available offering `reqs` allows; None when there is none."""
        key = offering_key(reqs)
        try:
            return self._cheapest[key]
        except KeyError:
            pass
        best = cheapest_offering(self, reqs)
        price = best.price if best is not None else None
        self._cheapest[key] = price
        return price

    def has_available_offering(self, reqs: Requirements) -> bool:
        return self.cheapest_price(reqs) is not None

    def is_compatible(self, reqs: Requirements) -> bool:
        """Karpenter's instance-type check: the type's requirements intersect `reqs`.

        Memoised per requirement set: a scheduling pass asks about the same sets many times.
        """
        try:
            return self._compatible[reqs]
        except KeyError:
            ok = self.requirements.intersects(reqs) is None
            self._compatible[reqs] = ok
            return ok


class InstanceTypeTable:
    """A fixed list of instance types with their allocatable as an integer matrix, so "which of
    these fit this request" is one vectorised comparison, plus per-pass memos of requirement
    compatibility and offering availability. One per NodeClaim template (built by the scheduler).
    """

    def __init__(self, types: Sequence[InstanceType]) -> None:
        self.types = list(types)
        self.index = {it.name: i for i, it in enumerate(self.types)}
        # The types with a reserved offering (in table order): the only ones a NodeClaim can
        # reserve through (`scheduling/nodeclaim.py`); empty without reservations.
        self.reserved_rows: tuple[int, ...] = tuple(
            i
            for i, it in enumerate(self.types)
            if any(o.capacity_type == "reserved" for o in it.offerings)
        )
        self.resources = sorted({k for it in self.types for k in it.allocatable})
        self.column = {k: j for j, k in enumerate(self.resources)}
        self.allocatable = np.array(
            [[it.allocatable.get(k, 0) for k in self.resources] for it in self.types],
            dtype=np.int64,
        ).reshape(len(self.types), len(self.resources))
        self.capacity_resources = sorted({k for it in self.types for k in it.capacity})
        self.capacity_column = {k: j for j, k in enumerate(self.capacity_resources)}
        self.capacity = np.array(
            [[it.capacity.get(k, 0) for k in self.capacity_resources] for it in self.types],
            dtype=np.int64,
        ).reshape(len(self.types), len(self.capacity_resources))
        # Karpenter's Fits fails outright when any allocatable value is negative.
        self.any_negative: np.ndarray[Any, np.dtype[np.bool_]] = np.asarray(
            (self.allocatable < 0).any(axis=1), dtype=np.bool_
        )
        self.not_negative: np.ndarray[Any, np.dtype[np.bool_]] = ~self.any_negative
        self.negative = bool(self.any_negative.any())
        self.by_column = np.ascontiguousarray(self.allocatable.T)
        # Compatibility reads only the keys some type defines (`Requirements.intersects` skips
        # the others), so requirement sets that differ elsewhere (a NodePool's name, its own
        # labels, a planned node's hostname) share one computation: the memo is keyed by the
        # requirements on those keys, in a fixed key order (None for a key not required).
        self.keys = frozenset(k for it in self.types for k in it.requirements)
        self._key_order = tuple(sorted(self.keys))
        self._compatible: dict[
            tuple[Requirement | None, ...], np.ndarray[Any, np.dtype[np.bool_]]
        ] = {}
        self._prices: dict[OfferingKey, np.ndarray[Any, np.dtype[np.float64]]] = {}
        by_name = sorted(range(len(self.types)), key=lambda i: self.types[i].name)
        self.name_rank = np.empty(len(self.types), dtype=np.int64)
        self.name_rank[by_name] = np.arange(len(self.types))
        self._offered: dict[OfferingKey, np.ndarray[Any, np.dtype[np.bool_]]] = {}
        # Capacity types as bits (sorted names), for `capacity_types`.
        self.capacity_type_names = sorted(
            {o.capacity_type for it in self.types for o in it.offerings}
        )
        self._capacity_bits: dict[OfferingKey, np.ndarray[Any, np.dtype[np.int64]]] = {}
        # `most_allocatable` per mask (its bytes): planned NodeClaims narrow to a few distinct
        # option sets (749 computations, 16 distinct masks at Karpenter's 1,000-pod bench).
        self._most: dict[bytes, dict[str, int]] = {}
        self._max_capacity: dict[bytes, list[int]] = {}
        # Per capacity column, the largest value of any type (`within` skips a column whose
        # limit no type reaches).
        self._largest_capacity: list[int] = (
            self.capacity.max(axis=0).tolist() if len(self.types) else []
        )
        self._within: dict[
            tuple[tuple[int, int], ...], tuple[np.ndarray[Any, np.dtype[np.bool_]], bool]
        ] = {}

    def fits(self, requests: Mapping[str, int]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Per type (table order): whether `requests` fit its allocatable (Karpenter's Fits).
        A new array (callers narrow it in place)."""
        mask: np.ndarray[Any, np.dtype[np.bool_]] | None = None
        for k, v in requests.items():
            j = self.column.get(k)
            if j is None:
                if v > 0:
                    return np.zeros(len(self.types), dtype=np.bool_)
                continue
            # Over a contiguous column (the transposed copy); the first comparison is the mask.
            column = self.by_column[j] >= min(v, _INT64_MAX)
            if mask is None:
                mask = column
            else:
                mask &= column
        if mask is None:
            return np.copy(self.not_negative)
        if self.negative:
            mask &= self.not_negative
        return mask

    def most_allocatable(self, mask: np.ndarray[Any, np.dtype[np.bool_]]) -> dict[str, int]:
        """Per resource, the most any selected type has allocatable (no entry when the mask
        selects nothing). Memoised per mask; the answer is shared: callers only read it."""
        key = mask.tobytes()
        most = self._most.get(key)
        if most is None:
            most = {}
            chosen = self.allocatable[mask]
            if len(chosen):
                # One column-wise maximum over the selected rows (columns: `resources`).
                most = dict(zip(self.resources, chosen.max(axis=0).tolist(), strict=True))
            if len(self._most) >= _MEMO_MAX:
                self._most.clear()
            self._most[key] = most
        return most

    def compatible(self, reqs: Requirements) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Per type: `it.requirements.intersects(reqs) is None` (memoised per requirements on
        the keys the types define, the only ones `intersects` reads)."""
        key = reqs.on_keys(self._key_order)
        mask = self._compatible.get(key)
        if mask is None:
            on_keys = reqs.only(self.keys)
            mask = np.fromiter(
                (it.requirements.intersects(on_keys) is None for it in self.types),
                dtype=np.bool_,
                count=len(self.types),
            )
            self._compatible[key] = mask
        return mask

    def offered(self, reqs: Requirements) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Per type: it has an available offering `reqs` allows (memoised by `offering_key`,
        the only requirements offerings depend on)."""
        key = offering_key(reqs)
        mask = self._offered.get(key)
        if mask is None:
            mask = np.fromiter(
                (it.has_available_offering(reqs) for it in self.types),
                dtype=np.bool_,
                count=len(self.types),
            )
            self._offered[key] = mask
        return mask

    def within(self, limits: Mapping[str, int]) -> tuple[np.ndarray[Any, np.dtype[np.bool_]], bool]:
        """Per type: its capacity is at most `limits` for every limited resource (Karpenter's
        `filterByRemainingResources`; a resource the type lacks counts as 0), and whether any
        type is. Memoised per binding limit (a NodePool's remaining limits are rebuilt by
        every scheduler, mostly to the same values): the mask is shared, only read."""
        largest = self._largest_capacity
        binding: list[tuple[int, int]] = []
        for k, v in limits.items():
            j = self.capacity_column.get(k)
            if j is None:
                if v < 0:
                    binding = [(-1, -1)]  # nothing is within a negative limit it lacks
                    break
                continue
            if largest[j] <= v:
                continue  # every type is within this limit (the common case: limits far away)
            binding.append((j, v))
        key = tuple(binding)
        hit = self._within.get(key)
        if hit is not None:
            return hit
        if key == ((-1, -1),):
            mask = np.zeros(len(self.types), dtype=np.bool_)
        else:
            mask = np.ones(len(self.types), dtype=np.bool_)
            for j, v in binding:
                mask &= self.capacity[:, j] <= v
        if len(self._within) >= _MEMO_MAX:
            self._within.clear()
        out = self._within[key] = (mask, bool(mask.any()))
        return out

    def max_capacity(
        self, mask: np.ndarray[Any, np.dtype[np.bool_]], resources: Iterable[str]
    ) -> dict[str, int]:
        """The largest capacity among the selected types, for each of `resources`."""
        if not mask.any():
            return {}
        key = mask.tobytes()
        per_column = self._max_capacity.get(key)
        if per_column is None:
            # Every column at once, memoised per mask (claims share a few option sets).
            per_column = self.capacity[mask].max(axis=0).tolist()
            if len(self._max_capacity) >= _MEMO_MAX:
                self._max_capacity.clear()
            self._max_capacity[key] = per_column
        out: dict[str, int] = {}
        for k in resources:
            j = self.capacity_column.get(k)
            out[k] = per_column[j] if j is not None else 0
        return out

    def prices(self, reqs: Requirements) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Per type: the cheapest available offering `reqs` allows (inf when none), memoised
        by zone and capacity type."""
        key = offering_key(reqs)
        prices = self._prices.get(key)
        if prices is None:
            prices = np.fromiter(
                (p if (p := it.cheapest_price(reqs)) is not None else np.inf for it in self.types),
                dtype=np.float64,
                count=len(self.types),
            )
            self._prices[key] = prices
        return prices

    def order_by_price(
        self, mask: np.ndarray[Any, np.dtype[np.bool_]], reqs: Requirements
    ) -> list[InstanceType]:
        """`order_by_price` of the selected types (ties by name), vectorised."""
        return [self.types[i] for i in self.order_by_price_index(mask, reqs)]

    def order_by_price_index(
        self, mask: np.ndarray[Any, np.dtype[np.bool_]], reqs: Requirements
    ) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The table indices of `order_by_price`'s answer."""
        idx = np.flatnonzero(mask)
        prices = self.prices(reqs)[idx]
        ranks = self.name_rank[idx]
        order = np.lexsort((ranks, prices))
        return idx[order]

    def capacity_types(
        self, index: np.ndarray[Any, np.dtype[np.intp]], reqs: Requirements
    ) -> list[str]:
        """The capacity types of the available offerings `reqs` allows, across the types at
        `index` (sorted); bits per type memoised by `offering_key`, the only requirements
        offerings depend on."""
        key = offering_key(reqs)
        bits = self._capacity_bits.get(key)
        if bits is None:
            column = {name: 1 << j for j, name in enumerate(self.capacity_type_names)}
            bits = np.fromiter(
                (
                    sum({column[o.capacity_type] for o in compatible_offerings(it, reqs)})
                    for it in self.types
                ),
                dtype=np.int64,
                count=len(self.types),
            )
            self._capacity_bits[key] = bits
        found = int(np.bitwise_or.reduce(bits[index])) if len(index) else 0
        return [n for j, n in enumerate(self.capacity_type_names) if found >> j & 1]

    def mask_of(self, names: Iterable[str]) -> np.ndarray[Any, np.dtype[np.bool_]]:
        mask = np.zeros(len(self.types), dtype=np.bool_)
        for name in names:
            i = self.index.get(name)
            if i is not None:
                mask[i] = True
        return mask

    def types_of(self, mask: np.ndarray[Any, np.dtype[np.bool_]]) -> list[InstanceType]:
        """The types a mask selects, in table order."""
        return [self.types[i] for i in np.flatnonzero(mask)]


_INT64_MAX = 2**63 - 1
# Bound of the per-mask memos (a table lives as long as its types; masks are few per pass).
_MEMO_MAX = 4096


def compatible_offerings(it: InstanceType, reqs: Requirements) -> list[Offering]:
    """Available offerings of `it` that `reqs` allows (`Offering.allowed_by`, with the two
    requirements looked up once per type rather than once per offering)."""
    zone = reqs.get(ZONE)
    ct = reqs.get(CAPACITY_TYPE)
    reservation = reservation_requirements(reqs)
    return [
        o
        for o in it.offerings
        if o.available
        and (zone is None or zone.has(o.zone))
        and (ct is None or ct.has(o.capacity_type))
        and (reservation is None or o.reservation_allowed(reservation))
    ]


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
