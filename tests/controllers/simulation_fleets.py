"""Random fleets and pending pods for the disruption scheduling simulation's laws, shared by the
pending-room tests (not a test module)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import strategies as st

from gpucap.controllers.disruption.consolidation import Consolidation
from gpucap.controllers.disruption.types import Candidate, Proposal
from gpucap.scheduling.scheduler import Results, Scheduler
from tests.builders import edit
from tests.controllers.disruption_builders import Env, env, gpu_pod, pool

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
# Pending pods: their GPU counts (a 4-GPU pod fits only a g5.12xlarge).
pendings = st.lists(st.sampled_from([1, 1, 4]), max_size=4)


def fleet_env(
    fleet: list[tuple[str, str, int]],
    pending: list[int],
    capacity_types: tuple[str, ...],
    *,
    spot_to_spot: bool = False,
    gpu_limit: int | None = None,
) -> Env:
    """GPU nodes `fleet` ((type, capacity type, pods on it)), pending pods of `pending` GPUs,
    one NodePool of `capacity_types` (with a GPU limit when given)."""
    pods = []
    placed: list[tuple[str, str, tuple[str, ...]]] = []
    for i, (it, ct, n) in enumerate(fleet):
        keys = tuple(f"default/p{i}-{j}" for j in range(min(n, TYPES[it])))
        pods.extend(gpu_pod(k.split("/")[1]) for k in keys)
        placed.append((it, ct, keys))
    pods.extend(gpu_pod(f"pending-{i}", gpus) for i, gpus in enumerate(pending))
    doc = pool(capacity_types=capacity_types)
    if gpu_limit is not None:
        doc = edit(doc, "spec.limits", {"nvidia.com/gpu": str(gpu_limit)})
    e = env(doc, *pods, spot_to_spot=spot_to_spot)
    for i, (it, ct, keys) in enumerate(placed):
        e.node(f"n{i}", it, capacity_type=ct, gpus=TYPES[it], pods=keys)
    return e


@contextmanager
def _whole_solves() -> Iterator[None]:
    """The reference: every solve runs to the end, whatever `stop_past` it is given."""
    solve = Scheduler.solve

    def whole(self: Scheduler, pods: Sequence[Any], *, stop_past: int | None = None) -> Results:
        return solve(self, pods)

    with patch.object(Scheduler, "solve", whole):
        yield


def _decision(p: Proposal | None) -> object:
    if p is None:
        return None
    return (
        p.method,
        p.decision,
        [c.name for c in p.candidates],
        [
            (str(c.requirements), [it.name for it in c.instance_types], [x.key for x in c.pods])
            for c in p.new_claims
        ],
    )


def _decisions(method: Consolidation, found: list[Candidate]) -> list[object]:
    out: list[object] = []
    batches = [[c] for c in found] + [found[: n + 1] for n in range(1, len(found))]
    for batch in batches:
        proposal = method.compute_consolidation(batch)
        out.append(_decision(proposal))
        if proposal is not None:
            out.append(_decision(method.validate(proposal)))
    return out
