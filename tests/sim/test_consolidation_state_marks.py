"""What moves the simulator's consolidation state: only what moves Karpenter's
(`Cluster.MarkUnconsolidated` callers in kubernetes-sigs/karpenter
`pkg/controllers/state/cluster.go` @ 2266468104f3: pod bindings and deletions, state nodes
appearing and going, Initialized, a deletion timestamp on a node not marked for deletion,
NodePool and NodeOverlay changes). Rules over stories: every move happens at an instant with
such an event, and an instant whose only events are pods created, nominated or Ready or
offerings marked unavailable moves nothing (a Node registering does: its DaemonSet pods bind)."""

from __future__ import annotations

import inspect
from collections import defaultdict

import pytest

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import World
from tests.sim.storyruns import STORIES

# Events at whose instant Karpenter's cluster state may be marked unconsolidated.
MARKING = {
    "PodBound",
    "PodDeleted",
    "PodEvicted",
    "NodeClaimLaunched",
    "NodeInitialized",
    "NodeClaimDeleted",
    "NodeTerminated",
    "DisruptionDecision",  # expiration, interruption, garbage collection mark deletion
    "ScenarioEvent",  # an applied NodePool
    "LaunchFailed",
    "NodeRegistered",  # its DaemonSet pods bind (sim/daemonsets.py: no event of their own)
}
# Events that never mark it.
QUIET = {"PodCreated", "PodNominated", "PodReady", "OfferingUnavailable"}


class _Recording:
    """A world whose cluster's `mark_unconsolidated` calls are recorded: when, and the names of
    the functions on the stack (`Cluster` marks itself from its own mutations)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.moves: list[float] = []
        self.stacks: list[set[str]] = []
        mark = world.cluster.mark_unconsolidated

        def recorded() -> None:
            self.moves.append(world.now)
            self.stacks.append({f.function for f in inspect.stack()[1:12]})
            mark()

        world.cluster.mark_unconsolidated = recorded  # type: ignore[method-assign]


def _world(name: str) -> _Recording:
    scenario = load_scenario(str(STORIES / f"{name}.yaml"), load_catalog)
    return _Recording(World(scenario, load_catalog(scenario.region)))


def _run(name: str) -> tuple[list[float], dict[float, set[str]]]:
    recording = _world(name)
    events = recording.world.run().events
    at: dict[float, set[str]] = defaultdict(set)
    for e in events:
        at[e.t].add(e.type)
    return recording.moves, at


@pytest.mark.parametrize(
    "name", ["underutilized", "when-empty", "budget-1", "expire-zero-budget", "interrupt"]
)
def test_the_consolidation_state_moves_only_at_karpenters_marking_events(name: str) -> None:
    moves, at = _run(name)
    assert moves
    for t in moves:
        if t == 0:
            continue  # the scenario's manifests applied: its NodePools among them
        assert at[t] & MARKING, (t, sorted(at[t]))
    quiet = [t for t, types in at.items() if types and types <= QUIET]
    assert quiet  # the stories have such instants (pods created)
    assert not (set(quiet) - {0.0}) & set(moves)


@pytest.mark.parametrize(
    ("name", "caller"), [("expire-zero-budget", "_expire"), ("interrupt", "_interrupt")]
)
def test_expiration_and_interruption_move_the_state_with_the_deletion_timestamp(
    name: str, caller: str
) -> None:
    # The NodeClaim was not marked for deletion by a disruption command: its deletion
    # timestamp turns MarkedForDeletion true, itself a move (not only the drain after it).
    recording = _world(name)
    recording.world.run()
    assert any({caller, "delete", "_set_claim"} <= stack for stack in recording.stacks)


def test_a_disruption_commands_deletion_timestamp_does_not_move_the_state() -> None:
    # Its candidates were marked for deletion first (`mark_for_deletion` moves nothing), so
    # the deletion timestamp leaves MarkedForDeletion as it was.
    recording = _world("underutilized")
    events = recording.world.run().events
    assert any(e.type == "DisruptionDecision" and e.fields.get("method") for e in events)
    assert not any({"_run_queue", "delete", "_set_claim"} <= stack for stack in recording.stacks)
