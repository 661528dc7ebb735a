"""NodeOverlay benchmark: the cost of applying overlays to every NodePool's instance types.

Run: `python bench/overlays.py [--pools 5] [--repeat 3]`. Builds time-slicing-style overlays
(per GPU count x family: capacity nvidia.com/gpu and a price adjustment) and times Karpenter's
evaluation (order, matching, conflicts) and the application to the bundled catalog's types for
each pool, best of `--repeat`. Not a unit test; record the figures in the issue note.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings
from gpucap.scheduling.nodeoverlay import PoolTypes, apply_overlays, evaluate_overlays

FAMILIES = ("g5", "g6", "g6e", "p5", "p4d")
GPU_COUNTS = (1, 2, 4, 8)


def overlay_docs(n: int) -> list[dict[str, Any]]:
    docs = []
    for i, (count, family) in enumerate((c, f) for c in GPU_COUNTS for f in FAMILIES):
        if i == n:
            break
        docs.append(
            {
                "apiVersion": "karpenter.sh/v1alpha1",
                "kind": "NodeOverlay",
                "metadata": {"name": f"slices-{family}-{count}"},
                "spec": {
                    "weight": i + 1,
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-gpu-count",
                            "operator": "In",
                            "values": [str(count)],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": [family],
                        },
                    ],
                    "capacity": {"nvidia.com/gpu": str(count * 4)},
                    "priceAdjustment": "-5%",
                },
            }
        )
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    types = load_catalog().instance_types(NodeClassSettings())
    pools = [PoolTypes(f"pool-{k}", {}, types) for k in range(args.pools)]
    header = ("overlays", "pools", "types", "evaluate s", "apply s", "changed")
    print("{:>8} {:>5} {:>5} {:>10} {:>8} {:>8}".format(*header))
    for n in (1, 5, 20):
        text = yaml.safe_dump_all(overlay_docs(n))
        overlays = list(load_text(text, "overlays.yaml").objects.nodeoverlays)
        best_eval = best_apply = float("inf")
        changed = 0
        for _ in range(args.repeat):
            start = time.perf_counter()
            accepted, _ = evaluate_overlays(overlays, pools)
            mid = time.perf_counter()
            applied = apply_overlays(accepted, pools)
            end = time.perf_counter()
            best_eval = min(best_eval, mid - start)
            best_apply = min(best_apply, end - mid)
            changed = sum(c for _, c in applied)
        print(
            f"{n:>8} {len(pools):>5} {len(types):>5} {best_eval:>10.3f} {best_apply:>8.3f} "
            f"{changed:>8}"
        )


if __name__ == "__main__":
    main()
