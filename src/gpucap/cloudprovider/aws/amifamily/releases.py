"""The EKS-optimized AMI releases gpucap knows, and what changes between two of them.

Pure. The data is bundled (`gpucap/data/ami/eks-ami-releases.json`, written by
`scripts/build_ami_releases.py` from `../shared/data/eks-ami-releases.json`; provenance and
gaps in that folder's README) and read once through `importlib.resources`. Every value comes
from the `awslabs/amazon-eks-ami` release notes, except `cuda_from_driver` (the CUDA version
the NVIDIA driver supports, derived from NVIDIA's driver table); `None` means "not stated".

Coverage: AL2023 and AL2 only (Bottlerocket and Windows versions are not in those notes),
newest first. One release (`v20260827`) is known only from an SSM answer
(`.../1.36/amazon-linux-2023/x86_64/nvidia/recommended/release_version`): its
`contents_known` is False and it has no images. EKS publishes all the variants of a release
together (standard, NVIDIA and Neuron; x86_64 and arm64: the data's header `variants`), so it
counts as present for every al2023 variant and arch of Kubernetes 1.36 (`seen_in`, expanded so
by `scripts/build_ami_releases.py`), and only for that minor: `plan`, `lint` and `simulate`
resolve a CPU NodePool's standard AMI from it as they do the NVIDIA one. `coverage_end()` is
the date of the newest bundled release: a pin dated after it is "unknown, newer than the
bundled list".

Variants are Karpenter's (`standard`, `nvidia`, `neuron`). AL2 has one GPU AMI for both
`nvidia` and `neuron` (`amazon-linux-2-gpu`); its images carry variant `gpu`, which may also be
asked for directly.

`diff_releases` compares one image (release x family x Kubernetes minor x arch x variant) of
two releases: kernel, containerd, NVIDIA driver, the CUDA version the driver supports, the
NVIDIA container toolkit, the Neuron driver and (AL2 GPU only) the CUDA toolkit.
`AMIReleaseDiff.driver_major_changed` is the GPU-fleet risk: a new NVIDIA driver branch
(e.g. 560 -> 570) can change the CUDA version and break workloads built for the old one.
Called by the AMI lint rules and the `gpucap ami` commands.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Final

from gpucap.runtime.errors import GpucapInputError

__all__ = [
    "AMI_RELEASES_FORMAT",
    "BUNDLED_AMI_RELEASES_RESOURCE",
    "RELEASE_FAMILIES",
    "AMIImage",
    "AMIRelease",
    "AMIReleaseDiff",
    "FieldChange",
    "UnknownReleaseError",
    "bundled_releases",
    "coverage_end",
    "diff_releases",
    "find_release",
    "known_releases",
    "latest_release",
    "release_for_release_version",
    "releases_for",
    "ssm_parameter_templates",
]

BUNDLED_AMI_RELEASES_RESOURCE: Final = ("gpucap", "data/ami/eks-ami-releases.json")
AMI_RELEASES_FORMAT: Final = "gpucap.dev/eks-ami-releases/v1"
# Families the release notes cover (alias spelling).
RELEASE_FAMILIES: Final = ("al2023", "al2")
_ARCHES: Final = {"x86_64": "x86_64", "amd64": "x86_64", "arm64": "arm64"}
# Variant keys present in the data, per family.
_VARIANTS: Final = {
    "al2023": ("standard", "nvidia", "neuron"),
    "al2": ("standard", "gpu"),
}
_STATUSES: Final = ("released", "abandoned")
# `known_releases` lists every release up to this many, else summarises them.
_LISTED: Final = 5
_VERSION_PART = re.compile(r"[0-9]{1,18}")
# ASCII digits, and few of them: int() of a 5,000-digit minor raises (an internal error).
_K8S_MINOR = re.compile(r"^(\d{1,9})\.(\d{1,9})$", re.ASCII)
_RELEASE_VERSION = re.compile(r"^(\d+)\.(\d+)\.\d+-(\d{8})$", re.ASCII)
# Bundled row field -> AMIImage attribute, in row order.
_ROW_FIELDS: Final = {
    "kernel": "kernel",
    "kernelSeries": "kernel_series",
    "containerd": "containerd",
    "nvidiaDriver": "nvidia_driver",
    "cudaFromDriver": "cuda_from_driver",
    "cudaToolkit": "cuda_toolkit",
    "nvidiaContainerToolkit": "nvidia_container_toolkit",
    "neuronDriver": "neuron_driver",
}
# What diff_releases compares: (AMIImage attribute, human label), in display order.
_DIFF_FIELDS: Final = (
    ("kernel", "kernel"),
    ("containerd", "containerd"),
    ("nvidia_driver", "NVIDIA driver"),
    ("cuda_from_driver", "CUDA (supported by the driver)"),
    ("cuda_toolkit", "CUDA toolkit"),
    ("nvidia_container_toolkit", "NVIDIA container toolkit"),
    ("neuron_driver", "Neuron driver"),
)


class UnknownReleaseError(GpucapInputError, LookupError):
    """A release version the bundled list does not have."""


# ==== values ===================================================================================


@dataclass(frozen=True, slots=True)
class AMIImage:
    """One EKS-optimized AMI of a release: family, Kubernetes minor, arch and variant, with the
    versions its release notes state (None: not stated)."""

    family: str
    kubernetes_version: str
    arch: str
    variant: str
    name: str
    name_matches_karpenter: bool = True
    kernel: str | None = None
    kernel_series: str | None = None
    containerd: str | None = None
    nvidia_driver: str | None = None
    cuda_from_driver: str | None = None
    cuda_toolkit: str | None = None
    nvidia_container_toolkit: str | None = None
    neuron_driver: str | None = None

    @property
    def nvidia_driver_major(self) -> int | None:
        return _major(self.nvidia_driver)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(family, Kubernetes minor, arch, variant)."""
        return (self.family, self.kubernetes_version, self.arch, self.variant)


