"""Consolidation: the shared decision and the multi-node and single-node methods
(kubernetes-sigs/karpenter @ 2266468104f3 `pkg/controllers/disruption/consolidation.go`,
`multinodeconsolidation.go`, `singlenodeconsolidation.go`, `balanced.go`, `validation.go`;
`pkg/cloudprovider/types.go: WorstLaunchPrice`; karpenter-disruption.md §1.9-§1.14).

The decision (`computeConsolidation`): simulate the candidates gone (`simulation.py`). If a pod
that must move cannot schedule, nothing. No new NodeClaim: delete. More than one: nothing
(consolidation is m -> 1 or m -> 0). Exactly one: replace, if strictly cheaper:
- the candidates' price is the sum of their offerings' prices;
- all candidates spot and the replacement may be spot: spot-to-spot, off unless
  `spot_to_spot=True` (the `SpotToSpotConsolidation` feature gate, default false); it forces
  spot, keeps the types whose worst spot launch price is below the candidates', and a single
  node needs at least `SPOT_TO_SPOT_THRESHOLD` (15) of them and launches as the 15 cheapest;
- otherwise keep the instance types whose *worst* launch price (the most expensive available
  offering of the first capacity type of reserved, spot, on-demand the requirements allow) is
  strictly below it; none left, or minValues no longer met: nothing. A replacement that may be
  spot or on-demand is then pinned to spot (it was priced as spot).
- For a `Balanced` NodePool the move must also score at least 1/k (k = 2): the pool's share of
  the savings over its cost, divided by the candidates' share of the pool's disruption cost.

Multi-node: candidates by price per disruption (highest first), those over budget dropped, at
most 100; a binary search over prefixes of two or more for the largest valid command (a
replacement may not be one of the removed types unless cheaper than it). Single-node: the same
order interleaved across NodePools; the first candidate with a command. Both, and emptiness,
skip work while the cluster has not changed since they last found nothing (`IsConsolidated`;
the state also changes every 5 minutes). Validation after `COMMAND_VALIDATION_DELAY_S`: every
candidate still a candidate, within budget, and a new simulation still deletes (or still needs
one replacement whose types include the command's).

Single-node consolidation says why it found no command for a candidate, as Karpenter's
`Unconsolidatable` events do (`unconsolidatable`, per NodeClaim, read by the controller): "Can't
replace with a cheaper node", "Can't remove without creating N candidates", "SpotToSpot
Consolidation is disabled, can't replace a spot node with a spot node", the spot-to-spot
threshold, "Filtering by price: ..." (minValues). A candidate the pre-check rules out is not
simulated: it is said to have nothing cheaper when the pre-check would let it through with a
replacement of any price (`_why_not`).

`ShouldDisrupt` says why it turns a candidate away, too (`should_disrupt_message`: its
instance type unknown, a label missing, consolidation disabled, WhenEmpty and not empty); the
controller gathers those for every candidate of a pass, whether or not a method then computes.

Not modelled: the 1-minute multi-node and 3-minute single-node timeouts (gpucap's simulation
takes no wall-clock time, so the search always finishes), the Unconsolidatable events of a
simulation whose pods cannot all schedule (Karpenter's message is the scheduler's errors; the
pre-check spares most such simulations, so gpucap says nothing there), metrics.
Called by the disruption controller (`controller.py`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.types import CloudProvider
from gpucap.controllers.disruption.candidates import (
    Gate,
    consolidatable_gate,
    gate_passed,
    get_candidates,
)
from gpucap.controllers.disruption.constants import (
    MULTI_NODE_CONSOLIDATION_MAX_CANDIDATES,
    SPOT_TO_SPOT_THRESHOLD,
)
from gpucap.controllers.disruption.pending_room import PendingRoom
from gpucap.controllers.disruption.room import ROOM_MEMO, OfferCache, Room, RoomCache
from gpucap.controllers.disruption.simulation import (
    PassInputs,
    Simulation,
    pass_inputs,
    simulate_scheduling,
)
from gpucap.controllers.disruption.types import GRACEFUL, Candidate, PoolTotals, Proposal
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import Clock
from gpucap.runtime.memo import IdentityMemo, Memo
from gpucap.scheduling.instancetypes import (
    InstanceType,
    order_by_price,
    satisfies_min_values,
)
from gpucap.scheduling.nodeclaim import NodeClaim as SolverNodeClaim
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import Snapshot

__all__ = [
    "BALANCED_K",
    "SHOULD_DISRUPT_MESSAGE",
    "Budgets",
    "Consolidation",
    "MultiNodeConsolidation",
    "PassMemo",
    "SingleNodeConsolidation",
    "approve_balanced",
    "estimated_savings",
    "should_disrupt_message",
    "worst_launch_price",
]

# pkg/apis/v1/nodepool.go `BalancedK`: a Balanced move must score at least 1/k.
BALANCED_K = 2
_CAPACITY_TYPE_PRECEDENCE = ("reserved", "spot", "on-demand")
# consolidation.go's Unconsolidatable messages.
NO_CHEAPER = "Can't replace with a cheaper node"
SPOT_TO_SPOT_DISABLED = (
    "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
)

Budgets = Callable[..., dict[str, int]]


@dataclass(slots=True)
class PassShared:
    """What the consolidation methods of one disruption pass share (`PassMemo.new_pass`
    to `end_pass`; else one `compute`): the cluster's snapshot, the simulation
    inputs and the pre-check. Nothing changes the cluster in between: a method that acts ends
    the pass, and simulations only read."""

    snap: Snapshot | None = None

    inputs: PassInputs | None = None
    room: Room | None = None
    pending: PendingRoom | None = None
    # The default budget mapping's node counts (`budgets.pool_counts`) and, per reason, the
    # mapping (read by the controller: every method of the pass sees the same cluster).
    counts: object | None = None
    budgets: dict[str, dict[str, int]] = field(default_factory=dict)


class PassMemo:
    """What the disruption controller keeps from pass to pass besides the cluster: the
    consolidation state read once per pass (`Cluster.consolidation`, which the cluster
    moves itself), what the methods of one pass share (`shared`, from `new_pass` to
    `end_pass`), the offer and room caches of the consolidation pre-check (`room.py`) and the
    run's memos (`Cluster.memos`: `memos`, and the pre-check's `room`)."""

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock
        self._state = -math.inf
        self._pass: int | None = None
        self._passes = 0
        self.shared: PassShared | None = None
        self.offers = OfferCache()
        self.rooms = RoomCache()
        self.memos = cluster.memos
        self.room = cluster.memos[ROOM_MEMO]

    def new_pass(self) -> None:
        """A disruption pass begins: the state is read once for all its methods, which share
        `shared` until `end_pass`."""
        self._passes += 1
        self.shared = PassShared()

    def end_pass(self) -> None:
        self.shared = None

    def snapshot(self) -> Snapshot:
        """The cluster's snapshot, taken once per pass (each call outside a pass)."""
        if self.shared is None:
            return self._cluster.snapshot()
        if self.shared.snap is None:
            self.shared.snap = self._cluster.snapshot()
        return self.shared.snap

    def resets_at(self) -> float:
        """When (clock seconds) the consolidation state moves by itself, the cluster unchanged
        (`ConsolidationState.resets_at`)."""
        return self._cluster.consolidation.resets_at()

    def current(self) -> float:
        """The cluster's consolidation state, read once per pass (outside a pass: each call)."""
        if self._pass == self._passes:
            return self._state
        self._pass = self._passes
        self._state = self._cluster.consolidation.state(self._clock.monotonic())
        return self._state


