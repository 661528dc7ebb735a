"""`gpucap validate FILES`: load, default and validate manifests; one summary line per object.

Registered by `cli/app.py`; bad input is one `error:` line and exit 2 (the app's boundary).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from gpucap.apis.references import missing_node_classes
from gpucap.cli import loading
from gpucap.cli.options import OutputOption, check_output
from gpucap.cli.render import describe, format_list
from gpucap.cli.terminals import EXIT_BAD_INPUT, err, out

__all__ = ["validate"]


def validate(
    files: Annotated[
        list[str], typer.Argument(help="Manifest files, directories, or - for stdin.")
    ],
    output: OutputOption = "table",
) -> None:
    """Load, default and validate manifests; print a one-line summary per object."""
    check_output(output, ("table", "json", "yaml"))
    result = loading.load_paths(files)
    if result.ok:
        # What no single object shows: a NodePool naming an EC2NodeClass the input lacks.
        result.issues.extend(missing_node_classes(result.objects.items))
    loading.report_issues(result)
    if not result.ok:
        err.line(f"{len(result.errors)} error(s); nothing was validated")
        raise typer.Exit(EXIT_BAD_INPUT)
    if output == "table":
        # One print for all the lines (a List of 10,000 pods printed line by line was slow).
        out.lines([f"{m.source} {m.ref}: {describe(m.obj)}" for m in result.manifests])
        n = len(result.manifests)
        out.line(f"{n} object{'s' if n != 1 else ''} valid, {len(result.warnings)} warning(s)")
    else:
        sys.stdout.write(format_list(result.manifests, output))
