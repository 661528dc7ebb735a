"""The EC2 catalog and Karpenter's AWS capacity model, rule by rule.

The oracle is Karpenter itself: the worked examples of karpenter-provisioning.md §6.4 and the
allocatable values Karpenter publishes for every instance type (its generated instance-types
docs page, carried in the data as `karpenter_allocatable_*` / `karpenter_max_pods`).
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.reading import load_json
from gpucap.cloudprovider.aws.instancetype import capacity as cap
from gpucap.cloudprovider.aws.instancetype.capacity import (
    BlockDeviceSettings,
    NetworkInterfaceSettings,
)
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.cloudprovider.aws.instancetype.data import (
    CatalogError,
    InstanceTypeInfo,
    bundled_catalog_entries,
    bundled_instance_type_infos,
    pack_catalog_columns,
    parse_catalog_json,
    unpack_catalog_columns,
)
from gpucap.cloudprovider.aws.instancetype.pricing import (
    PriceOverride,
    RegionPricing,
    parse_prices_json,
)
from gpucap.cloudprovider.aws.instancetype.resolve import (
    WELL_KNOWN_LABEL_KEYS,
    InstanceTypeDetails,
    compute_requirements,
    instance_type_details,
    resolve_instance_type,
    scheduling_requirements,
)
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings, node_class_settings
from gpucap.scheduling import instancetypes as scheduling
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirement, Requirements
from tests import builders
from tests.builders import DELETE, edit, nodeclass
from tests.cloudprovider.aws.builders import build_script, catalog_entry

MiB = 2**20
GiB = 2**30
AWS = "karpenter.k8s.aws/"
REPO = Path(__file__).resolve().parents[3]
# The shared data beside the checkout (CI lays it there); GPUCAP_SHARED_DATA names another copy.
SHARED_DATA = Path(os.environ.get("GPUCAP_SHARED_DATA") or REPO.parent / "shared" / "data")


# ---- builders ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def us_east_1() -> Catalog:
    return load_catalog("us-east-1")


def bundled(name: str) -> InstanceTypeInfo:
    return next(info for info in bundled_instance_type_infos() if info.name == name)


def resolve(name: str | InstanceTypeInfo, **node_class: Any) -> InstanceType:
    """One bundled (or given) type resolved in us-east-1a for a node class built from kwargs."""
    info = bundled(name) if isinstance(name, str) else name
    return resolve_instance_type(
        info, NodeClassSettings(**node_class), region="us-east-1", zones=["us-east-1a"]
    )


def details(name: str | InstanceTypeInfo, **node_class: Any) -> InstanceTypeDetails:
    """The overhead and prices of `resolve(name, **node_class)`."""
    info = bundled(name) if isinstance(name, str) else name
    return instance_type_details(info, NodeClassSettings(**node_class), region="us-east-1")


def labels_of(it: InstanceType) -> dict[str, str]:
    """The single-valued requirements: the labels a node of this type gets from the type."""
    return {
        k: next(iter(r.values)) for k, r in sorted(it.requirements.items()) if len(r.values) == 1
    }


def values(it: InstanceType, key: str) -> set[str]:
    """The values `it` allows for `key` (none for DoesNotExist)."""
    return set(it.requirements[key].values)


def available_offerings(it: InstanceType) -> tuple[scheduling.Offering, ...]:
    return tuple(o for o in it.offerings if o.available)


def info(name: str = "m5.xlarge", **fields: Any) -> InstanceTypeInfo:
    """An m5.xlarge-shaped InstanceTypeInfo; keyword arguments replace fields."""
    family, size = name.split(".") if name.count(".") == 1 else (name, name)
    defaults: dict[str, Any] = {
        "name": name,
        "family": family,
        "size": size,
        "architecture": "amd64",
        "vcpus": 4,
        "memory_mib": 16384,
        "max_enis_default_card": 4,
        "ipv4_per_eni": 15,
        "max_pods_eni": 58,
        "on_demand_price": {"us-east-1": 0.192},
    }
    return InstanceTypeInfo(**{**defaults, **fields})


def user_catalog(
    *entries: dict[str, Any], source: str = "my-catalog.json"
) -> list[InstanceTypeInfo]:
    return list(parse_catalog_json(json.dumps(list(entries)), source=source))


# ---- §6.4 worked examples ---------------------------------------------------------------------

WORKED_EXAMPLES = {
    # m5.xlarge: 4 vCPU, 16384 MiB, 4 ENIs x 15 IPv4.
    "m5.xlarge": {
        "capacity": {"pods": 58, "memory": 15155 * MiB, "ephemeral-storage": 20 * GiB},
        "kube_reserved": {"cpu": 80, "memory": 893 * MiB, "ephemeral-storage": 1 * GiB},
        "eviction_threshold": {"memory": 100 * MiB, "ephemeral-storage": 2 * GiB},
        "allocatable": {
            "cpu": 3920,
            "memory": 14162 * MiB,
            "ephemeral-storage": 17 * GiB,
            "pods": 58,
        },
    },
    # g5.12xlarge: 48 vCPU, 196608 MiB, 4 x A10G, 15 ENIs x 50 IPv4.
    "g5.12xlarge": {
        "capacity": {"pods": 737, "memory": 181862 * MiB, "nvidia.com/gpu": 4},
        "kube_reserved": {"cpu": 190, "memory": 8362 * MiB, "ephemeral-storage": 1 * GiB},
        "eviction_threshold": {"memory": 100 * MiB, "ephemeral-storage": 2 * GiB},
        "allocatable": {
            "cpu": 47810,
            "memory": 173400 * MiB,
            "ephemeral-storage": 17 * GiB,
            "pods": 737,
            "nvidia.com/gpu": 4,
        },
    },
}


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_allocatable_matches_karpenters_worked_example(name: str) -> None:
    it, overhead = resolve(name), details(name).overhead
    expected = WORKED_EXAMPLES[name]
    assert {k: it.capacity[k] for k in expected["capacity"]} == expected["capacity"]
    assert dict(overhead.kube_reserved) == expected["kube_reserved"]
    assert dict(overhead.system_reserved) == {}
    assert dict(overhead.eviction_threshold) == expected["eviction_threshold"]
    assert {k: it.allocatable[k] for k in expected["allocatable"]} == expected["allocatable"]


def test_g5_12xlarge_gpu_labels_match_karpenters_worked_example() -> None:
    labels = labels_of(resolve("g5.12xlarge"))
    assert {
        k: labels[AWS + "instance-" + k] for k in ("gpu-name", "gpu-manufacturer", "gpu-count")
    } == {
        "gpu-name": "a10g",
        "gpu-manufacturer": "nvidia",
        "gpu-count": "4",
    }
    assert labels[AWS + "instance-gpu-memory"] == "22888"  # per GPU, not the 4-GPU total


# ---- Karpenter's published allocatable for every current type ---------------------------------

# Published values gpucap does not reproduce, by field: {instance type: reason}. Empty: with
# AL2023 defaults and a 20Gi root volume every `current` type matches Karpenter's docs exactly.
PUBLISHED_ALLOCATABLE_EXCEPTIONS: dict[str, dict[str, str]] = {
    "cpu": {},
    "memory": {},
    "ephemeral-storage": {},
    "pods": {},
}

# `vpc.amazonaws.com/pod-eni` follows the VPC limits table of the Karpenter source gpucap models
# (pkg/providers/instancetype/zz_generated.vpclimits.go @ 1d927085, regenerated 2026-08-18 by
# #9514). The docs page was generated on 2026-07-11 (692ccdd0) from the previous table, in which
# these types were not trunking-compatible, so the docs show no pod-eni for them.
POD_ENI_NEWER_THAN_DOCS = frozenset(
    [
        "c8gb.metal-24xl",
        "c8gb.metal-48xl",
        "c8gn.metal-24xl",
        "c8gn.metal-48xl",
        "c8ib.metal-48xl",
        "c8ib.metal-96xl",
        "c9g.medium",
        "c9g.large",
        "c9g.xlarge",
        "c9g.2xlarge",
        "c9g.4xlarge",
        "c9g.8xlarge",
        "c9g.12xlarge",
        "c9g.16xlarge",
        "c9g.24xlarge",
        "c9g.48xlarge",
        "c9g.metal-48xl",
        "c9gd.medium",
        "c9gd.large",
        "c9gd.xlarge",
        "c9gd.2xlarge",
        "c9gd.4xlarge",
        "c9gd.8xlarge",
        "c9gd.12xlarge",
        "c9gd.16xlarge",
        "c9gd.24xlarge",
        "c9gd.48xlarge",
        "c9gd.metal-48xl",
        "hpc7g.4xlarge",
        "hpc7g.8xlarge",
        "hpc7g.16xlarge",
        "i4i.large",
        "m8gb.metal-24xl",
        "m8gb.metal-48xl",
        "m8gn.metal-24xl",
        "m8gn.metal-48xl",
        "m8ib.metal-48xl",
        "m8ib.metal-96xl",
        "m8idb.metal-48xl",
        "m8idb.metal-96xl",
        "m8idn.metal-48xl",
        "m8idn.metal-96xl",
        "m8in.metal-48xl",
        "m8in.metal-96xl",
        "r8gb.metal-24xl",
        "r8gb.metal-48xl",
        "r8gn.metal-24xl",
        "r8gn.metal-48xl",
        "r8ib.metal-48xl",
        "r8ib.metal-96xl",
        "r8idb.metal-48xl",
        "r8idb.metal-96xl",
        "r8idn.metal-48xl",
        "r8idn.metal-96xl",
        "r8in.metal-48xl",
        "r8in.metal-96xl",
    ]
)


def _published(it: InstanceType, resource: str) -> int | None:
    p = bundled(it.name).published
    assert p is not None
    return {
        "cpu": p.cpu_millicores,
        "memory": None if p.memory_mib is None else p.memory_mib * MiB,
        "ephemeral-storage": (
            None if p.ephemeral_storage_gib is None else p.ephemeral_storage_gib * GiB
        ),
        "pods": p.max_pods,
        cap.RESOURCE_POD_ENI: p.pod_eni,
    }[resource]


@pytest.fixture(scope="module")
def resolved_by_docs_status() -> dict[str, list[InstanceType]]:
    by_status: dict[str, list[InstanceType]] = {}
    for i in bundled_instance_type_infos():
        if i.published is not None and i.published.docs_status is not None:
            by_status.setdefault(i.published.docs_status, []).append(resolve(i))
    return by_status


@pytest.mark.parametrize("resource", sorted(PUBLISHED_ALLOCATABLE_EXCEPTIONS))
def test_allocatable_equals_karpenters_published_value_for_every_current_type(
    resource: str, resolved_by_docs_status: dict[str, list[InstanceType]]
) -> None:
    current = resolved_by_docs_status["current"]
    assert len(current) == 1363
    mismatches = {
        it.name: (it.allocatable[resource], _published(it, resource))
        for it in current
        if it.allocatable[resource] != _published(it, resource)
    }
    assert set(mismatches) == set(PUBLISHED_ALLOCATABLE_EXCEPTIONS[resource]), mismatches


@pytest.mark.parametrize("resource", sorted(PUBLISHED_ALLOCATABLE_EXCEPTIONS))
def test_retired_types_match_the_older_docs_they_were_read_from(
    resource: str, resolved_by_docs_status: dict[str, list[InstanceType]]
) -> None:
    retired = resolved_by_docs_status["retired"]
    assert len(retired) == 11
    assert [it.name for it in retired if it.allocatable[resource] != _published(it, resource)] == []


def test_pod_eni_follows_karpenters_vpc_limits_table_where_it_is_newer_than_the_docs(
    resolved_by_docs_status: dict[str, list[InstanceType]],
) -> None:
    current = resolved_by_docs_status["current"]
    differs = {
        it.name
        for it in current
        if it.capacity[cap.RESOURCE_POD_ENI] != _published(it, cap.RESOURCE_POD_ENI)
    }
    assert differs == POD_ENI_NEWER_THAN_DOCS
    assert all(_published(it, cap.RESOURCE_POD_ENI) == 0 for it in current if it.name in differs)


def test_gpu_and_accelerator_capacity_equals_the_datas_device_counts() -> None:
    for i in bundled_instance_type_infos():
        it = resolve(i)
        gpus = sum(it.capacity[r] for r in cap.GPU_RESOURCE_BY_MANUFACTURER.values())
        assert gpus == i.gpu_count, i.name
        assert it.capacity[cap.RESOURCE_AWS_NEURON] == i.neuron_device_count, i.name
        assert it.capacity[cap.RESOURCE_EFA] == i.efa_interfaces, i.name


# ---- labels -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category", "generation"),
    [
        ("p4d.24xlarge", "p", "4"),
        ("g5g.xlarge", "g", "5"),
        ("u-6tb1.112xlarge", "u", "1"),
        ("c7i-flex.large", "c", "7"),
        ("trn1n.32xlarge", "trn", "1"),
        ("p6-b200.48xlarge", "p", "6"),
    ],
)
def test_category_and_generation_come_from_karpenters_name_pattern(
    name: str, category: str, generation: str
) -> None:
    labels = labels_of(resolve(name))
    assert (labels[AWS + "instance-category"], labels[AWS + "instance-generation"]) == (
        category,
        generation,
    )


def test_name_derived_labels_agree_with_the_docs_for_every_type() -> None:
    for i in bundled_instance_type_infos():
        labels = labels_of(resolve(i))
        entry_ = next(e for e in _bundled_entries() if e["name"] == i.name)
        assert labels[AWS + "instance-category"] == entry_["category"], i.name
        assert labels[AWS + "instance-generation"] == str(entry_["generation"]), i.name
        assert labels[AWS + "instance-family"] == i.family, i.name
        assert labels[AWS + "instance-size"] == i.size, i.name
        if "capability_flex" in entry_:  # the 2024 docs of retired types predate the label
            assert (
                labels[AWS + "instance-capability-flex"] == str(entry_["capability_flex"]).lower()
            )


_ENTRIES: list[dict[str, Any]] = []


def _bundled_entries() -> list[dict[str, Any]]:
    if not _ENTRIES:
        _ENTRIES.extend(bundled_catalog_entries())
    return _ENTRIES


def test_labels_of_a_gpu_type_are_the_well_known_ones_karpenter_sets() -> None:
    # Karpenter's docs table for g6.xlarge, plus the region and (single) zone it resolves in.
    assert labels_of(resolve("g6.xlarge")) == {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "g6.xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
        AWS + "instance-capability-flex": "false",
        AWS + "instance-category": "g",
        AWS + "instance-cpu": "4",
        AWS + "instance-cpu-manufacturer": "amd",
        AWS + "instance-cpu-sustained-clock-speed-mhz": "3400",
        AWS + "instance-ebs-bandwidth": "5000",
        AWS + "instance-encryption-in-transit-supported": "true",
        AWS + "instance-family": "g6",
        AWS + "instance-generation": "6",
        AWS + "instance-gpu-count": "1",
        AWS + "instance-gpu-manufacturer": "nvidia",
        AWS + "instance-gpu-memory": "22888",
        AWS + "instance-gpu-name": "l4",
        AWS + "instance-hypervisor": "nitro",
        AWS + "instance-local-nvme": "250",
        AWS + "instance-memory": "16384",
        AWS + "instance-network-bandwidth": "2500",
        AWS + "instance-size": "xlarge",
    }


def test_multi_valued_requirements_list_zones_capacity_types_and_tenancies(
    us_east_1: Catalog,
) -> None:
    it = us_east_1.instance_type("g5.12xlarge")
    assert values(it, cap.LABEL_ZONE) == {f"us-east-1{z}" for z in ("a", "b", "c", "d", "f")}
    assert values(it, cap.LABEL_CAPACITY_TYPE) == {"on-demand", "spot"}
    assert values(it, cap.LABEL_INSTANCE_TENANCY) == {"default", "dedicated"}


def test_types_without_a_gpu_have_no_gpu_labels_so_gpu_count_does_not_exist() -> None:
    labels = labels_of(resolve("m5.xlarge"))
    assert not [k for k in labels if "gpu" in k or "accelerator" in k]


def test_gpu_labels_need_exactly_one_gpu_device_entry_but_capacity_counts_every_gpu() -> None:
    two_entries = info("g9.12xlarge", gpu_count=4, gpu_name="a10g", gpu_device_entries=2)
    it = resolve(two_entries)
    assert not [k for k, r in it.requirements.items() if "gpu" in k and r.values]
    assert it.capacity["nvidia.com/gpu"] == 4


def test_fractional_gpu_types_are_gpu_labelled_with_count_zero_and_advertise_no_gpu() -> None:
    it = resolve("g6f.large")
    assert labels_of(it)[AWS + "instance-gpu-count"] == "0"
    assert labels_of(it)[AWS + "instance-gpu-name"] == "l4"
    assert labels_of(it)[AWS + "instance-gpu-memory"] == "2861"
    assert it.capacity["nvidia.com/gpu"] == 0


@pytest.mark.parametrize(
    ("name", "resource"),
    [("g4ad.xlarge", "amd.com/gpu"), ("dl1.24xlarge", "habana.ai/gaudi"), ("p5.48xlarge", None)],
)
def test_gpu_resource_follows_the_gpu_manufacturer(name: str, resource: str | None) -> None:
    gpus = bundled(name).gpu_count
    assert gpus > 0
    assert resolve(name).capacity[resource or "nvidia.com/gpu"] == gpus


def test_neuron_types_get_accelerator_labels_and_neuron_resources() -> None:
    it = resolve("inf2.xlarge")
    assert {
        k: labels_of(it)[AWS + "instance-accelerator-" + k] for k in ("name", "manufacturer")
    } == {
        "name": "inferentia2",
        "manufacturer": "aws",
    }
    assert labels_of(it)[AWS + "instance-accelerator-count"] == "1"
    assert (it.capacity["aws.amazon.com/neuron"], it.capacity["aws.amazon.com/neuroncore"]) == (
        1,
        2,
    )


def test_bare_metal_types_have_an_empty_hypervisor_label_not_a_missing_one() -> None:
    assert labels_of(resolve("c5.metal"))[AWS + "instance-hypervisor"] == ""


def test_flex_families_are_labelled_capability_flex() -> None:
    assert labels_of(resolve("c7i-flex.large"))[AWS + "instance-capability-flex"] == "true"


def test_every_capacity_key_is_present_even_when_zero() -> None:
    assert set(resolve("m5.xlarge").capacity) == {
        "cpu",
        "memory",
        "ephemeral-storage",
        "pods",
        "nvidia.com/gpu",
        "amd.com/gpu",
        "habana.ai/gaudi",
        "aws.amazon.com/neuron",
        "aws.amazon.com/neuroncore",
        "vpc.amazonaws.com/efa",
        "vpc.amazonaws.com/pod-eni",
    }


@pytest.mark.parametrize(
    ("ami_family", "build"),
    [("Windows2019", "10.0.17763"), ("Windows2022", "10.0.20348"), ("Windows2025", "10.0.26100")],
)
def test_windows_families_label_os_and_build_and_default_to_110_pods(
    ami_family: str, build: str
) -> None:
    it = resolve("m5.xlarge", ami_family=ami_family)
    assert labels_of(it)["kubernetes.io/os"] == "windows"
    assert labels_of(it)["node.kubernetes.io/windows-build"] == build
    assert it.capacity["pods"] == 110
    assert it.capacity["vpc.amazonaws.com/PrivateIPv4Address"] == 14
    assert it.capacity["ephemeral-storage"] == 50 * GiB
    # Windows counts its own max pods for kube-reserved memory: 11 * 110 + 255.
    assert (
        details("m5.xlarge", ami_family=ami_family).overhead.kube_reserved["memory"] == 1465 * MiB
    )


def test_windows_cannot_run_on_arm64_so_those_types_never_launch() -> None:
    it = resolve("m6g.xlarge", ami_family="Windows2022")
    assert values(it, "kubernetes.io/os") == set()
    assert not available_offerings(it)


@pytest.mark.parametrize(("ami_family", "available"), [("AL2023", False), ("AL2", True)])
def test_a1_types_are_unavailable_with_al2023(ami_family: str, available: bool) -> None:
    it = resolve("a1.large", ami_family=ami_family)
    assert bool(available_offerings(it)) is available


def test_arm64_memory_loses_64_mib_of_cma_before_the_vm_overhead() -> None:
    # m6g.xlarge: (16384 - 64) - ceil(16320 * 0.075) = 16320 - 1224 MiB.
    assert resolve("m6g.xlarge").capacity["memory"] == (16320 - 1224) * MiB


# ---- kubelet and node-class overrides ---------------------------------------------------------

M5 = WORKED_EXAMPLES["m5.xlarge"]["allocatable"]


@pytest.mark.parametrize(
    ("node_class", "expected"),
    [
        # maxPods replaces ENI-limited pods; AL2023's kube-reserved memory still uses 58 pods.
        ({"max_pods": 110}, {"pods": 110, "memory": 14162 * MiB}),
        # Bottlerocket counts its real max pods: 11 * 110 + 255 = 1465Mi.
        (
            {"max_pods": 110, "ami_family": "Bottlerocket"},
            {"pods": 110, "memory": (15155 - 1465 - 100) * MiB},
        ),
        ({"pods_per_core": 4}, {"pods": 16, "memory": 14162 * MiB}),
        ({"pods_per_core": 20}, {"pods": 58}),
        ({"pods_per_core": 4, "max_pods": 10}, {"pods": 10}),
        # Bottlerocket cannot pass podsPerCore, so Karpenter ignores it.
        ({"pods_per_core": 4, "ami_family": "Bottlerocket"}, {"pods": 58}),
        ({"kube_reserved": {"cpu": 500}}, {"cpu": 3500}),
        ({"kube_reserved": {"memory": 1 * GiB}}, {"memory": (15155 - 1024 - 100) * MiB}),
        ({"kube_reserved": {"ephemeral-storage": 0}}, {"ephemeral-storage": 18 * GiB}),
        (
            {"system_reserved": {"cpu": 100, "memory": 200 * MiB}},
            {"cpu": 3820, "memory": 13962 * MiB},
        ),
        ({"eviction_hard": {"memory.available": "500Mi"}}, {"memory": 13762 * MiB}),
        # 10% of the 15155Mi capacity estimate, rounded up to a byte.
        ({"eviction_hard": {"memory.available": "10%"}}, {"memory": 13365673984}),
        # 100% disables the signal, so it reserves nothing.
        ({"eviction_hard": {"memory.available": "100%"}}, {"memory": 14262 * MiB}),
        ({"eviction_hard": {"nodefs.available": "100%"}}, {"ephemeral-storage": 19 * GiB}),
        ({"eviction_hard": {"nodefs.available": "15%"}}, {"ephemeral-storage": 16 * GiB}),
        ({"eviction_hard": {"nodefs.available": "1Gi"}}, {"ephemeral-storage": 18 * GiB}),
        # Reserved ENIs lower max pods (3 * 14 + 2) but not AL2023's kube-reserved memory.
        ({"reserved_enis": 1}, {"pods": 44, "memory": 14162 * MiB}),
        ({"reserved_enis": 4}, {"pods": 0}),
        (
            {"block_device_mappings": (BlockDeviceSettings("/dev/xvda", 100 * GiB, True),)},
            {"ephemeral-storage": 89 * GiB},
        ),
    ],
)
def test_kubelet_overrides_change_allocatable_as_karpenter_does(
    node_class: dict[str, Any], expected: dict[str, int]
) -> None:
    it = resolve("m5.xlarge", **node_class)
    assert {k: it.allocatable[k] for k in expected} == expected
    unchanged = {k: v for k, v in M5.items() if k not in expected}
    if not {"ami_family", "reserved_enis"} & set(node_class):
        assert {k: it.allocatable[k] for k in unchanged} == unchanged


ROOT_100 = BlockDeviceSettings("/dev/xvda", 100 * GiB, root_volume=True)


@pytest.mark.parametrize(
    ("ami_family", "mappings", "policy", "expected"),
    [
        ("AL2023", (), None, 20 * GiB),
        ("AL2023", (ROOT_100,), None, 100 * GiB),
        # Without rootVolume, the mapping on the family's ephemeral device counts.
        ("AL2023", (BlockDeviceSettings("/dev/xvda", 50 * GiB),), None, 50 * GiB),
        ("AL2023", (BlockDeviceSettings("/dev/xvdb", 50 * GiB),), None, 20 * GiB),
        ("AL2", (BlockDeviceSettings("/dev/xvda", 80 * GiB),), None, 80 * GiB),
        ("Bottlerocket", (), None, 20 * GiB),
        (
            "Bottlerocket",
            (BlockDeviceSettings("/dev/xvda", 4 * GiB), BlockDeviceSettings("/dev/xvdb", 60 * GiB)),
            None,
            60 * GiB,
        ),
        ("Windows2022", (), None, 50 * GiB),
        # Custom cannot know the layout: the last mapping, else 20Gi.
        (
            "Custom",
            (BlockDeviceSettings("/dev/xvda", 8 * GiB), BlockDeviceSettings("/dev/xvdz", 30 * GiB)),
            None,
            30 * GiB,
        ),
        ("Custom", (BlockDeviceSettings("/dev/xvda", None),), None, 20 * GiB),
        ("Custom", (), None, 20 * GiB),
        # RAID0 puts ephemeral storage on the local NVMe disks: 250 GB decimal on g6.xlarge.
        ("AL2023", (ROOT_100,), "RAID0", 250 * 10**9),
    ],
)
def test_ephemeral_storage_comes_from_root_volume_family_device_or_family_default(
    ami_family: str,
    mappings: tuple[BlockDeviceSettings, ...],
    policy: str | None,
    expected: int,
) -> None:
    it = resolve(
        "g6.xlarge",
        ami_family=ami_family,
        block_device_mappings=mappings,
        instance_store_policy=policy,
    )
    assert it.capacity["ephemeral-storage"] == expected


def test_raid0_without_instance_store_falls_back_to_the_root_volume() -> None:
    it = resolve("m5.xlarge", block_device_mappings=(ROOT_100,), instance_store_policy="RAID0")
    assert it.capacity["ephemeral-storage"] == 100 * GiB


def test_efa_only_interfaces_replace_efa_capacity_and_take_an_eni_from_card_zero() -> None:
    nics = (
        NetworkInterfaceSettings(0, 0, "interface"),
        NetworkInterfaceSettings(0, 1, "efa-only"),
    )
    it = resolve("g5.12xlarge", network_interfaces=nics)
    assert it.capacity["vpc.amazonaws.com/efa"] == 1
    # 14 usable ENIs x 49 + 2, and AL2023 kube-reserved memory uses the same count.
    assert it.capacity["pods"] == 14 * 49 + 2
    overhead = details("g5.12xlarge", network_interfaces=nics).overhead
    assert overhead.kube_reserved["memory"] == (11 * (14 * 49 + 2) + 255) * MiB


@pytest.mark.parametrize(
    ("node_class", "message"),
    [
        ({"ami_family": "Ubuntu"}, "amiFamily 'Ubuntu' is not one of"),
        ({"eviction_hard": {"memory.available": "lots"}}, "evictionHard['memory.available']"),
        ({"eviction_hard": {"nodefs.available": "x%"}}, "not a percentage"),
        ({"instance_store_policy": "RAID1"}, "is not RAID0"),
        ({"max_pods": -1}, "max_pods must be >= 0"),
        (
            {"block_device_mappings": (ROOT_100, ROOT_100)},
            "at most one block device mapping may be the root volume",
        ),
    ],
)
def test_invalid_node_class_settings_are_rejected(node_class: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        NodeClassSettings(**node_class)


# ---- offerings, regions and prices ------------------------------------------------------------


def test_offerings_cover_every_zone_and_capacity_type_with_unoffered_zones_unavailable(
    us_east_1: Catalog,
) -> None:
    it = us_east_1.instance_type("g5.12xlarge")
    assert [(o.zone, o.capacity_type) for o in it.offerings] == [
        (z, ct) for z in us_east_1.zones for ct in ("on-demand", "spot")
    ]
    unavailable = {o.zone for o in it.offerings if not o.available}
    assert unavailable == {"us-east-1e"}
    prices = {(o.capacity_type, o.price) for o in available_offerings(it)}
    assert prices == {("on-demand", 5.672), ("spot", 2.137)}
    assert us_east_1.details("g5.12xlarge").pricing.spot_source == "sampled"


def test_types_not_offered_in_the_region_are_left_out_and_unpriced_ones_kept_unavailable() -> None:
    us_west_2 = load_catalog("us-west-2")
    assert "p5e.48xlarge" not in load_catalog("us-east-1").names
    assert "g7.2xlarge" in us_west_2.unpriced
    it = us_west_2.instance_type("g7.2xlarge")
    assert available_offerings(it) == ()
    assert {o.price for o in it.offerings} == {0.0}


def test_us_east_2_prices_gpu_types_but_not_system_pod_types() -> None:
    # Its prices come from the regional sources (GPU/accelerator types only); the shared data's
    # system-pod prices cover us-east-1, us-west-2 and eu-west-1 (test_catalog_regions.py).
    catalog = load_catalog("us-east-2")
    assert catalog.zones == ("us-east-2a", "us-east-2b", "us-east-2c")
    assert "m5.large" in catalog.unpriced
    assert "g5.xlarge" not in catalog.unpriced


def test_zones_restrict_the_offerings_and_the_zone_requirement(us_east_1: Catalog) -> None:
    catalog = load_catalog("us-east-1", zones=["us-east-1b", "us-east-1e"])
    it = catalog.instance_type("g5.12xlarge")
    assert values(it, cap.LABEL_ZONE) == {"us-east-1b"}
    assert {o.zone for o in it.offerings} == {"us-east-1b", "us-east-1e"}


def test_spot_price_is_advisor_estimated_where_no_sample_exists(us_east_1: Catalog) -> None:
    m5 = us_east_1.details("m5.xlarge")
    savings = m5.info.spot_advisor["us-east-1"].savings_vs_on_demand_pct
    assert m5.pricing.spot_source == "advisor-estimate"
    assert m5.pricing.spot == round(0.192 * (1 - savings / 100), 6)


def test_price_overrides_replace_prices_and_reestimate_advisor_spot_prices() -> None:
    prices = parse_prices_json(
        json.dumps({"us-east-1": {"m5.xlarge": {"on-demand": 0.5}, "g5.12xlarge": {"spot": 1.5}}}),
        source="prices.json",
    )
    catalog = load_catalog("us-east-1", prices=prices)
    m5 = catalog.details("m5.xlarge").pricing
    savings = catalog.info("m5.xlarge").spot_advisor["us-east-1"].savings_vs_on_demand_pct
    assert (m5.on_demand, m5.spot) == (0.5, round(0.5 * (1 - savings / 100), 6))
    g5 = catalog.details("g5.12xlarge").pricing
    assert (g5.on_demand, g5.spot, g5.spot_source) == (5.672, 1.5, "override")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"us-east-1": {"m5.xlarge": {"spot": -1}}},
            "prices.json: region us-east-1, instance type 'm5.xlarge': field 'spot': "
            "must be a number >= 0",
        ),
        (
            {"us-east-1": {"m5.xlarge": {"ondemand": 1}}},
            "prices.json: region us-east-1, instance type 'm5.xlarge': field 'ondemand': unknown",
        ),
        ([], "prices.json: must be an object"),
        (
            {"us-east-1": {"m5.xlarge": {"spot": 1e300}}},
            "prices.json: region us-east-1, instance type 'm5.xlarge': field 'spot': "
            "must be at most 1e+12, got 1e+300",
        ),
    ],
)
def test_bad_prices_files_name_the_file_entry_and_field(doc: object, message: str) -> None:
    with pytest.raises(CatalogError) as err:
        parse_prices_json(json.dumps(doc), source="prices.json")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_price_overrides_for_unknown_types_are_errors() -> None:
    with pytest.raises(CatalogError, match=r"'m9\.huge': not an instance type of the catalog"):
        load_catalog("us-east-1", prices={"us-east-1": {"m9.huge": PriceOverride(1.0)}})


# ---- user catalog files -----------------------------------------------------------------------


def test_a_minimal_catalog_file_gives_a_type_offered_everywhere_at_its_on_demand_price() -> None:
    catalog = load_catalog("us-east-1", infos=user_catalog(catalog_entry()))
    it = catalog.instance_type("g9.xlarge")
    assert catalog.zones == tuple(f"us-east-1{z}" for z in "abcdef")
    assert len(available_offerings(it)) == 12
    assert catalog.details("g9.xlarge").pricing == RegionPricing(1.0, 1.0, "on-demand", None)
    assert it.capacity["nvidia.com/gpu"] == 1
    assert labels_of(it)[AWS + "instance-gpu-count"] == "1"
    assert it.allocatable["memory"] == 14162 * MiB


@pytest.mark.parametrize(
    "field",
    [
        "name",
        "family",
        "size",
        "architecture",
        "vcpus",
        "memory_mib",
        "gpu_count",
        "max_pods_eni",
        "on_demand_price_usd_per_hour",
    ],
)
def test_a_missing_required_field_is_one_line_naming_file_entry_and_field(field: str) -> None:
    entries = [catalog_entry(name="g9.2xlarge", size="2xlarge"), catalog_entry(**{field: DELETE})]
    with pytest.raises(CatalogError) as err:
        user_catalog(*entries)
    name = "unnamed" if field == "name" else "g9.xlarge"
    assert str(err.value) == (
        f"my-catalog.json: entry 1 ({name}): field '{field}': required field is missing"
        + (
            " (give max_pods_eni, or max_enis_default_card and ipv4_per_eni)"
            if field == "max_pods_eni"
            else ""
        )
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"vcpus": "4"}, "field 'vcpus': must be an integer >= 1, got '4'"),
        ({"gpu_count": True}, "field 'gpu_count': must be an integer >= 0, got True"),
        ({"architecture": "x86_64"}, "field 'architecture': must be amd64 or arm64"),
        ({"family": "g8"}, "field 'family': 'g8' does not match the name's family 'g9'"),
        ({"on_demand_price_usd_per_hour": {"us-east-1": "1"}}, "on_demand_price_usd_per_hour.us"),
        (
            {"max_enis_default_card": 4, "ipv4_per_eni": 16},
            "field 'max_pods_eni': 58 disagrees with max_enis_default_card x (ipv4_per_eni - 1)"
            " + 2 = 62",
        ),
        ({"max_pods_eni": DELETE, "max_enis_default_card": 4}, "field 'ipv4_per_eni': required"),
        ({"capacity_types": ["reserved"]}, "field 'capacity_types': must be a non-empty subset"),
        ({"offerings": {"us-east-1": "us-east-1a"}}, "field 'offerings.us-east-1': must be a list"),
        ({"spot_advisor": {"us-east-1": {"savings_vs_on_demand_pct": 120}}}, "must be a number in"),
        # numbers too large for int32 base units or for sums of prices (issue 9); integers of
        # more than 100 digits never get here (the JSON reader refuses them, see below)
        ({"vcpus": 10**99}, "field 'vcpus': must be at most 2147483647, got 1000000000000"),
        ({"memory_mib": 2**31}, "field 'memory_mib': must be at most 2147483647, got 2147483648"),
        (
            {"on_demand_price_usd_per_hour": 10**99},
            "field 'on_demand_price_usd_per_hour': must be {region: price} or a number, got "
            "1000000000000",
        ),
        (
            {"on_demand_price_usd_per_hour": {"us-east-1": 1e300}},
            "field 'on_demand_price_usd_per_hour.us-east-1': must be at most 1e+12, got 1e+300",
        ),
    ],
)
def test_invalid_fields_are_reported_with_file_entry_and_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(CatalogError) as err:
        user_catalog(catalog_entry(**fields))
    assert str(err.value).startswith("my-catalog.json: entry 0 (g9.xlarge): ")
    assert message in str(err.value)


def test_an_integer_of_more_than_100_digits_is_refused_where_it_is_written() -> None:
    with pytest.raises(CatalogError) as err:
        user_catalog(catalog_entry(vcpus=10**400))
    assert str(err.value).startswith("my-catalog.json: line 1 column ")
    assert str(err.value).endswith(": an integer of 401 digits (gpucap reads at most 100)")


def test_duplicate_names_and_bad_json_are_errors() -> None:
    with pytest.raises(CatalogError, match=r"entry 1 \(g9.xlarge\): field 'name': duplicate"):
        user_catalog(catalog_entry(), catalog_entry())
    with pytest.raises(CatalogError, match=r"^my-catalog.json: not valid JSON: .*line 1"):
        parse_catalog_json("[{", source="my-catalog.json")
    with pytest.raises(CatalogError, match="must be a JSON array"):
        parse_catalog_json("{}", source="my-catalog.json")


def test_enis_and_ipv4_per_eni_can_replace_max_pods_eni() -> None:
    (i,) = user_catalog(
        catalog_entry(max_pods_eni=DELETE, max_enis_default_card=4, ipv4_per_eni=15)
    )
    assert i.max_pods_eni == 58


SPOT_FALLBACKS = [
    # (spot fields, expected spot price, expected source)
    (
        {"spot_price_usd_per_hour": {"us-east-1": {"min": 0.3, "avg": 0.35, "max": 0.4}}},
        0.35,
        "sampled",
    ),
    (
        {
            "spot_advisor": {
                "us-east-1": {"savings_vs_on_demand_pct": 62, "interruption_frequency": "<5%"}
            }
        },
        0.38,
        "advisor-estimate",
    ),
    ({"spot_advisor": {"us-west-2": {"savings_vs_on_demand_pct": 62}}}, 1.0, "on-demand"),
    ({}, 1.0, "on-demand"),
]


@pytest.mark.parametrize(("fields", "price", "source"), SPOT_FALLBACKS)
def test_spot_price_falls_back_to_advisor_savings_then_to_on_demand(
    fields: dict[str, Any], price: float, source: str
) -> None:
    catalog = load_catalog("us-east-1", infos=user_catalog(catalog_entry(**fields)))
    pricing = catalog.details("g9.xlarge").pricing
    assert (pricing.spot, pricing.spot_source) == (price, source)


def test_catalog_offerings_and_capacity_types_restrict_where_and_how_a_type_launches() -> None:
    infos = user_catalog(
        catalog_entry(offerings={"us-east-1": ["us-east-1b"]}, capacity_types=["on-demand"]),
        catalog_entry(name="g9.2xlarge", size="2xlarge", offerings={"us-west-2": ["us-west-2a"]}),
    )
    catalog = load_catalog("us-east-1", infos=infos)
    assert catalog.names == ("g9.xlarge",)  # g9.2xlarge is not offered in us-east-1
    assert catalog.zones == ("us-east-1b",)  # the catalog's own zones for the region
    it = catalog.instance_type("g9.xlarge")
    assert [(o.zone, o.capacity_type, o.available) for o in it.offerings] == [
        ("us-east-1b", "on-demand", True)
    ]


def test_a_region_without_known_zones_needs_zones() -> None:
    infos = user_catalog(catalog_entry())
    with pytest.raises(CatalogError, match="no zones known for region ap-south-7"):
        load_catalog("ap-south-7", infos=infos)
    catalog = load_catalog("ap-south-7", infos=infos, zones=["ap-south-7a"])
    assert catalog.unpriced == ("g9.xlarge",)


def test_a_zone_of_another_region_is_an_error_naming_the_regions_zones() -> None:
    with pytest.raises(
        CatalogError,
        match=r"zone us-west-2a is not a zone of us-east-1 in the catalog \(known: us-east-1a, ",
    ):
        load_catalog("us-east-1", zones=["us-east-1a", "us-west-2a"])


def test_a_user_catalog_checks_zones_against_its_own_offerings() -> None:
    infos = user_catalog(catalog_entry(offerings={"us-east-1": ["us-east-1b"]}))
    with pytest.raises(CatalogError, match="zone us-east-1a is not a zone of us-east-1"):
        load_catalog("us-east-1", infos=infos, zones=["us-east-1a"])
    assert load_catalog("us-east-1", infos=infos, zones=["us-east-1b"]).zones == ("us-east-1b",)


def test_an_empty_zone_list_is_an_error_not_every_zone() -> None:
    with pytest.raises(CatalogError, match="no zones given for region us-east-1"):
        load_catalog("us-east-1", zones=[])


# ---- bundled data -----------------------------------------------------------------------------


def test_bundled_data_round_trips_through_its_column_packing() -> None:
    entries = _bundled_entries()
    assert len(entries) == 1374
    assert unpack_catalog_columns(pack_catalog_columns(entries)) == entries


def test_the_bundled_file_reads_the_same_without_the_user_file_limit_checks() -> None:
    # The bundled file is read with plain `json.loads` (trusted, and faster); it must be
    # within the limits `load_json` enforces on user files, so both readers agree on it.
    text = (REPO / "src/gpucap/data/catalog/instance-types.json").read_text(encoding="utf-8")
    checked = load_json(text, "instance-types.json")
    assert checked == json.loads(text)
    assert unpack_catalog_columns(checked) == _bundled_entries()


def test_bundled_data_is_up_to_date_with_the_shared_data() -> None:
    # The whole build, when ../shared/data holds it: the shared files and the regional sources
    # under sources/ (scripts/build_catalog.py names them). The build's rules are tested on a
    # minimal source folder in test_catalog_regions.py, which needs neither.
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not checked out")
    module = build_script()
    missing = module.missing_regional_sources(SHARED_DATA)
    if missing:
        pytest.skip(f"../shared/data/sources lacks {', '.join(missing)}")
    committed = (REPO / "src/gpucap/data/catalog/instance-types.json").read_text(encoding="utf-8")
    assert module.build(SHARED_DATA) == committed


def test_the_codebase_has_one_instance_type_class_the_schedulers() -> None:
    # review-2026-12-b 3.4: the catalog resolves straight into the scheduler's class.
    src = REPO / "src"
    defined = sorted(
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "InstanceType"
    )
    assert defined == ["gpucap/scheduling/instancetypes.py"]
    assert type(resolve("m5.xlarge")) is InstanceType


def test_details_hold_the_overhead_that_allocatable_subtracts_from_capacity(
    us_east_1: Catalog,
) -> None:
    settings = NodeClassSettings(ami_family="Bottlerocket", system_reserved={"cpu": 100})
    it = us_east_1.instance_type("g5.12xlarge", settings)
    found = us_east_1.details("g5.12xlarge", settings)
    assert found.info is us_east_1.info("g5.12xlarge")
    assert found.pricing is us_east_1.pricing["g5.12xlarge"]
    assert found.overhead.system_reserved == {"cpu": 100}
    total = found.overhead.total()
    assert {k: it.capacity[k] - total.get(k, 0) for k in it.capacity} == dict(it.allocatable)


# ---- the scheduler's view ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["m5.xlarge", "g6.xlarge", "p4d.24xlarge", "c5.metal"])
def test_scheduling_types_require_every_well_known_label_absent_ones_as_does_not_exist(
    us_east_1: Catalog, name: str
) -> None:
    it = us_east_1.instance_type(name)
    assert set(it.requirements) == WELL_KNOWN_LABEL_KEYS
    for key, requirement in it.requirements.items():
        expected = "In" if requirement.values else "DoesNotExist"
        assert requirement.operator == expected, key
    has_gpu = us_east_1.info(name).has_gpu
    assert it.requirements[AWS + "instance-gpu-count"].operator == (
        "In" if has_gpu else "DoesNotExist"
    )


def test_gpu_count_exists_selects_gpu_types_only(us_east_1: Catalog) -> None:
    wants_gpu = Requirements.of(Requirement.new(AWS + "instance-gpu-count", "Exists"))
    chosen = {
        t.name
        for t in us_east_1.instance_types()
        if wants_gpu.is_compatible(t.requirements, ALLOW_UNDEFINED_WELL_KNOWN)
    }
    assert {"g5.xlarge", "g6.xlarge", "p4d.24xlarge"} <= chosen
    assert not {"m5.xlarge", "c5.metal"} & chosen


def test_an_empty_value_list_is_does_not_exist_and_an_empty_value_is_a_value() -> None:
    reqs = scheduling_requirements({"kubernetes.io/os": (), AWS + "instance-hypervisor": ("",)})
    assert reqs["kubernetes.io/os"].operator == "DoesNotExist"
    assert reqs[AWS + "instance-hypervisor"].operator == "In"
    assert reqs[AWS + "instance-hypervisor"].has("")


def test_instance_types_are_resolved_once_per_node_class_in_name_order(us_east_1: Catalog) -> None:
    first = us_east_1.instance_types()
    assert us_east_1.instance_types(NodeClassSettings()) is first
    assert [t.name for t in first] == list(us_east_1.names)
    other = us_east_1.instance_types(NodeClassSettings(max_pods=20))
    assert other is not first
    assert {t.allocatable["pods"] for t in other} == {20}


# ---- EC2NodeClass -> NodeClassSettings --------------------------------------------------------


def test_node_class_settings_read_every_capacity_input_of_an_ec2nodeclass() -> None:
    doc = edit(nodeclass(), "spec.amiSelectorTerms", [{"alias": "bottlerocket@latest"}])
    doc = edit(
        doc,
        "spec.kubelet",
        {
            "maxPods": 58,
            "podsPerCore": 4,
            "kubeReserved": {"cpu": "250m", "memory": "1Gi", "ephemeral-storage": "2G"},
            "systemReserved": {"cpu": "0.1", "memory": "100Mi"},
            "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
        },
    )
    doc = edit(
        doc,
        "spec.blockDeviceMappings",
        [
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi"}},
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}, "rootVolume": True},
            {"deviceName": "/dev/xvdc", "ebs": {"snapshotID": "snap-0123"}},
        ],
    )
    doc = edit(doc, "spec.instanceStorePolicy", "RAID0")
    doc = edit(
        doc,
        "spec.networkInterfaces",
        [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        ],
    )
    settings = node_class_settings(EC2NodeClass.model_validate(doc), reserved_enis=1)
    assert settings == NodeClassSettings(
        ami_family="Bottlerocket",
        max_pods=58,
        pods_per_core=4,
        kube_reserved={"cpu": 250, "memory": GiB, "ephemeral-storage": 2 * 10**9},
        system_reserved={"cpu": 100, "memory": 100 * MiB},
        eviction_hard={"memory.available": "5%", "nodefs.available": "10%"},
        block_device_mappings=(
            BlockDeviceSettings("/dev/xvda", 4 * GiB),
            BlockDeviceSettings("/dev/xvdb", 100 * GiB, root_volume=True),
            BlockDeviceSettings("/dev/xvdc", None),
        ),
        instance_store_policy="RAID0",
        network_interfaces=(
            NetworkInterfaceSettings(0, 0, "interface"),
            NetworkInterfaceSettings(0, 1, "efa-only"),
        ),
        reserved_enis=1,
    )


def test_a_plain_ec2nodeclass_gives_the_default_settings_with_its_root_volume() -> None:
    settings = node_class_settings(EC2NodeClass.model_validate(nodeclass()))
    assert settings == NodeClassSettings(
        ami_family="AL2023",
        block_device_mappings=(BlockDeviceSettings("/dev/xvda", 200 * GiB),),
    )
    assert settings.network_interfaces is None
    bare = edit(nodeclass(), "spec.blockDeviceMappings", builders.DELETE)
    bare = edit(bare, "spec.amiSelectorTerms", [{"id": "ami-0123"}])
    assert node_class_settings(EC2NodeClass.model_validate(bare)) == NodeClassSettings("Custom")


def test_node_class_settings_change_allocatable_through_the_catalog(us_east_1: Catalog) -> None:
    doc = edit(nodeclass(), "spec.kubelet", {"maxPods": 20})
    settings = node_class_settings(EC2NodeClass.model_validate(doc))
    assert us_east_1.instance_type("m5.xlarge", settings).allocatable["pods"] == 20
    root = us_east_1.instance_type("m5.xlarge", settings).capacity["ephemeral-storage"]
    assert root == 200 * GiB


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "spec.kubelet",
            {"kubeReserved": {"memory": "lots"}},
            "EC2NodeClass gpu: spec.kubelet.kubeReserved['memory']: ",
        ),
        (
            "spec.blockDeviceMappings[0].ebs.volumeSize",
            "big",
            "EC2NodeClass gpu: spec.blockDeviceMappings[0].ebs.volumeSize: ",
        ),
        ("spec.kubelet", {"maxPods": -1}, "EC2NodeClass gpu: max_pods must be >= 0"),
        (
            "spec.kubelet",
            {"evictionHard": {"memory.available": "x%"}},
            "EC2NodeClass gpu: evictionHard['memory.available']",
        ),
    ],
)
def test_node_class_values_the_capacity_model_cannot_use_name_the_nodeclass_and_field(
    path: str, value: object, message: str
) -> None:
    doc = EC2NodeClass.model_validate(edit(nodeclass(), path, value))
    with pytest.raises(ValueError, match=re.escape(message)):
        node_class_settings(doc)


# ---- laws -------------------------------------------------------------------------------------

node_classes = st.builds(
    NodeClassSettings,
    ami_family=st.sampled_from(sorted(cap.AMI_FAMILIES)),
    max_pods=st.none() | st.integers(0, 1000),
    pods_per_core=st.none() | st.integers(0, 50),
    kube_reserved=st.dictionaries(
        st.sampled_from(["cpu", "memory", "ephemeral-storage", "pid"]), st.integers(0, 2**40)
    ),
    system_reserved=st.dictionaries(
        st.sampled_from(["cpu", "memory", "ephemeral-storage"]), st.integers(0, 2**40)
    ),
    eviction_hard=st.dictionaries(
        st.sampled_from(["memory.available", "nodefs.available"]),
        st.sampled_from(["100Mi", "1Gi", "0", "5%", "10%", "12.5%", "100%"]),
    ),
    block_device_mappings=st.lists(
        st.builds(
            BlockDeviceSettings,
            device_name=st.sampled_from(["/dev/xvda", "/dev/xvdb", "/dev/sda1"]),
            volume_size=st.none() | st.integers(1, 2**44),
            root_volume=st.just(False),
        ),
        max_size=3,
    ).map(tuple),
    instance_store_policy=st.sampled_from([None, "RAID0"]),
    reserved_enis=st.integers(0, 3),
)

infos = st.builds(
    info,
    name=st.just("x9.test"),
    architecture=st.sampled_from(["amd64", "arm64"]),
    vcpus=st.integers(1, 448),
    memory_mib=st.integers(512, 32 * 2**20),
    max_enis_default_card=st.integers(1, 50),
    ipv4_per_eni=st.integers(2, 50),
    gpu_count=st.integers(0, 16),
    gpu_manufacturer=st.sampled_from(["nvidia", "amd", "habana"]),
    local_nvme_gb=st.integers(0, 30000),
    efa_interfaces=st.integers(0, 32),
)


@settings(max_examples=200, deadline=None)
@given(infos, node_classes)
def test_allocatable_never_exceeds_capacity(i: InstanceTypeInfo, nc: NodeClassSettings) -> None:
    it = resolve_instance_type(i, nc, region="us-east-1", zones=["us-east-1a"])
    assert set(it.allocatable) == set(it.capacity)
    assert all(it.allocatable[r] <= it.capacity[r] for r in it.capacity)


@given(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
def test_more_cpu_never_gives_less_kube_reserved_cpu(a: int, b: int) -> None:
    low, high = sorted((a, b))
    assert cap.kube_reserved_cpu_millicores(low) <= cap.kube_reserved_cpu_millicores(high)


@pytest.mark.parametrize(
    ("vcpus", "millicores"),
    [(1, 60), (2, 70), (4, 80), (8, 90), (48, 190), (96, 310)],
)
def test_kube_reserved_cpu_bands_match_the_design_examples(vcpus: int, millicores: int) -> None:
    assert cap.kube_reserved_cpu_millicores(vcpus * 1000) == millicores


def _general(requirements: dict[str, tuple[str, ...]]) -> Requirements:
    keys = sorted(WELL_KNOWN_LABEL_KEYS | set(requirements))
    return Requirements.of(
        *(
            Requirement.new(k, "In", v)
            if (v := requirements.get(k, ()))
            else Requirement.new(k, "DoesNotExist")
            for k in keys
        )
    )


def test_scheduling_requirements_are_the_general_construction_for_every_catalog_type() -> None:
    # Built directly (and memoised) for speed: the same keys, in the same order, the same sets.
    catalog = load_catalog("us-east-1")
    types = catalog.instance_types()
    assert len(types) > 1000
    for it in types:
        labels = compute_requirements(
            catalog.info(it.name), NodeClassSettings(), region=catalog.region, zones=catalog.zones
        )
        fast = scheduling_requirements(labels)
        assert fast is it.requirements, it.name
        assert list(fast.items()) == list(_general(labels).items()), it.name


def test_types_share_one_requirement_object_per_key_and_values() -> None:
    # Equal requirements are one object across types (immutable; cheaper to build and to
    # intersect, which short-cuts on identity); distinct values stay distinct objects.
    types = load_catalog("us-east-1").instance_types()
    arch = {it.requirements["kubernetes.io/arch"].values: it for it in types}
    assert set(arch) == {frozenset({"amd64"}), frozenset({"arm64"})}
    for it in types:
        expected = arch[it.requirements["kubernetes.io/arch"].values]
        assert it.requirements["kubernetes.io/arch"] is expected.requirements["kubernetes.io/arch"]
    names = {id(it.requirements["node.kubernetes.io/instance-type"]) for it in types}
    assert len(names) == len(types)


def test_a_deprecated_key_and_its_replacement_intersect_as_requirements_do() -> None:
    both = {
        "failure-domain.beta.kubernetes.io/zone": ("us-east-1a", "us-east-1b"),
        "topology.kubernetes.io/zone": ("us-east-1b",),
    }
    got = scheduling_requirements(both)
    assert list(got.items()) == list(_general(both).items())
    assert got["topology.kubernetes.io/zone"].values == frozenset({"us-east-1b"})


@pytest.mark.parametrize(
    "reqs",
    [
        Requirements(),
        Requirements.of(Requirement.new("topology.kubernetes.io/zone", "In", ["us-east-1a"])),
        Requirements.of(
            Requirement.new("topology.kubernetes.io/zone", "NotIn", ["us-east-1b", "us-east-1c"]),
            Requirement.new("karpenter.sh/capacity-type", "In", ["spot"]),
        ),
        Requirements.of(Requirement.new("karpenter.sh/capacity-type", "DoesNotExist")),
    ],
)
def test_compatible_offerings_are_the_available_ones_each_offering_allows(
    us_east_1: Catalog, reqs: Requirements
) -> None:
    # `compatible_offerings` looks the zone and capacity-type requirements up once per type;
    # the answer is `Offering.allowed_by`'s, offering by offering, in the same order.
    for it in us_east_1.instance_types():
        expected = [o for o in it.offerings if o.available and o.allowed_by(reqs)]
        assert scheduling.compatible_offerings(it, reqs) == expected, it.name
