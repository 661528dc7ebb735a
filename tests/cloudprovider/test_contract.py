"""One contract, every CloudProvider: the fake, AWSCloudProvider over SimulatedEC2 (and over
moto, in test_contract_moto.py when moto's server is available)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import (
    CloudProvider,
    FakeCloudProvider,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    node_claim_for,
)
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.requirements import Requirement, Requirements
from tests.builders import edit, load, nodeclass, nodepool

CATALOG = load_catalog("us-east-1")
NODECLASS: EC2NodeClass = load(nodeclass("default")).objects.nodeclasses[0]
NODEPOOL: NodePool = load(
    edit(nodepool("default"), "spec.template.spec.nodeClassRef.name", "default")
).objects.nodepools[0]


def fake() -> CloudProvider:
    return FakeCloudProvider(CATALOG.instance_types(None))


def aws_simulated() -> CloudProvider:
    clock = FakeClock()
    api = SimulatedEC2(CATALOG, clock)
    api.publish_amis("1.36")
    return AWSCloudProvider(api, CATALOG, clock, {"default": NODECLASS})


def aws_moto(endpoint: str) -> CloudProvider:
    """AWSCloudProvider over boto3 against moto's server (AWS_ENDPOINT_URL). moto refuses the
    reserved `/aws/service/...` SSM parameters, so AMIs come from one of moto's own images."""
    from gpucap.cloudprovider.aws.ec2.boto import BotoEC2API  # noqa: PLC0415 - moto tests only

    api = BotoEC2API.from_environment(region="us-east-1", endpoint_url=endpoint)
    image_id = api.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]

    @dataclass(frozen=True)
    class Image:
        id: str
        requirements: Requirements

    return AWSCloudProvider(
        api,
        CATALOG,
        FakeClock(),
        {"default": NODECLASS},
        images=lambda _nc: [Image(image_id, Requirements())],
    )


PROVIDERS: dict[str, Callable[[], CloudProvider]] = {"fake": fake, "aws+simulated": aws_simulated}


@pytest.fixture(params=[*sorted(PROVIDERS), "aws+moto"])
def provider(request: pytest.FixtureRequest) -> CloudProvider:
    if request.param == "aws+moto":
        return aws_moto(request.getfixturevalue("moto"))
    return PROVIDERS[request.param]()


def claim(name: str = "default-abcde", **reqs: list[str]) -> Any:
    keys = {"instance_type": INSTANCE_TYPE, "zone": ZONE, "capacity_type": CAPACITY_TYPE}
    requirements = Requirements.of(
        *(Requirement.new(keys[k], "In", v) for k, v in reqs.items()),
        Requirement.new("kubernetes.io/arch", "In", ["amd64"]),
    )
    return node_claim_for(
        name,
        "default",
        requirements,
        {"cpu": 1000, "memory": 2**30, "pods": 1},
        labels={"team": "ml"},
    )


def test_create_returns_the_launched_node_claim(provider: CloudProvider) -> None:
    launched = provider.create(claim(instance_type=["m5.large", "m5.xlarge"]))
    assert launched.status.provider_id
    assert launched.metadata.labels[INSTANCE_TYPE] in ("m5.large", "m5.xlarge")
    assert launched.metadata.labels[ZONE].startswith("us-east-1")
    assert launched.metadata.labels[CAPACITY_TYPE] in ("spot", "on-demand")
    assert launched.metadata.labels["team"] == "ml"  # the NodeClaim's own labels win
    assert launched.status.capacity["cpu"].milli_value() >= 2000
    assert all(not q.is_zero() for q in launched.status.capacity.values())
    assert "nvidia.com/gpu" not in launched.status.allocatable


def test_create_honours_zone_and_capacity_type(provider: CloudProvider) -> None:
    launched = provider.create(
        claim(instance_type=["m5.large"], zone=["us-east-1c"], capacity_type=["on-demand"])
    )
    labels = launched.metadata.labels
    assert (labels[ZONE], labels[CAPACITY_TYPE]) == ("us-east-1c", "on-demand")


def test_get_and_list_return_what_was_created(provider: CloudProvider) -> None:
    launched = provider.create(claim(instance_type=["m5.large"]))
    provider_id = launched.status.provider_id or ""
    assert provider.get(provider_id).status.provider_id == provider_id
    assert provider_id in [nc.status.provider_id for nc in provider.list()]


def test_deleted_instances_are_not_found(provider: CloudProvider) -> None:
    launched = provider.create(claim(instance_type=["m5.large"]))
    provider.delete(launched)
    with pytest.raises(NodeClaimNotFoundError):
        provider.get(launched.status.provider_id or "")
    with pytest.raises(NodeClaimNotFoundError):
        provider.delete(launched)
    assert launched.status.provider_id not in [nc.status.provider_id for nc in provider.list()]


def test_an_unknown_provider_id_is_not_found(provider: CloudProvider) -> None:
    with pytest.raises(NodeClaimNotFoundError):
        provider.get("aws:///us-east-1a/i-00000000000000000")


def test_impossible_requirements_are_insufficient_capacity(provider: CloudProvider) -> None:
    with pytest.raises(InsufficientCapacityError) as info:
        provider.create(claim(instance_type=["x9.nonexistent"]))
    assert str(info.value).startswith("insufficient capacity, ")


def test_instance_types_are_listed_for_a_nodepool(provider: CloudProvider) -> None:
    names = {it.name for it in provider.get_instance_types(NODEPOOL)}
    assert {"m5.large", "g5.xlarge"} <= names


def test_a_fresh_node_claim_is_not_drifted(provider: CloudProvider) -> None:
    launched = provider.create(claim(instance_type=["m5.large"]))
    assert provider.is_drifted(launched) == ""


def test_the_provider_has_a_name(provider: CloudProvider) -> None:
    assert provider.name() in ("fake", "aws")
