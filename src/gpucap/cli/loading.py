"""Reading the manifests a command was given: `load_paths` and `report_issues`.

`load_paths` is a module attribute that the command modules call through this module
(`loading.load_paths(...)`), so tests can replace it for every command at once.
"""

from __future__ import annotations

from gpucap.apis import serde
from gpucap.apis.serde import LoadResult
from gpucap.cli.render import format_issue
from gpucap.cli.terminals import err

__all__ = ["load_paths", "report_issues"]


def load_paths(paths: list[str]) -> LoadResult:
    """`apis.serde.load_paths`: the files, directories or `-` a command was given, loaded."""
    return serde.load_paths(paths)


def report_issues(result: LoadResult) -> None:
    """Each of the loader's issues as one line on stderr (errors red, warnings yellow)."""
    for issue in result.issues:
        err.line(format_issue(issue), style="red" if issue.severity == "error" else "yellow")
