"""Real public manifests (provenance in this directory's PROVENANCE.yaml): what `gpucap validate`
must say about each, as `kubectl apply` against a Karpenter v1 cluster would, read in process
(`load_paths`, CliRunner)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucap.apis.serde import load_paths, load_text
from gpucap.cli.main import app
from tests.realworld.corpus import real

GPU_NVIDIA = real("aws__karpenter-provider-aws/examples/workloads/gpu-nvidia.yaml")
V1ALPHA5 = real("aws__karpenter-provider-aws/examples/provisioner/general-purpose.yaml")
V1BETA1 = real("aws__karpenter-provider-aws/examples/v1beta1/general-purpose.yaml")


def errors(path: Path) -> list[str]:
    result = load_paths([str(path)])
    assert result.manifests == []
    return [str(e).split(": ", 1)[1] for e in result.errors]


def test_karpenters_gpu_workload_example_is_rejected_for_its_misspelt_privilege_escalation() -> (
    None
):
    assert errors(GPU_NVIDIA) == [
        "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation: unknown "
        "field 'allowPrivilegedEscalation' (did you mean 'allowPrivilegeEscalation'?)"
    ]


def test_karpenters_gpu_workload_example_fails_validate_with_exit_2_and_one_line() -> None:
    result = CliRunner().invoke(app, ["validate", str(GPU_NVIDIA)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert lines == [
        f"error: {GPU_NVIDIA}[0] Deployment/default/gpu-nvidia: "
        "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation: unknown "
        "field 'allowPrivilegedEscalation' (did you mean 'allowPrivilegeEscalation'?)"
    ]


def test_the_example_with_the_field_spelt_right_is_valid() -> None:
    text = GPU_NVIDIA.read_text(encoding="utf-8")
    fixed = text.replace("allowPrivilegedEscalation", "allowPrivilegeEscalation")
    result = load_text(fixed, "fixed.yaml")
    assert result.errors == []
    assert [m.ref for m in result.manifests] == ["Deployment/default/gpu-nvidia"]


def test_a_v1alpha5_provisioner_and_its_aws_node_template_are_errors_naming_their_v1_replacements() -> (
    None
):
    assert errors(V1ALPHA5) == [
        "apiVersion: Provisioner (karpenter.sh/v1alpha5) is not served by Karpenter v1 (v0.33 "
        "removed it): replace it with NodePool (karpenter.sh/v1); see Karpenter's migration "
        "guides https://karpenter.sh/v1.0/upgrading/v1beta1-migration/ and "
        "https://karpenter.sh/v1.0/upgrading/v1-migration/",
        "apiVersion: AWSNodeTemplate (karpenter.k8s.aws/v1alpha1) is not served by Karpenter v1 "
        "(v0.33 removed it): replace it with EC2NodeClass (karpenter.k8s.aws/v1); see "
        "Karpenter's migration guides https://karpenter.sh/v1.0/upgrading/v1beta1-migration/ and "
        "https://karpenter.sh/v1.0/upgrading/v1-migration/",
    ]


def test_v1beta1_nodepool_and_ec2nodeclass_are_errors_naming_their_v1_versions() -> None:
    assert errors(V1BETA1) == [
        "apiVersion: NodePool karpenter.sh/v1beta1 is not served by Karpenter v1 (v1.1 removed "
        "the v1beta1 APIs): write it as NodePool karpenter.sh/v1; see Karpenter's v1 migration "
        "guide https://karpenter.sh/v1.0/upgrading/v1-migration/",
        "apiVersion: EC2NodeClass karpenter.k8s.aws/v1beta1 is not served by Karpenter v1 (v1.1 "
        "removed the v1beta1 APIs): write it as EC2NodeClass karpenter.k8s.aws/v1; see "
        "Karpenter's v1 migration guide https://karpenter.sh/v1.0/upgrading/v1-migration/",
    ]


def test_old_karpenter_apis_make_validate_exit_2_rather_than_ignoring_them() -> None:
    result = CliRunner().invoke(app, ["validate", str(V1ALPHA5)])
    assert result.exit_code == 2
    assert "ignored kinds" not in result.stderr
