"""Placeholders where a check, a kind or a tool meets them (issue 21 item 3), one minimal input
per rule: a field whose syntax a placeholder breaks (AMI id, label value, namespace, a number),
a bare `$VAR` in an image or env value, a ConfigMap script, and a Terraform template.

The real files of each rule are in tests/realworld/test_placeholders_issue21.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpucap.apis.placeholders import terraform_expression
from gpucap.apis.serde import LoadResult, load_text
from gpucap.cli.main import app
from tests.builders import container, deployment, edit, nodeclass, nodepool, to_yaml

runner = CliRunner()


def _load(*docs: dict[str, Any]) -> LoadResult:
    return load_text(to_yaml(*docs), "in.yaml")


def _messages(result: LoadResult) -> list[str]:
    return [i.message for i in result.issues]


# ---- a placeholder in a field with a syntax: a warning, and the rest is judged -------------------
def test_an_ami_id_placeholder_is_a_warning_and_the_object_is_valid() -> None:
    nc = edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "${AMI_ID}"}])
    nc["spec"]["amiFamily"] = "AL2023"
    result = _load(nc)
    assert result.errors == []
    assert _messages(result) == [
        "${AMI_ID} is not filled: [0] EC2NodeClass/gpu spec.amiSelectorTerms[0].id",
        "fill it before applying: gpucap render in.yaml --set AMI_ID=...",
    ]
    assert len(result.manifests) == 1


def test_the_rest_of_an_object_with_an_ami_id_placeholder_is_still_validated() -> None:
    # Karpenter needs amiFamily when no term is an alias: that error stays, beside the warning.
    nc = edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "${AMI_ID}"}])
    result = _load(nc)
    assert [e.message for e in result.errors] == [
        "must specify amiFamily if amiSelectorTerms does not contain an alias"
    ]
    assert "${AMI_ID} is not filled: [0] EC2NodeClass/gpu spec.amiSelectorTerms[0].id" in (
        _messages(result)
    )


def test_a_value_that_is_wrong_without_a_placeholder_is_still_an_error() -> None:
    nc = edit(nodeclass(), "spec.amiSelectorTerms", [{"id": "image-1"}])
    nc["spec"]["amiFamily"] = "AL2023"
    assert [e.message for e in _load(nc).errors] == ["'image-1' is not an AMI id (ami-...)"]


def test_label_value_placeholders_are_warnings_in_a_nodepool_and_a_pod_template() -> None:
    pool = edit(nodepool(), "spec.template.metadata.labels.team", "${TEAM}")
    app_ = edit(deployment(), "spec.template.metadata.labels.team", "${TEAM}")
    result = _load(pool, nodeclass(), app_)
    assert result.errors == []
    assert _messages(result)[0] == (
        "${TEAM} is not filled in 2 fields of 2 objects: [0] NodePool/gpu "
        "spec.template.metadata.labels.team; [2] Deployment/default/vllm"
    )


def test_a_requirement_value_placeholder_is_a_warning() -> None:
    pool = edit(nodepool(), "spec.template.spec.requirements[2].values", ["${FAMILY}"])
    result = _load(pool, nodeclass())
    assert result.errors == []
    assert _messages(result)[0].startswith("${FAMILY} is not filled: [0] NodePool/gpu")


def test_a_bare_dollar_in_a_namespace_is_a_placeholder_since_no_namespace_holds_a_dollar() -> None:
    app_ = edit(deployment(), "metadata.namespace", "$NAMESPACE")
    result = _load(app_)
    assert result.errors == []
    assert _messages(result)[0] == (
        "${NAMESPACE} is not filled: [0] Deployment/$NAMESPACE/vllm metadata.namespace"
    )


def test_a_placeholder_where_a_number_goes_stays_an_error_with_the_fill_command() -> None:
    # No object can be built around `replicas: $N`: the error stays, and the warning says
    # which variable to fill and how.
    app_ = edit(deployment(), "spec.replicas", "$REPLICAS")
    result = _load(app_)
    assert [e.message for e in result.errors] == ['expected an integer, got string "$REPLICAS"']
    assert _messages(result)[-2:] == [
        "${REPLICAS} is not filled: [0] Deployment/default/vllm spec.replicas",
        "fill it before applying: gpucap render in.yaml --set REPLICAS=...",
    ]


def test_placeholders_of_an_object_with_an_unrelated_error_are_still_named() -> None:
    app_ = edit(deployment(), "spec.template.spec.containers[0].image", "${IMAGE}")
    app_ = edit(app_, "spec.template.spec.containers[0].resources.requests.cpu", "lots")
    result = _load(app_)
    assert len(result.errors) == 1
    assert "${IMAGE} is not filled" in _messages(result)[-2]


# ---- a bare $VAR in an image or an env value ------------------------------------------------------
def _with_container(**fields: Any) -> dict[str, Any]:
    c = {**container(), **fields}
    return edit(deployment(), "spec.template.spec.containers[0]", c)


def test_a_bare_dollar_image_is_a_placeholder() -> None:
    result = _load(_with_container(image="$REGISTRY/ray-llm:$TAG"))
    assert _messages(result) == [
        "${REGISTRY} is not filled: [0] Deployment/default/vllm "
        "spec.template.spec.containers[0].image",
        "${TAG} is not filled: [0] Deployment/default/vllm spec.template.spec.containers[0].image",
        "fill these 2 placeholders before applying: gpucap render in.yaml --set REGISTRY=... "
        "--set TAG=...",
    ]


@pytest.mark.parametrize("value", ["${REGION}", "$REGION", "s3://$REGION/x"])
def test_an_env_value_variable_is_a_placeholder_braced_or_bare(value: str) -> None:
    result = _load(_with_container(env=[{"name": "AWS_REGION", "value": value}]))
    assert _messages(result)[0] == (
        "${REGION} is not filled: [0] Deployment/default/vllm "
        "spec.template.spec.containers[0].env[0].value"
    )


def test_kubernetes_own_dollar_paren_in_an_env_value_is_not_a_placeholder() -> None:
    env = [{"name": "A", "value": "x"}, {"name": "B", "value": "$(A)/bin:$$(A)"}]
    assert _load(_with_container(env=env)).warnings == []


def test_a_variable_in_a_shell_command_is_the_containers_not_a_placeholder() -> None:
    result = _load(_with_container(command=["sh", "-c", "echo ${HOME} $PATH"]))
    assert result.warnings == []


def test_a_bare_dollar_in_an_annotation_is_not_a_placeholder() -> None:
    app_ = edit(deployment(), "metadata.annotations", {"price": "costs $PRICE"})
    assert _load(app_).warnings == []


# ---- ConfigMap scripts -------------------------------------------------------------------------
def _configmap(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": data}


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("run.sh", 'echo "${HOSTNAME}"\n'),
        ("job.py", 'print(f"${cost_hr}/h")\n'),
        ("entrypoint", '#!/bin/bash\necho "${HOSTNAME}"\n'),
    ],
)
def test_a_configmap_script_is_not_scanned(key: str, text: str) -> None:
    assert _load(_configmap({key: text})).warnings == []


def test_a_configmap_config_file_is_scanned() -> None:
    result = _load(_configmap({"app.conf": "region=${REGION}\n"}))
    assert _messages(result)[0] == "${REGION} is not filled: [0] ConfigMap/default/s data[app.conf]"


def test_a_configmap_script_never_blocks_render(tmp_path: Path) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(to_yaml(_configmap({"run.sh": 'echo "${HOSTNAME} $USER"\n'})))
    result = runner.invoke(app, ["render", str(f)], env={"HOSTNAME": None, "USER": None})
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f.read_text()
    assert "ConfigMap scripts): HOSTNAME, USER;" in result.stderr


# ---- Terraform templates -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("spec:\n  role: ${var.node_role}\n", "role: ${var.node_role}"),
        ("spec:\n  ${indent(2, ec2nodeclass)}\n", "${indent(2, ec2nodeclass)}"),
        ('a:\n  - ${enable_ipv6 ? "IPv6" : "IPv4"}\n', '- ${enable_ipv6 ? "IPv6" : "IPv4"}'),
        ("values:\n%{ for az in zones ~}\n  - ${az}\n%{ endfor ~}\n", "%{ for az in zones ~}"),
        ("a: ${~ name}\n", "a: ${~ name}"),
    ],
)
def test_terraform_interpolations_and_directives_are_recognised(text: str, line: str) -> None:
    found = terraform_expression(text)
    assert found is not None
    assert found.text == line


@pytest.mark.parametrize(
    "text",
    [
        "a: ${NAME} $NAME\n",  # envsubst's
        "a: $${a.b} %%{ for x in y }\n",  # Terraform's own escapes
        'a: "${X:-a.b} ${A-x.y} ${#ARR[@]} ${ARR[0]}"\n',  # shell forms
        "# rendered from ${path.module}/x.yaml\nkind: Pod\n",  # a comment
        "kind: Pod\nspec:\n  containers:\n    - command: [node, -e, 'f(`${p.env.X}`)']\n",
        'kind: ConfigMap\ndata:\n  dash.json: \'{"expr": "${__data.fields.x}"}\'\n',
    ],
)
def test_escapes_shell_forms_comments_scripts_and_configmap_data_are_not_terraform(
    text: str,
) -> None:
    assert terraform_expression(text) is None


TEMPLATE = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  role: ${node_role}
  ${indent(2, ami_selector)}
"""


@pytest.mark.parametrize("command", ["validate", "lint", "plan", "render"])
def test_a_terraform_template_is_one_error_line_naming_it_and_exit_2(
    command: str, tmp_path: Path
) -> None:
    f = tmp_path / "nodeclass.yaml.tpl"
    f.write_text(TEMPLATE)
    result = runner.invoke(app, [command, str(f)])
    assert result.exit_code == 2
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [
        f"error: {f}: line 7: a Terraform template (${{indent(2, ami_selector)}}): render it with "
        "Terraform first (templatefile), then check the output"
    ]
    assert "${node_role}" not in result.stderr  # no placeholder cascade either
