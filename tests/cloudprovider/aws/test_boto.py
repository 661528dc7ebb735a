"""BotoEC2API: the EC2API protocol over boto3, against moto's server and botocore's Stubber.

moto serves the EC2 and SSM calls. Where moto cannot help -- the Pricing API (moto has no
backend), pagination (moto's DescribeInstanceTypes ignores MaxResults), throttling, and a
failure after CreateFleet launched instances -- botocore's Stubber checks requests and
responses against the service model, and a `before-send` hook feeds real HTTP responses through
botocore's retry handler.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

from gpucap.cloudprovider.aws.ec2.api import EC2API, EC2APIError
from gpucap.cloudprovider.aws.ec2.boto import (
    DEFAULT_MAX_ATTEMPTS,
    PRICING_REGION,
    BotoEC2API,
    client_config,
    fleet_instance_ids,
)
from tests.conftest import free_port

REGION = "us-east-1"
NODEPOOL_TAGS = [
    {"Key": "karpenter.sh/nodepool", "Value": "gpu"},
    {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"},
    {"Key": "eks:eks-cluster-name", "Value": "workshop"},
]

live = pytest.mark.skipif(
    not os.environ.get("GPUCAP_LIVE_AWS"), reason="set GPUCAP_LIVE_AWS=1 to call real AWS"
)


# ---- builders -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_api(moto_env: str) -> BotoEC2API:
    """A BotoEC2API configured only by the environment (AWS_ENDPOINT_URL -> moto)."""
    return BotoEC2API.from_environment(region=REGION)


@pytest.fixture
def api(moto_api: BotoEC2API, moto: str) -> BotoEC2API:
    """`moto_api` over a freshly reset moto."""
    return moto_api


def raw_client(service: str, moto_url: str) -> Any:
    """A plain boto3 client for moto, to arrange what a test needs."""
    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    return session.client(service, endpoint_url=moto_url)


@pytest.fixture(scope="module")
def raw_ec2(moto_env: str) -> Any:
    return raw_client("ec2", moto_env)


@pytest.fixture(scope="module")
def raw_ssm(moto_env: str) -> Any:
    return raw_client("ssm", moto_env)


@pytest.fixture
def credentials(aws_isolated_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials in an otherwise empty AWS environment."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture
def stubbed(credentials: None) -> Iterator[SimpleNamespace]:
    """A BotoEC2API whose three clients are wrapped in active Stubbers."""
    config = client_config()
    ec2 = boto3.client("ec2", region_name=REGION, config=config)
    ssm = boto3.client("ssm", region_name=REGION, config=config)
    pricing = boto3.client("pricing", region_name=PRICING_REGION, config=config)
    stubs = SimpleNamespace(ec2=Stubber(ec2), ssm=Stubber(ssm), pricing=Stubber(pricing))
    for stub in (stubs.ec2, stubs.ssm, stubs.pricing):
        stub.activate()
    stubs.api = BotoEC2API(ec2=ec2, ssm=ssm, pricing=pricing)
    yield stubs
    for stub in (stubs.ec2, stubs.ssm, stubs.pricing):
        stub.assert_no_pending_responses()
        stub.deactivate()


def fleet_request(
    launch_template: str, subnet_id: str, zone: str, instance_type: str = "g5.xlarge"
) -> dict[str, Any]:
    """A CreateFleet request shaped like Karpenter's (karpenter-provisioning.md §4.4)."""
    return {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": "on-demand",
        },
        "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": launch_template,
                    "Version": "$Latest",
                },
                "Overrides": [
                    {
                        "InstanceType": instance_type,
                        "SubnetId": subnet_id,
                        "AvailabilityZone": zone,
                        "Priority": 1.006,
                    }
                ],
            }
        ],
        "TagSpecifications": [
            {"ResourceType": resource, "Tags": NODEPOOL_TAGS}
            for resource in ("instance", "volume", "fleet")
        ],
    }


def moto_image(raw_ec2: Any) -> str:
    """An AL2023 AMI from moto's catalogue (filtered: listing all of them takes a second)."""
    images = raw_ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "name", "Values": ["al2023-ami-2023*"]}]
    )["Images"]
    return str(images[0]["ImageId"])


