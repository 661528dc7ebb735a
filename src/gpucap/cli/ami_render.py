"""What `gpucap ami` prints: the recommended release as JSON, and the table of releases.

Formatters in `cli/render.py`'s manner (data in, lines or a document out; the command prints),
kept beside it as `cli/simulate_render.py` is, because `cli/render.py` imports the models and
`gpucap ami` needs none of them (start-up, issue 12). Called by `cli/ami.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpucap.cli.table import format_table

if TYPE_CHECKING:
    from gpucap.cloudprovider.aws.amifamily.ami import AMIReleaseInfo
    from gpucap.cloudprovider.aws.amifamily.releases import AMIImage, AMIRelease

__all__ = ["format_release_json", "format_releases"]


def format_release_json(
    kubernetes_version: str, family: str, arch: str, variant: str, info: AMIReleaseInfo
) -> str:
    """`gpucap ami resolve -o json`: the lookup keys, the release, the alias to pin and where
    the answer came from (SSM or the bundled list)."""
    doc = {
        "kubernetesVersion": kubernetes_version,
        "family": family,
        "arch": arch,
        "variant": variant,
        "release": info.version,
        "releaseVersion": info.release_version,
        "alias": f"{family}@{info.version}",
        "source": info.source,
    }
    return json.dumps(doc, indent=2) + "\n"


def format_releases(
    releases: Iterable[tuple[AMIReleaseInfo, AMIRelease | None, AMIImage | None]],
) -> list[str]:
    """`gpucap ami list`: a table of the releases, in the order given (newest first), each with
    what the bundled release notes say of it and of its image (the date, the NVIDIA driver, the
    CUDA version it supports, the kernel; `?` and `-` where they say nothing)."""
    rows = [["RELEASE", "DATE", "NVIDIA DRIVER", "CUDA", "KERNEL"]]
    for info, known, image in releases:
        rows.append(
            [
                info.version,
                known.date.isoformat() if known else "?",
                (image.nvidia_driver if image else None) or "-",
                (image.cuda_from_driver if image else None) or "-",
                (image.kernel if image else None) or "-",
            ]
        )
    return format_table(rows)
