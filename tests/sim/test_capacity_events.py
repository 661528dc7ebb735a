"""Capacity events by family, zone and capacity type (`sim/scenario.py` resolves them against
the catalog, the world closes every matching pool): "spot in us-east-1a is gone for 2h" is one
event, and Karpenter's fallback takes the other zones, through `gpucap simulate`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gpucap.cli.main import app

GOOD = Path(__file__).parent / "scenarios" / "good"
runner = CliRunner()


def _simulate(tmp_path: Path, capacity: str) -> list[dict[str, Any]]:
    for name in ("nodeclass.yaml", "nodepool.yaml", "vllm.yaml"):
        shutil.copy(GOOD / name, tmp_path / name)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: zone-gone}\n"
        "spec:\n  duration: 3h\n  manifests: [nodeclass.yaml, nodepool.yaml]\n"
        "  addons: [{name: nvidia-device-plugin}]\n"
        "  events:\n"
        f"    - {{at: 1m, capacity: {capacity}}}\n"
        "    - {at: 5m, apply: {file: vllm.yaml}}\n"
        "    - {at: 1h, scale: {kind: Deployment, name: vllm, namespace: default, replicas: 3}}\n"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    events: list[dict[str, Any]] = json.loads(result.stdout)["events"]
    return events


def _spot_launches(events: list[dict[str, Any]]) -> list[tuple[float, str]]:
    return [
        (float(e["t"]), str(e["zone"]))
        for e in events
        if e["type"] == "NodeClaimLaunched" and e.get("capacityType") == "spot"
    ]


def test_spot_gone_in_one_zone_puts_no_spot_node_there_while_it_lasts(tmp_path: Path) -> None:
    zone_free = _spot_launches(_simulate(tmp_path, "{capacityType: spot, available: true}"))
    assert any(z == "us-east-1a" for _, z in zone_free)  # the zone Karpenter picks otherwise
    events = _simulate(
        tmp_path, "{zone: us-east-1a, capacityType: spot, available: false, for: 2h}"
    )
    launches = _spot_launches(events)
    assert launches  # spot is still used, in other zones
    assert all(z != "us-east-1a" for t, z in launches if t < 60 + 2 * 3600)
    gone = [e for e in events if e["type"] == "CapacityChanged"]
    assert [(e["zone"], e["capacityType"], e["instanceType"], e["available"]) for e in gone] == [
        ("us-east-1a", "spot", None, False),
        ("us-east-1a", "spot", None, True),
    ]


def test_a_family_gone_everywhere_falls_back_to_the_other_family(tmp_path: Path) -> None:
    events = _simulate(tmp_path, "{instanceFamily: g5, available: false}")
    launched = [str(e["instanceType"]) for e in events if e["type"] == "NodeClaimLaunched"]
    assert launched
    assert not any(t.startswith("g5.") for t in launched)
    changed = [e for e in events if e["type"] == "CapacityChanged"]
    assert changed[0]["instanceFamily"] == "g5"


def test_the_timeline_names_a_family_and_a_zone_in_words(tmp_path: Path) -> None:
    for name in ("nodeclass.yaml", "nodepool.yaml", "vllm.yaml"):
        shutil.copy(GOOD / name, tmp_path / name)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: words}\n"
        "spec:\n  duration: 1h\n  manifests: [nodeclass.yaml, nodepool.yaml]\n  events:\n"
        "    - {at: 1m, capacity: {instanceFamily: g6e, zone: us-east-1a, capacityType: spot,"
        " available: false, for: 10m}}\n"
    )
    out = runner.invoke(app, ["simulate", str(scenario)]).stdout
    assert "scenario: spot g6e.* in us-east-1a: no capacity" in out
    assert "scenario: spot g6e.* in us-east-1a: capacity back" in out


def test_the_capacity_events_of_the_scenario_reference_load_as_written(tmp_path: Path) -> None:
    from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog  # noqa: PLC0415
    from gpucap.sim.scenario import load_scenario  # noqa: PLC0415

    doc = (Path(__file__).parents[2] / "docs" / "scenario.md").read_text()
    section = doc[doc.index("## Capacity events") :]
    snippet = section[
        section.index("```yaml") + 7 : section.index("```", section.index("```yaml") + 7)
    ]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: doc}\n"
        "spec:\n  duration: 6h\n" + "\n".join("  " + line for line in snippet.splitlines())
    )
    loaded = load_scenario(str(scenario), load_catalog)
    kinds = [a.capacity for a in loaded.actions if a.capacity is not None]
    assert [(c.instance_type, c.instance_family, c.zone, c.capacity_type) for c in kinds] == [
        (None, None, "us-east-1a", "spot"),
        (None, "g6e", None, None),
        ("g5.xlarge", None, "us-east-1b", "on-demand"),
    ]