def moto_launch_template(raw_ec2: Any) -> tuple[str, str, str]:
    """A launch template with an AMI moto knows, and a default subnet: (name, subnet, zone)."""
    image = moto_image(raw_ec2)
    raw_ec2.create_launch_template(
        LaunchTemplateName="karpenter.k8s.aws/gpu", LaunchTemplateData={"ImageId": image}
    )
    subnet = raw_ec2.describe_subnets()["Subnets"][0]
    return "karpenter.k8s.aws/gpu", subnet["SubnetId"], subnet["AvailabilityZone"]


def tags_of(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


# ---- configuration ------------------------------------------------------------------------------


def test_boto_ec2_api_satisfies_the_ec2api_protocol(api: BotoEC2API) -> None:
    assert isinstance(api, EC2API)


def test_region_comes_from_the_argument_else_the_environment(
    aws_isolated_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert BotoEC2API.from_environment().region == "eu-west-1"
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    assert BotoEC2API.from_environment().region == "eu-north-1"
    assert BotoEC2API.from_environment(region="us-west-2").region == "us-west-2"


def test_region_comes_from_the_named_profile(
    aws_isolated_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    config = tmp_path / "aws-config"
    config.write_text("[profile gpu]\nregion = ap-northeast-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    assert BotoEC2API.from_environment(profile="gpu").region == "ap-northeast-1"


def test_pricing_client_always_uses_us_east_1(aws_isolated_env: None) -> None:
    api = BotoEC2API.from_environment(region="eu-west-1")
    assert api.region == "eu-west-1"
    assert api._pricing.meta.region_name == "us-east-1"
    assert api._ssm.meta.region_name == "eu-west-1"


def test_clients_retry_throttling_with_standard_backoff(aws_isolated_env: None) -> None:
    api = BotoEC2API.from_environment(region=REGION)
    for client in (api._ec2, api._ssm, api._pricing):
        retries = client.meta.config.retries
        assert retries["mode"] == "standard"
        assert retries["total_max_attempts"] == DEFAULT_MAX_ATTEMPTS
    adaptive = BotoEC2API.from_environment(region=REGION, retry_mode="adaptive", max_attempts=8)
    assert adaptive._ec2.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 8}


def test_no_region_is_an_error_naming_the_fix(aws_isolated_env: None) -> None:
    with pytest.raises(EC2APIError) as err:
        BotoEC2API.from_environment()
    assert err.value.code == "NoRegion"
    assert "--region" in err.value.message


def test_unknown_profile_is_profile_not_found(
    aws_isolated_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EC2APIError) as err:
        BotoEC2API.from_environment(region=REGION, profile="nobody")
    assert err.value.code == "ProfileNotFound"
    monkeypatch.setenv("AWS_PROFILE", "nobody-either")
    with pytest.raises(EC2APIError) as err:
        BotoEC2API.from_environment()
    assert err.value.code == "ProfileNotFound"
    assert "'nobody-either'" in err.value.message


def test_missing_credentials_are_no_credentials(aws_isolated_env: None) -> None:
    api = BotoEC2API.from_environment(region=REGION, endpoint_url="http://127.0.0.1:9")
    with pytest.raises(EC2APIError) as err:
        api.describe_availability_zones()
    assert err.value.code == "NoCredentials"
    assert err.value.operation == "DescribeAvailabilityZones"
    assert "aws sso login" in err.value.message


def test_unreachable_endpoint_is_endpoint_connection_error(credentials: None) -> None:
    api = BotoEC2API.from_environment(
        region=REGION, endpoint_url=f"http://127.0.0.1:{free_port()}", max_attempts=1
    )
    with pytest.raises(EC2APIError) as err:
        api.describe_subnets()
    assert err.value.code == "EndpointConnectionError"
    assert err.value.operation == "DescribeSubnets"


def test_a_malformed_endpoint_url_is_invalid_configuration(aws_isolated_env: None) -> None:
    with pytest.raises(EC2APIError) as err:
        BotoEC2API.from_environment(region=REGION, endpoint_url="not a url")
    assert err.value.code == "InvalidConfiguration"


def test_explicit_endpoint_url_overrides_the_environment(
    moto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    api = BotoEC2API.from_environment(region=REGION, endpoint_url=moto)
    assert api.describe_availability_zones()["AvailabilityZones"]


# ---- EC2 against moto ---------------------------------------------------------------------------


def test_describe_instance_types_applies_karpenter_filters(api: BotoEC2API) -> None:
    response = api.describe_instance_types(
        InstanceTypes=["g5.xlarge", "m7g.large"],
        Filters=[
            {"Name": "supported-virtualization-type", "Values": ["hvm"]},
            {"Name": "processor-info.supported-architecture", "Values": ["arm64"]},
        ],
    )
    assert [t["InstanceType"] for t in response["InstanceTypes"]] == ["m7g.large"]
    assert "NextToken" not in response
    assert "ResponseMetadata" not in response


def test_describe_instance_type_offerings_lists_zones(api: BotoEC2API) -> None:
    response = api.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["g5.xlarge"]}],
    )
    zones = {o["Location"] for o in response["InstanceTypeOfferings"]}
    assert zones
    assert all(z.startswith(REGION) for z in zones)
    assert {o["InstanceType"] for o in response["InstanceTypeOfferings"]} == {"g5.xlarge"}


def test_describe_spot_price_history_prices_each_zone(api: BotoEC2API) -> None:
    response = api.describe_spot_price_history(
        InstanceTypes=["g5.xlarge"], ProductDescriptions=["Linux/UNIX"]
    )
    history = response["SpotPriceHistory"]
    assert history
    assert {h["InstanceType"] for h in history} == {"g5.xlarge"}
    assert all(float(h["SpotPrice"]) > 0 for h in history)


def test_describe_availability_zones(api: BotoEC2API) -> None:
    zones = api.describe_availability_zones()["AvailabilityZones"]
    assert {z["ZoneName"] for z in zones} >= {"us-east-1a", "us-east-1b"}


def test_create_fleet_launches_instances_tagged_in_the_request(
    api: BotoEC2API, raw_ec2: Any
) -> None:
    template, subnet, zone = moto_launch_template(raw_ec2)

    fleet = api.create_fleet(**fleet_request(template, subnet, zone))

    ids = fleet_instance_ids(fleet)
    assert len(ids) == 1
    assert fleet["Instances"][0]["InstanceType"] == "g5.xlarge"
    reservations = api.describe_instances(InstanceIds=ids)["Reservations"]
    instance = reservations[0]["Instances"][0]
    assert instance["InstanceType"] == "g5.xlarge"
    assert instance["Placement"]["AvailabilityZone"] == zone
    assert tags_of(instance).items() >= {t["Key"]: t["Value"] for t in NODEPOOL_TAGS}.items()


def test_terminate_instances_terminates_fleet_instances(api: BotoEC2API, raw_ec2: Any) -> None:
    template, subnet, zone = moto_launch_template(raw_ec2)
    ids = fleet_instance_ids(api.create_fleet(**fleet_request(template, subnet, zone)))

    response = api.terminate_instances(InstanceIds=ids)

    assert [i["InstanceId"] for i in response["TerminatingInstances"]] == ids
    state = api.describe_instances(InstanceIds=ids)["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] in {"shutting-down", "terminated"}


def test_terminating_an_unknown_instance_keeps_the_aws_error_code(api: BotoEC2API) -> None:
    with pytest.raises(EC2APIError) as err:
        api.terminate_instances(InstanceIds=["i-0123456789abcdef0"])
    assert err.value.code == "InvalidInstanceID.NotFound"
    assert err.value.operation == "TerminateInstances"


def test_create_tags_tags_the_resource(api: BotoEC2API) -> None:
    subnet = api.describe_subnets()["Subnets"][0]["SubnetId"]

    api.create_tags(Resources=[subnet], Tags=[{"Key": "karpenter.sh/discovery", "Value": "c1"}])

    found = api.describe_subnets(
        Filters=[{"Name": "tag:karpenter.sh/discovery", "Values": ["c1"]}]
    )["Subnets"]
    assert [s["SubnetId"] for s in found] == [subnet]


def test_describe_images_subnets_and_security_groups(api: BotoEC2API, raw_ec2: Any) -> None:
    image = moto_image(raw_ec2)
    assert [i["ImageId"] for i in api.describe_images(ImageIds=[image])["Images"]] == [image]
    subnets = api.describe_subnets()["Subnets"]
    assert subnets
    assert all("AvailableIpAddressCount" in s for s in subnets)
    groups = api.describe_security_groups(GroupNames=["default"])["SecurityGroups"]
    assert [g["GroupName"] for g in groups] == ["default"]


# ---- SSM against moto ---------------------------------------------------------------------------


def test_get_parameter_reads_the_value(api: BotoEC2API, raw_ssm: Any) -> None:
    name = "/gpucap/test/eks/1.31/amazon-linux-2023/x86_64/nvidia/image_id"
    raw_ssm.put_parameter(Name=name, Value="ami-0123456789abcdef0", Type="String")

    assert api.get_parameter(Name=name)["Parameter"]["Value"] == "ami-0123456789abcdef0"


def test_get_parameters_by_path_merges_every_page(api: BotoEC2API, raw_ssm: Any) -> None:
    prefix = "/gpucap/test/amis"
    for arch in ("arm64", "x86_64", "x86_64-nvidia"):
        raw_ssm.put_parameter(Name=f"{prefix}/{arch}", Value=f"ami-{arch}", Type="String")

    response = api.get_parameters_by_path(Path=prefix, Recursive=True, MaxResults=1)

    assert sorted(p["Value"] for p in response["Parameters"]) == [
        "ami-arm64",
        "ami-x86_64",
        "ami-x86_64-nvidia",
    ]
    assert "NextToken" not in response


def test_missing_parameter_is_parameter_not_found(api: BotoEC2API) -> None:
    with pytest.raises(EC2APIError) as err:
        api.get_parameter(Name="/gpucap/does-not-exist")
    assert err.value.code == "ParameterNotFound"
    assert err.value.operation == "GetParameter"
    assert isinstance(err.value.__cause__, Exception)


# ---- Stubber: what moto cannot serve ------------------------------------------------------------


def test_paginated_calls_merge_every_page(stubbed: SimpleNamespace) -> None:
    filters = [{"Name": "supported-virtualization-type", "Values": ["hvm"]}]
    stubbed.ec2.add_response(
        "describe_instance_types",
        {"InstanceTypes": [{"InstanceType": "g5.xlarge"}], "NextToken": "page-2"},
        {"Filters": filters, "MaxResults": 5},
    )
    stubbed.ec2.add_response(
        "describe_instance_types",
        {"InstanceTypes": [{"InstanceType": "m7g.large"}]},
        {"Filters": filters, "MaxResults": 5, "NextToken": "page-2"},
    )

    response = stubbed.api.describe_instance_types(Filters=filters, MaxResults=5)

    assert response == {
        "InstanceTypes": [{"InstanceType": "g5.xlarge"}, {"InstanceType": "m7g.large"}]
    }


def test_a_caller_next_token_starts_pagination_there(stubbed: SimpleNamespace) -> None:
    stubbed.ec2.add_response(
        "describe_subnets",
        {"Subnets": [{"SubnetId": "subnet-2"}]},
        {"NextToken": "page-2"},
    )
    response = stubbed.api.describe_subnets(NextToken="page-2")
    assert response == {"Subnets": [{"SubnetId": "subnet-2"}]}


def price_item(instance_type: str, usd: str) -> str:
    """One GetProducts PriceList entry (a JSON document in a string), trimmed to what matters."""
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": REGION,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                },
            },
            "terms": {
                "OnDemand": {
                    "SKU.JRTCKXETXF": {
                        "priceDimensions": {
                            "SKU.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "pricePerUnit": {"USD": usd},
                            }
                        }
                    }
                }
            },
        }
    )