@dataclass(frozen=True, slots=True)
class AMIRelease:
    """One release (`v<YYYYMMDD>`, what goes after `al2023@`/`al2@` in an alias)."""

    version: str
    date: dt.date
    status: str
    # (Kubernetes minor, EKS release version such as "1.36.2-20260714"), newest minor first.
    kubernetes: tuple[tuple[str, str], ...]
    images: tuple[AMIImage, ...] = ()
    contents_known: bool = True
    note: str | None = None
    # (Kubernetes minor, family, arch, variant) the release is known to exist for although its
    # contents are not (only when contents_known is False).
    seen_in: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def abandoned(self) -> bool:
        return self.status == "abandoned"

    @property
    def kubernetes_versions(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.kubernetes)

    def release_version(self, kubernetes_version: str) -> str | None:
        """The EKS release version for one minor (what `.../recommended/release_version` holds)."""
        return dict(self.kubernetes).get(_minor(kubernetes_version))

    def image(
        self,
        kubernetes_version: str,
        family: str = "al2023",
        arch: str = "x86_64",
        variant: str = "standard",
    ) -> AMIImage | None:
        """The image for a Karpenter variant (AL2: nvidia and neuron are the GPU AMI), or None."""
        key = (family, _minor(kubernetes_version), _arch(arch), _data_variant(family, variant))
        return next((i for i in self.images if i.key == key), None)

    def images_for(
        self, kubernetes_version: str, family: str = "al2023", arch: str | None = None
    ) -> tuple[AMIImage, ...]:
        minor, want_arch = _minor(kubernetes_version), _arch(arch) if arch else None
        _family(family)
        return tuple(
            i
            for i in self.images
            if i.family == family
            and i.kubernetes_version == minor
            and (want_arch is None or i.arch == want_arch)
        )

    def has(
        self,
        kubernetes_version: str,
        family: str = "al2023",
        arch: str = "x86_64",
        variant: str | None = None,
    ) -> bool:
        """Whether the release is known to have that image (any variant when `variant` is None)."""
        minor, arch = _minor(kubernetes_version), _arch(arch)
        want = _data_variant(family, variant) if variant is not None else None
        if self.contents_known:
            return any(
                i.family == family
                and i.kubernetes_version == minor
                and i.arch == arch
                and (want is None or i.variant == want)
                for i in self.images
            )
        return any(
            (k, f, a) == (minor, family, arch) and (want is None or _data_variant(f, v) == want)
            for k, f, a, v in self.seen_in
        )


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One compared field of an image in two releases (None: not stated / no such image)."""

    field: str
    label: str
    old: str | None
    new: str | None

    @property
    def changed(self) -> bool:
        return self.old != self.new

    @property
    def stated(self) -> bool:
        """Either side states a value."""
        return self.old is not None or self.new is not None


@dataclass(frozen=True, slots=True)
class AMIReleaseDiff:
    """What moving one image from release `old` to release `new` changes."""

    old: AMIRelease
    new: AMIRelease
    kubernetes_version: str
    family: str
    arch: str
    variant: str
    old_image: AMIImage | None
    new_image: AMIImage | None
    fields: tuple[FieldChange, ...]

    def field(self, name: str) -> FieldChange:
        return next(f for f in self.fields if f.field == name)

    @property
    def changes(self) -> tuple[FieldChange, ...]:
        """The fields whose value differs (a value that became unknown counts)."""
        return tuple(f for f in self.fields if f.changed)

    @property
    def old_driver_major(self) -> int | None:
        return self.old_image.nvidia_driver_major if self.old_image else None

    @property
    def new_driver_major(self) -> int | None:
        return self.new_image.nvidia_driver_major if self.new_image else None

    @property
    def driver_major_changed(self) -> bool:
        """Both NVIDIA drivers are known and their major versions (branches) differ."""
        old, new = self.old_driver_major, self.new_driver_major
        return old is not None and new is not None and old != new

    @property
    def driver_downgraded(self) -> bool:
        """Both NVIDIA drivers are known and the new one is an older version."""
        old = self.old_image.nvidia_driver if self.old_image else None
        new = self.new_image.nvidia_driver if self.new_image else None
        return old is not None and new is not None and _version_key(new) < _version_key(old)

    @property
    def kernel_series_changed(self) -> bool:
        old = self.old_image.kernel_series if self.old_image else None
        new = self.new_image.kernel_series if self.new_image else None
        return old is not None and new is not None and old != new

    @property
    def is_downgrade(self) -> bool:
        """`new` is an older release than `old`."""
        return self.new.date < self.old.date

    def lines(self) -> list[str]:
        """The diff as human lines: a header, then one indented line per stated field."""
        variant = self.variant
        out = [
            f"{self.family} {self.arch}/{variant}, Kubernetes {self.kubernetes_version}: "
            f"{self.old.version} -> {self.new.version}"
        ]
        for release, image in ((self.old, self.old_image), (self.new, self.new_image)):
            if release.abandoned:
                out.append(f"  {release.version} is marked ABANDONED in the release notes")
            if image is not None:
                continue
            if not release.contents_known:
                out.append(f"  {release.version}: contents unknown ({release.note})")
            else:
                out.append(
                    f"  {release.version} has no {self.family} {self.arch}/{variant} AMI "
                    f"for Kubernetes {self.kubernetes_version}"
                )
        if self.is_downgrade:
            out.append(f"  {self.new.version} is older than {self.old.version}")
        for f in self.fields:
            if not f.stated:
                continue
            if not f.changed:
                out.append(f"  {f.label}: {f.old} (unchanged)")
                continue
            line = f"  {f.label}: {f.old or 'unknown'} -> {f.new or 'unknown'}"
            if f.field == "nvidia_driver" and self.driver_major_changed:
                down = ", a downgrade" if self.driver_downgraded else ""
                line += (
                    f"  [driver major version {self.old_driver_major} -> "
                    f"{self.new_driver_major}{down}: test GPU workloads before rolling out]"
                )
            elif f.field == "nvidia_driver" and self.driver_downgraded:
                line += "  [driver downgrade]"
            elif f.field == "kernel" and self.kernel_series_changed:
                assert self.old_image is not None
                assert self.new_image is not None
                line += (
                    f"  [kernel series {self.old_image.kernel_series} -> "
                    f"{self.new_image.kernel_series}]"
                )
            out.append(line)
        return out


# ==== queries ==================================================================================


def releases_for(
    kubernetes_version: str,
    family: str = "al2023",
    arch: str = "x86_64",
    variant: str | None = None,
    *,
    include_abandoned: bool = False,
    contents_known_only: bool = False,
) -> tuple[AMIRelease, ...]:
    """Releases with that image (any variant when `variant` is None), newest first.

    Abandoned releases are left out unless `include_abandoned`; releases known only from an
    SSM answer are kept unless `contents_known_only`.
    """
    _family(family)
    return tuple(
        r
        for r in bundled_releases()
        if (include_abandoned or not r.abandoned)
        and (r.contents_known or not contents_known_only)
        and r.has(kubernetes_version, family, arch, variant)
    )


def latest_release(
    kubernetes_version: str,
    family: str = "al2023",
    arch: str = "x86_64",
    variant: str | None = None,
    *,
    contents_known_only: bool = False,
) -> AMIRelease | None:
    """The newest non-abandoned release with that image, or None."""
    found = releases_for(
        kubernetes_version, family, arch, variant, contents_known_only=contents_known_only
    )
    return found[0] if found else None


def known_releases(
    kubernetes_version: str, family: str = "al2023", *, near: dt.date | None = None
) -> str:
    """The releases gpucap knows for `family` on a Kubernetes minor, in words, for a message
    about an alias that resolves nothing: all of them when there are few, else their number,
    range and the newest (or, given `near`, the two around that date). Abandoned releases are
    left out. Called by the AWS cloud provider's EC2NodeClass readiness and the AMI lint rule."""
    found = releases_for(kubernetes_version, family)
    minor = _minor(kubernetes_version)
    if not found:
        return f"gpucap knows no {family} release for Kubernetes {minor}"
    names = [r.version for r in found]
    if len(found) <= _LISTED:
        return f"{family} releases gpucap knows for Kubernetes {minor}: {', '.join(names)}"
    text = (
        f"gpucap knows {len(found)} {family} releases for Kubernetes {minor}, {names[-1]} to "
        f"{names[0]}"
    )
    if near is None:
        return f"{text}; the newest: {', '.join(names[:3])}"
    before = next((r.version for r in found if r.date < near), None)
    after = next((r.version for r in reversed(found) if r.date > near), None)
    around = [v for v in (before, after) if v is not None]
    return f"{text}; the nearest: {', '.join(around)}"


