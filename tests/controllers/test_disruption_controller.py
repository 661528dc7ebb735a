"""The disruption loop and the orchestration queue (karpenter-disruption.md §1.1, §1.2, §1.12,
§1.15): polling, method order, one command per pass, the 15 s validation wait and what it
re-checks, no wait for drift, budgets, and replacements initialized before candidates drain."""

from __future__ import annotations

from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.types import FakeCloudProvider, InsufficientCapacityError
from gpucap.controllers.disruption.constants import COMMAND_VALIDATION_DELAY_S, POLLING_PERIOD_S
from gpucap.controllers.disruption.controller import (
    DISRUPTION_REASON,
    DisruptionResult,
    ProvisioningController,
    command_timeout,
)
from gpucap.controllers.nodeclaim.conditions import condition, with_condition
from gpucap.scheduling.taints import DISRUPTED_TAINT
from gpucap.state.cluster import Cluster
from tests.builders import edit, load
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool

HOUR = 3600.0


def tainted(e: Env, node: str) -> bool:
    n = e.cluster.node(node)
    assert n is not None
    return any(t.key == DISRUPTED_TAINT.key for t in n.spec.taints)


def drift(e: Env, name: str, reason: str = "AMIDrift") -> None:
    claim = e.cluster.node_claim(name)
    assert claim is not None
    e.cluster.update_node_claim(
        with_condition(claim, "Drifted", "True", e.clock.now(), reason=reason)
    )


def test_nothing_to_do_polls_every_10_seconds() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("n", "g5.xlarge", pods=("default/a",))
    assert e.reconcile().requeue_after == POLLING_PERIOD_S
    e.clock.advance(3)
    early = e.reconcile()  # the world may call early (for the queue): the loop waits its turn
    assert (early.decided, early.requeue_after) == (None, POLLING_PERIOD_S - 3)


def test_validation_waits_15_seconds_and_abandons_a_stale_command() -> None:
    e = env(pool(policy="WhenEmpty"), gpu_pod("late"))
    e.node("idle", "g5.xlarge")
    first = e.reconcile()
    assert first.decided is None
    assert first.requeue_after == COMMAND_VALIDATION_DELAY_S
    waiting = e.disruption.waiting()
    assert waiting is not None
    assert [c.name for c in waiting.candidates] == ["idle"]
    e.clock.advance(14)
    assert e.reconcile().requeue_after == 1.0  # still waiting; nothing decided
    e.bind("default/late", "idle")  # a pod lands on it during the wait
    e.clock.advance(1)
    after = e.reconcile()
    assert after.decided is None
    assert after.deleting == ()
    assert e.disruption.waiting() is None
    assert not tainted(e, "idle")
    assert e.cluster.marked_for_deletion() == set()


def test_a_command_that_still_holds_starts_exactly_after_15_seconds() -> None:
    e = env(pool(policy="WhenEmpty"))
    e.node("idle", "g5.xlarge")
    e.reconcile()
    e.clock.advance(COMMAND_VALIDATION_DELAY_S - 0.5)
    assert e.reconcile().decided is None
    e.clock.advance(0.5)
    result = e.reconcile()
    assert result.decided is not None
    assert result.decided.method == "emptiness"
    assert result.deleting == ("idle",)
    assert result.requeue_after == 0.0  # a method acted: the next pass runs at once


def test_validation_rejects_a_replacement_that_is_no_longer_enough() -> None:
    e = env(pool(), gpu_pod("vllm-0"))
    e.node("big", "g5.12xlarge", gpus=4, pods=("default/vllm-0",))
    e.reconcile()  # single-node: replace the g5.12xlarge by a g5.xlarge
    proposal = e.disruption.waiting()
    assert proposal is not None
    assert proposal.decision == "replace"
    e.cluster.add_pod(load(gpu_pod("vllm-1")).objects.pods[0])
    e.bind("default/vllm-1", "big")  # now two GPUs must move: a g5.xlarge no longer holds them
    e.clock.advance(COMMAND_VALIDATION_DELAY_S)
    assert e.reconcile().decided is None
    assert e.launched == []


