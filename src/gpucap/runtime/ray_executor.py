"""The Ray engine of `--ray [ADDRESS]` (issue 26): the same runs as Ray tasks, behind the
`Executor` Protocol of `runtime/executor.py`, so `simulate --runs` and `sweep` print the same
bytes whichever engine ran them.

- `address`: `local` starts a Ray instance on this machine for the call (`num_cpus=workers`)
  and shuts it down afterwards; `auto` (the cluster this machine belongs to, e.g. inside a
  KubeRay head pod) and `ray://host:port` (Ray Client) connect to a running cluster, which is
  never shut down: only this driver's connection is closed. A process already connected to Ray
  (`ray.is_initialized()`: a test, a notebook) keeps its connection and the engine uses it.
- The work (the loaded scenario and the catalog: `sim/runset.SeedRun`, ~2 MB pickled) goes to
  the object store once (`ray.put`); each task gets the reference and its item (a seed). A
  worker process keeps the last work it fetched, so it unpickles the work once, not per task
  (the reference travels inside a list: Ray would otherwise fetch and unpickle it per task).
- Results stream back as they finish (`ray.wait`, one at a time), with at most `2 x CPUs`
  tasks in flight: 100,000 items never become 100,000 tasks at once, and the cluster is never
  idle waiting for the driver.
- Closing the results (Ctrl-C, an error, the caller stopped) submits nothing more: the items
  not yet submitted never start, the tasks in flight (at most 2 per CPU) run out and their
  results are dropped (not `ray.cancel`led: see `_stream`).
- A run's exception reaches the caller as itself: Ray's `RayTaskError` is unwrapped to its
  cause.
- Ray is optional (`pip install 'gpucap[ray]'`), imported only here; not installed, or a
  cluster that cannot be reached, is an `EngineUnavailableError` of one line. Ray's own logs
  stay off the terminal (`log_to_driver=False`, no dashboard, its loggers at ERROR).

Determinism: a run's outcome depends on its work and its item alone (`sim/runset.py`), so the
results are the local pool's byte for byte; nothing here draws a random number or reads a clock.
Called through `runtime/executor.executor_for(workers, ray=ADDRESS)`; the contract it passes is
tests/runtime/test_executor.py's (run against it by tests/runtime/test_ray_executor.py).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import ExitStack
from itertools import chain, islice
from typing import Any, TypeVar

from gpucap.runtime.engines import (
    LOCAL,
    RAY_ADDRESSES,
    EngineUnavailableError,
    is_ray_address,
)

__all__ = ["RAY_NOT_INSTALLED", "RayExecutor"]

T = TypeVar("T")
R = TypeVar("R")

RAY_NOT_INSTALLED = "--ray: Ray is not installed: pip install 'gpucap[ray]'"
# Tasks in flight per CPU: enough that a worker finishing a run finds the next one queued.
_IN_FLIGHT_PER_CPU = 2


def _import_ray() -> Any:
    try:
        import ray  # noqa: PLC0415 - the optional engine: imported only when asked for
    except ImportError:
        raise EngineUnavailableError(RAY_NOT_INSTALLED) from None
    return ray


# The work a worker process last fetched: (the object's id, the work). One entry: a worker
# serves one call's work at a time, and an old one is let go when a new call starts.
_FETCHED: tuple[str, Callable[[Any], Any]] | None = None


def _run(boxed: list[Any], item: Any) -> Any:
    """One task in a Ray worker: the call's work on `item`, the work fetched once per worker."""
    global _FETCHED  # noqa: PLW0603 - the worker process's one piece of state
    import ray  # noqa: PLC0415 - in the worker, where Ray is running

    ref = boxed[0]
    key = ref.hex()
    if _FETCHED is None or _FETCHED[0] != key:
        _FETCHED = (key, ray.get(ref))
    return _FETCHED[1](item)


