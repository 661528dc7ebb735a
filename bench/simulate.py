"""Simulator benchmark (issues 10 and 11): a 24-hour scenario with ~1,000 pods at peak and ~100
GPU nodes, scale events every 10 minutes. Issue 10's target: under 2 s of wall time on one core
(load + run) with provisioning only (`--disruption off`, the default: both NodePools have
`consolidateAfter: Never` and the AMI is pinned, so nothing is consolidated or drifts). Issue 11's:
under 3 s with consolidation and drift on (`--disruption on`: WhenEmptyOrUnderutilized after 5m,
an `@latest` alias and an AMI release at 1h, so the fleet drifts once the SSM cache expires).

Run: `python bench/simulate.py [--disruption off|on] [--repeat 3] [--hours 24] [--profile]
[--cli] [--keep DIR]` (or `make bench-sim`).
Generates the scenario deterministically in a temporary directory (or `--keep DIR`):
- a pinned AL2023 EC2NodeClass; the NVIDIA device plugin DaemonSet;
- NodePool `gpu`: g5/g6, 1 or 4 GPUs, spot and on-demand, tainted `nvidia.com/gpu`;
- NodePool `cpu`: c/m/r families, generation > 5, spot and on-demand;
- Deployments: three GPU ones (one GPU per pod) and four CPU ones, together 1,000 pods at the
  diurnal peak;
- every 10 minutes (143 ticks after the start: 1,001 scale events) each Deployment is scaled
  to its share of a diurnal curve with a seeded jitter (up and down); two spot capacity
  windows (g5.xlarge and g6.12xlarge spot gone for an hour) and one spot interruption.
Then times the Python entry points stage by stage (median of `--repeat` runs, one process):
load (`load_scenario`), run (`simulate`: the world and its summary), summary (`summarize` +
`format_summary`), timeline (`format_timeline`), and prints the event count, the provisioning
passes and the peak pods and nodes. `--cli` also times `gpucap simulate FILE -o json` end to end
in a subprocess when the installed command has `simulate`. `--profile` prints a cProfile of one
run (cumulative, top 40). Not a unit test: figures depend on the machine (record them in
docs/perf-log.md "Simulator performance").
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpucap.cli.simulate_render import format_summary, format_timeline
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.summary import summarize
from gpucap.sim.world import World

GPUCAP = shutil.which("gpucap") or str(Path(sys.executable).with_name("gpucap"))
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATE = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

# (name, peak replicas, cpu, memory, gpu, image, startup seconds); peaks sum to 1,000.
DEPLOYMENTS: tuple[tuple[str, int, str, str, int, str, int], ...] = (
    ("llm-small", 200, "3", "12Gi", 1, "vllm/vllm-openai:v0.11.0", 84),
    ("llm-large", 120, "7", "28Gi", 1, "vllm/vllm-openai:v0.11.0", 180),
    ("embed", 80, "2", "8Gi", 1, "nvcr.io/nvidia/tritonserver:24.08-py3", 30),
    ("web", 300, "500m", "512Mi", 0, "nginx:1.27", 0),
    ("api", 150, "1", "2Gi", 0, "python:3.12-slim", 5),
    ("worker", 100, "2", "4Gi", 0, "python:3.12-slim", 5),
    ("cache", 50, "1", "8Gi", 0, "redis:7.4", 0),
)
TICK = 600  # seconds between scale events
DAY = 24 * 3600


def _docs(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def _nodeclass(alias: str = "al2023@v20260714") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-bench",
            "amiSelectorTerms": [{"alias": alias}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {"volumeSize": "300Gi", "volumeType": "gp3", "throughput": 500},
                }
            ],
        },
    }


def _nodepool(name: str, requirements: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    template = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [
            {
                "key": "karpenter.sh/capacity-type",
                "operator": "In",
                "values": ["spot", "on-demand"],
            },
            *requirements,
        ],
    }
    template.update(spec.pop("template", {}))
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": template}, **spec},
    }


def _device_plugin() -> dict[str, Any]:
    match = {"name": "nvidia-device-plugin-ds"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": match},
            "template": {
                "metadata": {"labels": match},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "tolerations": [TOLERATE],
                    "nodeSelector": {"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"},
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                            "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                        }
                    ],
                },
            },
        },
    }


def _deployment(  # noqa: PLR0917 - one row of DEPLOYMENTS
    name: str, replicas: int, cpu: str, mem: str, gpu: int, image: str, startup: int
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": mem}}
    spec: dict[str, Any] = {"containers": [{"name": name, "image": image, "resources": resources}]}
    if gpu:
        resources["limits"] = {"nvidia.com/gpu": str(gpu), "memory": mem}
        spec["tolerations"] = [TOLERATE]
    meta: dict[str, Any] = {"labels": {"app": name}}
    if startup:
        meta["annotations"] = {"gpucap.dev/startup-seconds": str(startup)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": meta, "spec": spec},
        },
    }


def diurnal(t: float, peak: int, rng: random.Random) -> int:
    """Replicas at `t`: 25 % of peak at 04:00, the peak at 16:00, +-5 % seeded jitter."""
    share = 0.25 + 0.75 * (1 - math.cos(2 * math.pi * (t - 4 * 3600) / DAY)) / 2
    return max(1, min(peak, round(peak * share * (1 + rng.uniform(-0.05, 0.05)))))


def generate(out: Path, *, seed: int = 10, hours: int = 24, disruption: bool = False) -> Path:
    """Write the 24-hour scenario and its manifests under `out`; returns the scenario path."""
    rng = random.Random(seed)
    policy = (
        {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m"}
        if disruption
        else {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}
    )
    gpu_pool = _nodepool(
        "gpu",
        [
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5", "g6"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1", "4"]},
        ],
        template={"taints": [TAINT]},
        limits={"nvidia.com/gpu": "1000"},
        disruption=dict(policy),
    )
    cpu_pool = _nodepool(
        "cpu",
        [
            {
                "key": "karpenter.k8s.aws/instance-category",
                "operator": "In",
                "values": ["c", "m", "r"],
            },
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
        ],
        limits={"cpu": "4000"},
        disruption=dict(policy),
    )
    alias = "al2023@latest" if disruption else "al2023@v20260714"
    (out / "nodeclass.yaml").write_text(_docs(_nodeclass(alias)))
    (out / "nodepools.yaml").write_text(_docs(gpu_pool, cpu_pool))
    (out / "device-plugin.yaml").write_text(_docs(_device_plugin()))
    start = [diurnal(0, d[1], rng) for d in DEPLOYMENTS]
    (out / "workloads.yaml").write_text(
        _docs(*(_deployment(d[0], n, *d[2:]) for d, n in zip(DEPLOYMENTS, start, strict=True)))
    )
    events: list[dict[str, Any]] = []
    for k in range(1, hours * 3600 // TICK):
        t = k * TICK
        for d in DEPLOYMENTS:
            scale = {"kind": "Deployment", "namespace": "default", "name": d[0]}
            events.append({"at": f"{t}s", "scale": {**scale, "replicas": diurnal(t, d[1], rng)}})
    for at, it in (("6h", "g5.xlarge"), ("15h", "g6.12xlarge")):
        window = {"instanceType": it, "capacityType": "spot", "available": False, "for": "1h"}
        if _seconds(at) < hours * 3600:
            events.append({"at": at, "capacity": window})
    if hours > 12:
        events.append({"at": "12h5m", "interrupt": {"nodeClaim": "gpu-3"}})
    if disruption:
        release = {"kubernetesVersion": "1.36", "version": "v20261001"}
        events.append({"at": "1h", "amiRelease": release})
    events.sort(key=lambda e: _seconds(e["at"]))
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "bench-24h"},
        "spec": {
            "region": "us-east-1",
            "duration": f"{hours}h",
            "seed": seed,
            "manifests": [
                "nodeclass.yaml",
                "nodepools.yaml",
                "device-plugin.yaml",
                "workloads.yaml",
            ],
            "events": events,
        },
    }
    path = out / "scenario.yaml"
    path.write_text(_docs(scenario))
    return path


def _seconds(at: str) -> float:
    if at.endswith("s") and at[:-1].isdigit():
        return float(at[:-1])
    h, _, rest = at.partition("h")
    return int(h) * 3600 + (int(rest.rstrip("m")) * 60 if rest else 0)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def run_once(path: Path) -> dict[str, Any]:
    """One load + run + summary + timeline, with the stage times and what the run did."""
    load_t, scenario = _timed(lambda: load_scenario(str(path), load_catalog))
    catalog = load_catalog(scenario.region)
    world = World(scenario, catalog)
    passes = _count_passes(world)
    run_t, result = _timed(world.run)
    summary_t, _ = _timed(
        lambda: format_summary(summarize(result.events, end=result.end), start=result.start)
    )
    timeline_t, lines = _timed(lambda: format_timeline(result.events, start=result.start))
    types: dict[str, int] = {}
    for e in result.events:
        types[e.type] = types.get(e.type, 0) + 1
    return {
        "load": load_t,
        "run": run_t,
        "summary": summary_t,
        "timeline": timeline_t,
        "events": len(result.events),
        "types": types,
        "actions": len(scenario.actions),
        "passes": passes(),
        "lines": len(lines),
        "cost": result.summary.get("costUSD"),
        "peaks": _peaks(result.events),
    }


def _count_passes(world: World) -> Callable[[], tuple[int, int]]:
    """Wrap the provisioner's `schedule` to count the solves (and the ones that had pods)."""
    counts = [0, 0]
    schedule = world.provisioner.schedule

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[0] += 1
        counts[1] += len(kwargs.get("pending", ()))
        return schedule(*args, **kwargs)

    world.provisioner.schedule = counted  # type: ignore[method-assign]
    return lambda: (counts[0], counts[1])


