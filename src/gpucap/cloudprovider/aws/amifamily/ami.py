"""What `gpucap ami` and `gpucap render --pin-ami` ask: which EKS AMI release is recommended
now for a Kubernetes version, and which releases exist — from SSM (real AWS, through the
`EC2API`) or from the bundled release list (`--offline`).

SSM answers come from the public parameters AWS maintains (`.../recommended/release_version`,
e.g. `1.36.3-20260827`, and the per-release parameters under `.../<arch>/<variant>/`); the
alias Karpenter needs is `al2023@v<date>`. Called by the CLI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucap.cloudprovider.aws.amifamily.releases import latest_release, releases_for
from gpucap.cloudprovider.aws.amifamily.resolver import release_version_parameter
from gpucap.cloudprovider.aws.ec2.api import EC2API, EC2APIError
from gpucap.runtime.errors import GpucapInputError

__all__ = ["AMILookupError", "AMIReleaseInfo", "list_releases", "recommended_release"]

_RELEASE_VERSION = re.compile(r"^\d+\.\d+\.\d+-(\d{8})$", re.ASCII)
_PINNED_NAME = re.compile(
    r"amazon-eks-node-al2023-[a-z0-9_]+-[a-z]+-\d+\.\d+-(v\d{8})/image_id$", re.ASCII
)


class AMILookupError(GpucapInputError):
    """No release could be found; the message says where gpucap looked."""


@dataclass(frozen=True, slots=True)
class AMIReleaseInfo:
    version: str  # v20260827
    release_version: str | None  # 1.36.3-20260827
    source: str  # "ssm:<parameter>" or "bundled"
    date: str | None = None


def _family_path(family: str) -> str:
    if family != "al2023":
        raise AMILookupError(
            f"family {family!r}: only al2023 releases are listed (AL2 is not "
            "supported on Kubernetes >= 1.33)"
        )
    return "amazon-linux-2023"


def recommended_release(
    kubernetes_version: str,
    *,
    family: str = "al2023",
    arch: str = "x86_64",
    variant: str = "nvidia",
    api: EC2API | None = None,
) -> AMIReleaseInfo:
    """The release AWS recommends now (SSM) or the newest bundled one (`api` None)."""
    if api is None:
        release = latest_release(kubernetes_version, family, arch, variant)
        if release is None:
            raise AMILookupError(
                f"no bundled {family} {arch}/{variant} release for Kubernetes {kubernetes_version}"
            )
        return AMIReleaseInfo(
            release.version,
            release.release_version(kubernetes_version),
            "bundled",
            release.date.isoformat(),
        )
    name = release_version_parameter(kubernetes_version, family, arch, variant)
    try:
        value = api.get_parameter(Name=name)["Parameter"]["Value"]
    except EC2APIError as err:
        raise AMILookupError(f"SSM {name}: {err.code}: {err.message}") from err
    match = _RELEASE_VERSION.match(value)
    if match is None:
        raise AMILookupError(f"SSM {name}: unexpected value {value!r}")
    return AMIReleaseInfo(f"v{match.group(1)}", value, f"ssm:{name}")


def list_releases(
    kubernetes_version: str,
    *,
    family: str = "al2023",
    arch: str = "x86_64",
    variant: str = "nvidia",
    api: EC2API | None = None,
) -> list[AMIReleaseInfo]:
    """Every release for a Kubernetes version, newest first: SSM's pinned parameters or the
    bundled list."""
    if api is None:
        bundled = releases_for(kubernetes_version, family, arch, variant)
        if not bundled:
            # An empty table with exit 0 would read as "nothing to pin" rather than "wrong input".
            raise AMILookupError(
                f"no bundled {family} {arch}/{variant} release for Kubernetes {kubernetes_version}"
            )
        return [
            AMIReleaseInfo(
                r.version, r.release_version(kubernetes_version), "bundled", r.date.isoformat()
            )
            for r in bundled
        ]
    family_path = _family_path(family)
    path = f"/aws/service/eks/optimized-ami/{kubernetes_version}/{family_path}/{arch}/{variant}"
    try:
        params = api.get_parameters_by_path(Path=path, Recursive=True).get("Parameters", [])
    except EC2APIError as err:
        raise AMILookupError(f"SSM {path}: {err.code}: {err.message}") from err
    versions = sorted(
        {m.group(1) for p in params if (m := _PINNED_NAME.search(p["Name"]))}, reverse=True
    )
    if not versions:
        raise AMILookupError(f"SSM {path}: no releases found")
    return [AMIReleaseInfo(v, None, f"ssm:{path}") for v in versions]
