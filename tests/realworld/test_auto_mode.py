"""What gpucap says about the real files of issue 21's class 5: NodePools the AWS provider never
serves. EKS Auto Mode pools (aws-samples/sample-aws-eks-auto-mode and a fork of it) are checked
with Auto Mode's labels and their pods are "served by EKS Auto Mode, not planned"; Karpenter's
own KWOK test pool is valid, gets no AWS or GPU finding, and its pods are the KWOK provider's.
In process (CliRunner): one test writes a pod next to the real KWOK files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gpucap.apis.serde import load_paths
from gpucap.cli.main import app
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.context import LintContext
from tests.builders import pod, to_yaml
from tests.realworld.corpus import real

runner = CliRunner()

AUTO_GPU = (
    "aws-samples__sample-aws-eks-auto-mode/nodepool-templates/gpu-nodepool.yaml.tpl",
    "aws-samples__sample-aws-eks-auto-mode/examples/gpu/model-qwen3-32b-fp8.yaml",
)
AUTO_NEURON = "aws-samples__sample-aws-eks-auto-mode/nodepool-templates/neuron-nodepool.yaml.tpl"
FORK_GPU = "walidshaari__sample-aws-eks-auto-mode/nodepool-templates/gpu-nodepool.yaml.tpl"
KWOK = (
    "kubernetes-sigs__karpenter/test/pkg/environment/common/default_nodepool.yaml",
    "kubernetes-sigs__karpenter/test/pkg/environment/common/default_kowknodeclass.yaml",
)


def lint(*files: str | Path) -> tuple[int, list[str]]:
    """Exit code and finding lines of `gpucap lint` (names of real files, or paths)."""
    paths = [str(real(f)) if isinstance(f, str) else str(f) for f in files]
    result = runner.invoke(app, ["lint", *paths])
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, result.stdout.splitlines()[:-1]


def plan(*files: str | Path) -> Any:
    paths = [str(real(f)) if isinstance(f, str) else str(f) for f in files]
    result = runner.invoke(app, ["plan", "-o", "json", *paths])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def rules(lines: list[str]) -> set[str]:
    return {line.split(": ", 2)[1].split()[0] for line in lines}


def test_lint_exits_zero_on_the_auto_mode_samples() -> None:
    code, lines = lint(*AUTO_GPU, AUTO_NEURON)
    assert code == 0
    assert "NP009" not in rules(lines)  # g5, g6, g6e, inf2 are Auto Mode families
    assert "GPU001" not in rules(lines)  # Auto Mode runs the device plugin


def test_the_auto_mode_gpu_pool_launches_its_families_by_auto_modes_labels() -> None:
    # Before issue 21 item 5 lint ignored the eks.amazonaws.com keys and resolved the pool to
    # every type of the catalog; now to Auto Mode's g5, g6 and g6e of 2xlarge and up.
    result = load_paths([str(real(AUTO_GPU[0]))])
    (pool,) = LintContext(result.manifests, load_catalog("us-east-1")).pools
    assert {it.name.split(".")[0] for it in pool.instance_types} == {"g5", "g6", "g6e"}
    assert "g5.xlarge" not in {it.name for it in pool.instance_types}
    assert pool.gpu_pool == "every instance type it can launch has NVIDIA GPUs"


def test_the_auto_mode_inf2_pool_is_no_gpu_pool() -> None:
    code, lines = lint(AUTO_NEURON)
    assert code == 0
    assert not [ln for ln in lines if "GPU NodePool" in ln]
    assert not {"NP001", "NP003", "NP010", "DIS001", "DIS002"} & rules(lines)


def test_a_forks_auto_mode_gpu_pool_gets_np009_for_families_auto_mode_does_not_have() -> None:
    code, lines = lint(FORK_GPU)
    assert code == 0  # warnings
    np009 = [ln for ln in lines if " NP009 " in ln]
    flagged = [ln.split("eks.amazonaws.com/instance-family In ")[1].split(":")[0] for ln in np009]
    assert flagged == ["g3", "g4", "p3", "p4"]
    assert all("EKS Auto Mode's types in the catalog (us-east-1, " in ln for ln in np009)
    assert "(did you mean p4d?)" in np009[3]


def test_plan_says_the_qwen3_pod_is_served_by_auto_mode_not_pending() -> None:
    doc = plan(*AUTO_GPU)
    assert doc["nodeClaims"] == []
    assert doc["unschedulable"] == []
    assert doc["notPlanned"] == [
        {
            "pod": "vllm-inference/qwen3-32b-fp8-0",
            "servedBy": "EKS Auto Mode",
            "nodePools": ["gpu-nodepool"],
            "reason": "served by EKS Auto Mode (NodePool gpu-nodepool), not planned",
        }
    ]
    assert doc["summary"]["notPlanned"] == 1


def test_the_qwen3_pod_is_not_the_inf2_pools() -> None:
    # It selects instance-family g6e and tolerates only nvidia.com/gpu: no Auto Mode pool
    # takes it, so it stays Pending.
    doc = plan(AUTO_NEURON, AUTO_GPU[1])
    assert [u["pod"] for u in doc["unschedulable"]] == ["vllm-inference/qwen3-32b-fp8-0"]
    assert "notPlanned" not in doc


def test_validate_accepts_karpenters_kwok_pool_without_a_warning() -> None:
    result = runner.invoke(app, ["validate", str(real(KWOK[0]))])
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


def test_lint_exits_zero_on_karpenters_kwok_pool_with_no_aws_or_gpu_finding() -> None:
    # Before: SCHEMA001 "would never become Ready" and NP010 (59 GPU types) on the AWS catalog.
    code, lines = lint(*KWOK)
    assert code == 0
    assert lines == [
        "<input>: SCHEMA003 info ignored kinds gpucap does not use: KWOKNodeClass",
    ]


def test_plan_says_a_pod_for_the_kwok_pool_is_served_by_the_kwok_provider(tmp_path: Path) -> None:
    web = tmp_path / "web.yaml"
    web.write_text(to_yaml(pod("web")))
    doc = plan(*KWOK, web)
    assert doc["unschedulable"] == []
    assert [(u["pod"], u["reason"]) for u in doc["notPlanned"]] == [
        ("default/web", "served by the KWOK provider (NodePool default), not planned")
    ]
    assert doc["notes"][-1] == (
        "NodePool default: a KWOK NodeClass; not planned (Karpenter's KWOK provider serves it, "
        "with fake nodes)"
    )
