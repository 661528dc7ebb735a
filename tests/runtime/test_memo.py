"""IdentityMemo: a value per object identity, computed once while cached, bounded; Memos: one
run's tables, each made on first use and shared with no other run."""

from __future__ import annotations

import pytest

from gpucap.runtime.memo import IdentityMemo, Memo, Memos


class Spec:
    """A stand-in for a frozen model: equal by value, distinct by identity."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and other.n == self.n

    def __hash__(self) -> int:
        return self.n


def counting() -> tuple[IdentityMemo[Spec, int], list[int]]:
    calls: list[int] = []

    def compute(s: Spec) -> int:
        calls.append(s.n)
        return s.n * 10

    return IdentityMemo(compute, size=2), calls


def test_the_same_object_is_computed_once() -> None:
    memo, calls = counting()
    spec = Spec(1)
    assert memo(spec) == memo(spec) == 10
    assert calls == [1]


def test_an_equal_but_distinct_object_is_computed_again() -> None:
    memo, calls = counting()
    memo(Spec(1))
    memo(Spec(1))
    assert calls == [1, 1]


def test_a_full_memo_starts_over_and_never_holds_more_than_its_size() -> None:
    memo, calls = counting()
    specs = [Spec(i) for i in range(3)]
    for s in specs:
        memo(s)
    assert len(memo) == 1  # cleared when the third arrived
    memo(specs[2])
    memo(specs[0])
    assert calls == [0, 1, 2, 0]


def test_a_memo_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="size=0"):
        IdentityMemo(lambda s: s, size=0)


def test_each_memos_makes_a_memos_table_once_and_shares_it_with_no_other() -> None:
    made: list[dict[str, int]] = []

    def make() -> dict[str, int]:
        made.append({})
        return made[-1]

    table = Memo(make)
    one, two = Memos(), Memos()
    assert one[table] is one[table]
    assert one[table] is not two[table]
    assert len(made) == 2
    assert len(one) == 1
    squares = Memo.identity(lambda s: int(s.n) ** 2, size=4)
    spec = Spec(3)
    assert one[squares](spec) == 9
    assert len(one[squares]) == 1
    assert len(two[squares]) == 0
