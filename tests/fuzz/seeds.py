"""The fuzzer's seeds: valid (or realistic) inputs that mutations start from.

A `Seed` is a set of files gpucap reads in one run, parsed into documents so mutations can work
on the structure (`mutations.py`), plus its *role*: which part of the command line the mutated
file is (manifests, a `--catalog` file, a `--prices` file, a lint configuration, a Scenario).
Seeds come from what the project already holds: the workshop example, every public manifest in
`tests/realworld/`, three entries of the bundled catalog, and small hand-written price, lint
configuration and Scenario files in the formats the README documents (the Scenarios with the
simulator's story manifests they name, `tests/sim/stories/`: one in the stochastic world), and a
Sweep of the first Scenario.

Called by the driver (`driver.py`) and by `bench/fuzz.py`; deterministic (sorted file lists).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from gpucap.cloudprovider.aws.instancetype.data import unpack_catalog_columns

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomllib is tomli, added to the standard library in 3.11
    import tomli as tomllib

__all__ = [
    "SCENARIO_FILE",
    "SWEEP_FILE",
    "WORKSHOP",
    "Role",
    "Seed",
    "SeedFile",
    "all_seeds",
    "workshop_files",
]

REPO = Path(__file__).resolve().parents[2]
WORKSHOP = REPO / "src" / "gpucap" / "data" / "examples" / "workshop"
REALWORLD = REPO / "tests" / "realworld"
STORIES = REPO / "tests" / "sim" / "stories"

Role = Literal["manifests", "catalog", "prices", "lint-config", "scenario", "reservations", "sweep"]
Format = Literal["yaml", "json", "toml"]


@dataclass(frozen=True, slots=True)
class SeedFile:
    """One file of a seed: its name (relative, as written in the case directory), its format and
    its parsed documents (a YAML stream may hold several; JSON and TOML hold one)."""

    name: str
    fmt: Format
    docs: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Seed:
    """A named input set. `files[target]` is the one mutations change (the others are context,
    e.g. the rest of the workshop next to the NodePool being mutated)."""

    name: str
    role: Role
    files: tuple[SeedFile, ...]


def _yaml_file(path: Path, name: str) -> SeedFile:
    docs = tuple(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None)
    return SeedFile(name, "yaml", docs)


@cache
def workshop_files() -> tuple[SeedFile, ...]:
    """The workshop example's five files (the context of catalog, prices and config seeds)."""
    return tuple(_yaml_file(p, p.name) for p in sorted(WORKSHOP.glob("*.yaml")))


