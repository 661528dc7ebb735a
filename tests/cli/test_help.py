"""`--help` of every command and subcommand, found from the click command tree.

The commands are discovered, not listed: a command added later is covered without editing this
file. Each help runs through `gpucap.cli.main.main` (the console-script entry point, which turns
a crash into exit 70), so a help text that breaks the formatter fails here as it fails for users.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import typer

from gpucap.cli.main import app, main


def _walk(command: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    # Typer builds on its own copy of click (typer._click): a group is what has `commands`.
    found = [(path, command)]
    subcommands = getattr(command, "commands", {})
    for name in sorted(subcommands):
        found.extend(_walk(subcommands[name], (*path, name)))
    return found


COMMANDS = _walk(typer.main.get_command(app), ())


def _help(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    mp.setattr(sys, "argv", ["gpucap", *path, "--help"])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    return (code if isinstance(code, int) else 0 if code is None else 1), capsys.readouterr().out


def _squash(text: str) -> str:
    """Whitespace-insensitive form: help formatters wrap long lines."""
    return " ".join(text.split())


def test_the_tree_has_the_documented_commands_and_the_subcommands() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    for expected in ("validate", "render", "plan", "lint", "demo", "ami resolve", "catalog export"):
        assert expected in paths


@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "gpucap" for p, _ in COMMANDS]
)
def test_help_exits_zero_with_the_usage_line_and_every_option_help_verbatim(
    path: tuple[str, ...],
    command: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out = _help(path, capsys, monkeypatch)
    assert code == 0, out
    assert out.lstrip().startswith(f"Usage: {' '.join(('gpucap', *path))} [OPTIONS]")
    # Help texts are plain text: brackets and slashes in them are printed, never eaten as markup.
    for param in command.params:
        text = getattr(param, "help", None)
        if text:
            assert _squash(text) in _squash(out), param.name


def test_lint_help_prints_the_image_size_format_with_its_brackets() -> None:
    # The crash of issue 8, through the installed module as a user runs it: Rich read the
    # `[/UNCOMPRESSED]` of this help as a closing tag and the command exited 70.
    proc = subprocess.run(
        [sys.executable, "-m", "gpucap", "lint", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "IMAGE=COMPRESSED[/UNCOMPRESSED]" in proc.stdout