def test_get_products_request_matches_the_pricing_model_and_merges_pages(
    stubbed: SimpleNamespace,
) -> None:
    filters = [
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
        {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g5.xlarge"},
    ]
    stubbed.pricing.add_response(
        "get_products",
        {
            "FormatVersion": "aws_v1",
            "PriceList": [price_item("g5.xlarge", "1.006")],
            "NextToken": "n",
        },
        {"ServiceCode": "AmazonEC2", "Filters": filters},
    )
    stubbed.pricing.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [price_item("g5.xlarge", "1.2")]},
        {"ServiceCode": "AmazonEC2", "Filters": filters, "NextToken": "n"},
    )

    response = stubbed.api.get_products(ServiceCode="AmazonEC2", Filters=filters)

    assert response["FormatVersion"] == "aws_v1"
    assert len(response["PriceList"]) == 2
    assert "NextToken" not in response


def test_throttling_is_an_ec2_api_error_and_the_next_call_succeeds(
    stubbed: SimpleNamespace,
) -> None:
    stubbed.ec2.add_client_error(
        "describe_spot_price_history",
        service_error_code="RequestLimitExceeded",
        service_message="Request limit exceeded.",
        http_status_code=503,
    )
    stubbed.ec2.add_response("describe_spot_price_history", {"SpotPriceHistory": []})

    with pytest.raises(EC2APIError) as err:
        stubbed.api.describe_spot_price_history()
    assert (err.value.code, err.value.message) == (
        "RequestLimitExceeded",
        "Request limit exceeded.",
    )
    assert err.value.operation == "DescribeSpotPriceHistory"
    assert stubbed.api.describe_spot_price_history() == {"SpotPriceHistory": []}


