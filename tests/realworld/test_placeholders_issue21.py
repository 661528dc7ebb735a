"""What validate, lint, render and plan say about real files with issue 21's placeholder habits
(item 3), run in process (CliRunner) with the files' variables unset:

| class | real files |
| --- | --- |
| a placeholder in a field with a syntax (AMI id, namespace, label value) | Karpenter's v1.0 getting-started EC2NodeClass (`id: "${ARM_AMI_ID}"`), data-on-eks's superset Redis (`namespace: ${namespace}`), the raydata ConfigMap and RayJob (`namespace: $NAMESPACE`, `replicas: $INITIAL_WORKERS`) |
| a bare `$VAR` in `image:` | data-on-eks's ray-batch-inference RayService (`image: $ECR_REGISTRY/ray-llm:$RAY_LLM_TAG`) |
| env values (`value: "$S3_BUCKET"`) | the raydata RayJob, ray-batch-inference's batch RayJob |
| a ConfigMap script | ray-batch-inference's `process_tickets.py` (prints `${gpu_cost_hr}`), raydata's `spark_log_processor.py` |
| a Terraform template | ai-on-eks's `karpenter-resources/karpenter/gpu.yaml` (`${indent(2, ec2nodeclass)}`) |

The minimal input of each rule is in tests/apis/test_placeholder_fields.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpucap.apis.serde import load_text
from gpucap.cli.main import app
from tests.realworld.corpus import real

KARPENTER_GETTING_STARTED = real(
    "aws__karpenter-provider-aws/website/content/en/v1.0/getting-started/getting-started-with-karpenter/scripts/step12-add-nodepool.sh.heredoc.yaml"
)
SUPERSET_REDIS = real("awslabs__data-on-eks/infra/terraform/manifests/superset/redis.yaml")
RAYDATA_CONFIGMAP = real(
    "awslabs__data-on-eks/data-stacks/ray-on-eks/examples/raydata-sparklogs-processing-job/configmap.yaml"
)
RAYDATA_RAYJOB = real(
    "awslabs__data-on-eks/data-stacks/ray-on-eks/examples/raydata-sparklogs-processing-job/rayjob.yaml"
)
BATCH_RAYSERVICE = real(
    "awslabs__data-on-eks/data-stacks/ray-on-eks/examples/ray-batch-inference/03-rayservice-deepseek-r1-8b.yaml"
)
BATCH_ENDPOINT_JOB = real(
    "awslabs__data-on-eks/data-stacks/ray-on-eks/examples/ray-batch-inference/05-rayjob-batch-endpoint.yaml"
)
AI_ON_EKS_GPU_TEMPLATE = real(
    "awslabs__ai-on-eks/infra/base/terraform/karpenter-resources/karpenter/gpu.yaml"
)

# The variables execute-rayjob.sh fills with sed, in the order gpucap names them.
RAYDATA_VARIABLES = (
    "NAMESPACE",
    "S3_BUCKET",
    "S3_PREFIX",
    "ICEBERG_CATALOG_TYPE",
    "ICEBERG_DATABASE",
    "ICEBERG_TABLE",
    "ICEBERG_WAREHOUSE",
    "BATCH_SIZE",
    "INITIAL_WORKERS",
    "MIN_WORKERS",
    "MAX_WORKERS",
)
UNSET = (
    *RAYDATA_VARIABLES,
    "CLUSTER_NAME",
    "ARM_AMI_ID",
    "AMD_AMI_ID",
    "namespace",
    "AWS_REGION",
    "ECR_REGISTRY",
    "RAY_LLM_TAG",
    "gpu_cost_hr",
    "PYTHONPATH",
)
runner = CliRunner()


def run(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args], env=dict.fromkeys(UNSET))


def warnings(stderr: str) -> list[str]:
    return [ln.removeprefix("warning: ") for ln in stderr.splitlines() if ln.startswith("warning")]


# ---- a placeholder in a field with a syntax ------------------------------------------------------
def test_karpenter_getting_started_ami_id_placeholders_are_warnings_and_both_objects_validate() -> (
    None
):
    # Before issue 21: "'${ARM_AMI_ID}' is not an AMI id (ami-...)" twice, nothing validated.
    result = run("validate", KARPENTER_GETTING_STARTED)
    assert result.exit_code == 0, result.stderr
    f = KARPENTER_GETTING_STARTED
    assert warnings(result.stderr) == [
        f"{f}: ${{CLUSTER_NAME}} is not filled in 3 fields: [1] EC2NodeClass/default spec.role, "
        "spec.subnetSelectorTerms[0].tags[karpenter.sh/discovery] (+1)",
        f"{f}: ${{ARM_AMI_ID}} is not filled: [1] EC2NodeClass/default spec.amiSelectorTerms[0].id",
        f"{f}: ${{AMD_AMI_ID}} is not filled: [1] EC2NodeClass/default spec.amiSelectorTerms[1].id",
        f"fill these 3 placeholders before applying: gpucap render {f} --set CLUSTER_NAME=... "
        "--set ARM_AMI_ID=... --set AMD_AMI_ID=...",
    ]
    assert result.stdout.endswith("2 objects valid, 4 warning(s)\n")


def test_karpenter_getting_started_renders_to_a_nodeclass_with_real_ami_ids() -> None:
    result = runner.invoke(
        app,
        [
            "render",
            str(KARPENTER_GETTING_STARTED),
            "--set",
            "CLUSTER_NAME=demo",
            "--set",
            "ARM_AMI_ID=ami-0123456789abcdef0",
            "--set",
            "AMD_AMI_ID=ami-0fedcba9876543210",
        ],
    )
    assert result.exit_code == 0, result.stderr
    rendered = load_text(result.stdout, "rendered.yaml")
    assert rendered.issues == []
    docs = yaml.safe_load_all(result.stdout)
    terms = next(d for d in docs if d["kind"] == "EC2NodeClass")["spec"]["amiSelectorTerms"]
    assert terms == [{"id": "ami-0123456789abcdef0"}, {"id": "ami-0fedcba9876543210"}]


def test_superset_redis_namespace_placeholder_is_a_warning_and_the_deployment_validates() -> None:
    # Before issue 21: "metadata.namespace: invalid namespace: '${namespace}' must be a
    # lowercase RFC 1123 label", nothing validated.
    result = run("validate", SUPERSET_REDIS)
    assert result.exit_code == 0, result.stderr
    assert warnings(result.stderr)[:2] == [
        f"{SUPERSET_REDIS}: ${{namespace}} is not filled: [0] Deployment/${{namespace}}/redis "
        "metadata.namespace",
        f"fill it before applying: gpucap render {SUPERSET_REDIS} --set namespace=...",
    ]
    assert "Deployment/${namespace}/redis: 1 pod (redis-0)" in result.stdout


def test_superset_redis_rendered_with_its_namespace_plans_its_pod_in_that_namespace() -> None:
    rendered = runner.invoke(app, ["render", str(SUPERSET_REDIS), "--set", "namespace=superset"])
    assert rendered.exit_code == 0, rendered.stderr
    assert rendered.stdout.count("namespace: superset") == 2
    assert load_text(rendered.stdout, "r.yaml").manifests[0].obj.metadata.namespace == "superset"


def test_raydata_configmap_bare_namespace_is_a_placeholder_and_its_script_is_not_scanned() -> None:
    result = run("validate", RAYDATA_CONFIGMAP)
    assert result.exit_code == 0, result.stderr
    assert warnings(result.stderr) == [
        f"{RAYDATA_CONFIGMAP}: ${{NAMESPACE}} is not filled: "
        "[0] ConfigMap/$NAMESPACE/spark-log-processor-code metadata.namespace",
        f"fill it before applying: gpucap render {RAYDATA_CONFIGMAP} --set NAMESPACE=...",
    ]


def test_raydata_rayjob_names_all_eleven_variables_its_script_fills_and_keeps_replica_errors() -> (
    None
):
    # `replicas: $INITIAL_WORKERS` leaves no integer to build the RayJob around: those three
    # stay errors, and the warnings name every variable execute-rayjob.sh's sed fills.
    result = run("validate", RAYDATA_RAYJOB)
    assert result.exit_code == 2
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert [e.rsplit(": ", 2)[-2:] for e in errors] == [
        ["spec.rayClusterSpec.workerGroupSpecs[0].replicas", 'expected an integer, got string "$INITIAL_WORKERS"'],
        ["spec.rayClusterSpec.workerGroupSpecs[0].minReplicas", 'expected an integer, got string "$MIN_WORKERS"'],
        ["spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas", 'expected an integer, got string "$MAX_WORKERS"'],
    ]  # fmt: skip
    hint = warnings(result.stderr)[-1]
    sets = " ".join(f"--set {n}=..." for n in RAYDATA_VARIABLES)
    assert hint == (
        f"fill these 11 placeholders before applying: gpucap render {RAYDATA_RAYJOB} {sets}"
    )


RAYDATA_VALUES = {
    "NAMESPACE": "raydata",
    "S3_BUCKET": "logs-bucket",
    "S3_PREFIX": "spark-logs",
    "ICEBERG_CATALOG_TYPE": "glue",
    "ICEBERG_DATABASE": "raydata",
    "ICEBERG_TABLE": "spark_logs",
    "ICEBERG_WAREHOUSE": "s3://logs-bucket/iceberg-warehouse",
    "BATCH_SIZE": "10000",
    "INITIAL_WORKERS": "2",
    "MIN_WORKERS": "2",
    "MAX_WORKERS": "10",
}


def test_raydata_rendered_with_its_eleven_values_is_valid_and_keeps_rays_pythonpath() -> None:
    sets = [a for n, v in RAYDATA_VALUES.items() for a in ("--set", f"{n}={v}")]
    result = run("render", RAYDATA_CONFIGMAP, RAYDATA_RAYJOB, *sets)
    assert result.exit_code == 0, result.stderr
    assert 'PYTHONPATH: "/home/ray/app:$PYTHONPATH"' in result.stdout  # Ray's, at run time
    assert "PYTHONPATH" in result.stderr  # named once as left for run time
    assert 'value: "logs-bucket"' in result.stdout
    rendered = load_text(result.stdout, "rendered.yaml")
    assert rendered.issues == []
    rayjob = rendered.manifests[1].obj
    assert rayjob.metadata.namespace == "raydata"
    assert rayjob.spec.ray_cluster_spec.worker_group_specs[0].replicas == 2


# ---- a bare $VAR in image: ---------------------------------------------------------------------
def test_ray_batch_rayservice_bare_dollar_image_is_a_placeholder() -> None:
    # Before issue 21: no warning at all (the image and env values were not placeholders).
    result = run("validate", BATCH_RAYSERVICE)
    assert result.exit_code == 0, result.stderr
    f = BATCH_RAYSERVICE
    images = (
        "[0] RayService/raydata/deepseek-r1-8b "
        "spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].image, "
        "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].image"
    )
    assert warnings(result.stderr) == [
        f"{f}: ${{ECR_REGISTRY}} is not filled in 2 fields: {images}",
        f"{f}: ${{RAY_LLM_TAG}} is not filled in 2 fields: {images}",
        f"{f}: ${{AWS_REGION}} is not filled in 2 fields: [0] RayService/raydata/deepseek-r1-8b "
        "spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].env[0].value, "
        "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].env[0].value",
        f"fill these 3 placeholders before applying: gpucap render {f} --set ECR_REGISTRY=... "
        "--set RAY_LLM_TAG=... --set AWS_REGION=...",
    ]


def test_ray_batch_rayservice_renders_with_the_four_values_of_its_deploy_script() -> None:
    # deploy.sh's sed fills S3_BUCKET, AWS_REGION, ECR_REGISTRY and RAY_LLM_TAG.
    values = {
        "S3_BUCKET": "b",
        "AWS_REGION": "us-west-2",
        "ECR_REGISTRY": "123456789012.dkr.ecr.us-west-2.amazonaws.com",
        "RAY_LLM_TAG": "2.56.0-py312-cu130",
    }
    result = run("render", BATCH_RAYSERVICE, *[f"--set={n}={v}" for n, v in values.items()])
    assert result.exit_code == 0, result.stderr
    image = "image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/ray-llm:2.56.0-py312-cu130"
    assert result.stdout.count(image) == 2
    assert load_text(result.stdout, "r.yaml").issues == []


def test_ray_batch_rayservice_render_without_values_names_the_three_it_needs() -> None:
    result = run("render", BATCH_RAYSERVICE)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {BATCH_RAYSERVICE}: missing variable(s): AWS_REGION, ECR_REGISTRY, RAY_LLM_TAG\n"
    )


# ---- env values and a ConfigMap script -------------------------------------------------------------
def test_batch_endpoint_job_env_value_is_a_placeholder_and_its_python_script_is_not() -> None:
    # Before issue 21: "${gpu_cost_hr} is not filled: [1] ConfigMap/... data[process_tickets.py]"
    # (an f-string printing a dollar sign), nothing about "$AWS_REGION".
    result = run("validate", BATCH_ENDPOINT_JOB)
    assert result.exit_code == 0, result.stderr
    assert "gpu_cost_hr" not in result.stderr
    assert warnings(result.stderr)[-1] == (
        f"fill it before applying: gpucap render {BATCH_ENDPOINT_JOB} --set AWS_REGION=..."
    )


def test_batch_endpoint_job_script_never_blocks_render() -> None:
    # Before issue 21: "missing variable(s): gpu_cost_hr", exit 2.
    result = run("render", BATCH_ENDPOINT_JOB, "--set", "AWS_REGION=us-west-2")
    assert result.exit_code == 0, result.stderr
    source = BATCH_ENDPOINT_JOB.read_text(encoding="utf-8")
    assert result.stdout == source.replace("$AWS_REGION", "us-west-2")
    assert "gpu_cost_hr" in result.stderr  # named once among what is left for run time


# ---- a Terraform template --------------------------------------------------------------------------
TERRAFORM_LINE = (
    f"error: {AI_ON_EKS_GPU_TEMPLATE}: line 48: a Terraform template "
    "(${indent(2, ec2nodeclass)}): render it with Terraform first (templatefile), then check "
    "the output"
)


@pytest.mark.parametrize("command", ["validate", "lint", "plan", "render"])
def test_ai_on_eks_karpenter_template_is_one_line_saying_render_it_with_terraform(
    command: str,
) -> None:
    # Before issue 21: "invalid label value '${ami_family}'" and "spec: expected an object
    # (mapping), got string", exit 2.
    result = run(command, AI_ON_EKS_GPU_TEMPLATE)
    assert result.exit_code == 2
    assert [ln for ln in result.stderr.splitlines() if ln.startswith("error:")] == [TERRAFORM_LINE]
    assert "ami_family" not in result.stderr


# ---- lint exits 0 on the good examples -----------------------------------------------------------
@pytest.mark.parametrize(
    "files",
    [
        (KARPENTER_GETTING_STARTED,),
        (SUPERSET_REDIS,),
        (RAYDATA_CONFIGMAP,),
        (BATCH_ENDPOINT_JOB,),
        (BATCH_RAYSERVICE,),
    ],
    ids=["karpenter-getting-started", "superset-redis", "raydata-configmap", "batch-job", "batch"],
)
def test_lint_exits_0_on_the_good_examples_with_placeholders_as_info(files: tuple[Path]) -> None:
    result = run("lint", *files)
    assert result.exit_code == 0, result.stdout
    assert " SCHEMA002 info " in result.stdout
    assert " error " not in result.stdout
