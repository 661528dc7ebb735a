"""`--report FILE` for `simulate`, `plan` and `demo`: where the HTML report goes, checked before
the work starts and written after it, each problem one `error:` line and exit 2.

- `check_report_path(path, err)`: refuses, before anything runs, a name that cannot be a file
  (empty, a NUL), a directory, or a file in a folder that does not exist.
- `write_report_or_exit(path, title, sections, err)`: renders the page (`report/page.py`) and
  writes it; a write that still fails (permissions, a full disk) is one line too.
- `write_plan_report(path, plan, manifests, catalog, title=..., err=...)`: `plan --report`.
- `refuse_overwriting_inputs(option, path, inputs, err)`: refuses an output (`--report`,
  `simulate --events`) that names one of the run's inputs, before the run writes anything.

The report package (Jinja2, plotly.js) is imported only here, when `--report` is given, so the
commands that do not write a report do not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import typer

from gpucap.apis.reading import MANIFEST_SUFFIXES, os_reason
from gpucap.runtime.terminal import Terminal

if TYPE_CHECKING:
    from gpucap.apis.serde import Manifests
    from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
    from gpucap.controllers.provisioning import Plan
    from gpucap.report.page import PlanSection, SimulationSection

__all__ = [
    "EXIT_BAD_INPUT",
    "check_report_path",
    "refuse_overwriting_inputs",
    "write_plan_report",
    "write_report_or_exit",
]

EXIT_BAD_INPUT = 2


def _fail(err: Terminal, message: str) -> typer.Exit:
    err.line(f"error: {message}")
    return typer.Exit(EXIT_BAD_INPUT)


def check_report_path(path: str, err: Terminal) -> None:
    """Raise `typer.Exit(2)` after one line when `path` cannot take the report."""
    if not path or "\0" in path:
        raise _fail(err, f"--report {path!r}: not a valid file name")
    if path == "-":
        raise _fail(err, "--report -: the report is a file; give it a name (report.html)")
    if os.path.isdir(path):
        raise _fail(err, f"--report {path}: is a directory; give a file name (report.html)")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise _fail(err, f"--report {path}: cannot write: no such directory {folder}")
    if not os.access(folder, os.W_OK):
        raise _fail(err, f"--report {path}: cannot write: permission denied in {folder}")


def refuse_overwriting_inputs(option: str, path: str, inputs: Iterable[str], err: Terminal) -> None:
    """Raise `typer.Exit(2)` after one line when the output `path` of `option` is one of the
    `inputs` (files, or directories whose manifests are read): writing it would destroy the
    input the run was reading (`simulate s.yaml --events s.yaml`). An output that does not exist
    yet is no input; the same file under another name (a link) is still the same file."""
    if path == "-" or not os.path.exists(path):
        return
    for given in inputs:
        if given == "-":
            continue
        try:
            if os.path.isdir(given):
                inside = os.path.commonpath([os.path.realpath(given), os.path.realpath(path)])
                same = inside == os.path.realpath(given) and path.lower().endswith(
                    MANIFEST_SUFFIXES
                )
            else:
                same = os.path.samefile(path, given)
        except (OSError, ValueError):
            continue  # an input that cannot be looked at is the loader's to report
        if same:
            raise _fail(
                err,
                f"{option} {path}: is one of the inputs ({given}); writing it would overwrite "
                "it: give another file name",
            )


def write_report_or_exit(
    path: str,
    title: str,
    sections: Sequence[SimulationSection | PlanSection],
    err: Terminal,
) -> None:
    """Write the report; raise `typer.Exit(2)` after one line when the file cannot be written."""
    from gpucap.report.page import write_report  # noqa: PLC0415 - only with --report

    try:
        write_report(path, title, sections)
    except OSError as e:
        raise _fail(err, f"--report {path}: cannot write: {os_reason(e)}") from None


def write_plan_report(
    path: str, plan: Plan, manifests: Manifests, catalog: Catalog, *, title: str, err: Terminal
) -> None:
    """`plan --report`: the plan's page (NodeClaims, options not taken, pending pods)."""
    from gpucap.report.page import PlanSection  # noqa: PLC0415 - only with --report
    from gpucap.report.plan import plan_view  # noqa: PLC0415

    section = PlanSection("Plan", plan_view(plan, manifests, catalog))
    write_report_or_exit(path, title, [section], err)