# ---- retries through botocore's real retry handler ----------------------------------------------

THROTTLED = (
    503,
    b"<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
    b"<Message>Request limit exceeded.</Message></Error></Errors>"
    b"<RequestID>r-1</RequestID></Response>",
)
ZONES = (
    200,
    b'<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
    b"<requestId>r-2</requestId><availabilityZoneInfo><item><zoneName>us-east-1a</zoneName>"
    b"<zoneState>available</zoneState><regionName>us-east-1</regionName></item>"
    b"</availabilityZoneInfo></DescribeAvailabilityZonesResponse>",
)


class _RawBody:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


def replay(api: BotoEC2API, responses: list[tuple[int, bytes]]) -> list[str]:
    """Answer the EC2 client's HTTP requests with `responses` in order; returns what was sent."""
    sent: list[str] = []

    def before_send(request: Any, **_: Any) -> AWSResponse:
        status, body = responses[len(sent)]
        sent.append(request.url)
        return AWSResponse(request.url, status, {}, _RawBody(body))

    api._ec2.meta.events.register("before-send.ec2.DescribeAvailabilityZones", before_send)
    return sent


@pytest.fixture
def no_backoff_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's retry sleeps, recorded instead of slept."""
    sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=sleeps.append))
    return sleeps


def test_a_throttled_call_is_retried_with_backoff_then_succeeds(
    credentials: None, no_backoff_sleep: list[float]
) -> None:
    api = BotoEC2API.from_environment(region=REGION)
    sent = replay(api, [THROTTLED, THROTTLED, ZONES])

    zones = api.describe_availability_zones()["AvailabilityZones"]

    assert [z["ZoneName"] for z in zones] == ["us-east-1a"]
    assert len(sent) == 3
    assert len(no_backoff_sleep) == 2
    assert all(0 <= s <= 20 for s in no_backoff_sleep)


