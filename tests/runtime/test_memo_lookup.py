"""`IdentityMemo.lookup`, the memo as a plain function: the same entries as calling the memo,
so a value computed through one is a hit through the other, and the same bound."""

from __future__ import annotations

from gpucap.runtime.memo import IdentityMemo


class Spec:
    def __init__(self, n: int) -> None:
        self.n = n


def test_lookup_and_call_share_their_entries_and_bound() -> None:
    calls: list[int] = []

    def compute(s: Spec) -> int:
        calls.append(s.n)
        return s.n * 10

    memo = IdentityMemo(compute, size=2)
    a, b, c = Spec(1), Spec(2), Spec(3)
    assert memo.lookup(a) == 10
    assert memo(a) == 10  # a hit: computed once
    assert memo(b) == 20
    assert memo.lookup(b) == 20
    assert calls == [1, 2]
    memo.lookup(c)  # full: cleared, then c
    assert len(memo) == 1
    assert memo(a) == 10
    assert calls == [1, 2, 3, 1]
