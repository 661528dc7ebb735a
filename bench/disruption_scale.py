"""Disruption scale benchmark (issue 25, "Performance", second bullet): the cost of Karpenter's
disruption pass as the fleet grows, on a NodePool with consolidation and expiration.

Run: `python bench/disruption_scale.py [--sizes 100,400,1000] [--hours 3] [--day] [--no-cli]
[--profile N [--profile-hours H]] [--expire-after D] [--keep DIR]`. For each size N it
generates, in a temporary directory (or `--keep DIR`), the workshop example's EC2NodeClass and
NodePool (`src/gpucap/data/examples/workshop`; the NodePool's limit raised to 2N GPUs,
`WhenEmptyOrUnderutilized` after 5m, expiring after 2h (`--expire-after`; `default` leaves
Karpenter's 720h), the default budget), its NVIDIA device plugin DaemonSet and its vLLM
Deployment (one GPU a pod) scaled to N replicas; every 30 minutes the Deployment is scaled down
or back up along a seeded saw (N, 0.6N, 0.8N, 0.5N, N...) so consolidation has empty nodes to
remove: a stress test, a fifth of the fleet replaced every half hour. `--shape diurnal` is a
day's demand instead: N replicas at 14:00 and N/2 at 02:00 along a cosine, adjusted every 30
minutes (issue 25's "1,000 GPU nodes x 24 h with consolidation" as a fleet lives it; with
`--expire-after default`, Karpenter's 720h, nothing expires within the day). Then, per size:
- `cli`: `gpucap simulate FILE -o json` end to end in a subprocess (the installed command), wall
  time (`--no-cli` leaves it out);
- in-process (one process, catalog warm): the run's time, and the disruption loop's own time
  (`DisruptionCadence._disrupt`, everything the pass does: candidates, budgets, simulations,
  the held-back words) with its number of runs; the per-pass cost is the loop's time over its
  runs. `--profile N` writes `disruption-N-Hh.prof` here (cProfile of one in-process run of H
  hours, `--profile-hours`, default `--hours`; read with `python -m pstats`) and prints its top
  30 by cumulative time. Times are CPU seconds (`time.process_time`) but the `run s` column.
`--day` adds the 24-hour run at the largest size (issue 25's target: 1,000 GPU nodes x 24 h
with consolidation under 10 s; `make bench-day` runs the diurnal day with `--target 10`, which
exits 1 when the last run is slower). Prints one table, then checks that the per-pass cost per
node at the largest size stays within 2x of the smallest (exit 1 if not). Not a unit test;
figures depend on the machine (record them in docs/perf-log.md).
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.cadence import DisruptionCadence
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import World

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "src/gpucap/data/examples/workshop"
GPUCAP = shutil.which("gpucap") or str(Path(sys.executable).with_name("gpucap"))
STEP = 1800  # seconds between scale events
SAW = (1.0, 0.6, 0.8, 0.5)  # shares of N the Deployment goes through, in turn
PEAK_HOUR = 14  # the diurnal shape's peak (its trough is 12 hours later)


def _share(shape: str, k: int, rng: random.Random) -> float:
    """The Deployment's share of N at the k-th scale event. `saw`: the stress saw (N, 0.6N,
    0.8N, 0.5N, ... every 30 minutes, +-5 %: a fifth of the fleet replaced each step); `diurnal`:
    a day's demand, N at 14:00 and N/2 at 02:00 along a cosine, +-2 % noise, adjusted every 30
    minutes as an autoscaler would."""
    if shape == "saw":
        return SAW[k % len(SAW)] * (1 + rng.uniform(-0.05, 0.05))
    hour = k * STEP / 3600
    wave = 0.75 + 0.25 * math.cos(2 * math.pi * (hour - PEAK_HOUR) / 24)
    return min(1.0, wave * (1 + rng.uniform(-0.02, 0.02)))


def _nodeclass() -> str:
    return (
        (WORKSHOP / "ec2nodeclass.yaml")
        .read_text()
        .replace("${KARPENTER_NODE_ROLE}", "KarpenterNodeRole-bench")
        .replace("${AMI_VERSION}", "v20260714")
        .replace("${CLUSTER_NAME}", "bench")
    )


def _nodepool(n: int, expire_after: str | None = "2h") -> str:
    doc = yaml.safe_load((WORKSHOP / "nodepool.yaml").read_text())
    spec = doc["spec"]
    spec["limits"] = {"nvidia.com/gpu": str(2 * n)}
    if expire_after is None:
        spec["template"]["spec"].pop("expireAfter", None)
    else:
        spec["template"]["spec"]["expireAfter"] = expire_after
    spec["disruption"] = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "5m",
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _deployment(replicas: int) -> str:
    doc = yaml.safe_load((WORKSHOP / "vllm.yaml").read_text())
    doc["spec"]["replicas"] = replicas
    return yaml.safe_dump(doc, sort_keys=False)


def generate(
    out: Path,
    n: int,
    *,
    hours: int = 3,
    seed: int = 25,
    expire_after: str | None = "2h",
    shape: str = "saw",
) -> Path:
    """Write the size-`n` scenario and its manifests under `out`; returns the scenario path.
    `expire_after` is the NodePool's `expireAfter` (None: Karpenter's default, 720h); `shape`
    the demand's (`_share`)."""
    rng = random.Random(seed)
    out = out / f"{n}-{hours}h-{shape}"
    out.mkdir(exist_ok=True)
    (out / "nodeclass.yaml").write_text(_nodeclass())
    (out / "nodepool.yaml").write_text(_nodepool(n, expire_after))
    # The saw starts at its peak; the day starts at midnight's demand.
    first = n if shape == "saw" else round(n * _share(shape, 0, random.Random(seed)))
    (out / "vllm.yaml").write_text(_deployment(first))
    shutil.copy(WORKSHOP / "nvidia-device-plugin.yaml", out / "device-plugin.yaml")
    events: list[dict[str, Any]] = []
    for k in range(1, hours * 3600 // STEP):
        share = _share(shape, k, rng)
        replicas = max(1, min(n, round(n * share)))
        target = {"kind": "Deployment", "namespace": "default", "name": "vllm"}
        events.append({"at": f"{k * STEP}s", "scale": {**target, "replicas": replicas}})
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": f"disruption-scale-{n}"},
        "spec": {
            "region": "us-east-1",
            "duration": f"{hours}h",
            "seed": seed,
            "manifests": ["nodeclass.yaml", "nodepool.yaml", "device-plugin.yaml", "vllm.yaml"],
            "events": events,
        },
    }
    path = out / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU (this process's) seconds of `fn()`, and its value."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def _cli(path: Path) -> float:
    """Wall time of `gpucap simulate FILE -o json` in a subprocess."""
    t, proc = _timed(
        lambda: subprocess.run(
            [GPUCAP, "simulate", str(path), "-o", "json"], capture_output=True, check=False
        )
    )
    if proc.returncode != 0:
        sys.exit(f"gpucap simulate failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return float(t)


def run_once(path: Path) -> dict[str, Any]:
    """One in-process load + run, with the disruption loop's time and runs counted."""
    scenario = load_scenario(str(path), load_catalog)
    world = World(scenario, load_catalog(scenario.region))
    cadence: DisruptionCadence = world.cadence
    loop = cadence.disruption_loop
    inner = loop._fn  # the bench times the loop's own function
    spent = [0.0, 0]

    def timed() -> float | None:
        start = time.process_time()
        try:
            return inner()
        finally:
            spent[0] += time.process_time() - start
            spent[1] += 1

    loop._fn = timed
    run_t, run_cpu, result = _cpu(world.run)
    launched = sum(e.type == "NodeClaimLaunched" for e in result.events)
    disrupted = sum(e.type == "DisruptionDecision" for e in result.events)
    return {
        "run": run_t,
        "cpu": run_cpu,
        "disruption": spent[0],
        "passes": spent[1],
        "launched": launched,
        "disrupted": disrupted,
        "events": len(result.events),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,400,1000")
    parser.add_argument("--hours", type=int, default=3)
    parser.add_argument("--day", action="store_true", help="also 24 h at the largest size")
    parser.add_argument(
        "--cli",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time `gpucap simulate` end to end (--no-cli: in-process only)",
    )
    parser.add_argument("--profile", type=int, help="profile the in-process run of this size")
    parser.add_argument(
        "--profile-hours",
        type=int,
        help="the profiled run's hours (default --hours; 24 profiles the --day run)",
    )
    parser.add_argument(
        "--expire-after",
        default="2h",
        help="the NodePool's expireAfter (default 2h; 'default' leaves Karpenter's 720h)",
    )
    parser.add_argument(
        "--shape",
        choices=("saw", "diurnal"),
        default="saw",
        help="the demand: the stress saw (default) or a diurnal day (N at 14:00, N/2 at 02:00)",
    )
    parser.add_argument(
        "--target",
        type=float,
        help="exit 1 when the last run takes longer (seconds: `gpucap simulate` end to end, "
        "or the in-process CPU time with --no-cli)",
    )
    parser.add_argument("--keep", type=Path, help="write the scenarios here and keep them")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = None
    if args.keep:
        out = args.keep
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="gpucap-disruptbench-")
        out = Path(tmp.name)
    load_catalog("us-east-1")  # warm the catalog cache outside the timings, as a CLI run has it
    runs = [(n, args.hours) for n in sizes]
    if args.day:
        runs.append((sizes[-1], 24))
    profile_hours = args.profile_hours or args.hours
    print("nodes  hours  cli s   run s  cpu s  disrupt s  passes  ms/pass  us/pass/node", end="")
    print("  launched  disrupted")
    per_node: list[float] = []
    last = 0.0
    for n, hours in runs:
        expire = None if args.expire_after == "default" else args.expire_after
        path = generate(out, n, hours=hours, expire_after=expire, shape=args.shape)
        if args.profile == n and hours == profile_hours:
            profile = cProfile.Profile()
            profile.enable()
            run_once(path)
            profile.disable()
            profile.dump_stats(f"disruption-{n}-{hours}h.prof")
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
        cli_s = _cli(path) if args.cli else None
        cli = f"{cli_s:6.2f}" if cli_s is not None else "     -"
        r = run_once(path)
        last = cli_s if cli_s is not None else r["cpu"]
        ms = 1000 * r["disruption"] / max(1, r["passes"])
        us_node = 1000 * ms / n
        if hours == args.hours:
            per_node.append(us_node)
        print(
            f"{n:5d}  {hours:5d}  {cli}  {r['run']:6.2f}  {r['cpu']:5.1f}  {r['disruption']:9.2f}  "
            f"{r['passes']:6d}  {ms:7.2f}  {us_node:12.1f}  {r['launched']:8d}  "
            f"{r['disrupted']:9d}",
            flush=True,
        )
    if tmp is not None:
        tmp.cleanup()
    if args.target is not None:
        what = "gpucap simulate" if args.cli else "the in-process run (CPU)"
        verdict = "within" if last <= args.target else "over"
        print(f"{what}: {last:.2f} s, {verdict} the {args.target:g} s target")
        if last > args.target:
            sys.exit(1)
    if len(per_node) > 1 and per_node[-1] > 2 * per_node[0]:
        print(f"per-pass cost per node grew {per_node[-1] / per_node[0]:.1f}x: not linear")
        sys.exit(1)


if __name__ == "__main__":
    main()