def test_candidates_are_drained_only_after_replacements_initialize() -> None:
    e = env(pool(), gpu_pod("vllm-0"))
    e.node("big", "g5.2xlarge", pods=("default/vllm-0",))
    e.reconcile()
    e.clock.advance(COMMAND_VALIDATION_DELAY_S)
    started = e.reconcile()
    assert started.decided is not None
    assert started.replacements == tuple(e.launched)
    (replacement,) = started.replacements
    assert started.deleting == ()
    # In flight: the candidate is tainted, marked for deletion and holds its DisruptionReason.
    assert tainted(e, "big")
    assert "big" in e.cluster.marked_for_deletion()
    claim = e.cluster.node_claim("big")
    assert claim is not None
    reason = condition(claim, DISRUPTION_REASON)
    assert reason is not None
    assert reason.reason == "Underutilized"
    for _ in range(30):  # launched, not initialized: no drain
        e.clock.advance(1)
        result = e.reconcile()
        assert result.deleting == ()
        assert result.decided is None
        assert result.requeue_after == 1.0
    e.initialize(replacement)
    assert e.reconcile().deleting == ()  # the queue looks again 1 s after its last look
    e.clock.advance(1)
    done = e.reconcile()
    assert done.deleting == ("big",)
    big = e.cluster.node_claim("big")
    assert big is not None
    assert big.metadata.deletion_timestamp is not None
    assert e.disruption.commands() == []


def test_a_replacement_that_fails_to_launch_abandons_the_command() -> None:
    e = env(pool(), gpu_pod("vllm-0"))
    e.node("big", "g5.2xlarge", pods=("default/vllm-0",))
    e.reconcile()
    e.clock.advance(COMMAND_VALIDATION_DELAY_S)
    assert isinstance(e.provider, FakeCloudProvider)
    e.provider.fail_next(InsufficientCapacityError("no g5.xlarge"))
    started = e.reconcile()
    assert started.decided is not None
    assert e.cluster.node_claim(started.replacements[0]) is None  # the lifecycle deleted it
    assert started.requeue_after == 0.0  # the loop goes on; the queue looks again in 1 s
    assert e.reconcile().decided is None  # big is held by the command meanwhile
    e.clock.advance(1)
    result = e.reconcile()
    assert result.abandoned == ("big",)
    assert result.deleting == ()
    assert not tainted(e, "big")
    assert e.cluster.marked_for_deletion() == set()
    claim = e.cluster.node_claim("big")
    assert claim is not None
    assert condition(claim, DISRUPTION_REASON) is None


def test_a_replacement_that_never_initializes_times_out_after_10_minutes() -> None:
    e = env(pool(), gpu_pod("vllm-0"))
    e.node("big", "g5.2xlarge", pods=("default/vllm-0",))
    e.reconcile()
    e.clock.advance(COMMAND_VALIDATION_DELAY_S)
    e.reconcile()
    assert command_timeout(1) == 600.0
    e.clock.advance(600)
    assert e.reconcile().abandoned == ()
    e.clock.advance(1)
    assert e.reconcile().abandoned == ("big",)
    assert not tainted(e, "big")


def test_one_command_per_pass_and_emptiness_before_consolidation() -> None:
    e = env(pool(), gpu_pod("a"), gpu_pod("b"))
    e.node("idle", "g5.xlarge")
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    drift(e, "y")
    methods = []
    for result in e.run(120):
        if result.decided is not None:
            methods.append((result.decided.method, [c.name for c in result.decided.candidates]))
    # Emptiness first (Karpenter >= v1.5 puts it before drift), then drift, each in a pass of
    # its own; x stays: its pod and y's would need a new g5.12xlarge, no cheaper than x.
    assert methods == [("emptiness", ["idle"]), ("drift", ["y"])]


def test_drift_has_no_validation_wait_and_ignores_consolidate_after() -> None:
    e = env(pool(policy="WhenEmpty", after="Never"), gpu_pod("a"))
    e.node("old", "g5.xlarge", pods=("default/a",))
    drift(e, "old")
    result = e.reconcile()  # the very first pass decides
    assert result.decided is not None
    assert (result.decided.method, result.decided.reason) == ("drift", "Drifted")
    assert result.decided.decision == "replace"  # its pod needs a new node
    assert "drifted: AMIDrift" in result.decided.message


def test_a_zero_budget_blocks_every_graceful_method() -> None:
    def none(cluster: Cluster, reason: str, **_: object) -> dict[str, int]:
        return {np.name: 0 for np in cluster.nodepools()}

    e = env(pool(), budgets=none)
    e.node("idle", "g5.xlarge")
    drift(e, "idle")
    assert e.run(HOUR) == []


def test_a_leftover_disrupted_taint_is_removed_at_the_start_of_a_pass() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("n", "g5.xlarge", pods=("default/a",))
    node = e.cluster.node("n")
    assert node is not None
    spec = node.spec.model_copy(update={"taints": [*node.spec.taints, DISRUPTED_TAINT]})
    e.cluster.update_node(node.model_copy(update={"spec": spec}))
    e.reconcile()
    assert not tainted(e, "n")


