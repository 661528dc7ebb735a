"""A bounded memo keyed on an object's identity, for values computed from immutable objects.

gpucap's manifests are frozen models and the cloud provider's instance-type lists are tuples: the
same object gives the same answer, and hot paths (the simulator's passes) meet the same objects
again and again. `IdentityMemo(compute, size=N)` caches `compute(obj)` by `id(obj)`; each entry
holds the object itself, so its id cannot be reused by another object while it is cached. When
full it is cleared (cheap, and the next pass refills it).

A memo over one run's objects belongs to that run, not to the process: two simulations in one
process (tests, parallel sweep runs) must not share entries, and a run's objects must not
outlive it in a module's table. Such a memo is declared at module level as a `Memo` (what to
make, no state) and held in the run's `Memos` (one per `Cluster`: `Cluster.memos`), which makes
its table on first use: `cluster.memos[_TAINTED].lookup(node)`. A `Memo` may make any table a
run keeps (`Memo(dict)` for one keyed by name), not only an `IdentityMemo`. Module-level
`IdentityMemo`s remain for values of process-wide static data (the catalog's instance-type
tuples, parsed schema), which no run owns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "Memo", "Memos"]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class IdentityMemo(Generic[K, V]):
    """`compute(obj)` memoised per object identity, at most `size` entries (see the module
    docstring). Callers that hand the value out for mutation copy it themselves."""

    def __init__(self, compute: Callable[[K], V], *, size: int) -> None:
        if size < 1:
            raise ValueError(f"an IdentityMemo needs room for one entry, got size={size}")
        self._compute = compute
        self._size = size
        self._entries: dict[int, tuple[K, V]] = {}
        entries = self._entries

        def lookup(obj: K) -> V:
            hit = entries.get(id(obj))
            if hit is not None and hit[0] is obj:
                return hit[1]
            value = compute(obj)
            if len(entries) >= size:
                entries.clear()
            entries[id(obj)] = (obj, value)
            return value

        # The same memo as a plain function (the same entries): calling an instance goes
        # through `__call__`'s method dispatch, about twice the cost of a hit through this
        # (0.5 vs 0.25 us measured); hot callers bind `memo.lookup` once.
        self.lookup: Callable[[K], V] = lookup

    def __call__(self, obj: K) -> V:
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = self._compute(obj)
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)


class Memo(Generic[T]):
    """A per-run table declared at module level: `make()` builds it, once per `Memos` that is
    asked for it (see the module docstring). Holds no entries itself; compared by identity."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], T]) -> None:
        self.make = make

    @staticmethod
    def identity(compute: Callable[[K], V], *, size: int) -> Memo[IdentityMemo[K, V]]:
        """A per-run `IdentityMemo(compute, size=size)`."""
        return Memo(lambda: IdentityMemo(compute, size=size))


class Memos:
    """One run's tables (see the module docstring): `memos[memo]` is this run's table of the
    module-level `memo`, made on first use. Owned by the run's `Cluster`; dropped with it."""

    __slots__ = ("_tables",)

    def __init__(self) -> None:
        self._tables: dict[Memo[Any], Any] = {}

    def __getitem__(self, memo: Memo[T]) -> T:
        table: T | None = self._tables.get(memo)
        if table is None:
            table = self._tables[memo] = memo.make()
        return table

    def __len__(self) -> int:
        """How many tables this run made."""
        return len(self._tables)
