"""The Ray engine (`runtime/ray_executor.py`, issue 26) against a real Ray instance: the executor
contract of tests/runtime/test_executor.py, what Ray adds to it (the work put once, the tasks in
flight bounded, nothing started past them once closed, a run's error as itself), and `simulate --runs
--ray` giving the local pool's bytes.

Ray starts once for this module (`num_cpus=2`, ~5 s) and the executors under test join it (a
process already connected keeps its connection: `RayExecutor._connect`); one test starts
`gpucap simulate --ray` in a subprocess, which starts and stops a Ray of its own. Without Ray
installed the module skips, except in CI, where the test extra installs it (pyproject.toml)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from gpucap.runtime.executor import Executor, executor_for
from tests.runtime import test_executor as contract

if os.environ.get("CI") != "true":
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test]'")
import ray

from gpucap.runtime.ray_executor import RayExecutor
from tests.cli.test_simulate_cli import gpucap, ok

ROOT = Path(__file__).resolve().parents[2]
ACT3 = str(ROOT / "src" / "gpucap" / "data" / "examples" / "story" / "act3-day.yaml")
SPOT_ICE = str(ROOT / "tests" / "sim" / "stories" / "spot-ice.yaml")
CPUS = 2


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """One local Ray for the module's tests (its workers see this checkout's `tests`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.setenv("RAY_worker_niceness", "0")  # as RayExecutor starts a local Ray
        ray.init(
            address="local",
            num_cpus=CPUS,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
        )
        try:
            yield
        finally:
            ray.shutdown()


@pytest.fixture
def executor(ray_instance: None) -> Executor:
    """The contract's executor, here the Ray engine (`auto`: the module's Ray)."""
    return executor_for(CPUS, ray="auto")


# ---- the contract every engine passes (tests/runtime/test_executor.py) -------------------------
test_every_item_comes_back_once_with_its_own_result = (
    contract.test_every_item_comes_back_once_with_its_own_result
)
test_no_items_yield_nothing = contract.test_no_items_yield_nothing
test_the_shared_work_reaches_each_worker_once_not_with_every_task = (
    contract.test_the_shared_work_reaches_each_worker_once_not_with_every_task
)
test_a_runs_error_reaches_the_caller_as_itself = (
    contract.test_a_runs_error_reaches_the_caller_as_itself
)
test_closing_the_results_early_leaves_no_worker_behind = (
    contract.test_closing_the_results_early_leaves_no_worker_behind
)


# ---- what Ray adds ------------------------------------------------------------------------------
class Pickled:
    """Work that counts how often it is pickled (in the driver: class state)."""

    times = 0

    def __reduce__(self) -> tuple[Any, ...]:
        Pickled.times += 1
        return (Pickled, ())

    def __call__(self, item: int) -> int:
        return item + 1


def test_the_work_is_pickled_once_for_every_task(executor: Executor) -> None:
    Pickled.times = 0
    assert sorted(r for _, r in executor.map(Pickled(), range(20))) == list(range(1, 21))
    assert Pickled.times == 1


def test_a_runs_error_is_its_own_type_not_rays_wrapper(executor: Executor) -> None:
    with (
        closing(executor.map(contract.Failing(), range(6))) as results,
        pytest.raises(ValueError, match="run 3 failed") as raised,
    ):
        list(results)
    assert type(raised.value) is ValueError


def test_a_hundred_thousand_items_never_become_a_hundred_thousand_tasks(
    executor: Executor,
) -> None:
    drawn: list[int] = []

    def items() -> Iterator[int]:
        for i in range(100_000):
            drawn.append(i)
            yield i

    with closing(executor.map(contract.Square(), items())) as results:
        next(results)
    # Two tasks in flight per CPU, and one more drawn as the first result came back.
    assert len(drawn) <= 2 * CPUS + 1


class Slow:
    """Work that leaves a file per run it starts, then takes a while."""

    def __init__(self, where: Path) -> None:
        self.where = where

    def __call__(self, item: int) -> int:
        (self.where / f"started-{item}").touch()
        time.sleep(0.3)
        return item


def test_closing_the_results_starts_no_run_beyond_those_in_flight(
    executor: Executor, tmp_path: Path
) -> None:
    with closing(executor.map(Slow(tmp_path), range(40))) as results:
        next(results)
    time.sleep(1.5)  # the tasks in flight run out; nothing more is submitted
    started = list(tmp_path.glob("started-*"))
    # Two in flight per CPU, and one submitted as the first result came back.
    assert len(started) <= 2 * CPUS + 1
    # And the cluster is free again: a new call runs at once.
    assert sorted(r for _, r in executor.map(abs, [-1, -2])) == [1, 2]


def test_an_address_that_is_not_rays_is_refused_before_connecting() -> None:
    from gpucap.runtime.engines import EngineUnavailableError  # noqa: PLC0415

    with pytest.raises(EngineUnavailableError, match=r"--ray ray://head: not a Ray address"):
        RayExecutor(address="ray://head", workers=2)


# ---- simulate --runs --ray ----------------------------------------------------------------------
def test_simulate_runs_on_ray_gives_the_local_pools_bytes(
    ray_instance: None, capsys: Any, monkeypatch: Any
) -> None:
    base = ["simulate", ACT3, "--runs", "3", "-o", "json"]
    one = gpucap([*base, "--workers", "1"], capsys, monkeypatch)
    two = gpucap([*base, "--workers", "2"], capsys, monkeypatch)
    on_ray = gpucap([*base, "--ray"], capsys, monkeypatch)
    assert one[0] == two[0] == on_ray[0] == 0
    assert one[1] == two[1] == on_ray[1]
    # The runs differ (a random world): the same bytes are not the same run three times.
    assert not json.loads(on_ray[1])["summary"]["identical"]


def test_simulate_ray_starts_a_local_ray_of_its_own_and_says_nothing_of_it(
    capsys: Any, monkeypatch: Any
) -> None:
    args = ["simulate", SPOT_ICE, "--runs", "2", "-o", "json"]
    env = {**os.environ, "RAY_ADDRESS": ""}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("gpucap")), *args, "--ray", "--workers", "1"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == ok([*args, "--workers", "1"], capsys, monkeypatch)