# ---- prices ----------------------------------------------------------------------------------
def worst_launch_price(it: InstanceType, reqs: Requirements) -> float:
    """`Offerings.Available().WorstLaunchPrice(reqs)`: the most expensive available offering
    `reqs` allows, of the first capacity type among reserved, spot, on-demand that has one."""
    allowed = [o for o in it.offerings if o.available and o.allowed_by(reqs)]
    for ct in _CAPACITY_TYPE_PRECEDENCE:
        prices = [o.price for o in allowed if o.capacity_type == ct]
        if prices:
            return max(prices)
    return math.inf


def _below(
    types: Sequence[InstanceType], reqs: Requirements, max_price: float
) -> list[InstanceType] | None:
    """`RemoveInstanceTypeOptionsByPriceAndMinValues`: the types whose worst launch price is
    strictly below `max_price`; None when they no longer meet the requirements' minValues."""
    kept = [it for it in types if worst_launch_price(it, reqs) < max_price]
    if satisfies_min_values(kept, reqs)[1]:
        return None
    return kept


def _price_words(
    types: Sequence[InstanceType], reqs: Requirements, max_price: float, kept: object
) -> str:
    """The Unconsolidatable message when `_below` kept nothing (`kept` []: none cheaper) or
    failed minValues (`kept` None: the labels not met, as Go prints a string slice)."""
    if kept is not None:
        return NO_CHEAPER
    cheaper = [it for it in types if worst_launch_price(it, reqs) < max_price]
    labels = " ".join(sorted(satisfies_min_values(cheaper, reqs)[1]))
    return (
        f"Filtering by price: minValues requirement is not met for label(s) (label(s)=[{labels}])"
    )


