"""What `gpucap lint` says about real public GPU manifests (files and provenance in this
directory's PROVENANCE.yaml): the good examples exit 0, and each finding below is one a user of
that repository would want. In process (CliRunner), since one test writes a config file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.realworld.corpus import real

runner = CliRunner()


def lint(*names: str, config: Path | None = None) -> tuple[int, list[str]]:
    """Exit code and the finding lines of `gpucap lint` on the named real files."""
    args = ["lint", *(str(real(n)) for n in names)]
    if config is not None:
        args += ["--config", str(config)]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, result.stdout.splitlines()[:-1]


def rules(lines: list[str]) -> set[str]:
    return {line.split(": ", 2)[1].split()[0] for line in lines}


NVIDIA_GPU = (
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodepool.yaml",
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodeclass.yaml",
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/workload.yaml",
)
NODE_OVERLAY = (
    "aws-samples__karpenter-blueprints/blueprints/node-overlay/gpu-nodeclass.yaml",
    "aws-samples__karpenter-blueprints/blueprints/node-overlay/gpu-nodepool.yaml",
    "aws-samples__karpenter-blueprints/blueprints/node-overlay/node-overlay-gpu-slices.yaml",
    "aws-samples__karpenter-blueprints/blueprints/node-overlay/workload-gpu-slices.yaml",
)
STATIC = (
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodepool.yaml",
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodeclass.yaml",
)
AUTOMODE = (
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodepool-automode.yaml",
    "aws-samples__karpenter-blueprints/blueprints/nvidia-gpu-workload/gpu-nodeclass-automode.yaml",
)
DEVICE_PLUGIN = "NVIDIA__k8s-device-plugin/deployments/static/nvidia-device-plugin.yml"
LARGE_INSTANCES = "aws__karpenter-provider-aws/examples/v1/large-instances.yaml"
GENERAL_PURPOSE = "aws__karpenter-provider-aws/examples/v1/general-purpose.yaml"
G6F = "aws__karpenter-provider-aws/website/content/en/docs/concepts/nodeoverlays.md.g6f.yaml"


def test_karpenter_blueprints_gpu_pool_lints_clean_with_the_plugin_installed_by_helm() -> None:
    code, lines = lint(*NVIDIA_GPU)
    assert code == 0
    gpu001 = [ln for ln in lines if " GPU001 " in ln]
    assert len(gpu001) == 1
    assert " GPU001 info NodePool/gpu: " in gpu001[0]
    assert "helm upgrade -i nvdp nvdp/nvidia-device-plugin" in gpu001[0]


def test_declaring_the_helm_installed_plugin_silences_gpu001(tmp_path: Path) -> None:
    cfg = tmp_path / ".gpucap.toml"
    cfg.write_text('[lint]\ncluster = ["nvidia-device-plugin"]\n')
    code, lines = lint(*NVIDIA_GPU, config=cfg)
    assert code == 0
    assert "GPU001" not in rules(lines)


def test_the_static_nvidia_daemonset_reaches_the_blueprints_gpu_pool() -> None:
    code, lines = lint(*NVIDIA_GPU, DEVICE_PLUGIN)
    assert code == 0
    assert not {"GPU001", "GPU002"} & rules(lines)


def test_bottlerocket_time_slicing_blueprint_brings_its_plugin_and_counts_its_replicas() -> None:
    code, lines = lint(*NODE_OVERLAY)
    assert code == 0
    assert "GPU001" not in rules(lines)
    # the overlays tell Karpenter 4 per GPU for every GPU count the pool can launch
    assert "TS001" not in rules(lines)
    ts002 = next(ln for ln in lines if " TS002 " in ln)
    assert "EC2NodeClass gpu-bottlerocket userData" in ts002
    assert "replicas 4" in ts002
    assert "40/4 = 10 physical GPUs" in ts002


def test_static_gpu_pool_blueprint_gets_no_consolidation_or_gpu_limit_warning() -> None:
    code, lines = lint(*STATIC)
    assert code == 0
    assert not {"DIS001", "NP003", "GPU001", "POD003"} & rules(lines)
    dis002 = next(ln for ln in lines if " DIS002 " in ln)
    assert "consolidation" not in dis002


def test_auto_mode_gpu_blueprint_brings_its_plugin() -> None:
    code, lines = lint(*AUTOMODE)
    assert code == 0
    assert "GPU001" not in rules(lines)


def test_karpenter_large_instances_example_is_not_a_gpu_pool() -> None:
    code, lines = lint(LARGE_INSTANCES)
    assert code == 0
    assert not [ln for ln in lines if "GPU NodePool" in ln]
    assert not {"GPU001", "NP001", "NP003", "DIS001", "DIS002", "STG001"} & rules(lines)
    np010 = [ln for ln in lines if " NP010 " in ln]
    assert len(np010) == 1
    assert " NP010 info NodePool/large-instances: " in np010[0]


def test_karpenter_general_purpose_example_says_nothing_about_gpus() -> None:
    code, lines = lint(GENERAL_PURPOSE)
    assert code == 0
    assert not [ln for ln in lines if "GPU" in ln]


def test_karpenter_docs_g6f_overlay_pool_gets_the_gpu_rules() -> None:
    code, lines = lint(G6F)
    assert code == 0
    gpu001 = next(ln for ln in lines if " GPU001 " in ln)
    assert " GPU001 info NodePool/fractional-gpu: " in gpu001
    assert "g6f." in gpu001
    assert "NP001" in rules(lines)  # untainted: CPU pods could land on the fractional GPUs
