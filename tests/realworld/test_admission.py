"""What EKS's API server does to a real manifest, and labels no pool can know (issue 21, items 1
and 2), on NVIDIA's GPU Operator test and validation manifests (provenance in PROVENANCE.yaml)
with the karpenter-blueprints GPU NodePool (tainted nvidia.com/gpu:NoSchedule). In process
(CliRunner); the minimal tests are in tests/apis/test_admission.py and tests/lint/test_rules_pods.py.
"""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.realworld.corpus import real

runner = CliRunner()

GPU_POOL = (
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodepool.yaml",
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodeclass.yaml",
)
GPU_POD = "NVIDIA__gpu-operator/tests/gpu-pod.yaml"
DRIVER_VALIDATION = "NVIDIA__gpu-operator/assets/state-driver-validation/cuda-vector-add-raw.yaml"
MPS_TEST = "NVIDIA__gpu-operator/tests/plugin-mps-test.yaml"


def plan(*names: str) -> Any:
    result = runner.invoke(app, ["plan", "-o", "json", *(str(real(n)) for n in names)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def lint(*names: str) -> tuple[int, list[tuple[str, str, str]]]:
    """Exit code and (rule, object, message) of each finding of `gpucap lint -o json`."""
    result = runner.invoke(app, ["lint", "-o", "json", *(str(real(n)) for n in names)])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    return result.exit_code, [(f["rule"], f["object"], f["message"]) for f in doc["findings"]]


# ---- item 1: ExtendedResourceToleration -------------------------------------------------------
def test_gpu_operator_test_pod_without_a_toleration_runs_on_the_tainted_gpu_pool() -> None:
    # Before issue 21: pending, "did not tolerate taint nvidia.com/gpu:NoSchedule".
    doc = plan(*GPU_POOL, GPU_POD)
    assert doc["unschedulable"] == []
    (claim,) = doc["nodeClaims"]
    assert (claim["nodePool"], claim["pods"]) == ("gpu", ["default/gpu-operator-test"])


def test_gpu_operator_test_pod_is_no_pod002_error() -> None:
    # Before issue 21: POD002 error (tolerates the taints of no GPU NodePool).
    code, findings = lint(*GPU_POOL, GPU_POD)
    assert code == 0
    assert not [f for f in findings if f[0] == "POD002"]


# ---- item 2: GPU Feature Discovery labels no pool declares -------------------------------------
def test_gpu_operator_validation_pods_selecting_discovered_labels_stay_pending() -> None:
    doc = plan(*GPU_POOL, DRIVER_VALIDATION, MPS_TEST)
    assert doc["nodeClaims"] == []
    reasons = {u["pod"]: u["reason"] for u in doc["unschedulable"]}
    assert (
        'label "nvidia.com/gpu.present" does not have known values'
        in (reasons["gpu-operator-resources/nvidia-driver-validation"])
    )
    assert (
        'label "nvidia.com/gpu.sharing-strategy" does not have known values'
        in (reasons["default/nvidia-plugin-mps-test-0"])
    )


def test_gpu_operator_validation_pods_selecting_discovered_labels_are_pod005_errors() -> None:
    # Before issue 21: lint was silent about both.
    code, findings = lint(*GPU_POOL, DRIVER_VALIDATION, MPS_TEST)
    assert code == 1
    pod005 = {(obj, msg.split(",")[0]) for rule, obj, msg in findings if rule == "POD005"}
    assert pod005 == {
        (
            "Pod/gpu-operator-resources/nvidia-driver-validation",
            "requires node label nvidia.com/gpu.present",
        ),
        (
            "Deployment/default/nvidia-plugin-mps-test",
            "requires node label nvidia.com/gpu.sharing-strategy",
        ),
    }
    fixes = [msg for rule, _, msg in findings if rule == "POD005"]
    assert all("template labels or requirements, or drop the selector" in m for m in fixes)
