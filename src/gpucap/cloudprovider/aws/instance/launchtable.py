"""The AWS launch filters' view of a fixed tuple of instance types, as numpy arrays.

`launch.py` runs Karpenter's launch filters for every NodeClaim `plan` previews and every
`create` the simulator makes; one type at a time in Python that is some 4 ms per claim at 400
types. A `LaunchTable` holds, per row (one instance type of the tuple), what those filters read,
so that each filter is a few array operations:

- requirement compatibility, per requirement key: each row's requirement for the key as a small
  integer code (one code per distinct single value `In [v]`, one per other distinct requirement,
  one for "the type does not define the key"), so a claim's requirement on that key is decided
  once per code, not once per type, and the per-row answer is one array index. The answers are
  memoised per (key, claim requirement): claims repeat their zone, capacity-type and NodePool
  requirements;
- allocatable as an integer matrix (Karpenter's `Fits`), the exotic flag (metal size or
  accelerator capacity);
- the offerings of every row laid end to end (zone code, capacity-type code, price, available,
  the `Offering` objects themselves), with each row's first offering index, so "has an available
  allowed offering", "cheapest allowed offering" and the per-offering pruning of the spot filter
  are masks and segment reductions;
- name ranks (the order of `sorted` on the names) and zone ranks for the price orderings' ties.

Exactness: every answer is the one `Requirements.is_compatible`, `resources.fits`,
`InstanceType.cheapest_price` etc. give for that type; `exact` is False when the arrays cannot
say so (a NaN price, whose comparisons Python's `min`/`sorted` treat order-dependently; an
allocatable beyond int64; a reserved offering: the reservation filters pick among
reservations by type and free capacity, which the arrays do not hold), and `launch.py` then
takes its reference path. The requirements on the reservation labels are answered here all the
same (every offering of an exact table is spot or on-demand: allowed when they allow absence).
Tables are immutable after construction apart from their memos. Built and cached by
`launch.py` per instance-type tuple (by identity, `runtime.memo.IdentityMemo`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import Any, Final

import numpy as np

from gpucap.cloudprovider.aws.instancetype import capacity as cap
from gpucap.scheduling.instancetypes import (
    InstanceType,
    Offering,
    OfferingKey,
    allows_no_reservation,
    offering_key,
)
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirement, Requirements

__all__ = ["EXOTIC_RESOURCES", "LaunchTable", "Mask"]

Mask = np.ndarray[Any, np.dtype[np.bool_]]
Ints = np.ndarray[Any, np.dtype[np.int64]]
Floats = np.ndarray[Any, np.dtype[np.float64]]

# aws pkg/providers/instance/filter/filter.go: capacity that makes a type "exotic".
EXOTIC_RESOURCES: Final = (
    cap.RESOURCE_AWS_NEURON,
    cap.RESOURCE_AWS_NEURON_CORE,
    cap.RESOURCE_AMD_GPU,
    cap.RESOURCE_NVIDIA_GPU,
    cap.RESOURCE_HABANA_GAUDI,
)
_METAL: Final = "metal"
_NEGATIVE: Final = ("NotIn", "DoesNotExist")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
# Memo bounds: cleared when full (the next claims refill them).
_MEMO_SIZE: Final = 4096
# Rows by identities: a key is a tuple of types (16 bytes each with the rows), up to a whole
# catalog's, so a table keeps about 2 MiB of them.
_ROWS_MEMO_BYTES: Final = 2**21
_ROWS_MEMO_MIN: Final = 16


def is_exotic(it: InstanceType) -> bool:
    """aws `ExoticInstanceTypeFilter`: any `instance-size` value containing `metal` (for an
    `Exists`/`NotIn` requirement its listed values, as Karpenter's `Values()` gives them), or
    non-zero capacity of an accelerator resource."""
    sizes = it.requirements.get_or_exists(cap.LABEL_INSTANCE_SIZE).values
    if any(_METAL in size for size in sizes):
        return True
    return any(it.capacity.get(resource, 0) != 0 for resource in EXOTIC_RESOURCES)


class _KeyCodes:
    """One requirement key over the table's rows: a code per row (single values first, then
    the other distinct requirements, then "undefined"), decided per claim requirement."""

    __slots__ = ("code", "groups", "key", "single", "undefined")

    def __init__(self, key: str, types: Sequence[InstanceType]) -> None:
        self.key = key
        self.single: dict[str, int] = {}
        groups: dict[Requirement, int] = {}
        raw: list[tuple[int, int]] = []  # (kind, index): 0 single, 1 group, 2 undefined
        for it in types:
            own = it.requirements.get(key)
            if own is None:
                raw.append((2, 0))
            elif (
                not own.complement and len(own.values) == 1 and own.gte is None and own.lte is None
            ):
                (value,) = own.values
                raw.append((0, self.single.setdefault(value, len(self.single))))
            else:
                raw.append((1, groups.setdefault(own, len(groups))))
        self.groups = list(groups)
        n_single = len(self.single)
        self.undefined = n_single + len(self.groups)
        self.code: Ints = np.fromiter(
            (i if kind == 0 else n_single + i if kind == 1 else self.undefined for kind, i in raw),
            dtype=np.int64,
            count=len(raw),
        )

    def answers(self, incoming: Requirement) -> Mask:
        """Per code: whether a type with that requirement passes `Requirements.is_compatible`'s
        checks on this key for a claim requiring `incoming` (`has_intersection` is symmetric)."""
        out = np.zeros(self.undefined + 1, dtype=np.bool_)
        if not incoming.complement and incoming.gte is None and incoming.lte is None:
            # `In`: the single values it lists (has_intersection of `In [v]` with `incoming` is
            # `incoming.has(v)`, whose answer for a plain `In` is membership).
            values, single = incoming.values, self.single
            if len(values) <= len(single):
                hits = [single[v] for v in values if v in single]
            else:
                hits = [i for v, i in single.items() if v in values]
            out[hits] = True
        else:
            out[: len(self.single)] = np.fromiter(
                (incoming.has(v) for v in self.single), dtype=np.bool_, count=len(self.single)
            )
        negative = incoming.operator in _NEGATIVE
        for i, own in enumerate(self.groups, start=len(self.single)):
            # `Requirements.is_compatible` for a key both sides define. Its `existing is
            # incoming` shortcut becomes value equality (the groups are by value): for equal
            # requirements `has_intersection` is True unless both are NotIn/DoesNotExist, which
            # pass anyway (a complement with gte > lte would differ; `Requirement.new` and
            # `intersection` never build one).
            out[i] = (
                own == incoming
                or own.has_intersection(incoming)
                or (negative and own.operator in _NEGATIVE)
            )
        # A key the claim requires and the type does not define passes (a NodePool's own
        # label); the other direction is `LaunchTable.compatible`'s `_requires`.
        out[self.undefined] = True
        return out


class LaunchTable:
    """The arrays of one instance-type tuple (see the module docstring)."""

    def __init__(self, types: Sequence[InstanceType]) -> None:
        self.types: tuple[InstanceType, ...] = tuple(types)
        n = len(self.types)
        self.row_of: dict[int, int] = {}
        for i, it in enumerate(self.types):
            self.row_of.setdefault(id(it), i)
        names = [it.name for it in self.types]
        # Equal names share a rank, so the rank also identifies the name.
        self.name_rank = _ranks(names)
        # ---- resources
        self.resources = sorted({k for it in self.types for k in it.allocatable})
        self.column = {k: j for j, k in enumerate(self.resources)}
        values = [[it.allocatable.get(k, 0) for k in self.resources] for it in self.types]
        self.exact = all(_INT64_MIN <= v <= _INT64_MAX for row in values for v in row)
        self.allocatable: Ints = np.array(
            values if self.exact else [[0] * len(self.resources)] * n, dtype=np.int64
        ).reshape(n, len(self.resources))
        self.any_negative: Mask = np.asarray((self.allocatable < 0).any(axis=1), dtype=np.bool_)
        # Each resource's column as a contiguous copy: `fits` compares a column per request.
        self._columns: list[Ints] = [
            np.ascontiguousarray(self.allocatable[:, j]) for j in range(len(self.resources))
        ]
        self.exotic: Mask = np.fromiter((is_exotic(it) for it in self.types), np.bool_, count=n)
        # ---- offerings, end to end
        self.offerings: list[Offering] = [o for it in self.types for o in it.offerings]
        counts = np.fromiter((len(it.offerings) for it in self.types), np.int64, count=n)
        self.n_offerings: Ints = counts
        self.start: Ints = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.off_row: Ints = np.repeat(np.arange(n, dtype=np.int64), counts)
        # Sorted, so a zone's code is also its rank (the overrides' last tie-break).
        self.zones = sorted({o.zone for o in self.offerings})
        zone_index = {z: i for i, z in enumerate(self.zones)}
        self.capacity_types = sorted({o.capacity_type for o in self.offerings})
        self.ct_index = {c: i for i, c in enumerate(self.capacity_types)}
        m = len(self.offerings)
        self.off_zone: Ints = np.fromiter(
            (zone_index[o.zone] for o in self.offerings), np.int64, count=m
        )
        self.off_ct: Ints = np.fromiter(
            (self.ct_index[o.capacity_type] for o in self.offerings), np.int64, count=m
        )
        self.price: Floats = np.fromiter((o.price for o in self.offerings), np.float64, count=m)
        self.available: Mask = np.fromiter((o.available for o in self.offerings), np.bool_, count=m)
        self.exact = self.exact and not any(
            math.isnan(o.price) or o.capacity_type == "reserved" for o in self.offerings
        )
        # Rows with offerings, for segment reductions (`reduceat` needs non-empty segments).
        self._seg_rows: Ints = np.flatnonzero(counts > 0)
        self._seg_start: Ints = self.start[self._seg_rows]
        # ---- requirement keys (built on first use) and memos
        self.keys = frozenset(k for it in self.types for k in it.requirements)
        # Per key a type may define but a claim may leave undefined only when well-known: the
        # rows that require it (`In`/`Exists`), which a claim without the key rules out.
        self._requires: dict[str, Mask] = {}
        for key in sorted(self.keys - ALLOW_UNDEFINED_WELL_KNOWN):
            requires = np.fromiter(
                (
                    (own := it.requirements.get(key)) is not None and own.operator not in _NEGATIVE
                    for it in self.types
                ),
                np.bool_,
                count=n,
            )
            if requires.any():
                self._requires[key] = requires
        self._key_codes: dict[str, _KeyCodes] = {}
        self._answers: dict[tuple[str, Requirement], Mask] = {}
        self._allowed: dict[OfferingKey, Mask] = {}
        self._offered: dict[OfferingKey, Mask] = {}
        self._cheapest: dict[OfferingKey, Floats] = {}
        self._rows: dict[tuple[InstanceType, ...], Ints] = {}
        # `launch.py`'s memo of steps 2-7 per outcome of step 1 (see `launch._vectorised`):
        # what they answer depends on the rows step 1 keeps and on a few requirements only.
        self.after_step_one: dict[tuple[Any, ...], Any] = {}

    def __len__(self) -> int:
        return len(self.types)

    def with_availability_of(self, types: Sequence[InstanceType]) -> LaunchTable | None:
        """The table of `types` when they are this table's types but for which offerings are
        available (the provider's answer after an insufficient-capacity mark: the marked types
        are copies with the same requirements, capacity and allocatable objects), made from
        this one without rebuilding what availability does not change; None otherwise."""
        if len(types) != len(self.types) or not self.exact:
            return None
        for new, old in zip(types, self.types, strict=True):
            if new is old:
                continue
            if (
                new.name != old.name
                or new.requirements is not old.requirements
                or new.capacity is not old.capacity
                or new.allocatable is not old.allocatable
                or len(new.offerings) != len(old.offerings)
                or any(
                    (a.zone, a.capacity_type, a.price) != (b.zone, b.capacity_type, b.price)
                    for a, b in zip(new.offerings, old.offerings, strict=True)
                )
            ):
                return None
        table = copy.copy(self)
        table.types = tuple(types)
        table.row_of = {}
        for i, it in enumerate(table.types):
            table.row_of.setdefault(id(it), i)
        table.offerings = [o for it in table.types for o in it.offerings]
        table.available = np.fromiter(
            (o.available for o in table.offerings), np.bool_, count=len(table.offerings)
        )
        # Requirement answers (and `_key_codes`, `_requires`) stay shared: same requirements.
        table._allowed, table._offered, table._cheapest = {}, {}, {}
        # Rows by identity (other objects) and the launch memo (other availability) are not.
        table._rows, table.after_step_one = {}, {}
        return table

    def rows(self, types: Sequence[InstanceType]) -> Ints | None:
        """The row of each of `types` (by identity), or None when one is not in the table.
        Read-only (memoised by the types themselves: `plan`'s claims of one NodePool are often
        given the same types in the same order)."""
        # `InstanceType` compares and hashes by identity (a dataclass with eq=False), so the
        # tuple of the types is a key by identity that costs no id() per type; an entry holds
        # only the table's own types.
        key = tuple(types)
        found = self._rows.get(key)
        if found is not None:
            return found
        try:
            rows = np.fromiter(
                map(self.row_of.__getitem__, map(id, key)), dtype=np.int64, count=len(key)
            )
        except KeyError:
            return None
        rows.flags.writeable = False
        if len(self._rows) >= max(_ROWS_MEMO_MIN, _ROWS_MEMO_BYTES // (16 * len(key) + 1)):
            self._rows.clear()
        self._rows[key] = rows
        return rows

    # ---- per row -----------------------------------------------------------------------------
    def compatible(self, reqs: Requirements) -> Mask:
        """Per row: `reqs.is_compatible(type requirements, ALLOW_UNDEFINED_WELL_KNOWN)`."""
        mask = np.ones(len(self.types), dtype=np.bool_)
        for key, requires in self._requires.items():
            if key not in reqs:
                mask &= ~requires
        for key, incoming in reqs.items():
            memo_key = (key, incoming)
            answer = self._answers.get(memo_key)
            if answer is None:
                codes = self._key_codes.get(key)
                if codes is None:
                    codes = self._key_codes[key] = _KeyCodes(key, self.types)
                answer = codes.answers(incoming)[codes.code]
                if len(self._answers) >= _MEMO_SIZE:
                    self._answers.clear()
                self._answers[memo_key] = answer
            mask &= answer
        return mask

    def fits(self, requests: Mapping[str, int]) -> Mask:
        """Per row: Karpenter's `resources.Fits` of `requests` in the allocatable."""
        mask: Mask = np.logical_not(self.any_negative)
        for k, v in requests.items():
            j = self.column.get(k)
            if j is None or v > _INT64_MAX:
                if v > 0:  # no type has it (or as much): none fits
                    return np.zeros(len(self.types), dtype=np.bool_)
                continue
            if v >= _INT64_MIN:
                mask &= self._columns[j] >= v
        return mask

    def allowed(self, reqs: Requirements) -> Mask:
        """Per offering: available and allowed by the claim's zone, capacity type and
        reservation labels (`compatible_offerings`), memoised by `offering_key`."""
        key = offering_key(reqs)
        mask = self._allowed.get(key)
        if mask is None:
            zone, ct, reservation = key
            mask = self.available.copy()
            if not allows_no_reservation(reservation):
                # Every offering here is spot or on-demand (`exact`): none has the labels.
                mask[:] = False
            if zone is not None:
                mask &= self.zones_allowed(zone)[self.off_zone]
            if ct is not None:
                ct_ok = np.fromiter(
                    (ct.has(c) for c in self.capacity_types), np.bool_, len(self.capacity_types)
                )
                mask &= ct_ok[self.off_ct]
            if len(self._allowed) >= _MEMO_SIZE:
                self._allowed.clear()
                self._offered.clear()
            self._allowed[key] = mask
        return mask

    def offered(self, reqs: Requirements) -> Mask:
        """Per row: it has an offering `allowed(reqs)` selects (memoised the same way)."""
        key = offering_key(reqs)
        mask = self._offered.get(key)
        if mask is None:
            mask = np.zeros(len(self.types), dtype=np.bool_)
            if len(self._seg_rows):
                mask[self._seg_rows] = np.logical_or.reduceat(self.allowed(reqs), self._seg_start)
            self._offered[key] = mask
        return mask

    def zones_allowed(self, zone: Requirement) -> Mask:
        """Per zone code: `zone` allows it."""
        return np.fromiter((zone.has(z) for z in self.zones), np.bool_, len(self.zones))

    def ct_code(self, capacity_type: str) -> int:
        """The code of `capacity_type` in `off_ct` (-1, matching none, when no offering has it)."""
        return self.ct_index.get(capacity_type, -1)

    def offerings_of(self, rows: Ints) -> tuple[Ints, Ints]:
        """The offering indices of `rows` (each row's run in order, rows in the given order),
        and where each row's run starts in them."""
        counts = self.n_offerings[rows]
        ends = np.cumsum(counts)
        seg = ends - counts
        off = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
        off += np.repeat(self.start[rows] - seg, counts)
        return off, seg

    def cheapest(self, offerings: Mask) -> Floats:
        """Per row: the lowest price among its selected offerings (inf when none)."""
        out = np.full(len(self.types), np.inf)
        if len(self._seg_rows):
            priced = np.where(offerings, self.price, np.inf)
            out[self._seg_rows] = np.minimum.reduceat(priced, self._seg_start)
        return out

    def cheapest_allowed(self, reqs: Requirements) -> Floats:
        """`cheapest(allowed(reqs))`, memoised like `allowed` (the rows' own offerings)."""
        key = offering_key(reqs)
        prices = self._cheapest.get(key)
        if prices is None:
            prices = self.cheapest(self.allowed(reqs))
            if len(self._cheapest) >= _MEMO_SIZE:
                self._cheapest.clear()
            self._cheapest[key] = prices
        return prices

    def rebuilt(self, row: int, kept: list[bool]) -> InstanceType:
        """A new type like row `row` with the offerings whose flag in `kept` is set (the launch
        filters' narrowed copy; a fresh object, so no price memo is shared)."""
        it = self.types[row]
        return InstanceType(
            name=it.name,
            requirements=it.requirements,
            capacity=it.capacity,
            allocatable=it.allocatable,
            offerings=tuple(compress(it.offerings, kept)),
        )


def _ranks(values: Sequence[str]) -> Ints:
    """Each value's rank in sorted order (equal values share a rank)."""
    order = {v: i for i, v in enumerate(sorted(set(values)))}
    return np.fromiter((order[v] for v in values), np.int64, count=len(values))
