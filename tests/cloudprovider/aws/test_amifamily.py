"""Karpenter's AMI resolution, rule by rule (aws `pkg/providers/amifamily/`).

SSM parameter names are checked letter for letter against the paths Karpenter builds
(`al2023.go`, `al2.go`, `bottlerocket.go`, `windows.go` @ 1d927085) and against the templates
recorded with the bundled release data. `resolve_amis` runs on `FakeAWS`, a dict-backed
stand-in for the two EC2API calls it makes.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from typing import Any

import pytest

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.cloudprovider.aws.amifamily.releases import ssm_parameter_templates
from gpucap.cloudprovider.aws.amifamily.resolver import (
    AliasError,
    AMIDiscoveryError,
    AMIResolutionError,
    ResolvedAMI,
    UnsupportedAliasError,
    alias_parameters,
    ami_for,
    ami_requirements,
    parse_alias,
    release_version_parameter,
    resolve_amis,
    ssm_parameter_name,
    variant_for,
    variant_requirements,
)
from gpucap.cloudprovider.aws.ec2.api import EC2APIError
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.scheduling.requirements import Requirement, Requirements
from tests.builders import edit, nodeclass

EKS = "/aws/service/eks/optimized-ami"
GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
ACCEL_COUNT = "karpenter.k8s.aws/instance-accelerator-count"
ARCH = "kubernetes.io/arch"
NOW = dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc)
SELF_ACCOUNT = "111122223333"
AMAZON_ACCOUNT = "602401143452"


# ---- fake EC2API ------------------------------------------------------------------------------


class FakeAWS:
    """`get_parameter` over a dict of parameters, `describe_images` over a list of images
    (filters image-id, name, tag:K, tag-key, state; owners self/amazon/account). Records every
    request."""

    def __init__(
        self,
        parameters: dict[str, str] | None = None,
        images: list[dict[str, Any]] | None = None,
        errors: dict[str, str] | None = None,
    ) -> None:
        self.parameters = parameters or {}
        self.images = images or []
        self.errors = errors or {}
        self.parameter_calls: list[str] = []
        self.image_calls: list[dict[str, Any]] = []

    def get_parameter(self, **kwargs: Any) -> dict[str, Any]:
        name = kwargs["Name"]
        self.parameter_calls.append(name)
        if name in self.errors:
            raise EC2APIError(self.errors[name], "denied", operation="GetParameter")
        if name not in self.parameters:
            raise EC2APIError("ParameterNotFound", name, operation="GetParameter")
        return {"Parameter": {"Name": name, "Value": self.parameters[name]}}

    def describe_images(self, **kwargs: Any) -> dict[str, Any]:
        self.image_calls.append(kwargs)
        return {"Images": [i for i in self.images if self._matches(i, kwargs)]}

    @staticmethod
    def _matches(image: dict[str, Any], request: dict[str, Any]) -> bool:
        tags = {t["Key"]: t["Value"] for t in image.get("Tags", [])}
        for f in request.get("Filters", []):
            name, values = f["Name"], f["Values"]
            if name == "image-id" and image["ImageId"] not in values:
                return False
            if name == "state" and image.get("State", "available") not in values:
                return False
            if name == "name" and not any(fnmatch.fnmatch(image["Name"], v) for v in values):
                return False
            if name == "tag-key" and not set(values) & set(tags):
                return False
            if name.startswith("tag:") and tags.get(name[4:]) not in values:
                return False
        owners = request.get("Owners")
        if owners:
            aliases = {image["OwnerId"]}
            if image["OwnerId"] == SELF_ACCOUNT:
                aliases.add("self")
            if image.get("ImageOwnerAlias") == "amazon":
                aliases.add("amazon")
            return bool(aliases & set(owners))
        return True


def image(
    image_id: str,
    *,
    name: str | None = None,
    arch: str = "x86_64",
    created: str = "2026-07-14T00:00:00.000Z",
    deprecation: str | None = None,
    tags: dict[str, str] | None = None,
    owner: str = AMAZON_ACCOUNT,
    state: str = "available",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ImageId": image_id,
        "Name": name or f"image-{image_id}",
        "Architecture": arch,
        "CreationDate": created,
        "State": state,
        "OwnerId": owner,
        "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()],
    }
    if owner == AMAZON_ACCOUNT:
        out["ImageOwnerAlias"] = "amazon"
    if deprecation is not None:
        out["DeprecationTime"] = deprecation
    return out


def node_class(*terms: dict[str, Any]) -> EC2NodeClass:
    doc = edit(nodeclass(), "spec.amiSelectorTerms", list(terms))
    if not any("alias" in t for t in terms):
        doc = edit(doc, "spec.amiFamily", "AL2023")
    return EC2NodeClass.model_validate(doc)


def summary(amis: list[ResolvedAMI]) -> list[tuple[str, str | None, str]]:
    """(id, variant, arch) per resolved AMI, in the order returned."""
    return [(a.id, a.variant, a.requirements[ARCH].sorted_values()[0]) for a in amis]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


def type_requirements(catalog: Catalog, name: str) -> Requirements:
    return catalog.instance_type(name).requirements


# ---- SSM parameter names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "k8s", "expected"),
    [
        (
            "al2023@latest",
            "1.36",
            [
                (
                    f"{EKS}/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id",
                    ("standard",),
                ),
                (f"{EKS}/1.36/amazon-linux-2023/x86_64/nvidia/recommended/image_id", ("nvidia",)),
                (f"{EKS}/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id", ("neuron",)),
                (
                    f"{EKS}/1.36/amazon-linux-2023/arm64/standard/recommended/image_id",
                    ("standard",),
                ),
                (f"{EKS}/1.36/amazon-linux-2023/arm64/nvidia/recommended/image_id", ("nvidia",)),
            ],
        ),
        (
            "al2023@v20260714",
            "1.33",
            [
                (
                    f"{EKS}/1.33/amazon-linux-2023/x86_64/standard/"
                    "amazon-eks-node-al2023-x86_64-standard-1.33-v20260714/image_id",
                    ("standard",),
                ),
                (
                    f"{EKS}/1.33/amazon-linux-2023/x86_64/nvidia/"
                    "amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260714/image_id",
                    ("nvidia",),
                ),
                (
                    f"{EKS}/1.33/amazon-linux-2023/x86_64/neuron/"
                    "amazon-eks-node-al2023-x86_64-neuron-1.33-v20260714/image_id",
                    ("neuron",),
                ),
                (
                    f"{EKS}/1.33/amazon-linux-2023/arm64/standard/"
                    "amazon-eks-node-al2023-arm64-standard-1.33-v20260714/image_id",
                    ("standard",),
                ),
                (
                    f"{EKS}/1.33/amazon-linux-2023/arm64/nvidia/"
                    "amazon-eks-node-al2023-arm64-nvidia-1.33-v20260714/image_id",
                    ("nvidia",),
                ),
            ],
        ),
        (
            "al2@latest",
            "1.32",
            [
                (f"{EKS}/1.32/amazon-linux-2/recommended/image_id", ("standard",)),
                (f"{EKS}/1.32/amazon-linux-2-arm64/recommended/image_id", ("standard",)),
                (f"{EKS}/1.32/amazon-linux-2-gpu/recommended/image_id", ("neuron", "nvidia")),
            ],
        ),
        (
            "al2@v20251209",
            "1.32",
            [
                (
                    f"{EKS}/1.32/amazon-linux-2/amazon-eks-node-1.32-v20251209/image_id",
                    ("standard",),
                ),
                (
                    f"{EKS}/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20251209/image_id",
                    ("standard",),
                ),
                (
                    f"{EKS}/1.32/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20251209/image_id",
                    ("neuron", "nvidia"),
                ),
            ],
        ),
        (
            "bottlerocket@v1.46.0",
            "1.34",
            [
                (
                    "/aws/service/bottlerocket/aws-k8s-1.34/x86_64/1.46.0/image_id",
                    ("standard", "neuron"),
                ),
                ("/aws/service/bottlerocket/aws-k8s-1.34/arm64/1.46.0/image_id", ("standard",)),
                (
                    "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/1.46.0/image_id",
                    ("nvidia",),
                ),
                (
                    "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/1.46.0/image_id",
                    ("nvidia",),
                ),
            ],
        ),
        (
            "bottlerocket@latest",
            "1.34",
            [
                (
                    "/aws/service/bottlerocket/aws-k8s-1.34/x86_64/latest/image_id",
                    ("standard", "neuron"),
                ),
                ("/aws/service/bottlerocket/aws-k8s-1.34/arm64/latest/image_id", ("standard",)),
                (
                    "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/latest/image_id",
                    ("nvidia",),
                ),
                (
                    "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/latest/image_id",
                    ("nvidia",),
                ),
            ],
        ),
        (
            "windows2019@latest",
            "1.33",
            [
                (
                    "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.33/image_id",
                    (),
                )
            ],
        ),
        (
            "windows2022@latest",
            "1.35",
            [
                (
                    "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.35/image_id",
                    (),
                )
            ],
        ),
        (
            "windows2025@latest",
            "1.35",
            [
                (
                    "/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id",
                    (),
                )
            ],
        ),
    ],
)
def test_each_alias_reads_exactly_the_ssm_parameters_karpenter_builds(
    alias: str, k8s: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    assert [(p.name, p.variants) for p in alias_parameters(alias, k8s)] == expected


@pytest.mark.parametrize(
    ("alias", "k8s", "mutable", "expected"),
    [
        (
            "al2023@latest",
            "1.36",
            True,
            f"{EKS}/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id",
        ),
        (
            "al2023@v20260714",
            "1.36",
            False,
            f"{EKS}/1.36/amazon-linux-2023/x86_64/standard/"
            "amazon-eks-node-al2023-x86_64-standard-1.36-v20260714/image_id",
        ),
        ("al2@latest", "1.31", True, f"{EKS}/1.31/amazon-linux-2/recommended/image_id"),
        (
            "al2@v20251209",
            "1.31",
            False,
            f"{EKS}/1.31/amazon-linux-2/amazon-eks-node-1.31-v20251209/image_id",
        ),
        (
            "bottlerocket@latest",
            "1.36",
            True,
            "/aws/service/bottlerocket/aws-k8s-1.36/x86_64/latest/image_id",
        ),
        (
            "bottlerocket@v1.46.0",
            "1.36",
            False,
            "/aws/service/bottlerocket/aws-k8s-1.36/x86_64/1.46.0/image_id",
        ),
    ],
)
def test_latest_reads_the_mutable_recommended_parameter_and_a_pin_its_versioned_name(
    alias: str, k8s: str, mutable: bool, expected: str
) -> None:
    assert {p.mutable for p in alias_parameters(alias, k8s)} == {mutable}
    assert ssm_parameter_name(alias, k8s, "x86_64", "standard") == expected


@pytest.mark.parametrize("version", ["v1.46.0", "1.46.0", "vv1.46.0"])
def test_bottlerocket_drops_every_leading_v_of_the_version(version: str) -> None:
    name = ssm_parameter_name(f"bottlerocket@{version}", "1.34", "arm64", "nvidia")
    assert name == "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/1.46.0/image_id"


@pytest.mark.parametrize(
    ("arch", "variant", "expected"),
    [
        ("x86_64", "standard", f"{EKS}/1.32/amazon-linux-2/recommended/image_id"),
        ("amd64", "nvidia", f"{EKS}/1.32/amazon-linux-2-gpu/recommended/image_id"),
        ("x86_64", "neuron", f"{EKS}/1.32/amazon-linux-2-gpu/recommended/image_id"),
        ("arm64", "standard", f"{EKS}/1.32/amazon-linux-2-arm64/recommended/image_id"),
    ],
)
def test_al2_serves_nvidia_and_neuron_from_the_one_gpu_ami(
    arch: str, variant: str, expected: str
) -> None:
    assert ssm_parameter_name("al2@latest", "1.32", arch, variant) == expected


@pytest.mark.parametrize(
    ("alias", "arch", "variant"),
    [("al2023@latest", "arm64", "neuron"), ("al2@latest", "arm64", "nvidia")],
)
def test_there_is_no_parameter_for_an_image_the_family_does_not_build(
    alias: str, arch: str, variant: str
) -> None:
    with pytest.raises(ValueError, match="has no arm64"):
        ssm_parameter_name(alias, "1.32", arch, variant)


@pytest.mark.parametrize(
    ("family", "arch_variant", "alias_version", "variant"),
    [
        ("al2023", None, "v20260714", "nvidia"),
        ("al2023", None, "latest", "neuron"),
        ("al2", "x86_64/gpu", "v20251209", "nvidia"),
        ("al2", "arm64/standard", "latest", "standard"),
        ("bottlerocket", "x86_64/standard+neuron", "v1.46.0", "neuron"),
        ("bottlerocket", "arm64/nvidia", "latest", "nvidia"),
    ],
)
def test_parameter_names_agree_with_the_templates_bundled_with_the_release_data(
    family: str, arch_variant: str | None, alias_version: str, variant: str
) -> None:
    templates = ssm_parameter_templates()[family]
    kind = "latest" if alias_version == "latest" else "pinned"
    arch = (arch_variant or "x86_64").split("/")[0]
    if family == "al2023":
        template = templates[kind]
    elif family == "bottlerocket" and kind == "latest":
        template = templates["pinned"][arch_variant]
    else:
        template = templates[kind][arch_variant]
    expected = template.format(
        k8s="1.31",
        arch=arch,
        variant=variant,
        version=alias_version,
        versionNoV=alias_version.lstrip("v"),
    )
    assert ssm_parameter_name(f"{family}@{alias_version}", "1.31", arch, variant) == expected


@pytest.mark.parametrize(
    ("k8s", "family", "arch", "variant", "expected"),
    [
        (
            "1.36",
            "al2023",
            "x86_64",
            "nvidia",
            f"{EKS}/1.36/amazon-linux-2023/x86_64/nvidia/recommended/release_version",
        ),
        (
            "1.35",
            "al2023",
            "arm64",
            "standard",
            f"{EKS}/1.35/amazon-linux-2023/arm64/standard/recommended/release_version",
        ),
        (
            "1.32",
            "al2",
            "x86_64",
            "nvidia",
            f"{EKS}/1.32/amazon-linux-2-gpu/recommended/release_version",
        ),
        (
            "1.32",
            "al2",
            "arm64",
            "standard",
            f"{EKS}/1.32/amazon-linux-2-arm64/recommended/release_version",
        ),
        (
            "1.34",
            "bottlerocket",
            "x86_64",
            "nvidia",
            "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/latest/image_version",
        ),
    ],
)
def test_the_release_version_parameter_is_the_recommended_one_of_the_image(
    k8s: str, family: str, arch: str, variant: str, expected: str
) -> None:
    assert release_version_parameter(k8s, family, arch, variant) == expected


# ---- alias validation and version gates -------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "message"),
    [
        ("al2023", "'alias' is improperly formatted, must match the format 'family@version'"),
        ("al2023@", "'alias' is improperly formatted"),
        ("AL2023@latest", "family is not supported, must be one of the following: 'al2', 'al2023'"),
        ("ubuntu@latest", "family is not supported"),
        ("windows2022@v20260714", "windows families may only specify version 'latest'"),
        ("al2023@v1@v2", "invalid format"),
        ("al2023@" + "v" * 30, "may not be longer than 30 characters"),
    ],
)
def test_an_alias_the_crd_rejects_is_an_alias_error(alias: str, message: str) -> None:
    with pytest.raises(AliasError, match=message):
        parse_alias(alias)


def test_an_alias_parses_into_family_and_version() -> None:
    alias = parse_alias("al2023@v20260714")
    assert (alias.family, alias.version, alias.is_latest, str(alias)) == (
        "al2023",
        "v20260714",
        False,
        "al2023@v20260714",
    )
    assert parse_alias("bottlerocket@latest").is_latest


@pytest.mark.parametrize(
    ("alias", "k8s", "message"),
    [
        (
            "al2@latest",
            "1.33",
            "AL2 aliases are no longer supported on EKS 1.33+ (see https://docs.aws.amazon.com/"
            "eks/latest/userguide/kubernetes-versions-standard.html#kubernetes-1-33)",
        ),
        ("al2@v20251209", "1.36", "AL2 aliases are no longer supported on EKS 1.33+"),
        (
            "windows2025@latest",
            "1.34",
            "Windows Server 2025 requires EKS version 1.35 or higher, current version: 1.34",
        ),
    ],
)
def test_karpenter_refuses_al2_from_1_33_and_windows2025_before_1_35(
    alias: str, k8s: str, message: str
) -> None:
    with pytest.raises(UnsupportedAliasError) as err:
        alias_parameters(alias, k8s)
    assert str(err.value) == message or str(err.value).startswith(message)
    assert err.value.reason == "UnsupportedAlias"


@pytest.mark.parametrize(("alias", "k8s"), [("al2@latest", "1.32"), ("windows2025@latest", "1.35")])
def test_the_version_gates_let_the_last_and_first_supported_minor_through(
    alias: str, k8s: str
) -> None:
    assert alias_parameters(alias, k8s)


def test_an_unsupported_alias_is_refused_before_any_ssm_call() -> None:
    aws = FakeAWS()
    with pytest.raises(UnsupportedAliasError):
        resolve_amis(node_class({"alias": "al2@latest"}), "1.33", aws, now=NOW)
    assert aws.parameter_calls == []


# ---- requirements and variant choice ------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "arch", "expected"),
    [
        (
            "standard",
            "x86_64",
            [
                Requirement.new(GPU_COUNT, "DoesNotExist"),
                Requirement.new(ACCEL_COUNT, "DoesNotExist"),
                Requirement.new(ARCH, "In", ["amd64"]),
            ],
        ),
        (
            "nvidia",
            "arm64",
            [Requirement.new(GPU_COUNT, "Exists"), Requirement.new(ARCH, "In", ["arm64"])],
        ),
        (
            "neuron",
            "x86_64",
            [Requirement.new(ACCEL_COUNT, "Exists"), Requirement.new(ARCH, "In", ["amd64"])],
        ),
        (None, "arm64", [Requirement.new(ARCH, "In", ["arm64"])]),
    ],
)
def test_each_variant_carries_karpenters_requirements_plus_the_image_arch(
    variant: str | None, arch: str, expected: list[Requirement]
) -> None:
    assert ami_requirements(variant, arch) == Requirements.of(*expected)


@pytest.mark.parametrize(
    ("instance_type", "variant"),
    [
        ("g5.xlarge", "nvidia"),
        ("g6.2xlarge", "nvidia"),
        ("p4d.24xlarge", "nvidia"),
        ("g5g.xlarge", "nvidia"),
        ("m5.large", "standard"),
        ("m6g.large", "standard"),
        ("inf2.xlarge", "neuron"),
        ("trn1.2xlarge", "neuron"),
    ],
)
def test_an_instance_type_gets_the_variant_its_gpu_and_accelerator_labels_select(
    catalog: Catalog, instance_type: str, variant: str
) -> None:
    assert variant_for(type_requirements(catalog, instance_type)) == variant


def test_a_type_whose_requirements_lack_the_gpu_keys_gets_the_standard_variant() -> None:
    # Keys missing altogether (not DoesNotExist) cannot satisfy nvidia's `Exists`; standard's
    # DoesNotExist passes (Compatible lets the other side exclude keys it does not define).
    assert variant_for(Requirements.of(Requirement.new(ARCH, "In", ["amd64"]))) == "standard"
    assert not Requirements().is_compatible(variant_requirements("nvidia"))


# ---- resolve_amis: aliases --------------------------------------------------------------------

AL2023_LATEST_136 = {
    f"{EKS}/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-x86std",
    f"{EKS}/1.36/amazon-linux-2023/x86_64/nvidia/recommended/image_id": "ami-x86nv",
    f"{EKS}/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id": "ami-x86neu",
    f"{EKS}/1.36/amazon-linux-2023/arm64/standard/recommended/image_id": "ami-armstd",
    # arm64/nvidia missing: skipped
}
AL2023_IMAGES = [
    image("ami-x86std", name="amazon-eks-node-al2023-x86_64-standard-1.36-v20260714"),
    image("ami-x86nv", name="amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260714"),
    image("ami-x86neu", name="amazon-eks-node-al2023-x86_64-neuron-1.36-v20260714"),
    image("ami-armstd", name="amazon-eks-node-al2023-arm64-standard-1.36-v20260714", arch="arm64"),
    image("ami-unrelated", name="not-asked-for"),
]


def test_an_al2023_alias_resolves_one_ami_per_variant_and_skips_a_missing_parameter() -> None:
    aws = FakeAWS(AL2023_LATEST_136, AL2023_IMAGES)
    amis = resolve_amis(node_class({"alias": "al2023@latest"}), "1.36", aws, now=NOW)
    assert summary(amis) == [
        ("ami-armstd", "standard", "arm64"),
        ("ami-x86neu", "neuron", "amd64"),
        ("ami-x86nv", "nvidia", "amd64"),
        ("ami-x86std", "standard", "amd64"),
    ]
    nvidia = next(a for a in amis if a.variant == "nvidia")
    assert nvidia.requirements == ami_requirements("nvidia", "x86_64")
    assert (
        nvidia.ssm_parameter == f"{EKS}/1.36/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
    )
    assert nvidia.name == "amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260714"
    assert len(aws.parameter_calls) == 5  # arm64/nvidia was asked for too
    assert aws.image_calls == [
        {
            "Filters": [
                {
                    "Name": "image-id",
                    "Values": ["ami-x86std", "ami-x86nv", "ami-x86neu", "ami-armstd"],
                },
                {"Name": "state", "Values": ["available"]},
            ],
            "IncludeDeprecated": True,
            "MaxResults": 1000,
        }
    ]


def test_a_pinned_alias_reads_the_versioned_parameters() -> None:
    aws = FakeAWS({})
    with pytest.raises(AMIDiscoveryError):
        resolve_amis(node_class({"alias": "al2023@v20260714"}), "1.35", aws, now=NOW)
    assert aws.parameter_calls[1] == (
        f"{EKS}/1.35/amazon-linux-2023/x86_64/nvidia/"
        "amazon-eks-node-al2023-x86_64-nvidia-1.35-v20260714/image_id"
    )


def test_an_alias_with_no_readable_parameter_fails_naming_the_alias_and_kubernetes_version() -> (
    None
):
    aws = FakeAWS({}, AL2023_IMAGES)
    with pytest.raises(AMIDiscoveryError) as err:
        resolve_amis(node_class({"alias": "al2023@v20990101"}), "1.36", aws, now=NOW)
    message = str(err.value)
    assert message.startswith(
        "failed to discover any AMIs for alias al2023@v20990101 on Kubernetes 1.36"
    )
    assert aws.image_calls == []


def test_any_ssm_error_on_an_alias_parameter_only_skips_that_parameter() -> None:
    params = dict(AL2023_LATEST_136)
    denied = f"{EKS}/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id"
    aws = FakeAWS(params, AL2023_IMAGES, errors={denied: "AccessDeniedException"})
    amis = resolve_amis(node_class({"alias": "al2023@latest"}), "1.36", aws, now=NOW)
    assert "ami-x86neu" not in [a.id for a in amis]
    assert len(amis) == 3


def test_the_al2_gpu_ami_is_resolved_once_for_nvidia_and_once_for_neuron() -> None:
    aws = FakeAWS(
        {
            f"{EKS}/1.32/amazon-linux-2/recommended/image_id": "ami-al2",
            f"{EKS}/1.32/amazon-linux-2-gpu/recommended/image_id": "ami-al2gpu",
        },
        [image("ami-al2"), image("ami-al2gpu")],
    )
    amis = resolve_amis(node_class({"alias": "al2@latest"}), "1.32", aws, now=NOW)
    assert summary(amis) == [
        ("ami-al2", "standard", "amd64"),
        ("ami-al2gpu", "nvidia", "amd64"),
        ("ami-al2gpu", "neuron", "amd64"),
    ]


def test_the_bottlerocket_x86_standard_image_also_serves_neuron() -> None:
    aws = FakeAWS(
        {
            "/aws/service/bottlerocket/aws-k8s-1.34/x86_64/1.46.0/image_id": "ami-br",
            "/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/1.46.0/image_id": "ami-brnv",
        },
        [image("ami-br"), image("ami-brnv")],
    )
    amis = resolve_amis(node_class({"alias": "bottlerocket@v1.46.0"}), "1.34", aws, now=NOW)
    assert summary(amis) == [
        ("ami-br", "standard", "amd64"),
        ("ami-br", "neuron", "amd64"),
        ("ami-brnv", "nvidia", "amd64"),
    ]


def test_a_windows_alias_image_requires_windows_and_its_build() -> None:
    param = "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.35/image_id"
    aws = FakeAWS({param: "ami-win"}, [image("ami-win")])
    (ami,) = resolve_amis(node_class({"alias": "windows2022@latest"}), "1.35", aws, now=NOW)
    assert ami.requirements == Requirements.of(
        Requirement.new("kubernetes.io/os", "In", ["windows"]),
        Requirement.new("node.kubernetes.io/windows-build", "In", ["10.0.20348"]),
        Requirement.new(ARCH, "In", ["amd64"]),
    )
    assert ami.variant is None


def test_a_missing_windows_parameter_fails_the_alias() -> None:
    with pytest.raises(AMIDiscoveryError, match=re.escape("windows2019@latest on Kubernetes 1.30")):
        resolve_amis(node_class({"alias": "windows2019@latest"}), "1.30", FakeAWS(), now=NOW)


def test_an_image_of_an_unknown_architecture_is_dropped() -> None:
    aws = FakeAWS(AL2023_LATEST_136, [image("ami-x86std", arch="x86_64_mac"), *AL2023_IMAGES[1:2]])
    amis = resolve_amis(node_class({"alias": "al2023@latest"}), "1.36", aws, now=NOW)
    assert [a.id for a in amis] == ["ami-x86nv"]


# ---- resolve_amis: id, name, tags, ssmParameter terms ---------------------------------------------


def test_id_and_ssm_parameter_terms_are_one_image_id_filter_with_arch_only_requirements() -> None:
    aws = FakeAWS(
        {"/my/ami": "ami-fromssm", "/my/bad": "not-an-ami"},
        [
            image("ami-a", created="2026-07-01T00:00:00Z"),
            image("ami-b", arch="arm64"),
            image("ami-fromssm", created="2026-08-01T00:00:00Z"),
        ],
    )
    nc = node_class(
        {"id": "ami-a"},
        {"ssmParameter": "/my/ami"},
        {"ssmParameter": "/my/missing"},
        {"ssmParameter": "/my/bad"},
        {"id": "ami-b"},
    )
    amis = resolve_amis(nc, "1.36", aws, now=NOW)
    assert aws.image_calls[0]["Filters"][0] == {
        "Name": "image-id",
        "Values": ["ami-a", "ami-fromssm", "ami-b"],
    }
    assert "Owners" not in aws.image_calls[0]
    # One AMI per requirement set: the newer x86 image wins over ami-a.
    assert summary(amis) == [("ami-fromssm", None, "amd64"), ("ami-b", None, "arm64")]
    assert amis[0].requirements == ami_requirements(None, "x86_64")
    assert amis[0].ssm_parameter == "/my/ami"
    assert amis[1].ssm_parameter is None


def test_an_ssm_parameter_term_fails_on_an_error_other_than_not_found() -> None:
    aws = FakeAWS(errors={"/my/ami": "AccessDeniedException"})
    with pytest.raises(AMIResolutionError, match="resolving ssm parameter"):
        resolve_amis(node_class({"ssmParameter": "/my/ami"}), "1.36", aws, now=NOW)


@pytest.mark.parametrize(
    ("term", "filters", "owners"),
    [
        (
            {"name": "my-gpu-ami-*"},
            [{"Name": "name", "Values": ["my-gpu-ami-*"]}],
            ["self", "amazon"],
        ),
        (
            {"name": "my-gpu-ami-*", "owner": "123456789012"},
            [{"Name": "name", "Values": ["my-gpu-ami-*"]}],
            ["123456789012"],
        ),
        (
            {"tags": {"team": "ml", "gpu": "*"}},
            [{"Name": "tag-key", "Values": ["gpu"]}, {"Name": "tag:team", "Values": ["ml"]}],
            None,
        ),
        (
            {"tags": {"team": "ml"}, "owner": "self"},
            [{"Name": "tag:team", "Values": ["ml"]}],
            ["self"],
        ),
    ],
)
def test_name_and_tag_terms_use_karpenters_filters_and_owners(
    term: dict[str, Any], filters: list[dict[str, Any]], owners: list[str] | None
) -> None:
    aws = FakeAWS()
    assert resolve_amis(node_class(term), "1.36", aws, now=NOW) == []
    (request,) = aws.image_calls
    assert request["Filters"] == [*filters, {"Name": "state", "Values": ["available"]}]
    assert request.get("Owners") == owners
    assert request["IncludeDeprecated"] is True


def test_a_name_term_finds_own_and_amazon_images_but_not_another_accounts() -> None:
    aws = FakeAWS(
        images=[
            image("ami-mine", name="gpu-ami-1", owner=SELF_ACCOUNT, created="2026-01-01T00:00:00Z"),
            image(
                "ami-public", name="gpu-ami-2", owner="999999999999", created="2026-08-01T00:00:00Z"
            ),
        ]
    )
    amis = resolve_amis(node_class({"name": "gpu-ami-*"}), "1.36", aws, now=NOW)
    assert [a.id for a in amis] == ["ami-mine"]


def test_tag_terms_match_tag_values_and_any_value_with_a_star() -> None:
    aws = FakeAWS(
        images=[
            image("ami-1", tags={"gpu": "yes", "team": "ml"}),
            image("ami-2", tags={"team": "ml"}, arch="arm64"),
            image("ami-3", tags={"gpu": "no", "team": "web"}, arch="arm64"),
        ]
    )
    amis = resolve_amis(node_class({"tags": {"gpu": "*", "team": "ml"}}), "1.36", aws, now=NOW)
    assert [a.id for a in amis] == ["ami-1"]


# ---- resolve_amis: which image wins -----------------------------------------------------------

OLD = "2026-06-01T00:00:00.000Z"
NEW = "2026-07-01T00:00:00.000Z"
PAST = "2026-08-01T00:00:00.000Z"
FUTURE = "2026-12-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("images", "winner"),
    [
        ([image("ami-old", created=OLD), image("ami-new", created=NEW)], "ami-new"),
        (
            [image("ami-old", created=OLD), image("ami-new", created=NEW, deprecation=PAST)],
            "ami-old",
        ),
        (
            [
                image("ami-old", created=OLD, deprecation=PAST),
                image("ami-new", created=NEW, deprecation=PAST),
            ],
            "ami-new",
        ),
        (
            [image("ami-old", created=OLD), image("ami-new", created=NEW, deprecation=FUTURE)],
            "ami-new",
        ),
        (
            [
                image("ami-1", name="gpu-b", created=NEW),
                image("ami-2", name="gpu-a", created="2026-07-01T00:00:00.900Z"),
            ],
            "ami-1",
        ),
    ],
    ids=[
        "newest",
        "non-deprecated-beats-newer-deprecated",
        "both-deprecated-newest",
        "future-deprecation-is-not-deprecated",
        "same-second-greater-name",
    ],
)
def test_among_images_with_the_same_requirements_karpenter_keeps_one(
    images: list[dict[str, Any]], winner: str
) -> None:
    for order in (images, images[::-1]):
        aws = FakeAWS(images=order)
        nc = node_class({"id": order[0]["ImageId"]}, {"id": order[1]["ImageId"]})
        amis = resolve_amis(nc, "1.36", aws, now=NOW)
        assert [a.id for a in amis] == [winner]


def test_deprecated_is_reported_against_now() -> None:
    images = [image("ami-1", deprecation=PAST)]
    nc = node_class({"id": "ami-1"})
    before = dt.datetime(2026, 7, 31, tzinfo=dt.timezone.utc)
    assert [a.deprecated for a in resolve_amis(nc, "1.36", FakeAWS(images=images), now=before)] == [
        False
    ]
    assert [a.deprecated for a in resolve_amis(nc, "1.36", FakeAWS(images=images), now=NOW)] == [
        True
    ]


def test_a_describe_images_failure_is_a_resolution_error() -> None:
    class Failing(FakeAWS):
        def describe_images(self, **kwargs: Any) -> dict[str, Any]:
            raise EC2APIError("UnauthorizedOperation", "no", operation="DescribeImages")

    with pytest.raises(AMIResolutionError, match="describing images"):
        resolve_amis(node_class({"id": "ami-1"}), "1.36", Failing(), now=NOW)


# ---- which AMI an instance type launches with --------------------------------------------------


@pytest.mark.parametrize(
    ("instance_type", "ami_id"),
    [
        ("g5.xlarge", "ami-x86nv"),
        ("g6.2xlarge", "ami-x86nv"),
        ("m5.large", "ami-x86std"),
        ("inf2.xlarge", "ami-x86neu"),
        ("m6g.large", "ami-armstd"),
        ("g5g.xlarge", None),  # arm64/nvidia parameter missing: no compatible AMI
    ],
)
def test_each_instance_type_launches_with_the_first_compatible_resolved_ami(
    catalog: Catalog, instance_type: str, ami_id: str | None
) -> None:
    aws = FakeAWS(AL2023_LATEST_136, AL2023_IMAGES)
    amis = resolve_amis(node_class({"alias": "al2023@latest"}), "1.36", aws, now=NOW)
    chosen = ami_for(type_requirements(catalog, instance_type), amis)
    assert (chosen.id if chosen else None) == ami_id


def test_an_arch_only_ami_is_compatible_with_gpu_types_too(catalog: Catalog) -> None:
    aws = FakeAWS(images=[image("ami-custom")])
    amis = resolve_amis(node_class({"id": "ami-custom"}), "1.36", aws, now=NOW)
    chosen = ami_for(type_requirements(catalog, "g5.xlarge"), amis)
    assert chosen is not None
    assert chosen.id == "ami-custom"
