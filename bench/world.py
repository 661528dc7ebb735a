"""Stochastic-world benchmark (issue 25): the workshop's fleet for 24 hours under the spot market
and an HPA on the diurnal trace, one run and many.

Run: `python bench/world.py [--runs 100] [--models advisor,measured] [--repeat 3]` (or `make
bench-world`). Writes the demo's filled story tree (`cli/demo.story_tree`) into a temporary
directory, with the demo's day (`act3-day.yaml`: `world.spot.model: measured`, an HPA on
`bundled:diurnal-24h`) and the same day under each other model. For each model:
- in-process, stage by stage (median of `--repeat`): load (`load_scenario`), one run (`World`
  built and run, summary included), and what the run did (events, pool reclaims, instances
  warned, HPA rescales);
- end to end, the installed command in a subprocess: `gpucap simulate DAY -o json` (one run)
  and `gpucap simulate DAY --runs N -o json` (default workers: the CPU count), with the wall
  time per run and the CPU seconds per run (the children's user+system time over N).
Targets (the issue's): one run under 0.5 s and `--runs 100` under 60 s (at most 1.5 s of CPU per
run) with `advisor`. Not a unit test: figures depend on the machine (record them in
docs/perf-log.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpucap.cli.demo import story_tree
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import World

GPUCAP = shutil.which("gpucap") or str(Path(sys.executable).with_name("gpucap"))


def _day(root: Path, model: str) -> Path:
    """The demo's day under `model` (the bundled file is `measured`)."""
    day = root / "story" / "act3-day.yaml"
    if model == "measured":
        return day
    out = root / "story" / f"day-{model}.yaml"
    out.write_text(day.read_text().replace("model: measured", f"model: {model}"))
    return out


def in_process(path: Path, repeat: int) -> dict[str, Any]:
    catalog = load_catalog("us-east-1")
    loads, runs = [], []
    result = None
    for i in range(repeat):
        t0 = time.perf_counter()
        scenario = load_scenario(str(path), catalog)
        t1 = time.perf_counter()
        result = World(dataclasses.replace(scenario, seed=scenario.seed + i), catalog).run()
        t2 = time.perf_counter()
        loads.append(t1 - t0)
        runs.append(t2 - t1)
    assert result is not None
    spot = result.summary.get("world", {}).get("spot", {})
    return {
        "load": statistics.median(loads),
        "run": statistics.median(runs),
        "events": len(result.events),
        "reclaims": spot.get("poolReclaims", 0),
        "warned": spot.get("instancesWarned", 0),
        "rescales": result.summary.get("serving", {}).get("hpaRescales", 0),
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def end_to_end(path: Path, runs: int) -> tuple[float, float, float]:
    """(one run's wall time, the set's wall time, the set's CPU seconds per run)."""
    t0 = time.perf_counter()
    subprocess.run([GPUCAP, "simulate", str(path), "-o", "json"], check=True, capture_output=True)
    one = time.perf_counter() - t0
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    subprocess.run(
        [GPUCAP, "simulate", str(path), "--runs", str(runs), "-o", "json"],
        check=True,
        capture_output=True,
    )
    many = time.perf_counter() - t0
    return one, many, (_children_cpu() - cpu0) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default="advisor,measured")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; --runs {args.runs}; in-process figures: median of {args.repeat}")
    header = (
        f"{'model':<9} {'load':>6} {'run':>6} {'events':>7} {'reclaims':>8} {'warned':>6} "
        f"{'rescales':>8} {'cli 1 run':>9} {'cli --runs':>10} {'wall/run':>8} {'cpu/run':>7}"
    )
    print(header)
    with tempfile.TemporaryDirectory(prefix="gpucap-bench-world-") as tmp:
        root = Path(tmp)
        story_tree(root)
        for model in args.models.split(","):
            path = _day(root, model)
            f = in_process(path, args.repeat)
            one, many, cpu = end_to_end(path, args.runs)
            print(
                f"{model:<9} {f['load']:>5.2f}s {f['run']:>5.2f}s {f['events']:>7} "
                f"{f['reclaims']:>8} {f['warned']:>6} {f['rescales']:>8} {one:>8.2f}s "
                f"{many:>9.1f}s {many / args.runs:>7.2f}s {cpu:>6.2f}s"
            )


if __name__ == "__main__":
    main()
