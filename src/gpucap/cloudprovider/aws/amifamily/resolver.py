"""Karpenter's AMI resolution for an EC2NodeClass: aliases, SSM parameters, AMI requirements.

Pure except for the calls made through the EC2 API seam (`ec2/api.py`: `get_parameter`,
`describe_images`). Source: `aws/karpenter-provider-aws` @ `1d927085` (2026-08-21),
`pkg/providers/amifamily/{ami.go,types.go,al2023.go,al2.go,bottlerocket.go,windows.go}`,
`pkg/providers/ssm/{types.go,provider.go}`, `pkg/apis/v1/ec2nodeclass.go` (alias parsing) and
the EC2NodeClass CRD (alias validation).

Aliases (`family@version`; `latest` is mutable, anything else is a pinned release):

- al2023: for x86_64 the variants standard, nvidia and neuron, for arm64 standard and nvidia,
  each at `/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<variant>/<name>/
  image_id`, where `<name>` is `recommended` for `latest`, else
  `amazon-eks-node-al2023-<arch>-<variant>-<k8s>-<version>`.
- al2: `amazon-linux-2` (x86_64 standard), `amazon-linux-2-arm64` (arm64 standard) and
  `amazon-linux-2-gpu` (x86_64, serving both nvidia and neuron), named `recommended` or
  `amazon-eks-node-`, `amazon-eks-arm64-node-`, `amazon-eks-gpu-node-<k8s>-<version>`.
  Refused on Kubernetes >= 1.33 (`UnsupportedAliasError`, Karpenter's message).
- bottlerocket: `/aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<arch>/<version>/image_id`
  with every leading `v` of the version removed (`latest` stays `latest`); the x86_64 standard
  image serves standard and neuron, the `-nvidia` images nvidia.
- windows2019/2022/2025 (`latest` only): one parameter,
  `/aws/service/ami-windows-latest/Windows_Server-<year>-English-Core-EKS_Optimized-<k8s>/
  image_id`; its AMI requires `kubernetes.io/os In [windows]` and the Windows build label.
  windows2025 needs Kubernetes >= 1.35.

Each resolved image gets the requirements of the variants its parameter serves (standard:
`instance-gpu-count` and `instance-accelerator-count` DoesNotExist; nvidia: gpu-count Exists;
neuron: accelerator-count Exists) plus `kubernetes.io/arch In [<image arch>]`. A parameter
that cannot be read is skipped; an alias with none readable fails (`AMIDiscoveryError`).
Non-alias terms: `id`s and the values of `ssmParameter`s are one `image-id` filter; a term with
`name` searches owners `self` and `amazon` unless `owner` is set; a tag value `*` is a
`tag-key` filter. Those images get only the arch requirement. Every DescribeImages call adds
`state=available` and includes deprecated images. Among images with the same requirements the
non-deprecated one wins, then the newest CreationDate (to the second), then the greater name.
The result is sorted as `status.amis` is: newest CreationDate first, then ID.
At launch (and for AMI drift) an instance type takes the first AMI whose requirements its own
are compatible with (`ami_for`).

Where Karpenter's code says more than karpenter-provisioning.md §1.3 and
karpenter-disruption.md §4.3 (the code wins):

- An image is deprecated only once its `DeprecationTime` has passed (`<= now`); an image with
  a future deprecation time is not (`ami.go: amis`). `resolve_amis` takes `now`.
- A Windows alias reads one parameter and fails if it is missing; "skipped, fail only if none"
  applies to the AL2023, AL2 and Bottlerocket aliases (`windows.go`).
- The alias family must be written in lower case (`amiFamilyFromAlias` compares the lower-cased
  family names with the alias as written; the CRD's family rule does the same), and the AL2 and
  Windows2025 version checks look only at the minor number (`ami.go`).
- An `ssmParameter` term whose parameter is missing (`ParameterNotFound`) or whose value does
  not start with `ami-` is skipped; any other SSM error fails the resolution (`ami.go`). A
  term with `owner` but no `name` searches only that owner; a tags-only term has no owner
  filter at all.
- Karpenter iterates Go maps (random order) over the alias parameters, tag filters and image
  IDs; gpucap uses a fixed order (x86_64 before arm64, standard/nvidia/neuron, sorted tag
  keys). Should two alias parameters name the same image, Karpenter keeps one of their variant
  sets at random; gpucap keeps the union.
- Arch other than x86_64/arm64 (e.g. `x86_64_mac`) is dropped (`AWSToKubeArchitectures`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import (
    ARCH,
    INSTANCE_ACCELERATOR_COUNT,
    INSTANCE_GPU_COUNT,
    OS,
    WINDOWS_BUILD,
)
from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.runtime.rfc3339 import parse_rfc3339
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = [
    "ALIAS_FAMILIES",
    "ALIAS_VERSION_LATEST",
    "VARIANTS",
    "WINDOWS_BUILDS",
    "AMIDiscoveryError",
    "AMIQueryAPI",
    "AMIResolutionError",
    "Alias",
    "AliasError",
    "AliasParameter",
    "ImageQuery",
    "KnownVariant",
    "ResolvedAMI",
    "UnsupportedAliasError",
    "alias_parameters",
    "ami_for",
    "ami_requirements",
    "image_queries",
    "parse_alias",
    "release_version_parameter",
    "resolve_amis",
    "ssm_parameter_name",
    "variant_for",
    "variant_requirements",
]

ALIAS_FAMILIES: Final = (
    "al2",
    "al2023",
    "bottlerocket",
    "windows2019",
    "windows2022",
    "windows2025",
)
ALIAS_VERSION_LATEST: Final = "latest"
VARIANTS: Final = ("standard", "nvidia", "neuron")
WINDOWS_BUILDS: Final = {
    "windows2019": "10.0.17763",
    "windows2022": "10.0.20348",
    "windows2025": "10.0.26100",
}
# EC2 architecture -> kubernetes.io/arch (Karpenter's AWSToKubeArchitectures).
KUBE_ARCHITECTURES: Final = {"x86_64": "amd64", "arm64": "arm64"}
# The variants Karpenter queries per architecture for an al2023 alias.
AL2023_VARIANTS: Final = {"x86_64": VARIANTS, "arm64": ("standard", "nvidia")}
_ALIAS_MAX_LENGTH: Final = 30
_ALIAS_SYNTAX = re.compile(r"^[a-zA-Z0-9]+@.+$")
# ASCII digits, and few of them: int() of a 5,000-digit minor raises (an internal error).
_K8S_MINOR = re.compile(r"^(\d{1,9})\.(\d{1,9})$", re.ASCII)
_EKS_AMI = "/aws/service/eks/optimized-ami"
_AL2_MAX_MINOR: Final = 32  # AL2 aliases are refused from 1.33
_WINDOWS2025_MIN_MINOR: Final = 35
_DESCRIBE_IMAGES_PAGE: Final = 1000
_NOT_FOUND: Final = "ParameterNotFound"


# ==== errors ===================================================================================


class AMIResolutionError(Exception):
    """AMIs could not be resolved for a node class. `reason` is the EC2NodeClass `AMIsReady`
    condition reason Karpenter sets, when it sets one."""

    reason: str | None = None


class AliasError(AMIResolutionError, ValueError):
    """An alias the EC2NodeClass CRD rejects (the message is the CRD's)."""


class UnsupportedAliasError(AMIResolutionError):
    """An alias this Kubernetes version cannot use (AL2 on >= 1.33, Windows2025 on < 1.35)."""

    reason = "UnsupportedAlias"


class AMIDiscoveryError(AMIResolutionError):
    """No SSM parameter of an alias could be read. Karpenter's AMI reconciler returns the error
    without setting a condition, so AMIsReady stays Unknown (pkg/controllers/nodeclass/ami.go).
    `alias` and `kubernetes_version` say which (for messages that name the known releases)."""

    def __init__(self, message: str, *, alias: Alias | None = None, kubernetes_version: str = ""):
        super().__init__(message)
        self.alias = alias
        self.kubernetes_version = kubernetes_version


# ==== aliases and SSM parameter names ===========================================================


@dataclass(frozen=True, slots=True)
class Alias:
    family: str
    version: str

    @property
    def is_latest(self) -> bool:
        """`latest` reads a mutable parameter: a new release drifts the nodes."""
        return self.version == ALIAS_VERSION_LATEST

    @property
    def is_windows(self) -> bool:
        return self.family in WINDOWS_BUILDS

    def __str__(self) -> str:
        return f"{self.family}@{self.version}"


def parse_alias(text: str) -> Alias:
    """`family@version`, validated as the EC2NodeClass CRD validates it."""
    if len(text) > _ALIAS_MAX_LENGTH:
        raise AliasError(f"alias {text!r}: may not be longer than {_ALIAS_MAX_LENGTH} characters")
    if not _ALIAS_SYNTAX.match(text):
        raise AliasError("'alias' is improperly formatted, must match the format 'family@version'")
    family, _, version = text.partition("@")
    if family not in ALIAS_FAMILIES:
        raise AliasError(
            "family is not supported, must be one of the following: "
            + ", ".join(f"'{f}'" for f in ALIAS_FAMILIES)
        )
    if "@" in version:
        # The CRD admits it; Karpenter then fails to parse the alias (two '@').
        raise AliasError(f"failed to parse AMI alias {text!r}, invalid format")
    if family in WINDOWS_BUILDS and version != ALIAS_VERSION_LATEST:
        raise AliasError("windows families may only specify version 'latest'")
    return Alias(family, version)


@dataclass(frozen=True, slots=True)
class AliasParameter:
    """One SSM parameter an alias reads, and what the image it names serves."""

    name: str
    # EC2 architecture the parameter is for (None for Windows: the image decides).
    arch: str | None
    # Karpenter variants whose requirements the image gets (empty for Windows).
    variants: tuple[str, ...]
    # `latest`: the value changes with each release (Karpenter's IsMutable).
    mutable: bool


def alias_parameters(alias: Alias | str, kubernetes_version: str) -> tuple[AliasParameter, ...]:
    """Every SSM parameter Karpenter reads for `alias` on a cluster of `kubernetes_version`.

    Raises `UnsupportedAliasError` where Karpenter refuses the alias for that version.
    """
    alias = parse_alias(alias) if isinstance(alias, str) else alias
    k8s = _k8s(kubernetes_version)
    _check_supported(alias, k8s)
    mutable = alias.is_latest
    if alias.family == "al2023":
        return tuple(
            AliasParameter(
                _al2023_name(k8s, arch, variant, alias.version), arch, (variant,), mutable
            )
            for arch, variants in AL2023_VARIANTS.items()
            for variant in variants
        )
    if alias.family == "al2":
        return tuple(
            AliasParameter(_al2_name(k8s, arch, gpu, alias.version), arch, variants, mutable)
            for arch, gpu, variants in (
                ("x86_64", False, ("standard",)),
                ("arm64", False, ("standard",)),
                ("x86_64", True, ("neuron", "nvidia")),
            )
        )
    if alias.family == "bottlerocket":
        return tuple(
            AliasParameter(_bottlerocket_name(k8s, arch, nvidia, alias.version), arch, v, mutable)
            for arch, nvidia, v in (
                ("x86_64", False, ("standard", "neuron")),
                ("arm64", False, ("standard",)),
                ("x86_64", True, ("nvidia",)),
                ("arm64", True, ("nvidia",)),
            )
        )
    return (AliasParameter(_windows_name(k8s, alias.family), None, (), True),)


def ssm_parameter_name(
    alias: Alias | str, kubernetes_version: str, arch: str = "x86_64", variant: str = "standard"
) -> str:
    """The SSM parameter Karpenter reads for one arch/variant of `alias` (AL2: nvidia and neuron
    share the GPU AMI's; Windows ignores arch and variant)."""
    alias = parse_alias(alias) if isinstance(alias, str) else alias
    arch, variant = _ec2_arch(arch), _variant(variant)
    for p in alias_parameters(alias, kubernetes_version):
        if p.arch in (arch, None) and (not p.variants or variant in p.variants):
            return p.name
    raise ValueError(f"{alias} has no {arch} {variant} image")


def release_version_parameter(
    kubernetes_version: str, family: str = "al2023", arch: str = "x86_64", variant: str = "standard"
) -> str:
    """The public SSM parameter holding the newest release of an EKS-optimized AMI
    (`.../recommended/release_version`, e.g. `1.36.2-20260714`); for Bottlerocket the
    `latest/image_version` parameter Bottlerocket publishes (not read by Karpenter)."""
    k8s, arch, variant = _k8s(kubernetes_version), _ec2_arch(arch), _variant(variant)
    if family == "al2023":
        if variant not in AL2023_VARIANTS[arch]:
            raise ValueError(f"al2023 has no {arch} {variant} AMI")
        return f"{_EKS_AMI}/{k8s}/amazon-linux-2023/{arch}/{variant}/recommended/release_version"
    if family == "al2":
        if arch == "arm64" and variant != "standard":
            raise ValueError(f"al2 has no arm64 {variant} AMI")
        return (
            f"{_EKS_AMI}/{k8s}/{_al2_path(arch, variant != 'standard')}/recommended/release_version"
        )
    if family == "bottlerocket":
        nvidia = "-nvidia" if variant == "nvidia" else ""
        return f"/aws/service/bottlerocket/aws-k8s-{k8s}{nvidia}/{arch}/latest/image_version"
    raise ValueError(f"no release-version parameter for AMI family {family!r}")


def _check_supported(alias: Alias, k8s: str) -> None:
    minor = _k8s_minor(k8s)
    if alias.family == "al2" and minor > _AL2_MAX_MINOR:
        raise UnsupportedAliasError(
            "AL2 aliases are no longer supported on EKS 1.33+ (see https://docs.aws.amazon.com/"
            "eks/latest/userguide/kubernetes-versions-standard.html#kubernetes-1-33)"
        )
    if alias.family == "windows2025" and minor < _WINDOWS2025_MIN_MINOR:
        raise UnsupportedAliasError(
            f"Windows Server 2025 requires EKS version 1.35 or higher, current version: {k8s}"
        )


def _al2023_name(k8s: str, arch: str, variant: str, version: str) -> str:
    name = (
        "recommended"
        if version == ALIAS_VERSION_LATEST
        else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
    )
    return f"{_EKS_AMI}/{k8s}/amazon-linux-2023/{arch}/{variant}/{name}/image_id"


def _al2_path(arch: str, gpu: bool) -> str:
    if gpu:
        return "amazon-linux-2-gpu"
    return "amazon-linux-2-arm64" if arch == "arm64" else "amazon-linux-2"


def _al2_name(k8s: str, arch: str, gpu: bool, version: str) -> str:
    if gpu:
        prefix = "amazon-eks-gpu-node"
    else:
        prefix = "amazon-eks-arm64-node" if arch == "arm64" else "amazon-eks-node"
    name = "recommended" if version == ALIAS_VERSION_LATEST else f"{prefix}-{k8s}-{version}"
    return f"{_EKS_AMI}/{k8s}/{_al2_path(arch, gpu)}/{name}/image_id"


def _bottlerocket_name(k8s: str, arch: str, nvidia: bool, version: str) -> str:
    # Release tags carry a leading 'v' that the SSM paths lack; Karpenter accepts both.
    return (
        f"/aws/service/bottlerocket/aws-k8s-{k8s}{'-nvidia' if nvidia else ''}/{arch}/"
        f"{version.lstrip('v')}/image_id"
    )


def _windows_name(k8s: str, family: str) -> str:
    year = family.removeprefix("windows")
    return (
        f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}"
        "/image_id"
    )


