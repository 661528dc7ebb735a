"""Karpenter AWS's launch filters as named steps, each saying what it kept and what it rejected.

aws `pkg/providers/instance/filter/filter.go`: every filter has a `Name` and a `FilterReject`
that splits the instance types into the ones that go on (with their offerings narrowed where
the filter prunes offerings) and the ones it drops whole; `instance.go: filterInstanceTypes`
runs them in order, fails with "all requested instance types were unavailable during launch"
as soon as one leaves nothing, then truncates to the cheapest 60. gpucap's steps, in that
order (`STEPS`, then `truncate_step`):

1. `compatible-available-filter`: compatible requirements, requests that fit, an available
   offering the claim allows;
2. `capacity-reservation-type-filter`: when the claim allows `reserved`, one kind of
   reservation only (default, capacity block or interruptible: CreateFleet takes one market
   type), the kind with the cheapest offering (ties: default, capacity block, interruptible);
   the types with one keep only those offerings, the others are dropped;
3. `capacity-block-filter`: when that kind is capacity blocks, the one type with the cheapest
   capacity-block offering, with that offering only (CreateFleet takes one block);
4. `reserved-offering-filter`: per type and zone the reserved offering with the most free
   instances (CreateFleet takes one offering per pool); types without one dropped;
5. `exotic-instance-filter`: metal sizes and accelerator capacity, unless nothing else is left;
6. `spot-offering-filter`: spot offerings priced above the cheapest on-demand one;
7. `truncate`: the 60 cheapest (core `InstanceTypes.Truncate`; a minValues shortfall under
   the Strict policy is an error).
Steps 2-4 leave the types as they are when none has an available allowed reserved offering
(a claim that does not allow `reserved`, or a NodeClass without reservations).

The semantics of each step are `launch.py`'s steps 1-5 (its docstring says where Karpenter's
code says more than the design notes). These functions are the plain, one-type-at-a-time
reference: `launch.launch_options` runs the same steps on `LaunchTable` arrays, and a
hypothesis law holds the two equal (tests/cloudprovider/aws/test_launch_vectorised.py).
Called by `launch.py` (`reference_filter_instance_types`, `LaunchTrace.steps`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE
from gpucap.cloudprovider.aws.instance.launchtable import is_exotic
from gpucap.cloudprovider.types import InsufficientCapacityError
from gpucap.runtime.memo import IdentityMemo
from gpucap.scheduling.instancetypes import (
    InstanceType,
    Offering,
    compatible_offerings,
    truncate,
)
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirements
from gpucap.scheduling.resources import fits

__all__ = [
    "ALL_UNAVAILABLE",
    "CAPACITY_BLOCK",
    "CAPACITY_BLOCK_TYPE",
    "COMPATIBLE_AVAILABLE",
    "EXOTIC",
    "MIN_VALUES_TRUNCATED",
    "ON_DEMAND",
    "RESERVATION_TYPE",
    "RESERVED",
    "RESERVED_OFFERING",
    "SPOT",
    "SPOT_OFFERING",
    "STEPS",
    "TRUNCATE",
    "Filtered",
    "LaunchFilter",
    "capacity_blocks",
    "capacity_reservation_types",
    "compatible_available",
    "exotic_instances",
    "reserved_offerings",
    "run_filters",
    "spot_offerings",
    "truncate_step",
]

ON_DEMAND: Final = "on-demand"
SPOT: Final = "spot"
RESERVED: Final = "reserved"
CAPACITY_BLOCK_TYPE: Final = "capacity-block"

# Karpenter's messages (aws instance.go: filterInstanceTypes), after "insufficient capacity, ".
ALL_UNAVAILABLE: Final = "all requested instance types were unavailable during launch"
MIN_VALUES_TRUNCATED: Final = (
    "truncating instance types based on the passed-in requirements, validating minValues, "
    "minValues requirement is not met for label(s)"
)

# The steps' names: Karpenter's `Name()` of each filter (filter.go); `truncate` is gpucap's.
COMPATIBLE_AVAILABLE: Final = "compatible-available-filter"
RESERVATION_TYPE: Final = "capacity-reservation-type-filter"
CAPACITY_BLOCK: Final = "capacity-block-filter"
RESERVED_OFFERING: Final = "reserved-offering-filter"
EXOTIC: Final = "exotic-instance-filter"
SPOT_OFFERING: Final = "spot-offering-filter"
TRUNCATE: Final = "truncate"


@dataclass(frozen=True, slots=True)
class Filtered:
    """One step's answer (`FilterReject`): `kept` goes on to the next step, in order (a type
    whose offerings the step pruned is a new `InstanceType` with the remaining ones); `rejected`
    are the input types it dropped whole, in input order."""

    name: str
    kept: list[InstanceType]
    rejected: list[InstanceType]


# A filter over a claim's requirements and requests (base units).
LaunchFilter = Callable[[Sequence[InstanceType], Requirements, Mapping[str, int]], Filtered]


# ---- 1. compatible and available ----------------------------------------------------------------


def _build_name_index(
    types: tuple[InstanceType, ...],
) -> tuple[dict[str, list[int]], list[int]]:
    """The positions of the types whose own instance-type requirement is `In` one name, by
    that name, and the positions of the others."""
    by_name: dict[str, list[int]] = {}
    others: list[int] = []
    for i, it in enumerate(types):
        own = it.requirements.get(INSTANCE_TYPE)
        if (
            own is not None
            and not own.complement
            and len(own.values) == 1
            and own.gte is None
            and own.lte is None
        ):
            (name,) = own.values
            by_name.setdefault(name, []).append(i)
        else:
            others.append(i)
    return by_name, others


# Per type tuple (the cloud provider's answer, by identity). Read-only for its callers.
_name_index: IdentityMemo[tuple[InstanceType, ...], tuple[dict[str, list[int]], list[int]]] = (
    IdentityMemo(_build_name_index, size=64)
)


def compatible_available(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`CompatibleAvailableFilter`: the types whose requirements the claim's are compatible
    with, whose allocatable fits the requests and that have an available allowed offering."""
    positions: Sequence[int] = range(len(types))
    named = reqs.get(INSTANCE_TYPE)
    if named is not None and not named.complement and named.values:
        # A claim names its types (`In`): a type whose own instance-type requirement cannot
        # meet that list fails `is_compatible` below anyway; dropping it first keeps the
        # result and its order, and spares the full check of every type in the catalog on
        # every launch. For a tuple (the provider's answer) the types that are `In` one name
        # are looked up by name (for them `has_intersection` is that name being in the list).
        if isinstance(types, tuple) and named.gte is None and named.lte is None:
            by_name, others = _name_index(types)
            keep = {i for name in named.values for i in by_name.get(name, ())}
            keep.update(
                i
                for i in others
                if (own := types[i].requirements.get(INSTANCE_TYPE)) is None
                or named.has_intersection(own)
            )
            positions = sorted(keep)
        else:
            positions = [
                i
                for i, it in enumerate(types)
                if (own := it.requirements.get(INSTANCE_TYPE)) is None
                or named.has_intersection(own)
            ]
    passed = {
        i
        for i in positions
        if fits(requests, (it := types[i]).allocatable)
        and it.has_available_offering(reqs)
        and reqs.is_compatible(it.requirements, ALLOW_UNDEFINED_WELL_KNOWN)
    }
    return _split(COMPATIBLE_AVAILABLE, types, passed)


