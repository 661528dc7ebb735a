"""End-to-end benchmark of `gpucap plan` (issue 12): Karpenter's scheduling benchmark workload
written as files, planned by the installed command, then the same run split into stages.

The workload is `scheduling_benchmark_test.go`'s (kubernetes-sigs/karpenter,
pkg/controllers/provisioning/scheduling/): `makeDiversePods` (fifths of generic, zone topology
spread, hostname topology spread, zone self-affinity and hostname anti-affinity pods; CPU
requests 100m-1500m, memory 100Mi-4Gi, label values a-g; the rest generic) and
`fake.InstanceTypes(400)` (type i: i vCPU, 2i GiB, 10i pods, price 0.1 per vCPU + 0.1 per GB),
the same as `bench/run.py` measures in-process, here as what a user hands `gpucap plan`:

- `pods-N.json`: one `kind: List` holding an EC2NodeClass, a NodePool and the N pods (what
  `kubectl get -o json` writes), and `pods-N.yaml`: the same objects as multi-document YAML;
- `catalog.json`: the 400 fake instance types as a `--catalog` file (a catalog entry gets its
  allocatable from Karpenter's AWS formulas, not the fake provider's flat 100m / 10Mi reserve,
  and is offered in every zone for both capacity types).

For each size it runs `gpucap plan FILE --catalog catalog.json -o json` in a subprocess (wall
time and the child's CPU time and peak RSS from `resource.getrusage(RUSAGE_CHILDREN)`), then
the same plan in-process stage by stage (read, parse, validate, expand workloads, build pools,
solve, launch choice, render output), printing each stage's CPU time per pod, and checks that
the per-pod cost of every stage stays within 1.5x between the sizes (exit 1 if not). It also
times `gpucap --version` and `gpucap plan` on the workshop example.

Run: `python bench/plan.py [--sizes 1000,10000,50000] [--formats json,yaml] [--repeat 1]`
(`make bench` runs it). Not a unit test: figures depend on the machine (its core count is
printed); a shared machine inflates wall time, so CPU time is shown beside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

WORKSHOP = ROOT / "src" / "gpucap" / "data" / "examples" / "workshop"
GIB = 2**30
LABELS = "abcdefg"
CPUS = ["100m", "250m", "500m", "1000m", "1500m"]
MEMS = ["100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"]
REGION = "us-east-1"
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
# Targets of issue 12 (seconds, end to end; memory in MiB).
TARGETS = {1000: 0.9, 10000: 4.0, 50000: 25.0}
MEMORY_TARGET_MIB = 1024
VERSION_TARGET = 0.15
WORKSHOP_TARGET = 0.6
LINEARITY = 1.5
STAGES = (
    "read",
    "parse",
    "validate",
    "expand",
    "pools",
    "solve",
    "launch",
    "render",
)


# ---- the workload as files --------------------------------------------------------------------
def catalog_entries(n: int) -> list[dict[str, Any]]:
    """`fake.InstanceTypes(n)` as `--catalog` entries (see the module docstring)."""
    out = []
    for i in range(1, n + 1):
        memory = 2 * i * GIB
        out.append(
            {
                "name": f"fake-it-{i}",
                "family": "fake-it",
                "size": str(i),
                "architecture": "amd64",
                "vcpus": i,
                "memory_mib": memory // 2**20,
                "gpu_count": 0,
                "max_pods_eni": 10 * i,
                "on_demand_price_usd_per_hour": {REGION: round(0.1 * i + 0.1 * memory / 1e9, 6)},
                "spot_price_usd_per_hour": {REGION: round(0.1 * i + 0.1 * memory / 1e9, 6)},
                "offerings": {REGION: ZONES},
            }
        )
    return out


def _pod(i: int, rng: random.Random, labels: dict[str, str] | None, **spec: Any) -> dict[str, Any]:
    labels = labels if labels is not None else {"my-label": rng.choice(LABELS)}
    requests = {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMS)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i}",
            "namespace": "default",
            "uid": f"uid-{i:06d}",
            "labels": labels,
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec},
    }


def generic_pod(i: int, rng: random.Random) -> dict[str, Any]:
    """A generic pod of `makeDiversePods` (a random `my-label`, cpu and memory requests)."""
    return _pod(i, rng, None)


def diverse_pods(n: int, seed: int = 42) -> list[dict[str, Any]]:
    """`makeDiversePods(n)` as Pod manifests, drawn in the same order as `bench/run.py`'s."""
    rng = random.Random(seed)

    def spread(key: str) -> Callable[[int], dict[str, Any]]:
        def make(i: int) -> dict[str, Any]:
            value = rng.choice(LABELS)
            constraint = {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"my-label": value}},
            }
            return _pod(i, rng, {"my-label": value}, topologySpreadConstraints=[constraint])

        return make

    def affinity(i: int) -> dict[str, Any]:
        value = rng.choice(LABELS)
        term = {
            "topologyKey": "topology.kubernetes.io/zone",
            "labelSelector": {"matchLabels": {"my-affininity": value}},
        }
        return _pod(
            i,
            rng,
            {"my-affininity": value},
            affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        )

    def anti(i: int) -> dict[str, Any]:
        term = {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": "nginx"}},
        }
        return _pod(
            i,
            rng,
            {"app": "nginx"},
            affinity={
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            },
        )

    makers: list[Callable[[int], dict[str, Any]]] = [
        lambda i: _pod(i, rng, None),
        spread("topology.kubernetes.io/zone"),
        spread("kubernetes.io/hostname"),
        affinity,
        anti,
    ]
    pods: list[dict[str, Any]] = []
    for make in makers:
        for _ in range(n // 5):
            pods.append(make(len(pods)))
    while len(pods) < n:
        pods.append(_pod(len(pods), rng, None))
    return pods


def pool_objects() -> list[dict[str, Any]]:
    """One EC2NodeClass and one NodePool over it (no requirements, limits far away)."""
    nodeclass = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-bench",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        },
    }
    nodepool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [],
                }
            },
            "limits": {"cpu": "10000000", "memory": "10000000Gi"},
        },
    }
    return [nodeclass, nodepool]


