"""The `gpucap` command: argument parsing, files, stdout/stderr, exit codes.

Thin by design: load -> call the core -> format (`cli/render.py`) -> print. Exit codes follow
contract.md: 0 done, 1 findings (lint), 2 bad input or usage. Whatever goes wrong, the user
gets one line on stderr, never a traceback.
"""

from __future__ import annotations

import ast
import errno
import gc
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click import exceptions as click_errors  # typer's own copy of click raises these
from typer.core import TyperGroup

from gpucap import __version__
from gpucap.apis.reading import InputError, os_reason, read_path, read_stream
from gpucap.runtime.terminal import Terminal

# Start-up (issue 12): this module imports only what parsing the command line needs; each
# command imports the parts of gpucap it uses in its body, so `gpucap --version` or `gpucap
# render` does not load pydantic's models, numpy, the scheduler or the simulator.
if TYPE_CHECKING:
    from gpucap.apis.serde import LoadResult
    from gpucap.cli.demo import DEMO_VALUES
    from gpucap.cloudprovider.aws.amifamily.ami import AMIReleaseInfo
    from gpucap.cloudprovider.aws.catalog import Catalog
    from gpucap.cloudprovider.aws.ec2.api import EC2API

__all__ = ["DEMO_VALUES", "app", "console", "main", "usage_error_line"]

# numpy's OpenBLAS starts a thread per core when numpy is imported. gpucap's arrays are masks
# and short vectors worked on one core (no BLAS call), so the pool only cost start-up: ~40 ms
# of the workshop plan. One thread unless the user asked for more (before numpy is imported).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2
# The status of a run whose reader closed the pipe (`gpucap plan | head`): click's own, which it
# gives when the pipe closes while a command writes; the same when it closes at the last flush.
EXIT_PIPE_CLOSED = 1
# Errors of a write that the output's medium refused (a full disk, a quota, a file size limit,
# a device error): the run was fine, its output could not be kept.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
# Option defaults that live in modules only some commands load; tests/cli/test_startup.py
# checks they equal controllers.provisioning.DEFAULT_MAX_PASSES and cli.simulate.DEFAULT_SPEED.
DEFAULT_MAX_PASSES = 20
DEFAULT_SPEED = 60.0


def __getattr__(name: str) -> Any:
    """`DEMO_VALUES`, re-exported from `cli/demo.py` when asked for (not at start-up)."""
    if name == "DEMO_VALUES":
        from gpucap.cli.demo import DEMO_VALUES  # noqa: PLC0415

        return DEMO_VALUES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


app = typer.Typer(
    name="gpucap",
    help="Karpenter's GPU capacity model for Amazon EKS: lint, plan and simulate GPU NodePools "
    "before they cost money.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help texts are plain text: with typer's default ("rich"), a help naming an optional part as
    # `[/X]` was read as a closing markup tag and `--help` crashed. None (inherited by every
    # command and sub-app) prints click's plain help, which reads no markup at all.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Every line of text the commands print goes through these two: each line is escaped whole
# (runtime/terminal.py), so a name, a file name or an error message quoting user input can neither
# control the terminal nor add a line. Machine outputs (JSON, YAML, SARIF) and `render`'s
# stdout are written to sys.stdout directly.
out = Terminal()
err = Terminal(stderr=True)


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
    from gpucap.runtime.logging import configure  # noqa: PLC0415

    configure(verbose)


# An AWS region name: us-east-1, us-gov-west-1, cn-north-1, eu-isoe-west-1.
_REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]+")


def _value(value: str | None) -> str | None:
    """Callback of the options whose value never starts with `-` (a region, zones, a pod or a
    rule): click takes the word after the option as its value, so a forgotten value
    (`--region --zones us-east-1a`) would make the next option the value and its value a file.
    Said here, naming the option whose value is missing."""
    if value is not None and value.startswith("-"):
        raise typer.BadParameter(f"requires a value ('{value}' is an option)")
    return value


def _region_name(value: str | None) -> str | None:
    """Callback of every `--region`: a region name, so that an empty or misspelt one is a usage
    error naming --region, rather than a region without zones or instance types."""
    if _value(value) is not None and not _REGION_NAME.fullmatch(value or ""):
        raise typer.BadParameter(f"'{value}' is not an AWS region name (like us-east-1)")
    return value


OutputOption = Annotated[
    str,
    typer.Option("--output", "-o", help="table (default), json or yaml.", show_default=False),
]

# `--catalog FILE` and `--prices FILE` of plan and simulate (read by `_load_catalog`).
CatalogOption = Annotated[
    str | None, typer.Option("--catalog", help="A catalog file replacing the bundled one.")
]
PricesOption = Annotated[
    str | None, typer.Option("--prices", help="A prices file overriding catalog prices.")
]

# `--report FILE` of simulate, plan and demo: the HTML report (`cli/reporting.py`, `report/`).
ReportOption = Annotated[
    str | None,
    typer.Option(
        "--report",
        metavar="FILE",
        help="Also write a self-contained HTML report (charts, tables; works offline) to FILE.",
    ),
]


