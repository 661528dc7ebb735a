"""Laws of PodDisruptionBudgets in disruption over random GPU fleets (hypothesis): no command
takes a node holding a pod its PDB would not let go (drift excepted where the NodeClaim has a
terminationGracePeriod, as Karpenter's eventual class), whatever the drain has evicted so far;
and a do-not-disrupt duration holds exactly until `do_not_disrupt_ends`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.controllers.nodeclaim.conditions import with_condition
from gpucap.runtime.clock import EPOCH
from gpucap.utils.pdb import Limits
from gpucap.utils.pod import (
    do_not_disrupt_active,
    do_not_disrupt_ends,
    do_not_disrupt_until,
)
from tests.builders import edit, load
from tests.controllers.disruption_builders import env, gpu_pod, pool

TYPES = {"g5.xlarge": 1, "g5.12xlarge": 4}
APPS = ("a", "b", "c")
BUDGETS: tuple[dict[str, Any] | None, ...] = (
    None,
    {"maxUnavailable": 0},
    {"maxUnavailable": "0%"},
    {"maxUnavailable": 1},
    {"minAvailable": 1},
    {"minAvailable": "50%"},
    {"minAvailable": "100%"},
)
READY = (None, "True", "False")

pods_of_a_node = st.lists(
    st.tuples(st.sampled_from(APPS), st.sampled_from(READY)), min_size=0, max_size=4
)
nodes = st.tuples(
    st.sampled_from(sorted(TYPES)),
    pods_of_a_node,
    st.sampled_from([None, "none", "1h"]),  # not drifted, drifted, drifted with a grace period
)
budgets = st.tuples(
    st.sampled_from(BUDGETS), st.sampled_from([None, "IfHealthyBudget", "AlwaysAllow"])
)


def _pdb(app: str, spec: dict[str, Any], policy: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}, **spec}
    if policy is not None:
        body["unhealthyPodEvictionPolicy"] = policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "default"},
        "spec": body,
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(nodes, min_size=1, max_size=4),
    st.lists(budgets, min_size=len(APPS), max_size=len(APPS)),
    st.integers(min_value=0, max_value=3),
)
def test_no_disruption_command_takes_a_node_holding_a_pod_a_pdb_would_not_let_go(
    fleet: list[tuple[str, list[tuple[str, str | None]], str | None]],
    per_app: list[tuple[dict[str, Any] | None, str | None]],
    pending: int,
) -> None:
    docs: list[dict[str, Any]] = []
    placed: list[tuple[str, tuple[str, ...], str | None]] = []
    for i, (it, pods, drifted) in enumerate(fleet):
        keys = []
        for j, (app, ready) in enumerate(pods[: TYPES[it]]):
            doc = edit(gpu_pod(f"p{i}-{j}"), "metadata.labels", {"app": app})
            if ready is not None:
                doc = edit(doc, "status", {"conditions": [{"type": "Ready", "status": ready}]})
            docs.append(doc)
            keys.append(f"default/p{i}-{j}")
        placed.append((it, tuple(keys), drifted))
    # pods of the apps that are not running (they count as expected, not as healthy)
    docs.extend(
        edit(gpu_pod(f"q{k}"), "metadata.labels", {"app": APPS[k % len(APPS)]})
        for k in range(pending)
    )
    for app, (spec, policy) in zip(APPS, per_app, strict=True):
        if spec is not None:
            docs.append(_pdb(app, spec, policy))
    e = env(pool(), *docs)
    for i, (it, keys, drifted) in enumerate(placed):
        e.node(f"n{i}", it, gpus=TYPES[it], pods=keys)
        if drifted is None:
            continue
        claim = e.cluster.node_claim(f"n{i}")
        assert claim is not None
        grace = None if drifted == "none" else drifted
        spec = claim.spec.model_copy(update={"termination_grace_period": grace})
        claim = claim.model_copy(update={"spec": spec})
        e.cluster.update_node_claim(
            with_condition(claim, "Drifted", "True", e.clock.now(), reason="AMI")
        )
    for _ in range(180):
        result = e.reconcile()
        command = result.decided
        if command is not None:
            # the pods are still where the decision saw them: its deletions come after
            limits = Limits.of(e.cluster)
            for c in command.candidates:
                waived = (
                    command.reason == "Drifted"
                    and c.node_claim.spec.termination_grace_period is not None
                )
                held = limits.can_evict_pods(e.cluster.pods_on(c.name), e.clock.now())
                assert waived or held is None, (command.method, c.name, held)
        # the drain goes on meanwhile: evicted pods pend, and the PDBs allow less
        for name in e.termination.deleting():
            e.termination.reconcile(name)
        e.clock.advance(1.0)


starts = st.integers(min_value=0, max_value=10**7).map(
    lambda us: EPOCH + dt.timedelta(microseconds=us)
)
durations = st.sampled_from(["1ns", "999ns", "1us", "1.5s", "90s", "5m", "1h", "1h0m0.0000001s"])


@settings(max_examples=200, deadline=None)
@given(starts, durations, st.integers(min_value=-(10**7), max_value=10**10))
def test_a_do_not_disrupt_duration_holds_exactly_until_it_ends(
    started: dt.datetime, duration: str, offset_us: int
) -> None:
    doc = edit(gpu_pod("a"), "metadata.annotations", {"karpenter.sh/do-not-disrupt": duration})
    doc = edit(doc, "status", {"startTime": started.isoformat()})
    (pod,) = load(doc).objects.pods
    ends = do_not_disrupt_ends(pod)
    assert ends is not None
    now = started + dt.timedelta(microseconds=offset_us)
    assert do_not_disrupt_active(pod, now) == (now < ends)
    # the clock woken at the end finds the pod free: the loop never stops short of it
    assert not do_not_disrupt_active(pod, ends)
    assert do_not_disrupt_until([pod], now) == (ends if now < ends else None)