def _with_types(
    claim: SolverNodeClaim, types: Sequence[InstanceType], reqs: Requirements
) -> SolverNodeClaim:
    reqs = reqs.add(Requirement.new(INSTANCE_TYPE, "In", [it.name for it in types]))
    return replace(claim, final_types=list(types), requirements=reqs)


def estimated_savings(proposal: Proposal) -> float:
    """`Command.EstimatedSavings`: the candidates' price minus, per replacement, its first
    type's cheapest available offering its requirements allow."""
    source = sum(c.price for c in proposal.candidates)
    for claim in proposal.new_claims:
        types = claim.instance_types
        if types:
            price = types[0].cheapest_price(claim.requirements)
            source -= price if price is not None else 0.0
    return source


# ---- Balanced ----------------------------------------------------------------------------------
def _score(savings: float, disruption: float, totals: PoolTotals | None) -> float:
    if totals is None or totals.total_cost <= 0 or totals.total_disruption_cost <= 0:
        return 0.0
    savings_fraction = savings / totals.total_cost
    disruption_fraction = disruption / totals.total_disruption_cost
    if savings_fraction <= 0:
        return 0.0
    if disruption_fraction == 0:
        return math.inf
    return savings_fraction / disruption_fraction


def approve_balanced(proposal: Proposal, totals: Mapping[str, PoolTotals]) -> bool:
    """`EvaluateBalancedMove`: every Balanced NodePool among the candidates scores at least
    1/k; savings are split across pools by their share of the candidates' price."""
    if not proposal.candidates:
        return False
    savings = estimated_savings(proposal)
    source = sum(c.price for c in proposal.candidates)
    pools: dict[str, list[Candidate]] = {}
    for c in proposal.candidates:
        pools.setdefault(c.nodepool.name, []).append(c)
    for name, members in pools.items():
        if members[0].nodepool.spec.disruption.consolidation_policy != "Balanced":
            continue
        pool_savings = savings
        if source > 0 and len(pools) > 1:
            pool_savings = savings * sum(c.price for c in members) / source
        disruption = sum(c.reschedule_disruption_cost for c in members)
        if _score(pool_savings, disruption, totals.get(name)) < 1.0 / BALANCED_K:
            return False
    return True


def _can_pass_threshold(c: Candidate, totals: Mapping[str, PoolTotals]) -> bool:
    """A Balanced candidate whose deletion (the best case) would not score enough is skipped."""
    if c.nodepool.spec.disruption.consolidation_policy != "Balanced":
        return True
    pool = totals.get(c.nodepool.name)
    if pool is None or pool.total_cost <= 0:
        return True
    return _score(c.price, c.reschedule_disruption_cost, pool) >= 1.0 / BALANCED_K


# ---- the shared part ---------------------------------------------------------------------------
def _wants(c: Candidate) -> Gate:
    """`ShouldDisrupt` without the clock: not static, a known instance type, capacity type and
    zone labels, consolidateAfter not Never, not empty, a policy other than WhenEmpty; then
    when the candidate is consolidatable (`consolidatable_gate`). None: never."""
    if c.static or c.instance_type is None:
        return None
    labels = c.state_node.labels
    if CAPACITY_TYPE not in labels or "topology.kubernetes.io/zone" not in labels:
        return None
    if c.nodepool.spec.disruption.consolidate_after_seconds is None or c.is_empty:
        return None
    if c.nodepool.spec.disruption.consolidation_policy == "WhenEmpty":
        return None
    return consolidatable_gate(c.node_claim, c.nodepool)


