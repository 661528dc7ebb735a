"""catalog export: DescribeInstanceTypes + offerings + spot history + Pricing -> catalog entries.

A fake EC2API answers with canned, boto-shaped responses (four instance types the export keeps
-- a GPU type, an arm64 type, a bare-metal type, a fractional-GPU type without an on-demand
price -- and two it must leave out). The entries must be what the catalog-file schema says and
`catalog.parse_catalog` must accept them. One run goes through BotoEC2API against moto (real
DescribeInstanceTypes data), its fields checked against the bundled catalog.

The reservations export (`--reservations-out`) also runs through BotoEC2API against moto. moto
5.2.6 does not implement DescribeCapacityReservations, so the test extends moto: it registers
the action on moto's EC2 response class (`EC2Response.describe_capacity_reservations`, served by
the in-process moto server), answering pages by `MaxResults`/`NextToken`; the real boto3 client
serializes the request and parses moto's XML answer, and botocore's paginator follows the pages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from typer.testing import CliRunner

from gpucap.apis.capacityreservation import load_reservations, parse_reservations
from gpucap.cli import aws as cli_aws
from gpucap.cli.main import app
from gpucap.cloudprovider.aws.ec2.api import EC2API, Response
from gpucap.cloudprovider.aws.ec2.boto import PRICING_REGION, BotoEC2API
from gpucap.cloudprovider.aws.export import (
    NARROW_REQUEST_LIMIT,
    PER_TYPE_PRICING_LIMIT,
    catalog_entry,
    export_catalog,
    export_reservations,
    latest_spot_prices,
    on_demand_prices,
    pricing_filters,
    reservations_json,
    spot_price_summary,
    zone_offerings,
)
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.data import bundled_instance_type_infos, parse_catalog

REGION = "us-east-1"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)

live = pytest.mark.skipif(
    not os.environ.get("GPUCAP_LIVE_AWS"), reason="set GPUCAP_LIVE_AWS=1 to call real AWS"
)


# ---- builders: boto-shaped responses ------------------------------------------------------------


def network_info(
    enis: int, ipv4: int, *, gbps: float, cards: int = 1, efa: int = 0, default_card: int = 0
) -> dict[str, Any]:
    per_card = enis // cards
    return {
        "DefaultNetworkCardIndex": default_card,
        "MaximumNetworkCards": cards,
        "MaximumNetworkInterfaces": enis,
        "Ipv4AddressesPerInterface": ipv4,
        "NetworkCards": [
            {
                "NetworkCardIndex": i,
                "MaximumNetworkInterfaces": per_card,
                "BaselineBandwidthInGbps": gbps / cards,
            }
            for i in range(cards)
        ],
        "EfaSupported": efa > 0,
        **({"EfaInfo": {"MaximumEfaInterfaces": efa}} if efa else {}),
        "EncryptionInTransitSupported": True,
    }


def gpu(name: str, count: int, memory_mib: int, *, partition: float = 1.0) -> dict[str, Any]:
    return {
        "Name": name,
        "Manufacturer": "NVIDIA",
        "Count": count,
        "GpuPartitionSize": partition,
        "MemoryInfo": {"SizeInMiB": memory_mib},
    }


def instance_type(
    name: str,
    *,
    vcpus: int,
    memory_mib: int,
    network: dict[str, Any],
    arch: str = "x86_64",
    cpu: tuple[str, float] = ("Intel", 3.1),
    gpus: list[dict[str, Any]] | None = None,
    nvme_gb: int = 0,
    ebs_max_mbps: int = 10000,
    bare_metal: bool = False,
    virtualization: tuple[str, ...] = ("hvm",),
    usage: tuple[str, ...] = ("on-demand", "spot"),
) -> dict[str, Any]:
    """One DescribeInstanceTypes item, as boto3 returns it (trimmed to what export reads)."""
    item: dict[str, Any] = {
        "InstanceType": name,
        "CurrentGeneration": True,
        "SupportedUsageClasses": list(usage),
        "SupportedVirtualizationTypes": list(virtualization),
        "BareMetal": bare_metal,
        "ProcessorInfo": {
            "SupportedArchitectures": [arch],
            "Manufacturer": cpu[0],
            "SustainedClockSpeedInGhz": cpu[1],
        },
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": memory_mib},
        "EbsInfo": {
            "EbsOptimizedSupport": "default",
            "EbsOptimizedInfo": {"MaximumBandwidthInMbps": ebs_max_mbps},
        },
        "NetworkInfo": network,
    }
    if not bare_metal:
        item["Hypervisor"] = "nitro"
    if gpus:
        item["GpuInfo"] = {"Gpus": gpus}
    if nvme_gb:
        item["InstanceStorageInfo"] = {"TotalSizeInGB": nvme_gb, "NvmeSupport": "required"}
    return item


G5_XLARGE = instance_type(
    "g5.xlarge",
    vcpus=4,
    memory_mib=16384,
    cpu=("AMD", 3.3),
    gpus=[gpu("A10G", 1, 22888)],
    nvme_gb=250,
    ebs_max_mbps=3500,
    network=network_info(4, 15, gbps=2.5),
)
G5_XLARGE["EbsInfo"]["EbsOptimizedInfo"].update(
    {"BaselineBandwidthInMbps": 700, "BaselineThroughputInMBps": 87.5, "BaselineIops": 3000}
)
M7G_LARGE = instance_type(
    "m7g.large",
    vcpus=2,
    memory_mib=8192,
    arch="arm64",
    cpu=("AWS", 2.6),
    network=network_info(3, 10, gbps=0.937),
)
M7G_METAL = instance_type(
    "m7g.metal",
    vcpus=64,
    memory_mib=262144,
    arch="arm64",
    cpu=("AWS", 2.6),
    bare_metal=True,
    ebs_max_mbps=30000,
    network=network_info(15, 50, gbps=30.0),
)
G6F_LARGE = instance_type(
    "g6f.large",
    vcpus=2,
    memory_mib=8192,
    cpu=("AMD", 3.9),
    gpus=[gpu("L4", 0, 2861, partition=0.125)],
    network=network_info(2, 10, gbps=1.5),
)
T1_MICRO = instance_type(  # paravirtual only: Karpenter does not list it
    "t1.micro",
    vcpus=1,
    memory_mib=627,
    network=network_info(2, 2, gbps=0.1),
    virtualization=("paravirtual",),
)
MAC2_METAL = instance_type(  # arm64_mac: not an architecture Karpenter lists
    "mac2.metal",
    vcpus=8,
    memory_mib=16384,
    arch="arm64_mac",
    network=network_info(8, 30, gbps=10.0),
)
INSTANCE_TYPES = [G6F_LARGE, T1_MICRO, M7G_METAL, G5_XLARGE, MAC2_METAL, M7G_LARGE]
KEPT = ["g5.xlarge", "g6f.large", "m7g.large", "m7g.metal"]

OFFERINGS = [
    {"InstanceType": name, "Location": f"{REGION}{zone}", "LocationType": "availability-zone"}
    for name, zones in (
        ("g5.xlarge", "cba"),
        ("m7g.large", "ab"),
        ("m7g.metal", "a"),
        ("g6f.large", "ab"),
        ("t1.micro", "a"),
    )
    for zone in zones
]


def spot(
    name: str, zone: str, price: str, hours_ago: int, product: str = "Linux/UNIX"
) -> dict[str, Any]:
    return {
        "InstanceType": name,
        "AvailabilityZone": f"{REGION}{zone}",
        "ProductDescription": product,
        "SpotPrice": price,
        "Timestamp": NOW - timedelta(hours=hours_ago),
    }


SPOT_HISTORY = [
    spot("g5.xlarge", "a", "0.500000", 5),  # superseded by the next record
    spot("g5.xlarge", "a", "0.400000", 1),
    spot("g5.xlarge", "b", "0.440000", 3),
    spot("g5.xlarge", "c", "0.420000", 2, product="Linux/UNIX (Amazon VPC)"),
    spot("g5.xlarge", "c", "0.900000", 0, product="Windows"),  # another product: ignored
    spot("m7g.large", "a", "0.031200", 1),
    spot("g6f.large", "b", "0.120000", 1),
]


def price_item(
    name: str,
    usd: str,
    *,
    tenancy: str = "Shared",
    family: str = "Compute Instance",
    extra_usd: str | None = None,
) -> str:
    """One GetProducts PriceList entry: a JSON document in a string, as the API returns it."""
    dimensions = {"SKU.TERM.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}
    if extra_usd is not None:
        dimensions["SKU.TERM.OTHER"] = {"unit": "Hrs", "pricePerUnit": {"USD": extra_usd}}
    return json.dumps(
        {
            "product": {
                "productFamily": family,
                "attributes": {
                    "instanceType": name,
                    "regionCode": REGION,
                    "serviceCode": "AmazonEC2",
                    "operatingSystem": "Linux",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "marketoption": "OnDemand",
                    "tenancy": tenancy,
                    "productFamily": family,
                },
            },
            "serviceCode": "AmazonEC2",
            "terms": {"OnDemand": {"SKU.TERM": {"priceDimensions": dimensions}}},
        }
    )


PRICE_LIST = [
    price_item("g5.xlarge", "1.0060000000", extra_usd="0.0000000000"),
    price_item("m7g.large", "0.0816000000"),
    # bare metal is priced as Dedicated tenancy; a Shared item must not be picked for it
    price_item(
        "m7g.metal", "1.3056000000", tenancy="Dedicated", family="Compute Instance (bare metal)"
    ),
    price_item("m7g.metal", "9.9990000000"),
    price_item("m5.large", "0.0960000000"),  # not exported: ignored
]


class FakeEC2API:
    """Canned responses, filtered the way AWS filters them; every call recorded."""

    def __init__(self, instance_types: list[dict[str, Any]] | None = None) -> None:
        self.instance_types = INSTANCE_TYPES if instance_types is None else instance_types
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _record(self, method: str, kwargs: dict[str, Any]) -> None:
        self.calls.append((method, kwargs))

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [kwargs for name, kwargs in self.calls if name == method]

    def describe_instance_types(self, **kwargs: Any) -> Response:
        # Filters are ignored on purpose: the export must filter again.
        self._record("describe_instance_types", kwargs)
        names = kwargs.get("InstanceTypes")
        return {
            "InstanceTypes": [
                t for t in self.instance_types if not names or t["InstanceType"] in names
            ]
        }

    def describe_instance_type_offerings(self, **kwargs: Any) -> Response:
        self._record("describe_instance_type_offerings", kwargs)
        wanted = {v for f in kwargs.get("Filters", []) for v in f["Values"]}
        return {
            "InstanceTypeOfferings": [
                o for o in OFFERINGS if not wanted or o["InstanceType"] in wanted
            ]
        }

    def describe_spot_price_history(self, **kwargs: Any) -> Response:
        self._record("describe_spot_price_history", kwargs)
        names = kwargs.get("InstanceTypes")
        return {
            "SpotPriceHistory": [h for h in SPOT_HISTORY if not names or h["InstanceType"] in names]
        }

    def get_products(self, **kwargs: Any) -> Response:
        self._record("get_products", kwargs)
        terms = {f["Field"]: f["Value"] for f in kwargs["Filters"]}
        matching = [
            item
            for item in PRICE_LIST
            if all(
                json.loads(item)["product"]["attributes"].get(field) == value
                for field, value in terms.items()
            )
        ]
        return {"FormatVersion": "aws_v1", "PriceList": matching}

    def _unused(self, **kwargs: Any) -> Response:
        raise AssertionError("catalog export makes no such call")

    describe_availability_zones = _unused
    create_fleet = _unused
    describe_instances = _unused
    terminate_instances = _unused
    create_tags = _unused
    describe_images = _unused
    describe_launch_templates = _unused
    create_launch_template = _unused
    describe_subnets = _unused
    describe_security_groups = _unused
    describe_capacity_reservations = _unused
    get_parameter = _unused
    get_parameters_by_path = _unused


def exported(api: EC2API | None = None, **kwargs: Any) -> dict[str, dict[str, Any]]:
    entries = export_catalog(api or FakeEC2API(), REGION, now=NOW, **kwargs)
    return {e["name"]: e for e in entries}


# ---- export_catalog over the fake ---------------------------------------------------------------


def test_the_fake_is_an_ec2api() -> None:
    assert isinstance(FakeEC2API(), EC2API)


def test_export_keeps_karpenters_instance_types_sorted_by_name() -> None:
    entries = export_catalog(FakeEC2API(), REGION, now=NOW)
    assert [e["name"] for e in entries] == KEPT


def test_a_gpu_type_becomes_a_complete_catalog_entry() -> None:
    assert exported()["g5.xlarge"] == {
        "name": "g5.xlarge",
        "family": "g5",
        "size": "xlarge",
        "architecture": "amd64",
        "cpu_manufacturer": "amd",
        "cpu_sustained_clock_mhz": 3300,
        "vcpus": 4,
        "memory_mib": 16384,
        "gpu_count": 1,
        "gpu_name": "a10g",
        "gpu_manufacturer": "nvidia",
        "gpu_memory_mib": 22888,
        "gpu_fraction": None,
        "gpu_device_entries": 1,
        "accelerator_name": None,
        "accelerator_manufacturer": None,
        "accelerator_count": 0,
        "neuron_device_count": 0,
        "neuron_core_count": 0,
        "max_enis": 4,
        "max_enis_default_card": 4,
        "network_card_count": 1,
        "ipv4_per_eni": 15,
        "efa_interfaces": 0,
        "network_bandwidth_mbps": 2500,
        "encryption_in_transit_supported": True,
        "ebs_max_bandwidth_mbps": 3500,
        "ebs_baseline_bandwidth_mbps": 700.0,
        "ebs_baseline_throughput_mbytes_per_s": 87.5,
        "ebs_baseline_iops": 3000.0,
        "local_nvme_gb": 250,
        "hypervisor": "nitro",
        "bare_metal": False,
        "capacity_types": ["on-demand", "spot"],
        "offerings": {REGION: ["us-east-1a", "us-east-1b", "us-east-1c"]},
        "on_demand_price_usd_per_hour": {REGION: 1.006},
        "spot_price_usd_per_hour": {REGION: {"min": 0.4, "avg": 0.42, "max": 0.44}},
    }


def test_spot_price_averages_the_latest_linux_price_of_each_zone() -> None:
    entries = exported()
    # g5: zone a's newer 0.40 (not 0.50), b 0.44, c 0.42 (VPC product); Windows ignored.
    assert entries["g5.xlarge"]["spot_price_usd_per_hour"][REGION]["avg"] == 0.42
    assert entries["m7g.large"]["spot_price_usd_per_hour"] == {
        REGION: {"min": 0.0312, "avg": 0.0312, "max": 0.0312}
    }
    assert entries["m7g.metal"]["spot_price_usd_per_hour"] == {REGION: None}


def test_on_demand_price_is_parsed_from_the_price_list_and_null_without_one() -> None:
    entries = exported()
    assert entries["g5.xlarge"]["on_demand_price_usd_per_hour"] == {REGION: 1.006}
    assert entries["m7g.large"]["on_demand_price_usd_per_hour"] == {REGION: 0.0816}
    assert entries["m7g.metal"]["on_demand_price_usd_per_hour"] == {REGION: 1.3056}
    assert entries["g6f.large"]["on_demand_price_usd_per_hour"] == {REGION: None}


def test_arm64_bare_metal_and_fractional_gpu_types() -> None:
    entries = exported()
    m7g = entries["m7g.large"]
    assert (m7g["architecture"], m7g["cpu_manufacturer"], m7g["gpu_count"]) == ("arm64", "aws", 0)
    assert m7g["gpu_name"] is None
    assert m7g["network_bandwidth_mbps"] == 937
    metal = entries["m7g.metal"]
    assert (metal["bare_metal"], metal["hypervisor"]) == (True, None)
    assert metal["offerings"] == {REGION: ["us-east-1a"]}
    g6f = entries["g6f.large"]
    assert (g6f["gpu_count"], g6f["gpu_fraction"], g6f["gpu_name"]) == (0, 0.125, "l4")


def test_parse_catalog_accepts_the_export() -> None:
    entries = export_catalog(FakeEC2API(), REGION, now=NOW)

    infos = {info.name: info for info in parse_catalog(entries, source="export")}

    assert sorted(infos) == KEPT
    g5 = infos["g5.xlarge"]
    assert g5.max_pods_eni == 58  # 4 ENIs x (15 - 1) + 2, as Karpenter computes
    assert g5.gpu_resource == "nvidia.com/gpu"
    assert g5.on_demand_price_in(REGION) == 1.006
    assert (g5.spot_price[REGION], g5.spot_price_source[REGION]) == (0.42, "sampled")
    assert g5.offerings == {REGION: ("us-east-1a", "us-east-1b", "us-east-1c")}
    assert infos["g6f.large"].gpu_resource is None
    assert infos["g6f.large"].has_gpu


def test_the_export_loads_as_a_catalog_with_available_offerings() -> None:
    infos = parse_catalog(export_catalog(FakeEC2API(), REGION, now=NOW), source="export")

    catalog = load_catalog(REGION, infos=infos)

    assert catalog.zones == ("us-east-1a", "us-east-1b", "us-east-1c")
    assert catalog.unpriced == ("g6f.large",)
    g5 = catalog.instance_type("g5.xlarge")
    available = sorted((o.zone, o.capacity_type, o.price) for o in g5.offerings if o.available)
    assert available[:2] == [("us-east-1a", "on-demand", 1.006), ("us-east-1a", "spot", 0.42)]
    assert len(available) == 6


def test_requests_use_karpenters_filters() -> None:
    api = FakeEC2API()

    export_catalog(api, REGION, instance_types=["m7g.metal", "g5.xlarge"], now=NOW)

    (types,) = api.requests("describe_instance_types")
    assert types == {
        "Filters": [
            {"Name": "supported-virtualization-type", "Values": ["hvm"]},
            {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
        ],
        "InstanceTypes": ["g5.xlarge", "m7g.metal"],
    }
    (offerings,) = api.requests("describe_instance_type_offerings")
    assert offerings == {
        "LocationType": "availability-zone",
        "Filters": [{"Name": "instance-type", "Values": ["g5.xlarge", "m7g.metal"]}],
    }
    (spot_request,) = api.requests("describe_spot_price_history")
    assert spot_request == {
        "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
        "StartTime": NOW,
        "InstanceTypes": ["g5.xlarge", "m7g.metal"],
    }
    g5_prices, metal_prices = api.requests("get_products")
    assert g5_prices == {
        "ServiceCode": "AmazonEC2",
        "Filters": pricing_filters(REGION, instance_type="g5.xlarge"),
    }
    assert {f["Field"]: f["Value"] for f in g5_prices["Filters"]} == {
        "regionCode": REGION,
        "serviceCode": "AmazonEC2",
        "preInstalledSw": "NA",
        "operatingSystem": "Linux",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "tenancy": "Shared",
        "productFamily": "Compute Instance",
        "instanceType": "g5.xlarge",
    }
    metal_terms = {f["Field"]: f["Value"] for f in metal_prices["Filters"]}
    assert (metal_terms["tenancy"], metal_terms["productFamily"]) == (
        "Dedicated",
        "Compute Instance (bare metal)",
    )
    assert all(f["Type"] == "TERM_MATCH" for f in metal_prices["Filters"])


def test_a_whole_region_export_prices_with_two_region_wide_queries() -> None:
    api = FakeEC2API()

    entries = exported(api)

    shared, metal = api.requests("get_products")
    assert shared["Filters"] == pricing_filters(REGION)
    assert metal["Filters"] == pricing_filters(REGION, bare_metal=True)
    assert entries["m7g.metal"]["on_demand_price_usd_per_hour"] == {REGION: 1.3056}
    assert "InstanceTypes" not in api.requests("describe_instance_types")[0]
    assert "InstanceTypes" not in api.requests("describe_spot_price_history")[0]


def test_many_requested_types_are_priced_region_wide() -> None:
    many = [
        instance_type(
            f"c7i.{n}xlarge",
            vcpus=4 * n,
            memory_mib=8192 * n,
            network=network_info(4, 15, gbps=1.0),
        )
        for n in range(2, PER_TYPE_PRICING_LIMIT + 2)
    ]
    api = FakeEC2API(INSTANCE_TYPES + many)
    names = KEPT + [t["InstanceType"] for t in many]

    entries = export_catalog(api, REGION, instance_types=names, now=NOW)

    assert len(entries) == len(KEPT) + PER_TYPE_PRICING_LIMIT
    assert len(api.requests("get_products")) == 2


def test_more_names_than_ec2_takes_are_filtered_locally() -> None:
    many = [
        instance_type(
            f"c7i.{n}xlarge", vcpus=4, memory_mib=8192, network=network_info(4, 15, gbps=1.0)
        )
        for n in range(NARROW_REQUEST_LIMIT)
    ]
    api = FakeEC2API(INSTANCE_TYPES + many)
    names = ["g5.xlarge"] + [t["InstanceType"] for t in many]

    entries = export_catalog(api, REGION, instance_types=names, now=NOW)

    assert len(entries) == NARROW_REQUEST_LIMIT + 1
    assert "m7g.large" not in {e["name"] for e in entries}
    assert "InstanceTypes" not in api.requests("describe_instance_types")[0]
    assert "Filters" not in api.requests("describe_instance_type_offerings")[0]
    assert "InstanceTypes" not in api.requests("describe_spot_price_history")[0]


def test_an_export_of_nothing_calls_nothing() -> None:
    api = FakeEC2API()
    assert export_catalog(api, REGION, instance_types=[], now=NOW) == []
    assert export_catalog(api, REGION, instance_types=["t1.micro"], now=NOW) == []
    assert [name for name, _ in api.calls] == ["describe_instance_types"]


# ---- pure transforms ----------------------------------------------------------------------------


def test_default_network_card_gives_the_eni_count() -> None:
    network = network_info(8, 50, gbps=200.0, cards=4, efa=4, default_card=2)
    network["NetworkCards"][2]["MaximumNetworkInterfaces"] = 3
    entry = catalog_entry(
        instance_type("p4d.24xlarge", vcpus=96, memory_mib=1179648, network=network)
    )

    assert entry is not None
    assert (entry["max_enis"], entry["max_enis_default_card"], entry["network_card_count"]) == (
        8,
        3,
        4,
    )
    assert (entry["efa_interfaces"], entry["network_bandwidth_mbps"]) == (4, 200000)


def test_neuron_devices_are_accelerators() -> None:
    item = instance_type(
        "inf2.xlarge", vcpus=4, memory_mib=16384, network=network_info(4, 15, gbps=2.083)
    )
    item["NeuronInfo"] = {
        "NeuronDevices": [{"Name": "Inferentia2", "Count": 1, "CoreInfo": {"Count": 2}}]
    }
    item["InferenceAcceleratorInfo"] = {
        "Accelerators": [{"Name": "Inferentia2", "Manufacturer": "AWS", "Count": 1}]
    }
    entry = catalog_entry(item)

    assert entry is not None
    assert (entry["accelerator_name"], entry["accelerator_manufacturer"]) == ("inferentia2", "aws")
    assert (
        entry["accelerator_count"],
        entry["neuron_device_count"],
        entry["neuron_core_count"],
    ) == (1, 1, 2)
    assert entry["gpu_count"] == 0


def test_types_the_catalog_cannot_use_are_left_out() -> None:
    capacity_blocks_only = instance_type(
        "p5e.48xlarge",
        vcpus=192,
        memory_mib=2097152,
        network=network_info(64, 50, gbps=3200.0, cards=32),
        usage=("capacity-block",),
    )
    no_eni_limits = instance_type("x9.large", vcpus=2, memory_mib=8192, network={})
    assert catalog_entry(capacity_blocks_only) is None
    assert catalog_entry(no_eni_limits) is None
    assert catalog_entry(T1_MICRO) is None
    assert catalog_entry(MAC2_METAL) is None
    spot_only = catalog_entry({**M7G_LARGE, "SupportedUsageClasses": ["spot", "capacity-block"]})
    assert spot_only is not None
    assert spot_only["capacity_types"] == ["spot"]


def test_on_demand_prices_skip_zero_and_unreadable_prices() -> None:
    prices = on_demand_prices(
        [
            price_item("g5.xlarge", "1.0060000000", extra_usd="0.0000000000"),
            price_item("g5.xlarge", "1.1000000000"),
            price_item("m5.large", "not-a-price"),
            "{not json",
            json.dumps({"product": {"attributes": {}}, "terms": {}}),
        ]
    )
    assert prices == {"g5.xlarge": 1.006}


def test_latest_spot_prices_do_not_depend_on_record_order() -> None:
    records = [
        spot("g5.xlarge", "a", "0.40", 1),
        spot("g5.xlarge", "a", "0.41", 1),
        {**spot("g5.xlarge", "b", "0.39", 1), "Timestamp": "2026-11-30T11:00:00.000000000Z"},
        {**spot("g5.xlarge", "c", "0.50", 1), "Timestamp": None},
        spot("g5.xlarge", "d", "bad", 1),
    ]
    forward = latest_spot_prices({"SpotPriceHistory": records})
    backward = latest_spot_prices({"SpotPriceHistory": list(reversed(records))})
    assert forward == backward == {"g5.xlarge": {"us-east-1a": 0.41, "us-east-1b": 0.39}}
    assert spot_price_summary({}) is None


def test_zone_offerings_keep_only_availability_zones() -> None:
    response = {
        "InstanceTypeOfferings": [
            {
                "InstanceType": "g5.xlarge",
                "Location": "us-east-1b",
                "LocationType": "availability-zone",
            },
            {
                "InstanceType": "g5.xlarge",
                "Location": "us-east-1a",
                "LocationType": "availability-zone",
            },
            {
                "InstanceType": "g5.xlarge",
                "Location": "use1-az4",
                "LocationType": "availability-zone-id",
            },
        ]
    }
    assert zone_offerings(response) == {"g5.xlarge": ["us-east-1a", "us-east-1b"]}


# ---- through BotoEC2API against moto (pricing stubbed: moto has no Pricing API) -----------------

# Fields moto's DescribeInstanceTypes data and the bundled catalog (Karpenter's generated data)
# should agree on.
ORACLE_FIELDS = (
    "architecture",
    "vcpus",
    "memory_mib",
    "gpu_count",
    "gpu_name",
    "gpu_manufacturer",
    "gpu_memory_mib",
    "accelerator_name",
    "accelerator_count",
    "neuron_device_count",
    "neuron_core_count",
    "efa_interfaces",
    "max_enis_default_card",
    "ipv4_per_eni",
    "max_pods_eni",
    "local_nvme_gb",
    "hypervisor",
    "bare_metal",
)
MOTO_TYPES = ["g5.xlarge", "g6f.large", "inf2.xlarge", "m5.large", "p5.48xlarge", "trn1.32xlarge"]


@pytest.fixture
def moto_export_api(moto: str) -> Iterator[tuple[BotoEC2API, Stubber]]:
    session = boto3.Session(region_name=REGION)
    pricing = session.client("pricing", region_name=PRICING_REGION)
    api = BotoEC2API(
        ec2=session.client("ec2", endpoint_url=moto),
        ssm=session.client("ssm", endpoint_url=moto),
        pricing=pricing,
    )
    with Stubber(pricing) as stub:
        yield api, stub
        stub.assert_no_pending_responses()


def test_export_through_boto_against_moto_matches_the_bundled_catalog(
    moto_export_api: tuple[BotoEC2API, Stubber],
) -> None:
    api, pricing = moto_export_api
    for name in MOTO_TYPES:
        items = [price_item(name, "2.5")] if name == "g5.xlarge" else []
        pricing.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": items},
            {"ServiceCode": "AmazonEC2", "Filters": ANY},
        )

    entries = export_catalog(api, REGION, instance_types=MOTO_TYPES)

    assert [e["name"] for e in entries] == MOTO_TYPES
    infos = {info.name: info for info in parse_catalog(entries, source="moto")}
    bundled = {info.name: info for info in bundled_instance_type_infos()}
    for name in MOTO_TYPES:
        for field in ORACLE_FIELDS:
            assert getattr(infos[name], field) == getattr(bundled[name], field), (name, field)
    g5 = infos["g5.xlarge"]
    assert g5.on_demand_price_in(REGION) == 2.5
    assert g5.offerings is not None
    assert g5.offerings[REGION]
    assert g5.spot_price[REGION] > 0  # moto prices every zone
    assert infos["m5.large"].on_demand_price_in(REGION) is None


@pytest.mark.live
@live
def test_live_export_of_one_gpu_type() -> None:
    api = BotoEC2API.from_environment()
    (entry,) = export_catalog(api, api.region, instance_types=["g5.xlarge"])
    (info,) = parse_catalog([entry], source="live")
    assert info.gpu_count == 1
    assert info.max_pods_eni == 58


# ---- capacity reservations through BotoEC2API against moto (DescribeCapacityReservations added) --

START = datetime(2026, 3, 1, 11, 30, tzinfo=timezone.utc)
MOTO_RESERVATIONS: list[dict[str, Any]] = [
    {
        "CapacityReservationId": f"cr-{n:017x}",
        "OwnerId": "123456789012",
        "CapacityReservationArn": f"arn:aws:ec2:{REGION}:123456789012:capacity-reservation/cr-{n}",
        "AvailabilityZoneId": "use1-az1",
        "InstanceType": "p5.48xlarge" if n % 2 else "g5.xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": f"{REGION}a",
        "Tenancy": "default",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": n % 5,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": "active" if n % 3 else "scheduled",
        "StartDate": START,
        "EndDate": START + timedelta(days=n + 1),
        "EndDateType": "limited",
        "InstanceMatchCriteria": "targeted",
        "CreateDate": START - timedelta(days=1),
        "Tags": [{"Key": "team", "Value": "ml"}],
        "CapacityAllocations": [],
        "ReservationType": "capacity-block" if n % 2 else "default",
        "Interruptible": n == 4,
    }
    for n in range(7)
]
MOTO_PAGE = 3


def _moto_describe_capacity_reservations(self: Any) -> Any:
    """DescribeCapacityReservations for moto's EC2 response class: MOTO_RESERVATIONS, paged by
    MaxResults (MOTO_PAGE when absent, so an unpaged call still gets several pages)."""
    from moto.core.responses import ActionResult  # noqa: PLC0415 -- moto only in moto tests

    start = int(self._get_param("NextToken") or 0)
    end = start + int(self._get_param("MaxResults") or MOTO_PAGE)
    result: dict[str, Any] = {"CapacityReservations": MOTO_RESERVATIONS[start:end]}
    if end < len(MOTO_RESERVATIONS):
        result["NextToken"] = str(end)
    return ActionResult(result)


@pytest.fixture
def moto_with_reservations(
    moto_export_api: tuple[BotoEC2API, Stubber], monkeypatch: pytest.MonkeyPatch
) -> tuple[BotoEC2API, Stubber]:
    from moto.ec2.responses import EC2Response  # noqa: PLC0415

    monkeypatch.setattr(
        EC2Response,
        "describe_capacity_reservations",
        _moto_describe_capacity_reservations,
        raising=False,
    )
    return moto_export_api


def test_the_reservations_export_reads_every_page_and_loads_as_a_reservations_file(
    moto_with_reservations: tuple[BotoEC2API, Stubber], tmp_path: Path
) -> None:
    api, _ = moto_with_reservations

    document = export_reservations(api)
    path = tmp_path / "reservations.json"
    path.write_text(reservations_json(document), encoding="utf-8")
    loaded = load_reservations(str(path))

    ids = [r.capacity_reservation_id for r in loaded.capacity_reservations]
    assert ids == sorted(r["CapacityReservationId"] for r in MOTO_RESERVATIONS)  # 3 pages
    first, block, interruptible = (loaded.capacity_reservations[i] for i in (0, 1, 4))
    assert (first.reservation_type, first.state, first.available_instance_count) == (
        "default",
        "scheduled",
        0,
    )
    assert (block.reservation_type, block.instance_type, block.end_date) == (
        "capacity-block",
        "p5.48xlarge",
        START + timedelta(days=2),
    )
    assert interruptible.interruptible
    assert first.tag_map == {"team": "ml"}
    text = path.read_text(encoding="utf-8")
    assert '"StartDate": "2026-03-01T11:30:00+00:00"' in text  # as the AWS CLI prints times
    assert '"CapacityReservationArn"' in text  # EC2's other fields kept, ignored on load


def test_catalog_export_writes_the_reservations_file_with_reservations_out(
    moto_with_reservations: tuple[BotoEC2API, Stubber],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    api, pricing = moto_with_reservations
    for _ in range(2):  # the region-wide GetProducts queries (shared tenancy, bare metal)
        pricing.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": [price_item("g5.xlarge", "1.006")]},
            {"ServiceCode": "AmazonEC2", "Filters": ANY},
        )
    monkeypatch.setattr(cli_aws, "aws_api", lambda region: api)
    catalog, reservations = tmp_path / "catalog.json", tmp_path / "reservations.json"

    result = CliRunner().invoke(
        app,
        [
            "catalog",
            "export",
            "--from-aws",
            "--region",
            REGION,
            "-o",
            str(catalog),
            "--reservations-out",
            str(reservations),
        ],
    )

    assert result.exit_code == 0, result.output
    assert f"wrote 7 capacity reservations for {REGION} to {reservations}" in result.output
    assert len(load_reservations(str(reservations)).capacity_reservations) == 7
    assert parse_catalog(json.loads(catalog.read_text(encoding="utf-8")), source="moto")


def test_an_exported_item_with_every_ec2_field_parses() -> None:
    document = {"CapacityReservations": [dict(MOTO_RESERVATIONS[1], NewFieldFromEC2={"x": 1})]}
    (item,) = parse_reservations(document, source="export").capacity_reservations
    assert item.capacity_reservation_id == MOTO_RESERVATIONS[1]["CapacityReservationId"]


def test_reservations_out_cannot_be_the_catalog_file() -> None:
    result = CliRunner().invoke(
        app,
        ["catalog", "export", "--from-aws", "-o", "same.json", "--reservations-out", "same.json"],
    )
    assert result.exit_code == 2
    assert "error: --reservations-out: the same file as --output" in result.output
