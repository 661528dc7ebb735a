"""The options several commands share: their declarations, their callbacks, `check_output`.

Declared once so that `--region`, `--catalog` or `--report` read and check the same in every
command. Light by design (typer only): `cli/app.py` does not import it, but every command module
does, and `gpucap COMMAND --help` should cost no more than that command's own imports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

import typer

from gpucap.cli.errors import BadInputError
from gpucap.runtime.engines import LOCAL, RAY_ADDRESSES, is_ray_address

__all__ = [
    "ArchOption",
    "CatalogOption",
    "FamilyOption",
    "KubernetesOption",
    "OfflineOption",
    "OutputOption",
    "PricesOption",
    "RayOption",
    "RegionOption",
    "ReportOption",
    "VariantOption",
    "ZonesOption",
    "check_output",
    "option_value",
    "ray_address",
    "region_name",
    "with_optional_values",
]

# An AWS region name: us-east-1, us-gov-west-1, cn-north-1, eu-isoe-west-1.
_REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]+")
# EKS Kubernetes versions: major.minor in ASCII digits (`1.36`).
_K8S_MINOR = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}")


def option_value(value: str | None) -> str | None:
    """Callback of the options whose value never starts with `-` (a region, zones, a pod or a
    rule): click takes the word after the option as its value, so a forgotten value
    (`--region --zones us-east-1a`) would make the next option the value and its value a file.
    Said here, naming the option whose value is missing."""
    if value is not None and value.startswith("-"):
        raise typer.BadParameter(f"requires a value ('{value}' is an option)")
    return value


def region_name(value: str | None) -> str | None:
    """Callback of every `--region`: a region name, so that an empty or misspelt one is a usage
    error naming --region, rather than a region without zones or instance types."""
    if option_value(value) is not None and not _REGION_NAME.fullmatch(value or ""):
        raise typer.BadParameter(f"'{value}' is not an AWS region name (like us-east-1)")
    return value


def kubernetes_minor(value: str | None) -> str | None:
    """Callback of `plan`'s, `lint`'s and `simulate`'s `--kubernetes-version`: `major.minor`
    (what EKS versions are), so that `abc` is a usage error naming the option rather than an
    AMI lookup failing deep inside."""
    if option_value(value) is not None and not _K8S_MINOR.fullmatch(value or ""):
        shown = value if len(value or "") <= 40 else f"{(value or '')[:40]}..."
        raise typer.BadParameter(f"'{shown}' is not a Kubernetes version (major.minor, e.g. 1.36)")
    return value


def check_output(output: str, allowed: tuple[str, ...]) -> None:
    """Refuse an `--output` format the command does not write (bad input, exit 2)."""
    if output not in allowed:
        raise BadInputError(f"--output '{output}' is not one of {', '.join(allowed)}")


OutputOption = Annotated[
    str,
    typer.Option("--output", "-o", help="table (default), json or yaml.", show_default=False),
]

# `--catalog FILE` and `--prices FILE` of plan, simulate and lint (read by
# `cli/catalogs.py`'s `catalog_from_options`).
CatalogOption = Annotated[
    str | None, typer.Option("--catalog", help="A catalog file replacing the bundled one.")
]
PricesOption = Annotated[
    str | None, typer.Option("--prices", help="A prices file overriding catalog prices.")
]
ZonesOption = Annotated[
    str | None,
    typer.Option(help="Comma-separated zones (default: the region's).", callback=option_value),
]

# `--reservations FILE` of plan, lint and simulate: the account's capacity reservations, as
# `aws ec2 describe-capacity-reservations` prints them (or `catalog export --reservations-out`).
ReservationsOption = Annotated[
    str | None,
    typer.Option(
        "--reservations",
        metavar="FILE",
        help="Capacity reservations (DescribeCapacityReservations output, YAML or JSON) that "
        "EC2NodeClasses may select.",
    ),
]

# `--report FILE` of simulate, plan and demo: the HTML report (`cli/reporting.py`, `report/`).
ReportOption = Annotated[
    str | None,
    typer.Option(
        "--report",
        metavar="FILE",
        help="Also write a self-contained HTML report (charts, tables; works offline) to FILE.",
    ),
]

# The AMI lookup keys of `ami` and `render --pin-ami`.
KubernetesOption = Annotated[
    str, typer.Option("--kubernetes-version", help="Cluster Kubernetes version.")
]
FamilyOption = Annotated[str, typer.Option("--family", help="AMI family.")]
VariantOption = Annotated[str, typer.Option("--variant", help="standard, nvidia or neuron.")]
ArchOption = Annotated[str, typer.Option("--arch", help="x86_64 or arm64.")]
OfflineOption = Annotated[
    bool, typer.Option("--offline", help="Use the bundled release list, not SSM.")
]
RegionOption = Annotated[
    str | None,
    typer.Option(
        "--region", help="AWS region (default: your AWS configuration).", callback=region_name
    ),
]


def ray_address(value: str | None) -> str | None:
    """Callback of `--ray`: an address Ray is reached at (`runtime/engines.is_ray_address`)."""
    if value is not None and not is_ray_address(value):
        raise typer.BadParameter(f"'{value}' is not a Ray address ({RAY_ADDRESSES})")
    return value


# `--ray [ADDRESS]` of `simulate --runs` and `sweep`: the runs as Ray tasks (runtime/
# ray_executor.py). Its value may be left out (`--ray` alone: a local Ray); typer's parser has no
# optional values, so the root group completes the command line first (`with_optional_values`).
RayOption = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="[ADDRESS]",
        help="Run the runs as Ray tasks: on a Ray started on this machine for the runs (no "
        "ADDRESS; --workers CPUs), on the cluster this machine is in (auto: RAY_ADDRESS, or a "
        "KubeRay head pod), or on ray://HOST:PORT. Needs pip install 'gpucap[ray]'. The output "
        "is the same as on local processes.",
        callback=ray_address,
    ),
]


_HOST_PORT = re.compile(r"[^\s/:]+:[0-9]+")
# The options whose value may be left out, and the value they then take.
OPTIONAL_VALUES = {"--ray": LOCAL}


def _looks_like_value(arg: str) -> bool:
    # An address, or something meant as one (`ray://head`, `head:10001`: the callback says what
    # is wrong with it); a file name or an option is the next argument, not the value.
    return not arg.startswith("-") and (
        arg in ("local", "auto") or "://" in arg or _HOST_PORT.fullmatch(arg) is not None
    )


def with_optional_values(args: Sequence[str]) -> list[str]:
    """The command line with the left-out value of each option of `OPTIONAL_VALUES` written in:
    `simulate s.yaml --runs 9 --ray` and `simulate --ray s.yaml --runs 9` become `--ray local`,
    `--ray auto` stays. Called by the root group (`cli/app.py`) before parsing; `--` ends it."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            out += args[i:]
            break
        out.append(arg)
        if arg in OPTIONAL_VALUES and not (i + 1 < len(args) and _looks_like_value(args[i + 1])):
            out.append(OPTIONAL_VALUES[arg])
    return out
