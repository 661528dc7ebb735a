"""Running `gpucap plan` in-process on small inputs, shared by the CLI's and the real-world plan
tests (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from tests.builders import GPU_TOLERATION, deployment, to_yaml

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"
runner = CliRunner()


def plan_json(tmp_path: Path, *docs: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    files = [
        str(WORKSHOP / n)
        for n in ("nodepool.yaml", "ec2nodeclass.yaml", "nvidia-device-plugin.yaml")
    ]
    if docs:
        f = tmp_path / "workload.yaml"
        f.write_text(to_yaml(*docs))
        files.append(str(f))
    result = runner.invoke(app, ["plan", "-o", "json", *files, *extra])
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def vllm(replicas: int) -> dict[str, Any]:
    return deployment(
        "vllm", replicas=replicas, gpu=1, cpu="3", memory="12Gi", tolerations=[GPU_TOLERATION]
    )


def cheapest_spot(names: list[str]) -> tuple[str, float]:
    its = load_catalog("us-east-1").instance_types(None)
    best = min(
        (o.price, it.name, o.zone)
        for it in its
        if it.name in names
        for o in it.offerings
        if o.available and o.capacity_type == "spot"
    )
    return best[1], best[0]


def run_plan(
    tmp_path: Path, files: list[str], *docs: dict[str, Any], extra: tuple[str, ...] = ()
) -> Result:
    if docs:
        f = tmp_path / "workload.yaml"
        f.write_text(to_yaml(*docs))
        files = [*files, str(f)]
    return runner.invoke(app, ["plan", *files, *extra])
