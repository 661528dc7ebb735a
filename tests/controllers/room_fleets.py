"""Random fleets for consolidation's pre-check (controllers/disruption/room.py) and the GPU
types they use, shared by the disruption tests (not a test module)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gpucap.apis.labels import ZONE
from gpucap.controllers.disruption.candidates import get_candidates
from gpucap.controllers.disruption.consolidation import (
    MultiNodeConsolidation,
    SingleNodeConsolidation,
)
from gpucap.controllers.disruption.room import Room
from gpucap.controllers.disruption.simulation import pass_inputs
from gpucap.controllers.disruption.types import GRACEFUL, Candidate
from gpucap.scheduling.instancetypes import InstanceType
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool
from tests.scheduling.builders import ZONES, instance_type

GPUS = {"g5.xlarge": 1, "g5.2xlarge": 1, "g5.12xlarge": 4}
PRICES = {"g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.12xlarge": 5.672}


def _types(
    spot_gone: frozenset[str] = frozenset(), zones: tuple[str, ...] = ZONES
) -> list[InstanceType]:
    """The three GPU types; those in `spot_gone` have no available spot offering in `zones`."""
    return [
        instance_type(
            name,
            cpu=4 * GPUS[name],
            memory_gib=16 * GPUS[name],
            gpu=GPUS[name],
            price=PRICES[name],
            unavailable=tuple((z, "spot") for z in zones) if name in spot_gone else (),
        )
        for name in sorted(GPUS)
    ]


def _room(e: Env, method: SingleNodeConsolidation | MultiNodeConsolidation) -> Room:
    inputs = pass_inputs(
        e.cluster, e.disruption.provisioner, nodepools=e.cluster.nodepools, now=e.clock.now()
    )
    return Room(inputs, e.clock.now(), spot_to_spot=method.spot_to_spot)


def _candidates(
    e: Env, method: SingleNodeConsolidation | MultiNodeConsolidation
) -> list[Candidate]:
    found, _ = get_candidates(e.cluster, e.provider, e.clock.now(), disruption_class=GRACEFUL)
    return method.sort([c for c in found if method.should_disrupt(c)])


def _fleet(
    fleet: list[tuple[str, str, int]],
    *,
    capacity_types: tuple[str, ...],
    spot_gone: frozenset[str],
    spot_to_spot: bool,
    zoned: bool,
    gone_in: tuple[str, ...] = ZONES,
) -> Env:
    pods: list[dict[str, Any]] = []
    placed: list[tuple[str, str, tuple[str, ...]]] = []
    for i, (it, ct, n) in enumerate(fleet):
        keys = tuple(f"default/p{i}-{j}" for j in range(min(n, GPUS[it])))
        extra: dict[str, Any] = {"nodeSelector": {ZONE: "us-east-1a"}} if zoned and i == 0 else {}
        pods.extend(gpu_pod(k.split("/")[1], **extra) for k in keys)
        placed.append((it, ct, keys))
    e = env(
        pool(capacity_types=capacity_types),
        *pods,
        types=_types(spot_gone, gone_in),
        spot_to_spot=spot_to_spot,
    )
    for i, (it, ct, keys) in enumerate(placed):
        # Spot nodes run in us-east-1c; a type without spot left there launches on-demand.
        gone = it in spot_gone and "us-east-1c" in gone_in
        launched = "on-demand" if gone or ct not in capacity_types else ct
        zone = "us-east-1c" if launched == "spot" else "us-east-1a"
        e.node(f"n{i}", it, capacity_type=launched, zone=zone, gpus=GPUS[it], pods=keys)
    return e


fleets = st.lists(
    st.tuples(
        st.sampled_from(sorted(GPUS)),
        st.sampled_from(["spot", "on-demand"]),
        st.integers(min_value=0, max_value=4),
    ),
    min_size=1,
    max_size=5,
)