# ==== requirements ============================================================================


def variant_requirements(variant: str) -> Requirements:
    """Karpenter's `Variant.Requirements`: which instance types an AMI variant is for."""
    variant = _variant(variant)
    if variant == "nvidia":
        return Requirements.of(Requirement.new(INSTANCE_GPU_COUNT, "Exists"))
    if variant == "neuron":
        return Requirements.of(Requirement.new(INSTANCE_ACCELERATOR_COUNT, "Exists"))
    return Requirements.of(
        Requirement.new(INSTANCE_ACCELERATOR_COUNT, "DoesNotExist"),
        Requirement.new(INSTANCE_GPU_COUNT, "DoesNotExist"),
    )


def ami_requirements(variant: str | None, arch: str) -> Requirements:
    """The requirements a resolved image carries: its variant's (none for `None`, as for
    id/name/tag terms) plus `kubernetes.io/arch In [<arch>]`."""
    base = variant_requirements(variant) if variant is not None else Requirements()
    return base.add(Requirement.new(ARCH, "In", [_kube_arch(arch)]))


def _windows_requirements(family: str) -> Requirements:
    return Requirements.of(
        Requirement.new(OS, "In", ["windows"]),
        Requirement.new(WINDOWS_BUILD, "In", [WINDOWS_BUILDS[family]]),
    )


