"""The simulator's bus hears what changed from the cluster's and EC2's own change feeds
(`Cluster.watch`, `SimulatedEC2.watch`, wired in `World._wire`): no actor reports a change it
made by hand, so a mutation cannot be made without the loops that read it waking."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpucap.sim
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.runtime.clock import FakeClock
from tests.builders import load, nodepool
from tests.sim import laws
from tests.state.builders import node

SIM = Path(gpucap.sim.__file__).parent
_HAND = {"changed", "claims_changed", "cluster_changed", "ec2_changed"}


def _hand_reports(path: Path) -> list[str]:
    out = []
    for call in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _HAND
        ):
            out.append(f"{path.name}:{call.lineno}: .{call.func.attr}()")
    return out


@pytest.mark.parametrize("path", sorted(SIM.glob("*.py")), ids=lambda p: p.name)
def test_no_actor_reports_a_change_by_hand(path: Path) -> None:
    if path.name == "bus.py":  # the feeds' subscriber itself
        return
    assert _hand_reports(path) == []


def test_the_world_wires_the_bus_to_both_feeds() -> None:
    world, _ = laws.ROLLING.run()
    heard: list[str] = []
    world.bus.changed = lambda: heard.append("changed")  # type: ignore[method-assign]
    world.bus.claims_changed = lambda: heard.append("claims")  # type: ignore[method-assign]
    world.cluster.apply(load(nodepool(name="other")).objects.nodepools[0])
    world.ec2.set_capacity("g5.xlarge", available=False)
    world.cluster.add_node(load(node("ip-9")).objects.nodes[0])
    assert heard == ["changed", "changed", "claims", "changed"]


CATALOG = load_catalog("us-east-1")


def _watched() -> tuple[SimulatedEC2, list[str]]:
    api = SimulatedEC2(CATALOG, FakeClock())
    heard: list[str] = []
    api.watch(heard.append)
    return api, heard


def test_ec2_tells_its_watchers_of_a_pool_opened_or_closed() -> None:
    api, heard = _watched()
    api.set_capacity("g5.xlarge", "us-east-1a", "spot", available=False)
    assert heard == ["capacity"]


def test_ec2_tells_its_watchers_of_a_launch_and_a_termination() -> None:
    api, heard = _watched()
    launched = api.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "DefaultTargetCapacityType": "on-demand",
            "TotalTargetCapacity": 1,
        },
        LaunchTemplateConfigs=[
            {"Overrides": [{"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a"}]}
        ],
    )
    instance_id = launched["Instances"][0]["InstanceIds"][0]
    api.terminate_instances(InstanceIds=[instance_id])
    assert heard == ["instances", "instances"]


def test_ec2_tells_its_watchers_of_a_published_ami_release() -> None:
    api, heard = _watched()
    api.publish_release("1.33", "v20261101")
    assert heard == ["images"]
