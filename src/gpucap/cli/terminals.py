"""The CLI's two terminals and its exit codes, shared by every command module.

Every line of text the commands print goes through `out` and `err`: each line is escaped whole
(`runtime/terminal.py`), so a name, a file name or an error message quoting user input can
neither control the terminal nor add a line. Machine outputs (JSON, YAML, SARIF) and `render`'s
stdout are written to sys.stdout directly. Exit codes follow contract.md.
"""

from __future__ import annotations

from gpucap.runtime.terminal import Terminal

__all__ = ["EXIT_BAD_INPUT", "EXIT_FINDINGS", "EXIT_OK", "err", "out"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2

out = Terminal()
err = Terminal(stderr=True)