def test_throttling_past_max_attempts_is_request_limit_exceeded(
    credentials: None, no_backoff_sleep: list[float]
) -> None:
    api = BotoEC2API.from_environment(region=REGION, max_attempts=2)
    sent = replay(api, [THROTTLED, THROTTLED, ZONES])

    with pytest.raises(EC2APIError) as err:
        api.describe_availability_zones()

    assert err.value.code == "RequestLimitExceeded"
    assert len(sent) == 2


# ---- CreateFleet never orphans an instance ------------------------------------------------------


def stub_fleet(stubbed: SimpleNamespace, request: dict[str, Any], ids: list[str]) -> None:
    stubbed.ec2.add_response(
        "create_fleet",
        {
            "FleetId": "fleet-0123",
            "Instances": [
                {"InstanceIds": ids, "InstanceType": "g5.xlarge", "Lifecycle": "on-demand"}
            ],
            "Errors": [],
        },
        request,
    )


def test_create_fleet_returns_instances_and_per_override_errors(stubbed: SimpleNamespace) -> None:
    request = fleet_request("karpenter.k8s.aws/gpu", "subnet-a", "us-east-1a")
    error = {
        "LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": "g5.xlarge"}},
        "Lifecycle": "spot",
        "ErrorCode": "InsufficientInstanceCapacity",
        "ErrorMessage": "We currently do not have sufficient g5.xlarge capacity.",
    }
    stubbed.ec2.add_response("create_fleet", {"FleetId": "fleet-1", "Errors": [error]}, request)

    response = stubbed.api.create_fleet(**request)

    assert response == {"FleetId": "fleet-1", "Errors": [error]}