def variant_for(instance_type_requirements: Requirements) -> str | None:
    """The AMI variant an instance type gets: the first of standard, nvidia, neuron whose
    requirements its own are compatible with (None if none is: the type cannot launch)."""
    for variant in VARIANTS:
        if instance_type_requirements.is_compatible(variant_requirements(variant)):
            return variant
    return None


def ami_for(
    instance_type_requirements: Requirements, amis: Sequence[ResolvedAMI]
) -> ResolvedAMI | None:
    """The AMI an instance type launches with: the first of `amis` (in `status.amis` order, as
    `resolve_amis` returns them) its requirements are compatible with (`MapToInstanceTypes`).
    None: the type is dropped from the launch; AMI drift compares a node's image with this."""
    for ami in amis:
        if instance_type_requirements.is_compatible(ami.requirements):
            return ami
    return None


# ==== resolution ===============================================================================


class AMIQueryAPI(Protocol):
    """The two calls AMI resolution makes (any `EC2API` has them)."""

    def get_parameter(self, **kwargs: Any) -> Response: ...

    def describe_images(self, **kwargs: Any) -> Response: ...


@dataclass(frozen=True, slots=True)
class ResolvedAMI:
    """One entry of the node class's `status.amis`."""

    id: str
    name: str
    requirements: Requirements
    ssm_parameter: str | None
    deprecated: bool
    creation_date: str
    # The Karpenter variant of an alias image (None for Windows and non-alias terms).
    variant: str | None = None


