"""What the simulated EC2's AMI and SSM side knows of EKS releases: the images an alias reads
per family, the SSM parameter names it stands in for when gpucap has no data (pinned AL2023 and
AL2 releases after the bundled list, Bottlerocket, Windows), the bundled releases and their AMI
names and dates. Read by `SimulatedEC2`'s publishing and stand-in paths (`ec2.py`).
"""

from __future__ import annotations

import datetime as dt
import re

from gpucap.cloudprovider.aws.amifamily.releases import AMIRelease, releases_for
from gpucap.cloudprovider.aws.amifamily.resolver import AL2023_VARIANTS

__all__ = [
    "BOTTLEROCKET",
    "EKS",
    "PINNED_AL2",
    "PINNED_AL2023",
    "RELEASE_IMAGES",
    "WINDOWS",
    "ami_name",
    "bundled",
    "release_date",
]

# The (arch, Karpenter variant) images of each family's release that an alias reads (AL2's
# x86_64 GPU AMI serves nvidia and neuron: its parameter is the one for nvidia).
RELEASE_IMAGES = {
    "al2023": tuple((arch, v) for arch, variants in AL2023_VARIANTS.items() for v in variants),
    "al2": (("x86_64", "standard"), ("arm64", "standard"), ("x86_64", "nvidia")),
}
EKS = "/aws/service/eks/optimized-ami"
# Parameters gpucap has no data on (see `SimulatedEC2._stand_in`).
PINNED_AL2023 = re.compile(
    rf"^{EKS}/(?P<k8s>\d+\.\d+)/amazon-linux-2023/(?P<arch>x86_64|arm64)/"
    r"(?P<variant>standard|nvidia|neuron)/amazon-eks-node-al2023-(?P=arch)-(?P=variant)-"
    r"(?P=k8s)-(?P<version>v\d{8})/image_id$",
    re.ASCII,
)
PINNED_AL2 = re.compile(
    rf"^{EKS}/(?P<k8s>\d+\.\d+)/amazon-linux-2(?:|-arm64|-gpu)/"
    r"amazon-eks-(?:arm64-|gpu-)?node-(?P=k8s)-(?P<version>v\d{8})/image_id$",
    re.ASCII,
)
BOTTLEROCKET = re.compile(
    r"^/aws/service/bottlerocket/aws-k8s-(?P<k8s>\d+\.\d+)(?:-nvidia)?/(?P<arch>x86_64|arm64)/"
    r"[^/]+/image_id$",
    re.ASCII,
)
WINDOWS = re.compile(
    r"^/aws/service/ami-windows-latest/Windows_Server-\d{4}-English-Core-EKS_Optimized-"
    r"\d+\.\d+/image_id$",
    re.ASCII,
)


def bundled(k8s: str, family: str) -> tuple[AMIRelease, ...]:
    """The bundled releases with an image of `family` for Kubernetes `k8s`, newest first."""
    by_version = {
        r.version: r
        for arch in ("x86_64", "arm64")
        for r in releases_for(k8s, family, arch, include_abandoned=True)
    }
    return tuple(sorted(by_version.values(), key=lambda r: r.date, reverse=True))


def ami_name(family: str, k8s: str, arch: str, variant: str, version: str) -> str:
    """The EKS AMI name of a release's image, as Karpenter's pinned alias names it."""
    if family == "al2023":
        return f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
    if variant != "standard":
        return f"amazon-eks-gpu-node-{k8s}-{version}"
    return f"amazon-eks-{'arm64-' if arch == 'arm64' else ''}node-{k8s}-{version}"


def release_date(version: str) -> dt.date | None:
    """The date in a release version (`v20261001`), None when it is not a real date."""
    try:
        return dt.date(int(version[1:5]), int(version[5:7]), int(version[7:9]))
    except ValueError:
        return None
