"""Laws of `plan --optimal` on random inputs: floor <= optimum <= Karpenter's cost, the optimum's
fleet holds every pod within capacity, hostname caps, taints and limits, and every change it
suggests saves when Karpenter re-plans with it."""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.controllers.provisioning.optimal import build_instance, check, optimise
from gpucap.controllers.provisioning.optimal.fleet import fleet_of
from gpucap.controllers.provisioning.optimal.milp import solve
from gpucap.operator.changes import karpenter_cost, suggest
from gpucap.operator.plan import plan
from tests.optimal.instances import (
    CATALOG,
    planned,
    random_inputs,
)

_EPS = 1e-6

_FAMILIES = st.sampled_from([["g5"], ["g6"], ["g5", "g6"], ["g4dn", "g5"], ["g6e"]])


_inputs = functools.partial(
    random_inputs,
    families=_FAMILIES,
    limits=st.sampled_from([2, 4, 8, 100]),
    replicas=st.integers(1, 5),
)


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(_inputs())
def test_the_floor_is_at_most_the_optimum_which_is_at_most_karpenters_cost(
    docs: list[dict[str, Any]],
) -> None:
    _, made = planned(*docs)
    inst = build_instance(made)
    sol = solve(inst, 10.0)
    fleet = fleet_of(inst, sol)
    assert fleet.karpenter_cost == karpenter_cost(made)
    assert fleet.floor <= fleet.bound + _EPS
    assert fleet.bound <= fleet.cost + _EPS
    assert fleet.cost <= fleet.karpenter_cost + _EPS
    if sol.objective is not None:
        # The MILP's optimum is itself a lower bound of the decoded fleet.
        assert fleet.floor <= sol.objective + _EPS
    # Whichever fleet is reported is a real one: every pod, within every rule.
    assert check(inst, fleet.nodes) == []
    assert sorted(p for n in fleet.nodes for p in n.pods) == sorted(
        p.key for c in inst.classes for p in c.pods
    )


@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(_inputs())
def test_every_suggested_change_saves_when_karpenter_replans_with_it(
    docs: list[dict[str, Any]],
) -> None:
    m, made = planned(*docs)
    fleet = optimise(made)
    changes = suggest(m, CATALOG, made, fleet, max_passes=max(made.passes, 1))
    before = karpenter_cost(made)
    for c in changes:
        assert c.before == before
        # The edited manifests, planned again by Karpenter's algorithm: cheaper, no pod lost.
        again = plan(c.apply(m), CATALOG, max_passes=max(made.passes, 1))
        assert karpenter_cost(again) == c.cost < before
        assert len(again.pod_errors) <= len(made.pod_errors)
