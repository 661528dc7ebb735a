"""The executor seam (`runtime/executor.py`): the contract every engine passes, run against each
implementation (inline, local processes; the Ray executor runs these same tests against a real
local Ray in tests/runtime/test_ray_executor.py). An engine is right when every item comes back
once with its own result, the shared work reaches a worker once rather than per task, a run's
error reaches the caller as itself, and stopping early leaves no worker behind."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from contextlib import closing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.runtime.executor import (
    Executor,
    InlineExecutor,
    ProcessExecutor,
    default_workers,
    executor_for,
)

EXECUTORS: dict[str, Callable[[], Executor]] = {
    "inline": InlineExecutor,
    "processes": lambda: ProcessExecutor(2),
}


@pytest.fixture(params=sorted(EXECUTORS))
def executor(request: pytest.FixtureRequest) -> Executor:
    return EXECUTORS[request.param]()


class Square:
    """Shared work with state: how many items this copy of the work has run so far."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, item: int) -> tuple[int, int, int]:
        self.calls += 1
        return item * item, os.getpid(), self.calls


class Failing:
    def __call__(self, item: int) -> int:
        if item == 3:
            raise ValueError(f"run {item} failed")
        return item


def test_every_item_comes_back_once_with_its_own_result(executor: Executor) -> None:
    got = list(executor.map(Square(), range(10)))
    assert sorted(item for item, _ in got) == list(range(10))
    assert all(result[0] == item * item for item, result in got)


def test_no_items_yield_nothing(executor: Executor) -> None:
    assert list(executor.map(Square(), [])) == []


def test_the_shared_work_reaches_each_worker_once_not_with_every_task(executor: Executor) -> None:
    got = [result for _, result in executor.map(Square(), range(12))]
    by_worker: dict[int, list[int]] = {}
    for _, pid, calls in got:
        by_worker.setdefault(pid, []).append(calls)
    assert len(by_worker) <= max(1, executor.workers)
    # One copy of the work per worker, kept across its tasks: its count goes 1, 2, 3, ...
    # (work sent with every task would start at 1 each time).
    assert sorted(c for counts in by_worker.values() for c in counts) != [1] * 12
    for counts in by_worker.values():
        assert sorted(counts) == list(range(1, len(counts) + 1))


def test_a_runs_error_reaches_the_caller_as_itself(executor: Executor) -> None:
    with (
        pytest.raises(ValueError, match="run 3 failed"),
        closing(executor.map(Failing(), range(6))) as results,
    ):
        list(results)
    assert multiprocessing.active_children() == []


def test_closing_the_results_early_leaves_no_worker_behind(executor: Executor) -> None:
    with closing(executor.map(Square(), range(50))) as results:
        first = next(results)
    assert first[1][0] == first[0] ** 2
    assert multiprocessing.active_children() == []


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=20))
def test_the_inline_executor_runs_the_items_in_their_order(items: list[int]) -> None:
    got = list(InlineExecutor().map(lambda x: -x, items))
    assert got == [(x, -x) for x in items]


def test_one_worker_runs_inline_and_more_run_on_processes() -> None:
    assert isinstance(executor_for(1), InlineExecutor)
    assert isinstance(executor_for(3), ProcessExecutor)
    assert executor_for(3).workers == 3
    assert default_workers() >= 1


def test_a_pool_of_no_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        ProcessExecutor(0)
