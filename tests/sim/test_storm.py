"""What Karpenter does when EC2 takes a node back while its drain is held (issue 20):

- the provisioner schedules the pods of nodes being deleted with the pending ones
  (kubernetes-sigs/karpenter `provisioner.go` `Schedule`: `nodes.Deleting()` and their
  reschedulable pods), so the capacity for every pod of an interrupted node is asked for in the
  first pass, not one pod after each eviction a PodDisruptionBudget lets through;
- a reclaimed spot instance is gone: two minutes after the warning EC2 terminates it, the
  kubelet stops, the Node turns NotReady after the node-monitor grace period, and Karpenter's
  termination finishes a NotReady node whose instance is gone without completing the drain
  (`node/termination` suite: "should delete nodes with no underlying instance even if not
  fully drained"); its pods pend again and the bill stops.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from gpucap.controllers.provisioning.batcher import BATCH_MAX_SECONDS
from gpucap.sim.recorder import Event
from gpucap.sim.timeline import format_duration, timeline
from gpucap.sim.world import NODE_MONITOR_GRACE_S
from tests.sim.laws import Story, _deployment, _nodeclass, _nodepool

WARNING_S = 120.0  # EC2's spot interruption notice
# Termination looks at a blocked drain again at the latest after the eviction back-off's cap.
TERMINATION_LOOK_S = 10.0


def _pdb(min_available: int | str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "d0", "namespace": "default"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "d0"}}},
    }


def _cpu_story(
    *,
    replicas: int = 3,
    pinned: bool = False,
    pdb: int | str | None = None,
    interrupt_at: str = "10m",
    duration: str = "40m",
) -> Story:
    """Spot m5.large or m5.xlarge (one of which holds three 1-CPU pods), a Deployment `d0`, and an interruption
    of the first NodeClaim at `interrupt_at`."""
    pool = _nodepool(
        "cpu",
        False,
        types=["m5.large", "m5.xlarge"],
        capacity=["spot"],
        tainted=False,
        policy="WhenEmpty",
        after="Never",
        budgets=None,
        limit=None,
        expire="720h",
    )
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "storm"},
        "spec": {
            "duration": duration,
            "events": [{"at": interrupt_at, "interrupt": {"nodeClaim": "cpu-1"}}],
        },
    }
    pods = _deployment("d0", gpu=False, cpu="1", replicas=replicas, tolerations=[], pinned=pinned)
    manifests: list[dict[str, Any]] = [_nodeclass("al2023@v20260714"), pool, pods]
    if pdb is not None:
        manifests.append(_pdb(pdb))
    return Story(scenario, tuple(copy.deepcopy(m) for m in manifests))


def _of(events: list[Event], type_: str, **match: Any) -> list[Event]:
    return [
        e for e in events if e.type == type_ and all(e.fields.get(k) == v for k, v in match.items())
    ]


def test_the_pods_of_an_interrupted_node_get_their_capacity_in_the_first_pass() -> None:
    # A PDB lets one pod go at a time; all three are provisioned for together at the warning.
    events = list(_cpu_story(pdb=2).run()[1].events)
    warning = _of(events, "SpotInterruptionWarning")[0].t
    created = [e for e in _of(events, "NodeClaimCreated") if e.t >= warning]
    assert created
    assert created[0].t <= warning + BATCH_MAX_SECONDS
    first = created[0]
    nominated = {
        e.fields["pod"]
        for e in _of(events, "PodNominated", nodeClaim=first.fields["nodeClaim"])
        if e.t == first.t
    }
    assert nominated == {"default/d0-0", "default/d0-1", "default/d0-2"}
    assert len(created) == 1  # no second NodeClaim for the later evictions
    launched = _of(events, "NodeClaimLaunched", nodeClaim=first.fields["nodeClaim"])
    assert launched[0].fields["instanceType"] == "m5.xlarge"  # sized for all three


def test_a_pod_evicted_after_its_replacement_was_provisioned_binds_there_at_once() -> None:
    events = list(_cpu_story(pdb=2).run()[1].events)
    for e in _of(events, "PodEvicted"):
        bound = [b for b in _of(events, "PodBound", pod=e.fields["pod"]) if b.t >= e.t]
        assert bound, f"{e.fields['pod']} never bound again"
        node_up = [r.t for r in _of(events, "NodeInitialized") if r.t > e.t - 1e-9]
        # At once, or as soon as the replacement is up.
        assert bound[0].t <= max([e.t, *node_up[:1]]) + 1.0


def test_a_do_not_disrupt_pod_is_not_provisioned_for_before_its_node_goes() -> None:
    # Not currently reschedulable: Karpenter does not pre-spin capacity for it.
    events = list(_cpu_story(replicas=1, pinned=True).run()[1].events)
    warning = _of(events, "SpotInterruptionWarning")[0].t
    gone = _of(events, "NodeTerminated", nodeClaim="cpu-1")[0].t
    created = [e for e in _of(events, "NodeClaimCreated") if e.t >= warning]
    assert created
    assert created[0].t >= gone


def test_a_pod_a_fully_blocking_pdb_keeps_is_not_provisioned_for_before_its_node_goes() -> None:
    events = list(_cpu_story(replicas=2, pdb="100%").run()[1].events)
    warning = _of(events, "SpotInterruptionWarning")[0].t
    gone = _of(events, "NodeTerminated", nodeClaim="cpu-1")[0].t
    assert gone > warning + WARNING_S  # the drain never finished: the instance went first
    created = [e for e in _of(events, "NodeClaimCreated") if e.t >= warning]
    assert created
    assert created[0].t >= gone


def test_a_reclaimed_instance_ends_a_drain_that_do_not_disrupt_holds() -> None:
    events = list(_cpu_story(replicas=1, pinned=True).run()[1].events)
    warning = _of(events, "SpotInterruptionWarning")[0].t
    reclaimed = _of(events, "InstanceTerminated", nodeClaim="cpu-1")
    assert [e.t for e in reclaimed] == [warning + WARNING_S]
    not_ready = _of(events, "NodeNotReady", nodeClaim="cpu-1")
    assert [e.t for e in not_ready] == [warning + WARNING_S + NODE_MONITOR_GRACE_S]
    gone = _of(events, "NodeTerminated", nodeClaim="cpu-1")
    assert gone
    assert gone[0].t <= not_ready[0].t + TERMINATION_LOOK_S
    # Its pod runs again elsewhere.
    bound = [e for e in _of(events, "PodBound", pod="default/d0-0") if e.t > gone[0].t]
    assert bound


def test_a_reclaimed_instance_is_not_billed_after_ec2_took_it() -> None:
    _, result = _cpu_story(replicas=1, pinned=True).run()
    events = list(result.events)
    warning = _of(events, "SpotInterruptionWarning")[0].t
    launched = _of(events, "NodeClaimLaunched", nodeClaim="cpu-1")[0].t
    node = next(n for n in result.summary["billing"] if n["nodeClaim"] == "cpu-1")
    assert node["billedSeconds"] == warning + WARNING_S - launched


def test_a_drain_that_finishes_in_the_warning_is_untouched_by_the_reclaim() -> None:
    events = list(_cpu_story(replicas=1).run()[1].events)
    assert not _of(events, "InstanceTerminated")
    assert not _of(events, "NodeNotReady")


# ---- the law -----------------------------------------------------------------------------------
@st.composite
def _storms(draw: st.DrawFn) -> Story:
    return _cpu_story(
        replicas=draw(st.integers(1, 5)),
        pinned=draw(st.booleans()),
        pdb=draw(st.sampled_from([None, 0, 1, 2, "100%", "50%"])),
        interrupt_at=f"{draw(st.integers(3, 20))}m",
        duration="45m",
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_storms())
def test_an_interrupted_instance_always_leaves_the_bill_and_the_cluster(story: Story) -> None:
    note(story.to_yaml())
    _, result = story.run()
    events = list(result.events)
    for warning in _of(events, "SpotInterruptionWarning"):
        name = warning.fields["nodeClaim"]
        launched = _of(events, "NodeClaimLaunched", nodeClaim=name)[0].t
        gone = _of(events, "NodeTerminated", nodeClaim=name)
        latest = warning.t + WARNING_S + NODE_MONITOR_GRACE_S + TERMINATION_LOOK_S
        assert gone, f"{name} never left"
        assert gone[0].t <= latest, f"{name} outlived its instance"
        node = next(n for n in result.summary["billing"] if n["nodeClaim"] == name)
        assert node["billedSeconds"] <= warning.t + WARNING_S - launched + 1e-6
    # Its pods run again (spot m5.xlarge is never short in the other zones).
    assert result.summary["pendingAtEnd"] == []


def test_the_timeline_says_ec2_took_the_instance_and_bills_the_node_to_then() -> None:
    events = list(_cpu_story(replicas=1, pinned=True).run()[1].events)
    lines = [line.text for line in timeline(events)]
    assert any(t.startswith("EC2 took back the spot instance of node cpu-1") for t in lines)
    assert any(t.startswith("node cpu-1 NotReady: its instance is gone") for t in lines)
    launched = _of(events, "NodeClaimLaunched", nodeClaim="cpu-1")[0].t
    reclaimed = _of(events, "InstanceTerminated", nodeClaim="cpu-1")[0].t
    terminated = next(t for t in lines if t.startswith("node cpu-1 terminated after"))
    assert format_duration(reclaimed - launched) in terminated