def _realworld() -> list[Seed]:
    seeds = []
    for path in sorted(REALWORLD.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or path.name == "PROVENANCE.yaml":
            continue
        rel = path.relative_to(REALWORLD)
        seeds.append(
            Seed(f"realworld/{rel}", "manifests", (_yaml_file(path, path.name.replace("/", "_")),))
        )
    return seeds


def _catalog_entries() -> list[dict[str, Any]]:
    """Three real entries of the bundled catalog (a GPU type of each family the workshop asks
    for and a CPU type), in the `--catalog` file format."""
    ref = resources.files("gpucap.data.catalog").joinpath("instance-types.json")
    entries = unpack_catalog_columns(json.loads(ref.read_text(encoding="utf-8")))
    wanted = {"g5.xlarge", "g6.xlarge", "m5.large"}
    return [e for e in entries if e["name"] in wanted]


PRICES = {
    "us-east-1": {"g5.xlarge": {"on-demand": 1.006, "spot": 0.42}, "g6.xlarge": {"spot": 0.3}}
}

LINT_CONFIG = """\
[lint]
select = ["GPU", "NP", "DIS002"]
ignore = ["NP006"]
severity = { NP005 = "error", DIS002 = "info" }
cluster = ["nvidia-device-plugin"]
"""

SCENARIO = """\
apiVersion: gpucap.dev/v1alpha1
kind: Scenario
metadata:
  name: burst
spec:
  region: us-east-1
  kubernetesVersion: "1.36"
  seed: 7
  duration: 1h
  manifests: [nodeclass.yaml, nodepool.yaml, device-plugin.yaml]
  images:
    vllm/vllm-openai: {compressed: 9Gi, uncompressed: 18Gi}
  timings: {registration: 40s}
  events:
    - at: 1m
      apply: {file: vllm.yaml}
    - at: 10m
      scale: {kind: Deployment, name: vllm, replicas: 3}
    - at: 5m
      capacity: {instanceType: g5.xlarge, zone: us-east-1a, capacityType: spot, available: false, for: 20m}
    - at: 30m
      interrupt: {nodeClaim: gpu-1}
    - at: 50m
      delete: {kind: Deployment, name: vllm}
"""
# The scenario's manifests: the simulator's story files (a pinned EC2NodeClass, a g5.xlarge
# NodePool limited to 6 GPUs, the device-plugin DaemonSet, a vLLM Deployment).
SCENARIO_FILE = "scenario.yaml"
SCENARIO_MANIFESTS = ("nodeclass.yaml", "nodepool.yaml", "device-plugin.yaml", "vllm.yaml")

# A scenario in a world that does things by itself (README "A world that does things by
# itself"): spot pools reclaimed at the measured rates, and vLLM autoscaled by an HPA on the
# bundled diurnal trace; two hours, to stay well inside the fuzzer's time bound.
WORLD_SCENARIO = """\
apiVersion: gpucap.dev/v1alpha1
kind: Scenario
metadata:
  name: world
spec:
  region: us-east-1
  duration: 2h
  seed: 3
  world:
    spot: {model: measured}
  manifests: [nodeclass.yaml, nodepool.yaml, device-plugin.yaml, vllm.yaml, hpa.yaml]
  metrics:
    - {hpa: vllm, trace: "bundled:diurnal-24h", column: requests_per_second, scale: 0.05}
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: vllm, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}
  minReplicas: 1
  maxReplicas: 4
  metrics:
    - type: Pods
      pods:
        metric: {name: requests_per_second}
        target: {type: AverageValue, averageValue: "2"}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 120
      policies: [{type: Pods, value: 1, periodSeconds: 60}]
"""
# A sweep of the scenario above (`SCENARIO`): a NodePool requirement axis and an axis on the
# scenario's own timings, 2 x 2 designs of one seed each (README "Sweeps", docs/scenario.md).
SWEEP_FILE = "sweep.yaml"
SWEEP = """\
apiVersion: gpucap.dev/v1alpha1
kind: Sweep
metadata: {name: designs}
spec:
  scenario: scenario.yaml
  seeds: 1
  axes:
    - name: capacity
      target: {kind: NodePool, name: gpu}
      requirement: karpenter.sh/capacity-type
      values: [[spot, on-demand], [on-demand]]
    - name: registration
      target: {kind: Scenario, name: burst}
      path: spec.timings.registration
      values: [40s, 2m]
"""


# A DescribeCapacityReservations answer: an ODCR and a Capacity Block (`--reservations`).
RESERVATIONS = {
    "CapacityReservations": [
        {
            "CapacityReservationId": "cr-0123456789abcdef0",
            "InstanceType": "g5.xlarge",
            "AvailabilityZone": "us-east-1a",
            "OwnerId": "123456789012",
            "TotalInstanceCount": 2,
            "AvailableInstanceCount": 2,
            "InstanceMatchCriteria": "targeted",
            "ReservationType": "default",
            "State": "active",
            "Tags": [{"Key": "team", "Value": "inference"}],
        },
        {
            "CapacityReservationId": "cr-0fedcba9876543210",
            "InstanceType": "p5.48xlarge",
            "AvailabilityZone": "us-east-1b",
            "OwnerId": "123456789012",
            "TotalInstanceCount": 1,
            "AvailableInstanceCount": 1,
            "InstanceMatchCriteria": "targeted",
            "ReservationType": "capacity-block",
            "State": "scheduled",
            "StartDate": "2026-01-01T02:00:00Z",
            "EndDate": "2026-01-02T02:00:00Z",
        },
    ]
}


@cache
def all_seeds() -> tuple[Seed, ...]:
    """Every seed, in a fixed order (the case list depends on it)."""
    workshop = workshop_files()
    seeds = [Seed("workshop", "manifests", workshop)]
    seeds += _realworld()
    seeds.append(
        Seed("catalog", "catalog", (SeedFile("catalog.json", "json", (_catalog_entries(),)),))
    )
    seeds.append(Seed("prices", "prices", (SeedFile("prices.json", "json", (PRICES,)),)))
    seeds.append(
        Seed(
            "lint-config",
            "lint-config",
            (SeedFile(".gpucap.toml", "toml", (tomllib.loads(LINT_CONFIG),)),),
        )
    )
    seeds.append(
        Seed(
            "scenario",
            "scenario",
            (
                SeedFile(SCENARIO_FILE, "yaml", tuple(yaml.safe_load_all(SCENARIO))),
                *(_yaml_file(STORIES / name, name) for name in SCENARIO_MANIFESTS),
            ),
        )
    )
    seeds.append(
        Seed(
            "scenario-world",
            "scenario",
            (
                SeedFile(SCENARIO_FILE, "yaml", tuple(yaml.safe_load_all(WORLD_SCENARIO))),
                *(_yaml_file(STORIES / name, name) for name in SCENARIO_MANIFESTS),
                SeedFile("hpa.yaml", "yaml", tuple(yaml.safe_load_all(HPA))),
            ),
        )
    )
    seeds.append(
        Seed(
            "sweep",
            "sweep",
            (
                SeedFile(SWEEP_FILE, "yaml", tuple(yaml.safe_load_all(SWEEP))),
                SeedFile(SCENARIO_FILE, "yaml", tuple(yaml.safe_load_all(SCENARIO))),
                *(_yaml_file(STORIES / name, name) for name in SCENARIO_MANIFESTS),
            ),
        )
    )
    seeds.append(
        Seed(
            "reservations",
            "reservations",
            (SeedFile("reservations.json", "json", (RESERVATIONS,)),),
        )
    )
    return tuple(seeds)
