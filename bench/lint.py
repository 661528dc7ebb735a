"""Lint benchmark: how long `gpucap lint` takes on many manifests (loading + every rule).

Run: `python bench/lint.py [--manifests 500]`. Builds N manifests (a mix of NodePools,
EC2NodeClasses, Deployments, Pods, DaemonSets, ConfigMaps and ClusterPolicies like the
workshop's) in a temporary directory and times load + lint, best of `--repeat`. Not a unit
test; record the figures in the issue note. Target: 500 manifests in under a second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import load_paths
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run

WORKSHOP = (
    Path(__file__).resolve().parent.parent / "src" / "gpucap" / "data" / "examples" / "workshop"
)
VALUES = {"AMI_VERSION": "v20260714", "CLUSTER_NAME": "bench", "KARPENTER_NODE_ROLE": "role"}


def write_inputs(directory: Path, n: int) -> int:
    """Copies of the workshop's five files with distinct names until n manifests exist."""
    texts = {
        p.name: substitute(p.read_text(), VALUES).text for p in sorted(WORKSHOP.glob("*.yaml"))
    }
    count = 0
    i = 0
    while count < n:
        for name, text in texts.items():
            renamed = text.replace("name: gpu\n", f"name: gpu-{i}\n").replace(
                "name: vllm\n", f"name: vllm-{i}\n"
            )
            (directory / f"{i:04d}-{name}").write_text(renamed)
            count += renamed.count("\nkind: ") + (1 if renamed.startswith("kind: ") else 0)
        i += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifests", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        count = write_inputs(Path(tmp), args.manifests)
        cold = warm = float("inf")
        findings = 0
        for _ in range(args.repeat):
            # Cold: what one `gpucap lint` run does, catalog loading included.
            start = time.perf_counter()
            catalog = load_catalog("us-east-1")
            loaded = load_paths([tmp])
            result = run(LintContext(loaded.manifests, catalog), LintConfig(), issues=loaded.issues)
            cold = min(cold, time.perf_counter() - start)
            # Warm: the catalog already resolved for these node classes (a long-lived process).
            start = time.perf_counter()
            loaded = load_paths([tmp])
            result = run(LintContext(loaded.manifests, catalog), LintConfig(), issues=loaded.issues)
            warm = min(warm, time.perf_counter() - start)
            findings = len(result.findings)
    print(f"{'manifests':>10} {'findings':>9} {'cold s':>8} {'warm s':>8} {'manifests/s':>12}")
    print(f"{count:10d} {findings:9d} {cold:8.3f} {warm:8.3f} {count / cold:12.0f}")


if __name__ == "__main__":
    main()
