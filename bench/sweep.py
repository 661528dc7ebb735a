"""Sweep benchmark (issue 26): many runs of the workshop fleet's day, variants x seeds, on the
local process pool (or Ray).

Run: `python bench/sweep.py [--variants 50] [--seeds 20] [--workers W] [--ray [ADDRESS]]` (or
`make bench-sweep`; `SWEEP_VARIANTS=5 make bench-sweep` for a 100-run version). Writes the
demo's filled story tree (`cli/demo.story_tree`) into a temporary directory, and a Sweep over
its day (`act3-day.yaml`: the measured spot market, an HPA on `bundled:diurnal-24h`, 24 h):
capacity spot first or on-demand only x `variants / 2` values of `consolidateAfter` (1m, 2m,
...), the grid's first `variants`. Then, in this process as `gpucap sweep` does it: load and
validate the sweep (`sim/sweep.load_sweep`), run every (variant, seed) on the executor
(`runtime/executor.py`: `executor_for(W)`, or `executor_for(W, ray=ADDRESS)`) and summarize
(`variant_results`).

Prints: the runs, the load time, the wall time, runs per second, CPU seconds per run (the
workers' user+system over the runs), and peak memory: this process's, and the largest worker's
(`getrusage(RUSAGE_CHILDREN).ru_maxrss`: local workers only; Ray's workers are not our
children). Target (the issue's): 1,000 runs under 10 minutes on a 2-core machine with the local
pool. Not a unit test: figures depend on the machine (record them in docs/perf-log.md).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from gpucap.cli.demo import story_tree
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.runtime.executor import default_workers, executor_for
from gpucap.sim.sweep import load_sweep, variant_results


def sweep_text(variants: int, seeds: int) -> str:
    """A Sweep over the day: capacity (2) x consolidateAfter (`ceil(variants / 2)` values)."""
    afters = ", ".join(f"{m}m" for m in range(1, (variants + 1) // 2 + 1))
    return f"""apiVersion: gpucap.dev/v1alpha1
kind: Sweep
metadata: {{name: bench-day}}
spec:
  scenario: act3-day.yaml
  seeds: {seeds}
  axes:
    - name: capacity
      target: {{kind: NodePool, name: gpu}}
      requirement: karpenter.sh/capacity-type
      values: [[spot, on-demand], [on-demand]]
    - name: consolidateAfter
      target: {{kind: NodePool, name: gpu}}
      path: spec.disruption.consolidateAfter
      values: [{afters}]
"""


def _children() -> tuple[float, int]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _mib(kib: int) -> float:
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    return kib / (1024 * 1024) if sys.platform == "darwin" else kib / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--variants", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS")
    args = parser.parse_args()
    engine_name = f"ray {args.ray}" if args.ray else f"local pool, {args.workers} workers"
    with tempfile.TemporaryDirectory(prefix="gpucap-bench-sweep-") as tmp:
        root = Path(tmp)
        story_tree(root)
        path = root / "story" / "bench-sweep.yaml"
        path.write_text(sweep_text(args.variants, args.seeds))
        t0 = time.perf_counter()
        sweep = load_sweep(str(path), load_catalog)
        load = time.perf_counter() - t0
        items = sweep.items(only_first=args.variants)  # an odd count: the grid's first
        engine = executor_for(
            args.workers if args.ray else min(args.workers, len(items)), ray=args.ray
        )
        cpu0, _ = _children()
        t0 = time.perf_counter()
        outcomes = {}
        with closing(engine.map(sweep.work(), items)) as running:
            for item, outcome in running:
                outcomes[item] = outcome
                if len(outcomes) % max(1, len(items) // 10) == 0:
                    rate = len(outcomes) / (time.perf_counter() - t0)
                    print(
                        f"  {len(outcomes):>6} of {len(items)} runs, {rate:.2f} runs/s", flush=True
                    )
        wall = time.perf_counter() - t0
        chosen = sweep.variants[: args.variants]
        results, measure = variant_results(sweep, outcomes, variants=chosen)
        cpu1, worker_rss = _children()
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    runs = len(outcomes)
    print(
        f"{os.cpu_count()} CPUs; {engine_name}; {len(chosen)} variants x {args.seeds} "
        f"seeds = {runs} runs of the workshop fleet's day"
    )
    print(f"load and validate the sweep: {load:.2f} s")
    print(
        f"runs: {wall:.1f} s wall, {runs / wall:.2f} runs/s, "
        f"{(cpu1 - cpu0) / runs:.2f} s CPU per run (workers)"
    )
    print(
        f"peak memory: this process {_mib(own_rss):.0f} MiB, the largest worker "
        f"{_mib(worker_rss):.0f} MiB"
    )
    front = [r.variant.name for r in results if r.pareto]
    print(f"front ({measure}): {len(front)} of {len(results)} variants")
    per_thousand = wall / runs * 1000
    print(f"at this rate 1,000 runs take {per_thousand / 60:.1f} min")


if __name__ == "__main__":
    main()
