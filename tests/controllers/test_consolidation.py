"""Consolidation and emptiness rules (karpenter-disruption.md §1.3-§1.11): what is empty, when
consolidateAfter lets a node go, delete versus a strictly cheaper replacement, the spot-to-spot
rule, and what blocks a node. Each test drives the real disruption controller over the
FakeCloudProvider (one over AWS + SimulatedEC2) with the lifecycle making the nodes."""

from __future__ import annotations

from typing import Any

from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.reserved import ReservedCapacity, with_reserved_offerings
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import node_claim_for
from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.consolidation import SingleNodeConsolidation
from gpucap.controllers.disruption.constants import SPOT_TO_SPOT_THRESHOLD
from gpucap.controllers.disruption.controller import DisruptionResult
from gpucap.controllers.disruption.types import GRACEFUL, Candidate
from gpucap.runtime.clock import EPOCH, FakeClock
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.utils.pod import eviction_cost
from tests.builders import edit, load, nodeclass
from tests.controllers.disruption_builders import (
    Env,
    env,
    gpu_pod,
    pool,
    requirement_values,
)
from tests.scheduling.builders import GPU_TYPES, instance_type

HOUR = 3600.0


def decided(results: list[DisruptionResult]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [
        (r.decided.method, r.decided.decision, tuple(c.name for c in r.decided.candidates))
        for r in results
        if r.decided is not None
    ]


def deleted(results: list[DisruptionResult]) -> list[str]:
    return [name for r in results for name in r.deleting]


# ---- emptiness -------------------------------------------------------------------------------
def test_when_empty_deletes_only_empty_nodes() -> None:
    e = env(pool(policy="WhenEmpty"), gpu_pod("a"), gpu_pod("b"))
    e.node("busy", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("idle", "g5.2xlarge")
    e.node("light", "g5.2xlarge", pods=("default/b",))  # its pod would fit on busy
    results = e.run(HOUR)
    assert decided(results) == [("emptiness", "delete", ("idle",))]
    assert deleted(results) == ["idle"]
    assert results[0].decided is not None
    assert results[0].decided.reason == "Empty"


def test_daemonset_static_and_finished_pods_do_not_make_a_node_non_empty() -> None:
    owner = "metadata.ownerReferences"
    ds = edit(gpu_pod("ds"), owner, [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d"}])
    mirror = edit(gpu_pod("mirror"), owner, [{"apiVersion": "v1", "kind": "Node", "name": "n"}])
    done = edit(gpu_pod("done"), "status", {"phase": "Succeeded"})
    e = env(pool(policy="WhenEmpty"), ds, mirror, done)
    e.node("idle", "g5.12xlarge", gpus=4, pods=("default/ds", "default/mirror", "default/done"))
    assert decided(e.run(60)) == [("emptiness", "delete", ("idle",))]


def test_a_node_with_a_running_gpu_pod_is_never_empty() -> None:
    e = env(pool(policy="WhenEmpty", after="2h"), gpu_pod("vllm-0"))
    e.node("gpu-node", "g5.xlarge", pods=("default/vllm-0",))
    assert e.run(24 * HOUR) == []
    assert e.cluster.node("gpu-node") is not None


def test_a_pod_with_a_non_positive_eviction_cost_does_not_count_v1_14() -> None:
    low = edit(gpu_pod("filler"), "spec.priority", -(2**25))  # 1 + (-2^25)/2^25 = 0
    e = env(pool(policy="WhenEmpty"), low)
    e.node("filler-node", "g5.xlarge", pods=("default/filler",))
    assert eviction_cost(e.cluster.pod("default/filler")) == 0.0
    assert decided(e.run(60)) == [("emptiness", "delete", ("filler-node",))]


def test_consolidate_after_counts_from_the_last_pod_event() -> None:
    e = env(pool(policy="WhenEmpty", after="2h"), gpu_pod("job-0"))
    e.node("n", "g5.xlarge", pods=("default/job-0",))  # last pod event at t=0
    e.clock.advance(HOUR)
    job = e.cluster.delete_pod("default/job-0")
    assert job is not None
    e.podevents.pod_changed(job, "n")  # the pod left at t=1h
    assert e.run(2 * HOUR - 1) == []  # t=3h-1s: 2 h since initialization, not since the pod
    results = e.run(60)
    assert deleted(results) == ["n"]
    # 2 h after the pod left: the next 10 s poll finds it consolidatable, and the command
    # starts after the 15 s validation.
    claim = e.cluster.node_claim("n")
    assert claim is not None
    assert claim.metadata.deletion_timestamp is not None
    since_start = (claim.metadata.deletion_timestamp - EPOCH).total_seconds()
    assert 3 * HOUR + 15 <= since_start <= 3 * HOUR + 10 + 15


def test_consolidate_after_never_disables_emptiness_and_consolidation() -> None:
    e = env(pool(after="Never"), gpu_pod("a"))
    e.node("idle", "g5.12xlarge", gpus=4)
    e.node("big", "g5.2xlarge", pods=("default/a",))
    assert e.run(HOUR) == []


# ---- consolidation: delete and replace -------------------------------------------------------
def _replacement_types(e: Env, results: list[DisruptionResult]) -> list[str]:
    command = next(r.decided for r in results if r.decided is not None)
    assert len(command.replacements) == 1
    return requirement_values(command.replacements[0], INSTANCE_TYPE)


def test_underutilized_g5_2xlarge_is_replaced_by_a_cheaper_g5_xlarge() -> None:
    e = env(pool(), gpu_pod("vllm-0"))
    e.node("big", "g5.2xlarge", pods=("default/vllm-0",))
    results = e.run(60)
    assert decided(results) == [("single-node-consolidation", "replace", ("big",))]
    command = results[0].decided
    assert command is not None
    assert command.reason == "Underutilized"
    claim = command.replacements[0]
    assert requirement_values(claim, INSTANCE_TYPE) == ["g5.xlarge"]  # 1.006 < 1.212
    assert requirement_values(claim, CAPACITY_TYPE) == ["on-demand"]
    assert "savings: $0.21/h" in command.message


def test_replacement_must_be_strictly_cheaper() -> None:
    twin = instance_type("g6.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006)
    types = [instance_type("g5.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.006), twin]
    e = env(pool(), gpu_pod("vllm-0"), types=types)
    e.node("n", "g5.xlarge", pods=("default/vllm-0",))
    assert e.run(HOUR) == []  # g6.xlarge costs the same: not a saving


def test_an_on_demand_node_may_be_replaced_by_spot_and_is_then_pinned_to_spot() -> None:
    e = env(pool(capacity_types=("spot", "on-demand")), gpu_pod("vllm-0"))
    e.node("n", "g5.xlarge", pods=("default/vllm-0",))
    types = _replacement_types(e, e.run(60))
    assert types == ["g5.2xlarge", "g5.xlarge"]  # worst spot price 0.48 / 0.40 < 1.006
    claim = e.cluster.node_claim(e.launched[0])
    assert claim is not None
    assert requirement_values(claim, CAPACITY_TYPE) == ["spot"]


def _ladder(count: int) -> list[InstanceType]:
    """`count` one-GPU types, t0 cheapest, each 0.1 more on demand (spot 40%)."""
    return [
        instance_type(f"t{i}.xlarge", cpu=4, memory_gib=16, gpu=1, price=1.0 + 0.1 * i)
        for i in range(count)
    ]


def test_spot_to_spot_needs_fifteen_cheaper_types() -> None:
    spot = pool(capacity_types=("spot",))
    for cheaper, gate, want in [
        (SPOT_TO_SPOT_THRESHOLD, False, None),  # off by default
        (SPOT_TO_SPOT_THRESHOLD - 1, True, None),  # 14 cheaper types: not enough
        (SPOT_TO_SPOT_THRESHOLD + 5, True, SPOT_TO_SPOT_THRESHOLD),  # 20: launch the 15 cheapest
    ]:
        types = _ladder(cheaper + 1)
        e = env(spot, gpu_pod("w"), types=types, spot_to_spot=gate)
        e.node("n", types[-1].name, capacity_type="spot", pods=("default/w",))
        results = e.run(60)
        if want is None:
            assert results == [], (cheaper, gate)
            continue
        got = _replacement_types(e, results)
        assert got == sorted(f"t{i}.xlarge" for i in range(want))


def test_delete_when_pods_fit_on_other_nodes() -> None:
    e = env(pool(), gpu_pod("a"), gpu_pod("b"))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    results = e.run(60)
    # Both at once would need a new g5.12xlarge (the type being removed: not cheaper), so
    # multi-node finds nothing; single-node deletes x, whose pod fits on y.
    assert decided(results) == [("single-node-consolidation", "delete", ("x",))]
    assert deleted(results) == ["x"]
    assert e.launched == []


def test_multi_node_consolidation_merges_two_nodes_into_one_cheaper_node() -> None:
    two_gpus = instance_type("g9.xlarge", cpu=8, memory_gib=32, gpu=2, price=1.5)
    types = [*GPU_TYPES, two_gpus]
    e = env(pool(), gpu_pod("a"), gpu_pod("b"), types=types)
    e.node("x", "g5.2xlarge", pods=("default/a",))
    e.node("y", "g5.2xlarge", pods=("default/b",))
    results = e.run(60)
    # Multi-node runs before single-node: both g5.2xlarge (2 x 1.212) -> one g9.xlarge (1.5).
    assert decided(results) == [("multi-node-consolidation", "replace", ("x", "y"))]
    assert _replacement_types(e, results) == ["g9.xlarge"]


def test_do_not_disrupt_pod_blocks_consolidation() -> None:
    protect = {"karpenter.sh/do-not-disrupt": "true"}
    e = env(
        pool(),
        edit(gpu_pod("a"), "metadata.annotations", protect),
        edit(gpu_pod("b"), "metadata.annotations", protect),
    )
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    assert e.run(HOUR) == []


def test_do_not_disrupt_node_annotation_blocks_even_emptiness() -> None:
    e = env(pool(policy="WhenEmpty"))
    e.node("idle", "g5.xlarge", annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert e.run(HOUR) == []


def test_when_empty_or_underutilized_over_aws_and_simulated_ec2() -> None:
    """The same g5.2xlarge -> g5.xlarge rule with the AWS provider's real catalog prices."""
    catalog = load_catalog("us-east-1")
    clock = FakeClock()
    api = SimulatedEC2(catalog, clock)
    api.publish_amis("1.36")
    nc = load(nodeclass("gpu")).objects.nodeclasses[0]
    provider = AWSCloudProvider(api, catalog, clock, {"gpu": nc})
    docs: list[dict[str, Any]] = [
        edit(
            pool(),
            "spec.template.spec.requirements[1]",
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]},
        ),
        gpu_pod("vllm-0"),
    ]
    e = env(*docs, provider=provider, clock=clock)
    e.node("big", "g5.2xlarge", zone="us-east-1a", pods=("default/vllm-0",))
    results = e.run(60)
    assert decided(results) == [("single-node-consolidation", "replace", ("big",))]
    assert _replacement_types(e, results) == ["g5.xlarge"]


def test_a_packed_on_demand_node_is_replaced_by_the_same_type_on_spot() -> None:
    e = env(pool(capacity_types=("spot", "on-demand")), *(gpu_pod(f"w{i}") for i in range(4)))
    e.node("full", "g5.12xlarge", gpus=4, pods=tuple(f"default/w{i}" for i in range(4)))
    results = e.run(60)
    # Only a g5.12xlarge holds four GPUs, and its worst spot price (2.27) is below the
    # on-demand 5.67 the node costs: Karpenter replaces it, launching spot only.
    assert decided(results) == [("single-node-consolidation", "replace", ("full",))]
    command = results[0].decided
    assert command is not None
    assert requirement_values(command.replacements[0], INSTANCE_TYPE) == ["g5.12xlarge"]
    assert requirement_values(command.replacements[0], CAPACITY_TYPE) == ["spot"]


def test_a_packed_on_demand_only_node_stays() -> None:
    e = env(pool(), *(gpu_pod(f"w{i}") for i in range(4)))
    e.node("full", "g5.12xlarge", gpus=4, pods=tuple(f"default/w{i}" for i in range(4)))
    assert e.run(HOUR) == []


def test_the_last_pod_event_is_written_at_most_every_10_seconds() -> None:
    e = env(pool(), gpu_pod("a"), gpu_pod("b"))
    e.node("n", "g5.12xlarge", gpus=4, pods=("default/a",))
    first = e.cluster.node_claim("n")
    assert first is not None
    e.clock.advance(9)
    assert not e.podevents.pod_changed(e.cluster.pod("default/b"), "n")
    e.clock.advance(1)
    assert e.podevents.pod_changed(e.cluster.pod("default/b"), "n")
    claim = e.cluster.node_claim("n")
    assert claim is not None
    assert claim.status.last_pod_event_time == e.clock.now().isoformat()


def test_balanced_rejects_a_replacement_that_saves_too_little_for_its_disruption() -> None:
    for policy, want in [
        ("WhenEmptyOrUnderutilized", [("single-node-consolidation", "replace", ("big",))]),
        # Balanced: saves 0.206 of the pool's 1.212 (17%) for all of its disruption cost
        # (2 of 2): score 0.17 < 1/k = 0.5.
        ("Balanced", []),
    ]:
        e = env(pool(policy=policy), gpu_pod("vllm-0"))
        e.node("big", "g5.2xlarge", pods=("default/vllm-0",))
        assert decided(e.run(60)) == want, policy


def test_balanced_approves_a_delete_worth_its_disruption() -> None:
    e = env(pool(policy="Balanced"), gpu_pod("a"), gpu_pod("b"))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    # Deleting x saves half the pool's cost for half its disruption cost: score 1 >= 0.5.
    assert decided(e.run(60)) == [("single-node-consolidation", "delete", ("x",))]


def test_a_decision_never_rests_on_a_node_that_is_not_initialized() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("x", "g5.xlarge", pods=("default/a",))  # the cheapest type: only a delete helps
    reqs = Requirements.of(
        Requirement.new(INSTANCE_TYPE, "In", ["g5.12xlarge"]),
        Requirement.new(CAPACITY_TYPE, "In", ["on-demand"]),
    )
    e.cluster.add_node_claim(
        node_claim_for("z", "gpu", reqs, {"nvidia.com/gpu": 4}, node_class="gpu")
    )
    assert e.lifecycle.reconcile("z").launched  # launched, not registered: not initialized
    single = e.disruption.methods[4]
    assert isinstance(single, SingleNodeConsolidation)

    def x() -> Candidate:
        found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
        return next(c for c in found if c.name == "x")

    assert single.compute_consolidation([x()]) is None  # a would land on z, uninitialized
    assert e.run(HOUR) == []
    e.initialize("z")
    proposal = single.compute_consolidation([x()])
    assert proposal is not None
    assert proposal.decision == "delete"


def test_a_reserved_node_can_be_consolidated_into_a_cheaper_reservation() -> None:
    """core consolidation_test.go Context "Reserved Capacity": "can consolidate from one
    reserved offering to another". Reserved offerings cost the on-demand price over ten
    million, so the cheaper type's reservation is still cheaper, and the replacement is pinned
    to reserved capacity."""
    types = list(
        with_reserved_offerings(
            GPU_TYPES,
            [
                ReservedCapacity("cr-big", "g5.2xlarge", "us-east-1a", available=1),
                ReservedCapacity("cr-small", "g5.xlarge", "us-east-1a", available=1),
            ],
        )
    )
    e = env(pool(capacity_types=("reserved", "on-demand")), gpu_pod("vllm-0"), types=types)
    e.node("big", "g5.2xlarge", capacity_type="reserved", pods=("default/vllm-0",))
    results = e.run(60)
    assert decided(results) == [("single-node-consolidation", "replace", ("big",))]
    command = results[0].decided
    assert command is not None
    claim = command.replacements[0]
    assert requirement_values(claim, INSTANCE_TYPE) == ["g5.xlarge"]
    assert requirement_values(claim, CAPACITY_TYPE) == ["reserved"]
    # Pinned to every reservation the simulation's claim held (the big type's too, as in
    # Karpenter: the price filter narrows the types after `FinalizeScheduling`); with only
    # g5.xlarge left, it can launch into cr-small alone.
    assert "cr-small" in requirement_values(claim, "karpenter.k8s.aws/capacity-reservation-id")
