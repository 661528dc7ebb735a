"""`gpucap plan FILES`: schedule the pending pods as Karpenter's provisioner would, and print
what it would launch, at what price, and why any pod stays Pending.

Thin like every command: read the catalog and the input, call `operator.plan`, format with
`cli/render.py`, print. Registered by `cli/app.py`; bad input is one `error:` line and exit 2
(the app's boundary).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated

import typer
import yaml

from gpucap.apis.capacityreservation import load_reservations
from gpucap.cli import loading
from gpucap.cli.catalogs import catalog_from_options
from gpucap.cli.errors import BadInputError
from gpucap.cli.optimal import (
    check_optimal_time,
    optimal_document,
    optimal_lines,
    write_optimal_report,
)
from gpucap.cli.optimal import optimal_time as optimal_seconds
from gpucap.cli.options import (
    CatalogOption,
    OutputOption,
    PricesOption,
    ReportOption,
    ReservationsOption,
    ZonesOption,
    check_output,
    kubernetes_minor,
    option_value,
    region_name,
)
from gpucap.cli.render import (
    format_explanation,
    limits_held,
    plan_document,
    plan_lines,
    write_json,
    write_plan,
)
from gpucap.cli.reporting import check_report_path, refuse_overwriting_inputs, write_plan_report
from gpucap.cli.terminals import EXIT_BAD_INPUT, EXIT_FINDINGS, out
from gpucap.controllers.provisioning import DEFAULT_MAX_PASSES
from gpucap.operator.changes import optimal_report
from gpucap.operator.plan import explain as explain_pending
from gpucap.operator.plan import plan as make_plan
from gpucap.operator.plan import reservation_causes, reservations_use
from gpucap.runtime.collector import collector_paused

__all__ = ["plan"]


def plan(  # noqa: PLR0917 - typer maps parameters to options
    files: Annotated[
        list[str], typer.Argument(help="Manifest files, directories, or - for stdin.")
    ],
    output: OutputOption = "table",
    region: Annotated[
        str, typer.Option(help="AWS region of the catalog.", callback=region_name)
    ] = "us-east-1",
    zones: ZonesOption = None,
    kubernetes_version: Annotated[
        str,
        typer.Option(
            "--kubernetes-version", help="Cluster Kubernetes version.", callback=kubernetes_minor
        ),
    ] = "1.36",
    catalog: CatalogOption = None,
    prices: PricesOption = None,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain",
            help="NAMESPACE/POD (or POD): why each NodePool can or cannot take it.",
            callback=option_value,
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
    fail_on_pending: Annotated[
        bool,
        typer.Option(
            "--fail-on-pending",
            help="Exit 1 when any pod stays pending after every pass (the plan is printed as "
            "usual): for CI.",
        ),
    ] = False,
    reservations: ReservationsOption = None,
    optimal: Annotated[
        bool,
        typer.Option(
            "--optimal",
            help="Also the cheapest fleet the same NodePools allow for the pods Karpenter "
            "placed (a MILP solved by HiGHS), the cost floor (its LP relaxation), Karpenter's "
            "excess over each, and the one-line changes whose re-plan saves.",
        ),
    ] = False,
    optimal_time: Annotated[
        str,
        typer.Option(
            "--optimal-time",
            help="Time limit of the --optimal solver (e.g. 10s).",
            callback=check_optimal_time,
        ),
    ] = "10s",
) -> None:
    """Schedule the pending pods as Karpenter's provisioner would and print what it would
    launch, at what price, and why any pod stays Pending."""
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
            fail_on_pending=fail_on_pending,
            reservations=reservations,
            optimal=optimal_seconds(optimal_time) if optimal else None,
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
    *,
    fail_on_pending: bool = False,
    reservations: str | None = None,
    optimal: float | None = None,
) -> None:
    """The `plan` command's work, with the collector off (see `plan`); `kubernetes_version`
    is what EC2NodeClass AMI aliases resolve for (which NodePools are Ready)."""
    check_output(output, ("table", "json", "yaml"))
    if report is not None:
        check_report_path(report)
        inputs = [*files, *(f for f in (catalog, prices, reservations) if f is not None)]
        refuse_overwriting_inputs("--report", report, inputs)
    # The catalog first: a region it has no prices for is refused before the input is read.
    cat = catalog_from_options(region, zones, catalog, prices)
    result = loading.load_paths(files)
    loading.report_issues(result)
    if not result.ok:
        raise typer.Exit(EXIT_BAD_INPUT)
    result.release_texts()  # plan asks for no line from here on: the input text can go
    objects = result.objects
    if reservations is not None:
        objects = dataclasses.replace(objects, reservations=load_reservations(reservations))
    made = make_plan(objects, cat, max_passes=passes, kubernetes_version=kubernetes_version)
    # Only with --optimal: a plan without it prints what it always printed. `--explain` prints
    # one pod's story alone, so the optimum is solved then only for the report's section.
    rep = (
        optimal_report(
            objects,
            cat,
            made,
            time_limit=optimal,
            max_passes=passes,
            kubernetes_version=kubernetes_version,
        )
        if optimal is not None and (explain is None or report is not None)
        else None
    )
    if report is not None:
        title = f"gpucap plan {' '.join(files)}"
        if rep is None:
            write_plan_report(report, made, objects, cat, title=title)
        else:
            write_optimal_report(report, made, objects, cat, rep, title=title)
    if explain is not None:
        key = _pod_key(explain, [p.key for p in result.objects.pods])
        explanation = explain_pending(made, key)
        if explanation is None:
            raise BadInputError(f"--explain {explain}: no such pod in the input")
        np = made.not_planned.get(key)
        out.lines(
            format_explanation(
                key,
                explanation,
                made.pod_errors.get(key),
                made.where(key),
                np.reason if np is not None else None,
                held=limits_held(made, objects, key),
                reservations=reservation_causes(objects, made, key),
            )
        )
        return
    # Only with --reservations: a plan without it prints what it always printed.
    used = reservations_use(objects, made) if reservations is not None else None
    if rep is not None:
        if output == "table":
            out.lines([*plan_lines(made, used), *optimal_lines(rep)])
        else:
            doc = plan_document(made, used)
            doc["optimal"] = optimal_document(rep)
            if output == "json":
                write_json(doc, sys.stdout)
                sys.stdout.write("\n")
            else:
                yaml.safe_dump(doc, sys.stdout, sort_keys=False, default_flow_style=False)
    elif output == "table":
        out.lines(plan_lines(made, used))
    else:
        write_plan(made, output, sys.stdout, used)
    if fail_on_pending and made.pod_errors:
        # After the plan, as CI reads it: the output above says which pods and why.
        raise typer.Exit(EXIT_FINDINGS)


def _pod_key(given: str, pods: list[str]) -> str:
    """The pod `--explain` names: `namespace/name` as given; a bare name, the one pod of that
    name in any namespace (kubectl would look in the current namespace; a plan has none), or
    the one-line refusal naming the candidates when several namespaces have it."""
    if "/" in given:
        return given
    matches = sorted(k for k in pods if k.split("/", 1)[1] == given)
    if len(matches) > 1:
        raise BadInputError(
            f"--explain {given}: pods named {given} in {len(matches)} namespaces: "
            f"{', '.join(matches)}; give namespace/name"
        )
    return matches[0] if matches else f"default/{given}"
