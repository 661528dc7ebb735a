"""`cli/app.py`: the command table, the lazy group, and the one input-error boundary."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import typer
from typer import _click as click
from typer.core import TyperCommand
from typer.testing import CliRunner

from gpucap.apis.reading import InputError
from gpucap.cli.app import COMMANDS, app
from gpucap.cli.errors import BadInputError, map_exceptions
from gpucap.cli.reporting import check_report_path
from gpucap.cli.simulate import EventsWriteError, SimulateOptions
from gpucap.cli.simulate import run as simulate_run
from gpucap.cloudprovider.aws.amifamily.ami import AMILookupError
from gpucap.cloudprovider.aws.amifamily.releases import UnknownReleaseError
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.data import CatalogError
from gpucap.lint.config import ConfigError
from gpucap.runtime.errors import GpucapInputError
from gpucap.runtime.terminal import Terminal
from gpucap.sim.scenario import ScenarioError

runner = CliRunner()


def _real(name: str) -> click.Command:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands[name]
    assert command is not None
    return command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_summary_gives_the_short_help_the_command_gives_at_any_width(name: str) -> None:
    real = _real(name)
    stand_in = TyperCommand(name=name, help=COMMANDS[name].summary)
    for limit in range(10, 400, 7):
        assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit), limit


def test_every_command_module_is_named_after_its_command_and_imports_at_its_top() -> None:
    for name, command in COMMANDS.items():
        module, _, attribute = command.target.partition(":")
        assert getattr(importlib.import_module(module), attribute) is not None, name


@pytest.mark.parametrize(
    "kind",
    [
        InputError,
        ScenarioError,
        ConfigError,
        AMILookupError,
        UnknownReleaseError,
        EventsWriteError,
        BadInputError,
        CatalogError,
    ],
)
def test_every_input_error_class_derives_from_the_one_root(kind: type[Exception]) -> None:
    assert issubclass(kind, GpucapInputError)


def test_an_input_error_raised_by_any_command_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpucap.cli import loading  # noqa: PLC0415

    def refuse(paths: list[str]) -> Any:
        raise InputError(f"{paths[0]}: line 3: not a mapping")

    monkeypatch.setattr(loading, "load_paths", refuse)
    for command in ("validate", "plan", "lint"):
        result = runner.invoke(app, [command, "pods.yaml"])
        assert result.exit_code == 2, command
        assert result.stderr == "error: pods.yaml: line 3: not a mapping\n", command
        assert result.stdout == ""


@pytest.mark.parametrize(
    ("check", "line"),
    [
        (lambda: check_report_path("-"), "--report -: the report is a file"),
        (lambda: check_report_path(""), "--report '': not a valid file name"),
        (
            lambda: _simulate(SimulateOptions("s.yaml", speed=0.0)),
            "--speed: 0.0 is not a positive number of virtual seconds",
        ),
        (
            lambda: _simulate(SimulateOptions("-")),
            "SCENARIO: a scenario is read from a file",
        ),
    ],
)
def test_simulate_and_the_report_checks_raise_input_errors_and_leave_printing_to_the_boundary(
    check: Callable[[], None], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(BadInputError) as raised:
        check()
    assert str(raised.value).startswith(line)
    assert capsys.readouterr() == ("", "")


def _simulate(opts: SimulateOptions) -> None:
    def no_catalog(region: str) -> Catalog:
        raise AssertionError(f"the options are checked before the catalog ({region})")

    simulate_run(opts, catalog_for=no_catalog, out=Terminal(), err=Terminal(stderr=True))


def test_map_exceptions_turns_the_listed_types_into_input_errors_and_passes_the_rest() -> None:
    aws = {KeyError: lambda e: f"AWS: {e.args[0]}"}
    with pytest.raises(BadInputError, match=r"^AWS: throttled$"), map_exceptions(aws):
        raise KeyError("throttled")
    # Not the input's fault: stays a crash (exit 70).
    with pytest.raises(ZeroDivisionError), map_exceptions({KeyError: str}):
        _ = 1 / 0
    # Already an input error: its own line, unchanged.
    with pytest.raises(InputError, match=r"^a\.yaml: bad$"), map_exceptions({ValueError: str}):
        raise InputError("a.yaml: bad")


def test_the_entry_point_still_runs_as_python_dash_m_gpucap() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpucap", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert done.stdout.startswith("gpucap ")