def _check_output(output: str, allowed: tuple[str, ...]) -> None:
    if output not in allowed:
        err.line(f"error: --output '{output}' is not one of {', '.join(allowed)}")
        raise typer.Exit(EXIT_BAD_INPUT)


def load_paths(paths: list[str]) -> LoadResult:
    """`apis.serde.load_paths`, imported when a command loads files (tests replace this)."""
    from gpucap.apis.serde import load_paths as load  # noqa: PLC0415

    return load(paths)


def load_catalog(region: str, **kw: Any) -> Catalog:
    """`cloudprovider.aws.catalog.load_catalog`, imported when a command needs the catalog
    (the fuzzer's driver replaces this to share one catalog between its cases)."""
    from gpucap.cloudprovider.aws.catalog import load_catalog as load  # noqa: PLC0415

    return load(region, **kw)


def _report(result: LoadResult) -> None:
    from gpucap.cli.render import format_issue  # noqa: PLC0415

    for issue in result.issues:
        err.line(format_issue(issue), style="red" if issue.severity == "error" else "yellow")


def _print_summaries(result: LoadResult) -> None:
    from gpucap.cli.render import describe  # noqa: PLC0415

    # One print for all the lines (a List of 10,000 pods printed line by line was slow).
    out.lines([f"{m.source} {m.ref}: {describe(m.obj)}" for m in result.manifests])


@app.command()
def validate(
    files: Annotated[
        list[str], typer.Argument(help="Manifest files, directories, or - for stdin.")
    ],
    output: OutputOption = "table",
) -> None:
    """Load, default and validate manifests; print a one-line summary per object."""
    from gpucap.apis.references import missing_node_classes  # noqa: PLC0415
    from gpucap.cli.render import format_list  # noqa: PLC0415

    _check_output(output, ("table", "json", "yaml"))
    result = load_paths(files)
    if result.ok:
        # What no single object shows: a NodePool naming an EC2NodeClass the input lacks.
        result.issues.extend(missing_node_classes(result.objects.items))
    _report(result)
    if not result.ok:
        err.line(f"{len(result.errors)} error(s); nothing was validated")
        raise typer.Exit(EXIT_BAD_INPUT)
    if output == "table":
        _print_summaries(result)
        n = len(result.manifests)
        out.line(f"{n} object{'s' if n != 1 else ''} valid, {len(result.warnings)} warning(s)")
    else:
        sys.stdout.write(format_list(result.manifests, output))