@dataclass(frozen=True, slots=True)
class KnownVariant:
    """What an alias parameter says about the image it names: a variant (None for Windows) and
    its requirements, before the image's arch is added."""

    variant: str | None
    requirements: Requirements  # without the arch requirement


@dataclass(frozen=True, slots=True)
class ImageQuery:
    """One DescribeImages call, and what is known about the images it asks for by ID."""

    filters: tuple[tuple[str, tuple[str, ...]], ...]
    owners: tuple[str, ...] = ()
    # image ID -> the requirement sets (one per variant) an alias parameter gave it
    known: Mapping[str, tuple[KnownVariant, ...]] = field(default_factory=dict)
    # image ID -> the SSM parameter it was read from
    parameters: Mapping[str, str] = field(default_factory=dict)

    def request(self) -> dict[str, Any]:
        """The DescribeImages request (boto3 keyword arguments)."""
        request: dict[str, Any] = {
            "Filters": [
                *({"Name": name, "Values": list(values)} for name, values in self.filters),
                {"Name": "state", "Values": ["available"]},
            ],
            "IncludeDeprecated": True,
            "MaxResults": _DESCRIBE_IMAGES_PAGE,
        }
        if self.owners:
            request["Owners"] = list(self.owners)
        return request


def image_queries(
    nodeclass: EC2NodeClass, kubernetes_version: str, api: AMIQueryAPI
) -> list[ImageQuery]:
    """The DescribeImages calls for a node class (reading SSM for alias and ssmParameter terms)."""
    k8s = _k8s(kubernetes_version)
    term = nodeclass.alias
    if term is not None and term.alias is not None:
        return [_alias_query(parse_alias(term.alias), k8s, api)]
    queries: list[ImageQuery] = []
    ids: list[str] = []
    parameters: dict[str, str] = {}
    for t in nodeclass.spec.ami_selector_terms:
        if t.id:
            ids.append(t.id)
        elif t.ssm_parameter:
            try:
                value = _parameter_value(api, t.ssm_parameter)
            except EC2APIError as err:
                if err.code == _NOT_FOUND:
                    continue
                raise AMIResolutionError(f"resolving ssm parameter, {err}") from err
            if not value.startswith("ami-"):
                continue
            ids.append(value)
            parameters.setdefault(value, t.ssm_parameter)
        else:
            filters: list[tuple[str, tuple[str, ...]]] = []
            owners: tuple[str, ...] = (t.owner,) if t.owner else ()
            if t.name:
                owners = owners or ("self", "amazon")
                filters.append(("name", (t.name,)))
            for key, value in sorted((t.tags or {}).items()):
                filters.append(("tag-key", (key,)) if value == "*" else (f"tag:{key}", (value,)))
            queries.append(ImageQuery(filters=tuple(filters), owners=owners))
    if ids:
        queries.append(ImageQuery(filters=(("image-id", tuple(ids)),), parameters=parameters))
    return queries