def test_a_drift_replacement_that_always_fails_is_retried_at_the_polling_period() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("old", "g5.xlarge", pods=("default/a",))
    drift(e, "old")
    assert isinstance(e.provider, FakeCloudProvider)
    e.provider.fail_next(*(InsufficientCapacityError("none") for _ in range(100)))
    results = e.run(60)
    starts = [r for r in results if r.decided is not None]
    # The pass after a start finds old held by its command and polls again in 10 s; the queue
    # gives the command up 1 s after the start: one attempt per polling period, no spin.
    assert len(starts) == 7  # t = 0, 10, ..., 60
    assert sum(len(r.abandoned) for r in results) == 6  # t = 1, 11, ..., 51


def test_static_drift_waits_for_the_static_capacity_gate() -> None:
    static = edit(pool(), "spec.replicas", 1)
    for gate, want in [(False, []), (True, [("static-drift", ["s"])])]:
        e = env(static, static_capacity=gate)
        e.node("s", "g5.xlarge")
        drift(e, "s")
        got = [
            (r.decided.method, [c.name for c in r.decided.candidates])
            for r in e.run(60)
            if r.decided is not None
        ]
        assert got == want, gate


def test_a_do_not_disrupt_pod_holds_drift_unless_the_claim_has_a_termination_grace_period() -> None:
    protect = {"karpenter.sh/do-not-disrupt": "true"}
    for tgp, want in [(None, []), ("1h", ["drift"])]:
        e = env(pool(), edit(gpu_pod("a"), "metadata.annotations", protect))
        e.node("old", "g5.xlarge", pods=("default/a",))
        claim = e.cluster.node_claim("old")
        assert claim is not None
        spec = claim.spec.model_copy(update={"termination_grace_period": tgp})
        e.cluster.update_node_claim(claim.model_copy(update={"spec": spec}))
        drift(e, "old")
        got = [r.decided.method for r in e.run(30) if r.decided is not None]
        assert got == want, tgp
        if want:
            # the pod will not be evicted before the deadline: no capacity is made for it
            assert e.launched == []


def test_a_node_inside_its_consolidate_after_takes_no_pod_moving_off_a_candidate() -> None:
    e = env(pool(after="1h"), gpu_pod("a"), gpu_pod("b"), gpu_pod("c"))
    e.node("x", "g5.xlarge", pods=("default/a",))  # the cheapest type: only a delete helps
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    e.clock.advance(50 * 60)
    e.bind("default/c", "y")  # y's consolidateAfter now runs to 1h50m
    early = e.run(60 * 60 - 1)  # to 1h50m: x is consolidatable from 1h, but a may not go to y
    assert early == []
    # From 1h50m y takes a (at the latest when the 5-minute consolidation state turns over).
    later = e.run(10 * 60)
    assert [r.decided.candidates[0].name for r in later if r.decided is not None] == ["x"]


class _Provisioning:
    """A provisioning controller (`ProvisioningController`) with NodePools chosen by the test
    and names of its own; `cluster` is set once the environment is built."""

    def __init__(self, *, ready: bool = True) -> None:
        self.ready = ready
        self.cluster: Cluster | None = None
        self.asked: list[str] = []

    def ready_nodepools(self) -> list[NodePool]:
        assert self.cluster is not None
        return self.cluster.nodepools() if self.ready else []

    def names(self, nodepool: str) -> str:
        self.asked.append(nodepool)
        return f"{nodepool}-from-provisioner-{len(self.asked)}"


def _drifted(provisioning: _Provisioning | None = None) -> tuple[Env, DisruptionResult]:
    options: dict[str, ProvisioningController] = {}
    if provisioning is not None:
        options["provisioning"] = provisioning
    e = env(pool(policy="WhenEmpty", after="Never"), gpu_pod("a"), **options)
    if provisioning is not None:
        provisioning.cluster = e.cluster
    e.node("old", "g5.xlarge", pods=("default/a",))
    drift(e, "old")
    return e, e.reconcile()


def test_a_replacement_is_named_by_the_provisioning_controller() -> None:
    provisioning = _Provisioning()
    e, result = _drifted(provisioning)
    assert result.decided is not None
    assert result.replacements == ("gpu-from-provisioner-1",)
    assert provisioning.asked == ["gpu"]
    assert e.cluster.node_claim("gpu-from-provisioner-1") is not None


def test_without_a_provisioning_controller_replacements_get_names_of_their_own() -> None:
    _, result = _drifted()
    assert result.replacements == ("gpu-disruption-1",)


def test_a_nodepool_the_provisioning_controller_leaves_out_takes_no_replacement() -> None:
    # Drift replaces only when the pods fit somewhere: with no NodePool Ready, nowhere.
    _, result = _drifted(_Provisioning(ready=False))
    assert result.decided is None
    assert result.replacements == ()
