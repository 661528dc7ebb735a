"""AMI rules: mutable aliases, pinned releases that do not exist, NVIDIA driver changes
(landscape.md §3.5; AMI resolution from karpenter-disruption.md §4.3 and
`amifamily/resolver.py`; release contents from `amifamily/releases.py`).

AMI001-AMI003. Two inputs come from `gpucap lint` options: `ctx.previous_ami_release`
(`--ami-previous vYYYYMMDD`, AMI003) and `ctx.ec2api` (`--aws`: SSM answers which releases
exist, authoritative over the bundled list, AMI002).
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpucap.apis.bottlerocket import BottlerocketUserDataError
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import ARCH
from gpucap.apis.serde import Manifest
from gpucap.cloudprovider.aws.amifamily.releases import (
    RELEASE_FAMILIES,
    AMIRelease,
    coverage_end,
    diff_releases,
    find_release,
    known_releases,
    latest_release,
)
from gpucap.cloudprovider.aws.amifamily.resolver import (
    AMIQueryAPI,
    UnsupportedAliasError,
    alias_parameters,
    ssm_parameter_name,
    variant_for,
)
from gpucap.cloudprovider.aws.ec2.api import EC2APIError
from gpucap.lint.context import LintContext, PoolView
from gpucap.lint.queries import name_list
from gpucap.lint.registry import Finding, Registry

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

_RELEASE = re.compile(r"^v(\d{8})$", re.ASCII)
_NOT_FOUND = "ParameterNotFound"
_KUBE_TO_EC2_ARCH = {"amd64": "x86_64", "arm64": "arm64"}


@dataclass(frozen=True, slots=True)
class _Alias:
    manifest: Manifest
    nodeclass: EC2NodeClass
    index: int  # of the alias term in amiSelectorTerms
    family: str
    version: str

    @property
    def text(self) -> str:
        return f"{self.family}@{self.version}"

    @property
    def path(self) -> tuple[str | int, ...]:
        return ("spec", "amiSelectorTerms", self.index, "alias")

    @property
    def latest(self) -> bool:
        return self.version == "latest"


def _aliases(ctx: LintContext, *, history: bool = False) -> list[_Alias]:
    """Alias terms of the EC2NodeClasses; with `history`, also of the versions a later file
    replaced (`Manifest.replaces`), in input order (AMI003 compares them)."""
    out = []
    manifests = [m for m, _ in ctx.located(EC2NodeClass)]
    if history:
        versions: dict[int, Manifest] = {}
        for m in manifests:
            for v in m.history:
                versions.setdefault(id(v), v)
        manifests = list(versions.values())
    for m in manifests:
        nc = m.obj
        if not isinstance(nc, EC2NodeClass):
            continue  # never: every version of an EC2NodeClass is one
        for i, term in enumerate(nc.spec.ami_selector_terms):
            if term.alias and "@" in term.alias:
                family, version = term.alias.split("@", 1)
                out.append(_Alias(m, nc, i, family, version))
    return out


def _pools_of(ctx: LintContext, name: str) -> list[PoolView]:
    return [p for p in ctx.pools if p.nodepool.spec.template.spec.node_class_ref.name == name]


def _needed_images(pools: list[PoolView]) -> dict[tuple[str, str], list[str]]:
    """(EC2 arch, AMI variant) the pools' launchable types need -> pool names."""
    out: dict[tuple[str, str], dict[str, None]] = {}
    # Alike pools share one launchable-type list, and every pool the catalog's type objects:
    # each list's images are worked out once (1,000 pools x 700 types took 20 s).
    images_of: dict[int, list[tuple[str, str]]] = {}
    for pool in pools:
        images = images_of.get(id(pool.instance_types))
        if images is None:
            found: dict[tuple[str, str], None] = {}
            for it in pool.instance_types:
                arch_req = it.requirements.get(ARCH)
                arch = _KUBE_TO_EC2_ARCH.get(arch_req.any() if arch_req is not None else "amd64")
                variant = variant_for(it.requirements)
                if arch is not None and variant is not None:
                    found[(arch, variant)] = None
            images = images_of[id(pool.instance_types)] = list(found)
        for image in images:
            out.setdefault(image, {})[pool.name] = None
    return {image: list(names) for image, names in out.items()}


def _gpu_arches(pools: list[PoolView]) -> list[str]:
    arches = {
        _KUBE_TO_EC2_ARCH.get(req.any(), "x86_64")
        for p in pools
        for it in p.gpu_types
        if (req := it.requirements.get(ARCH)) is not None
    }
    return sorted(arches, key=lambda a: a != "x86_64") or ["x86_64"]