@app.command()
def render(  # noqa: PLR0917 - typer maps parameters to options
    files: Annotated[list[str], typer.Argument(help="Manifest files, or - for stdin.")],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE, overrides the environment (repeatable)."),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="VAR[,VAR...] (or envsubst's SHELL-FORMAT, '$VAR ${VAR}'): fill just these "
            "(and --set) variables; leave every other $X as written (repeatable).",
        ),
    ] = None,
    pin_ami: Annotated[
        bool,
        typer.Option(
            "--pin-ami",
            help="Set AMI_VERSION to the recommended release (SSM, or --offline) and replace "
            "any `@latest` alias with it.",
        ),
    ] = False,
    kubernetes_version: KubernetesOption = "1.36",
    variant: VariantOption = "nvidia",
    offline: OfflineOption = False,
    region: RegionOption = None,
) -> None:
    """Fill ${VAR} and $VAR placeholders from the environment and --set, like envsubst, but
    fail (exit 2) naming every missing variable instead of writing empty strings. Variables
    used only in userData, container command/args and ConfigMap scripts are the node's or the
    container's: they are left as written, with one warning. A Terraform template is refused."""
    from gpucap.apis.placeholders import parse_only, terraform_template  # noqa: PLC0415
    from gpucap.apis.placeholders import render as fill_placeholders  # noqa: PLC0415

    values = dict(os.environ)
    explicit: list[str] = []
    for item in set_ or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            err.line(f"error: --set '{item}' must be KEY=VALUE")
            raise typer.Exit(EXIT_BAD_INPUT)
        values[key] = value
        explicit.append(key)
    names: list[str] | None = None
    if only is not None:
        try:
            names = parse_only(only)
        except ValueError as e:
            err.line(f"error: --only '{e}' is not a variable name (VAR[,VAR...])")
            raise typer.Exit(EXIT_BAD_INPUT) from None
    pinned: str | None = None
    if pin_ami:
        pinned = _release(kubernetes_version, "al2023", "x86_64", variant, offline, region).version
        values["AMI_VERSION"] = pinned
        explicit.append("AMI_VERSION")
    texts: list[tuple[str, str]] = []
    for f in files:
        try:
            texts.append((f, read_stream(sys.stdin, "<stdin>") if f == "-" else read_path(f)))
        except InputError as e:
            err.line(f"error: {e}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
    for name, text in texts:
        template = terraform_template(text, name)
        if template is not None:  # `${var.x}` and `%{ for }` are Terraform's to fill
            err.line(f"error: {template}")
            raise typer.Exit(EXIT_BAD_INPUT)
    done = fill_placeholders([t for _, t in texts], values, only=names, explicit=explicit)
    failed = False
    for (name, _), missing in zip(texts, done.missing, strict=True):
        if missing:
            failed = True
            err.line(f"error: {name}: missing variable(s): {', '.join(missing)}")
    if failed:
        raise typer.Exit(EXIT_BAD_INPUT)
    if done.left:
        err.line(
            "warning: left as written, for the node or container to expand at run time "
            "(used only in userData, container command/args or ConfigMap scripts): "
            f"{', '.join(done.left)}; "
            "--set NAME=VALUE or --only NAME fills one",
            style="yellow",
        )
    rendered = list(done.texts)
    if pinned is not None:
        # Never write `@latest`: it rolls the whole fleet on AWS's schedule.
        latest = re.compile(r"(alias:\s*[\"']?[a-z0-9]+@)latest\b")
        rendered = [latest.sub(rf"\g<1>{pinned}", body) for body in rendered]
    # One file comes out byte for byte; several are joined as one multi-document stream.
    head = [t if t.endswith("\n") else t + "\n" for t in rendered[:-1]]
    sys.stdout.write("---\n".join([*head, rendered[-1]]))


def _load_catalog(
    region: str,
    zones: str | None,
    catalog_file: str | None,
    prices_file: str | None,
    where: str = "--region",
) -> Catalog:
    """The catalog for `plan`/`simulate`/`lint`: bundled, or `--catalog`, with `--prices`
    overrides. `where` names what chose the region (the option, or a scenario's spec.region)
    for the one-line refusal of a region the catalog prices nothing in."""
    from gpucap.cloudprovider.aws.catalog import (  # noqa: PLC0415
        CatalogError,
        parse_catalog_json,
        parse_prices_json,
        priced_regions,
        region_is_priced,
    )

    zone_list = [z.strip() for z in zones.split(",") if z.strip()] if zones is not None else None
    try:
        infos = None
        if catalog_file is not None:
            infos = parse_catalog_json(_read(catalog_file), source=catalog_file)
        prices = None
        if prices_file is not None:
            prices = parse_prices_json(_read(prices_file), source=prices_file)
        if not region_is_priced(region, infos=infos, prices=prices):
            _check_zone_names(region, zone_list)
            # Nothing could launch: every pod would stay Pending and the plan would blame the
            # NodePools. Said once, with the regions there is data for.
            known = priced_regions(infos=infos, prices=prices)
            err.line(
                f"error: {where} {region}: the catalog prices no instance type in {region} "
                f"(regions it prices: {', '.join(known) or 'none'}); give prices with "
                "--prices or --catalog"
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        catalog = load_catalog(
            region, infos=infos, prices=prices, zones=zone_list, prices_source=prices_file or ""
        )
    except CatalogError as e:
        err.line(f"error: {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    _check_zone_names(region, zone_list)
    return catalog


def _check_zone_names(region: str, zones: list[str] | None) -> None:
    """Every AWS zone name (us-east-1a, Local Zone us-east-1-bos-1a, Wavelength
    us-east-1-wl1-bos-wlz-1) starts with its region's. The catalog checks the zones of a region
    it knows (and lists them); this holds for a region it knows nothing about."""
    foreign = [z for z in zones or [] if not z.startswith(region)]
    if foreign:
        err.line(f"error: --zones: '{foreign[0]}' is not a zone of region {region}")
        raise typer.Exit(EXIT_BAD_INPUT)


def _read(path: str) -> str:
    """A `--catalog`/`--prices` file's text, bounded and UTF-8 (`apis/reading.py`)."""
    try:
        return read_path(path)
    except InputError as e:
        err.line(f"error: {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None


@app.command()
def plan(  # noqa: PLR0917 - typer maps parameters to options
    files: Annotated[
        list[str], typer.Argument(help="Manifest files, directories, or - for stdin.")
    ],
    output: OutputOption = "table",
    region: Annotated[
        str, typer.Option(help="AWS region of the catalog.", callback=_region_name)
    ] = "us-east-1",
    zones: Annotated[
        str | None,
        typer.Option(help="Comma-separated zones (default: the region's).", callback=_value),
    ] = None,
    kubernetes_version: Annotated[
        str, typer.Option("--kubernetes-version", help="Cluster Kubernetes version.")
    ] = "1.36",
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain",
            help="NAMESPACE/POD (or POD): why each NodePool can or cannot take it.",
            callback=_value,
        ),
    ] = None,
    passes: Annotated[
        int,
        typer.Option(
            "--passes",
            min=1,
            help="Most provisioning passes to run (1: a single scheduling pass). Later passes "
            "place the pods NodePool limits held back, once earlier NodeClaims have launched.",
        ),
    ] = DEFAULT_MAX_PASSES,
    report: ReportOption = None,
) -> None:
    """Schedule the pending pods as Karpenter's provisioner would and print what it would
    launch, at what price, and why any pod stays Pending."""
    from gpucap.runtime.collector import collector_paused  # noqa: PLC0415

    # Everything this command builds (imports, the input's objects, the catalog, the NodePools'
    # instance types, the plan) lives to the end, and planning makes no garbage cycles
    # (tests/controllers/provisioning/test_loop_collector.py): the cyclic collector would only
    # walk live objects, about a tenth of the workshop plan's time. Off for the command; on
    # again afterwards, for callers that run `plan` in-process (the tests).
    with collector_paused():
        _plan(
            files,
            output,
            region,
            zones,
            catalog,
            prices,
            explain,
            passes,
            report,
            kubernetes_version,
        )


def _plan(  # noqa: PLR0917 - the `plan` command's options, as given
    files: list[str],
    output: str,
    region: str,
    zones: str | None,
    catalog: str | None,
    prices: str | None,
    explain: str | None,
    passes: int,
    report: str | None,
    kubernetes_version: str,
) -> None:
    """The `plan` command's work, with the collector off (see `plan`); `kubernetes_version`
    is what EC2NodeClass AMI aliases resolve for (which NodePools are Ready)."""
    from gpucap.cli.render import format_explanation, plan_lines, write_plan  # noqa: PLC0415
    from gpucap.cli.reporting import (  # noqa: PLC0415
        check_report_path,
        refuse_overwriting_inputs,
        write_plan_report,
    )
    from gpucap.operator.plan import explain_pod  # noqa: PLC0415
    from gpucap.operator.plan import plan as make_plan  # noqa: PLC0415

    _check_output(output, ("table", "json", "yaml"))
    if report is not None:
        check_report_path(report, err)
        inputs = [*files, *(f for f in (catalog, prices) if f is not None)]
        refuse_overwriting_inputs("--report", report, inputs, err)
    # The catalog first: a region it has no prices for is refused before the input is read.
    cat = _load_catalog(region, zones, catalog, prices)
    result = load_paths(files)
    _report(result)
    if not result.ok:
        raise typer.Exit(EXIT_BAD_INPUT)
    result.release_texts()  # plan asks for no line from here on: the input text can go
    made = make_plan(result.objects, cat, max_passes=passes, kubernetes_version=kubernetes_version)
    if report is not None:
        title = f"gpucap plan {' '.join(files)}"
        write_plan_report(report, made, result.objects, cat, title=title, err=err)
    if explain is not None:
        key = explain if "/" in explain else f"default/{explain}"
        explanation = explain_pod(result.objects, cat, key, kubernetes_version=kubernetes_version)
        if explanation is None:
            err.line(f"error: --explain {explain}: no such pod in the input")
            raise typer.Exit(EXIT_BAD_INPUT)
        np = made.not_planned.get(key)
        out.lines(
            format_explanation(
                key,
                explanation,
                made.pod_errors.get(key),
                made.where(key),
                np.reason if np is not None else None,
            )
        )
        return
    if output == "table":
        out.lines(plan_lines(made))
    else:
        write_plan(made, output, sys.stdout)


@app.command()
def simulate(  # noqa: PLR0917 - typer maps parameters to options
    scenario: Annotated[str, typer.Argument(help="A Scenario file (gpucap.dev/v1alpha1).")],
    output: OutputOption = "table",
    events: Annotated[
        str | None,
        typer.Option(
            "--events",
            help="Write the events to FILE as JSON lines while the run goes (flushed per "
            "event; '-': stdout, instead of the table).",
            metavar="FILE",
        ),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="A live table of the nodes redrawn as virtual time passes, at --speed (on a "
            "terminal; elsewhere only the last one is printed), then the table.",
        ),
    ] = False,
    speed: Annotated[
        float,
        typer.Option("--speed", help="Virtual seconds per wall second for --watch."),
    ] = DEFAULT_SPEED,
    region: Annotated[
        str | None,
        typer.Option(
            help="The scenario's spec.region (default us-east-1) is the region that runs; "
            "given, this must equal it.",
            callback=_region_name,
        ),
    ] = None,
    zones: Annotated[
        str | None,
        typer.Option(help="Comma-separated zones (default: the region's).", callback=_value),
    ] = None,
    kubernetes_version: Annotated[
        str | None,
        typer.Option(
            "--kubernetes-version",
            help="The scenario's spec.kubernetesVersion (default 1.36) is what runs; given, "
            "this must equal it.",
        ),
    ] = None,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    report: ReportOption = None,
) -> None:
    """Run a scenario on a virtual clock: Karpenter provisioning GPU nodes over a simulated
    EC2 as pods come and go, capacity vanishes and spot is interrupted, and disrupting them
    (consolidation, drift, expiration, within budgets); print the timeline in plain words and
    the bill (-o json: the events and the summary)."""
    from gpucap.cli.simulate import OUTPUTS, SimulateOptions  # noqa: PLC0415
    from gpucap.cli.simulate import run as run_simulate  # noqa: PLC0415

    _check_output(output, OUTPUTS)
    run_simulate(
        SimulateOptions(
            scenario,
            output=output,
            events=events,
            watch=watch,
            speed=speed,
            region=region,
            kubernetes_version=kubernetes_version,
            report=report,
        ),
        catalog_for=lambda r: _load_catalog(
            r, zones, catalog, prices, where=f"{scenario}: spec.region"
        ),
        out=out,
        err=err,
    )


@app.command()
def lint(  # noqa: PLR0917 - typer maps parameters to options
    files: Annotated[
        list[str] | None, typer.Argument(help="Manifest files, directories, or - for stdin.")
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", help="text (default), json or sarif.")
    ] = "text",
    strict: Annotated[bool, typer.Option(help="Exit 1 on warnings too.")] = False,
    explain: Annotated[
        str | None,
        typer.Option("--explain", help="Print everything about one rule id.", callback=_value),
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="A .gpucap.toml or pyproject.toml to use.")
    ] = None,
    region: Annotated[
        str, typer.Option(help="AWS region of the catalog.", callback=_region_name)
    ] = "us-east-1",
    zones: Annotated[
        str | None,
        typer.Option(help="Comma-separated zones (default: the region's).", callback=_value),
    ] = None,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    kubernetes_version: Annotated[
        str, typer.Option("--kubernetes-version", help="Cluster Kubernetes version.")
    ] = "1.36",
    image_size: Annotated[
        list[str] | None,
        typer.Option("--image-size", help="IMAGE=COMPRESSED[/UNCOMPRESSED], e.g. my/img=9Gi/18Gi."),
    ] = None,
    ami_previous: Annotated[
        str | None,
        typer.Option("--ami-previous", help="Compare pinned AMI aliases with this release."),
    ] = None,
    aws: Annotated[
        bool, typer.Option("--aws", help="Check AMI releases against SSM (real AWS).")
    ] = False,
) -> None:
    """Find GPU NodePool mistakes before they reach a cluster: rules with stable ids, each with a
    why and a fix. Exit 1 on errors (or warnings with --strict), 0 otherwise, 2 on bad input."""
    from gpucap.apis.quantity import Quantity  # noqa: PLC0415
    from gpucap.apis.serde import LIMIT, LoadResult  # noqa: PLC0415
    from gpucap.lint.config import ConfigError, find_config, load_config  # noqa: PLC0415
    from gpucap.lint.context import KNOWN_IMAGE_SIZES, LintContext  # noqa: PLC0415
    from gpucap.lint.model import all_rules  # noqa: PLC0415
    from gpucap.lint.output import format_json as format_lint_json  # noqa: PLC0415
    from gpucap.lint.output import format_sarif, rule_help  # noqa: PLC0415
    from gpucap.lint.output import format_text as format_lint_text  # noqa: PLC0415
    from gpucap.lint.runner import run as run_lint  # noqa: PLC0415

    rules = all_rules()
    if explain is not None:
        wanted = next((r for r in rules if explain in (r.id, r.name)), None)
        if wanted is None:
            err.line(f"error: --explain '{explain}': no such rule")
            raise typer.Exit(EXIT_BAD_INPUT)
        out.lines(rule_help(wanted))
        return
    _check_output(output, ("text", "json", "sarif"))
    if not files:
        err.line("error: give manifest files or directories to lint")
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        config_path = Path(config) if config else find_config(Path.cwd())
        cfg = load_config(config_path, rules)
    except ConfigError as e:
        err.line(f"error: {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except OSError as e:  # the working directory was removed, or a parent is unreadable
        err.line(f"error: cannot look for a lint config: {os_reason(e)}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    sizes = dict(KNOWN_IMAGE_SIZES)
    for item in image_size or []:
        name, eq, value = item.partition("=")
        try:
            if not eq:
                raise ValueError(item)
            compressed, _, uncompressed = value.partition("/")
            c = Quantity.parse(compressed).value()
            sizes[name] = (c, Quantity.parse(uncompressed).value() if uncompressed else 2 * c)
        except ValueError:
            err.line(f"error: --image-size '{item}' must be IMAGE=SIZE[/SIZE], e.g. a/b=9Gi/18Gi")
            raise typer.Exit(EXIT_BAD_INPUT) from None
    # The catalog first: a region it has no prices for is refused before the input is read.
    lint_catalog = _load_catalog(region, zones, catalog, prices)
    result = load_paths(files)
    # Files that could not be read or parsed, and input limits: bad input (2), not lint
    # findings (1). One bad file in a directory does not hide the others' findings: lint goes
    # on and reports it as a finding too; input limits (the rest was not read) and input of
    # which nothing could be read stop here.
    unreadable = [i for i in result.errors if i.source is None or i.rule == LIMIT]
    loaded = bool(result.objects.items) or any(i.source is not None for i in result.issues)
    if unreadable and (not loaded or any(i.rule == LIMIT for i in unreadable)):
        _report(LoadResult(issues=unreadable))
        raise typer.Exit(EXIT_BAD_INPUT)
    # Lint sees what a cluster would hold (later versions win); each object keeps the version
    # it replaced (`Manifest.replaces`) for rules that compare them (AMI003).
    ctx = LintContext(
        result.objects.items,
        lint_catalog,
        kubernetes_version=kubernetes_version,
        image_sizes=sizes,
        previous_ami_release=ami_previous,
        ec2api=_aws(region) if aws else None,
        cluster=cfg.cluster,
    )
    issues = [i for i in result.issues if i.rule != "DUPLICATE"]
    report = run_lint(ctx, cfg, issues=issues, rules=rules)
    if output == "json":
        sys.stdout.write(format_lint_json(report))
    elif output == "sarif":
        sys.stdout.write(format_sarif(report, rules))
    else:
        lines = format_lint_text(report)
        for f, line in zip(report.findings, lines, strict=False):
            out.line(line, style={"error": "red", "warning": "yellow", "info": "cyan"}[f.severity])
        out.line(lines[-1])
    if unreadable:
        # Reported above as SCHEMA001 findings too; bad input still says so on stderr, one
        # `error:` line a file, as every command does (the fuzzer's promise).
        _report(LoadResult(issues=unreadable))
        raise typer.Exit(EXIT_BAD_INPUT)
    failing = report.count("error") + (report.count("warning") if strict else 0)
    raise typer.Exit(EXIT_FINDINGS if failing else EXIT_OK)


ami_app = typer.Typer(
    help="EKS-optimized AMI releases: the recommended one, the list, and what changes between two.",
    no_args_is_help=True,
)
app.add_typer(ami_app, name="ami")
catalog_app = typer.Typer(help="The EC2 instance-type catalog.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")

KubernetesOption = Annotated[
    str, typer.Option("--kubernetes-version", help="Cluster Kubernetes version.")
]
FamilyOption = Annotated[str, typer.Option("--family", help="AMI family.")]
VariantOption = Annotated[str, typer.Option("--variant", help="standard, nvidia or neuron.")]
ArchOption = Annotated[str, typer.Option("--arch", help="x86_64 or arm64.")]
OfflineOption = Annotated[
    bool, typer.Option("--offline", help="Use the bundled release list, not SSM.")
]
RegionOption = Annotated[
    str | None,
    typer.Option(
        "--region", help="AWS region (default: your AWS configuration).", callback=_region_name
    ),
]


def _aws(region: str | None) -> EC2API:
    """Real AWS through boto3 (standard configuration; AWS_ENDPOINT_URL is honoured)."""
    from gpucap.cloudprovider.aws.ec2.api import EC2APIError  # noqa: PLC0415
    from gpucap.cloudprovider.aws.ec2.boto import BotoEC2API  # noqa: PLC0415 - boto3 only when asked

    try:
        return BotoEC2API.from_environment(region=region)
    except EC2APIError as e:
        err.line(f"error: AWS: {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None


@contextmanager
def _lookup_errors() -> Iterator[None]:
    """Turn an AMI lookup failure (unknown version, family or release; nothing in SSM) into the
    one-line bad-input error and exit code that every `ami` subcommand shares."""
    from gpucap.cloudprovider.aws.amifamily.ami import AMILookupError  # noqa: PLC0415
    from gpucap.cloudprovider.aws.amifamily.releases import UnknownReleaseError  # noqa: PLC0415

    try:
        yield
    except (AMILookupError, UnknownReleaseError, ValueError) as e:
        err.line(f"error: {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None


def _release(  # noqa: PLR0917 - the six lookup keys
    kubernetes_version: str, family: str, arch: str, variant: str, offline: bool, region: str | None
) -> AMIReleaseInfo:
    from gpucap.cloudprovider.aws.amifamily.ami import recommended_release  # noqa: PLC0415

    with _lookup_errors():
        return recommended_release(
            kubernetes_version,
            family=family,
            arch=arch,
            variant=variant,
            api=None if offline else _aws(region),
        )


@ami_app.command("resolve")
def ami_resolve(  # noqa: PLR0917 - typer maps parameters to options
    kubernetes_version: KubernetesOption = "1.36",
    family: FamilyOption = "al2023",
    variant: VariantOption = "nvidia",
    arch: ArchOption = "x86_64",
    region: RegionOption = None,
    offline: OfflineOption = False,
    output: OutputOption = "table",
) -> None:
    """Print the recommended release (e.g. v20260827) to pin as `al2023@<release>`."""
    _check_output(output, ("table", "json"))
    info = _release(kubernetes_version, family, arch, variant, offline, region)
    if output == "json":
        sys.stdout.write(
            json.dumps(
                {
                    "kubernetesVersion": kubernetes_version,
                    "family": family,
                    "arch": arch,
                    "variant": variant,
                    "release": info.version,
                    "releaseVersion": info.release_version,
                    "alias": f"{family}@{info.version}",
                    "source": info.source,
                },
                indent=2,
            )
            + "\n"
        )
    else:
        out.line(info.version)


@ami_app.command("list")
def ami_list(  # noqa: PLR0917 - typer maps parameters to options
    kubernetes_version: KubernetesOption = "1.36",
    family: FamilyOption = "al2023",
    variant: VariantOption = "nvidia",
    arch: ArchOption = "x86_64",
    region: RegionOption = None,
    offline: OfflineOption = False,
) -> None:
    """List the releases for a Kubernetes version, newest first (with the NVIDIA driver and the
    CUDA version it supports, from the bundled release notes)."""
    from gpucap.cli.render import format_table  # noqa: PLC0415
    from gpucap.cloudprovider.aws.amifamily.ami import list_releases  # noqa: PLC0415
    from gpucap.cloudprovider.aws.amifamily.releases import find_release  # noqa: PLC0415

    with _lookup_errors():
        infos = list_releases(
            kubernetes_version,
            family=family,
            arch=arch,
            variant=variant,
            api=None if offline else _aws(region),
        )
    rows = [["RELEASE", "DATE", "NVIDIA DRIVER", "CUDA", "KERNEL"]]
    for info in infos:
        known = find_release(info.version)
        image = known.image(kubernetes_version, family, arch, variant) if known else None
        rows.append(
            [
                info.version,
                known.date.isoformat() if known else "?",
                (image.nvidia_driver if image else None) or "-",
                (image.cuda_from_driver if image else None) or "-",
                (image.kernel if image else None) or "-",
            ]
        )
    out.lines(format_table(rows))


@ami_app.command("diff")
def ami_diff(  # noqa: PLR0917 - typer maps parameters to options
    old: Annotated[str, typer.Argument(help="Release, e.g. v20250403.")],
    new: Annotated[str, typer.Argument(help="Release, e.g. v20250410.")],
    kubernetes_version: KubernetesOption = "1.36",
    family: FamilyOption = "al2023",
    variant: VariantOption = "nvidia",
    arch: ArchOption = "x86_64",
) -> None:
    """What changes between two releases (kernel, containerd, NVIDIA driver, CUDA); a driver
    major-version change is flagged as a risk for GPU images."""
    from gpucap.cloudprovider.aws.amifamily.releases import diff_releases  # noqa: PLC0415

    with _lookup_errors():
        diff = diff_releases(
            old, new, kubernetes_version, family=family, arch=arch, variant=variant
        )
    for line in diff.lines():
        out.line(line)
    if diff.driver_major_changed:
        out.line(
            f"RISK: NVIDIA driver major version {diff.old_driver_major} -> "
            f"{diff.new_driver_major}; images built for the old CUDA may break"
        )


@catalog_app.command("export")
def catalog_export(
    output_file: Annotated[str, typer.Option("-o", "--output", help="File to write.")],
    from_aws: Annotated[
        bool, typer.Option("--from-aws", help="Read the live EC2 and Pricing APIs.")
    ] = False,
    region: Annotated[
        str, typer.Option("--region", help="AWS region.", callback=_region_name)
    ] = "us-east-1",
) -> None:
    """Build a catalog file (`--catalog` accepts it) from the live AWS APIs: instance types,
    zone offerings, spot price history and on-demand prices."""
    from gpucap.cloudprovider.aws.ec2.api import EC2APIError  # noqa: PLC0415

    if not from_aws:
        err.line("error: give --from-aws (the only source `catalog export` has)")
        raise typer.Exit(EXIT_BAD_INPUT)
    from gpucap.cloudprovider.aws.export import export_catalog  # noqa: PLC0415

    api = _aws(region)
    try:
        entries = export_catalog(api, region)
    except EC2APIError as e:
        err.line(f"error: AWS: {e}")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    Path(output_file).write_text(
        json.dumps(entries, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    out.line(f"wrote {len(entries)} instance types for {region} to {output_file}")


@app.command()
def demo(report: ReportOption = None) -> None:
    """Run gpucap on the bundled workshop example (a GPU NodePool, EC2NodeClass, device plugin,
    time-slicing config and a vLLM Deployment): validate it, lint it, plan it; then simulate two
    acts on it: spot running out and the fallback to on-demand, with the bill; and a GPU pod
    created before the device plugin, with what the wrong order costs."""
    from gpucap.cli.demo import run_demo  # noqa: PLC0415

    code = run_demo(out, err, report=report)
    if code:
        raise typer.Exit(code)


def _option_name(param: Any) -> str:
    """How an error names a parameter: its long option (`--output`), or an argument in capitals
    as the README writes it (`FILES`)."""
    if param is None:
        return "?"
    if getattr(param, "param_type_name", "") == "argument":
        return str(param.name or "?").upper()
    opts = list(getattr(param, "opts", []) or [])
    return next((o for o in opts if o.startswith("--")), opts[0] if opts else str(param.name))


def _clause(message: str) -> str:
    """Click's sentence as a clause after `error: X: ` (no capital, no final period)."""
    text = message.strip().rstrip(".")
    if text[:1].isupper() and text[1:2].islower():
        text = text[0].lower() + text[1:]
    return text


# Click's own messages for the usage errors that carry no structure (plain UsageError), and for
# BadOptionUsage, whose option is known but whose text says what is wrong.
_NO_SUCH_COMMAND = re.compile(r"No such command ('.*'|\".*\")\.(?:\s*Did you mean (.*)\?)?", re.S)
_EXTRA_ARGS = re.compile(r"Got unexpected extra argument(?:s|\(s\))? \((.*)\)", re.S)
_OPTION_USAGE = re.compile(r"Option ('.*'|\".*\") (.*)", re.S)
_OPTION_PROBLEMS = {
    "requires an argument": "requires a value",
    "does not take a value": "takes no value",
}


def usage_error_line(e: click_errors.UsageError) -> str:
    """A click/typer usage error as gpucap's one line, naming the option or argument:
    `error: --explain: requires a value`, `error: FILES: missing argument (...)`,
    `error: --regio: no such option (did you mean --region?)`. Called by `main`."""
    if isinstance(e, click_errors.MissingParameter):
        kind = e.param_type or getattr(e.param, "param_type_name", "parameter")
        help_ = str(getattr(e.param, "help", "") or "").strip().rstrip(".")
        return f"{_option_name(e.param)}: missing {kind}" + (f" ({help_})" if help_ else "")
    if isinstance(e, click_errors.BadParameter):
        hint = e.param_hint
        name = (
            _option_name(e.param)
            if hint is None
            else (hint if isinstance(hint, str) else " / ".join(hint))
        )
        return f"{name}: {_clause(e.message)}"
    if isinstance(e, click_errors.NoSuchOption):
        near = " or ".join(sorted(e.possibilities or []))
        return f"{e.option_name}: no such option" + (f" (did you mean {near}?)" if near else "")
    if isinstance(e, click_errors.BadOptionUsage):
        m = _OPTION_USAGE.fullmatch(e.message.strip())
        problem = _clause(m.group(2)) if m else _clause(e.message)
        return f"{e.option_name}: {_OPTION_PROBLEMS.get(problem, problem)}"
    message = e.format_message()
    if m := _NO_SUCH_COMMAND.fullmatch(message.strip()):
        name = ast.literal_eval(m.group(1))
        if m.group(2):
            return f"{name}: no such command (did you mean {m.group(2)}?)"
        ctx = e.ctx
        group = ctx.command if ctx is not None else None
        names = group.list_commands(ctx) if isinstance(group, TyperGroup) and ctx else []
        return f"{name}: no such command" + (f" (commands: {', '.join(names)})" if names else "")
    if m := _EXTRA_ARGS.fullmatch(message.strip()):
        return f"{m.group(1)}: unexpected extra argument(s)"
    return _clause(message)


_YOUNG_COLLECTION_EVERY = 10_000


def console() -> None:
    """The `gpucap` console script (pyproject's `[project.scripts]`): `main`, then an exit
    without the interpreter's last full garbage collection. At exit CPython collects every
    generation before the process goes; a command's objects (its imports, input, catalog and
    plan) are all alive then, so that walk was pure cost: about a sixth of `gpucap plan` on the
    workshop example. Frozen objects are left out of it and are freed with the process.
    In-process callers (the tests) call `main`, which leaves the collector as it found it."""
    try:
        main()
    finally:
        gc.freeze()


def _discard_stdout() -> None:
    """Point stdout at /dev/null: what is still in its buffer would fail again when the
    interpreter flushes it at exit (and print a warning there). In-process callers (the tests)
    capture stdout in memory: nothing to do."""
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    os.dup2(null, fd)
    os.close(null)


def _say_once(line: str) -> None:
    """One line on stderr, unless stderr cannot take it either (then the status says it)."""
    with suppress(OSError):
        err.line(line)


def main() -> None:
    """Entry point of the command line (the installed script reaches it through `console`):
    run the app; turn a usage error into one line (exit 2), an output that cannot be written (a
    full disk) into one line (exit 2), a closed pipe into silence (exit 1, as click does), and
    any unexpected failure into one line (exit 70). The one place click's own error output (a
    usage line, a hint and the message, on several lines) is replaced."""
    # A command builds its world (imports, the bundled catalog, the input) before it makes any
    # garbage, and all of it survives: at the default threshold (a young collection every 700
    # allocations) the collector spent a seventh of `gpucap plan`'s start-up walking objects
    # that live on. Every 10,000 allocations instead; restored for in-process callers (tests).
    previous = gc.get_threshold()
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, *previous[1:])
    try:
        code = app(standalone_mode=False)
        # Written out here, where a failure is still this function's to report: left to the
        # interpreter's exit, a full disk or a closed pipe would be a traceback-like warning.
        sys.stdout.flush()
    except click_errors.NoArgsIsHelpError as e:
        e.show()  # `gpucap` or `gpucap ami` alone: the help, as asked for (exit 2, as click)
        sys.exit(EXIT_BAD_INPUT)
    except click_errors.UsageError as e:
        err.line(f"error: {usage_error_line(e)}")
        sys.exit(EXIT_BAD_INPUT)
    except click_errors.ClickException as e:
        err.line(f"error: {_clause(e.format_message())}")
        sys.exit(e.exit_code)
    except typer.Abort:
        err.line("error: aborted")
        sys.exit(1)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err.line("interrupted")
        sys.exit(130)
    except OSError as e:
        if e.errno == errno.EPIPE:
            _discard_stdout()  # the reader has gone (`gpucap plan | head`): nothing to say
            sys.exit(EXIT_PIPE_CLOSED)
        if e.errno in _WRITE_ERRNOS:
            _discard_stdout()
            _say_once(f"error: cannot write the output: {os_reason(e)}")
            sys.exit(EXIT_BAD_INPUT)
        _say_once(f"gpucap: internal error: {type(e).__name__}: {e} (please report this)")
        sys.exit(70)
    except Exception as e:  # the promise is "never a traceback"; say what broke in one line
        err.line(f"gpucap: internal error: {type(e).__name__}: {e} (please report this)")
        sys.exit(70)
    finally:
        gc.set_threshold(*previous)
    # standalone_mode=False returns the code of a typer.Exit (or the command's value, None).
    sys.exit(code if isinstance(code, int) else EXIT_OK)
