"""Emptiness: delete empty nodes, for every consolidation policy (kubernetes-sigs/karpenter
`pkg/controllers/disruption/emptiness.go` and `validation.go: EmptinessValidator` @
2266468104f3; karpenter-disruption.md §1.7).

A candidate is empty when no pod that would move has a positive eviction cost (DaemonSet,
static/mirror and finished pods never count; v1.14 `IsEmpty`), its NodePool's consolidateAfter
is not `Never` and it is consolidatable (consolidateAfter has passed since its last pod event).
Every empty candidate within its NodePool's `Empty` budget, most expensive first, goes into one
delete command; no scheduling simulation. After `COMMAND_VALIDATION_DELAY_S` the candidates
are looked up again: those still empty candidates, within the budget recomputed then, are
deleted (some may have dropped out; none left abandons the command). Called by the controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from gpucap.controllers.disruption.candidates import (
    Gate,
    consolidatable_gate,
    gate_passed,
)
from gpucap.controllers.disruption.consolidation import Consolidation
from gpucap.controllers.disruption.types import EMPTY, Candidate, PoolTotals, Proposal
from gpucap.runtime.memo import IdentityMemo, Memo

__all__ = ["Emptiness"]


def _wants(c: Candidate) -> Gate:
    """`Emptiness.should_disrupt` without the clock: not static, consolidateAfter not Never,
    empty; then when it is consolidatable. None: never."""
    if c.static or c.nodepool.spec.disruption.consolidate_after_seconds is None or not c.is_empty:
        return None
    return consolidatable_gate(c.node_claim, c.nodepool)


# Per candidate object, as consolidation's (the run's: `Cluster.memos`).
_WANTS = Memo.identity(_wants, size=4096)


class Emptiness(Consolidation):
    """emptiness.go (see the module docstring)."""

    name = "emptiness"
    reason = EMPTY
    wants: ClassVar[Memo[IdentityMemo[Candidate, Gate]]] = _WANTS

    def should_disrupt(self, c: Candidate) -> bool:
        """Empty and consolidatable (see the module docstring): what does not read the clock
        kept per candidate object, the clock compared each time."""
        return gate_passed(self._wants(c), self.clock.now())

    def compute(
        self,
        budgets: dict[str, int],
        candidates: list[Candidate],
        totals: Mapping[str, PoolTotals],
    ) -> list[Proposal]:
        if self.is_consolidated():
            return []
        empty, constrained = self.within_budgets(
            (c for c in self.sort(candidates) if c.is_empty), budgets
        )
        if not empty:
            if not constrained:
                self.mark_consolidated()
            return []
        return [Proposal(self.name, self.reason, tuple(empty))]

    def validate(self, proposal: Proposal) -> Proposal | None:
        names = {c.name for c in proposal.candidates}
        survivors = [c for c in self.current_candidates() if c.name in names]
        if not survivors:
            return None
        budgets = self.budgets(self.cluster, self.reason, now=self.now())
        kept, _ = self.within_budgets(survivors, budgets)
        if not kept:
            return None
        return Proposal(self.name, self.reason, tuple(kept))