def workload_files(directory: Path, sizes: list[int], formats: list[str]) -> dict[str, Path]:
    """{"catalog"|"json-N"|"yaml-N": path} of the files `write_workload` writes."""
    files = {"catalog": directory / "catalog.json"}
    for n in sizes:
        for fmt in formats:
            files[f"{fmt}-{n}"] = directory / f"pods-{n}.{fmt}"
    return files


def write_workload(directory: Path, sizes: list[int], formats: list[str]) -> None:
    """The catalog and, per size and format, the manifest file (`workload_files` names them)."""
    files = workload_files(directory, sizes, formats)
    files["catalog"].write_text(json.dumps(catalog_entries(400), indent=1))
    for n in sizes:
        objects = [*pool_objects(), *diverse_pods(n)]
        if "json" in formats:
            # `kubectl get -o json`'s layout: a List, four-space indentation.
            doc = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}
            files[f"json-{n}"].write_text(json.dumps(doc, indent=4) + "\n")
        if "yaml" in formats:
            import yaml  # noqa: PLC0415 - only the bench's writer needs it

            # libyaml's emitter when installed: PyYAML's own takes minutes for 50,000 pods.
            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
            with files[f"yaml-{n}"].open("w") as f:
                yaml.dump_all(objects, f, Dumper=dumper, sort_keys=False, width=120)


# ---- end to end ------------------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    cpu: float
    peak_mib: float
    rc: int
    out_bytes: int


def gpucap_command() -> list[str]:
    """The installed `gpucap` beside this Python (the venv's), else on PATH."""
    beside = Path(sys.executable).parent / "gpucap"
    found = str(beside) if beside.exists() else shutil.which("gpucap")
    if found is None:
        sys.exit("bench/plan.py: no `gpucap` command installed (pip install -e .)")
    return [found]


def run_command(args: list[str]) -> Run:
    """Run a child to the end: wall time, its CPU time (user + system) and peak RSS, from
    `os.wait4` (this child's own rusage, not the largest of all children so far). Its output
    goes to a temporary file: a 50,000-pod plan is more than a pipe holds."""
    env = dict(os.environ)
    # An installed command runs from compiled bytecode; a PYTHONDONTWRITEBYTECODE left in the
    # environment would recompile every module of every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errs:
        start = time.perf_counter()
        child = subprocess.Popen(args, stdout=out, stderr=errs, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        size = out.tell()
        if child.returncode != 0:
            errs.seek(0)
            sys.stderr.write(errs.read().decode(errors="replace")[-2000:])
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss / 1024, child.returncode, size)


