"""Every region a user runs in (issue 21 item 4): the bundled catalog's zones and prices beyond
us-east-1, the one-line refusal of a region it has no prices for (plan, lint, simulate), lint's
`--catalog`/`--prices`/`--zones`, and the build script's rules for merging the regional sources
(a minimal source folder built here, so they run without ../shared/data)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli.main import main
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.data import (
    bundled_region_zones,
    parse_catalog_json,
    unpack_catalog_columns,
)
from gpucap.cloudprovider.aws.instancetype.pricing import (
    bundled_priced_regions,
    parse_prices,
    priced_regions,
    region_is_priced,
)
from tests.builders import GPU_TOLERATION, nodeclass, nodepool, pod, to_yaml
from tests.cloudprovider.aws.builders import build_script, catalog_entry

REPO = Path(__file__).resolve().parents[3]
# A commercial region with zones in the bundled data and no price there.
UNPRICED = "ca-west-1"


def run(args: list[str], capsys: Any, mp: pytest.MonkeyPatch) -> tuple[int, str, list[str]]:
    """The console script in-process: (exit status, stdout, stderr lines)."""
    mp.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    captured = capsys.readouterr()
    return (code if isinstance(code, int) else 0), captured.out, captured.err.splitlines()


def gpu_input(tmp_path: Path) -> str:
    """A GPU NodePool (g5/g6 families), its EC2NodeClass and one pending 1-GPU pod."""
    docs = [nodepool("gpu"), nodeclass(), pod("trainer", gpu=1, tolerations=[GPU_TOLERATION])]
    path = tmp_path / "input.yaml"
    path.write_text(to_yaml(*docs))
    return str(path)


def m5_input(tmp_path: Path) -> str:
    """An untainted m5 NodePool, its EC2NodeClass and one pending 1-CPU pod."""
    pool = nodepool("system")
    spec = pool["spec"]["template"]["spec"]
    spec["requirements"][2]["values"] = ["m5"]
    del spec["taints"]
    path = tmp_path / "system.yaml"
    path.write_text(to_yaml(pool, nodeclass(), pod("web", cpu="1")))
    return str(path)


# ---- the bundled data ----------------------------------------------------------------------


def test_plan_in_us_east_2_prices_every_gpu_offering_the_sources_price() -> None:
    catalog = load_catalog("us-east-2")
    assert catalog.zones == ("us-east-2a", "us-east-2b", "us-east-2c")
    g5 = catalog.instance_type("g5.xlarge")
    g5_pricing = catalog.details("g5.xlarge").pricing
    # instances.vantage.sh: 1.006 on demand, 0.406667 spot averaged over the zones.
    assert (g5_pricing.on_demand, g5_pricing.spot, g5_pricing.spot_source) == (
        1.006,
        0.406667,
        "sampled",
    )
    assert {(o.zone, o.capacity_type, o.price) for o in g5.offerings if o.available} == {
        (z, ct, 1.006 if ct == "on-demand" else 0.406667)
        for z in catalog.zones
        for ct in ("on-demand", "spot")
    }
    accelerated = [info for info in catalog.infos if info.has_gpu or info.accelerator_count]
    unpriced = sorted(i.name for i in accelerated if catalog.pricing[i.name].on_demand is None)
    # No source has these in us-east-2 (g7 launched after the vantage data was taken).
    assert unpriced == [
        *(f"g7.{s}" for s in ("12xlarge", "24xlarge", "2xlarge", "48xlarge", "4xlarge", "8xlarge")),
        "p5e.48xlarge",
        "trn2.48xlarge",
    ]


def test_the_priced_regions_keep_their_values_and_only_new_regions_are_added() -> None:
    # us-east-1 (the default) keeps Karpenter's price and the vantage spot sample.
    g5 = load_catalog("us-east-1").details("g5.xlarge").pricing
    assert (g5.on_demand, g5.spot_source) == (1.006, "sampled")
    # eu-west-1 keeps its SkyPilot-extract price for a system-pod type.
    assert load_catalog("eu-west-1").details("m5.large").pricing.on_demand == 0.107
    # A system-pod type has no price in a region the shared data does not price.
    assert load_catalog("us-east-2").details("m5.large").pricing.on_demand is None


def test_every_bundled_region_is_a_commercial_region_with_zones_named_region_plus_letter() -> None:
    zones = bundled_region_zones()
    assert len(zones) == 30
    for region, names in zones.items():
        assert not region.startswith(("us-gov-", "cn-")), region
        assert names, region
        assert all(z[:-1] == region and z[-1].isalpha() for z in names), region
    # The four regions of the shared offerings keep their zones exactly.
    assert zones["us-east-1"] == tuple(f"us-east-1{x}" for x in "abcdef")
    assert zones["us-west-2"] == tuple(f"us-west-2{x}" for x in "abcd")
    assert zones["eu-west-1"] == tuple(f"eu-west-1{x}" for x in "abc")


def test_a_region_is_priced_when_some_type_offered_there_has_a_price() -> None:
    priced = bundled_priced_regions()
    assert {"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "ap-northeast-1"} <= set(priced)
    assert UNPRICED in bundled_region_zones()
    assert UNPRICED not in priced
    assert not region_is_priced(UNPRICED)
    assert not region_is_priced("xx-nowhere-1")


def test_a_prices_file_makes_a_region_priced() -> None:
    prices = parse_prices({UNPRICED: {"m5.large": {"on-demand": 0.1}}}, source="p.json")
    assert region_is_priced(UNPRICED, prices=prices)
    assert UNPRICED in priced_regions(prices=prices)


def test_a_user_catalog_is_priced_where_its_own_entries_are() -> None:
    entry = catalog_entry(on_demand_price_usd_per_hour={"ap-south-7": 1.0, "us-east-1": None})
    infos = parse_catalog_json(json.dumps([entry]), source="mine.json")
    assert priced_regions(infos=infos) == ("ap-south-7",)
    assert not region_is_priced("us-east-1", infos=infos)
    one_price = parse_catalog_json(
        json.dumps([{**entry, "on_demand_price_usd_per_hour": 2.0}]), source="mine.json"
    )
    assert region_is_priced("anywhere-1", infos=one_price)


# ---- the CLI -------------------------------------------------------------------------------


def test_plan_in_us_east_2_launches_a_gpu_node_in_a_us_east_2_zone(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(
        ["plan", "-o", "json", "--region", "us-east-2", gpu_input(tmp_path)], capsys, monkeypatch
    )
    assert code == 0, err
    (claim,) = json.loads(out)["nodeClaims"]
    assert claim["launch"]["zone"].startswith("us-east-2")
    assert claim["launch"]["pricePerHour"] > 0


@pytest.mark.parametrize("command", ["plan", "lint"])
def test_unknown_region_is_refused_in_one_line(
    command: str, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run([command, "--region", UNPRICED, gpu_input(tmp_path)], capsys, monkeypatch)
    assert (code, out) == (2, "")
    (line,) = err
    assert line.startswith(
        f"error: --region {UNPRICED}: the catalog prices no instance type in {UNPRICED} "
        "(regions it prices: af-south-1, ap-east-1, "
    )
    assert line.endswith(", us-west-1, us-west-2); give prices with --prices or --catalog")


def test_a_scenarios_region_without_prices_is_refused_naming_its_spec_region(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = REPO / "tests" / "sim" / "scenarios" / "good"
    scenario = tmp_path / "far.yaml"
    scenario.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: far}\n"
        f"spec:\n  region: {UNPRICED}\n  duration: 1h\n"
        f"  manifests: [{good / 'nodeclass.yaml'}, {good / 'nodepool.yaml'}]\n"
    )
    code, out, err = run(["simulate", str(scenario)], capsys, monkeypatch)
    assert (code, out) == (2, "")
    (line,) = err
    assert line.startswith(f"error: {scenario}: spec.region {UNPRICED}: the catalog prices no ")


def test_a_region_without_bundled_prices_runs_with_a_prices_file(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({UNPRICED: {"m5.large": {"on-demand": 0.1, "spot": 0.04}}}))
    args = ["plan", "-o", "json", "--region", UNPRICED, "--prices", str(prices)]
    code, out, err = run([*args, m5_input(tmp_path)], capsys, monkeypatch)
    assert code == 0, err
    (claim,) = json.loads(out)["nodeClaims"]
    launch = claim["launch"]
    assert (launch["instanceType"], launch["pricePerHour"]) == ("m5.large", 0.04)
    assert launch["zone"].startswith(UNPRICED)


def test_lint_takes_the_catalog_prices_and_zones_options_plan_takes(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A catalog of one type, g9.xlarge, which the bundled data does not have: a pool asking for
    # it is fine with the user's catalog and an NP009 finding without.
    entry = catalog_entry(offerings={"us-east-1": ["us-east-1a"]})
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps([entry]))
    pool = nodepool("gpu")
    pool["spec"]["template"]["spec"]["requirements"] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g9.xlarge"]}
    ]
    path = tmp_path / "pool.yaml"
    path.write_text(to_yaml(pool, nodeclass()))
    _, without, _ = run(["lint", str(path)], capsys, monkeypatch)
    assert " NP009 " in without
    args = ["lint", "--catalog", str(catalog), "--zones", "us-east-1a"]
    _, out, err = run([*args, str(path)], capsys, monkeypatch)
    assert err == []
    assert " NP009 " not in out


# ---- the build script ----------------------------------------------------------------------


def shared_row(name: str, **fields: Any) -> dict[str, Any]:
    """A shared-data row (ec2-instance-types.json) priced in the three shared regions."""
    row: dict[str, Any] = {
        "name": name,
        "family": name.partition(".")[0],
        "size": name.partition(".")[2],
        "architecture": "amd64",
        "vcpus": 4,
        "memory_mib": 16384,
        "gpu_count": 1,
        "gpu_name": "a10g",
        "max_pods_eni": 58,
        "on_demand_price_usd_per_hour": {"us-east-1": 1.0, "us-west-2": 1.2, "eu-west-1": None},
        "on_demand_price_source": {
            "us-east-1": "karpenter",
            "us-west-2": "vantage-2026-01",
            "eu-west-1": None,
        },
        "spot_price_usd_per_hour": {"us-east-1": None, "us-west-2": None, "eu-west-1": None},
        "spot_advisor": {"us-east-1": None, "us-west-2": None, "eu-west-1": None},
    }
    row.update(fields)
    return row


def write_sources(folder: Path, *, vantage_od: dict[str, Any], advisor: dict[str, Any]) -> Path:
    """A minimal source folder: two types, shared offerings for us-east-1 and us-west-2, moto's
    recordings of those and of ap-south-1, the two vantage files and the Spot Advisor feed."""
    rows = [
        shared_row("g5.xlarge"),
        shared_row(
            "g5.2xlarge",
            on_demand_price_usd_per_hour={"us-east-1": 1.0, "us-west-2": None, "eu-west-1": None},
            on_demand_price_source={"us-east-1": "karpenter", "us-west-2": None, "eu-west-1": None},
        ),
    ]
    (folder / "ec2-instance-types.json").write_text(json.dumps(rows))
    shared = {
        "us-east-1": {"g5.xlarge": ["us-east-1a"], "g5.2xlarge": ["us-east-1a"]},
        "us-west-2": {"g5.xlarge": ["us-west-2b"], "g5.2xlarge": ["us-west-2b"]},
    }
    (folder / "ec2-instance-type-offerings.json").write_text(json.dumps({"regions": shared}))
    moto = folder / "sources" / "moto-5.2.5-availability-zone"
    moto.mkdir(parents=True)
    recorded = {**shared, "ap-south-1": {"g5.xlarge": ["ap-south-1a", "ap-south-1b"]}}
    recorded["us-gov-west-1"] = {"g5.xlarge": ["us-gov-west-1a"]}
    for region, types in recorded.items():
        offers = [
            {"InstanceType": t, "Location": z, "LocationType": "availability-zone"}
            for t, zones in types.items()
            for z in zones
        ]
        (moto / f"{region}.json.gz").write_bytes(gzip.compress(json.dumps(offers).encode()))
    raw = [
        {"instance_type": name, "pricing": {r: {"linux": p} for r, p in by_region.items()}}
        for name, by_region in vantage_od.items()
    ]
    (folder / "sources" / "vantage-gpu-instances-raw.json").write_text(json.dumps(raw))
    recent = [{"apiName": "g5.xlarge", "pricing": {"us-west-2": {"onDemand": 1.2}}}]
    (folder / "sources" / "vantage-all-gpu-instances.js").write_text(
        "// generated\nconst allGPUInstances = " + json.dumps(recent) + ";\n"
    )
    bands = [{"index": 0, "label": "<5%"}, {"index": 1, "label": "5-10%"}]
    feed = {"ranges": bands, "spot_advisor": advisor}
    (folder / "sources" / "spot-advisor-data.json").write_text(json.dumps(feed))
    return folder


def built(folder: Path) -> dict[str, dict[str, Any]]:
    text = build_script().build(folder)
    return {e["name"]: e for e in unpack_catalog_columns(json.loads(text))}


VANTAGE = {
    "g5.xlarge": {
        "us-west-2": {"ondemand": "1.2"},
        "ap-south-1": {"ondemand": "1.5", "spot_min": "0.5", "spot_avg": "0.6", "spot_max": "0.7"},
        "us-gov-west-1": {"ondemand": "1.9"},
    },
    "g5.2xlarge": {"ap-south-1": {"ondemand": "3.0"}},
}
ADVISOR = {
    "ap-south-1": {
        "Linux": {"g5.xlarge": {"s": 60, "r": 1}, "g5.2xlarge": {"s": -62, "r": 0}},
        "Windows": {},
    }
}


def test_a_new_region_gets_the_regional_prices_only_where_the_type_is_offered(
    tmp_path: Path,
) -> None:
    entries = built(write_sources(tmp_path, vantage_od=VANTAGE, advisor=ADVISOR))
    g5 = entries["g5.xlarge"]
    assert g5["offerings"] == {
        "ap-south-1": ["ap-south-1a", "ap-south-1b"],
        "us-east-1": ["us-east-1a"],
        "us-west-2": ["us-west-2b"],
    }
    assert g5["on_demand_price_usd_per_hour"] == {
        "ap-south-1": 1.5,
        "us-east-1": 1.0,
        "us-west-2": 1.2,
    }
    # The sampled average wins over the advisor estimate, as in the shared regions.
    assert g5["spot_price_usd_per_hour"] == {"ap-south-1": 0.6}
    assert g5["spot_advisor"] == {
        "ap-south-1": {"savings_vs_on_demand_pct": 60, "interruption_frequency": "5-10%"}
    }
    # g5.2xlarge is not offered in ap-south-1 (moto): its vantage price there is not carried,
    # nor its out-of-range advisor saving.
    g5_2 = entries["g5.2xlarge"]
    assert g5_2["on_demand_price_usd_per_hour"] == {"us-east-1": 1.0}
    assert "spot_advisor" not in g5_2
    assert "ap-south-1" not in g5_2["offerings"]


def test_the_build_skips_non_commercial_regions(tmp_path: Path) -> None:
    entries = built(write_sources(tmp_path, vantage_od=VANTAGE, advisor=ADVISOR))
    assert "us-gov-west-1" not in entries["g5.xlarge"]["offerings"]
    assert "us-gov-west-1" not in entries["g5.xlarge"]["on_demand_price_usd_per_hour"]


def test_the_build_stops_when_a_reader_disagrees_with_the_shared_data(tmp_path: Path) -> None:
    # The shared data says us-west-2 is 1.2 from vantage-2026-01; a source saying otherwise
    # means the reader (or the source file) is not the one the shared data was built from.
    wrong = {"g5.xlarge": {"us-west-2": {"ondemand": "1.2"}}}
    folder = write_sources(tmp_path, vantage_od=wrong, advisor=ADVISOR)
    js = folder / "sources" / "vantage-all-gpu-instances.js"
    js.write_text(js.read_text().replace("1.2", "1.3"))
    with pytest.raises(SystemExit, match=r"g5.xlarge us-west-2: on-demand \(1.3"):
        build_script().build(folder)


def test_the_build_names_the_missing_regional_sources(tmp_path: Path) -> None:
    folder = write_sources(tmp_path, vantage_od=VANTAGE, advisor=ADVISOR)
    (folder / "sources" / "spot-advisor-data.json").unlink()
    with pytest.raises(SystemExit, match=r"lacks the regional sources spot-advisor-data\.json"):
        build_script().build(folder)


def test_the_build_is_byte_identical_from_the_same_sources(tmp_path: Path) -> None:
    folder = write_sources(tmp_path, vantage_od=VANTAGE, advisor=ADVISOR)
    module = build_script()
    assert module.build(folder) == module.build(folder)
