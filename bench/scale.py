"""Scale benchmark: `gpucap` on many NodePools, files, NodeOverlays and DaemonSets (issue 9).

Run: `python bench/scale.py [--quick]`. Generates inputs from the workshop example in a temporary
directory and, for each, runs the installed command (`validate`, `plan`, `lint`) in a subprocess
(end to end, wall time), and a subprocess that times `plan`'s stages: read+parse+validate
(`load_paths`), catalog, pools (node classes resolved, NodeOverlays applied), solve and launch
(the provisioning loop), render. Prints one table, then checks that the cost per object at the
largest size stays within 2x of the middle size (exit 1 if not). Not a unit test; figures
depend on the machine (record them in the issue note).

Inputs: `pools-N` N NodePools (distinct names, one shared EC2NodeClass) with the workshop's pod
(`pools-overlay-N` the same plus one NodeOverlay changing every pool's g5 prices);
`files-N` a directory of N files, by turns a Deployment, a NodePool, an EC2NodeClass and a
two-replica Deployment; `overlays-N` N NodeOverlays on the workshop pool; `daemonsets-N` N
DaemonSets next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "src/gpucap/data/examples/workshop"
GPUCAP = shutil.which("gpucap") or str(Path(sys.executable).with_name("gpucap"))

_NODEPOOL = (WORKSHOP / "nodepool.yaml").read_text()
_NODECLASS = (
    (WORKSHOP / "ec2nodeclass.yaml")
    .read_text()
    .replace("${KARPENTER_NODE_ROLE}", "KarpenterNodeRole")
    .replace("${AMI_VERSION}", "v20250101")
    .replace("${CLUSTER_NAME}", "bench")
)
_PODS = (WORKSHOP / "vllm.yaml").read_text()


def _pool(name: str) -> str:
    return _NODEPOOL.replace("name: gpu\nspec:\n  template", f"name: {name}\nspec:\n  template")


def pools(n: int, out: Path) -> Path:
    path = out / f"pools-{n}.yaml"
    path.write_text("\n---\n".join([_NODECLASS, _PODS, *(_pool(f"gpu-{i}") for i in range(n))]))
    return path


def pools_overlay(n: int, out: Path) -> Path:
    """`pools(n)` plus one NodeOverlay that changes every pool's g5 prices."""
    spec = {
        "requirements": [
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
        ],
        "priceAdjustment": "-5%",
    }
    doc = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay"}
    overlay = yaml.safe_dump({**doc, "metadata": {"name": "g5-discount"}, "spec": spec})
    path = out / f"pools-overlay-{n}.yaml"
    path.write_text(pools(n, out).read_text() + "\n---\n" + overlay)
    return path


def files(n: int, out: Path) -> Path:
    d = out / f"files-{n}"
    d.mkdir()
    for i in range(n):
        kind = i % 4
        if kind == 0:
            text = _PODS.replace("name: vllm\n", f"name: vllm-{i}\n", 1)
        elif kind == 1:
            text = _pool(f"gpu-{i}")
        elif kind == 2:
            text = _NODECLASS.replace("name: gpu", f"name: gpu-{i}")
        else:
            text = _PODS.replace("name: vllm\n", f"name: vllm-{i}\n", 1)
            text = text.replace("replicas: 1", "replicas: 2")
        (d / f"f{i:05d}.yaml").write_text(text)
    return d


def overlays(n: int, out: Path) -> Path:
    docs = [_NODECLASS, _NODEPOOL, _PODS]
    for i in range(n):
        spec = {
            "weight": i + 1,
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
            ],
            "priceAdjustment": "-1%" if i % 2 else "+1%",
        }
        doc = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay"}
        docs.append(yaml.safe_dump({**doc, "metadata": {"name": f"ov-{i}"}, "spec": spec}))
    path = out / f"overlays-{n}.yaml"
    path.write_text("\n---\n".join(docs))
    return path


