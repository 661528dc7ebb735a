"""`gpucap render`: --only, runtime variables left as written, byte-for-byte output, --pin-ami;
and the render command that validate's placeholder warning prints."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gpucap.apis.serde import load_text
from gpucap.cli.main import app
from tests.builders import nodeclass, to_yaml

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"

runner = CliRunner()


def run(*args: str, input: str | None = None, env: dict[str, str | None] | None = None) -> Any:
    return runner.invoke(app, list(args), input=input, env=env)


NODECLASS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu   # keep this comment
spec:
  role: "KarpenterNodeRole-${CLUSTER_NAME}"
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: "${CLUSTER_NAME}"}
  userData: |
    #!/bin/bash
    NODE_IP=$(hostname -i)
    echo "${HOME} $NODE_IP" >> /var/log/boot
"""


def _file(tmp_path: Path, text: str, name: str = "nc.yaml") -> str:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return str(f)


def test_render_leaves_user_data_variables_alone_with_one_warning(tmp_path: Path) -> None:
    result = run("render", _file(tmp_path, NODECLASS), "--set", "CLUSTER_NAME=prod")
    assert result.exit_code == 0
    assert result.stdout == NODECLASS.replace("${CLUSTER_NAME}", "prod")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning")]
    assert warnings == [
        "warning: left as written, for the node or container to expand at run time (used only "
        "in userData, container command/args or ConfigMap scripts): HOME, NODE_IP; "
        "--set NAME=VALUE or --only NAME fills one"
    ]


def test_render_does_not_take_runtime_variables_from_the_environment(tmp_path: Path) -> None:
    result = run(
        "render", _file(tmp_path, NODECLASS), env={"CLUSTER_NAME": "prod", "HOME": "/home/me"}
    )
    assert result.exit_code == 0
    assert "/home/me" not in result.stdout
    assert 'echo "${HOME} $NODE_IP"' in result.stdout


def test_render_still_fails_naming_every_missing_placeholder(tmp_path: Path) -> None:
    text = NODECLASS.replace("al2023@latest", "al2023@${AMI_VERSION}")
    result = run("render", _file(tmp_path, text), env={"AMI_VERSION": None, "CLUSTER_NAME": None})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().endswith("missing variable(s): AMI_VERSION, CLUSTER_NAME")


def test_render_only_takes_a_comma_list_or_repeats(tmp_path: Path) -> None:
    text = "kind: X\na: ${A}\nb: ${B}\nc: ${C}\n"
    f = _file(tmp_path, text)
    env = {"A": "1", "B": "2", "C": "3"}
    comma = run("render", f, "--only", "A,B", env=env)
    repeated = run("render", f, "--only", "A", "--only", "B", env=env)
    assert comma.exit_code == repeated.exit_code == 0
    assert comma.stdout == repeated.stdout == "kind: X\na: 1\nb: 2\nc: ${C}\n"
    assert comma.stderr == ""


def test_render_only_with_a_named_variable_unset_fails(tmp_path: Path) -> None:
    result = run("render", _file(tmp_path, "kind: X\na: ${A_UNSET_VAR}\n"), "--only", "A_UNSET_VAR")
    assert result.exit_code == 2
    assert "missing variable(s): A_UNSET_VAR" in result.stderr


def test_render_only_rejects_what_is_not_a_variable_name(tmp_path: Path) -> None:
    result = run("render", _file(tmp_path, "kind: X\n"), "--only", "A,my-var")
    assert result.exit_code == 2
    assert "--only 'my-var' is not a variable name" in result.stderr


def test_render_keeps_one_file_byte_for_byte_when_nothing_is_filled(tmp_path: Path) -> None:
    text = "# c\nkind: X   # trailing\nv: 'quoted $(POD_IP)'\nlast: no newline"
    result = run("render", _file(tmp_path, text), "--only", "NOTHING")
    assert result.exit_code == 0
    assert result.stdout == text


def test_render_joins_several_files_as_one_stream(tmp_path: Path) -> None:
    a = _file(tmp_path, "kind: A\nx: ${V}", "a.yaml")
    b = _file(tmp_path, "kind: B\ny: ${V}\n", "b.yaml")
    result = run("render", a, b, "--set", "V=1")
    assert result.stdout == "kind: A\nx: 1\n---\nkind: B\ny: 1\n"


def test_render_pin_ami_works_with_only(tmp_path: Path) -> None:
    text = NODECLASS.replace("alias: al2023@latest", "alias: al2023@${AMI_VERSION}")
    text += "  tags: {pinned-from: al2023@latest}\n"
    result = run(
        "render",
        _file(tmp_path, text + "---\nkind: Y\nalias: al2023@latest\n"),
        "--only",
        "CLUSTER_NAME",
        "--pin-ami",
        "--offline",
        "--kubernetes-version",
        "1.33",
        env={"CLUSTER_NAME": "prod"},
    )
    assert result.exit_code == 0, result.stderr
    assert "@latest" not in result.stdout.replace("pinned-from: al2023@latest", "")
    assert "${AMI_VERSION}" not in result.stdout
    assert "alias: al2023@v20" in result.stdout
    assert 'echo "${HOME} $NODE_IP"' in result.stdout


def test_the_render_command_validate_prints_fills_every_placeholder(tmp_path: Path) -> None:
    nc = nodeclass()
    nc["spec"]["role"] = "KarpenterNodeRole-${CLUSTER_NAME}"
    nc["spec"]["amiSelectorTerms"] = [{"alias": "al2023@${AMI_VERSION}"}]
    f = _file(tmp_path, to_yaml(nc))
    validated = run("validate", f)
    hint = validated.stderr.strip().splitlines()[-1]
    command = hint.split("before applying: ", 1)[1]
    args = [a.replace("...", "v20260827") for a in shlex.split(command)]
    assert args[:2] == ["gpucap", "render"]
    rendered = run(*args[1:])
    assert rendered.exit_code == 0, rendered.stderr
    assert load_text(rendered.stdout, "rendered.yaml").issues == []


def test_validate_of_the_workshop_groups_its_placeholders() -> None:
    result = run("validate", str(WORKSHOP))
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 4  # three variables and the render command
    assert warnings[-1].startswith(
        "warning: fill these 3 placeholders before applying: gpucap render "
    )
    assert warnings[-1].endswith(
        "--set KARPENTER_NODE_ROLE=... --set AMI_VERSION=... --set CLUSTER_NAME=..."
    )


def test_render_only_accepts_envsubst_shell_format(tmp_path: Path) -> None:
    f = _file(tmp_path, "kind: X\na: ${A}\nb: $B\nc: ${C}\n")
    result = run("render", f, "--only", "$A ${B}", env={"A": "1", "B": "2", "C": "3"})
    assert result.stdout == "kind: X\na: 1\nb: 2\nc: ${C}\n"


def test_render_reads_a_directory_as_validate_and_plan_do(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: ${X}}\n"
    )
    result = CliRunner().invoke(app, ["render", str(tmp_path), "--set", "X=1"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: 1}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
    )
