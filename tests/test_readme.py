"""The README's examples run as written: every `console` block's `$ gpucap ...` line that uses
files of this repository runs (in-process, from the repository's root) with exit 0, and the
output it shows appears, in order, in what the command prints (`...` stands for any text, a
line of `...` for any lines). Commands that need real AWS are left out."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Example:
    line: int  # of the `$` line in the README
    command: str  # variables substituted
    shown: tuple[str, ...]  # the output lines the README shows


def _examples() -> list[Example]:
    out: list[Example] = []
    lines = README.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        i += 1
        env: dict[str, str] = {}
        current: tuple[int, str] | None = None
        shown: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            text = lines[i]
            if text.startswith("$ "):
                if current is not None:
                    out.append(Example(current[0], current[1], tuple(shown)))
                current, shown = None, []
                command = text[2:].split("  #", 1)[0].strip()
                if re.fullmatch(r"[A-Z_]+=\S+", command):
                    name, value = command.split("=", 1)
                    env[name] = value
                elif "real AWS" not in text:
                    for name, value in env.items():
                        command = command.replace(f"${name}", value)
                    current = (i + 1, command)
            elif current is not None:
                shown.append(text)
            i += 1
        if current is not None:
            out.append(Example(current[0], current[1], tuple(shown)))
        i += 1
    return out


def _uses_repository_files(command: str) -> bool:
    for part in command.split("|"):
        for word in shlex.split(part)[1:]:
            path_like = "/" in word or word.endswith((".yaml", ".yml"))
            if path_like and not word.startswith("-") and not (ROOT / word).exists():
                return False
    return True


def _pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def _run(command: str) -> tuple[int, str]:
    runner = CliRunner()
    stdin: str | None = None
    code, output = 0, ""
    for part in command.split(" | "):
        words = shlex.split(part)
        assert words[0] == "gpucap", f"not a gpucap command: {part}"
        result = runner.invoke(app, words[1:], input=stdin)
        code, output, stdin = result.exit_code, result.output, result.stdout
        if code != 0:
            break
    return code, output


EXAMPLES = [e for e in _examples() if _uses_repository_files(e.command)]


def test_the_readme_has_runnable_examples() -> None:
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"README:{e.line}")
def test_a_readme_example_runs_as_written(
    example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, output = _run(example.command)
    assert code == 0, f"README line {example.line}: `{example.command}` exited {code}:\n{output}"
    actual = output.splitlines()
    at = 0
    for shown in example.shown:
        if not shown.strip() or shown.strip() == "...":
            continue
        pattern = _pattern(shown)
        while at < len(actual) and not pattern.fullmatch(actual[at]):
            at += 1
        assert at < len(actual), (
            f"README line {example.line}: `{example.command}` does not print, in this order:\n"
            f"{shown}\n--- it printed:\n{output}"
        )
        at += 1
