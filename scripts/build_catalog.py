"""Build gpucap's bundled EC2 catalog from the shared instance-type data.

Reads `ec2-instance-types.json` and `ec2-instance-type-offerings.json` (default
`../shared/data`, provenance in its README) and the regional sources under `sources/` there
(below), and writes `src/gpucap/data/catalog/instance-types.json`, which
`gpucap.cloudprovider.aws.instancetype` loads. Run by hand when the data changes; `--check` exits 1
when the committed file is stale (for CI).

Regions. The shared data prices us-east-1, us-west-2 and eu-west-1 and has zone offerings for
those and us-east-2. Every other commercial region comes from these regional sources (also
recorded in `src/gpucap/data/catalog/SOURCES.md`), which only fill regions the shared data
leaves out: a region the shared data prices keeps its values, so its outputs do not move.

- `sources/moto-5.2.5-availability-zone/<region>.json.gz`: EC2 DescribeInstanceTypeOfferings
  recordings (location type availability-zone), `moto/ec2/resources/instance_type_offerings/`
  in the moto 5.2.5 wheel (getmoto/moto, Apache-2.0; PyPI `moto==5.2.5`, sha256
  eef62cdcf3bfe73e0863743511ba042dfaba04ba3d5ecdcb896a196c693ad528), the files the shared
  offerings come from: 30 commercial regions, zones by name. The build checks that they give
  the shared file's four regions exactly.
- `sources/vantage-gpu-instances-raw.json`: tsaol/aws-gpu `data/gpu_instances_raw.json` @
  2d0108c7bd261c8e40493fbd35135437bd6c9099 (2025-11-30; the instances.vantage.sh data of 84
  GPU/accelerator types; the repository has no licence file, the data is AWS's public price
  list as instances.vantage.sh publishes it), the shared data's "vantage raw dump": on-demand
  and spot (min/avg/max across zones) Linux prices per region.
- `sources/vantage-all-gpu-instances.js`: tsaol/aws-gpu `data/all_gpu_instances.js` @
  77fcd9fe1d0652fd07b830e5ed030d61da87923e (2026-01-21), the shared data's "vantage-2026-01":
  on-demand prices per region, preferred over the raw dump as the shared data does.
- `sources/spot-advisor-data.json`: alexei-led/spotinfo `internal/spot/data/spot-advisor-data.json`
  @ 05e933139449b888c78795b28af8e9370429a031 (Apache-2.0; the AWS Spot Instance Advisor feed,
  last changed 2025-06-28), the shared data's Spot Advisor: savings and interruption band
  per region for every type.

The build checks that each reader gives back the shared data's own values for the regions it
prices (so a new region is read the way the shared data read the old ones). Karpenter's static
price tables (aws/karpenter-provider-aws `pkg/providers/pricing/zz_generated.pricing_aws*.go`)
add nothing: the commercial one holds us-east-1 only, the others GovCloud and China, which
gpucap does not cover. The SkyPilot catalog (skypilot-org/skypilot-catalog
`catalogs/v7/aws/vms.csv`, per-zone-id prices) is not read: its repository is too large to
fetch here, so only the shared data's hand extract of it is used. Prices are per region, not
per zone.

The output holds catalog-file entries (schema in `docs/catalog-format.md`) packed in columns
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
- `offerings` is added: `{region: [zone, ...]}` from the offerings file and moto's recordings;
- a region outside the shared data gets prices only where the type is offered in it.

Usage: `.venv/bin/python scripts/build_catalog.py [--source DIR] [--out DIR] [--check]`.
Without the regional sources under `DIR/sources` the build stops with the list of what is
missing (and the bundled-data test skips).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpucap.cloudprovider.aws.instancetype.data import (  # noqa: E402
    pack_catalog_columns,
    parse_catalog,
    unpack_catalog_columns,
)
from gpucap.cloudprovider.aws.instancetype.pricing import resolve_spot_price  # noqa: E402

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

# The regional sources, under `<source>/sources` (provenance in the module docstring).
MOTO_OFFERINGS = "moto-5.2.5-availability-zone"
VANTAGE_RAW = "vantage-gpu-instances-raw.json"
VANTAGE_2026 = "vantage-all-gpu-instances.js"
SPOT_ADVISOR = "spot-advisor-data.json"
REGIONAL_SOURCES = (MOTO_OFFERINGS, VANTAGE_RAW, VANTAGE_2026, SPOT_ADVISOR)
# Partitions gpucap does not cover (Karpenter's GovCloud and China price tables are for them).
NON_COMMERCIAL = ("us-gov-", "cn-", "us-iso")


class Regional:
    """What the regional sources say, per instance type and region (only the types named).

    A plain class, not a dataclass: tests load this script by path, outside `sys.modules`."""

    def __init__(self) -> None:
        self.offerings: dict[str, dict[str, list[str]]] = {}  # region -> type -> zones
        self.on_demand: dict[str, dict[str, tuple[float, str]]] = {}  # type -> region -> (p, src)
        self.spot: dict[str, dict[str, dict[str, float | None]]] = {}  # type -> region -> sample
        self.advisor: dict[str, dict[str, dict[str, Any]]] = {}  # type -> region -> advice


def missing_regional_sources(source: Path) -> list[str]:
    """The regional source files absent from `source/sources`."""
    return [name for name in REGIONAL_SOURCES if not (source / "sources" / name).exists()]


def read_regional(source: Path, names: set[str]) -> Regional:
    """The regional sources, read the way the shared data read them for its regions."""
    folder = source / "sources"
    out = Regional()
    for path in sorted((folder / MOTO_OFFERINGS).glob("*.json.gz")):
        region = path.name.removesuffix(".json.gz")
        if region.startswith(NON_COMMERCIAL):
            continue
        by_type: dict[str, set[str]] = {}
        for offer in json.loads(gzip.decompress(path.read_bytes())):
            if offer["InstanceType"] in names:
                by_type.setdefault(offer["InstanceType"], set()).add(offer["Location"])
        out.offerings[region] = {t: sorted(z) for t, z in sorted(by_type.items())}
    text = (folder / VANTAGE_2026).read_text(encoding="utf-8")
    # A JavaScript file holding one array literal of JSON objects.
    recent = json.loads(text[text.index("[") : text.rindex("]") + 1])
    recent_od = {
        row.get("apiName") or row["name"]: {
            region: p["onDemand"]
            for region, p in (row.get("pricing") or {}).items()
            if p.get("onDemand") is not None
        }
        for row in recent
    }
    raw = json.loads((folder / VANTAGE_RAW).read_text(encoding="utf-8"))
    for row in raw:
        name = row["instance_type"]
        if name not in names:
            continue
        for region, prices in sorted((row.get("pricing") or {}).items()):
            linux = (prices or {}).get("linux") or {}
            if linux.get("spot_avg"):
                out.spot.setdefault(name, {})[region] = {
                    k: float(linux[f"spot_{k}"]) if linux.get(f"spot_{k}") else None
                    for k in ("min", "avg", "max")
                }
            if linux.get("ondemand"):
                out.on_demand.setdefault(name, {})[region] = (
                    float(linux["ondemand"]),
                    "vantage-2025-11",
                )
    for name, prices in recent_od.items():
        if name in names:
            for region, price in prices.items():
                out.on_demand.setdefault(name, {})[region] = (float(price), "vantage-2026-01")
    feed = json.loads((folder / SPOT_ADVISOR).read_text(encoding="utf-8"))
    bands = {band["index"]: band["label"] for band in feed["ranges"]}
    for region, systems in sorted(feed["spot_advisor"].items()):
        for name, advice in sorted(systems.get("Linux", {}).items()):
            # One entry (p5.48xlarge in ca-central-1) says -62%: not a saving the catalog's
            # [0, 100] range takes, so it is left out (spot then falls back to on-demand).
            if name in names and 0 <= advice["s"] <= 100:
                out.advisor.setdefault(name, {})[region] = {
                    "savings_vs_on_demand_pct": advice["s"],
                    "interruption_frequency": bands[advice["r"]],
                }
    return out


def check_regional(
    rows: list[dict[str, Any]], shared_offerings: dict[str, Any], r: Regional
) -> None:
    """Stop unless the regional readers give the shared data's values for its own regions."""
    for region, types in shared_offerings.items():
        mine = r.offerings.get(region)
        theirs = {t: sorted(z) for t, z in sorted(types.items())}
        if mine != theirs:
            raise SystemExit(f"moto offerings for {region} differ from the shared offerings")
    for row in rows:
        name = row["name"]
        for region, source in sorted(row["on_demand_price_source"].items()):
            if source in ("vantage-2026-01", "vantage-2025-11"):
                got = r.on_demand.get(name, {}).get(region)
                if got != (row["on_demand_price_usd_per_hour"][region], source):
                    raise SystemExit(f"{name} {region}: on-demand {got} != the shared data's")
        for region, sampled in sorted((row.get("spot_price_usd_per_hour") or {}).items()):
            if r.spot.get(name, {}).get(region) != sampled:
                raise SystemExit(f"{name} {region}: spot price differs from the shared data's")
        for region, advice in sorted((row.get("spot_advisor") or {}).items()):
            if r.advisor.get(name, {}).get(region) != advice:
                raise SystemExit(f"{name} {region}: Spot Advisor differs from the shared data's")


