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
from gpucap.cloudprovider.aws.export import export_catalog

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
) -> None:
    """Build a catalog file (`--catalog` accepts it) from the live AWS APIs: instance types,
    zone offerings, spot price history and on-demand prices."""
    if not from_aws:
        raise BadInputError("give --from-aws (the only source `catalog export` has)")
    api = aws.aws_api(region)
    with aws.aws_errors():
        entries = export_catalog(api, region)
    Path(output_file).write_text(
        json.dumps(entries, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    out.line(f"wrote {len(entries)} instance types for {region} to {output_file}")
