"""`gpucap catalog export`: a catalog file (what `--catalog` reads) built from the live AWS
APIs. `app` is the sub-command group `cli/app.py` registers as `catalog`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gpucap.cli import aws
from gpucap.cli.errors import BadInputError
from gpucap.cli.options import region_name
from gpucap.cli.terminals import out
from gpucap.cloudprovider.aws.export import export_catalog, export_reservations, reservations_json

__all__ = ["app"]

app = typer.Typer(help="The EC2 instance-type catalog.", no_args_is_help=True)


@app.command("export")
def catalog_export(
    output_file: Annotated[str, typer.Option("-o", "--output", help="File to write.")],
    from_aws: Annotated[
        bool, typer.Option("--from-aws", help="Read the live EC2 and Pricing APIs.")
    ] = False,
    region: Annotated[
        str, typer.Option("--region", help="AWS region.", callback=region_name)
    ] = "us-east-1",
    reservations_out: Annotated[
        str | None,
        typer.Option(
            "--reservations-out",
            metavar="FILE",
            help="Also write the account's capacity reservations in the region "
            "(DescribeCapacityReservations) to FILE, a reservations file.",
        ),
    ] = None,
) -> None:
    """Build a catalog file (`--catalog` accepts it) from the live AWS APIs: instance types,
    zone offerings, spot price history and on-demand prices; with `--reservations-out`, the
    account's capacity reservations as well."""
    if not from_aws:
        raise BadInputError("give --from-aws (the only source `catalog export` has)")
    if reservations_out is not None and reservations_out == output_file:
        raise BadInputError("--reservations-out: the same file as --output")
    api = aws.aws_api(region)
    with aws.aws_errors():
        entries = export_catalog(api, region)
        reservations = export_reservations(api) if reservations_out is not None else None
    Path(output_file).write_text(
        json.dumps(entries, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    out.line(f"wrote {len(entries)} instance types for {region} to {output_file}")
    if reservations_out is not None and reservations is not None:
        Path(reservations_out).write_text(reservations_json(reservations), encoding="utf-8")
        count = len(reservations["CapacityReservations"])
        out.line(f"wrote {count} capacity reservations for {region} to {reservations_out}")
