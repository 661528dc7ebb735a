"""The `gpucap` typer app: the root options, the command table, and the input-error boundary.

One module per command (`cli/validate.py`, `cli/render_cmd.py`, `cli/plan.py`,
`cli/simulate.py`, `cli/sweep.py`, `cli/lint.py`, `cli/demo.py`, and the groups `cli/ami.py`,
`cli/catalog.py`), each importing what it uses at its top. This module imports none of them:
`COMMANDS` names each command's module and its one-line summary, and `LazyGroup` imports a
command's module only when that command is run (or its own `--help` is asked for). So
`gpucap --version`, `gpucap --help` and a usage error load no models, no numpy and no
simulator, and `gpucap validate` loads what validating needs and nothing of `plan` (issue 12).

The boundary: every input error derives from `runtime.errors.GpucapInputError`; `LazyGroup`
catches it around the command it runs, prints `error: <message>` and exits 2. It is the one
place a command's bad input becomes a line and a status, for the console script and for
in-process callers (`CliRunner` on `app`) alike. Usage errors and crashes are `cli/main.py`'s.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer import _click as click  # typer's own copy of click: its commands and contexts
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, TyperInfo

from gpucap import __version__
from gpucap.cli.terminals import EXIT_BAD_INPUT, EXIT_OK, err, out
from gpucap.runtime.errors import GpucapInputError

__all__ = ["COMMANDS", "Command", "LazyGroup", "app"]


@dataclass(frozen=True, slots=True)
class Command:
    """Where a command lives (`module:attribute`, a function or a `typer.Typer` group) and
    its summary: the first sentence of its help, which `gpucap --help` lists without importing
    the module (tests/cli/test_app.py checks it against the command's own help)."""

    target: str
    summary: str


# In the order `gpucap --help` lists them: the commands, then the groups.
COMMANDS: dict[str, Command] = {
    "validate": Command(
        "gpucap.cli.validate:validate",
        "Load, default and validate manifests; print a one-line summary per object.",
    ),
    "render": Command(
        "gpucap.cli.render_cmd:render",
        "Fill ${VAR} and $VAR placeholders from the environment and --set, like envsubst, but "
        "fail (exit 2) naming every missing variable instead of writing empty strings.",
    ),
    "plan": Command(
        "gpucap.cli.plan:plan",
        "Schedule the pending pods as Karpenter's provisioner would and print what it would "
        "launch, at what price, and why any pod stays Pending.",
    ),
    "simulate": Command(
        "gpucap.cli.simulate:simulate",
        "Run a scenario on a virtual clock: Karpenter provisioning GPU nodes over a simulated "
        "EC2 as pods come and go, capacity vanishes and spot is interrupted, and disrupting "
        "them (consolidation, drift, expiration, within budgets); print the timeline in plain "
        "words and the bill (-o json: the events and the summary).",
    ),
    "sweep": Command(
        "gpucap.cli.sweep:sweep",
        "Compare designs of a scenario (NodePool requirements, any field) over many seeds: one "
        "row per variant with cost, time to ready, serving lost, interruptions and "
        "disruptions, the Pareto front of cost vs serving lost, and the cheapest variant "
        "within a serving bound; on local processes or a Ray cluster.",
    ),
    "lint": Command(
        "gpucap.cli.lint:lint",
        "Find GPU NodePool mistakes before they reach a cluster: rules with stable ids, each "
        "with a why and a fix.",
    ),
    "demo": Command(
        "gpucap.cli.demo:demo",
        "Run gpucap on the bundled workshop example (a GPU NodePool, EC2NodeClass, device "
        "plugin, time-slicing config and a vLLM Deployment): validate it, lint it, plan it; "
        "then simulate three acts on it: spot running out and the fallback to on-demand, with "
        "the bill; a GPU pod created before the device plugin, with what the wrong order "
        "costs; and a day of a world that reclaims spot and changes demand by itself, 20 runs "
        "spot first against on-demand only.",
    ),
    "ami": Command(
        "gpucap.cli.ami:app",
        "EKS-optimized AMI releases: the recommended one, the list, and what changes between two.",
    ),
    "catalog": Command("gpucap.cli.catalog:app", "The EC2 instance-type catalog."),
}


class _Commands(MutableMapping[str, click.Command]):
    """The group's `commands`: every name of `COMMANDS`, each command built when first asked
    for. Iterating gives the names and imports nothing (click's "no such command" suggestions
    read them)."""

    def __init__(self, group: LazyGroup) -> None:
        self._group = group
        self._built: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = self._group.build(name, COMMANDS[name])
        return self._built[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(COMMANDS), **dict.fromkeys(self._built)})

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LazyGroup(TyperGroup):
    """The root group: commands from `COMMANDS`, imported on use, and the input-error
    boundary around the command it runs (see the module docstring)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self)

    def build(self, name: str, command: Command) -> click.Command:
        """The click command of `command`, built as `app.command()` or `app.add_typer()` would
        have built it on this app (the same markup mode, so help stays plain text)."""
        module, _, attribute = command.target.partition(":")
        target = getattr(importlib.import_module(module), attribute)
        if isinstance(target, typer.Typer):
            return typer.main.get_group_from_info(
                TyperInfo(target, name=name),
                pretty_exceptions_short=app.pretty_exceptions_short,
                suggest_commands=self.suggest_commands,
                rich_markup_mode=self.rich_markup_mode,
            )
        return typer.main.get_command_from_info(
            CommandInfo(name=name, callback=target),
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=self.rich_markup_mode,
        )

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `--ray [ADDRESS]`: an option whose value may be left out, which typer's parser cannot
        # say; the command line gets the left-out value first (cli/options.py, a light module).
        from gpucap.cli.options import with_optional_values  # noqa: PLC0415

        return super().parse_args(ctx, with_optional_values(args))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The `Commands:` section of `gpucap --help`, from the summaries: typer's own layout,
        given stand-ins that carry only the help text, so listing imports no command."""
        stand_ins: dict[str, click.Command] = {
            n: TyperCommand(name=n, help=c.summary) for n, c in COMMANDS.items()
        }
        TyperGroup(commands=stand_ins).format_commands(ctx, formatter)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GpucapInputError as e:
            for line in e.lines():
                err.line(f"error: {line}")
            raise typer.Exit(EXIT_BAD_INPUT) from None


app = typer.Typer(
    name="gpucap",
    cls=LazyGroup,
    help="Karpenter's GPU capacity model for Amazon EKS: lint, plan and simulate GPU NodePools "
    "before they cost money.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Help texts are plain text: with typer's default ("rich"), a help naming an optional part as
    # `[/X]` was read as a closing markup tag and `--help` crashed. None (inherited by every
    # command and sub-app) prints click's plain help, which reads no markup at all.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        out.line(f"gpucap {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="More logs on stderr (-vv debug).")
    ] = 0,
) -> None:
    from gpucap.runtime.logging import configure  # noqa: PLC0415 - logging only for a command

    configure(verbose)
