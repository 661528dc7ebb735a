"""Usage errors (a missing value, an unknown option, a missing argument, a bad value) are one
line on stderr naming the option, `error: --explain: requires a value`, and exit 2, as every
other gpucap error; never click's usage block. Run through the console-script entry point
(`main`), which is where they are handled."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpucap.cli.main import main

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"
POOL = str(WORKSHOP / "nodepool.yaml")
FILES_MISSING = "error: FILES: missing argument (Manifest files, directories, or - for stdin)"


def run(
    args: list[str], capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    mp.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    captured = capsys.readouterr()
    return (code if isinstance(code, int) else 0), captured.out, captured.err


CASES = [
    (["lint", "--explain"], "error: --explain: requires a value"),
    (["lint", POOL, "--explain"], "error: --explain: requires a value"),
    (["plan", POOL, "--explain"], "error: --explain: requires a value"),
    # A pod name and no files: the name went to --explain, and FILES is what is missing.
    (["plan", "--explain", "web-0"], FILES_MISSING),
    (["validate"], FILES_MISSING),
    (["plan"], FILES_MISSING),
    (["render"], "error: FILES: missing argument (Manifest files, directories, or - for stdin)"),
    (
        ["plan", "x.yaml", "--kubernetes-version", "abc"],
        "error: --kubernetes-version: 'abc' is not a Kubernetes version (major.minor, e.g. 1.36)",
    ),
    (
        ["simulate", "s.yaml", "--kubernetes-version", "1.x"],
        "error: --kubernetes-version: '1.x' is not a Kubernetes version (major.minor, e.g. 1.36)",
    ),
    (["plan", POOL, "--bogus"], "error: --bogus: no such option"),
    (["plan", POOL, "-x"], "error: -x: no such option"),
    (
        ["plan", POOL, "--regio", "us-east-1"],
        "error: --regio: no such option (did you mean --region or --report?)",
    ),
    (["lint", POOL, "--strict=yes"], "error: --strict: takes no value"),
    (
        ["plan", POOL, "--passes", "0"],
        "error: --passes: input should be greater than or equal to 1",
    ),
    (["plan", POOL, "--region"], "error: --region: requires a value"),
    (["plan", POOL, "--zones"], "error: --zones: requires a value"),
    # A forgotten value: click takes the next option as the value (and its value as a file).
    (
        ["plan", POOL, "--region", "--zones", "us-east-1a"],
        "error: --region: requires a value ('--zones' is an option)",
    ),
    (
        ["plan", POOL, "--zones", "--region", "us-west-2"],
        "error: --zones: requires a value ('--region' is an option)",
    ),
    (
        ["plan", "--explain", "--output", "json", POOL],
        "error: --explain: requires a value ('--output' is an option)",
    ),
    (
        ["lint", "--explain", "--strict", POOL],
        "error: --explain: requires a value ('--strict' is an option)",
    ),
    (["plan", POOL, "--region="], "error: --region: '' is not an AWS region name (like us-east-1)"),
    (
        ["plan", POOL, "--region", "US-EAST-1"],
        "error: --region: 'US-EAST-1' is not an AWS region name (like us-east-1)",
    ),
    (
        ["lint", POOL, "--region", "east"],
        "error: --region: 'east' is not an AWS region name (like us-east-1)",
    ),
    (
        ["ami", "resolve", "--offline", "--region", ""],
        "error: --region: '' is not an AWS region name (like us-east-1)",
    ),
    (
        ["plan", POOL, "--region", "eu-north-9", "--zones", "x"],
        "error: --zones: 'x' is not a zone of region eu-north-9",
    ),
    (
        ["frob"],
        "error: frob: no such command (commands: validate, render, plan, simulate, sweep, lint, demo, ami, "
        "catalog)",
    ),
    (["plann"], "error: plann: no such command (did you mean 'plan'?)"),
    (["ami", "frob"], "error: frob: no such command (commands: resolve, list, diff)"),
    (["ami", "resolve", "--offline", "extra"], "error: extra: unexpected extra argument(s)"),
    (["catalog", "export"], "error: --output: missing option (File to write)"),
    (["ami", "diff", "v20250403"], "error: NEW: missing argument (Release, e.g. v20250410)"),
    (["plan", POOL, "--\x1b[2J\nx"], "error: --\\x1b[2J\\nx: no such option"),
]


@pytest.mark.parametrize(
    ("args", "line"), CASES, ids=[" ".join(a[:1] + a[2:] if POOL in a else a) for a, _ in CASES]
)
def test_a_usage_error_is_one_line_naming_the_option_and_exits_2(
    args: list[str],
    line: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, err = run(args, capsys, monkeypatch)
    assert (code, out, err) == (2, "", line + "\n")


@pytest.mark.parametrize("args", [[], ["ami"], ["catalog"]])
def test_a_command_group_alone_prints_its_help_and_exits_2(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `no_args_is_help`: the help is what was asked for, not an error line (click's exit 2).
    code, _, err = run(args, capsys, monkeypatch)
    assert code == 2
    assert err.startswith(f"Usage: gpucap {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")


def test_a_good_run_through_main_exits_0_and_an_exit_code_is_kept(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(["ami", "resolve", "--offline"], capsys, monkeypatch)[:2] == (0, "v20260827\n")
    assert run(["validate", str(WORKSHOP / "missing.yaml")], capsys, monkeypatch)[0] == 2