def resolve_amis(
    nodeclass: EC2NodeClass,
    kubernetes_version: str,
    api: AMIQueryAPI,
    *,
    now: dt.datetime | None = None,
) -> list[ResolvedAMI]:
    """The node class's `status.amis`: one image per distinct requirement set, newest first.

    Empty when nothing matched (Karpenter's `AMIsReady=False`, reason `AMINotFound`). Raises
    `AliasError`, `UnsupportedAliasError`, `AMIDiscoveryError`, or `AMIResolutionError` for a
    failed AWS call. `now` (default: the current time) decides which images are deprecated.
    """
    now = now if now is not None else dt.datetime.now(dt.timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=dt.timezone.utc)
    chosen: dict[Requirements, ResolvedAMI] = {}
    for query in image_queries(nodeclass, kubernetes_version, api):
        try:
            images = api.describe_images(**query.request()).get("Images", [])
        except EC2APIError as err:
            raise AMIResolutionError(f"describing images, {err}") from err
        for image in images:
            candidates = _candidates(image, query, now)
            for ami in candidates:
                held = chosen.get(ami.requirements)
                if held is None or _better(ami, held):
                    chosen[ami.requirements] = ami
    return sorted(chosen.values(), key=_status_order)


def _alias_query(alias: Alias, k8s: str, api: AMIQueryAPI) -> ImageQuery:
    known: dict[str, list[KnownVariant]] = {}
    parameters: dict[str, str] = {}
    windows = _windows_requirements(alias.family) if alias.is_windows else None
    for p in alias_parameters(alias, k8s):
        try:
            image_id = _parameter_value(api, p.name)
        except EC2APIError:
            continue  # Karpenter skips a parameter it cannot read, whatever the error
        entries = known.setdefault(image_id, [])
        parameters.setdefault(image_id, p.name)
        if windows is not None:
            entries.append(KnownVariant(None, windows))
        for variant in p.variants:
            if all(k.variant != variant for k in entries):
                entries.append(KnownVariant(variant, variant_requirements(variant)))
    if not known:
        tried = ", ".join(p.name for p in alias_parameters(alias, k8s))
        raise AMIDiscoveryError(
            f"failed to discover any AMIs for alias {alias} on Kubernetes {k8s} "
            f"(no SSM parameter could be read: {tried})",
            alias=alias,
            kubernetes_version=k8s,
        )
    return ImageQuery(
        filters=(("image-id", tuple(known)),),
        known={image_id: tuple(entries) for image_id, entries in known.items()},
        parameters=parameters,
    )