def best(args: list[str], repeat: int) -> Run:
    runs = [run_command(args) for _ in range(repeat)]
    return min(runs, key=lambda r: r.cpu)


# ---- stages, in-process ----------------------------------------------------------------------
@dataclass
class Stages:
    """CPU seconds per stage of one in-process plan."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    nodes: int = 0

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.process_time()
        try:
            yield
        finally:
            self.seconds[name] += time.process_time() - start


class _TimedPreview:
    """The loop's launch preview, with the time its launch choice takes set aside."""

    def __init__(self, inner: Any, stages: Stages) -> None:
        self.inner = inner
        self.stages = stages

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        with self.stages.stage("launch"):
            return self.inner.launch(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def stage_times(path: Path, catalog_file: Path) -> Stages:
    """One `gpucap plan PATH --catalog CATALOG -o json`, in-process, timed per stage."""
    from gpucap.apis import serde  # noqa: PLC0415 - imported after sys.path is set
    from gpucap.apis.reading import read_path  # noqa: PLC0415
    from gpucap.cli.catalogs import catalog_from_options  # noqa: PLC0415
    from gpucap.cli.render import format_plan  # noqa: PLC0415
    from gpucap.cloudprovider.aws.instance.launch import LaunchPreview  # noqa: PLC0415
    from gpucap.controllers.provisioning.loop import run_passes  # noqa: PLC0415
    from gpucap.operator.plan import pools_for  # noqa: PLC0415
    from gpucap.runtime.collector import collector_paused  # noqa: PLC0415
    from gpucap.scheduling.options import SchedulingOptions  # noqa: PLC0415
    from gpucap.state.snapshot import snapshot  # noqa: PLC0415

    st = Stages()
    gc.collect()
    with st.stage("read"):
        text = read_path(str(path))
        catalog = catalog_from_options(REGION, None, str(catalog_file), None)
    # As `serde.load_text` runs them: without the cyclic collector (see `collector_paused`).
    with collector_paused():
        with st.stage("parse"):
            docs = serde.parse_text(text, str(path))
        if isinstance(docs, str):
            sys.exit(f"bench/plan.py: {docs}")
        with st.stage("validate"):
            result = serde.load_documents(docs, str(path), text=text)
    if not result.ok:
        sys.exit(f"bench/plan.py: {result.errors[0]}")
    with st.stage("validate"):
        manifests = result.objects
    # As `gpucap plan` does: the loaded objects out of the collector's sight from here on.
    del text, docs
    gc.freeze()
    with st.stage("expand"):
        pods = manifests.pods
    with st.stage("pools"):
        notes = list(manifests.notes)
        opts = SchedulingOptions()
        pools = pools_for(manifests, catalog, notes, options=opts)
        snap = snapshot(pods, manifests.nodes, manifests.nodeclaims)
    with st.stage("solve"):
        preview = _TimedPreview(LaunchPreview(opts.min_values_policy), st)
        made = run_passes(
            pools,
            preview=preview,
            state_nodes=snap.nodes,
            pending=snap.pending,
            daemonsets=manifests.daemonsets,
            options=opts,
        )
        made.notes[:0] = notes
    st.seconds["solve"] -= st.seconds["launch"]
    with st.stage("render"):
        format_plan(made, "json")
    st.nodes = len(made.node_claims)
    gc.unfreeze()  # the next size starts as this one did
    return st


# ---- report ----------------------------------------------------------------------------------
def _mark(ok: bool) -> str:
    return "ok" if ok else "OVER"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="pod counts, comma-separated")
    parser.add_argument("--formats", default="json,yaml", help="json, yaml or both")
    parser.add_argument("--repeat", type=int, default=1, help="runs per end-to-end figure (best)")
    parser.add_argument("--no-stages", action="store_true", help="skip the in-process stages")
    parser.add_argument("--keep", metavar="DIR", help="write the files to DIR and keep them")
    parser.add_argument("--write-only", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    formats = [f for f in args.formats.split(",") if f]
    if args.write_only:
        write_workload(Path(args.write_only), sizes, formats)
        return 0
    print(f"cores: {os.cpu_count()}  python: {sys.version.split()[0]}", flush=True)
    tmp = None
    if args.keep:
        directory = Path(args.keep)
        directory.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="gpucap-bench-")
        directory = Path(tmp.name)
    failed = False
    try:
        # Written by a child: a process that built 50,000 pods stays large, and a child forked
        # from it would count that size in its own peak RSS before it execs.
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--write-only",
                str(directory),
                "--sizes",
                args.sizes,
                "--formats",
                args.formats,
            ],
            check=True,
        )
        files = workload_files(directory, sizes, formats)
        gpucap = gpucap_command()
        version = best([*gpucap, "--version"], max(3, args.repeat))
        workshop = best([*gpucap, "plan", str(WORKSHOP), "-o", "json"], max(3, args.repeat))
        print(
            f"gpucap --version          wall {version.wall:6.3f} s  cpu {version.cpu:6.3f} s"
            f"  (target < {VERSION_TARGET} s: {_mark(version.cpu < VERSION_TARGET)})"
        )
        print(
            f"gpucap plan workshop      wall {workshop.wall:6.3f} s  cpu {workshop.cpu:6.3f} s"
            f"  (target < {WORKSHOP_TARGET} s: {_mark(workshop.cpu < WORKSHOP_TARGET)})",
            flush=True,
        )
        print()
        print(
            f"{'input':>12} {'pods':>7} {'MiB in':>7} {'wall s':>8} {'cpu s':>8} "
            f"{'peak MiB':>9} {'target':>8}"
        )
        for fmt in formats:
            for n in sizes:
                path = files[f"{fmt}-{n}"]
                cmd = [*gpucap, "plan", str(path), "--catalog", str(files["catalog"]), "-o", "json"]
                run = best(cmd, args.repeat)
                target = TARGETS.get(n)
                verdict = "" if target is None else f"{target:.1f} {_mark(run.cpu < target)}"
                if run.rc != 0:
                    verdict, failed = f"exit {run.rc}", True
                print(
                    f"{fmt:>12} {n:7d} {path.stat().st_size / 2**20:7.1f} {run.wall:8.2f} "
                    f"{run.cpu:8.2f} {run.peak_mib:9.0f} {verdict:>8}",
                    flush=True,
                )
        print(f"(peak memory target at 50,000 pods: < {MEMORY_TARGET_MIB} MiB)")
        if not args.no_stages:
            failed |= report_stages(files, sizes, formats)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 1 if failed else 0


