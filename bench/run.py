"""Scheduling benchmark: Karpenter's own (`scheduling_benchmark_test.go`, see
`../shared/design/benchmarks.md` §1.1) reproduced on gpucap's scheduler, plus a GPU mix on the
real catalog. Prints a table: pods, nodes, CPU seconds per solve (`time.process_time`: the
machine is often shared, and CPU time is what a busy machine inflates least), pods/s, peak
memory.

Run: `python bench/run.py [--sizes 100,1000,5000,10000] [--repeat 1] [--no-pod-classes]` (or
`make bench`); `--no-pod-classes` tries every pod on every target, as Karpenter does (the plans
are the same; `tests/scheduling/test_podclasses.py`). Not a unit test: figures depend on the
machine; record them in the issue note.

Karpenter's Go scheduler: 1,000 diverse pods in 0.89 s, 10,000 in 12.1 s (benchmarks.md §0).
Targets (issue 12): 1,000 diverse pods <= 0.09 s, 10,000 <= 1.2 s, GPU mix 5,000 < 1 s.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import plan as plan_workload  # bench/plan.py: the diverse workload as manifests

from gpucap.apis.core import Pod
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.scheduler import PoolInput, Scheduler

GIB = 2**30


def fake_instance_types(n: int) -> list[InstanceType]:
    """Karpenter's `fake.InstanceTypes(n)`: type i has i vCPU, 2i GiB, 10i pods; spot in zones
    1-2, on-demand in 1-3; price 0.1 per vCPU + 0.1 per GB; kube-reserved 100m / 10Mi."""
    out = []
    for i in range(1, n + 1):
        name = f"fake-it-{i}"
        memory = 2 * i * GIB
        price = 0.1 * i + 0.1 * memory / 1e9
        offerings = tuple(
            Offering(z, ct, price, True)
            for ct, zones in (("spot", (1, 2)), ("on-demand", (1, 2, 3)))
            for z in (f"test-zone-{k}" for k in zones)
        )
        reqs = Requirements.of(
            Requirement.new("node.kubernetes.io/instance-type", "In", [name]),
            Requirement.new("kubernetes.io/arch", "In", ["amd64"]),
            Requirement.new("kubernetes.io/os", "In", ["linux", "windows", "darwin"]),
            Requirement.new(
                "topology.kubernetes.io/zone", "In", ["test-zone-1", "test-zone-2", "test-zone-3"]
            ),
            Requirement.new("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]),
        )
        capacity = {"cpu": i * 1000, "memory": memory, "pods": 10 * i}
        allocatable = {"cpu": i * 1000 - 100, "memory": memory - 10 * 2**20, "pods": 10 * i}
        out.append(InstanceType(name, reqs, capacity, allocatable, offerings))
    return out


def nodepool(
    name: str = "default", requirements: list[dict[str, object]] | None = None
) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "d",
                        },
                        "requirements": requirements or [],
                    }
                },
                "limits": {"cpu": "10000000", "memory": "10000000Gi"},
            },
        }
    )


def diverse_pods(n: int, seed: int = 42) -> list[Pod]:
    """Karpenter's `makeDiversePods`: n/5 each of generic, zone spread, hostname spread, zone
    self-affinity and hostname anti-affinity; the remainder generic. The manifests are
    `bench/plan.py`'s (one generator: the end-to-end bench plans the same pods from files)."""
    return [Pod.model_validate(d) for d in plan_workload.diverse_pods(n, seed)]


def gpu_mix(n: int, seed: int = 7) -> list[Pod]:
    """GPU inference pods (1 GPU, 3-7 CPU) and CPU sidecars on the real catalog."""
    rng = random.Random(seed)
    tol = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pods = []
    for i in range(n):
        if i % 3:
            pods.append(
                Pod.model_validate(
                    {
                        "metadata": {"name": f"gpu-{i}", "uid": f"uid-{i:06d}"},
                        "spec": {
                            "tolerations": tol,
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {
                                        "requests": {
                                            "cpu": str(rng.choice([3, 5, 7])),
                                            "memory": "12Gi",
                                        },
                                        "limits": {"nvidia.com/gpu": "1"},
                                    },
                                }
                            ],
                        },
                    }
                )
            )
        else:
            pods.append(Pod.model_validate(plan_workload.generic_pod(i, rng)))
    return pods


def measure(
    label: str, pools: list[PoolInput], pods: list[Pod], repeat: int, *, classes: bool = True
) -> tuple[str, int, int, int, float, float, float]:
    """Best CPU time of `repeat` solves (untraced), then one traced solve for peak memory."""
    best = float("inf")
    nodes = errors = 0
    for _ in range(repeat):
        gc.collect()
        scheduler = Scheduler(pools, pending_pods=pods, pod_classes=classes)
        start = time.process_time()
        results = scheduler.solve(pods)
        best = min(best, time.process_time() - start)
        nodes, errors = len(results.new_node_claims), len(results.pod_errors)
    gc.collect()
    tracemalloc.start()
    Scheduler(pools, pending_pods=pods, pod_classes=classes).solve(pods)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return label, len(pods), nodes, errors, best, len(pods) / best, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000,10000")
    parser.add_argument("--gpu-sizes", default="100,1000,5000")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-pod-classes", dest="classes", action="store_false")
    args = parser.parse_args()
    rows = []
    fake = [PoolInput(nodepool(), fake_instance_types(400))]
    for n in (int(s) for s in args.sizes.split(",") if s):
        rows.append(
            measure(
                "diverse / 400 fake types", fake, diverse_pods(n), args.repeat, classes=args.classes
            )
        )
        print(_fmt(rows[-1]), flush=True)
    catalog = load_catalog("us-east-1")
    real = catalog.instance_types(None)
    gpu_pool = nodepool(
        "gpu",
        [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}],
    )
    pools = [PoolInput(gpu_pool, real), PoolInput(nodepool("default"), real)]
    for n in (int(s) for s in args.gpu_sizes.split(",") if s):
        rows.append(
            measure("GPU mix / real catalog", pools, gpu_mix(n), args.repeat, classes=args.classes)
        )
        print(_fmt(rows[-1]), flush=True)
    print()
    head = ("pods", "nodes", "errors", "CPU s", "pods/s", "peak MiB")
    widths = (6, 6, 6, 9, 9, 9)
    print(f"{'benchmark':28} " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print(_fmt(r))


def _fmt(r: tuple[str, int, int, int, float, float, float]) -> str:
    return f"{r[0]:28} {r[1]:6d} {r[2]:6d} {r[3]:6d} {r[4]:9.3f} {r[5]:9.0f} {r[6]:9.1f}"


if __name__ == "__main__":
    main()
