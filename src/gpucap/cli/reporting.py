"""`--report FILE` for `simulate`, `plan`, `sweep` and `demo`: where the HTML report goes,
checked before the work starts and written after it. Each problem raises `BadInputError` with
its line; the app's boundary (`cli/app.py`) prints it as `error: <line>` and exits 2, as for
every input error.

- `check_report_path(path)`: refuses, before anything runs, a name that cannot be a file
  (empty, a NUL), a directory, or a file in a folder that does not exist.
- `write_report_or_exit(path, title, sections)`: renders the page (`report/page.py`) and
  writes it; a write that still fails (permissions, a full disk) is refused too.
- `write_plan_report(path, plan, manifests, catalog, title=...)`: `plan --report`.
- `refuse_overwriting_inputs(option, path, inputs)`: refuses an output (`--report`,
  `simulate --events`) that names one of the run's inputs, before the run writes anything.

The report package (Jinja2, plotly.js) is imported only here, when `--report` is given, so the
commands that do not write a report do not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from gpucap.apis.reading import MANIFEST_SUFFIXES, os_reason
from gpucap.cli.errors import BadInputError

if TYPE_CHECKING:
    from gpucap.apis.serde import Manifests
    from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
    from gpucap.controllers.provisioning import Plan
    from gpucap.report.page import PlanSection, SimulationSection, SimulationSetSection
    from gpucap.report.sweep import SweepSection

__all__ = [
    "check_report_path",
    "refuse_overwriting_inputs",
    "write_plan_report",
    "write_report_or_exit",
]


def check_report_path(path: str) -> None:
    """Raise `BadInputError` when `path` cannot take the report."""
    if not path or "\0" in path:
        raise BadInputError(f"--report {path!r}: not a valid file name")
    if path == "-":
        raise BadInputError("--report -: the report is a file; give it a name (report.html)")
    if os.path.isdir(path):
        raise BadInputError(f"--report {path}: is a directory; give a file name (report.html)")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise BadInputError(f"--report {path}: cannot write: no such directory {folder}")
    if not os.access(folder, os.W_OK):
        raise BadInputError(f"--report {path}: cannot write: permission denied in {folder}")


def refuse_overwriting_inputs(option: str, path: str, inputs: Iterable[str]) -> None:
    """Raise `BadInputError` when the output `path` of `option` is one of the
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
            raise BadInputError(
                f"{option} {path}: is one of the inputs ({given}); writing it would overwrite "
                "it: give another file name",
            )


def write_report_or_exit(
    path: str,
    title: str,
    sections: Sequence[SimulationSection | PlanSection | SimulationSetSection | SweepSection],
) -> None:
    """Write the report; raise `BadInputError` when the file cannot be written."""
    from gpucap.report.page import write_report  # noqa: PLC0415 - only with --report

    try:
        write_report(path, title, sections)
    except OSError as e:
        raise BadInputError(f"--report {path}: cannot write: {os_reason(e)}") from None


def write_plan_report(
    path: str, plan: Plan, manifests: Manifests, catalog: Catalog, *, title: str
) -> None:
    """`plan --report`: the plan's page (NodeClaims, options not taken, pending pods)."""
    from gpucap.report.page import PlanSection  # noqa: PLC0415 - only with --report
    from gpucap.report.plan import plan_view  # noqa: PLC0415

    section = PlanSection("Plan", plan_view(plan, manifests, catalog))
    write_report_or_exit(path, title, [section])
