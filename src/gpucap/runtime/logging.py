"""Logging for gpucap: one `gpucap` logger hierarchy, quiet by default, to stderr.

The CLI calls `configure(verbosity)` once (`-v` info, `-vv` debug); library code only calls
`get_logger(__name__)` and never configures handlers, so embedding gpucap stays the host's call.
Log records never go to stdout, which belongs to the command's output (tables, JSON).
"""

from __future__ import annotations

import logging

from rich.console import Console
from rich.logging import RichHandler

__all__ = ["configure", "get_logger"]

_ROOT = "gpucap"


def get_logger(name: str) -> logging.Logger:
    """A logger under `gpucap` (pass `__name__`)."""
    return logging.getLogger(name if name.startswith(_ROOT) else f"{_ROOT}.{name}")


def configure(verbosity: int = 0) -> None:
    """Send gpucap's logs to stderr at WARNING (0), INFO (1) or DEBUG (2+)."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger(_ROOT)
    root.setLevel(level)
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = RichHandler(
        console=Console(stderr=True), show_time=False, show_path=False, rich_tracebacks=False
    )
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root.addHandler(handler)
    root.propagate = False