def _peaks(events: list[Event]) -> tuple[int, int, int]:
    """Peak pods, peak GPU nodes and peak nodes over the run (from the event log)."""
    pods = gpu = nodes = peak_pods = peak_gpu = peak_nodes = 0
    pools: dict[str, str] = {}
    for e in events:
        f = e.fields
        if e.type == "PodCreated":
            pods += 1
        elif e.type == "PodDeleted":
            pods -= 1
        elif e.type == "NodeClaimLaunched":
            pools[f["nodeClaim"]] = f["nodePool"]
            nodes += 1
            gpu += f["nodePool"] == "gpu"
        elif e.type == "NodeTerminated" and f["nodeClaim"] in pools:
            nodes -= 1
            gpu -= pools.pop(f["nodeClaim"]) == "gpu"
        peak_pods, peak_gpu, peak_nodes = (
            max(peak_pods, pods),
            max(peak_gpu, gpu),
            max(peak_nodes, nodes),
        )
    return peak_pods, peak_gpu, peak_nodes


def _cli(path: Path) -> float | None:
    """Wall time of `gpucap simulate FILE -o json` in a subprocess; None without the command."""
    probe = subprocess.run([GPUCAP, "simulate", "--help"], capture_output=True, check=False)
    if probe.returncode != 0:
        return None
    t, proc = _timed(
        lambda: subprocess.run(
            [GPUCAP, "simulate", str(path), "-o", "json"], capture_output=True, check=False
        )
    )
    if proc.returncode != 0:
        sys.exit(f"gpucap simulate failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return float(t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--cli", action="store_true")
    parser.add_argument("--keep", type=Path, help="write the scenario here and keep it")
    parser.add_argument("--hours", type=int, default=24, help="a shorter day, for profiling")
    parser.add_argument(
        "--disruption",
        choices=("off", "on"),
        default="off",
        help="off: provisioning only (issue 10, 2 s); on: consolidation and drift (issue 11, 3 s)",
    )
    args = parser.parse_args()
    target = 3.0 if args.disruption == "on" else 2.0
    tmp = None
    if args.keep:
        out = args.keep
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="gpucap-simbench-")
        out = Path(tmp.name)
    path = generate(out, hours=args.hours, disruption=args.disruption == "on")
    load_catalog("us-east-1")  # warm the catalog cache outside the timings, as a CLI run has it
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        run_once(path)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    runs = [run_once(path) for _ in range(args.repeat)]
    stages = ("load", "run", "summary", "timeline")
    med = {s: statistics.median(r[s] for r in runs) for s in stages}
    last = runs[-1]
    peak_pods, peak_gpu, peak_nodes = last["peaks"]
    passes, solved = last["passes"]
    print(f"scenario: {path} ({last['actions']} actions; peak {peak_pods} pods,")
    print(f"          {peak_gpu} GPU nodes, {peak_nodes} nodes; cost ${last['cost']})")
    print(f"events: {last['events']}  timeline lines: {last['lines']}")
    print(f"provisioning passes: {passes} (pods solved in all: {solved})")
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(last["types"].items())))
    print(f"median of {args.repeat} (s): " + "  ".join(f"{s} {med[s]:.3f}" for s in stages))
    total = med["load"] + med["run"]
    verdict = "under" if total < target else "OVER"
    print(
        f"load + run: {total:.3f} s ({verdict} the {target:g} s target, "
        f"disruption {args.disruption})"
    )
    if passes:
        print(f"per pass (run / passes): {1000 * med['run'] / passes:.1f} ms")
    if args.cli:
        cli = _cli(path)
        print("cli: no `gpucap simulate` yet" if cli is None else f"cli: {cli:.3f} s")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
