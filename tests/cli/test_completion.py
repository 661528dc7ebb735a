"""Shell completion: `gpucap --install-completion` / `--show-completion` (typer's), and the
completions themselves (commands, options) through the installed command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GPUCAP = shutil.which("gpucap", path=str(Path(sys.executable).parent)) or "gpucap"


def _complete(words: str) -> list[str]:
    env = {
        **os.environ,
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
        "_GPUCAP_COMPLETE": "complete_bash",
    }
    done = subprocess.run([GPUCAP], env=env, capture_output=True, text=True, check=False)
    return done.stdout.split()


@pytest.mark.parametrize(
    ("words", "offered"),
    [("gpucap pl", "plan"), ("gpucap si", "simulate"), ("gpucap plan --exp", "--explain")],
)
def test_the_shell_completes_commands_and_options(words: str, offered: str) -> None:
    assert offered in _complete(words)


def test_the_completion_script_is_printed_for_bash() -> None:
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = subprocess.run(
        [GPUCAP, "--show-completion", "bash"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "_GPUCAP_COMPLETE=complete_bash" in done.stdout