class RayExecutor:
    """Runs on Ray at `address` with `workers` CPUs for a local instance (see the module
    docstring). Checks that Ray is installed when built; connects when `map` starts."""

    def __init__(self, *, address: str, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"a Ray engine needs at least one worker, not {workers}")
        if not is_ray_address(address):
            raise EngineUnavailableError(f"--ray {address}: not a Ray address ({RAY_ADDRESSES})")
        self._ray = _import_ray()
        self._address = address
        self._workers = workers

    @property
    def address(self) -> str:
        return self._address

    @property
    def workers(self) -> int:
        """The CPUs of a local instance; for a cluster, its own CPUs decide (at least this)."""
        return self._workers

    def map(self, work: Callable[[T], R], items: Iterable[T]) -> Generator[tuple[T, R], None, None]:
        todo = iter(items)
        first = list(islice(todo, 1))
        if not first:
            return
        with ExitStack() as stack:
            cpus = self._connect(stack)
            yield from self._stream(work, chain(first, todo), cpus)

    def _connect(self, stack: ExitStack) -> int:
        """Start or join Ray (a shutdown is pushed on `stack` when this call opened it); the
        CPUs that will run the tasks."""
        ray = self._ray
        if not ray.is_initialized():
            # Ray's usage report would try the network at start: off unless the user chose.
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            local = self._address == LOCAL
            options: dict[str, Any] = {
                "address": self._address,  # `local`: a new instance, even beside a running one
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.ERROR,
            }
            if local:
                options["num_cpus"] = self._workers
                # Ray nices its workers (15) by default; a local Ray started for the runs is the
                # runs' own, as the local pool's processes are (it would lose the CPU to any
                # other work on the machine). Read by the raylet it starts.
                os.environ.setdefault("RAY_worker_niceness", "0")
            try:
                with warnings.catch_warnings():
                    # Ray Client warns (a UserWarning with a link) before it raises on a timeout.
                    warnings.simplefilter("ignore")
                    ray.init(**options)
            except Exception as e:  # Ray raises several kinds (ConnectionError, RuntimeError...)
                ray.shutdown()
                if self._address == "auto" and isinstance(e, ConnectionError):
                    raise EngineUnavailableError(
                        "--ray auto: no Ray cluster found: set RAY_ADDRESS, or run on a node "
                        "of the cluster (a KubeRay head pod)"
                    ) from None
                raise EngineUnavailableError(
                    f"--ray {self._address}: cannot {'start' if local else 'reach'} Ray: "
                    f"{_first_line(e)}"
                ) from None
            # A local instance is this call's: shut down. A cluster is not: the driver
            # disconnects and the cluster runs on.
            stack.callback(ray.shutdown)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        return max(cpus, 1) if self._address != LOCAL else self._workers

    def _stream(
        self, work: Callable[[T], R], todo: Iterator[T], cpus: int
    ) -> Generator[tuple[T, R], None, None]:
        ray = self._ray
        from ray.exceptions import RayTaskError  # noqa: PLC0415 - Ray is installed by now

        task = ray.remote(num_cpus=1)(_run)
        boxed = [ray.put(work)]  # once, to the object store; tasks get the reference
        limit = max(cpus, self._workers) * _IN_FLIGHT_PER_CPU
        # Closed early, the items not yet submitted are never submitted, and the tasks in flight
        # (at most `limit`) run out, their results dropped; a local Ray's shutdown ends them at
        # once. They are not `ray.cancel`led: in Ray 2.60 a cancelled task whose reply was
        # already on its way aborts the driver process (task_manager.cc, "Tried to complete
        # task that was not pending"), seen in this test suite.
        flying: dict[Any, T] = {}
        for item in islice(todo, limit):
            flying[task.remote(boxed, item)] = item
        while flying:
            [ref], _ = ray.wait(list(flying), num_returns=1)
            item = flying.pop(ref)
            try:
                result = ray.get(ref)
            except RayTaskError as e:
                raise _cause(e) from None
            for following in islice(todo, 1):
                flying[task.remote(boxed, following)] = following
            yield item, result


def _cause(e: BaseException) -> BaseException:
    """A task's own exception out of Ray's wrapper (`RayTaskError.cause`)."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