def find_release(version: str) -> AMIRelease | None:
    """The bundled release `version` (e.g. `v20260714`), abandoned ones included, or None."""
    return _by_version().get(version)


def release_for_release_version(release_version: str) -> AMIRelease | None:
    """The release an EKS release version (`1.36.2-20260714`) belongs to, or None."""
    match = _RELEASE_VERSION.match(release_version.strip())
    if match is None:
        return None
    release = find_release(f"v{match.group(3)}")
    minor = f"{match.group(1)}.{match.group(2)}"
    if release is None or release.release_version(minor) != release_version.strip():
        return None
    return release


def coverage_end() -> dt.date:
    """The date of the newest bundled release: later pins are unknown to gpucap."""
    return bundled_releases()[0].date


def diff_releases(
    old: AMIRelease | str,
    new: AMIRelease | str,
    kubernetes_version: str,
    *,
    family: str = "al2023",
    arch: str = "x86_64",
    variant: str = "nvidia",
) -> AMIReleaseDiff:
    """Compare the `family` `arch`/`variant` image for one Kubernetes minor in two releases.

    Releases may be given by version; an unknown version raises `UnknownReleaseError`.
    """
    old_r, new_r = _release(old), _release(new)
    minor, arch = _minor(kubernetes_version), _arch(arch)
    _data_variant(family, variant)
    old_image = old_r.image(minor, family, arch, variant)
    new_image = new_r.image(minor, family, arch, variant)
    fields = tuple(
        FieldChange(
            field=attr,
            label=label,
            old=getattr(old_image, attr) if old_image else None,
            new=getattr(new_image, attr) if new_image else None,
        )
        for attr, label in _DIFF_FIELDS
    )
    return AMIReleaseDiff(
        old=old_r,
        new=new_r,
        kubernetes_version=minor,
        family=family,
        arch=arch,
        variant=variant,
        old_image=old_image,
        new_image=new_image,
        fields=fields,
    )


