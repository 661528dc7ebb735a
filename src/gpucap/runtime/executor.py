"""Where many independent runs execute: the executor seam of `simulate --runs` (issue 25) and of
`sweep` (issue 26), with a Ray executor behind the same Protocol.

The work is split in two, so that each engine can ship it the cheap way:
- the *work*: one callable holding everything the runs share (for `simulate --runs`, the loaded
  scenario and the catalog, `sim/runset.SeedRun`), given to each worker once;
- the *items*: what differs per run (a seed), small and picklable, sent one per task; each
  result (a summary dict and a cost curve) comes back picklable.

`Executor.map(work, items)` yields `(item, result)` pairs as the runs finish, in whatever order
they finish: the caller orders them (by seed) before it prints, so the output does not depend on
the engine or the number of workers. Closing the iterator (`contextlib.closing`, on Ctrl-C or an
error) cancels the runs that have not started; an exception raised by a run reaches the caller
as itself, from the `next()` that would have yielded that run.

Implementations:
- `InlineExecutor`: the runs one after the other in this process (`--workers 1`, and tests).
- `ProcessExecutor`: a local `concurrent.futures.ProcessPoolExecutor`. The work reaches each
  worker once, through the pool's initializer; workers are forked, so the work is inherited, not
  pickled. Workers ignore SIGINT: Ctrl-C reaches the parent only, which stops handing out runs
  and lets the ones under way finish.
- `RayExecutor` (`runtime/ray_executor.py`, `--ray [ADDRESS]`): Ray tasks on a local Ray or a
  cluster; the work goes pickled, once, through Ray's object store.

Called by `cli/simulate_runs.py`; tests/runtime/test_executor.py is the contract every
implementation passes. This module is wall-clock free and draws no random number.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol, TypeVar

__all__ = [
    "Executor",
    "InlineExecutor",
    "ProcessExecutor",
    "default_workers",
    "executor_for",
]

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs `work(item)` for each item, somewhere (see the module docstring)."""

    @property
    def workers(self) -> int:
        """How many runs may go at once."""
        ...

    def map(self, work: Callable[[T], R], items: Iterable[T]) -> Generator[tuple[T, R], None, None]:
        """`(item, work(item))` for every item, as each finishes (any order)."""
        ...


def default_workers() -> int:
    """`--workers` when not given: the machine's CPU count (at least 1)."""
    return os.cpu_count() or 1


class InlineExecutor:
    """The runs in this process, in the order of the items."""

    @property
    def workers(self) -> int:
        return 1

    def map(self, work: Callable[[T], R], items: Iterable[T]) -> Generator[tuple[T, R], None, None]:
        for item in items:
            yield item, work(item)


# The work a forked worker was given by the pool's initializer (one per worker process).
_WORK: Callable[[Any], Any] | None = None


def _install(work: Callable[[Any], Any]) -> None:
    """The pool's initializer, in each worker: keep the work; leave Ctrl-C to the parent."""
    global _WORK  # noqa: PLW0603 - the worker process's one piece of state
    _WORK = work
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(item: Any) -> Any:
    """One task in a worker: the installed work on one item."""
    assert _WORK is not None, "the pool's initializer installs the work first"
    return _WORK(item)


class ProcessExecutor:
    """The runs on `workers` local processes (see the module docstring)."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"a process pool needs at least one worker, not {workers}")
        self._workers = workers

    @property
    def workers(self) -> int:
        return self._workers

    def map(self, work: Callable[[T], R], items: Iterable[T]) -> Generator[tuple[T, R], None, None]:
        todo = list(items)
        if not todo:
            return
        pool = ProcessPoolExecutor(
            max_workers=min(self._workers, len(todo)),
            mp_context=multiprocessing.get_context("fork"),
            initializer=_install,
            initargs=(work,),
        )
        try:
            running: dict[Future[R], tuple[int, T]] = {
                pool.submit(_call, item): (i, item) for i, item in enumerate(todo)
            }
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                # Several may finish together: handed over in submission order (the caller
                # still sorts: the order of finishing is the machine's).
                for future in sorted(done, key=lambda f: running[f][0]):
                    _, item = running.pop(future)
                    yield item, future.result()
        finally:
            # Closed early (Ctrl-C, an error, the caller stopped): runs not started are
            # cancelled, the ones under way finish, and no worker outlives the call.
            pool.shutdown(wait=True, cancel_futures=True)


def executor_for(workers: int, *, ray: str | None = None) -> Executor:
    """The executor for `--workers` and `--ray [ADDRESS]`.

    With `ray` (an address: `auto`, `ray://host:port`, or `local` for a Ray instance started for
    the call), the runs go to Ray (`runtime/ray_executor.py`, imported only then: Ray is an
    optional extra). Otherwise the local engine: inline for one worker, a process pool
    otherwise. Without `fork` (Windows) the runs go inline: a spawned worker would need the work
    pickled."""
    if ray is not None:
        from gpucap.runtime.ray_executor import RayExecutor  # noqa: PLC0415 - optional engine

        return RayExecutor(address=ray, workers=workers)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return InlineExecutor()
    return ProcessExecutor(workers)
