"""Real public manifests (tests/apis/realworld/, provenance in its PROVENANCE.md): what
`gpucap validate` must say about each, as `kubectl apply` against a Karpenter v1 cluster would."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucap.apis.serde import load_paths, load_text
from gpucap.cli.main import app

HERE = Path(__file__).resolve().parent / "realworld"


def errors(name: str) -> list[str]:
    result = load_paths([str(HERE / name)])
    assert result.manifests == []
    return [str(e).split(": ", 1)[1] for e in result.errors]


def test_karpenters_gpu_workload_example_is_rejected_for_its_misspelt_privilege_escalation() -> (
    None
):
    assert errors("karpenter-gpu-nvidia.yaml") == [
        "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation: unknown "
        "field 'allowPrivilegedEscalation' (did you mean 'allowPrivilegeEscalation'?)"
    ]


def test_karpenters_gpu_workload_example_fails_validate_with_exit_2_and_one_line() -> None:
    result = CliRunner().invoke(app, ["validate", str(HERE / "karpenter-gpu-nvidia.yaml")])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert lines == [
        f"error: {HERE}/karpenter-gpu-nvidia.yaml[0] Deployment/default/gpu-nvidia: "
        "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation: unknown "
        "field 'allowPrivilegedEscalation' (did you mean 'allowPrivilegeEscalation'?)"
    ]


def test_the_example_with_the_field_spelt_right_is_valid() -> None:
    text = (HERE / "karpenter-gpu-nvidia.yaml").read_text(encoding="utf-8")
    fixed = text.replace("allowPrivilegedEscalation", "allowPrivilegeEscalation")
    result = load_text(fixed, "fixed.yaml")
    assert result.errors == []
    assert [m.ref for m in result.manifests] == ["Deployment/default/gpu-nvidia"]


def test_a_v1alpha5_provisioner_and_its_aws_node_template_are_errors_naming_their_v1_replacements() -> (
    None
):
    assert errors("karpenter-v0.31-provisioner-general-purpose.yaml") == [
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
    assert errors("karpenter-v0.37-v1beta1-general-purpose.yaml") == [
        "apiVersion: NodePool karpenter.sh/v1beta1 is not served by Karpenter v1 (v1.1 removed "
        "the v1beta1 APIs): write it as NodePool karpenter.sh/v1; see Karpenter's v1 migration "
        "guide https://karpenter.sh/v1.0/upgrading/v1-migration/",
        "apiVersion: EC2NodeClass karpenter.k8s.aws/v1beta1 is not served by Karpenter v1 (v1.1 "
        "removed the v1beta1 APIs): write it as EC2NodeClass karpenter.k8s.aws/v1; see "
        "Karpenter's v1 migration guide https://karpenter.sh/v1.0/upgrading/v1-migration/",
    ]


def test_old_karpenter_apis_make_validate_exit_2_rather_than_ignoring_them() -> None:
    result = CliRunner().invoke(
        app, ["validate", str(HERE / "karpenter-v0.31-provisioner-general-purpose.yaml")]
    )
    assert result.exit_code == 2
    assert "ignored kinds" not in result.stderr
