"""What validate and render say about real public manifests with placeholders and runtime
variables (provenance in this directory's PROVENANCE.yaml), in process (CliRunner, with the
placeholders' variables unset in its environment)."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from gpucap.apis.serde import load_paths, load_text
from gpucap.cli.main import app
from tests.realworld.corpus import real

DATA_ON_EKS = real("awslabs__data-on-eks/infra/terraform/manifests/karpenter/ec2nodeclass.yaml")
RAY_MISTRAL = real(
    "awslabs__ai-on-eks/blueprints/inference/mistral-7b-rayserve-inf2/ray-service-mistral.yaml"
)
EBS_RESIZE = real(
    "aws-samples__karpenter-blueprints/blueprints/dynamic-disk-ebs-volume/ebs-dynamic-resize.yaml"
)
STATIC_GPU = real(
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodeclass.yaml"
)

runner = CliRunner()
UNSET = ("CLUSTER_NAME", "KARPENTER_NODE_IAM_ROLE_NAME", "HUGGING_FACE_HUB_TOKEN")


def run(*args: str, env: dict[str, str | None] | None = None) -> Any:
    return runner.invoke(app, list(args), env={**dict.fromkeys(UNSET), **(env or {})})


def test_data_on_eks_nodeclasses_give_one_warning_per_variable_and_the_command() -> None:
    result = load_paths([str(DATA_ON_EKS)])
    assert result.errors == []
    assert [str(w) for w in result.warnings] == [
        f"{DATA_ON_EKS}: ${{KARPENTER_NODE_IAM_ROLE_NAME}} is not filled in 8 fields of 8 "
        "objects: [0] EC2NodeClass/default spec.role; [1] EC2NodeClass/gpu; "
        "[2] EC2NodeClass/spark-vertical-ebs-scale; and 5 more objects",
        f"{DATA_ON_EKS}: ${{CLUSTER_NAME}} is not filled in 16 fields of 8 objects: "
        "[0] EC2NodeClass/default spec.subnetSelectorTerms[0].tags.Name, "
        "spec.securityGroupSelectorTerms[0].tags.Name; [1] EC2NodeClass/gpu; "
        "[2] EC2NodeClass/spark-vertical-ebs-scale; and 5 more objects",
        f"fill these 2 placeholders before applying: gpucap render {DATA_ON_EKS} "
        "--set KARPENTER_NODE_IAM_ROLE_NAME=... --set CLUSTER_NAME=...",
    ]


def test_data_on_eks_render_fills_terraform_variables_and_keeps_its_escapes() -> None:
    result = run(
        "render",
        str(DATA_ON_EKS),
        "--set",
        "CLUSTER_NAME=doeks",
        "--set",
        "KARPENTER_NODE_IAM_ROLE_NAME=karpenter-doeks",
    )
    assert result.exit_code == 0, result.stderr
    original = DATA_ON_EKS.read_text(encoding="utf-8")
    assert result.stdout == original.replace("${CLUSTER_NAME}", "doeks").replace(
        "${KARPENTER_NODE_IAM_ROLE_NAME}", "karpenter-doeks"
    )
    assert 'DISK_ARRAY+=("/dev/$${DEV}")' in result.stdout
    assert "TOKEN, VOLUME_ID, VOLUME_SIZE" in result.stderr  # the runtime ones, named once
    rendered = load_text(result.stdout, "rendered.yaml")
    assert rendered.errors == []
    assert rendered.warnings == []


def test_data_on_eks_render_without_values_names_both_missing_variables() -> None:
    result = run("render", str(DATA_ON_EKS))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {DATA_ON_EKS}: missing variable(s): CLUSTER_NAME, KARPENTER_NODE_IAM_ROLE_NAME"
    )


def test_ray_service_render_only_fills_the_token_and_keeps_ld_library_path() -> None:
    result = run(
        "render",
        str(RAY_MISTRAL),
        "--only",
        "HUGGING_FACE_HUB_TOKEN",
        env={"HUGGING_FACE_HUB_TOKEN": "aGZfdG9rZW4=", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
    )
    assert result.exit_code == 0, result.stderr
    original = RAY_MISTRAL.read_text(encoding="utf-8")
    assert result.stdout == original.replace("$HUGGING_FACE_HUB_TOKEN", "aGZfdG9rZW4=")
    assert result.stdout.count('"/home/ray/anaconda3/lib:$LD_LIBRARY_PATH"') == 4
    assert result.stderr == ""


def test_ray_service_render_without_only_fills_ld_library_path_of_env_values_as_envsubst() -> None:
    # Before issue 21: left as written with a warning, env values being runtime fields. The
    # kubelet passes `$LD_LIBRARY_PATH` in an env value as written (only `$(VAR)` is expanded),
    # so it is the template's variable: filled from the environment, as the blueprint's
    # envsubst does, or missing. `--only HUGGING_FACE_HUB_TOKEN` keeps it as written.
    env: dict[str, str | None] = {
        "HUGGING_FACE_HUB_TOKEN": "aGZfdG9rZW4=",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    }
    result = run("render", str(RAY_MISTRAL), env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count('"/home/ray/anaconda3/lib:/usr/local/cuda/lib64"') == 4
    assert "hf-token: aGZfdG9rZW4=" in result.stdout
    missing = run("render", str(RAY_MISTRAL), env={**env, "LD_LIBRARY_PATH": None})
    assert missing.exit_code == 2
    assert missing.stderr == f"error: {RAY_MISTRAL}: missing variable(s): LD_LIBRARY_PATH\n"


def test_ebs_resize_user_data_script_is_no_placeholder_and_renders_byte_for_byte() -> None:
    assert load_paths([str(EBS_RESIZE)]).warnings == []
    result = run("render", str(EBS_RESIZE))
    assert result.exit_code == 0
    assert result.stdout == EBS_RESIZE.read_text(encoding="utf-8")  # no final newline added
    assert ": current_size, device, elapsed," in result.stderr


def test_static_gpu_nodeclass_bare_dollar_placeholders_are_warned_about() -> None:
    result = load_paths([str(STATIC_GPU)])
    assert [w.message for w in result.warnings] == [
        "${KARPENTER_NODE_IAM_ROLE_NAME} is not filled: [0] EC2NodeClass/gpu-static spec.role",
        "${CLUSTER_NAME} is not filled in 2 fields: [0] EC2NodeClass/gpu-static "
        "spec.securityGroupSelectorTerms[0].tags[karpenter.sh/discovery], "
        "spec.subnetSelectorTerms[0].tags[karpenter.sh/discovery]",
        f"fill these 2 placeholders before applying: gpucap render {STATIC_GPU} "
        "--set KARPENTER_NODE_IAM_ROLE_NAME=... --set CLUSTER_NAME=...",
    ]


def test_lint_shows_the_grouped_placeholder_findings() -> None:
    result = run("lint", str(DATA_ON_EKS), "-o", "json")
    schema002 = [line for line in result.stdout.splitlines() if '"SCHEMA002"' in line]
    assert len(schema002) == 3