def test_a_failure_after_create_fleet_launched_terminates_the_instances(
    stubbed: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = fleet_request("karpenter.k8s.aws/gpu", "subnet-a", "us-east-1a")
    stub_fleet(stubbed, request, ["i-0aaa", "i-0bbb"])
    stubbed.ec2.add_response(
        "terminate_instances",
        {"TerminatingInstances": [{"InstanceId": "i-0aaa"}, {"InstanceId": "i-0bbb"}]},
        {"InstanceIds": ["i-0aaa", "i-0bbb"]},
    )

    def later_step_fails(self: BotoEC2API, response: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("a later step failed")

    monkeypatch.setattr(BotoEC2API, "_finish_create_fleet", later_step_fails)

    with pytest.raises(RuntimeError, match="a later step failed") as err:
        stubbed.api.create_fleet(**request)

    assert err.value.__notes__ == ["terminated i-0aaa, i-0bbb, launched by the failed CreateFleet"]


def test_an_orphan_that_cannot_be_terminated_is_named_for_the_user(
    stubbed: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = fleet_request("karpenter.k8s.aws/gpu", "subnet-a", "us-east-1a")
    stub_fleet(stubbed, request, ["i-0aaa"])
    stubbed.ec2.add_client_error(
        "terminate_instances",
        service_error_code="UnauthorizedOperation",
        service_message="You are not authorized to perform this operation.",
        expected_params={"InstanceIds": ["i-0aaa"]},
    )

    def interrupted(self: BotoEC2API, response: dict[str, Any]) -> dict[str, Any]:
        raise KeyboardInterrupt

    monkeypatch.setattr(BotoEC2API, "_finish_create_fleet", interrupted)

    with pytest.raises(KeyboardInterrupt) as err:
        stubbed.api.create_fleet(**request)

    (note,) = err.value.__notes__
    assert "i-0aaa were launched but could not be terminated" in note
    assert "UnauthorizedOperation" in note
    assert note.endswith("terminate them by hand")


def test_a_refused_create_fleet_launches_nothing_to_clean_up(stubbed: SimpleNamespace) -> None:
    request = fleet_request("karpenter.k8s.aws/gpu", "subnet-a", "us-east-1a")
    stubbed.ec2.add_client_error(
        "create_fleet",
        service_error_code="InvalidLaunchTemplateName.NotFoundException",
        service_message="The specified launch template does not exist.",
        expected_params=request,
    )
    with pytest.raises(EC2APIError) as err:
        stubbed.api.create_fleet(**request)
    assert err.value.code == "InvalidLaunchTemplateName.NotFoundException"
    assert not hasattr(err.value, "__notes__")


def test_fleet_instance_ids_reads_every_instance_group() -> None:
    response = {
        "Instances": [
            {"InstanceIds": ["i-1", "i-2"]},
            {"InstanceIds": ["i-3"]},
            {"InstanceType": "g5.xlarge"},
            "garbage",
        ]
    }
    assert fleet_instance_ids(response) == ["i-1", "i-2", "i-3"]
    assert fleet_instance_ids({"Errors": []}) == []


# ---- real AWS -----------------------------------------------------------------------------------


@pytest.mark.live
@live
def test_live_read_only_calls_work_against_real_aws() -> None:
    api = BotoEC2API.from_environment()
    zones = api.describe_availability_zones()["AvailabilityZones"]
    assert zones
    offerings = api.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["m5.large"]}],
    )["InstanceTypeOfferings"]
    assert offerings
    ami = api.get_parameter(
        Name="/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
    )
    assert ami["Parameter"]["Value"].startswith("ami-")
