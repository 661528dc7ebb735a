"""EKS Auto Mode NodePools (`nodeClassRef: eks.amazonaws.com/NodeClass`) through the CLI.

EKS's managed Karpenter serves them on an Auto Mode cluster, so validate does not call the
reference wrong; plan does not model Auto Mode's instance selection and says it skips them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.builders import GPU_TOLERATION, edit, nodepool, pod, to_yaml

runner = CliRunner()
REF = "spec.template.spec.nodeClassRef"


def auto_mode_pool(tmp_path: Path) -> str:
    doc = edit(
        edit(nodepool("gpu"), f"{REF}.group", "eks.amazonaws.com"), f"{REF}.kind", "NodeClass"
    )
    f = tmp_path / "pool.yaml"
    f.write_text(to_yaml(doc, pod("trainer", gpu=1, tolerations=[GPU_TOLERATION])))
    return str(f)


def test_validate_accepts_an_auto_mode_pool_without_a_warning(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", auto_mode_pool(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


def test_plan_says_it_does_not_plan_an_auto_mode_pool(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", "-o", "json", auto_mode_pool(tmp_path)])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["notes"] == [
        "NodePool gpu: an EKS Auto Mode NodeClass; not planned (EKS's managed Karpenter serves "
        "it, with its own instance selection)"
    ]
    assert doc["unschedulable"] == [
        {"pod": "default/trainer", "reason": "no dynamic nodepools found"}
    ]
