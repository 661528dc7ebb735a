"""The disruption controller: Karpenter's disruption loop and orchestration queue over a
`Cluster` (kubernetes-sigs/karpenter `pkg/controllers/disruption/controller.go`, `queue.go`,
`validation.go` @ 2266468104f3; karpenter-disruption.md §1.1, §1.12, §1.15).

One pass of the loop (`reconcile`), at most every `POLLING_PERIOD_S` (10 s) while nothing
happens and again at once after a pass that started a command:
1. when cluster state is not synced (a NodeClaim without a provider ID) wait 1 s;
2. remove the `karpenter.sh/disrupted:NoSchedule` taint and the DisruptionReason condition from
   nodes no command holds and nothing is deleting (left over from an abandoned command);
3. try the methods in Karpenter's order: emptiness, static drift, drift, multi-node and
   single-node consolidation. For each: its candidates (`candidates.py`, filtered by the
   method), the budget mapping for its reason, its proposals. The first method with a proposal
   ends the pass: drift's start at once; emptiness' and consolidation's are checked again after
   `COMMAND_VALIDATION_DELAY_S` (15 s), during which Karpenter's loop waits (so does this one:
   `reconcile` returns `requeue_after` and resumes the check when called at or after it). A
   proposal that no longer holds is dropped and the pass goes on with the next method.
Starting a command (`StartCommand`): taint its candidates' nodes, set their DisruptionReason,
create the replacements (named by the provisioning controller, added to the cluster, then handed
to `on_create`, which launches them),
mark the candidates for deletion and queue the command. The queue (`waitOrTerminate`) looks at a
command with replacements every `QUEUE_BASE_DELAY_S` (1 s; a delete-only command is carried out
as soon as it is queued): once every replacement is Initialized, each candidate is handed to
`Termination.delete(name, reason)`; a replacement that is gone (its launch failed) or a command
older than the timeout (10 minutes for fewer than 7,500 commands) abandons the command: the
candidates lose the taint, the condition and the mark, and stay. Replacements already made stay.
Called by the simulator's world every `POLLING_PERIOD_S` and when `requeue_after` says.

What it needs of provisioning it reads through the provisioning controller, as Karpenter's
disruption controller reads it through its `provisioner` (`provisioner.go` @ 2266468104f3):
the NodePools a scheduling simulation may use (`NewScheduler` lists the Ready ones itself) and
each replacement's name (`Create`; the API server's `generateName` in Karpenter, the run's one
`NodeClaimNames` here). The simulator's pod controller is that controller
(`sim/podcontroller.py`); without one, every applied NodePool and a namer of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpucap.apis.core import Node
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.types import CloudProvider, CloudProviderError
from gpucap.controllers.disruption.budgets import (
    PoolCounts,
    blocking_budgets,
    budget_mapping,
    pool_counts,
)
from gpucap.controllers.disruption.candidates import (
    DRIFTED_REASON,
    Selected,
    get_candidates,
    select_candidates,
)
from gpucap.controllers.disruption.consolidation import (
    SHOULD_DISRUPT_MESSAGE,
    Budgets,
    Consolidation,
    MultiNodeConsolidation,
    PassMemo,
    SingleNodeConsolidation,
    estimated_savings,
)
from gpucap.controllers.disruption.constants import COMMAND_VALIDATION_DELAY_S, POLLING_PERIOD_S
from gpucap.controllers.disruption.emptiness import Emptiness
from gpucap.controllers.disruption.methods import Drift, StaticDrift
from gpucap.controllers.disruption.types import (
    EVENTUAL,
    GRACEFUL,
    Blocked,
    Candidate,
    Command,
    Method,
    PoolTotals,
    Proposal,
)
from gpucap.controllers.nodeclaim.conditions import INITIALIZED, is_true, with_condition
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.controllers.provisioning.names import NodeClaimNames
from gpucap.controllers.provisioning.provisioner import Provisioner, to_node_claim
from gpucap.runtime.clock import Clock
from gpucap.runtime.memo import Memo
from gpucap.scheduling.taints import DISRUPTED_TAINT
from gpucap.state.cluster import Cluster

__all__ = [
    "DISRUPTION_REASON",
    "NOT_SYNCED_REQUEUE_S",
    "QUEUE_BASE_DELAY_S",
    "Disruption",
    "DisruptionResult",
    "ProvisioningController",
    "command_timeout",
]

# NodeClaim condition set on a candidate while its command runs (`ConditionTypeDisruptionReason`).
DISRUPTION_REASON = "DisruptionReason"
# queue.go `queueBaseDelay`: how often a queued command is looked at.
QUEUE_BASE_DELAY_S = 1.0
# controller.go: cluster state not synced -> requeue after 1 s.
NOT_SYNCED_REQUEUE_S = 1.0
# queue.go `minRetryDuration`, `maxRetryDuration`, `retryDurationScale`.
_MIN_RETRY_S = 600.0
_MAX_RETRY_S = 3600.0
_RETRY_SCALE_S = 0.08


def command_timeout(commands: int) -> float:
    """`GetMaxRetryDuration`: 80 ms per queued command, clamped to [10 min, 1 h]."""
    return min(max(_RETRY_SCALE_S * commands, _MIN_RETRY_S), _MAX_RETRY_S)


@dataclass(frozen=True)
class DisruptionResult:
    """What one `reconcile` did, and what its loop found held back (Karpenter publishes an
    event for each as it finds it; the simulator's `NodeClaimEvents.disrupted` says each when
    it first appears or changes). `blocked`: per managed NodeClaim the graceful candidate
    selection held back (`candidates.Selected.blocked`, the DisruptionBlocked event's reason),
    None when this reconcile selected no candidates (the queue or a validation only).
    `budget_blocked`: per disruption reason whose budget mapping the pass built, the NodePools
    with nodes whose budgets allow 0 (`budgets.blocking_budgets`). `unconsolidatable`: per
    NodeClaim single-node consolidation found no command for, or consolidation's
    `ShouldDisrupt` turned away, Karpenter's Unconsolidatable message
    (`Consolidation.unconsolidatable`, `should_disrupt_message`). `drift_blocked`: per drifted
    NodeClaim whose pods would not all schedule elsewhere, drift's DisruptionBlocked reason
    (`Drift.blocked`); None when the pass did not reach drift."""

    decided: Command | None  # a new command this pass (emit DisruptionDecision)
    replacements: tuple[str, ...]  # NodeClaim names created this pass
    deleting: tuple[str, ...]  # candidates handed to termination this pass
    requeue_after: float | None
    abandoned: tuple[str, ...] = ()  # candidates of commands given up this pass (un-marked)
    blocked: Mapping[str, Blocked] | None = None
    budget_blocked: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unconsolidatable: Mapping[str, str] = field(default_factory=dict)
    drift_blocked: Mapping[str, Blocked] | None = None


class ProvisioningController(Protocol):
    """What the disruption controller reads of Karpenter's provisioner besides its scheduler
    (see the module docstring): `ready_nodepools()`, the NodePools a scheduling simulation may
    use, and `names(nodepool)`, the next NodeClaim name of a NodePool. The simulator's
    `PodController` is one."""

    def ready_nodepools(self) -> Sequence[NodePool]: ...

    def names(self, nodepool: str) -> str: ...


class _EveryNodePool:
    """The provisioning controller of a `Disruption` given none (tests): every applied NodePool,
    and names of its own (`<nodepool>-disruption-<n>`, never one the cluster holds)."""

    def __init__(self, cluster: Cluster) -> None:
        self.ready_nodepools = cluster.nodepools
        self.names = NodeClaimNames(cluster.name_in_use, infix="disruption-").next


@dataclass(slots=True)
class _Queued:
    command: Command
    started: float
    replacements: tuple[str, ...]
    next_check: float = 0.0  # the queue looks at a command at most every QUEUE_BASE_DELAY_S


@dataclass(slots=True)
class _Waiting:
    method: int
    proposal: Proposal
    due: float


@dataclass(slots=True)
class _Pass:
    deleting: list[str] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)
    blocked: Mapping[str, Blocked] | None = None
    budget_blocked: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unconsolidatable: dict[str, str] = field(default_factory=dict)
    drift_blocked: dict[str, Blocked] | None = None


class Disruption:
    """Karpenter's disruption controller and queue (see the module docstring).

    `budgets(cluster, reason, now=...) -> {nodepool: allowed}` is the budget mapping
    (default: `budgets.budget_mapping`); `on_create(claim)` launches a replacement already added
    to the cluster (the world's lifecycle; a `CloudProviderError` abandons the command);
    `provisioning` names it and says which NodePools the scheduler may use (see
    `ProvisioningController`; default: every applied NodePool); `spot_to_spot` and
    `static_capacity` are Karpenter's feature gates (both off by default).
    """

    name = "disruption"

    def __init__(
        self,
        cluster: Cluster,
        provisioner: Provisioner,
        cloud_provider: CloudProvider,
        termination: Termination,
        clock: Clock,
        *,
        budgets: Budgets | None = None,
        on_create: Callable[[NodeClaim], None] | None = None,
        provisioning: ProvisioningController | None = None,
        spot_to_spot: bool = False,
        static_capacity: bool = False,
    ) -> None:
        self.cluster = cluster
        self.provisioner = provisioner
        self.cloud_provider = cloud_provider
        self.termination = termination
        self.clock = clock
        self._budgets: Budgets = budgets if budgets is not None else budget_mapping
        self._on_create = on_create
        self.provisioning = provisioning if provisioning is not None else _EveryNodePool(cluster)
        pools = self.provisioning.ready_nodepools
        self.memo = PassMemo(cluster, clock)
        shared = {
            "nodepools": pools,
            "budgets": self.budgets,
            "in_flight": self.in_flight,
            "memo": self.memo,
            "spot_to_spot": spot_to_spot,
        }
        args = (cluster, provisioner, cloud_provider, clock)
        self.methods: list[Method] = [
            Emptiness(*args, **shared),  # type: ignore[arg-type]
            StaticDrift(
                cluster,
                provisioner,
                cloud_provider,
                in_flight=self.in_flight,
                enabled=static_capacity,
            ),
            Drift(cluster, provisioner, clock, nodepools=pools),
            MultiNodeConsolidation(*args, **shared),  # type: ignore[arg-type]
            SingleNodeConsolidation(*args, **shared),  # type: ignore[arg-type]
        ]
        self._queue: list[_Queued] = []
        self._waiting: _Waiting | None = None
        self._next_loop = 0.0
        # Whether the last pass skipped a consolidation method as consolidated (see
        # `revisit_at`).
        self._skipped = False

    # ---- seams ------------------------------------------------------------------------------
    def budgets(self, cluster: Cluster, reason: str, **kw: object) -> dict[str, int]:
        return dict(self._budgets(cluster, reason, **kw))

    def _pass_budgets(self, reason: str) -> dict[str, int]:
        """`budgets` inside a pass: the default mapping reads the pass's snapshot."""
        shared = self.memo.shared
        if self._budgets is not budget_mapping or shared is None:
            return self.budgets(self.cluster, reason, now=self.clock.now())
        # Nothing changes within a pass: the nodes are counted once for every reason, and a
        # reason's mapping (multi- and single-node both ask for Underutilized) computed once.
        hit = shared.budgets.get(reason)
        if hit is None:
            if shared.counts is None:
                shared.counts = pool_counts(self.cluster, self.memo.snapshot())
            hit = shared.budgets[reason] = dict(
                self._budgets(self.cluster, reason, now=self.clock.now(), counts=shared.counts)
            )
        return dict(hit)

    def _blocking(self, reason: str) -> tuple[str, ...]:
        """The NodePools whose budgets allow none of their nodes to go for `reason`
        (`budgets.blocking_budgets`, over the pass's node counts)."""
        shared = self.memo.shared
        counts = shared.counts if shared is not None else None
        if not isinstance(counts, PoolCounts):
            counts = pool_counts(self.cluster, self.memo.snapshot())
        return tuple(blocking_budgets(self.cluster, reason, now=self.clock.now(), counts=counts))

    @property
    def next_poll(self) -> float:
        """When (clock seconds) the loop looks for new commands again; a `reconcile` before
        then only runs the queue and a pending validation."""
        return self._next_loop

    def revisit_at(self) -> float | None:
        """When (clock seconds) a method the last pass skipped as consolidated runs again
        though the cluster does not change: the consolidation state's 5-minute reset; None
        when the last pass skipped none. Karpenter polls every 10 s, so a NodeClaim that
        turned consolidatable in a cluster that stood still since a method last found
        nothing is looked at then; the simulator, which skips the idle polls, wakes for it
        (`World._next_disruption_time`)."""
        return self.memo.resets_at() if self._skipped else None

    def in_flight(self) -> set[str]:
        """NodeClaims (candidates) of the commands in the queue."""
        return {c.node_claim.name for q in self._queue for c in q.command.candidates}

    def commands(self) -> list[Command]:
        """The commands in the queue, oldest first."""
        return [q.command for q in self._queue]

    def waiting(self) -> Proposal | None:
        """The proposal waiting for its validation, if any."""
        return self._waiting.proposal if self._waiting is not None else None

    # ---- the pass -----------------------------------------------------------------------------
    def reconcile(self) -> DisruptionResult:
        """One pass: the queue, then (when due) the loop (see the module docstring)."""
        now = self.clock.monotonic()
        done = _Pass()
        self._run_queue(now, done)
        start = 0
        if self._waiting is not None:
            waiting = self._waiting
            if now < waiting.due:
                return self._result(done, None, (), now)
            self._waiting = None
            valid = self.methods[waiting.method].validate(waiting.proposal)
            if valid is not None:
                return self._started([valid], done, now)
            start = waiting.method + 1
        else:
            if now < self._next_loop:
                return self._result(done, None, (), now)
            if not self.cluster.synced():
                self._next_loop = now + NOT_SYNCED_REQUEUE_S
                return self._result(done, None, (), now)
            self._untaint_outdated()
        # Candidates per disruption class, once per pass: nothing changes between the methods
        # of one pass (a method that acts ends it). The eventual class serves only drift,
        # which wants drifted NodeClaims: none, no candidates to build.
        self.memo.new_pass()
        try:
            return self._methods(start, done, now)
        finally:
            self.memo.end_pass()

    def _methods(self, start: int, done: _Pass, now: float) -> DisruptionResult:
        """The methods from `start` on, in order, until one proposes (see `reconcile`)."""
        seen: dict[str, tuple[list[Candidate], dict[str, PoolTotals]]] = {}
        wanted: dict[tuple[str, object], list[Candidate]] = {}
        self._skipped = False
        drifted = self.cluster.memos[DRIFTED_REASON].lookup
        if not any(drifted(c) for c in self.cluster.node_claims()):
            seen[EVENTUAL] = ([], {})
        # The graceful class always: Karpenter's every method selects candidates (and says why
        # the others are held back) before it asks whether it is consolidated. Handed out
        # again by `select_candidates` while the cluster is the same.
        graceful = self._graceful(done)
        seen[GRACEFUL] = (graceful.found, graceful.totals)
        for i in range(start, len(self.methods)):
            method = self.methods[i]
            if isinstance(method, Drift):
                done.drift_blocked = {}  # reached: what it held back before is free now
            if method.is_consolidated():
                self._skipped = True
                continue  # its compute would return nothing (IsConsolidated), candidates aside
            if method.disruption_class not in seen:
                seen[method.disruption_class] = get_candidates(
                    self.cluster,
                    self.cloud_provider,
                    self.clock.now(),
                    disruption_class=method.disruption_class,
                    in_flight=self.in_flight(),
                    snap=self.memo.snapshot(),
                )
            found, totals = seen[method.disruption_class]
            # Multi- and single-node consolidation filter with the same function (the same
            # clock, nothing else of the method read): filtered once per pass for both.
            wants = (method.disruption_class, getattr(type(method), "should_disrupt", method))
            candidates = wanted.get(wants)
            if candidates is None:
                keep = method.should_disrupt
                candidates = wanted[wants] = [c for c in found if keep(c)]
            candidates = list(candidates)
            if not candidates:
                continue
            budgets = self._pass_budgets(method.reason)
            if method.reason not in done.budget_blocked:
                done.budget_blocked[method.reason] = self._blocking(method.reason)
            proposals = method.compute(budgets, candidates, totals)
            if isinstance(method, Consolidation):
                done.unconsolidatable.update(method.unconsolidatable)
            if isinstance(method, Drift):
                done.drift_blocked = dict(method.blocked or {})
            if not proposals:
                continue
            if method.validates:
                self._waiting = _Waiting(i, proposals[0], now + COMMAND_VALIDATION_DELAY_S)
                return self._result(done, None, (), now)
            return self._started(proposals, done, now)
        self._next_loop = now + POLLING_PERIOD_S
        return self._result(done, None, (), now)

    def _graceful(self, done: _Pass) -> Selected:
        """The graceful class's candidates of this pass, with what candidate selection and
        consolidation's `ShouldDisrupt` say is held back noted in `done`."""
        graceful = select_candidates(
            self.cluster,
            self.cloud_provider,
            self.clock.now(),
            disruption_class=GRACEFUL,
            in_flight=self.in_flight(),
            snap=self.memo.snapshot(),
        )
        done.blocked = graceful.blocked
        self._turned_away(graceful.found, done)
        return graceful

    def _turned_away(self, found: Sequence[Candidate], done: _Pass) -> None:
        """Consolidation's `ShouldDisrupt` words for the candidates it turns away before
        their consolidatable condition (`should_disrupt_message`): Karpenter asks it of every
        candidate each pass, before a method checks whether it is consolidated."""
        if not any(isinstance(m, Consolidation) for m in self.methods):
            return
        said = self.cluster.memos[SHOULD_DISRUPT_MESSAGE].lookup
        for c in found:
            message = said(c)
            if message is not None:
                done.unconsolidatable[c.node_claim.name] = message

    def held_back(self) -> DisruptionResult:
        """What a pass says is held back, without its methods: the DisruptionBlocked reasons
        of candidate selection and consolidation's `ShouldDisrupt` words (Karpenter publishes
        both every pass, whatever the methods then find). Called by the simulator instead of
        a pass it skips because no method could find a command (no NodePool consolidates,
        nothing drifted: drift reached, holding nothing back)."""
        now = self.clock.monotonic()
        done = _Pass()
        if not self.cluster.synced():
            return self._result(done, None, (), now)
        self.memo.new_pass()
        try:
            self._graceful(done)
        finally:
            self.memo.end_pass()
        done.drift_blocked = {}
        return self._result(done, None, (), now)

    def _started(self, proposals: list[Proposal], done: _Pass, now: float) -> DisruptionResult:
        decided: Command | None = None
        created: list[str] = []
        for proposal in proposals:
            started = self._start(proposal, now)
            if started is None:
                continue
            decided = decided or started
            created.extend(r.name for r in started.replacements)
        self._run_queue(now, done, deletes_only=True)
        # RequeueImmediately after a start; a start that failed (on_create raised) is an error
        # in Karpenter's loop, retried with backoff: here, at the polling period.
        self._next_loop = now if decided is not None else now + POLLING_PERIOD_S
        return self._result(done, decided, tuple(created), now)

    def _result(
        self, done: _Pass, decided: Command | None, created: tuple[str, ...], now: float
    ) -> DisruptionResult:
        waits = [self._next_loop - now]
        if self._waiting is not None:
            waits = [self._waiting.due - now]
        if self._queue:
            waits.append(min(q.next_check for q in self._queue) - now)
        return DisruptionResult(
            decided,
            created,
            tuple(done.deleting),
            max(0.0, min(waits)),
            tuple(done.abandoned),
            done.blocked,
            dict(done.budget_blocked),
            dict(done.unconsolidatable),
            done.drift_blocked,
        )

    # ---- StartCommand -------------------------------------------------------------------------
    def _start(self, proposal: Proposal, now: float) -> Command | None:
        names = [c.node_claim.name for c in proposal.candidates]
        if set(names) & self.in_flight():
            return None
        for c in proposal.candidates:
            self._mark_disrupted(c.node_claim.name, proposal.reason)
        replacements: list[NodeClaim] = []
        for planned in proposal.new_claims:
            claim = to_node_claim(planned, name=self.provisioning.names(planned.nodepool))
            self.cluster.add_node_claim(claim)
            replacements.append(claim)
        try:
            for claim in replacements:
                if self._on_create is not None:
                    self._on_create(claim)
        except CloudProviderError:
            for name in names:
                self._unmark_disrupted(name)
            return None
        self.cluster.mark_for_deletion(*names)
        command = Command(
            method=proposal.method,
            reason=proposal.reason,
            decision=proposal.decision,
            candidates=proposal.candidates,
            replacements=tuple(replacements),
            message=_message(proposal, [r.name for r in replacements]),
        )
        self._queue.append(
            _Queued(command, now, tuple(r.name for r in replacements), now + QUEUE_BASE_DELAY_S)
        )
        return command

    def _mark_disrupted(self, claim_name: str, reason: str) -> None:
        claim = self.cluster.node_claim(claim_name)
        if claim is None:
            return
        self.cluster.update_node_claim(
            with_condition(claim, DISRUPTION_REASON, "True", self.clock.now(), reason=reason)
        )
        for node in self.cluster.nodes_for_claim(claim):
            if not any(t.key == DISRUPTED_TAINT.key for t in node.spec.taints):
                taints = [*node.spec.taints, DISRUPTED_TAINT]
                spec = node.spec.model_copy(update={"taints": taints})
                self.cluster.update_node(node.model_copy(update={"spec": spec}))

    def _unmark_disrupted(self, claim_name: str) -> None:
        claim = self.cluster.node_claim(claim_name)
        if claim is None:
            return
        conditions = [c for c in claim.status.conditions if c.type != DISRUPTION_REASON]
        if len(conditions) != len(claim.status.conditions):
            status = claim.status.model_copy(update={"conditions": conditions})
            self.cluster.update_node_claim(claim.model_copy(update={"status": status}))
        for node in self.cluster.nodes_for_claim(claim):
            if any(t.key == DISRUPTED_TAINT.key for t in node.spec.taints):
                taints = [t for t in node.spec.taints if t.key != DISRUPTED_TAINT.key]
                spec = node.spec.model_copy(update={"taints": taints})
                self.cluster.update_node(node.model_copy(update={"spec": spec}))

    def _untaint_outdated(self) -> None:
        """Nodes tainted by a command no longer queued, and not being deleted, are untainted."""
        held = self.in_flight()
        marked = self.cluster.marked_for_deletion()
        tainted = self.cluster.memos[_TAINTED].lookup
        for node in self.cluster.nodes():
            if not tainted(node):
                continue
            if node.metadata.deletion_timestamp is not None or node.metadata.name in marked:
                continue
            claim = self.cluster.node_claim_for_node(node)
            if claim is None or claim.name in held or claim.name in marked:
                continue
            if claim.metadata.deletion_timestamp is not None:
                continue
            self._unmark_disrupted(claim.name)

    # ---- the orchestration queue ------------------------------------------------------------
    def _run_queue(self, now: float, done: _Pass, *, deletes_only: bool = False) -> None:
        """One look at every queued command (`deletes_only`: at those without replacements,
        which Karpenter's queue carries out as soon as they are queued; a replacement's launch
        is looked at on the queue's next turn, `QUEUE_BASE_DELAY_S` later)."""
        timeout = command_timeout(len(self._queue))
        for queued in list(self._queue):
            if queued.replacements and (deletes_only or now < queued.next_check):
                continue
            queued.next_check = now + QUEUE_BASE_DELAY_S
            claims = [self.cluster.node_claim(n) for n in queued.replacements]
            if any(c is None for c in claims):
                self._abandon(queued, done)
                continue
            if all(c is not None and is_true(c, INITIALIZED) for c in claims):
                self._queue.remove(queued)
                for c in queued.command.candidates:
                    if self.termination.delete(c.node_claim.name, queued.command.reason):
                        done.deleting.append(c.node_claim.name)
                continue
            if now - queued.started > timeout:
                self._abandon(queued, done)

    def _abandon(self, queued: _Queued, done: _Pass) -> None:
        self._queue.remove(queued)
        names = [c.node_claim.name for c in queued.command.candidates]
        self.cluster.unmark_for_deletion(*names)
        for name in names:
            self._unmark_disrupted(name)
        done.abandoned.extend(names)


def _tainted(node: Node) -> bool:
    return any(t.key == DISRUPTED_TAINT.key for t in node.spec.taints)


# Per Node object (frozen), the run's (`Cluster.memos`): every pass looks at every node for a
# leftover taint.
_TAINTED = Memo.identity(_tainted, size=4096)


def _message(proposal: Proposal, replacements: Sequence[str]) -> str:
    """Plain words for the DisruptionDecision event (Karpenter's command string)."""
    names = ", ".join(c.name for c in proposal.candidates)
    text = f"{proposal.decision}: [{names}]"
    if replacements:
        types = [
            ", ".join(it.name for it in claim.instance_types[:5]) for claim in proposal.new_claims
        ]
        parts = [f"{n} ({t})" if t else n for n, t in zip(replacements, types, strict=True)]
        text += f" -> [{'; '.join(parts)}]"
    if proposal.reason == "Drifted":
        drift = ", ".join(sorted({c.drifted for c in proposal.candidates if c.drifted}))
        return f"{text}; drifted: {drift}" if drift else text
    if proposal.reason == "Empty":
        return f"{text}; empty (savings: ${estimated_savings(proposal):.2f}/h)"
    return f"{text} (savings: ${estimated_savings(proposal):.2f}/h)"
