"""Karpenter's requirement algebra: node selector requirements as sets that intersect.

A `Requirement` is Karpenter's (`kubernetes-sigs/karpenter:pkg/scheduling/requirement.go`):
a key, a value set that is either concrete (`In`, `DoesNotExist`) or a complement (`NotIn`,
`Exists`), optional integer bounds (`Gt n` becomes `>= n+1`, `Lt n` becomes `<= n-1`, `Gte`, `Lte`),
and an optional `minValues`. `Requirements` maps keys to requirements; adding a requirement for a
key already present intersects them (`requirements.go`). `compatible` and `intersects` are the
two checks the scheduler uses:

- `intersects`: for keys both sides define, the value sets must overlap, unless both are
  `NotIn`/`DoesNotExist`;
- `compatible`: additionally, a key the other side *requires* (not `NotIn`/`DoesNotExist`) must be
  defined here, unless it is in `allow_undefined` (the well-known labels, for NodeClaims).

Where Karpenter picks at random (`Any()` for `Exists`), gpucap picks deterministically (the
smallest allowed value). Values are immutable; every operation returns a new object.
Called by the scheduler, the instance-type filters and lint rules.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Literal

from gpucap.apis.core import NodeSelectorRequirement
from gpucap.apis.goparse import atoi
from gpucap.apis.labels import HOSTNAME, WELL_KNOWN_LABELS, normalize_label
from gpucap.apis.nodepool import NodeSelectorRequirementWithMinValues

__all__ = [
    "IncompatibleError",
    "Operator",
    "Requirement",
    "Requirements",
]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]

# Go's math.MaxInt64: an Exists requirement "has" this many values.
_MAX_INT = 2**63 - 1


def _as_int(value: str) -> int | None:
    # Go's strconv.Atoi: optional sign, ASCII decimal digits only, within int64.
    return atoi(value)


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    n = _as_int(value)
    if n is None:
        return False  # bounds only admit integers
    return (gte is None or n >= gte) and (lte is None or n <= lte)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One key's allowed values. Build with `Requirement.new(key, operator, values)`."""

    key: str
    complement: bool
    values: frozenset[str] = frozenset()
    gte: int | None = None
    lte: int | None = None
    min_values: int | None = None
    # The hash, computed once (-1: not yet; CPython never returns -1 from `hash`). Not an
    # init field, so `dataclasses.replace` starts a new object without it.
    _hash: int = field(default=-1, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        # Requirements key the scheduler's memos (offerings by zone and capacity type, type
        # compatibility): hashed far more often than built.
        h = self._hash
        if h == -1:
            h = hash((self.key, self.complement, self.values, self.gte, self.lte, self.min_values))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple[type[Requirement], tuple[object, ...]]:
        # A copy or a pickle rebuilds from the fields: string hashes differ between processes.
        return (
            Requirement,
            (self.key, self.complement, self.values, self.gte, self.lte, self.min_values),
        )

    @classmethod
    def new(
        cls,
        key: str,
        operator: str,
        values: Iterable[str] = (),
        min_values: int | None = None,
    ) -> Requirement:
        """Karpenter's `NewRequirementWithFlexibility` (keys normalised, Gt/Lt made inclusive)."""
        key = normalize_label(key)
        vals = tuple(values)
        if operator == "In":
            return cls(key, False, frozenset(vals), min_values=min_values)
        if operator == "DoesNotExist":
            return cls(key, False, frozenset(), min_values=min_values)
        if operator == "NotIn":
            return cls(key, True, frozenset(vals), min_values=min_values)
        if operator == "Exists":
            return cls(key, True, frozenset(), min_values=min_values)
        n = atoi(vals[0])  # validated at the manifest boundary (an int64 of at least 0)
        if n is None:
            raise ValueError(f"{operator} needs an integer value, got {vals[0]!r}")
        if operator == "Gt":
            if n == _MAX_INT:
                # Gt MaxInt64 matches nothing; Karpenter rebuilds it without minValues.
                return cls(key, False, frozenset())
            return cls(key, True, frozenset(), gte=n + 1, min_values=min_values)
        if operator == "Lt":
            return cls(key, True, frozenset(), lte=n - 1, min_values=min_values)
        if operator == "Gte":
            return cls(key, True, frozenset(), gte=n, min_values=min_values)
        if operator == "Lte":
            return cls(key, True, frozenset(), lte=n, min_values=min_values)
        raise ValueError(f"unsupported operator {operator!r}")

    # ---- set algebra ------------------------------------------------------------------------
    def intersection(self, other: Requirement) -> Requirement:
        complement = self.complement and other.complement
        gte = _max_opt(self.gte, other.gte)
        lte = _min_opt(self.lte, other.lte)
        min_values = _max_opt(self.min_values, other.min_values)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, False, frozenset(), min_values=min_values)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        if gte is not None or lte is not None:
            values = frozenset(v for v in values if _within(v, gte, lte))
        if not complement:
            gte = lte = None  # bounds only matter for complement sets
        return Requirement(self.key, complement, values, gte, lte, min_values)

    def has_intersection(self, other: Requirement) -> bool:
        gte = _max_opt(self.gte, other.gte)
        lte = _min_opt(self.lte, other.lte)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if gte is None and lte is None:
            # Without bounds the same answers as below, as set operations (the launch filter
            # asks this for every instance type on every CreateFleet).
            if self.complement:
                return not other.values <= self.values
            if other.complement:
                return not self.values <= other.values
            return not self.values.isdisjoint(other.values)
        if self.complement:
            return any(v not in self.values and _within(v, gte, lte) for v in other.values)
        if other.complement:
            return any(v not in other.values and _within(v, gte, lte) for v in self.values)
        return any(v in other.values and _within(v, gte, lte) for v in self.values)

    def has(self, value: str) -> bool:
        """Whether `value` is allowed."""
        if self.complement:
            return value not in self.values and _within(value, self.gte, self.lte)
        return value in self.values and _within(value, self.gte, self.lte)

    @property
    def operator(self) -> str:
        """In, NotIn, Exists or DoesNotExist (Gt/Lt are Exists with bounds), as Karpenter says."""
        if self.complement:
            return "NotIn" if self.values else "Exists"
        return "In" if self.values else "DoesNotExist"

    def __len__(self) -> int:
        if self.complement:
            return _MAX_INT - len(self.values)
        return len(self.values)

    def any(self) -> str:
        """A value the requirement allows ("" for DoesNotExist). Deterministic, unlike Karpenter."""
        op = self.operator
        if op == "In":
            return min(self.values)
        if op in ("NotIn", "Exists"):
            # Karpenter draws at random from [gte (default 0), lte]; gpucap takes the smallest
            # value there that is not excluded ("" when there is none, where Karpenter panics).
            n = self.gte if self.gte is not None else 0
            upper = self.lte if self.lte is not None else _MAX_INT
            while n <= upper:
                if str(n) not in self.values:
                    return str(n)
                n += 1
            return ""
        return ""

    def sorted_values(self) -> list[str]:
        return sorted(self.values)

    def __str__(self) -> str:
        op = self.operator
        if op in ("Exists", "DoesNotExist"):
            text = f"{self.key} {op}"
        else:
            values = sorted(self.values)
            if len(values) > 5:
                values = [*values[:5], f"and {len(values) - 5} others"]
            text = f"{self.key} {op} [{' '.join(values)}]"
        if self.gte is not None:
            text += f" >={self.gte}"
        if self.lte is not None:
            text += f" <={self.lte}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