def _parameter_value(api: AMIQueryAPI, name: str) -> str:
    response = api.get_parameter(Name=name)
    value = response.get("Parameter", {}).get("Value")
    if not isinstance(value, str):
        raise EC2APIError(_NOT_FOUND, f"parameter {name} has no value", operation="GetParameter")
    return value


def _candidates(image: Mapping[str, Any], query: ImageQuery, now: dt.datetime) -> list[ResolvedAMI]:
    arch = KUBE_ARCHITECTURES.get(str(image.get("Architecture", "")))
    if arch is None:
        return []
    image_id = str(image.get("ImageId", ""))
    deprecation = _parse_time(image.get("DeprecationTime"), image_id, "DeprecationTime")
    deprecated = deprecation is not None and deprecation <= now
    known: Iterable[KnownVariant] = query.known.get(image_id, (KnownVariant(None, Requirements()),))
    return [
        ResolvedAMI(
            id=image_id,
            name=str(image.get("Name", "")),
            requirements=k.requirements.add(Requirement.new(ARCH, "In", [arch])),
            ssm_parameter=query.parameters.get(image_id),
            deprecated=deprecated,
            creation_date=str(image.get("CreationDate", "")),
            variant=k.variant,
        )
        for k in known
    ]


def _better(candidate: ResolvedAMI, held: ResolvedAMI) -> bool:
    """Karpenter's `compareAMI(held, candidate) > 0`: the candidate replaces the held image."""
    if candidate.deprecated != held.deprecated:
        return held.deprecated
    new, old = _seconds(candidate), _seconds(held)
    if new != old:
        return new > old
    return candidate.name > held.name


