"""The pending pods' pre-check (`pending_room.py`) rules out only simulations that end in no
command. Law (hypothesis): over random GPU fleets with pending pods, spot and on-demand nodes,
with and without spot-to-spot and NodePool limits, every candidate alone and every prefix of the
candidates (multi-node batches) that the pre-check rules out gets no command from the whole
decision (simulation and prices, no pre-check at all). Rules: it does rule out a spot node
whose pod would take the one free GPU a pending pod needs, and lets the same node go when no pod
is pending; it never rules out while a cheaper replacement could be a command; a pending pod
the NodePool's limits leave no NodeClaim for (counting every node) does not count."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.consolidation import Consolidation
from gpucap.controllers.disruption.pending_room import PendingRoom
from gpucap.controllers.disruption.types import GRACEFUL, Candidate
from tests.controllers.disruption_builders import Env
from tests.controllers.simulation_fleets import fleet_env, fleets, pendings


def _method_and_candidates(e: Env) -> tuple[Consolidation, list[Candidate]]:
    method = e.disruption.methods[4]  # single-node consolidation
    assert isinstance(method, Consolidation)
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    return method, [c for c in method.sort(found) if method.should_disrupt(c)]


def _ruled_out(method: Consolidation, batches: list[list[Candidate]]) -> list[bool]:
    """The pre-check's answer for each batch, with the pass's inputs and room."""
    with method.computing():
        room = method._pass_room()
        shared = method._shared
        assert room is not None
        assert shared is not None
        check = PendingRoom(method._pass_inputs(shared), method.provisioner, room)
        return [check.rules_out(batch) for batch in batches]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleets,
    pendings,
    st.sampled_from([("on-demand",), ("spot", "on-demand"), ("spot",)]),
    st.booleans(),
    st.one_of(st.none(), st.integers(min_value=0, max_value=12)),
)
def test_what_the_pending_pre_check_rules_out_gets_no_command(
    fleet: list[tuple[str, str, int]],
    pending: list[int],
    capacity_types: tuple[str, ...],
    spot_to_spot: bool,
    gpu_limit: int | None,
) -> None:
    e = fleet_env(fleet, pending, capacity_types, spot_to_spot=spot_to_spot, gpu_limit=gpu_limit)
    method, found = _method_and_candidates(e)
    batches = [[c] for c in found] + [found[: n + 1] for n in range(1, len(found))]
    for batch, ruled in zip(batches, _ruled_out(method, batches), strict=True):
        if ruled:
            # Outside a `compute`: no pre-check, the whole simulation and the prices.
            assert method.compute_consolidation(batch) is None, [c.name for c in batch]


def test_a_spot_node_is_kept_when_its_pod_would_take_the_gpu_a_pending_pod_needs() -> None:
    fleet = [("g5.xlarge", "spot", 1), ("g5.12xlarge", "on-demand", 3)]
    e = fleet_env(fleet, [1], ("spot", "on-demand"))
    method, found = _method_and_candidates(e)
    n0 = [c for c in found if c.name == "n0"]
    assert len(n0) == 1
    assert _ruled_out(method, [n0]) == [True]
    assert method.compute_consolidation(n0) is None
    # No pod pending: its pod takes the free GPU of n1 and n0 goes.
    e = fleet_env(fleet, [], ("spot", "on-demand"))
    method, found = _method_and_candidates(e)
    n0 = [c for c in found if c.name == "n0"]
    assert _ruled_out(method, [n0]) == [False]
    proposal = method.compute_consolidation(n0)
    assert proposal is not None
    assert proposal.decision == "delete"


def test_a_candidate_a_cheaper_replacement_could_take_is_not_ruled_out() -> None:
    # On-demand g5.12xlarge with one pod: a g5.xlarge could replace it, pending pod or not.
    e = fleet_env([("g5.12xlarge", "on-demand", 1)], [4], ("on-demand",))
    method, found = _method_and_candidates(e)
    assert [c.name for c in found] == ["n0"]
    assert _ruled_out(method, [found]) == [False]


def test_a_pending_pod_the_limits_leave_no_node_claim_for_does_not_count() -> None:
    # The NodePool's 4 GPUs are all taken by the g5.12xlarge: the 4-GPU pending pod fits no
    # node and cannot get a NodeClaim (in the simulation either: without n0 the g5.12xlarge
    # still uses them all), so it stays pending, n0's pod takes the free GPU and n0 goes.
    fleet = [("g5.xlarge", "spot", 1), ("g5.12xlarge", "on-demand", 3)]
    e = fleet_env(fleet, [4], ("spot", "on-demand"), gpu_limit=4)
    method, found = _method_and_candidates(e)
    n0 = [c for c in found if c.name == "n0"]
    assert _ruled_out(method, [n0]) == [False]
    proposal = method.compute_consolidation(n0)
    assert proposal is not None
    assert proposal.decision == "delete"