def _release_date(version: str) -> dt.date | None:
    match = _RELEASE.match(version)
    if match is None:
        return None
    try:
        return dt.datetime.strptime(match.group(1), "%Y%m%d").date()
    except ValueError:
        return None


# ==== AMI001 ===================================================================================


@RULES.rule(
    "AMI001",
    "ami-alias-latest",
    "warning",
    summary="An EC2NodeClass selects its AMI with `<family>@latest`.",
    why="Every new AMI release drifts (replaces) all out-of-date nodes, on AWS's release "
    "schedule rather than yours; on GPU pools a release can also change the NVIDIA driver and "
    "the CUDA version it supports. Karpenter's docs keep @latest for pre-production and "
    "recommend pinning a version in production.",
    fix="Pin a release (`alias: al2023@vYYYYMMDD`, from the SSM parameter "
    "…/recommended/release_version) and upgrade deliberately, with a Drifted disruption budget.",
    source="EKS Best Practices Karpenter (Lock down AMIs in production clusters); Karpenter docs, "
    "NodeClasses (amiSelectorTerms); aws/karpenter-provider-aws#6862, #6952",
)
def ami_alias_latest(ctx: LintContext) -> Iterable[Finding]:
    for alias in _aliases(ctx):
        if not alias.latest:
            continue
        pools = _pools_of(ctx, alias.nodeclass.name)
        gpu = any(p.is_gpu_pool for p in pools)
        who = f" of NodePool {name_list(p.name for p in pools)}" if pools else ""
        driver = " and, on GPU nodes, can change the NVIDIA driver" if gpu else ""
        hint = ""
        if alias.family in RELEASE_FAMILIES:
            try:
                newest = latest_release(
                    ctx.kubernetes_version,
                    alias.family,
                    "x86_64",
                    "nvidia" if gpu else None,
                    contents_known_only=True,
                )
            except ValueError:
                newest = None
            if newest is not None:
                hint = f"; pin a release, e.g. {alias.family}@{newest.version}"
                image = newest.image(ctx.kubernetes_version, alias.family, "x86_64", "nvidia")
                if gpu and image is not None and image.nvidia_driver:
                    cuda = f", CUDA {image.cuda_from_driver}" if image.cuda_from_driver else ""
                    hint += f" (NVIDIA driver {image.nvidia_driver}{cuda})"
        yield ctx.finding(
            "AMI001",
            "warning",
            alias.manifest,
            alias.path,
            f"{alias.text}: every new AMI release drifts all nodes{who}{driver}{hint}",
        )


# ==== AMI002 ===================================================================================


@RULES.rule(
    "AMI002",
    "ami-release-not-found",
    "error",
    summary="An alias (`al2023@vYYYYMMDD`, or `@latest` where no release exists) resolves no "
    "AMI for the cluster's Kubernetes version, or not the variant a NodePool's instance types "
    "need (bundled EKS AMI release list, resolved as `plan` and `simulate` resolve it; or SSM "
    "when gpucap has AWS access).",
    why="Karpenter reads one SSM parameter per architecture and variant of the alias; if none "
    "exists the EC2NodeClass never becomes Ready (AMIsReady stays Unknown), its NodePools are "
    'not Ready and the provisioner ignores them ("ignoring nodepool, not ready"): their pods '
    "stay Pending. If only the NVIDIA (or standard) variant is missing, those instance types "
    "get no AMI and their launches fail.",
    fix="Pick a release that exists for your Kubernetes version (`gpucap ami` lists them, or "
    "`aws ssm get-parameters-by-path` under /aws/service/eks/optimized-ami/<k8s>/), or upgrade "
    "the release together with the cluster.",
    source="aws/karpenter-provider-aws pkg/providers/amifamily (al2023.go, al2.go, ami.go), "
    "pkg/controllers/nodeclass/ami.go; kubernetes-sigs/karpenter "
    "pkg/controllers/nodepool/readiness/controller.go; awslabs/amazon-eks-ami release notes",
    other=(
        ("warning", "the release is marked abandoned in the EKS AMI release notes"),
        (
            "info",
            "the release cannot be checked: newer than the bundled list, known only partly, "
            "or SSM could not be read",
        ),
    ),
)
def ami_release_not_found(ctx: LintContext) -> Iterable[Finding]:
    api = ctx.ec2api
    k8s = ctx.kubernetes_version
    for alias in _aliases(ctx):
        pools = _pools_of(ctx, alias.nodeclass.name)
        if alias.latest:
            if api is None and alias.family in RELEASE_FAMILIES and _not_ready(ctx, alias):
                yield ctx.finding(
                    "AMI002",
                    "error",
                    alias.manifest,
                    alias.path,
                    f"{alias.text}: no release for Kubernetes {k8s}: {_ignored(ctx, alias, pools)}",
                )
            continue
        try:
            alias_parameters(alias.text, k8s)
        except UnsupportedAliasError as err:
            ignored = _ignored(ctx, alias, pools, known=False)
            yield ctx.finding(
                "AMI002", "error", alias.manifest, alias.path, f"{alias.text}: {err}: {ignored}"
            )
            continue
        except ValueError:
            continue  # malformed alias: the schema rules report it
        if api is not None:
            yield from _check_ssm(ctx, api, alias, pools)
        elif alias.family in RELEASE_FAMILIES:
            yield from _check_bundled(ctx, alias, pools)