def compact_row(
    row: dict[str, Any], offerings: dict[str, dict[str, list[str]]], regional: Regional
) -> dict[str, Any]:
    """One shared-data row -> one bundled catalog entry, with the regions the shared data
    does not price filled from the regional sources."""
    out = {k: row[k] for k in KEPT_FIELDS if row.get(k) is not None}
    name = row["name"]
    if row.get("eni_limits_source") != KARPENTER_VPC_LIMITS:
        out["in_karpenter_vpc_limits"] = False
    shared_regions = set(row["on_demand_price_usd_per_hour"])
    offered = {
        region: sorted(types[name])
        for region, types in sorted(offerings.items())
        if types.get(name)
    }
    # Regions the shared data does not price, where the type is offered.
    new_regions = sorted(set(offered) - shared_regions)
    on_demand = {
        r: p for r, p in sorted(row["on_demand_price_usd_per_hour"].items()) if p is not None
    }
    for region in new_regions:
        found = regional.on_demand.get(name, {}).get(region)
        if found is not None:
            on_demand[region] = found[0]
    out["on_demand_price_usd_per_hour"] = dict(sorted(on_demand.items()))
    advisor = {r: a for r, a in sorted((row.get("spot_advisor") or {}).items()) if a is not None}
    for region in new_regions:
        if region in regional.advisor.get(name, {}):
            advisor[region] = regional.advisor[name][region]
    advisor = dict(sorted(advisor.items()))
    if advisor:
        out["spot_advisor"] = advisor
    spot: dict[str, float] = {}
    spot_source: dict[str, str] = {}
    sampled_by_region = dict(row.get("spot_price_usd_per_hour") or {})
    for region in new_regions:
        if region in regional.spot.get(name, {}):
            sampled_by_region[region] = regional.spot[name][region]
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
    out["offerings"] = offered
    return out


def build(source: Path) -> str:
    missing = missing_regional_sources(source)
    if missing:
        raise SystemExit(
            f"{source / 'sources'} lacks the regional sources {', '.join(missing)} "
            "(provenance in scripts/build_catalog.py)"
        )
    rows = json.loads((source / "ec2-instance-types.json").read_text(encoding="utf-8"))
    offerings_file = source / "ec2-instance-type-offerings.json"
    shared_offerings = json.loads(offerings_file.read_text(encoding="utf-8"))["regions"]
    regional = read_regional(source, {row["name"] for row in rows})
    check_regional(rows, shared_offerings, regional)
    offerings = {**regional.offerings, **shared_offerings}
    entries = [
        compact_row(row, offerings, regional) for row in sorted(rows, key=lambda r: r["name"])
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
