"""Candidate selection keeps per-node work from pass to pass (`candidates.py`: per StateNode,
NodeClaim and instance-type tuple objects, and the Candidate objects themselves) and recomputes
what depends on the clock: a do-not-disrupt duration, and the lifetime remaining in
`disruption_cost`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from gpucap.cloudprovider.types import node_claim_for
from gpucap.controllers.disruption.candidates import (
    disruption_cost,
    get_candidates,
    select_candidates,
)
from gpucap.controllers.disruption.types import GRACEFUL, Candidate
from gpucap.runtime.clock import EPOCH
from gpucap.scheduling.requirements import Requirements
from gpucap.utils.pod import eviction_cost, lifetime_remaining
from tests.builders import edit
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool

HALF_HOUR = 1800.0


def _candidates(e: Env, now: dt.datetime) -> list[Candidate]:
    found, _ = get_candidates(e.cluster, e.provider, now, disruption_class=GRACEFUL)
    return found


def _protected_for(duration: str) -> Env:
    doc = edit(gpu_pod("a"), "metadata.annotations", {"karpenter.sh/do-not-disrupt": duration})
    doc = edit(doc, "status", {"startTime": EPOCH.isoformat().replace("+00:00", "Z")})
    e = env(pool(), doc)
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    return e


def test_a_do_not_disrupt_duration_ends_with_the_clock_while_the_objects_stay() -> None:
    e = _protected_for("30m")
    start = e.clock.now()
    assert _candidates(e, start) == []
    later = start + dt.timedelta(seconds=2 * HALF_HOUR)
    assert [c.name for c in _candidates(e, later)] == ["x"]
    # The same objects at the earlier time: protected again (nothing frozen by the memo).
    assert _candidates(e, start) == []


def test_the_disruption_cost_follows_the_clock_while_the_objects_stay() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    claim = e.cluster.node_claim("x")
    assert claim is not None
    spec = claim.spec.model_copy(update={"expire_after": "2h"})
    meta = claim.metadata.model_copy(update={"creation_timestamp": e.clock.now()})
    e.cluster.update_node_claim(claim.model_copy(update={"spec": spec, "metadata": meta}))
    start = e.clock.now()
    first = _candidates(e, start)
    later = start + dt.timedelta(seconds=HALF_HOUR)
    second = _candidates(e, later)
    assert [c.name for c in first] == [c.name for c in second] == ["x"]
    claim = first[0].node_claim
    pods = [p for p in first[0].state_node.pods if p.spec.node_name == "x"]
    cost = sum(eviction_cost(p) for p in pods)
    assert disruption_cost(first[0], start) == cost * lifetime_remaining(claim, start)
    assert disruption_cost(second[0], later) == cost * lifetime_remaining(claim, later)
    assert disruption_cost(second[0], later) < disruption_cost(first[0], start)
    # The candidate itself reads no clock: the same object at both times.
    assert second[0] is first[0]


def test_a_node_with_a_pod_nominated_to_it_is_no_candidate() -> None:
    e = env(pool(), gpu_pod("a"), gpu_pod("b"))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    assert [c.name for c in _candidates(e, e.clock.now())] == ["x"]
    e.cluster.nominate("default/b", "x")
    assert _candidates(e, e.clock.now()) == []


def test_a_node_marked_for_deletion_or_in_the_queue_is_no_candidate() -> None:
    e = env(pool(), gpu_pod("a"), gpu_pod("b"))
    e.node("x", "g5.12xlarge", gpus=4, pods=("default/a",))
    e.node("y", "g5.12xlarge", gpus=4, pods=("default/b",))
    found, _ = get_candidates(
        e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL, in_flight={"y"}
    )
    assert [c.name for c in found] == ["x"]
    e.cluster.mark_for_deletion("x")
    assert [c.name for c in _candidates(e, e.clock.now())] == ["y"]


def _why(e: Env, **kw: Any) -> dict[str, str]:
    """Per NodeClaim held back, the DisruptionBlocked message Karpenter would publish."""
    selected = select_candidates(
        e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL, **kw
    )
    return {name: b.message for name, b in selected.blocked.items()}


def test_a_node_annotated_do_not_disrupt_is_held_back_with_karpenters_words() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("x", "g5.12xlarge", gpus=4, annotations={"karpenter.sh/do-not-disrupt": "true"})
    e.node("y", "g5.12xlarge", gpus=4)
    assert _why(e) == {
        "x": 'Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'
    }


def test_a_node_marked_for_deletion_is_held_back_as_deleting_but_the_queues_own_without_a_word() -> (
    None
):
    e = env(pool(), gpu_pod("a"))
    e.node("x", "g5.12xlarge", gpus=4, annotations={"karpenter.sh/do-not-disrupt": "true"})
    e.node("y", "g5.12xlarge", gpus=4)
    e.cluster.mark_for_deletion("x", "y")
    # Marked comes before the node's annotation (`ValidateNodeDisruptable`'s order).
    assert _why(e) == {
        "x": "Node is deleting or marked for deletion",
        "y": "Node is deleting or marked for deletion",
    }
    assert _why(e, in_flight={"y"}) == {"x": "Node is deleting or marked for deletion"}


def test_a_launched_nodeclaim_without_a_node_is_held_back_until_it_registers() -> None:
    e = env(pool(), gpu_pod("a"))
    e.node("y", "g5.12xlarge", gpus=4)
    claim = node_claim_for("x", "gpu", Requirements(), {"cpu": 1000}, node_class="gpu")
    e.cluster.add_node_claim(claim)
    assert _why(e) == {}  # not launched: no provider ID, not in cluster state
    assert e.lifecycle.reconcile("x").launched
    assert _why(e) == {"x": "Nodeclaim does not have an associated node"}
