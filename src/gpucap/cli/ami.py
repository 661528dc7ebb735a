"""`gpucap ami resolve|list|diff`: EKS-optimized AMI releases, the recommended one, the list, and
what changes between two.

The lookups are `cloudprovider/aws/ami.py`'s and `amireleases.py`'s (SSM through `cli/aws.py`,
or the bundled list with `--offline`); the table and the JSON are `cli/ami_render.py`'s. `app`
is the sub-command group `cli/app.py` registers as `ami`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from gpucap.cli import aws
from gpucap.cli.ami_render import format_release_json, format_releases
from gpucap.cli.options import (
    ArchOption,
    FamilyOption,
    KubernetesOption,
    OfflineOption,
    OutputOption,
    RegionOption,
    VariantOption,
    check_output,
)
from gpucap.cli.terminals import out
from gpucap.cloudprovider.aws.amifamily.ami import list_releases
from gpucap.cloudprovider.aws.amifamily.releases import diff_releases, find_release

__all__ = ["app"]

app = typer.Typer(
    help="EKS-optimized AMI releases: the recommended one, the list, and what changes between two.",
    no_args_is_help=True,
)


@app.command("resolve")
def ami_resolve(  # noqa: PLR0917 - typer maps parameters to options
    kubernetes_version: KubernetesOption = "1.36",
    family: FamilyOption = "al2023",
    variant: VariantOption = "nvidia",
    arch: ArchOption = "x86_64",
    region: RegionOption = None,
    offline: OfflineOption = False,
    output: OutputOption = "table",
) -> None:
    """Print the recommended release (e.g. v20260827) to pin as `al2023@<release>`."""
    check_output(output, ("table", "json"))
    info = aws.release(kubernetes_version, family, arch, variant, offline, region)
    if output == "json":
        sys.stdout.write(format_release_json(kubernetes_version, family, arch, variant, info))
    else:
        out.line(info.version)


@app.command("list")
def ami_list(  # noqa: PLR0917 - typer maps parameters to options
    kubernetes_version: KubernetesOption = "1.36",
    family: FamilyOption = "al2023",
    variant: VariantOption = "nvidia",
    arch: ArchOption = "x86_64",
    region: RegionOption = None,
    offline: OfflineOption = False,
) -> None:
    """List the releases for a Kubernetes version, newest first (with the NVIDIA driver and the
    CUDA version it supports, from the bundled release notes)."""
    with aws.lookup_errors():
        infos = list_releases(
            kubernetes_version,
            family=family,
            arch=arch,
            variant=variant,
            api=None if offline else aws.aws_api(region),
        )
    releases = []
    for info in infos:
        known = find_release(info.version)
        image = known.image(kubernetes_version, family, arch, variant) if known else None
        releases.append((info, known, image))
    out.lines(format_releases(releases))


@app.command("diff")
def ami_diff(  # noqa: PLR0917 - typer maps parameters to options
    old: Annotated[str, typer.Argument(help="Release, e.g. v20250403.")],
    new: Annotated[str, typer.Argument(help="Release, e.g. v20250410.")],
    kubernetes_version: KubernetesOption = "1.36",
    family: FamilyOption = "al2023",
    variant: VariantOption = "nvidia",
    arch: ArchOption = "x86_64",
) -> None:
    """What changes between two releases (kernel, containerd, NVIDIA driver, CUDA); a driver
    major-version change is flagged as a risk for GPU images."""
    with aws.lookup_errors():
        diff = diff_releases(
            old, new, kubernetes_version, family=family, arch=arch, variant=variant
        )
    for line in diff.lines():
        out.line(line)
    if diff.driver_major_changed:
        out.line(
            f"RISK: NVIDIA driver major version {diff.old_driver_major} -> "
            f"{diff.new_driver_major}; images built for the old CUDA may break"
        )
