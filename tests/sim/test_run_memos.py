"""Each run keeps its memos to itself (`runtime/memo.py`: `Memos`, owned by the run's `Cluster`):
two simulations in one process, taking turns instant by instant, give each the event log and
summary it gives alone (the law parallel sweep runs rely on), and nothing a run memoised keeps
its cluster or its objects alive once the run is dropped."""

from __future__ import annotations

import gc
import json
import threading
import weakref
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.recorder import json_line
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import SimulationResult, World

STORIES = Path(__file__).parent / "stories"
# Stories whose runs fill the disruption controller's memos: consolidation (single- and
# multi-node, spot), do-not-disrupt durations, drift, an interruption.
MEMO_STORIES = (
    "underutilized",
    "underutilized-spot",
    "do-not-disrupt",
    "drift-window",
    "interrupt",
)


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    return load_catalog(region)


def _world(name: str) -> World:
    return World(load_scenario(str(STORIES / f"{name}.yaml"), _catalog), _catalog())


def _output(result: SimulationResult) -> str:
    """What `gpucap simulate` prints of a run, as text: every event and the summary."""
    lines = [json_line(e) for e in result.events]
    return "\n".join([*lines, json.dumps(result.summary, sort_keys=True)])


@cache
def _alone(name: str) -> str:
    return _output(_world(name).run())


def _in_turns(worlds: Sequence[World]) -> list[SimulationResult]:
    """Run `worlds` in this process taking turns: each in a thread of its own, handing the turn
    to the next unfinished one after every simulated instant (`on_step`); one runs at a time,
    so the order of their steps is fixed."""
    lock = threading.Condition()
    turn = [0]
    done = [False] * len(worlds)
    results: list[SimulationResult | None] = [None] * len(worlds)
    errors: list[BaseException] = []

    def next_after(i: int) -> int:
        for k in range(1, len(worlds) + 1):
            j = (i + k) % len(worlds)
            if not done[j]:
                return j
        return i

    def hand_on(i: int) -> Callable[[float], None]:
        def step(_t: float) -> None:
            with lock:
                turn[0] = next_after(i)
                lock.notify_all()
                lock.wait_for(lambda: turn[0] == i)

        return step

    def body(i: int) -> None:
        with lock:
            lock.wait_for(lambda: turn[0] == i)
        try:
            results[i] = worlds[i].run(on_step=hand_on(i))
        except BaseException as err:  # re-raised by the caller
            errors.append(err)
        finally:
            with lock:
                done[i] = True
                turn[0] = next_after(i)
                lock.notify_all()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(worlds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MEMO_STORIES), st.sampled_from(MEMO_STORIES))
@example("underutilized", "underutilized")
def test_two_runs_taking_turns_in_one_process_each_give_what_they_give_alone(
    first: str, second: str
) -> None:
    a, b = _in_turns([_world(first), _world(second)])
    assert _output(a) == _alone(first)
    assert _output(b) == _alone(second)


def test_nothing_a_run_memoised_outlives_the_run() -> None:
    world = _world("underutilized")
    world.run()
    cluster = world.cluster
    assert len(cluster.memos) > 5  # the run did fill its memos
    node = cluster.nodes()[0]
    refs = [weakref.ref(cluster), weakref.ref(node), weakref.ref(cluster.node_claims()[0])]
    del world, cluster, node
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
