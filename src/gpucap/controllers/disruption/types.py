"""The disruption controller's vocabulary: a `Candidate` (a node it may disrupt, with what it
costs and what moving it would disturb) and a `Command` (what one method decided), as
kubernetes-sigs/karpenter `pkg/controllers/disruption/types.go` @ 2266468104f3 has them
(`Candidate`, `NewCandidate`'s fields, `Command`, `Decision`), and the `Method` protocol every
disruption method implements. Built by `candidates.py`; read by the methods, the controller
and the simulator's world (which emits one DisruptionDecision per candidate of a command).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from gpucap.apis.core import Node, Pod
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaim import NodeClaim as SolverNodeClaim
from gpucap.utils.pod import eviction_cost

__all__ = [
    "EMPTY",
    "EVENTUAL",
    "GRACEFUL",
    "PER_NODE_BASE_DISRUPTION_COST",
    "Blocked",
    "Candidate",
    "Command",
    "Method",
    "PoolTotals",
    "Proposal",
]

# types.go `PerNodeBaseDisruptionCost`: what draining any node costs before its pods count.
PER_NODE_BASE_DISRUPTION_COST = 1.0
# types.go: graceful methods respect blocking pods; eventual ones (drift) are bounded by the
# NodeClaim's terminationGracePeriod instead.
GRACEFUL = "graceful"
EVENTUAL = "eventual"
EMPTY = "Empty"

Reason = Literal["Empty", "Drifted", "Underutilized"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node a disruption method may act on (`NewCandidate`). Nothing in it reads the clock:
    its disruption cost, which follows the clock through expireAfter, is
    `candidates.disruption_cost(candidate, now)`, so candidate selection hands out the same
    object pass after pass while its node is the same."""

    node_claim: NodeClaim
    node: Node | None
    state_node: StateNode
    nodepool: NodePool
    instance_type: InstanceType | None  # from cloud_provider.get_instance_types(nodepool)
    capacity_type: str
    zone: str
    price: float  # the launched offering's price (0 when unknown)
    reschedulable_pods: tuple[Pod, ...]
    drifted: str  # "" or the Drifted condition's reason (set by drift detection)
    # 1 plus the positive eviction costs of the pods that would move (computed once: the
    # methods sort and filter by it many times a pass).
    reschedule_disruption_cost: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """`RescheduleDisruptionCost`: 1 plus the positive eviction costs of the pods that
        would move."""
        cost = _reschedule_cost(self.reschedulable_pods)
        object.__setattr__(self, "reschedule_disruption_cost", cost)

    @property
    def name(self) -> str:
        """The state node's name (the Node's)."""
        return self.state_node.name

    @property
    def savings_ratio(self) -> float:
        """Price per unit of disruption: consolidation's sort key, highest first."""
        return self.price / self.reschedule_disruption_cost

    @property
    def is_empty(self) -> bool:
        """v1.14's `IsEmpty`: no pod that would move has a positive eviction cost."""
        return self.reschedule_disruption_cost <= PER_NODE_BASE_DISRUPTION_COST

    @property
    def static(self) -> bool:
        return self.nodepool.is_static


def _reschedule_cost(pods: tuple[Pod, ...]) -> float:
    return PER_NODE_BASE_DISRUPTION_COST + sum(max(0.0, eviction_cost(p)) for p in pods)


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why a node is not a candidate, as Karpenter says it in the DisruptionBlocked event it
    publishes on the Node and NodeClaim (`NewCandidate`, `disruptionevents.Blocked`): its error
    (`error`, e.g. "pdb prevents pod evictions") and the objects its structured error names
    (`values`: ("Pod", "ns/name"), ("PodDisruptionBudget", "ns/name"), ...). Recorded by
    candidate selection for a node its pods hold (`candidates.select_candidates`)."""

    error: str
    values: tuple[tuple[str, str], ...] = ()

    @property
    def message(self) -> str:
        """The event's message: the error as a sentence (`pretty.Sentence`: first letter up)."""
        return self.error[:1].upper() + self.error[1:]

    def __str__(self) -> str:
        named = ", ".join(f"{k}={v}" for k, v in self.values)
        return f"{self.message} ({named})" if named else self.message


@dataclass(frozen=True, slots=True)
class Command:
    """What one method decided: delete the candidates, or replace them with `replacements`
    (created, launched and initialized before the candidates drain)."""

    method: str  # "emptiness" | "static-drift" | "drift" | "multi-node-consolidation" | ...
    reason: str  # budget reason: "Empty" | "Drifted" | "Underutilized"
    decision: str  # "delete" | "replace"
    candidates: tuple[Candidate, ...]
    replacements: tuple[NodeClaim, ...] = ()
    message: str = ""  # plain words for the DisruptionDecision event


@dataclass(frozen=True, slots=True)
class PoolTotals:
    """A NodePool's cost per hour and disruption cost over all its nodes (Balanced scoring's
    denominators, balanced.go `NodePoolTotals`)."""

    total_cost: float
    total_disruption_cost: float


@dataclass(slots=True)
class Proposal:
    """A command while it is being decided: the candidates and the scheduler's new NodeClaims
    (with their price-filtered instance types), before replacements are named and created."""

    method: str
    reason: str
    candidates: tuple[Candidate, ...]
    new_claims: list[SolverNodeClaim] = field(default_factory=list)
    message: str = ""

    @property
    def decision(self) -> str:
        return "replace" if self.new_claims else "delete"


class Method(Protocol):
    """One disruption method (`Method` in types.go): its name, budget reason and class, which
    candidates it wants, the proposals it makes from them under a budget mapping, and (for
    methods Karpenter validates after `COMMAND_VALIDATION_DELAY_S`) the check it runs then."""

    name: str
    reason: str
    disruption_class: str
    validates: bool

    def should_disrupt(self, candidate: Candidate) -> bool: ...

    def is_consolidated(self) -> bool: ...

    def compute(
        self,
        budgets: dict[str, int],
        candidates: list[Candidate],
        totals: Mapping[str, PoolTotals],
    ) -> list[Proposal]: ...

    def validate(self, proposal: Proposal) -> Proposal | None: ...
