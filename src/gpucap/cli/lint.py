"""`gpucap lint FILES`: GPU NodePool mistakes before they reach a cluster, as rules with stable
ids, each with a why and a fix.

Exit 1 on errors (or warnings with `--strict`), 0 otherwise, 2 on bad input (one `error:` line,
the app's boundary). The rules are `lint/`'s; this module reads the options, the config, the
catalog and the input, and prints the report. Registered by `cli/app.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from gpucap.apis.capacityreservation import load_reservations
from gpucap.apis.reading import os_reason
from gpucap.apis.serde import LIMIT, LoadResult
from gpucap.cli import aws, loading
from gpucap.cli.catalogs import catalog_from_options
from gpucap.cli.errors import BadInputError
from gpucap.cli.options import (
    CatalogOption,
    PricesOption,
    ReservationsOption,
    ZonesOption,
    check_output,
    kubernetes_minor,
    option_value,
    region_name,
)
from gpucap.cli.terminals import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, out
from gpucap.lint.config import LintConfig, find_config, load_config, parse_image_size
from gpucap.lint.context import KNOWN_IMAGE_SIZES, LintContext
from gpucap.lint.output import format_json as format_lint_json
from gpucap.lint.output import format_sarif, rule_help
from gpucap.lint.output import format_text as format_lint_text
from gpucap.lint.registry import Rule
from gpucap.lint.rules import ALL
from gpucap.lint.runner import run as run_lint

__all__ = ["lint"]


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
        typer.Option(
            "--explain", help="Print everything about one rule id.", callback=option_value
        ),
    ] = None,
    list_rules: Annotated[
        bool, typer.Option("--list-rules", help="List every rule: id, severity, name (-o json).")
    ] = False,
    config: Annotated[
        str | None, typer.Option("--config", help="A .gpucap.toml or pyproject.toml to use.")
    ] = None,
    region: Annotated[
        str, typer.Option(help="AWS region of the catalog.", callback=region_name)
    ] = "us-east-1",
    zones: ZonesOption = None,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    kubernetes_version: Annotated[
        str,
        typer.Option(
            "--kubernetes-version", help="Cluster Kubernetes version.", callback=kubernetes_minor
        ),
    ] = "1.36",
    image_size: Annotated[
        list[str] | None,
        typer.Option("--image-size", help="IMAGE=COMPRESSED[/UNCOMPRESSED], e.g. my/img=9Gi/18Gi."),
    ] = None,
    ami_previous: Annotated[
        str | None,
        typer.Option("--ami-previous", help="Compare pinned AMI aliases with this release."),
    ] = None,
    aws_: Annotated[
        bool, typer.Option("--aws", help="Check AMI releases against SSM (real AWS).")
    ] = False,
    reservations: ReservationsOption = None,
) -> None:
    """Find GPU NodePool mistakes before they reach a cluster: rules with stable ids, each with a
    why and a fix. Exit 1 on errors (or warnings with --strict), 0 otherwise, 2 on bad input."""
    rules = list(ALL)
    if explain is not None:
        # Ids are matched case-insensitively (`--explain gpu001`), as kube-linter and ruff do.
        key = explain.casefold()
        wanted = next((r for r in rules if key in (r.id.casefold(), r.name.casefold())), None)
        if wanted is None:
            raise BadInputError(f"--explain '{explain}': no such rule")
        out.lines(rule_help(wanted))
        return
    check_output(output, ("text", "json", "sarif"))
    if list_rules:
        _list_rules(rules, output)
        return
    if not files:
        raise BadInputError("give manifest files or directories to lint")
    cfg = _config(config, rules)
    sizes = dict(KNOWN_IMAGE_SIZES)
    sizes.update(parse_image_size(item) for item in image_size or [])
    # The catalog first: a region it has no prices for is refused before the input is read.
    lint_catalog = catalog_from_options(region, zones, catalog, prices)
    result = loading.load_paths(files)
    # Files that could not be read or parsed, and input limits: bad input (2), not lint
    # findings (1). One bad file in a directory does not hide the others' findings: lint goes
    # on and reports it as a finding too; input limits (the rest was not read) and input of
    # which nothing could be read stop here.
    unreadable = [i for i in result.errors if i.source is None or i.rule == LIMIT]
    loaded = bool(result.objects.items) or any(i.source is not None for i in result.issues)
    if unreadable and (not loaded or any(i.rule == LIMIT for i in unreadable)):
        loading.report_issues(LoadResult(issues=unreadable))
        raise typer.Exit(EXIT_BAD_INPUT)
    # Lint sees what a cluster would hold (later versions win); each object keeps the version
    # it replaced (`Manifest.replaces`) for rules that compare them (AMI003).
    ctx = LintContext(
        result.objects.items,
        lint_catalog,
        kubernetes_version=kubernetes_version,
        image_sizes=sizes,
        previous_ami_release=ami_previous,
        ec2api=aws.aws_api(region) if aws_ else None,
        cluster=cfg.cluster,
        reservations=load_reservations(reservations) if reservations is not None else None,
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
        loading.report_issues(LoadResult(issues=unreadable))
        raise typer.Exit(EXIT_BAD_INPUT)
    failing = report.count("error") + (report.count("warning") if strict else 0)
    raise typer.Exit(EXIT_FINDINGS if failing else EXIT_OK)


def _list_rules(rules: list[Rule[LintContext]], output: str) -> None:
    """`gpucap lint --list-rules`: a table (id, severity, name) or, with `-o json`, a list of
    objects with the summary too. A rule's severities: the default first, then the others it
    prints (`Rule.other`). SARIF has no rule-list form; it prints the table."""
    if output == "json":
        rows = [
            {
                "id": r.id,
                "severity": r.severity,
                "severities": list(r.severities),
                "name": r.name,
                "summary": r.summary,
            }
            for r in rules
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    width = max(len(r.id) for r in rules)
    levels = {r.id: ",".join(r.severities) for r in rules}
    level_width = max(len("SEVERITY"), *(len(v) for v in levels.values()))
    out.line(f"{'ID':<{width}}  {'SEVERITY':<{level_width}}  NAME")
    for r in rules:
        out.line(f"{r.id:<{width}}  {levels[r.id]:<{level_width}}  {r.name}")


def _config(config: str | None, rules: list[Rule[LintContext]]) -> LintConfig:
    """`--config`, or the nearest `.gpucap.toml`/`pyproject.toml` with a lint table."""
    try:
        return load_config(Path(config) if config else find_config(Path.cwd()), rules)
    except OSError as e:  # the working directory was removed, or a parent is unreadable
        raise BadInputError(f"cannot look for a lint config: {os_reason(e)}") from None