def should_disrupt_message(c: Candidate) -> str | None:
    """The Unconsolidatable message consolidation's `ShouldDisrupt` publishes when it turns
    `c` away before looking at its consolidatable condition (consolidation.go, and
    emptiness.go's for consolidation disabled, the same words); None when it says nothing
    (a static NodePool's node, or one it does not turn away for those reasons). Go's `%q`
    quotes the names. Called by the controller for every candidate of a pass."""
    if c.static:
        return None
    labels = c.state_node.labels
    if c.instance_type is None:
        return f'Instance Type "{labels.get(INSTANCE_TYPE, "")}" not found'
    for key in (CAPACITY_TYPE, "topology.kubernetes.io/zone"):
        if key not in labels:
            return f'Node does not have label "{key}"'
    disruption = c.nodepool.spec.disruption
    if disruption.consolidate_after_seconds is None:
        return f'NodePool "{c.nodepool.name}" has consolidation disabled'
    if not c.is_empty and disruption.consolidation_policy == "WhenEmpty":
        return (
            f'NodePool "{c.nodepool.name}" has consolidation policy WhenEmpty, '
            "but node is not empty"
        )
    return None


def _sort_key(c: Candidate) -> tuple[float, str]:
    return (-c.savings_ratio, c.name)


# Per candidate object (frozen; candidate selection hands the same one out pass after pass),
# the run's (`Cluster.memos`): every pass filters every candidate, multi- and single-node
# consolidation alike, and sorts them (`Consolidation.sort`).
_WANTS = Memo.identity(_wants, size=4096)
SHOULD_DISRUPT_MESSAGE = Memo.identity(should_disrupt_message, size=4096)
_SORT_KEY = Memo.identity(_sort_key, size=4096)