def daemonsets(n: int, out: Path) -> Path:
    docs = [_NODECLASS, _NODEPOOL, _PODS]
    for i in range(n):
        labels = {"app": f"ds-{i}"}
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1m"}}}
        template = {
            "metadata": {"labels": labels},
            "spec": {"tolerations": [{"operator": "Exists"}], "containers": [container]},
        }
        meta = {"name": f"ds-{i}", "namespace": "kube-system"}
        spec = {"selector": {"matchLabels": labels}, "template": template}
        docs.append(
            yaml.safe_dump(
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": spec}
            )
        )
    path = out / f"daemonsets-{n}.yaml"
    path.write_text("\n---\n".join(docs))
    return path


# The stages of `plan`, timed in a fresh interpreter (imports excluded).
_STAGES = """
import json, sys, time
from gpucap.apis.serde import load_paths
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.operator.plan import pools_for, provision
from gpucap.state.snapshot import snapshot
from gpucap.cli.render import format_plan
t = {}
s = time.perf_counter(); r = load_paths([sys.argv[1]]); t["load"] = time.perf_counter() - s
s = time.perf_counter(); cat = load_catalog("us-east-1"); t["catalog"] = time.perf_counter() - s
s = time.perf_counter(); notes = []; p = pools_for(r.objects, cat, notes)
t["pools"] = time.perf_counter() - s
s = time.perf_counter(); snap = snapshot(r.objects.pods, r.objects.nodes, r.objects.nodeclaims)
made = provision(p, state_nodes=snap.nodes, pending=snap.pending, daemonsets=r.objects.daemonsets)
t["solve+launch"] = time.perf_counter() - s
s = time.perf_counter(); format_plan(made, "table"); t["render"] = time.perf_counter() - s
print(json.dumps(t))
"""


def _wall(args: list[str], timeout: float) -> float:
    start = time.perf_counter()
    try:
        subprocess.run(args, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return float("inf")
    return time.perf_counter() - start


def _stages(path: Path, timeout: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _STAGES, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {}
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout else {}


SERIES: dict[str, tuple[Callable[[int, Path], Path], tuple[int, ...]]] = {
    "pools": (pools, (10, 100, 1000)),
    "pools+overlay": (pools_overlay, (10, 100, 1000)),
    "files": (files, (100, 1000, 2000)),
    "overlays": (overlays, (10, 100, 1000)),
    "daemonsets": (daemonsets, (10, 100, 1000)),
}
STAGES = ("load", "catalog", "pools", "solve+launch", "render")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--series", default=",".join(SERIES))
    args = ap.parse_args()
    header = ["input", "validate", "plan", "lint", *STAGES]
    print(" ".join(f"{h:>14}" for h in header))
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.series.split(","):
            make, sizes = SERIES[name]
            plans: dict[int, float] = {}
            for n in sizes:
                path = make(n, Path(tmp))
                row = [
                    _wall([GPUCAP, c, str(path)], args.timeout)
                    for c in ("validate", "plan", "lint")
                ]
                stages = _stages(path, args.timeout)
                plans[n] = row[1]
                cells = [f"{name}-{n}", *(f"{v:.2f}" for v in row)]
                cells += [f"{stages[s]:.2f}" if s in stages else "-" for s in STAGES]
                print(" ".join(f"{c:>14}" for c in cells), flush=True)
            mid, big = sizes[1], sizes[2]
            # Per object, the startup (the smallest size's time) left out.
            base = plans[sizes[0]]
            per_mid = (plans[mid] - base) / (mid - sizes[0])
            per_big = (plans[big] - base) / (big - sizes[0])
            # Below 5 ms an object, differences are startup noise on a shared machine.
            if per_big > 2 * max(per_mid, 0.005):
                failed.append(
                    f"{name}: {per_big * 1e3:.2f} ms per object at {big}, "
                    f"{per_mid * 1e3:.2f} at {mid}"
                )
    for line in failed:
        print(f"super-linear: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
