"""What the disruption controller keeps from one pass to the next while its inputs are the
same objects, against the same thing computed from scratch (hypothesis, random GPU fleets
with do-not-disrupt pods, changing between passes): candidate selection's last answer per
disruption class (`candidates._LAST`), the methods' filter kept per candidate object
(`consolidation._WANTS`, `emptiness._WANTS`) and the budgets' last node count
(`budgets._LAST_COUNT`), all kept in the run's `Cluster.memos`."""

from __future__ import annotations

import datetime as dt

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.duration import parse_karpenter_duration
from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.controllers.disruption.budgets import pool_counts
from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.types import EVENTUAL, GRACEFUL, Candidate
from gpucap.controllers.nodeclaim.conditions import INITIALIZED, condition
from tests.controllers.disruption_builders import pool

# A node: its type, how many pods it runs, and the do-not-disrupt annotation of its first pod
# ("" for none; durations end while the clock moves on, "true" never does).
from tests.controllers.pass_memos import (
    _fleet,
    _from_scratch,
    _step,
    counted_from_scratch,
    nodes,
    steps,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes, st.integers(min_value=0, max_value=2), steps)
def test_candidates_handed_out_again_equal_those_selected_from_scratch(
    fleet: list[tuple[str, int, str]], spare: int, changes: list[tuple[str, int]]
) -> None:
    e = _fleet(fleet, spare)
    flight: set[str] = set()
    stale = e.cluster.snapshot()
    for serial, (action, i) in enumerate(changes):
        now = e.clock.now()
        for cls in (GRACEFUL, EVENTUAL):
            # A snapshot taken before the last change (the last answer was made from it),
            # the pass's own, none (the cluster's): each answer as from scratch.
            for snap in (stale, e.cluster.snapshot(), None):
                kept = get_candidates(
                    e.cluster, e.provider, now, disruption_class=cls, in_flight=flight, snap=snap
                )
                assert kept == _from_scratch(e, now, cls, flight, snap)
        stale = e.cluster.snapshot()
        _step(e, action, i, serial, flight)


def _consolidatable_reference(claim: NodeClaim, nodepool: NodePool, now: dt.datetime) -> bool:
    """Karpenter's `Consolidatable` read straight from the objects, as before any memo."""
    after = parse_karpenter_duration(nodepool.spec.disruption.consolidate_after)
    init = condition(claim, INITIALIZED)
    if after is None or init is None or init.status != "True":
        return False
    text = claim.status.last_pod_event_time or init.last_transition_time
    if not after or not text:
        return True
    start = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return not (now - start).total_seconds() < after


def _consolidation_reference(c: Candidate, now: dt.datetime) -> bool:
    """consolidation.go `ShouldDisrupt`, unmemoised."""
    labels = c.state_node.labels
    return (
        not c.static
        and c.instance_type is not None
        and CAPACITY_TYPE in labels
        and ZONE in labels
        and parse_karpenter_duration(c.nodepool.spec.disruption.consolidate_after) is not None
        and not c.is_empty
        and c.nodepool.spec.disruption.consolidation_policy != "WhenEmpty"
        and _consolidatable_reference(c.node_claim, c.nodepool, now)
    )


def _emptiness_reference(c: Candidate, now: dt.datetime) -> bool:
    """emptiness.go `ShouldDisrupt`, unmemoised."""
    return (
        not c.static
        and parse_karpenter_duration(c.nodepool.spec.disruption.consolidate_after) is not None
        and c.is_empty
        and _consolidatable_reference(c.node_claim, c.nodepool, now)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes,
    st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]),
    st.sampled_from(["0s", "30s", "90s", "Never"]),
    st.lists(st.sampled_from(["bind", "delete", "wait"]), min_size=1, max_size=8),
)
def test_the_methods_filter_kept_per_candidate_answers_as_read_from_the_objects(
    fleet: list[tuple[str, int, str]], policy: str, after: str, changes: list[str]
) -> None:
    e = _fleet(fleet, 2, pool(policy=policy, after=after))
    methods = e.disruption.methods
    emptiness, single = methods[0], methods[4]
    for serial, action in enumerate(changes):
        now = e.clock.now()
        found, _ = get_candidates(e.cluster, e.provider, now, disruption_class=GRACEFUL)
        for c in found:
            assert single.should_disrupt(c) == _consolidation_reference(c, now), c.name
            assert emptiness.should_disrupt(c) == _emptiness_reference(c, now), c.name
        _step(e, action, serial, serial, set())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes, st.integers(min_value=0, max_value=2), steps)
def test_budget_counts_handed_out_again_equal_those_counted_from_scratch(
    fleet: list[tuple[str, int, str]], spare: int, changes: list[tuple[str, int]]
) -> None:
    e = _fleet(fleet, spare)
    stale = e.cluster.snapshot()
    for serial, (action, i) in enumerate(changes):
        for snap in (stale, e.cluster.snapshot(), None):
            kept = pool_counts(e.cluster, snap)
            assert (dict(kept.totals), dict(kept.disrupting)) == counted_from_scratch(e, snap)
        stale = e.cluster.snapshot()
        _step(e, action, i, serial, set())
