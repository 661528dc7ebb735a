"""Laws of the consolidation decision over random GPU fleets (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.consolidation import (
    SingleNodeConsolidation,
    worst_launch_price,
)
from gpucap.controllers.disruption.room import Room
from gpucap.controllers.disruption.simulation import pass_inputs
from gpucap.controllers.disruption.types import GRACEFUL
from tests.controllers.disruption_builders import env, gpu_pod, pool

TYPES = {"g5.xlarge": 1, "g5.2xlarge": 1, "g5.12xlarge": 4}

fleets = st.lists(
    st.tuples(
        st.sampled_from(sorted(TYPES)),
        st.sampled_from(["spot", "on-demand"]),
        st.integers(min_value=0, max_value=4),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets, st.sampled_from([("on-demand",), ("spot", "on-demand")]))
def test_the_room_check_never_skips_a_candidate_the_simulation_would_consolidate(
    fleet: list[tuple[str, str, int]], capacity_types: tuple[str, ...]
) -> None:
    pods = []
    placed: list[tuple[str, str, tuple[str, ...]]] = []
    for i, (it, ct, n) in enumerate(fleet):
        keys = tuple(f"default/p{i}-{j}" for j in range(min(n, TYPES[it])))
        pods.extend(gpu_pod(k.split("/")[1]) for k in keys)
        placed.append((it, ct, keys))
    e = env(pool(capacity_types=capacity_types), *pods)
    for i, (it, ct, keys) in enumerate(placed):
        e.node(f"n{i}", it, capacity_type=ct, gpus=TYPES[it], pods=keys)
    method = e.disruption.methods[4]
    assert isinstance(method, SingleNodeConsolidation)
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    now = e.clock.now()
    # The pre-check as consolidation builds it for a pass (spot-to-spot off, the default).
    inputs = pass_inputs(e.cluster, method.provisioner, nodepools=e.cluster.nodepools, now=now)
    room = Room(inputs, now, spot_to_spot=False)
    for c in found:
        if not method.should_disrupt(c):
            continue
        proposal = method.compute_consolidation([c])
        if proposal is not None:
            assert room.may_move([c]), c.name
        # and every replacement kept is strictly cheaper in the worst case
        for claim in proposal.new_claims if proposal is not None else []:
            for it in claim.instance_types:
                assert worst_launch_price(it, claim.requirements) < c.price
