"""Fit the `measured` spot market's distributions (`sim/spotmarket.py` MEASURED) from traces.

Two inputs, both optional on the command line:
- `--spotserve FILE`: Hsword/SpotServe `elastic-switch/trace/trace_full/g4dn.csv` (Apache-2.0;
  bundled as `src/gpucap/data/world/spotserve-g4dn.csv`, the default): `ms,add|remove,nodeN`
  events of g4dn spot nodes; a node's lifetime is its remove time minus its add time.
- `--spot-traces DIR`: a checkout of skypilot-org/spot-traces (no licence: only the fitted
  numbers are in gpucap, never the files). Its AWS 1-GPU files (`availability/1-node/*/`
  `*_v100_1.json`, `*_k80_1.json` and `preemption/1-node/*/*_v100_1.json`) are `{"metadata":
  {"gap_seconds": N}, "data": [count per tick]}`; a spell is a run of ticks with a count > 0
  (available) or = 0 (unavailable), each `gap_seconds` long; the first and last spell of a file
  are cut short by the trace's ends and left out.

Each sample is fitted with a log-normal by maximum likelihood (mu and sigma of the natural logs
of the hours, sigma the population deviation). Prints the fits; docs/design/sim.md keeps them.

Usage: `.venv/bin/python scripts/fit_spot_market.py [--spotserve FILE] [--spot-traces DIR]`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPOTSERVE = ROOT / "src/gpucap/data/world/spotserve-g4dn.csv"


def spotserve_lifetimes(text: str) -> list[float]:
    """Hours from each node's add to its remove (nodes never removed are left out)."""
    added: dict[str, float] = {}
    out: list[float] = []
    for line in text.split():
        ms, what, node = line.split(",")
        hours = int(ms) / 3_600_000
        if what == "add":
            added[node] = hours
        else:
            out.append(hours - added.pop(node))
    return out


def spells(doc: dict[str, object]) -> tuple[list[float], list[float]]:
    """(available spells, unavailable spells) of one spot-traces file, in hours."""
    meta = doc["metadata"]
    assert isinstance(meta, dict)
    gap = float(meta["gap_seconds"])
    data = doc["data"]
    assert isinstance(data, list)
    runs: list[tuple[bool, int]] = []
    for value in data:
        up = value > 0
        if runs and runs[-1][0] == up:
            runs[-1] = (up, runs[-1][1] + 1)
        else:
            runs.append((up, 1))
    inner = runs[1:-1]
    return (
        [n * gap / 3600 for up, n in inner if up],
        [n * gap / 3600 for up, n in inner if not up],
    )


def lognormal(sample: list[float]) -> dict[str, float]:
    logs = [math.log(x) for x in sample]
    mu = statistics.fmean(logs)
    return {
        "n": len(sample),
        "mu": round(mu, 4),
        "sigma": round(statistics.pstdev(logs), 4),
        "median_h": round(statistics.median(sample), 3),
        "mean_h": round(statistics.fmean(sample), 3),
    }


def spot_traces_files(root: Path) -> list[Path]:
    found = [
        *root.glob("availability/1-node/aws-*/*_v100_1.json"),
        *root.glob("availability/1-node/aws-*/*_k80_1.json"),
        *root.glob("preemption/1-node/aws-*/*_v100_1.json"),
    ]
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spotserve", default=str(SPOTSERVE))
    parser.add_argument("--spot-traces", default=None)
    args = parser.parse_args(argv)
    fits: dict[str, object] = {
        "g4dn lifetime (SpotServe)": lognormal(
            spotserve_lifetimes(Path(args.spotserve).read_text())
        )
    }
    if args.spot_traces:
        up: list[float] = []
        down: list[float] = []
        files = spot_traces_files(Path(args.spot_traces))
        for f in files:
            a, u = spells(json.loads(f.read_text()))
            up += a
            down += u
        fits["files"] = len(files)
        fits["1-GPU available spell (spot-traces)"] = lognormal(up)
        fits["1-GPU unavailable spell (spot-traces)"] = lognormal(down)
    print(json.dumps(fits, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
