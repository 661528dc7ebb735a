"""The missing-EC2NodeClass policy, in one place (`AWSCloudProvider(default_nodeclass=...)`):
Karpenter's answer by default (no instance types, create fails), the default class when given."""

from __future__ import annotations

import pytest

from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.aws.cloudprovider import DEFAULT_EC2NODECLASS, AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings, node_class_settings
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import InsufficientCapacityError, node_claim_for
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.requirements import Requirement, Requirements
from tests.builders import load, nodepool

CATALOG = load_catalog("us-east-1")
ORPHAN: NodePool = load(nodepool("gpu")).objects.nodepools[0]  # its EC2NodeClass "gpu" is absent


def provider(*, default: bool) -> AWSCloudProvider:
    clock = FakeClock()
    api = SimulatedEC2(CATALOG, clock)
    api.publish_amis("1.36")
    return AWSCloudProvider(
        api, CATALOG, clock, {}, default_nodeclass=DEFAULT_EC2NODECLASS if default else None
    )


def claim() -> NodeClaim:
    reqs = Requirements.of(Requirement.new("node.kubernetes.io/instance-type", "In", ["g5.xlarge"]))
    return node_claim_for("gpu-1", "gpu", reqs, {"nvidia.com/gpu": 1}, node_class="gpu")


def test_the_default_class_is_the_capacity_models_defaults() -> None:
    assert node_class_settings(DEFAULT_EC2NODECLASS) == NodeClassSettings()


def test_without_a_default_a_nodepool_whose_class_is_missing_gets_no_instance_types() -> None:
    assert provider(default=False).get_instance_types(ORPHAN) == ()


def test_without_a_default_creating_for_a_missing_class_is_insufficient_capacity() -> None:
    with pytest.raises(InsufficientCapacityError, match="ec2nodeclasses 'gpu' not found"):
        provider(default=False).create(claim())


def test_with_a_default_the_missing_class_answers_as_the_default_one() -> None:
    types = provider(default=True).get_instance_types(ORPHAN)
    assert types is CATALOG.instance_types(NodeClassSettings())


def test_with_a_default_a_claim_for_the_missing_class_launches() -> None:
    launched = provider(default=True).create(claim())
    assert launched.metadata.labels["node.kubernetes.io/instance-type"] == "g5.xlarge"
