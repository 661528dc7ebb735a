"""What `gpucap lint` says about the real files of issue 21's classes 6, 7 and 10: GPU Feature
Discovery beside (not instead of) the device plugin, Bottlerocket EC2NodeClasses selected by
AMI id or name, and an instance type that exists but is not offered in the linted region."""

from __future__ import annotations

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.realworld.corpus import real

runner = CliRunner()


def lint(*names: str, region: str = "us-east-1") -> tuple[int, list[str]]:
    """Exit code and the finding lines of `gpucap lint` on the named real files."""
    args = ["lint", "--region", region, *(str(real(n)) for n in names)]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, result.stdout.splitlines()[:-1]


CHATBOT_POOL = "aws-samples__eks-workshop-v2/manifests/modules/aiml/chatbot/nodepool.yaml"


def test_np009_a_workshop_trainium_pool_linted_for_eu_west_1_says_where_trn1_is_offered() -> None:
    # The workshop's pool lists trn1.2xlarge and inf2.xlarge; the bundled data offers trn1 in
    # three US regions and not in eu-west-1: a region to change, not a typo.
    _, lines = lint(CHATBOT_POOL, region="eu-west-1")
    (np009,) = [ln for ln in lines if " NP009 " in ln]
    assert (
        "trn1.2xlarge is not offered in eu-west-1; it is in us-east-1, us-east-2, us-west-2"
    ) in np009
    assert "did you mean" not in np009
    _, home = lint(CHATBOT_POOL)
    assert not [ln for ln in home if " NP009 " in ln]


GFD = "NVIDIA__k8s-device-plugin/deployments/static/gpu-feature-discovery-daemonset.yaml"
NVDP = "NVIDIA__k8s-device-plugin/deployments/static/nvidia-device-plugin.yml"
BLUEPRINT_GPU = (
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodepool.yaml",
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodeclass.yaml",
)


def test_nvidias_gpu_feature_discovery_daemonset_alone_is_not_a_device_plugin() -> None:
    # Same image as the plugin (nvcr.io/nvidia/k8s-device-plugin), command gpu-feature-discovery:
    # GPU001 says what it says without it (the plugin may be installed outside the input).
    _, alone = lint(*BLUEPRINT_GPU)
    _, with_gfd = lint(*BLUEPRINT_GPU, GFD)
    gpu001 = [ln for ln in with_gfd if " GPU001 " in ln]
    assert gpu001 == [ln for ln in alone if " GPU001 " in ln]
    assert len(gpu001) == 1
    assert " GPU001 info " in gpu001[0]


def test_nvidias_gpu_feature_discovery_cannot_label_the_blueprints_tainted_gpu_nodes() -> None:
    code, lines = lint(*BLUEPRINT_GPU, GFD, NVDP)
    assert code == 0  # the plugin tolerates nvidia.com/gpu: no GPU001, and GPU006 is a warning
    assert not [ln for ln in lines if " GPU001 " in ln or " GPU002 " in ln]
    (gpu006,) = [ln for ln in lines if " GPU006 " in ln]
    assert gpu006.startswith(f"{real(GFD)}:")
    assert "GPU006 warning DaemonSet/default/gpu-feature-discovery" in gpu006
    assert "does not tolerate nvidia.com/gpu:NoSchedule of GPU NodePool gpu" in gpu006