def _status_order(ami: ResolvedAMI) -> tuple[int, str, int]:
    # AMIs.Sort: CreationDate descending (to the second), then ID; gpucap then orders an
    # image's variants as VARIANTS does (Karpenter leaves that tie to sort.Slice).
    variant = VARIANTS.index(ami.variant) if ami.variant in VARIANTS else len(VARIANTS)
    return (-_seconds(ami), ami.id, variant)


_MIN_SECONDS: Final = -(2**63)


def _seconds(ami: ResolvedAMI) -> int:
    when = _parse_time(ami.creation_date or None, ami.id, "CreationDate")
    return _MIN_SECONDS if when is None else int(when.timestamp())


def _parse_time(value: object, image_id: str, what: str) -> dt.datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):  # boto3 returns strings, but be lenient
        when = value
    else:
        try:
            when = parse_rfc3339(str(value))
        except ValueError:
            raise AMIResolutionError(
                f"image {image_id}: {what} {value!r} is not an RFC 3339 time"
            ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


# ==== helpers ==================================================================================


def _k8s(version: str) -> str:
    match = _K8S_MINOR.match(version.strip())
    if match is None:
        shown = (
            repr(version) if len(version) <= 200 else f"{version[:100]!r}... ({len(version)} chars)"
        )
        raise ValueError(f"Kubernetes version {shown}: expected major.minor, e.g. 1.36")
    return f"{int(match.group(1))}.{int(match.group(2))}"


def _k8s_minor(version: str) -> int:
    return int(_k8s(version).split(".")[1])


def _ec2_arch(arch: str) -> str:
    if arch in ("x86_64", "amd64"):
        return "x86_64"
    if arch == "arm64":
        return "arm64"
    raise ValueError(f"architecture {arch!r}: expected x86_64 (amd64) or arm64")


def _kube_arch(arch: str) -> str:
    return KUBE_ARCHITECTURES[_ec2_arch(arch)]


def _variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    return variant