def _check_ssm(
    ctx: LintContext, api: AMIQueryAPI, alias: _Alias, pools: list[PoolView]
) -> Iterable[Finding]:
    k8s = ctx.kubernetes_version
    needed = _needed_images(pools)
    if needed:
        wanted = {
            ssm_parameter_name(alias.text, k8s, arch, variant): (f"{arch}/{variant}", names)
            for (arch, variant), names in sorted(needed.items())
        }
    else:
        wanted = {p.name: ("any", []) for p in alias_parameters(alias.text, k8s)}
    missing: list[str] = []
    for name in wanted:
        try:
            api.get_parameter(Name=name)
        except EC2APIError as err:
            if err.code != _NOT_FOUND:
                yield ctx.finding(
                    "AMI002",
                    "info",
                    alias.manifest,
                    alias.path,
                    f"{alias.text}: could not read SSM parameter {name} ({err.code}); release "
                    "not checked",
                )
                return
            missing.append(name)
    if not missing or (not needed and len(missing) < len(wanted)):
        return
    if not needed:
        text = f"none of its SSM parameters exist for Kubernetes {k8s} ({missing[0]}, …)"
    else:
        parts = [
            f"{wanted[name][0]} ({name}; NodePool {name_list(wanted[name][1])})" for name in missing
        ]
        text = f"SSM has no {'; '.join(parts)} for Kubernetes {k8s}"
    yield ctx.finding(
        "AMI002",
        "error",
        alias.manifest,
        alias.path,
        f"{alias.text}: {text}: Karpenter resolves no AMI for those instance types",
    )


def _not_ready(ctx: LintContext, alias: _Alias) -> bool:
    """The alias's EC2NodeClass resolves no AMI, as `plan` and `simulate` resolve it."""
    readiness = ctx.nodeclass_readiness.get(alias.nodeclass.name)
    return readiness is not None and not readiness.ready


def _ignored(
    ctx: LintContext,
    alias: _Alias,
    pools: list[PoolView],
    near: dt.date | None = None,
    *,
    known: bool = True,
) -> str:
    """What an alias that resolves nothing does, and the releases gpucap knows instead."""
    readiness = ctx.nodeclass_readiness.get(alias.nodeclass.name)
    state = "not Ready"
    if readiness is not None:
        state = f"{readiness.condition} {readiness.status}"
        state += f", {readiness.reason}" if readiness.reason else ""
    if pools:
        names = name_list(p.name for p in pools)
        what = (
            f"Karpenter resolves no AMI, so the EC2NodeClass is not Ready ({state}) and neither "
            f"is NodePool {names}: the provisioner ignores it and its pods stay Pending"
        )
    else:
        what = f"Karpenter resolves no AMI and the EC2NodeClass is not Ready ({state})"
    if not known:
        return what
    try:
        releases = known_releases(ctx.kubernetes_version, alias.family, near=near)
    except ValueError:
        return what
    return f"{what}; {releases}"