def report_stages(files: dict[str, Path], sizes: list[int], formats: list[str]) -> bool:
    """Print each stage's CPU microseconds per pod per size; True if one grows past 1.5x."""
    failed = False
    for fmt in formats:
        print()
        print(f"stages ({fmt}), CPU microseconds per pod:")
        print(
            f"{'pods':>7} " + " ".join(f"{s:>9}" for s in STAGES) + f" {'total s':>9} {'nodes':>6}"
        )
        per_pod: dict[int, dict[str, float]] = {}
        for n in sizes:
            st = stage_times(files[f"{fmt}-{n}"], files["catalog"])
            per_pod[n] = {s: 1e6 * t / n for s, t in st.seconds.items()}
            print(
                f"{n:7d} "
                + " ".join(f"{per_pod[n][s]:9.1f}" for s in STAGES)
                + f" {sum(st.seconds.values()):9.2f} {st.nodes:6d}",
                flush=True,
            )
        if len(sizes) < 2:
            continue
        for s in STAGES:
            costs = [per_pod[n][s] for n in sizes]
            # Stages too small to time (under 2 us a pod at every size) are not judged. A cost
            # per pod that falls with the size is a fixed cost spread thinner, not a problem:
            # what fails is a larger input costing more per pod than a smaller one.
            if max(costs) < 2.0:
                continue
            ratio = max(
                costs[j] / max(costs[i], 1e-9)
                for i in range(len(costs))
                for j in range(i + 1, len(costs))
            )
            if ratio > LINEARITY:
                failed = True
                print(
                    f"NOT LINEAR ({fmt}): {s} costs "
                    + ", ".join(f"{c:.1f}" for c in costs)
                    + f" us/pod at {', '.join(map(str, sizes))} pods ({ratio:.2f}x > {LINEARITY}x)"
                )
    return failed


if __name__ == "__main__":
    sys.exit(main())
