"""`--report FILE` on `simulate`, `plan` and `demo` through the real entry point: the report is
written in addition to what the terminal shows, and a path that cannot take it is one line and
exit 2 before any work is done."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli import main as cli_main
from tests.report.runs import STORIES

STORY = str(STORIES / "underutilized.yaml")
WORKSHOP = str(resources.files("gpucap.data").joinpath("examples", "workshop"))


def gpucap(args: list[str], capsys: Any, monkeypatch: Any) -> tuple[int, str, list[str]]:
    monkeypatch.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    code = exit_info.value.code
    captured = capsys.readouterr()
    return (code if isinstance(code, int) else 0), captured.out, captured.err.splitlines()


def test_simulate_writes_the_report_and_prints_the_same_table(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    report = tmp_path / "run.html"
    code, with_report, err = gpucap(
        ["simulate", STORY, "--report", str(report)], capsys, monkeypatch
    )
    assert (code, err) == (0, [])
    code, without, _ = gpucap(["simulate", STORY], capsys, monkeypatch)
    assert with_report == without
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "Scenario underutilized" in html
    assert "NodeClaim gpu-1 to be disrupted: underutilized" in html


def test_plan_writes_the_report_and_prints_the_plan(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    report = tmp_path / "plan.html"
    code, out, _ = gpucap(["plan", WORKSHOP, "--report", str(report)], capsys, monkeypatch)
    assert code == 0
    assert "1 new node(s)" in out
    assert "g6.xlarge" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", [["simulate", STORY], ["plan", WORKSHOP], ["demo"]])
@pytest.mark.parametrize(
    "case",
    [
        ("{tmp}", "--report {tmp}: is a directory; give a file name (report.html)"),
        (
            "{tmp}/no/such/dir/r.html",
            "--report {tmp}/no/such/dir/r.html: cannot write: no such directory {tmp}/no/such/dir",
        ),
        ("-", "--report -: the report is a file; give it a name (report.html)"),
    ],
)
def test_a_report_path_that_cannot_be_written_is_one_line_and_exit_2(
    command: list[str], case: tuple[str, str], tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    where, message = case
    path = where.format(tmp=tmp_path)
    code, out, err = gpucap([*command, "--report", path], capsys, monkeypatch)
    assert code == 2
    assert err[-1] == "error: " + message.format(tmp=tmp_path)
    assert [line for line in err if line.startswith("error:")] == [err[-1]]
    assert out == ""  # refused before any work


def test_a_write_that_fails_late_is_one_line_and_exit_2(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    from gpucap.report import page  # noqa: PLC0415

    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(page, "write_report", full_disk)
    path = tmp_path / "r.html"
    code, _, err = gpucap(["simulate", STORY, "--report", str(path)], capsys, monkeypatch)
    assert code == 2
    assert err == [f"error: --report {path}: cannot write: No space left on device"]
