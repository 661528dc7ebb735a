"""AWSCloudProvider over SimulatedEC2: insufficient capacity and fallback, the ICE cache TTL,
the CreateFleet request Karpenter builds, and never an orphaned instance."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider, alias_readiness
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
    node_claim_for,
)
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.requirements import Requirement, Requirements
from tests.builders import edit, load, nodeclass

CATALOG = load_catalog("us-east-1")
GPU_TYPES = ["g5.xlarge", "g6.xlarge"]


class SpyEC2(SimulatedEC2):
    """SimulatedEC2 that records CreateFleet requests and can corrupt the response."""

    requests: list[dict[str, Any]]
    corrupt: bool

    def create_fleet(self, **kwargs: Any) -> dict[str, Any]:
        self.requests.append(kwargs)
        response = super().create_fleet(**kwargs)
        if self.corrupt and response["Instances"]:
            response["Instances"][0]["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] = (
                "x9.large"
            )
        return response


def provider(**nodeclass_edits: Any) -> tuple[AWSCloudProvider, SpyEC2, FakeClock]:
    doc = nodeclass("gpu")
    for path, value in nodeclass_edits.items():
        doc = edit(doc, path.replace("__", "."), value)
    nc: EC2NodeClass = load(doc).objects.nodeclasses[0]
    clock = FakeClock()
    api = SpyEC2(CATALOG, clock)
    api.requests, api.corrupt = [], False
    api.publish_amis("1.36")
    return AWSCloudProvider(api, CATALOG, clock, {"gpu": nc}, cluster_name="demo"), api, clock


def gpu_claim(
    name: str = "gpu-abcde", capacity_types: tuple[str, ...] = ("spot", "on-demand")
) -> Any:
    reqs = Requirements.of(
        Requirement.new(INSTANCE_TYPE, "In", GPU_TYPES),
        Requirement.new(CAPACITY_TYPE, "In", capacity_types),
    )
    return node_claim_for(
        name,
        "gpu",
        reqs,
        {"cpu": 3000, "memory": 12 * 2**30, "nvidia.com/gpu": 1, "pods": 1},
        node_class="gpu",
    )


def close_spot(api: SimulatedEC2) -> None:
    for name in GPU_TYPES:
        api.set_capacity(name, None, "spot", available=False)


def test_spot_is_tried_before_on_demand() -> None:
    cp, _, _ = provider()
    launched = cp.create(gpu_claim())
    assert launched.metadata.labels[CAPACITY_TYPE] == "spot"


def test_ice_on_every_spot_offering_leads_to_an_on_demand_launch() -> None:
    cp, api, _ = provider()
    close_spot(api)
    # First attempt: EC2 has no spot capacity anywhere; Karpenter deletes the NodeClaim.
    with pytest.raises(InsufficientCapacityError):
        cp.create(gpu_claim("gpu-1"))
    # Every spot offering of the allowed types is now marked, so the next try is on-demand.
    spot = [
        o
        for it in cp.instance_types_for(cp.nodeclasses["gpu"])
        if it.name in GPU_TYPES
        for o in it.offerings
        if o.capacity_type == "spot"
    ]
    assert spot
    assert not any(o.available for o in spot)
    launched = cp.create(gpu_claim("gpu-2"))
    assert launched.metadata.labels[CAPACITY_TYPE] == "on-demand"


def test_one_ice_zone_moves_the_launch_to_the_next_cheapest_pool() -> None:
    cp, api, _ = provider()
    first = cp.create(gpu_claim("a"))
    api.set_capacity(
        first.metadata.labels[INSTANCE_TYPE], first.metadata.labels[ZONE], "spot", available=False
    )
    second = cp.create(gpu_claim("b"))
    assert second.metadata.labels[CAPACITY_TYPE] == "spot"
    assert (second.metadata.labels[INSTANCE_TYPE], second.metadata.labels[ZONE]) != (
        first.metadata.labels[INSTANCE_TYPE],
        first.metadata.labels[ZONE],
    )


def test_an_ice_mark_expires_after_three_minutes() -> None:
    cp, api, clock = provider()
    close_spot(api)
    with pytest.raises(InsufficientCapacityError):
        cp.create(gpu_claim())
    key = ("spot", "g6.xlarge", "us-east-1a")
    assert cp.unavailable.is_unavailable(*key)
    clock.advance(179)
    assert cp.unavailable.is_unavailable(*key)
    clock.advance(1)
    assert not cp.unavailable.is_unavailable(*key)
    now = cp.instance_types_for(cp.nodeclasses["gpu"])
    base = CATALOG.instance_types(None)
    assert [o.available for it in now if it.name == "g6.xlarge" for o in it.offerings] == [
        o.available for it in base if it.name == "g6.xlarge" for o in it.offerings
    ]


def test_successful_fleets_still_record_their_ice_errors() -> None:
    cp, api, _ = provider()
    cheapest = cp.create(gpu_claim("probe"))
    api.set_capacity(
        cheapest.metadata.labels[INSTANCE_TYPE],
        cheapest.metadata.labels[ZONE],
        "spot",
        available=False,
    )
    cp.create(gpu_claim("next"))  # succeeds elsewhere
    assert cp.unavailable.is_unavailable(
        "spot", cheapest.metadata.labels[INSTANCE_TYPE], cheapest.metadata.labels[ZONE]
    )


def test_the_create_fleet_request_is_built_as_karpenter_builds_it() -> None:
    cp, api, _ = provider(spec__tags={"team": "ml"})
    cp.create(gpu_claim())
    (request,) = api.requests
    assert request["Type"] == "instant"
    assert request["TargetCapacitySpecification"] == {
        "DefaultTargetCapacityType": "spot",
        "TotalTargetCapacity": 1,
    }
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    overrides = request["LaunchTemplateConfigs"][0]["Overrides"]
    assert {(o["InstanceType"], o["AvailabilityZone"]) for o in overrides} == {
        (it.name, o.zone)
        for it in CATALOG.instance_types(None)
        if it.name in GPU_TYPES
        for o in it.offerings
        if o.capacity_type == "spot" and o.available
    }
    assert all(o["SubnetId"] == api.subnet_for(o["AvailabilityZone"]) for o in overrides)
    tags = {t["Key"]: t["Value"] for t in request["TagSpecifications"][0]["Tags"]}
    assert tags == {
        "karpenter.sh/nodepool": "gpu",
        "karpenter.sh/nodeclaim": "gpu-abcde",
        "karpenter.k8s.aws/ec2nodeclass": "gpu",
        "eks:eks-cluster-name": "demo",
        "kubernetes.io/cluster/demo": "owned",
        "team": "ml",
    }
    assert [s["ResourceType"] for s in request["TagSpecifications"]] == [
        "instance",
        "volume",
        "fleet",
    ]


def test_on_demand_fleets_use_lowest_price() -> None:
    cp, api, _ = provider()
    cp.create(gpu_claim(capacity_types=("on-demand",)))
    assert api.requests[0]["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}


def test_the_launched_instance_carries_the_tags_and_is_listed() -> None:
    cp, api, clock = provider()
    launched = cp.create(gpu_claim())
    instance_id = (launched.status.provider_id or "").rsplit("/", 1)[1]
    assert api.instances[instance_id].tags["karpenter.sh/nodeclaim"] == "gpu-abcde"
    assert api.instances[instance_id].advance(clock.now()) == "pending"
    clock.advance(dt.timedelta(minutes=1).total_seconds())
    assert api.instances[instance_id].advance(clock.now()) == "running"
    assert [nc.metadata.name for nc in cp.list()] == ["gpu-abcde"]


def test_an_unexpected_fleet_response_leaves_no_instance_behind() -> None:
    cp, api, _ = provider()
    original = api.create_fleet

    def broken(**kwargs: Any) -> dict[str, Any]:
        response = original(**kwargs)
        response["Instances"][0]["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] = (
            "x9.large"
        )
        return response

    api.create_fleet = broken  # type: ignore[method-assign]
    with pytest.raises(CreateError):
        cp.create(gpu_claim())
    assert all(i.terminated_at is not None for i in api.instances.values())
    assert api.instances


def test_a_missing_node_class_is_insufficient_capacity() -> None:
    cp, _, _ = provider()
    claim = gpu_claim()
    claim = claim.model_copy(
        update={
            "spec": claim.spec.model_copy(
                update={
                    "node_class_ref": claim.spec.node_class_ref.model_copy(update={"name": "nope"})
                }
            )
        }
    )
    with pytest.raises(InsufficientCapacityError):
        cp.create(claim)


def cpu_claim(name: str = "cpu-abcde") -> Any:
    reqs = Requirements.of(Requirement.new(INSTANCE_TYPE, "In", ["m5.large"]))
    return node_claim_for(name, "gpu", reqs, {"cpu": 1000, "pods": 1}, node_class="gpu")


def test_the_nvidia_ami_is_launched_for_g5_and_g6_and_the_standard_one_for_m5() -> None:
    cp, api, _ = provider()
    gpu = cp.create(gpu_claim("g"))
    cpu = cp.create(cpu_claim("c"))
    assert api.images[gpu.status.image_id or ""]["Name"].startswith(
        "amazon-eks-node-al2023-x86_64-nvidia-1.36-"
    )
    assert api.images[cpu.status.image_id or ""]["Name"].startswith(
        "amazon-eks-node-al2023-x86_64-standard-1.36-"
    )


def test_latest_follows_a_new_release_and_drifts_while_a_pinned_alias_does_not() -> None:
    latest, latest_api, clock = provider(spec__amiSelectorTerms=[{"alias": "al2023@latest"}])
    pinned, pinned_api, pinned_clock = provider(
        spec__amiSelectorTerms=[{"alias": "al2023@v20260714"}]
    )
    for api in (latest_api, pinned_api):
        api.publish_amis("1.36", recommended="v20260714")
    on_latest = latest.create(gpu_claim("a"))
    on_pinned = pinned.create(gpu_claim("b"))
    assert latest.is_drifted(on_latest) == ""
    assert pinned.is_drifted(on_pinned) == ""
    # AWS publishes a newer release and moves `recommended` to it.
    for api in (latest_api, pinned_api):
        api.publish_amis("1.36", recommended="v20260827")
    # Karpenter caches what SSM said for 24 hours: nothing drifts yet.
    assert latest.is_drifted(on_latest) == ""
    clock.advance(dt.timedelta(hours=24).total_seconds())
    pinned_clock.advance(dt.timedelta(hours=24).total_seconds())
    assert latest.is_drifted(on_latest) == "AMIDrift"
    assert pinned.is_drifted(on_pinned) == ""
    relaunched = latest.create(gpu_claim("c"))
    assert relaunched.status.image_id != on_latest.status.image_id
    assert latest.is_drifted(relaunched) == ""


def test_a_scheduled_ami_release_takes_effect_at_its_time() -> None:
    cp, api, clock = provider(spec__amiSelectorTerms=[{"alias": "al2023@latest"}])
    api.publish_amis("1.36", recommended="v20260714")
    api.schedule_ami_release(clock.now() + dt.timedelta(hours=1), "1.36", "v20260827")
    first = cp.create(gpu_claim("a"))
    assert api.images[first.status.image_id or ""]["Name"].endswith("-v20260714")
    clock.advance(dt.timedelta(hours=25).total_seconds())
    second = cp.create(gpu_claim("b"))
    assert api.images[second.status.image_id or ""]["Name"].endswith("-v20260827")


def test_changing_a_hashed_node_class_field_is_node_class_drift() -> None:
    cp, _, _ = provider()
    launched = cp.create(gpu_claim())
    assert launched.metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"] == "v6"
    assert cp.is_drifted(launched) == ""
    nc = cp.nodeclasses["gpu"]
    changed = nc.model_copy(update={"spec": nc.spec.model_copy(update={"user_data": "echo hi"})})
    cp.nodeclasses = {"gpu": changed}
    assert cp.is_drifted(launched) == "NodeClassDrift"


def test_subnet_selector_changes_do_not_count_as_node_class_drift() -> None:
    cp, _, _ = provider()
    launched = cp.create(gpu_claim())
    nc = cp.nodeclasses["gpu"]
    terms = [t.model_copy(update={"tags": {"other": "x"}}) for t in nc.spec.subnet_selector_terms]
    changed = nc.model_copy(
        update={"spec": nc.spec.model_copy(update={"subnet_selector_terms": terms})}
    )
    cp.nodeclasses = {"gpu": changed}
    assert cp.is_drifted(launched) == ""


def test_a_spot_interruption_marks_the_offering_unavailable_and_reclaims_the_instance() -> None:
    cp, api, clock = provider()
    launched = cp.create(gpu_claim())
    instance_id = (launched.status.provider_id or "").rsplit("/", 1)[1]
    deadline = api.interrupt(instance_id)
    assert deadline == clock.now() + dt.timedelta(minutes=2)
    assert api.interruption_notices() == [(instance_id, deadline)]
    cp.mark_interrupted(launched)
    labels = launched.metadata.labels
    assert cp.unavailable.is_unavailable("spot", labels[INSTANCE_TYPE], labels[ZONE])
    clock.advance(120)
    assert api.instances[instance_id].advance(clock.now()) in ("shutting-down", "terminated")
    assert api.interruption_notices() == []


def test_the_node_class_status_lists_the_resolved_amis_and_their_requirements() -> None:
    cp, _, _ = provider()
    status = cp.nodeclass_status(cp.nodeclasses["gpu"])
    assert status["conditions"] == [
        {"type": "AMIsReady", "status": "True"},
        {"type": "Ready", "status": "True"},
    ]
    by_name = {a["name"]: a for a in status["amis"]}
    nvidia = next(a for n, a in by_name.items() if "-x86_64-nvidia-" in n)
    assert {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"} in nvidia[
        "requirements"
    ]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]} in nvidia[
        "requirements"
    ]
    assert len(status["subnets"]) == len(CATALOG.zones)


def test_an_alias_whose_release_does_not_exist_makes_the_node_class_not_ready() -> None:
    # v20250101 is within the bundled list's dates and is no release.
    cp, _, _ = provider(spec__amiSelectorTerms=[{"alias": "al2023@v20250101"}])
    with pytest.raises(NodeClassNotReadyError):
        cp.create(gpu_claim())


def test_an_alias_no_ssm_parameter_of_which_exists_leaves_amis_ready_unknown() -> None:
    # aws ami.go returns the discovery error without setting AMIsReady: it stays Unknown.
    cp, _, _ = provider(spec__amiSelectorTerms=[{"alias": "al2023@v20250101"}])
    readiness = cp.nodeclass_readiness(cp.nodeclasses["gpu"])
    assert (readiness.status, readiness.condition, readiness.reason) == ("Unknown", "AMIsReady", "")
    assert readiness.message.startswith(
        "failed to discover any AMIs for alias al2023@v20250101 on Kubernetes 1.36 (al2023 "
        "releases gpucap knows for Kubernetes 1.36: v20260827, v20260714, "
    )
    status = cp.nodeclass_status(cp.nodeclasses["gpu"])
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("AMIsReady", "Unknown"),
        ("Ready", "Unknown"),
    ]


def test_an_al2_alias_on_kubernetes_1_33_or_later_sets_amis_ready_false_unsupported() -> None:
    cp, _, _ = provider(spec__amiSelectorTerms=[{"alias": "al2@latest"}])
    readiness = cp.nodeclass_readiness(cp.nodeclasses["gpu"])
    assert (readiness.status, readiness.reason) == ("False", "UnsupportedAlias")


def test_selector_terms_that_match_no_image_set_amis_ready_false_ami_not_found() -> None:
    cp, _, _ = provider(
        spec__amiSelectorTerms=[{"id": "ami-0123456789abcdef0"}], spec__amiFamily="AL2023"
    )
    readiness = cp.nodeclass_readiness(cp.nodeclasses["gpu"])
    assert (readiness.status, readiness.reason) == ("False", "AMINotFound")


def test_plan_and_lint_take_a_class_with_its_own_amis_as_ready() -> None:
    cp, _, _ = provider(
        spec__amiSelectorTerms=[{"id": "ami-0123456789abcdef0"}], spec__amiFamily="AL2023"
    )
    assert alias_readiness(cp, cp.nodeclasses.values())["gpu"].ready


@pytest.mark.parametrize(
    "alias", ["bottlerocket@latest", "bottlerocket@v1.40.0", "windows2022@latest"]
)
def test_an_alias_of_a_family_gpucap_has_no_release_data_for_resolves(alias: str) -> None:
    cp, _, _ = provider(spec__amiSelectorTerms=[{"alias": alias}])
    assert cp.nodeclass_readiness(cp.nodeclasses["gpu"]).ready


def test_a_release_pinned_after_the_bundled_list_is_assumed_to_exist_with_every_variant() -> None:
    cp, api, _ = provider(spec__amiSelectorTerms=[{"alias": "al2023@v20990101"}])
    launched = cp.create(gpu_claim())
    assert api.release_of(launched.status.image_id or "") == "v20990101"
    names = {i["Name"] for i in api.images.values() if i["Name"].endswith("-v20990101")}
    assert len(names) == 5  # x86_64 standard/nvidia/neuron, arm64 standard/nvidia