def _check_bundled(ctx: LintContext, alias: _Alias, pools: list[PoolView]) -> Iterable[Finding]:
    k8s = ctx.kubernetes_version
    date = _release_date(alias.version)
    if date is None:
        yield ctx.finding(
            "AMI002",
            "error",
            alias.manifest,
            alias.path,
            f"{alias.text}: {alias.version!r} is not a release version (vYYYYMMDD, e.g. "
            f"v{coverage_end():%Y%m%d}): Karpenter finds no SSM parameter for it",
        )
        return
    release = find_release(alias.version)
    if release is None:
        end = coverage_end()
        if date > end:
            yield ctx.finding(
                "AMI002",
                "info",
                alias.manifest,
                alias.path,
                f"{alias.text}: unknown, newer than the bundled list (through {end.isoformat()}); "
                "check it exists for Kubernetes "
                f"{k8s} (gpucap with AWS access reads SSM)",
            )
            return
        yield ctx.finding(
            "AMI002",
            "error",
            alias.manifest,
            alias.path,
            f"{alias.text}: there is no EKS AMI release {alias.version} (the bundled list covers "
            f"releases through {end.isoformat()}): {_ignored(ctx, alias, pools, date)}",
        )
        return
    if release.abandoned:
        yield ctx.finding(
            "AMI002",
            "warning",
            alias.manifest,
            alias.path,
            f"{alias.text}: release {release.version} is marked abandoned in the EKS AMI release "
            "notes; its AMIs may be withdrawn: pin another release",
        )
    if _not_ready(ctx, alias):
        covers = ", ".join(release.kubernetes_versions) or "unknown versions"
        yield ctx.finding(
            "AMI002",
            "error",
            alias.manifest,
            alias.path,
            f"{alias.text}: release {release.version} has no AMI for Kubernetes {k8s} (gpucap "
            f"knows it for Kubernetes {covers}): {_ignored(ctx, alias, pools, date)}",
        )
        return
    yield from _missing_images(ctx, alias, release, pools)


def _missing_images(
    ctx: LintContext, alias: _Alias, release: AMIRelease, pools: list[PoolView]
) -> Iterable[Finding]:
    k8s = ctx.kubernetes_version
    needed = _needed_images(pools)
    if not needed:
        if any(release.has(k8s, alias.family, arch) for arch in ("x86_64", "arm64")):
            return
        missing = [f"any AMI for Kubernetes {k8s}"]
    else:
        missing = [
            f"{arch}/{variant} (NodePool {name_list(names)})"
            for (arch, variant), names in sorted(needed.items())
            if not release.has(k8s, alias.family, arch, variant)
        ]
    if not missing:
        return
    covers = ", ".join(release.kubernetes_versions) or "unknown versions"
    if not release.contents_known:
        yield ctx.finding(
            "AMI002",
            "info",
            alias.manifest,
            alias.path,
            f"{alias.text}: gpucap knows release {release.version} only partly ({release.note}); "
            f"it cannot confirm {'; '.join(missing)} for Kubernetes {k8s}",
        )
        return
    yield ctx.finding(
        "AMI002",
        "error",
        alias.manifest,
        alias.path,
        f"{alias.text}: release {release.version} has no {'; '.join(missing)} for Kubernetes "
        f"{k8s} (it covers Kubernetes {covers}): Karpenter resolves no AMI for those instance "
        "types",
    )


# ==== AMI003 ===================================================================================


def _replaced(ctx: LintContext, m: Manifest) -> bool:
    """`m` is an earlier version of an EC2NodeClass that a later file replaced."""
    return not any(x is m for x, _ in ctx.located(EC2NodeClass))


@RULES.rule(
    "AMI003",
    "ami-nvidia-driver-major-change",
    "warning",
    summary="Between two versions of an EC2NodeClass in the input (same name, different files: "
    "old, new), or between --ami-previous and a pinned alias, the NVIDIA driver of the GPU AMI "
    "changes major version.",
    why="A new driver branch (e.g. 570 -> 580) changes the CUDA version the driver supports, and "
    "the rollout drifts every GPU node: images built for the old CUDA, or kernels compiled for "
    "it, can break fleet-wide.",
    fix="Test the GPU workloads on the new AMI first (a canary NodePool on its own "
    "EC2NodeClass), then roll with a Drifted disruption budget; or pin a release on the same "
    "driver branch.",
    source="awslabs/amazon-eks-ami release notes; aws-samples/amazon-eks-machine-learning-with-"
    "terraform-and-kubeflow#119",
)
def ami_nvidia_driver_major_change(ctx: LintContext) -> Iterable[Finding]:
    aliases = [a for a in _aliases(ctx, history=True) if a.family in RELEASE_FAMILIES]
    by_name: dict[str, list[_Alias]] = {}
    for a in aliases:
        by_name.setdefault(a.nodeclass.name, []).append(a)
    for name, versions in by_name.items():
        pools = _pools_of(ctx, name)
        if pools and not any(p.is_gpu_pool for p in pools):
            continue
        for old, new in itertools.pairwise(versions):
            if old.manifest.source.file == new.manifest.source.file:
                continue
            where = f"{old.text} in {old.manifest.source.file}"
            yield from _driver_change(
                ctx,
                old_family=old.family,
                old_version=old.version,
                new=new,
                pools=pools,
                where=where,
            )
    previous = ctx.previous_ami_release
    if not previous:
        return
    for a in aliases:
        if _replaced(ctx, a.manifest):
            continue
        pools = _pools_of(ctx, a.nodeclass.name)
        if pools and not any(p.is_gpu_pool for p in pools):
            continue
        yield from _driver_change(
            ctx,
            old_family=a.family,
            old_version=previous,
            new=a,
            pools=pools,
            where=f"--ami-previous {previous}",
        )