class Consolidation:
    """What emptiness, multi-node and single-node consolidation share (`consolidation` in
    consolidation.go): the cluster, the scheduler, the consolidated-state memo, the budget
    callable for validation and the queue's in-flight NodeClaims."""

    name = "consolidation"
    reason = "Underutilized"
    disruption_class = GRACEFUL
    validates = True
    # What `should_disrupt` keeps per candidate object (emptiness has its own).
    wants: ClassVar[Memo[IdentityMemo[Candidate, Gate]]] = _WANTS

    def __init__(
        self,
        cluster: Cluster,
        provisioner: Provisioner,
        cloud_provider: CloudProvider,
        clock: Clock,
        *,
        nodepools: Callable[[], Sequence[NodePool]],
        budgets: Budgets,
        in_flight: Callable[[], Collection[str]],
        memo: PassMemo,
        spot_to_spot: bool = False,
    ) -> None:
        self.cluster = cluster
        self.provisioner = provisioner
        self.cloud_provider = cloud_provider
        self.clock = clock
        self.nodepools = nodepools
        self.budgets = budgets
        self.in_flight = in_flight
        self.memo = memo
        self.spot_to_spot = spot_to_spot
        self._last_state: float | None = None
        self._shared: PassShared | None = None
        self._wants = memo.memos[self.wants].lookup
        self._sort_key = memo.memos[_SORT_KEY].lookup
        # NodeClaim -> why the last `compute` found no command for it alone (single-node).
        self.unconsolidatable: dict[str, str] = {}
        # What `_decide` said of the candidate it was last asked of alone ("" for none).
        self._said = ""
        # NodeClaim -> (the candidate object, why) for candidates the pre-check ruled out.
        self._ruled_out: dict[str, tuple[Candidate, str]] = {}

    # IsConsolidated / markConsolidated
    def is_consolidated(self) -> bool:
        return self._last_state == self.memo.current()

    def mark_consolidated(self) -> None:
        self._last_state = self.memo.current()

    def now(self) -> dt.datetime:
        return self.clock.now()

    def should_disrupt(self, c: Candidate) -> bool:
        """consolidation.go `ShouldDisrupt`, shared by multi- and single-node: what does not
        read the clock kept per candidate object (`_wants`), the clock compared each time."""
        return gate_passed(self._wants(c), self.clock.now())

    def sort(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Price per unit of disruption, highest first (ties by name: Go's sort is unstable);
        the key kept per candidate object (every pass sorts the same ones)."""
        return sorted(candidates, key=self._sort_key)

    @staticmethod
    def within_budgets(
        candidates: Iterable[Candidate], budgets: dict[str, int]
    ) -> tuple[list[Candidate], bool]:
        """The candidates, in order, while their NodePool's budget lasts (each taken one uses
        one of `budgets`, which is changed); and whether a budget held any back."""
        taken: list[Candidate] = []
        constrained = False
        for c in candidates:
            if budgets.get(c.nodepool.name, 0) <= 0:
                constrained = True
                continue
            taken.append(c)
            budgets[c.nodepool.name] -= 1
        return taken, constrained

    @contextlib.contextmanager
    def computing(self) -> Iterator[None]:
        """While a `compute` runs, the simulations it asks for share one set of inputs and one
        pre-check (`room.py`), built when first needed: the cluster does not change while a
        method computes. Outside (validation, tests) each simulation gathers its own."""
        self._shared = self.memo.shared or PassShared()
        try:
            yield
        finally:
            self._shared = None

    def simulate(
        self, candidates: Sequence[Candidate], inputs: PassInputs | None = None
    ) -> Simulation | None:
        return simulate_scheduling(
            self.cluster,
            self.provisioner,
            candidates,
            nodepools=self.nodepools,
            now=self.now(),
            consolidation=True,
            inputs=inputs,
        )

    def compute_consolidation(self, candidates: Sequence[Candidate]) -> Proposal | None:
        """`computeConsolidation` (see the module docstring); None: no action. Inside a
        `compute` (after `begin`), candidates the pre-check rules out are not simulated: the
        simulation would end in None too (`room.py`)."""
        room = self._pass_room()
        if room is not None and not room.may_move(candidates):
            return None
        return self._decide(candidates)

    def _pass_room(self) -> Room | None:
        """The pre-check of the running `compute` (built when first asked, with the pass's
        simulation inputs); None outside one."""
        shared = self._shared
        if shared is None:
            return None
        if shared.room is None:
            shared.room = Room(
                self._pass_inputs(shared),
                self.now(),
                spot_to_spot=self.spot_to_spot,
                offers=self.memo.offers,
                cache=self.memo.rooms,
                memo=self.memo.room,
            )
        return shared.room

    def _pass_inputs(self, shared: PassShared) -> PassInputs:
        if shared.inputs is None:
            shared.inputs = pass_inputs(
                self.cluster,
                self.provisioner,
                nodepools=self.nodepools,
                now=self.now(),
                snap=self.memo.snapshot(),
            )
        return shared.inputs

    def _decide(self, candidates: Sequence[Candidate]) -> Proposal | None:
        """`compute_consolidation` past the pre-check: the simulation and the prices."""
        self._said = ""
        shared = self._shared
        inputs: PassInputs | None = None
        if shared is not None:
            inputs = self._pass_inputs(shared)
            if shared.room is not None:
                # The pending pods' share of the existing nodes (`pending_room.py`), asked
                # only of candidates the room let through.
                if shared.pending is None:
                    shared.pending = PendingRoom(
                        inputs, self.provisioner, shared.room, self.memo.memos
                    )
                if shared.pending.rules_out(candidates):
                    return None
        sim = self.simulate(candidates, inputs)
        if sim is None or not sim.all_non_pending_scheduled:
            return None
        new = sim.results.new_node_claims
        if not new:
            return Proposal(self.name, self.reason, tuple(candidates))
        if len(new) != 1:
            self._said = f"Can't remove without creating {len(new)} candidates"
            return None
        claim = new[0]
        price = sum(c.price for c in candidates)
        reqs = claim.requirements
        ct = reqs.get(CAPACITY_TYPE)
        allows_spot = ct is None or ct.has("spot")
        if all(c.capacity_type == "spot" for c in candidates) and allows_spot:
            if not self.spot_to_spot:
                self._said = SPOT_TO_SPOT_DISABLED
                return None  # the gate is off: no spot-to-spot command, prices aside
            return self._spot_to_spot(
                candidates, claim, order_by_price(claim.instance_types, reqs), price
            )
        kept = _below(order_by_price(claim.instance_types, reqs), reqs, price)
        if not kept:
            self._said = _price_words(claim.instance_types, reqs, price, kept)
            return None
        if allows_spot and (ct is None or ct.has("on-demand")):
            reqs = reqs.add(Requirement.new(CAPACITY_TYPE, "In", ["spot"]))
        return Proposal(self.name, self.reason, tuple(candidates), [_with_types(claim, kept, reqs)])

    def _spot_to_spot(
        self,
        candidates: Sequence[Candidate],
        claim: SolverNodeClaim,
        types: Sequence[InstanceType],
        price: float,
    ) -> Proposal | None:
        if not self.spot_to_spot:
            return None
        reqs = claim.requirements.add(Requirement.new(CAPACITY_TYPE, "In", ["spot"]))
        spot = [it for it in types if it.has_available_offering(reqs)]
        kept = _below(spot, reqs, price)
        if not kept:
            self._said = _price_words(spot, reqs, price, kept)
            return None
        if len(candidates) == 1:
            if len(kept) < SPOT_TO_SPOT_THRESHOLD:
                self._said = (
                    f"SpotToSpotConsolidation requires {SPOT_TO_SPOT_THRESHOLD} cheaper instance "
                    f"type options than the current candidate to consolidate, got {len(kept)}"
                )
                return None
            limit = SPOT_TO_SPOT_THRESHOLD
            if reqs.has_min_values():
                limit = max(limit, satisfies_min_values(kept, reqs)[0])
            kept = kept[:limit]
        return Proposal(self.name, self.reason, tuple(candidates), [_with_types(claim, kept, reqs)])

    # ---- validation (ConsolidationValidator) ----------------------------------------------
    def current_candidates(self) -> list[Candidate]:
        found, _ = get_candidates(
            self.cluster,
            self.cloud_provider,
            self.now(),
            disruption_class=GRACEFUL,
            in_flight=self.in_flight(),
        )
        return [c for c in found if self.should_disrupt(c)]

    def _still_candidates(self, original: Sequence[Candidate]) -> list[Candidate] | None:
        names = {c.name for c in original}
        current = [c for c in self.current_candidates() if c.name in names]
        if len(current) != len(original):
            return None
        budgets = self.budgets(self.cluster, self.reason, now=self.now())
        for c in current:
            if budgets.get(c.nodepool.name, 0) <= 0:
                return None
            budgets[c.nodepool.name] -= 1
        return current

    def validate(self, proposal: Proposal) -> Proposal | None:
        """After the validation delay: the command stands only if nothing it rests on moved."""
        current = self._still_candidates(proposal.candidates)
        if current is None:
            return None
        before = self.cluster.snapshot()
        sim = self.simulate(current)
        if sim is None or not sim.all_non_pending_scheduled:
            return None
        new = sim.results.new_node_claims
        if len(new) > 1 or len(new) != len(proposal.new_claims):
            return None
        if new:
            wanted = {it.name for it in proposal.new_claims[0].instance_types}
            if not wanted <= {it.name for it in new[0].instance_types}:
                return None
        # kubernetes-sigs/karpenter#1167: the candidates once more, as the cluster may have
        # changed during the simulation. Here it changes only through its own methods, each
        # of which moves its version and so hands out a new snapshot: the same snapshot
        # object means the same cluster (and the clock has not moved), so the same answer.
        if self.cluster.snapshot() is not before and self._still_candidates(current) is None:
            return None
        return proposal


def _filter_out_same_instance_type(
    claim: SolverNodeClaim, candidates: Sequence[Candidate]
) -> SolverNodeClaim | None:
    """`filterOutSameInstanceType`: when a replacement type is one being removed, keep only
    types cheaper than the cheapest such removed node (else just delete fewer nodes)."""
    existing: set[str] = set()
    prices: dict[str, float] = {}
    for c in candidates:
        if c.instance_type is None:
            continue
        existing.add(c.instance_type.name)
        labels = Requirements.from_labels(c.state_node.labels)
        offered = [o.price for o in c.instance_type.offerings if o.allowed_by(labels)]
        if offered:
            prices[c.instance_type.name] = min(prices.get(c.instance_type.name, math.inf), *offered)
    max_price = math.inf
    for it in claim.instance_types:
        if it.name in existing:
            max_price = min(max_price, prices.get(it.name, 0.0))
    kept = _below(claim.instance_types, claim.requirements, max_price)
    if kept is None:
        return None
    return _with_types(claim, kept, claim.requirements)


class MultiNodeConsolidation(Consolidation):
    """multinodeconsolidation.go."""

    name = "multi-node-consolidation"

    def compute(
        self,
        budgets: dict[str, int],
        candidates: list[Candidate],
        totals: Mapping[str, PoolTotals],
    ) -> list[Proposal]:
        self.unconsolidatable = {}
        if self.is_consolidated():
            return []
        disruptable, constrained = self.within_budgets(self.sort(candidates), budgets)
        limit = min(len(disruptable), MULTI_NODE_CONSOLIDATION_MAX_CANDIDATES)
        with self.computing():
            found = self._first_n(disruptable, limit, totals)
        if found is None:
            if not constrained:
                self.mark_consolidated()
            return []
        return [found]

    def _first_n(
        self, candidates: list[Candidate], limit: int, totals: Mapping[str, PoolTotals]
    ) -> Proposal | None:
        """`firstNConsolidationOption`: binary search for the longest valid prefix (>= 2)."""
        if len(candidates) < 2:
            return None
        low, high = 1, limit
        if len(candidates) <= limit:
            high = len(candidates) - 1
        saved: Proposal | None = None
        while low <= high:
            mid = (low + high) // 2
            batch = candidates[: mid + 1]
            found = self.compute_consolidation(batch)
            valid = found is not None and found.decision == "delete"
            if found is not None and found.new_claims:
                narrowed = _filter_out_same_instance_type(found.new_claims[0], batch)
                if narrowed is not None and narrowed.instance_types:
                    found.new_claims[0] = narrowed
                    valid = True
            if valid and found is not None and not approve_balanced(found, totals):
                valid = False
            if valid:
                saved = found
                low = mid + 1
            else:
                high = mid - 1
        return saved


class SingleNodeConsolidation(Consolidation):
    """singlenodeconsolidation.go."""

    name = "single-node-consolidation"

    def order(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """The consolidation sort, then one candidate of each NodePool in turn (NodePools by
        name; Go's map order is random)."""
        by_pool: dict[str, list[Candidate]] = {}
        for c in self.sort(candidates):
            by_pool.setdefault(c.nodepool.name, []).append(c)
        out: list[Candidate] = []
        longest = max((len(v) for v in by_pool.values()), default=0)
        for i in range(longest):
            for name in sorted(by_pool):
                if i < len(by_pool[name]):
                    out.append(by_pool[name][i])
        return out

    def compute(
        self,
        budgets: dict[str, int],
        candidates: list[Candidate],
        totals: Mapping[str, PoolTotals],
    ) -> list[Proposal]:
        self.unconsolidatable = {}
        if self.is_consolidated():
            return []
        constrained = False
        with self.computing():
            room: Room | None = None
            for c in self.order(candidates):
                if budgets.get(c.nodepool.name, 0) <= 0:
                    constrained = True
                    continue
                if not _can_pass_threshold(c, totals):
                    continue
                # `compute_consolidation([c])` with its pre-check asked here: most candidates
                # of a pass stop at it.
                if room is None:
                    room = self._pass_room()
                if room is not None and not room.may_move_one(c):
                    self._why_not(c)
                    continue
                found = self._decide([c])
                if found is None and self._said:
                    self.unconsolidatable[c.node_claim.name] = self._said
                if found is None or not approve_balanced(found, totals):
                    continue
                return [found]
        if not constrained:
            self.mark_consolidated()
        return []

    def _why_not(self, c: Candidate) -> None:
        """Why a candidate the pre-check ruled out has no command (`unconsolidatable`),
        without its simulation (which the pre-check is there to spare): when the pre-check
        lets its pods through with a replacement of any price, only a cheaper one was
        missing ("Can't replace with a cheaper node"); otherwise its pods cannot all move
        onto the other nodes and one new one, which Karpenter words with the scheduler's
        errors: nothing is said. A spot candidate with spot-to-spot off is not asked (its
        words depend on the replacement's capacity type, which only the simulation knows).
        Kept per candidate object (a new one comes with any change to its node or pods)."""
        kept = self._ruled_out.get(c.node_claim.name)
        if kept is None or kept[0] is not c:
            said = ""
            room = self._pass_room()
            spot_held = c.capacity_type == "spot" and not self.spot_to_spot
            if room is not None and not spot_held and room.may_move_one(replace(c, price=math.inf)):
                said = NO_CHEAPER
            kept = (c, said)
            if len(self._ruled_out) >= 4096:
                self._ruled_out.clear()
            self._ruled_out[c.node_claim.name] = kept
        if kept[1]:
            self.unconsolidatable[c.node_claim.name] = kept[1]
