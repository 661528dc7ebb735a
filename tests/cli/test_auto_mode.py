"""NodePools another Karpenter serves, through the CLI: EKS Auto Mode (`nodeClassRef:
eks.amazonaws.com/NodeClass`) and Karpenter's KWOK provider (`karpenter.kwok.sh/KWOKNodeClass`).

validate does not call either reference wrong; plan does not plan them, and a pod such a pool
would take is listed apart as "served by EKS Auto Mode, not planned" (or by the KWOK
provider), not as Pending: in the JSON under `notPlanned` (with a count in the summary), in the
table under its own heading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.builders import GPU_TOLERATION, edit, nodeclass, nodepool, pod, to_yaml

runner = CliRunner()
REF = "spec.template.spec.nodeClassRef"
REQS = "spec.template.spec.requirements"


def auto_mode(name: str = "gpu", **requirements: list[str]) -> dict[str, Any]:
    """A GPU pool (tainted nvidia.com/gpu) on EKS Auto Mode, with `eks.amazonaws.com/KEY In
    VALUES` requirements (underscores in KEY for dashes); instance-category g by default."""
    doc = edit(nodepool(name), f"{REF}.group", "eks.amazonaws.com")
    doc = edit(doc, f"{REF}.kind", "NodeClass")
    reqs = requirements or {"instance_category": ["g"]}
    return edit(
        doc,
        REQS,
        [
            {"key": f"eks.amazonaws.com/{k.replace('_', '-')}", "operator": "In", "values": v}
            for k, v in reqs.items()
        ],
    )


def kwok(name: str = "default") -> dict[str, Any]:
    doc = edit(nodepool(name), f"{REF}.group", "karpenter.kwok.sh")
    doc = edit(doc, f"{REF}.kind", "KWOKNodeClass")
    return edit(edit(doc, REQS, []), "spec.template.spec.taints", [])


def trainer(name: str = "trainer", gpu: int = 1, **spec: Any) -> dict[str, Any]:
    return pod(name, gpu=gpu, tolerations=[GPU_TOLERATION], **spec)


def write(tmp_path: Path, *docs: dict[str, Any]) -> str:
    f = tmp_path / "input.yaml"
    f.write_text(to_yaml(*docs))
    return str(f)


def plan(tmp_path: Path, *docs: dict[str, Any], output: str = "json") -> Any:
    result = runner.invoke(app, ["plan", "-o", output, write(tmp_path, *docs)])
    assert result.exit_code == 0, result.stderr
    if output == "json":
        return json.loads(result.stdout)
    if output == "yaml":
        return yaml.safe_load(result.stdout)
    return result.stdout.splitlines()


def test_validate_accepts_an_auto_mode_pool_without_a_warning(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", write(tmp_path, auto_mode())])
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


def test_validate_accepts_a_kwok_pool_without_a_warning(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", write(tmp_path, kwok())])
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


def test_a_pod_only_an_auto_mode_pool_takes_is_not_planned_not_pending(tmp_path: Path) -> None:
    doc = plan(tmp_path, auto_mode(), trainer())
    assert doc["notes"] == [
        "NodePool gpu: an EKS Auto Mode NodeClass; not planned (EKS's managed Karpenter serves "
        "it, with its own instance selection)"
    ]
    assert doc["unschedulable"] == []
    assert doc["notPlanned"] == [
        {
            "pod": "default/trainer",
            "servedBy": "EKS Auto Mode",
            "nodePools": ["gpu"],
            "reason": "served by EKS Auto Mode (NodePool gpu), not planned",
        }
    ]
    assert doc["summary"]["unschedulable"] == 0
    assert doc["summary"]["notPlanned"] == 1


def test_the_yaml_plan_carries_the_not_planned_pods_too(tmp_path: Path) -> None:
    doc = plan(tmp_path, auto_mode(), trainer(), output="yaml")
    assert [u["pod"] for u in doc["notPlanned"]] == ["default/trainer"]
    assert doc["summary"]["notPlanned"] == 1


def test_the_plan_table_lists_not_planned_pods_apart_and_counts_them(tmp_path: Path) -> None:
    lines = plan(tmp_path, auto_mode(), trainer(), output="table")
    at = lines.index("Not planned (another Karpenter serves these):")
    assert lines[at + 1] == "  default/trainer: served by EKS Auto Mode (NodePool gpu), not planned"
    assert not any(line.startswith("Pending") for line in lines)
    assert lines[-1].endswith("0 pod(s) scheduled, 0 pending, 1 not planned")


def test_a_plan_without_such_pods_has_no_not_planned_key(tmp_path: Path) -> None:
    doc = plan(tmp_path, nodepool(), nodeclass(), trainer())
    assert "notPlanned" not in doc
    assert "notPlanned" not in doc["summary"]


def test_a_pod_a_planned_pool_takes_is_planned_not_left_to_auto_mode(tmp_path: Path) -> None:
    doc = plan(tmp_path, nodepool(), nodeclass(), auto_mode("auto"), trainer())
    assert [c["pods"] for c in doc["nodeClaims"]] == [["default/trainer"]]
    assert "notPlanned" not in doc


def test_a_pod_no_auto_mode_type_can_hold_stays_pending(tmp_path: Path) -> None:
    doc = plan(tmp_path, auto_mode(), trainer(gpu=100))
    assert doc["unschedulable"] == [
        {"pod": "default/trainer", "reason": "no dynamic nodepools found"}
    ]
    assert "notPlanned" not in doc


def test_a_pod_that_does_not_tolerate_the_auto_mode_pools_taint_stays_pending(
    tmp_path: Path,
) -> None:
    doc = plan(tmp_path, auto_mode(), pod("web"))
    assert [u["pod"] for u in doc["unschedulable"]] == ["default/web"]
    assert "notPlanned" not in doc


def test_an_inferentia_and_trainium_auto_mode_pool_does_not_take_a_gpu_pod(
    tmp_path: Path,
) -> None:
    doc = plan(tmp_path, auto_mode(instance_category=["inf", "trn"]), trainer())
    assert [u["pod"] for u in doc["unschedulable"]] == ["default/trainer"]


def test_a_pod_selecting_auto_modes_gpu_label_is_auto_modes(tmp_path: Path) -> None:
    selected = trainer(nodeSelector={"eks.amazonaws.com/instance-gpu-name": "l4"})
    doc = plan(tmp_path, auto_mode(), selected)
    assert [u["pod"] for u in doc["notPlanned"]] == ["default/trainer"]


def test_a_pod_selecting_a_gpu_no_auto_mode_type_of_the_pool_has_stays_pending(
    tmp_path: Path,
) -> None:
    # Auto Mode's g families have no A100 (that is p4d).
    selected = trainer(nodeSelector={"eks.amazonaws.com/instance-gpu-name": "a100"})
    doc = plan(tmp_path, auto_mode(), selected)
    assert [u["pod"] for u in doc["unschedulable"]] == ["default/trainer"]


def test_a_pod_selecting_compute_type_auto_is_auto_modes(tmp_path: Path) -> None:
    selected = trainer(nodeSelector={"eks.amazonaws.com/compute-type": "auto"})
    doc = plan(tmp_path, auto_mode(), selected)
    assert [u["pod"] for u in doc["notPlanned"]] == ["default/trainer"]


def test_a_pod_selecting_the_aws_providers_gpu_label_is_not_auto_modes(tmp_path: Path) -> None:
    # Auto Mode's nodes carry eks.amazonaws.com/instance-gpu-name, not karpenter.k8s.aws's.
    selected = trainer(nodeSelector={"karpenter.k8s.aws/instance-gpu-name": "l4"})
    doc = plan(tmp_path, auto_mode(), selected)
    assert [u["pod"] for u in doc["unschedulable"]] == ["default/trainer"]
    assert "notPlanned" not in doc


def test_a_pod_only_a_kwok_pool_takes_is_served_by_the_kwok_provider(tmp_path: Path) -> None:
    doc = plan(tmp_path, kwok(), pod("web"))
    assert doc["notes"] == [
        "NodePool default: a KWOK NodeClass; not planned (Karpenter's KWOK provider serves it, "
        "with fake nodes)"
    ]
    assert doc["unschedulable"] == []
    assert doc["notPlanned"] == [
        {
            "pod": "default/web",
            "servedBy": "the KWOK provider",
            "nodePools": ["default"],
            "reason": "served by the KWOK provider (NodePool default), not planned",
        }
    ]


def test_explain_says_a_not_planned_pod_is_served_by_auto_mode(tmp_path: Path) -> None:
    path = write(tmp_path, auto_mode(), trainer())
    result = runner.invoke(app, ["plan", path, "--explain", "trainer"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "pod default/trainer: served by EKS Auto Mode (NodePool gpu), not planned"
    )
