"""Build gpucap's bundled Spot Instance Advisor extract (`src/gpucap/data/world/spot-advisor.json`).

Reads a copy of the AWS Spot Instance Advisor feed (`spot-advisor-data.json`, the file behind
aws.amazon.com/ec2/spot/instance-advisor; gpucap's copy was taken from alexei-led/spotinfo
`internal/spot/data/spot-advisor-data.json`, see `src/gpucap/data/world/SPOT-SOURCES.md`) and keeps,
for Linux, the regions the bundled catalog prices and the instance types of the catalog's GPU
families (a type with a GPU, or any type of a family that has one), each type's interruption
bucket `r` (an index into the feed's `ranges`) and savings `s` (percent). The feed's `ranges`
are kept verbatim; `sim/spotmarket.py` reads the bucket. Output: a header, then one region per
line with its types sorted, so a rebuild from the same input is byte-identical.

Usage: `.venv/bin/python scripts/build_spot_advisor.py FEED.json --taken "REPO PATH COMMIT DATE"
[--out FILE] [--check]`; `--check` exits 1 when the committed file differs from a rebuild.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "src/gpucap/data/catalog/instance-types.json"
OUT = ROOT / "src/gpucap/data/world/spot-advisor.json"


def _catalog() -> tuple[set[str], set[str]]:
    """The catalog's GPU-family types and the regions it covers."""
    doc = json.loads(CATALOG.read_text())
    fields = doc["fields"]
    rows = [dict(zip(fields, row, strict=True)) for row in doc["rows"]]
    gpu_families = {r["family"] for r in rows if (r["gpu_count"] or 0) > 0}
    types = {r["name"] for r in rows if r["family"] in gpu_families}
    regions = {region for r in rows for region in (r["offerings"] or {})}
    return types, regions


def build(feed: dict[str, object], taken: str) -> str:
    types, regions = _catalog()
    advisor = feed["spot_advisor"]
    assert isinstance(advisor, dict)
    out_regions: dict[str, dict[str, list[int]]] = {}
    for region in sorted(advisor):
        if region not in regions:
            continue
        linux = advisor[region].get("Linux", {})
        kept = {t: [int(v["r"]), int(v["s"])] for t, v in sorted(linux.items()) if t in types}
        if kept:
            out_regions[region] = kept
    header = {
        "format": "gpucap.dev/spot-advisor/v1",
        "source": taken,
        "os": "Linux",
        "fields": ["r", "s"],
        "ranges": feed["ranges"],
    }
    lines = [json.dumps(header, sort_keys=True)[:-1] + ',\n"regions":{']
    body = [
        f"{json.dumps(region)}:{json.dumps(kept, sort_keys=True, separators=(',', ':'))}"
        for region, kept in out_regions.items()
    ]
    return lines[0] + "\n" + ",\n".join(body) + "\n}}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("feed", help="a copy of spot-advisor-data.json")
    parser.add_argument(
        "--taken", required=True, help="where the copy came from (repo path commit date)"
    )
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = build(json.loads(Path(args.feed).read_text()), args.taken)
    json.loads(text)  # the output is one JSON document
    if args.check:
        same = Path(args.out).read_text() == text
        print("up to date" if same else f"{args.out} differs from a rebuild")
        return 0 if same else 1
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
