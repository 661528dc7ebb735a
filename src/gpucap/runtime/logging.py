"""Logging for gpucap: one `gpucap` logger hierarchy, quiet by default, to stderr.

The CLI calls `configure(verbosity)` once (`-v` info, `-vv` debug); library code only calls
`get_logger(__name__)` and never configures handlers, so embedding gpucap stays the host's call.
Log records never go to stdout, which belongs to the command's output (tables, JSON). Each
record is one line, `warning: gpucap.module: message`, escaped as every other line gpucap
prints (`runtime/terminal.py`): a message quoting an instance type, a file name or an AWS error
cannot add lines or control the terminal.
"""

from __future__ import annotations

import logging
import sys

from gpucap.runtime.terminal import escape

__all__ = ["configure", "get_logger"]

_ROOT = "gpucap"


def get_logger(name: str) -> logging.Logger:
    """A logger under `gpucap` (pass `__name__`)."""
    return logging.getLogger(name if name.startswith(_ROOT) else f"{_ROOT}.{name}")


class _OneLine(logging.Formatter):
    """`level: logger: message` as one escaped line (an exception's traceback included)."""

    def format(self, record: logging.LogRecord) -> str:
        return escape(f"{record.levelname.lower()}: {super().format(record)}")


def configure(verbosity: int = 0) -> None:
    """Send gpucap's logs to stderr at WARNING (0), INFO (1) or DEBUG (2+)."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger(_ROOT)
    root.setLevel(level)
    for h in list(root.handlers):
        root.removeHandler(h)
    # sys.stderr as it is now: the CLI configures on every run (a test runner swaps it).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("%(name)s: %(message)s"))
    root.addHandler(handler)
    root.propagate = False