def _split(name: str, types: Sequence[InstanceType], passed: set[int]) -> Filtered:
    """The types at the `passed` positions kept, the others rejected, both in input order."""
    kept = [it for i, it in enumerate(types) if i in passed]
    rejected = [it for i, it in enumerate(types) if i not in passed]
    return Filtered(name, kept, rejected)


# ---- 2-4. reservations ------------------------------------------------------------------------

# `capacityReservationTypeFilter`'s tie-break between kinds of reservation of equal price.
_KIND_PRIORITY: Final = {("default", False): 0, ("capacity-block", False): 1, ("default", True): 2}


def _reserved(it: InstanceType, reqs: Requirements) -> list[Offering]:
    """`it`'s available reserved offerings `reqs` allows, in offering order."""
    return [o for o in compatible_offerings(it, reqs) if o.capacity_type == RESERVED]


def capacity_reservation_types(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`capacityReservationTypeFilter`: when the claim allows `reserved`, the kind of
    reservation (type, interruptible) whose cheapest available allowed offering is cheapest
    (ties by `_KIND_PRIORITY`); its types keep only their offerings of that kind (their spot and
    on-demand ones too are dropped), the other types are rejected. No such offering: every type
    stays as it was. Karpenter returns the kept types in map order; here in input order."""
    if not reqs.get_or_exists(CAPACITY_TYPE).has(RESERVED):
        return Filtered(RESERVATION_TYPE, list(types), [])
    reserved = [_reserved(it, reqs) for it in types]
    cheapest: dict[tuple[str, bool], float] = {}
    for found in reserved:
        for o in found:
            kind = (o.reservation_type, o.interruptible)
            if o.price < cheapest.get(kind, math.inf):
                cheapest[kind] = o.price
    if not cheapest:
        return Filtered(RESERVATION_TYPE, list(types), [])
    chosen = min(cheapest, key=lambda k: (cheapest[k], _KIND_PRIORITY.get(k, len(_KIND_PRIORITY))))
    kept: list[InstanceType] = []
    rejected: list[InstanceType] = []
    for it, mine in zip(types, reserved, strict=True):
        if any((o.reservation_type, o.interruptible) == chosen for o in mine):
            offerings = tuple(
                o
                for o in it.offerings
                if o.capacity_type == RESERVED and (o.reservation_type, o.interruptible) == chosen
            )
            kept.append(_with_offerings(it, offerings))
        else:
            rejected.append(it)
    return Filtered(RESERVATION_TYPE, kept, rejected)


def capacity_blocks(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`capacityBlockFilter`: when the claim allows `reserved` and the first offering of the
    types is a capacity block's (after step 2, all are when that kind was chosen), the one type
    with the cheapest available allowed capacity-block offering (the first on ties), with that
    offering only; the others rejected. Otherwise every type stays as it was."""
    if not reqs.get_or_exists(CAPACITY_TYPE).has(RESERVED):
        return Filtered(CAPACITY_BLOCK, list(types), [])
    first = next((o for it in types for o in it.offerings), None)
    if first is None or first.reservation_type != CAPACITY_BLOCK_TYPE:
        return Filtered(CAPACITY_BLOCK, list(types), [])
    best: tuple[InstanceType, Offering] | None = None
    for it in types:
        blocks = [o for o in _reserved(it, reqs) if o.reservation_type == CAPACITY_BLOCK_TYPE]
        if not blocks:
            continue
        offering = min(blocks, key=lambda o: o.price)  # the first of equal price
        if best is None or best[1].price > offering.price:
            best = (it, offering)
    if best is None:
        return Filtered(CAPACITY_BLOCK, list(types), [])
    chosen, offering = best
    return Filtered(
        CAPACITY_BLOCK,
        [_with_offerings(chosen, (offering,))],
        [it for it in types if it.name != chosen.name],
    )


def reserved_offerings(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`reservedOfferingFilter`: when the claim allows `reserved`, per type and zone the
    available allowed reserved offering with the most free instances (the first on ties),
    every other offering dropped; types without one rejected. When no type has one, every
    type stays as it was."""
    if not reqs.get_or_exists(CAPACITY_TYPE).has(RESERVED):
        return Filtered(RESERVED_OFFERING, list(types), [])
    kept: list[InstanceType] = []
    rejected: list[InstanceType] = []
    for it in types:
        by_zone: dict[str, Offering] = {}
        for offering in _reserved(it, reqs):
            current = by_zone.get(offering.zone)
            if current is None or offering.reservation_capacity > current.reservation_capacity:
                by_zone[offering.zone] = offering
        if by_zone:
            kept.append(_with_offerings(it, tuple(by_zone.values())))
        else:
            rejected.append(it)
    if not kept:
        return Filtered(RESERVED_OFFERING, list(types), [])
    return Filtered(RESERVED_OFFERING, kept, rejected)


# ---- 3. exotic types ----------------------------------------------------------------------------


def exotic_instances(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`ExoticInstanceTypeFilter` (off when a requirement has minValues): the exotic types
    (`launchtable.is_exotic`) rejected, unless no other type is left."""
    if reqs.has_min_values():
        return Filtered(EXOTIC, list(types), [])
    generic = [it for it in types if not is_exotic(it)]
    if not generic:
        return Filtered(EXOTIC, list(types), [])
    return Filtered(EXOTIC, generic, [it for it in types if is_exotic(it)])


# ---- 4. spot offerings above on-demand ----------------------------------------------------------


def spot_offerings(
    types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`SpotOfferingFilter` (off with minValues, and unless the claim allows both spot and
    on-demand and the types have both kinds of available allowed offering): every spot offering
    priced above the cheapest such on-demand one pruned; a type left with no offering at all
    is rejected."""
    unchanged = Filtered(SPOT_OFFERING, list(types), [])
    if reqs.has_min_values():
        return unchanged
    allowed = reqs.get_or_exists(CAPACITY_TYPE)
    if not (allowed.has(ON_DEMAND) and allowed.has(SPOT)):
        return unchanged
    usable = [o for it in types for o in compatible_offerings(it, reqs)]
    on_demand_prices = [o.price for o in usable if o.capacity_type == ON_DEMAND]
    if not on_demand_prices or not any(o.capacity_type == SPOT for o in usable):
        return unchanged
    ceiling = min(on_demand_prices)
    kept: list[InstanceType] = []
    rejected: list[InstanceType] = []
    for it in types:
        offerings = tuple(
            o for o in it.offerings if not (o.capacity_type == SPOT and o.price > ceiling)
        )
        if len(offerings) == len(it.offerings):
            kept.append(it)
        elif offerings:
            kept.append(_with_offerings(it, offerings))
        else:
            rejected.append(it)
    return Filtered(SPOT_OFFERING, kept, rejected)


# ---- 5. the cheapest 60 -------------------------------------------------------------------------


def truncate_step(
    types: Sequence[InstanceType], reqs: Requirements, limit: int
) -> tuple[Filtered, dict[str, int]]:
    """Core `InstanceTypes.Truncate`: by the cheapest available allowed offering, ties by name,
    keep `limit`; with the minValues keys the kept types no longer meet."""
    kept, unmet = truncate(types, reqs, limit)
    left = {id(it) for it in kept}
    return Filtered(TRUNCATE, kept, [it for it in types if id(it) not in left]), unmet


# aws instance.go `filterInstanceTypes`'s order (truncation follows).
STEPS: Final[tuple[LaunchFilter, ...]] = (
    compatible_available,
    capacity_reservation_types,
    capacity_blocks,
    reserved_offerings,
    exotic_instances,
    spot_offerings,
)


def run_filters(
    types: Sequence[InstanceType],
    reqs: Requirements,
    requests: Mapping[str, int],
    *,
    strict_min_values: bool,
    limit: int,
) -> tuple[tuple[Filtered, ...], InsufficientCapacityError | None]:
    """Every step in order, one type at a time: each step's answer, and Karpenter's error when
    a step leaves nothing or (`strict_min_values`) truncation breaks a minValues requirement.
    The last step's `kept` are the types CreateFleet is offered, cheapest first."""
    done: list[Filtered] = []
    current: Sequence[InstanceType] = types
    for step in STEPS:
        result = step(current, reqs, requests)
        done.append(result)
        if not result.kept:
            return tuple(done), InsufficientCapacityError(ALL_UNAVAILABLE)
        current = result.kept
    last, unmet = truncate_step(current, reqs, limit)
    done.append(last)
    if unmet and strict_min_values:
        return tuple(done), InsufficientCapacityError(MIN_VALUES_TRUNCATED, unmet_min_values=unmet)
    return tuple(done), None


def _with_offerings(it: InstanceType, offerings: tuple[Offering, ...]) -> InstanceType:
    # A fresh object (not dataclasses.replace): the price memo must not be shared.
    return InstanceType(
        name=it.name,
        requirements=it.requirements,
        capacity=it.capacity,
        allocatable=it.allocatable,
        offerings=offerings,
    )