def ssm_parameter_templates() -> Mapping[str, Any]:
    """The SSM parameter templates recorded with the data (read-only), for cross-checks."""
    return MappingProxyType(json.loads(json.dumps(_document()["ssmParameterTemplates"])))


# ==== loading ==================================================================================


@cache
def bundled_releases() -> tuple[AMIRelease, ...]:
    """Every bundled release, newest first, abandoned ones included."""
    doc = _document()
    fields = doc["fields"]
    if list(fields) != list(_ROW_FIELDS):
        raise ValueError(f"{_resource_name()}: unexpected fields {fields!r}")
    return tuple(_parse_release(r) for r in doc["releases"])


@cache
def _by_version() -> Mapping[str, AMIRelease]:
    return MappingProxyType({r.version: r for r in bundled_releases()})


@cache
def _document() -> Mapping[str, Any]:
    package, path = BUNDLED_AMI_RELEASES_RESOURCE
    doc = json.loads(resources.files(package).joinpath(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != AMI_RELEASES_FORMAT:
        raise ValueError(f"{_resource_name()}: not a {AMI_RELEASES_FORMAT} document")
    return doc


def _resource_name() -> str:
    return "/".join(BUNDLED_AMI_RELEASES_RESOURCE)


def _parse_release(raw: Mapping[str, Any]) -> AMIRelease:
    version = str(raw["version"])
    status = str(raw["status"])
    if status not in _STATUSES:
        raise ValueError(f"{_resource_name()}: {version}: unknown status {status!r}")
    names: Mapping[str, Any] = raw.get("amiNames", {})
    images = [
        _image(version, (family, k8s, key), row, names.get(family, {}).get(k8s, {}).get(key))
        for family in RELEASE_FAMILIES
        for k8s, variants in _by_minor_desc(raw.get(family) or {})
        for key, row in sorted(variants.items())
    ]
    return AMIRelease(
        version=version,
        date=dt.date.fromisoformat(raw["date"]),
        status=status,
        kubernetes=tuple(_by_minor_desc(raw["kubernetes"])),
        images=tuple(images),
        contents_known=bool(raw.get("contentsKnown", True)),
        note=raw.get("note"),
        seen_in=tuple(
            (s["kubernetes"], s["family"], s["arch"], s["variant"]) for s in raw.get("seenIn", ())
        ),
    )


def _image(
    version: str, where: tuple[str, str, str], row: list[str | None], name: str | None
) -> AMIImage:
    family, k8s, key = where
    arch, variant = key.split("/")
    values = dict(zip(_ROW_FIELDS.values(), row, strict=True))
    return AMIImage(
        family=family,
        kubernetes_version=k8s,
        arch=arch,
        variant=variant,
        name=name if name is not None else _karpenter_ami_name(family, k8s, arch, variant, version),
        name_matches_karpenter=name is None,
        **values,
    )


def _karpenter_ami_name(family: str, k8s: str, arch: str, variant: str, version: str) -> str:
    # The AMI name Karpenter puts in a pinned alias's SSM path (al2023.go, al2.go).
    if family == "al2023":
        return f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
    if variant == "gpu":
        return f"amazon-eks-gpu-node-{k8s}-{version}"
    return f"amazon-eks-{'arm64-' if arch == 'arm64' else ''}node-{k8s}-{version}"


def _by_minor_desc(mapping: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return sorted(mapping.items(), key=lambda kv: _minor_key(kv[0]), reverse=True)


# ==== helpers ==================================================================================


def _release(value: AMIRelease | str) -> AMIRelease:
    if isinstance(value, AMIRelease):
        return value
    found = find_release(value)
    if found is None:
        newest = bundled_releases()[0]
        raise UnknownReleaseError(
            f"release {value!r} is not in gpucap's bundled AMI release list "
            f"(newest: {newest.version}, {newest.date.isoformat()})"
        )
    return found


def _minor_key(version: str) -> tuple[int, int]:
    match = _K8S_MINOR.match(version)
    if match is None:
        shown = (
            repr(version) if len(version) <= 200 else f"{version[:100]!r}... ({len(version)} chars)"
        )
        raise ValueError(f"Kubernetes version {shown}: expected major.minor, e.g. 1.36")
    return int(match.group(1)), int(match.group(2))


def _minor(version: str) -> str:
    major, minor = _minor_key(version)
    return f"{major}.{minor}"


def _arch(arch: str) -> str:
    try:
        return _ARCHES[arch]
    except KeyError:
        raise ValueError(f"architecture {arch!r}: expected x86_64 (amd64) or arm64") from None


def _family(family: str) -> None:
    if family not in RELEASE_FAMILIES:
        raise ValueError(
            f"AMI family {family!r}: the bundled release notes cover "
            f"{', '.join(RELEASE_FAMILIES)} only"
        )


def _data_variant(family: str, variant: str) -> str:
    """A Karpenter variant as the data's variant key for `family`."""
    _family(family)
    if family == "al2" and variant in ("nvidia", "neuron"):
        return "gpu"
    if variant not in _VARIANTS[family]:
        allowed = ("standard", "nvidia", "neuron", "gpu") if family == "al2" else _VARIANTS[family]
        raise ValueError(f"variant {variant!r} for {family}: expected one of {', '.join(allowed)}")
    return variant


def _version_number(part: str) -> int | None:
    # ASCII digits only (`str.isdigit` takes `²`, which int() rejects), and not absurdly long.
    return int(part) if _VERSION_PART.fullmatch(part) else None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(
        -1 if (n := _version_number(p)) is None else n for p in re.split(r"[.\-]", version)
    )


def _major(version: str | None) -> int | None:
    if version is None:
        return None
    return _version_number(version.split(".", 1)[0])