def _resolve(ctx: LintContext, family: str, version: str, arch: str) -> AMIRelease | None:
    """The release an alias version names (raises ValueError as the lookups do); memoised per
    run: an EC2NodeClass given in 2,000 files asks the same question for every pair."""
    key = ("ami-resolve", family, version, arch)
    if key not in ctx.memo:
        try:
            if version == "latest":
                found: AMIRelease | ValueError | None = latest_release(
                    ctx.kubernetes_version, family, arch, "nvidia", contents_known_only=True
                )
            else:
                found = find_release(version)
        except ValueError as err:
            found = err
        ctx.memo[key] = found
    answer: AMIRelease | ValueError | None = ctx.memo[key]
    if isinstance(answer, ValueError):
        raise answer
    return answer


def _driver_change(
    ctx: LintContext,
    *,
    old_family: str,
    old_version: str,
    new: _Alias,
    pools: list[PoolView],
    where: str,
) -> Iterable[Finding]:
    if old_family != new.family:
        return
    for arch in _gpu_arches(pools):
        try:
            old_r = _resolve(ctx, old_family, old_version, arch)
            new_r = _resolve(ctx, new.family, new.version, arch)
            if old_r is None or new_r is None or old_r is new_r:
                continue
            diff = diff_releases(old_r, new_r, ctx.kubernetes_version, family=new.family, arch=arch)
        except ValueError:
            continue
        if not diff.driver_major_changed:
            continue
        driver = diff.field("nvidia_driver")
        cuda = diff.field("cuda_from_driver")
        resolved = f" (now {new_r.version})" if new.latest else ""
        yield ctx.finding(
            "AMI003",
            "warning",
            new.manifest,
            new.path,
            f"NVIDIA driver {driver.old} (CUDA {cuda.old or 'unknown'}) -> {driver.new} (CUDA "
            f"{cuda.new or 'unknown'}) on {new.family} {arch}/nvidia, Kubernetes "
            f"{diff.kubernetes_version}: from {where} to {new.text}{resolved}, driver major "
            f"{diff.old_driver_major} -> {diff.new_driver_major}; test GPU workloads before "
            "rolling out",
        )


# ==== AMI004 ===================================================================================


@RULES.rule(
    "AMI004",
    "bottlerocket-userdata-unreadable",
    "warning",
    summary="A Bottlerocket EC2NodeClass's userData is not valid TOML, or its NVIDIA "
    "device-plugin settings (settings.kubelet-device-plugins.nvidia) have a wrong value.",
    why="Bottlerocket reads userData as TOML settings, and Karpenter parses it to merge its own "
    'settings in: TOML it cannot parse fails the launch ("invalid UserData"), so the pool '
    "launches nothing. A sharing setting of the wrong type or an unknown sharing strategy is "
    "rejected by Bottlerocket, and gpucap cannot tell how many GPUs the nodes advertise.",
    fix="Fix the TOML (tables like [settings.kubelet-device-plugins.nvidia], key = value); "
    'device-sharing-strategy is "time-slicing" or "mps", replicas a positive integer, '
    "rename-by-default and fail-requests-greater-than-one true or false.",
    source="aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/bottlerocket.go; "
    "Bottlerocket settings reference (kubelet-device-plugins)",
)
def bottlerocket_userdata_unreadable(ctx: LintContext) -> Iterable[Finding]:
    for name, cfg in ctx.bottlerocket_configs.items():
        if isinstance(cfg, BottlerocketUserDataError):
            yield ctx.finding(
                "AMI004",
                "warning",
                ctx.nodeclasses[name],
                ("spec", "userData"),
                f"Bottlerocket userData: {cfg}; Karpenter and Bottlerocket read it as TOML "
                "settings, so nodes of this class may not launch, and gpucap cannot tell "
                "whether their GPUs are shared",
            )
