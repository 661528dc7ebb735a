"""The Ray engine against the local pool (issue 26, "Performance"): the same N runs of one
scenario (default: the demo's act 3, a day of the workshop fleet in a random world; 40 runs) on
the local process pool and on a local Ray with the same CPUs, through the executors
`simulate --runs` uses (`runtime/executor.py`, `runtime/ray_executor.py`).

Prints:
- the work: its pickled size (what `ray.put` ships once) and the time to pickle it; the CPU
  seconds of one run (a few runs inline, `time.process_time`), which sizes a sweep's bill;
- the local pool's wall time; Ray's: start-up (`ray.init`), the runs, shut-down; the ratio of
  Ray's wall time to the pool's, with and without start-up and shut-down (target: within 15 %);
- the peak memory (max RSS) of each worker process, per engine;
- whether the two engines gave the same outcomes, byte for byte (they must: exit 1 otherwise).

Run: `python bench/ray_engine.py [--runs 40] [--workers 2] [--repeat 2] [--scenario FILE]` (or
`make bench-ray`); needs Ray (`pip install -e '.[ray]'`). Not a unit test: the figures depend on
the machine and its load (record them in docs/perf-log.md, "The Ray engine").
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.runtime.executor import Executor, ProcessExecutor
from gpucap.runtime.ray_executor import RayExecutor
from gpucap.sim.runset import RunOutcome, SeedRun
from gpucap.sim.scenario import load_scenario

ACT3 = Path(__file__).resolve().parent.parent / "src/gpucap/data/examples/story/act3-day.yaml"


@dataclass(frozen=True)
class Measured:
    """The work, and each run's worker and that worker's peak memory so far (KiB)."""

    work: Callable[[int], RunOutcome]

    def __call__(self, seed: int) -> tuple[RunOutcome, int, int]:
        outcome = self.work(seed)
        return outcome, os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _run(
    engine: Executor, work: SeedRun, seeds: range
) -> tuple[float, dict[int, RunOutcome], dict[int, int]]:
    """Wall seconds, outcomes by seed, peak KiB by worker."""
    started = time.perf_counter()
    outcomes: dict[int, RunOutcome] = {}
    peaks: dict[int, int] = {}
    for seed, (outcome, pid, rss) in engine.map(Measured(work), seeds):
        outcomes[seed] = outcome
        peaks[pid] = max(peaks.get(pid, 0), rss)
    return time.perf_counter() - started, outcomes, peaks


def _bytes(outcomes: dict[int, RunOutcome]) -> str:
    return json.dumps([[o.seed, o.summary, o.cost_curve] for _, o in sorted(outcomes.items())])


def _mib(peaks: dict[int, int]) -> str:
    values = sorted(round(kib / 1024) for kib in peaks.values())
    return f"{len(values)} workers, peak RSS {', '.join(f'{v} MiB' for v in values)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--scenario", default=str(ACT3))
    parser.add_argument("--cpu-sample", type=int, default=3, help="runs timed inline for CPU s")
    parser.add_argument("--repeat", type=int, default=2, help="turns of each engine (median)")
    args = parser.parse_args(argv)

    import ray  # noqa: PLC0415 - the engine under test; a clear ImportError without it

    t0 = time.perf_counter()
    scenario = load_scenario(args.scenario, load_catalog)
    work = SeedRun(scenario, load_catalog(scenario.region))
    seeds = range(scenario.seed, scenario.seed + args.runs)
    print(f"scenario {scenario.name}: {args.runs} runs, {args.workers} workers")
    print(f"  load: {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    blob = pickle.dumps(work)
    print(f"  work pickled: {len(blob) / 1e6:.2f} MB in {time.perf_counter() - t0:.3f} s")
    # Ray starts once (its start-up is measured); then the engines take turns, `--repeat`
    # times each, so that a change in the machine's load weighs on both alike.
    # As `RayExecutor` starts a local Ray: no usage report, workers not niced.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_worker_niceness", "0")
    t0 = time.perf_counter()
    ray.init(
        address="local",
        num_cpus=args.workers,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    start = time.perf_counter() - t0
    engine = RayExecutor(address="auto", workers=args.workers)  # joins the Ray just started
    pool_walls: list[float] = []
    ray_walls: list[float] = []
    for _ in range(args.repeat):
        wall, pool_out, pool_peaks = _run(ProcessExecutor(args.workers), work, seeds)
        pool_walls.append(wall)
        wall, ray_out, ray_peaks = _run(engine, work, seeds)
        ray_walls.append(wall)
    t0 = time.perf_counter()
    ray.shutdown()
    stop = time.perf_counter() - t0
    # After the engines: a run in this process warms its caches (the resolved instance types,
    # the memos), which forked pool workers would inherit and Ray's workers would not.
    cpu = []
    for seed in seeds[: args.cpu_sample]:
        c0 = time.process_time()
        work(seed)
        cpu.append(time.process_time() - c0)
    per_run = statistics.mean(cpu)
    print(f"  CPU per run (inline, {len(cpu)} runs): {per_run:.2f} s (min {min(cpu):.2f})")
    pool_wall = statistics.median(pool_walls)
    ray_wall = statistics.median(ray_walls)
    walls = ", ".join(f"{w:.2f}" for w in pool_walls)
    print(f"local pool: {pool_wall:.2f} s wall (median of {walls}); {_mib(pool_peaks)}")
    walls = ", ".join(f"{w:.2f}" for w in ray_walls)
    print(
        f"ray: runs {ray_wall:.2f} s wall (median of {walls}); start-up {start:.2f} s, "
        f"shut-down {stop:.2f} s; {_mib(ray_peaks)}"
    )
    total = start + ray_wall + stop
    print(
        f"ratio ray/pool: {ray_wall / pool_wall:.3f} for the runs, {total / pool_wall:.3f} "
        f"with start-up and shut-down (target <= 1.15)"
    )
    same = _bytes(pool_out) == _bytes(ray_out)
    print(f"outcomes byte-identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