@functools.lru_cache(maxsize=4096)
def _exists(key: str) -> Requirement:
    # Requirements are immutable, so one `Exists` per key can be shared.
    return Requirement.new(key, "Exists")


class IncompatibleError(Exception):
    """Why two requirement sets cannot both hold; the message is Karpenter's wording."""


@dataclass(frozen=True, slots=True)
class Requirements(Mapping[str, Requirement]):
    """Requirements by key; immutable. `add` intersects per key and returns a new object."""

    _items: dict[str, Requirement] = field(default_factory=dict)
    # The hash is needed often (memo keys) and never changes: computed once.
    _hash: list[int] = field(default_factory=list, compare=False, repr=False)
    # `without`'s answers for this object (immutable, so they stay true): the scheduler asks
    # a planned node's set without its placeholder hostname again and again.
    _without: dict[tuple[str, ...], Requirements] = field(
        default_factory=dict, compare=False, repr=False
    )

    # ---- construction -----------------------------------------------------------------------
    @classmethod
    def of(cls, *requirements: Requirement) -> Requirements:
        if not requirements and cls is Requirements:
            return _EMPTY  # immutable: one empty set serves every caller
        return cls().add(*requirements)

    @classmethod
    def from_node_selector(
        cls, requirements: Iterable[NodeSelectorRequirementWithMinValues | NodeSelectorRequirement]
    ) -> Requirements:
        reqs = []
        for r in requirements:
            min_values = getattr(r, "min_values", None)
            reqs.append(Requirement.new(r.key, r.operator, r.values, min_values))
        return cls.of(*reqs)

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        return cls.of(*(Requirement.new(k, "In", [v]) for k, v in labels.items()))

    # ---- Mapping ---------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Requirement:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str, default: Requirement | None = None) -> Requirement | None:  # type: ignore[override]
        return self._items.get(key, default)

    def __hash__(self) -> int:
        if not self._hash:
            self._hash.append(hash(frozenset(self._items.items())))
        return self._hash[0]

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, Requirements):
            return hash(self) == hash(other) and self._items == other._items
        return NotImplemented

    # ---- algebra ---------------------------------------------------------------------------
    def add(self, *requirements: Requirement) -> Requirements:
        if not requirements:
            return self  # immutable: nothing to add is the same set
        items = dict(self._items)
        for r in requirements:
            existing = items.get(r.key)
            # The same object: requirements are kept normalised, so `r ∩ r == r`.
            if existing is not r:
                items[r.key] = r if existing is None else r.intersection(existing)
        return Requirements(items)

    def merge(self, other: Requirements) -> Requirements:
        return self.add(*other.values())

    def get_or_exists(self, key: str) -> Requirement:
        """The requirement for `key`; an undefined key allows any value (`Exists`)."""
        found = self._items.get(key)
        return found if found is not None else _exists(key)

    def only(self, keys: AbstractSet[str]) -> Requirements:
        """The requirements on `keys` (self when every key is among them)."""
        if all(k in keys for k in self._items):
            return self
        return Requirements({k: v for k, v in self._items.items() if k in keys})

    def on_keys(self, keys: tuple[str, ...]) -> tuple[Requirement | None, ...]:
        """The requirement on each of `keys`, in that order (None where there is none): a
        cheap memo key for answers that read only those keys."""
        return tuple(map(self._items.get, keys))

    def without(self, *keys: str) -> Requirements:
        hit = self._without.get(keys)
        if hit is None:
            hit = Requirements({k: v for k, v in self._items.items() if k not in keys})
            if len(self._without) < 4:
                self._without[keys] = hit
        return hit

    def intersects(self, other: Requirements) -> IncompatibleError | None:
        """Karpenter's `Intersects`: every key both define whose values cannot overlap (one
        message per key, sorted, joined as multierr joins them), or None."""
        mine, theirs = self._items, other._items
        small, large = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
        problems = []
        for key in small:
            if key not in large:
                continue
            existing, incoming = mine[key], theirs[key]
            if existing is incoming:
                continue
            if existing.has_intersection(incoming):
                continue
            if incoming.operator in ("NotIn", "DoesNotExist") and existing.operator in (
                "NotIn",
                "DoesNotExist",
            ):
                continue
            problems.append(f"key {key}, {incoming} not in {existing}")
        if not problems:
            return None
        return IncompatibleError("; ".join(sorted(problems)))

    def compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = frozenset()
    ) -> IncompatibleError | None:
        """Karpenter's `Compatible`: `other` may require only keys this set defines (or that are
        in `allow_undefined`, or that it excludes), and the shared keys must intersect."""
        for key in sorted(other):
            if key in allow_undefined or key in self._items:
                continue
            if other[key].operator in ("NotIn", "DoesNotExist"):
                continue
            return IncompatibleError(
                f'label "{key}" does not have known values{_typo_hint(self, key, allow_undefined)}'
            )
        return self.intersects(other)

    def is_compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = frozenset()
    ) -> bool:
        """`compatible(...) is None` without building the messages (a hot path: the launch
        filter asks it of every instance type)."""
        mine = self._items
        for key, req in other._items.items():
            if key in allow_undefined or key in mine:
                continue
            if req.operator not in ("NotIn", "DoesNotExist"):
                return False
        theirs = other._items
        small, large = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
        for key in small:
            if key not in large:
                continue
            existing, incoming = mine[key], theirs[key]
            if existing is incoming or existing.has_intersection(incoming):
                continue
            if incoming.operator in ("NotIn", "DoesNotExist") and existing.operator in (
                "NotIn",
                "DoesNotExist",
            ):
                continue
            return False
        return True

    def has_min_values(self) -> bool:
        return any(r.min_values is not None for r in self._items.values())

    def labels(self) -> dict[str, str]:
        """Single-valued `In` requirements as labels (what a node launched from them carries)."""
        return {
            k: next(iter(r.values))
            for k, r in sorted(self._items.items())
            if r.operator == "In" and len(r.values) == 1
        }

    def __str__(self) -> str:
        # Karpenter leaves restricted labels (the hostname placeholder) out of messages.
        return ", ".join(sorted(str(r) for k, r in self._items.items() if k != HOSTNAME))


ALLOW_UNDEFINED_WELL_KNOWN = frozenset(WELL_KNOWN_LABELS)
_EMPTY = Requirements()


def _typo_hint(reqs: Requirements, key: str, allowed: frozenset[str]) -> str:
    # Karpenter suggests a well-known or defined key that contains the misspelt one or ends the
    # same way; gpucap checks candidates in sorted order so the hint is stable.
    suffix = key.split("/", 1)[1] if "/" in key else key
    for candidate in [*sorted(allowed), *sorted(reqs)]:
        if key in candidate or candidate.endswith(suffix):
            return f' (typo of "{candidate}"?)'
    return ""
