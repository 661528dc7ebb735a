"""Build gpucap's bundled EC2 catalog from the shared instance-type data.

Reads `ec2-instance-types.json` and `ec2-instance-type-offerings.json` (default
`../shared/data`, provenance in its README) and writes
`src/gpucap/data/catalog/instance-types.json`, which `gpucap.cloudprovider.aws.catalog` loads.
Run by hand when the shared data changes; `--check` exits 1 when the committed file is stale
(for CI).

The output holds catalog-file entries (schema in `catalog.py`'s docstring) packed in columns
(`pack_catalog_columns`: one row per instance type, types sorted by name, fields sorted), so a
rebuild from the same input is byte-identical and the file stays around 0.6 MB:

- provenance-only fields are dropped (`*_source`, `karpenter_docs_commit`) and so are fields
  derivable from others (`has_gpu`, `gpu_memory_total_mib`, `gpu_resource_name`); nulls are
  omitted;
- `eni_limits_source` becomes `in_karpenter_vpc_limits: false` for the types that Karpenter's
  generated VPC limits table lacks (their ENI data comes from the VPC CNI instead);
- `spot_price_usd_per_hour` becomes one price per region with `spot_price_source`: `sampled`
  (the average across zones of the vantage sample) or `advisor-estimate` (on-demand x
  (1 - Spot Advisor savings %)); regions with neither are left out and the loader falls back to
  the on-demand price;
- `offerings` is added: `{region: [zone, ...]}` from the offerings file.

Usage: `.venv/bin/python scripts/build_catalog.py [--source DIR] [--out DIR] [--check]`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpucap.cloudprovider.aws.catalog import (  # noqa: E402
    pack_catalog_columns,
    parse_catalog,
    resolve_spot_price,
    unpack_catalog_columns,
)

DEFAULT_SOURCE = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "src" / "gpucap" / "data" / "catalog"
OUTPUT_NAME = "instance-types.json"

# Fields copied as they are (when not null).
KEPT_FIELDS = (
    "name",
    "family",
    "size",
    "category",
    "generation",
    "architecture",
    "cpu_manufacturer",
    "cpu_sustained_clock_mhz",
    "vcpus",
    "memory_mib",
    "gpu_count",
    "gpu_fraction",
    "gpu_name",
    "gpu_manufacturer",
    "gpu_memory_mib",
    "gpu_model",
    "gpu_compute_capability",
    "accelerator_name",
    "accelerator_manufacturer",
    "accelerator_count",
    "neuron_device_count",
    "neuron_core_count",
    "efa_interfaces",
    "max_enis",
    "max_enis_default_card",
    "network_card_count",
    "ipv4_per_eni",
    "max_pods_eni",
    "branch_enis",
    "trunking_compatible",
    "network_bandwidth_mbps",
    "ebs_max_bandwidth_mbps",
    "ebs_baseline_bandwidth_mbps",
    "ebs_baseline_throughput_mbytes_per_s",
    "ebs_baseline_iops",
    "local_nvme_gb",
    "hypervisor",
    "bare_metal",
    "encryption_in_transit_supported",
    "capability_flex",
    "karpenter_allocatable_cpu_millicores",
    "karpenter_allocatable_memory_mib",
    "karpenter_allocatable_ephemeral_storage_gib",
    "karpenter_max_pods",
    "karpenter_pod_eni",
    "karpenter_docs_status",
)
# The table Karpenter reads branch ENIs and Windows IPv4 limits from.
KARPENTER_VPC_LIMITS = (
    "aws/karpenter-provider-aws:pkg/providers/instancetype/zz_generated.vpclimits.go"
)


def compact_row(row: dict[str, Any], offerings: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """One shared-data row -> one bundled catalog entry."""
    out = {k: row[k] for k in KEPT_FIELDS if row.get(k) is not None}
    if row.get("eni_limits_source") != KARPENTER_VPC_LIMITS:
        out["in_karpenter_vpc_limits"] = False
    on_demand = {
        r: p for r, p in sorted(row["on_demand_price_usd_per_hour"].items()) if p is not None
    }
    out["on_demand_price_usd_per_hour"] = on_demand
    advisor = {r: a for r, a in sorted((row.get("spot_advisor") or {}).items()) if a is not None}
    if advisor:
        out["spot_advisor"] = advisor
    spot: dict[str, float] = {}
    spot_source: dict[str, str] = {}
    sampled_by_region = row.get("spot_price_usd_per_hour") or {}
    for region in sorted(set(on_demand) | set(sampled_by_region)):
        sampled = (sampled_by_region.get(region) or {}).get("avg")
        savings = (advisor.get(region) or {}).get("savings_vs_on_demand_pct")
        price, source = resolve_spot_price(
            on_demand.get(region), sampled=sampled, savings_pct=savings
        )
        # The on-demand fallback is the loader's rule; only real spot information is recorded.
        if price is not None and source in ("sampled", "advisor-estimate"):
            spot[region], spot_source[region] = price, source
    if spot:
        out["spot_price_usd_per_hour"] = spot
        out["spot_price_source"] = spot_source
    out["offerings"] = {
        region: sorted(types[row["name"]])
        for region, types in sorted(offerings.items())
        if types.get(row["name"])
    }
    return out


def build(source: Path) -> str:
    rows = json.loads((source / "ec2-instance-types.json").read_text(encoding="utf-8"))
    offerings_file = source / "ec2-instance-type-offerings.json"
    offerings = json.loads(offerings_file.read_text(encoding="utf-8"))
    entries = [
        compact_row(row, offerings["regions"]) for row in sorted(rows, key=lambda r: r["name"])
    ]
    packed = pack_catalog_columns(entries)
    lines = [json.dumps(row, separators=(",", ":")) for row in packed["rows"]]
    text = (
        f'{{"format":{json.dumps(packed["format"])},\n'
        f'"fields":{json.dumps(packed["fields"], separators=(",", ":"))},\n'
        '"rows":[\n' + ",\n".join(lines) + "\n]}\n"
    )
    # Fail here, not at import time, if the output does not unpack to the same valid catalog.
    if unpack_catalog_columns(json.loads(text)) != entries:
        raise SystemExit("packed catalog does not unpack to the entries it was built from")
    parse_catalog(entries, source=OUTPUT_NAME)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="shared data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--check", action="store_true", help="exit 1 if the output is stale")
    args = parser.parse_args(argv)
    text = build(args.source)
    target = args.out / OUTPUT_NAME
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(f"{target} is stale: run scripts/build_catalog.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({len(text.encode())} bytes, {text.count(chr(10)) - 4} instance types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
