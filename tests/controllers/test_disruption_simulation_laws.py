"""A consolidation simulation that stops at its second new NodeClaim decides as the whole one.

`simulate_scheduling(..., consolidation=True)` stops solving once the plan has two new
NodeClaims and answers None: consolidation (single- and multi-node, and the validator) acts
on no plan with more than one. Law (hypothesis): over random GPU fleets with pending pods,
every candidate alone and every prefix of the candidates (multi-node batches) gets the same
decision and the validator the same answer, with the stop and with the whole solve (the
reference: `Scheduler.solve` ignoring `stop_past`). Plus the rules: the stop does happen, and
drift (not a consolidation simulation) still sees every new NodeClaim.

And `pass_inputs`' nodes inside their consolidateAfter (kept per snapshot, the clock applied
per pass) are `held_back`'s, at any time (law)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.consolidation import Consolidation
from gpucap.controllers.disruption.simulation import held_back, pass_inputs, simulate_scheduling
from gpucap.controllers.disruption.types import GRACEFUL
from gpucap.scheduling.scheduler import Results, Scheduler
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool
from tests.controllers.simulation_fleets import (
    _decisions,
    _whole_solves,
    fleet_env,
    fleets,
    pendings,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleets,
    pendings,
    st.sampled_from([("on-demand",), ("spot", "on-demand")]),
    st.booleans(),
)
def test_a_stopped_consolidation_simulation_decides_as_the_whole_one(
    fleet: list[tuple[str, str, int]],
    pending: list[int],
    capacity_types: tuple[str, ...],
    spot_to_spot: bool,
) -> None:
    e = fleet_env(fleet, pending, capacity_types, spot_to_spot=spot_to_spot)
    method = e.disruption.methods[4]
    assert isinstance(method, Consolidation)
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    found = [c for c in method.sort(found) if method.should_disrupt(c)]
    stopped = _decisions(method, found)
    with _whole_solves():
        whole = _decisions(method, found)
    assert stopped == whole


def _simulate(e: Env, *, consolidation: bool) -> tuple[bool, int | None]:
    """Simulate every candidate gone: whether a solve stopped, and the new NodeClaims (None:
    no simulation result)."""
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    stops: list[bool] = []
    solve = Scheduler.solve

    def watched(self: Scheduler, pods: Sequence[Any], *, stop_past: int | None = None) -> Results:
        results = solve(self, pods, stop_past=stop_past)
        stops.append(results.stopped)
        return results

    with patch.object(Scheduler, "solve", watched):
        sim = simulate_scheduling(
            e.cluster,
            e.disruption.provisioner,
            found,
            nodepools=e.cluster.nodepools,
            now=e.clock.now(),
            consolidation=consolidation,
        )
    return any(stops), (None if sim is None else len(sim.results.new_node_claims))


def test_a_consolidation_simulation_stops_at_its_second_new_node_claim() -> None:
    # Two pending 4-GPU pods each need their own g5.12xlarge: no consolidation can act.
    e = fleet_env([("g5.xlarge", "on-demand", 1)], [4, 4], ("on-demand",))
    assert _simulate(e, consolidation=True) == (True, None)


def test_drift_simulations_see_every_new_node_claim() -> None:
    # Drift replaces a node with as many NodeClaims as its pods need: never stopped.
    e = fleet_env([("g5.xlarge", "on-demand", 1)], [4, 4], ("on-demand",))
    assert _simulate(e, consolidation=False) == (False, 3)


def test_a_consolidation_simulation_with_one_new_node_claim_runs_to_the_end() -> None:
    e = fleet_env([("g5.12xlarge", "on-demand", 2)], [], ("on-demand",))
    assert _simulate(e, consolidation=True) == (False, 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["0s", "5m", "Never"]),
    st.lists(st.sampled_from([0, 60, 240, 300]), min_size=1, max_size=4),  # node i comes up
    st.lists(st.sampled_from([0, 60, 240, 300]), min_size=1, max_size=5),  # passes
)
def test_a_pass_holds_back_the_nodes_held_back_would(
    after: str, arrivals: list[int], passes: list[int]
) -> None:
    e = env(pool(after=after), *(gpu_pod(f"p{i}") for i in range(len(arrivals))))
    for i, wait in enumerate(arrivals):
        e.clock.advance(wait)
        e.node(f"n{i}", "g5.xlarge", pods=(f"default/p{i}",))
    for wait in passes:
        e.clock.advance(wait)
        now = e.clock.now()
        inputs = pass_inputs(
            e.cluster, e.disruption.provisioner, nodepools=e.cluster.nodepools, now=now
        )
        live = [n for n in inputs.snap.nodes if not n.marked_for_deletion]
        assert inputs.held_back == held_back(e.cluster, live, now)


def test_a_node_is_held_back_until_its_consolidate_after_has_passed() -> None:
    e = env(pool(after="5m"), gpu_pod("p0"))
    e.node("n0", "g5.xlarge", pods=("default/p0",))

    def held() -> frozenset[str]:
        now = e.clock.now()
        provisioner = e.disruption.provisioner
        return pass_inputs(e.cluster, provisioner, nodepools=e.cluster.nodepools, now=now).held_back

    assert held() == {"n0"}
    e.clock.advance(299)
    assert held() == {"n0"}  # the same snapshot, the clock applied again
    e.clock.advance(1)
    assert held() == frozenset()
