"""`gpucap render FILES`: fill `${VAR}`/`$VAR` placeholders like envsubst, but refuse (exit 2,
naming every missing variable) instead of writing empty strings.

The filling is `apis/placeholders.py`'s; this module reads the options and the files, and
writes the result to stdout byte for byte (it is the user's own file, not text for a terminal).
Named `render_cmd` because `cli/render.py` holds the CLI's formatters. Registered by
`cli/app.py`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from gpucap.apis.placeholders import parse_only, pin_alias, terraform_template
from gpucap.apis.placeholders import render as fill_placeholders
from gpucap.apis.reading import manifest_files, read_path, read_stream
from gpucap.cli.errors import BadInputError
from gpucap.cli.options import KubernetesOption, OfflineOption, RegionOption, VariantOption
from gpucap.cli.terminals import EXIT_BAD_INPUT, err

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["render"]


def render(  # noqa: PLR0917 - typer maps parameters to options
    files: Annotated[
        list[str], typer.Argument(help="Manifest files, directories, or - for stdin.")
    ],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE, overrides the environment (repeatable)."),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="VAR[,VAR...] (or envsubst's SHELL-FORMAT, '$VAR ${VAR}'): fill just these "
            "(and --set) variables; leave every other $X as written (repeatable).",
        ),
    ] = None,
    pin_ami: Annotated[
        bool,
        typer.Option(
            "--pin-ami",
            help="Set AMI_VERSION to the recommended release (SSM, or --offline) and replace "
            "any `@latest` alias with it.",
        ),
    ] = False,
    kubernetes_version: KubernetesOption = "1.36",
    variant: VariantOption = "nvidia",
    offline: OfflineOption = False,
    region: RegionOption = None,
) -> None:
    """Fill ${VAR} and $VAR placeholders from the environment and --set, like envsubst, but
    fail (exit 2) naming every missing variable instead of writing empty strings. Variables
    used only in userData, container command/args and ConfigMap scripts are the node's or the
    container's: they are left as written, with one warning. A Terraform template is refused."""
    values = dict(os.environ)
    explicit: list[str] = []
    for item in set_ or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise BadInputError(f"--set '{item}' must be KEY=VALUE")
        values[key] = value
        explicit.append(key)
    names = _only(only) if only is not None else None
    pinned: str | None = None
    if pin_ami:
        pinned = _recommended(kubernetes_version, variant, offline, region)
        values["AMI_VERSION"] = pinned
        explicit.append("AMI_VERSION")
    texts = [
        (f, read_stream(sys.stdin, "<stdin>") if f == "-" else read_path(f))
        for f in _expanded(files)
    ]
    for name, text in texts:
        template = terraform_template(text, name)
        if template is not None:  # `${var.x}` and `%{ for }` are Terraform's to fill
            raise BadInputError(template)
    done = fill_placeholders([t for _, t in texts], values, only=names, explicit=explicit)
    failed = False
    for (name, _), missing in zip(texts, done.missing, strict=True):
        if missing:
            failed = True
            err.line(f"error: {name}: missing variable(s): {', '.join(missing)}")
    if failed:
        raise typer.Exit(EXIT_BAD_INPUT)
    if done.left:
        err.line(
            "warning: left as written, for the node or container to expand at run time "
            "(used only in userData, container command/args or ConfigMap scripts): "
            f"{', '.join(done.left)}; "
            "--set NAME=VALUE or --only NAME fills one",
            style="yellow",
        )
    rendered = list(done.texts)
    if pinned is not None:
        # Never write `@latest`: it rolls the whole fleet on AWS's schedule.
        rendered = [pin_alias(body, pinned) for body in rendered]
    # One file comes out byte for byte; several are joined as one multi-document stream.
    head = [t if t.endswith("\n") else t + "\n" for t in rendered[:-1]]
    sys.stdout.write("---\n".join([*head, rendered[-1]]))


def _expanded(files: list[str]) -> list[str]:
    """The files as given, a directory replaced by its manifest files (sorted, as `validate`
    and `plan` read a directory)."""
    out: list[str] = []
    for f in files:
        if f != "-" and os.path.isdir(f):
            out.extend(sorted(str(p) for p in manifest_files(f)))
        else:
            out.append(f)
    return out


def _only(items: Iterable[str]) -> list[str]:
    """The `--only` names, or the one-line refusal naming the item that is not a name."""
    try:
        return parse_only(items)
    except ValueError as e:
        raise BadInputError(f"--only '{e}' is not a variable name (VAR[,VAR...])") from None


def _recommended(kubernetes_version: str, variant: str, offline: bool, region: str | None) -> str:
    """The release `--pin-ami` writes: al2023 x86_64's recommended one."""
    # Only --pin-ami asks AWS: the AMI modules stay out of a plain `render`'s start-up.
    from gpucap.cli.aws import release  # noqa: PLC0415

    return release(kubernetes_version, "al2023", "x86_64", variant, offline, region).version
