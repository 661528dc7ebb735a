"""The `gpucap` command as users and scripts see it: output, stderr, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import gpucap
from gpucap.apis.meta import dump
from gpucap.apis.serde import load_paths, load_text
from gpucap.cli import loading
from gpucap.cli import main as cli_main
from gpucap.cli.main import app
from tests.apis.validation_cases import CASES
from tests.builders import nodeclass, nodepool, to_yaml

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"

runner = CliRunner()


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, list(args), input=input, env=env)


def test_version_prints_the_package_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"gpucap {gpucap.__version__}"


def test_help_lists_the_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for command in ("validate", "render", "demo"):
        assert command in result.stdout


def test_python_dash_m_gpucap_runs_the_same_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gpucap", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"gpucap {gpucap.__version__}"


def test_validate_prints_one_summary_line_per_object_and_exits_zero() -> None:
    result = run("validate", str(WORKSHOP))
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 7  # six objects and the count
    assert lines[1].endswith(
        "nodepool.yaml[0] NodePool/gpu: requirements [arch In amd64 os In linux capacity-type In "
        "spot,on-demand instance-family In g5,g6 instance-size In xlarge,2xlarge "
        "instance-gpu-count In 1]; taints nvidia.com/gpu=present:NoSchedule; limits "
        "nvidia.com/gpu=6; WhenEmpty after 2h (budgets nodes=1); expireAfter 720h"
    )
    assert lines[-1] == "6 objects valid, 4 warning(s)"
    assert "${AMI_VERSION} is not filled: [0] EC2NodeClass/gpu" in result.stderr


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_exits_2_with_the_one_line_error_on_stderr(
    doc: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    f = tmp_path / "test.yaml"
    f.write_text(to_yaml(doc))
    result = run("validate", str(f))
    assert result.exit_code == 2
    assert f"error: {tmp_path}/{expected}" in result.stderr.splitlines()
    assert "Traceback" not in result.output + result.stderr


def test_validate_reads_stdin() -> None:
    result = run("validate", "-", input=to_yaml(nodepool("piped")))
    assert result.exit_code == 0
    assert "<stdin>[0] NodePool/piped:" in result.stdout


def test_validate_json_prints_the_defaulted_objects_as_a_reloadable_list(tmp_path: Path) -> None:
    result = run("validate", "-o", "json", str(WORKSHOP))
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["kind"] == "List"
    pool = next(i for i in doc["items"] if i["kind"] == "NodePool")
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "6"}
    # Round trip: what validate prints loads back into the same objects.
    again = load_text(result.stdout, "out.json")
    original = load_paths([str(WORKSHOP)])
    assert [dump(m.obj) for m in again.manifests] == [dump(m.obj) for m in original.manifests]


def test_validate_yaml_output_is_a_list_too() -> None:
    result = run("validate", "-o", "yaml", str(WORKSHOP / "nodepool.yaml"))
    assert result.exit_code == 0
    assert result.stdout.startswith("apiVersion: v1\nkind: List\n")


def test_an_unknown_output_format_is_a_usage_error() -> None:
    result = run("validate", "-o", "xml", str(WORKSHOP))
    assert result.exit_code == 2
    assert "--output 'xml' is not one of table, json, yaml" in result.stderr


def test_validate_of_a_missing_file_exits_2_naming_it() -> None:
    result = run("validate", "/nope.yaml")
    assert result.exit_code == 2
    assert "error: /nope.yaml: no such file or directory" in result.stderr


def test_render_fails_naming_every_missing_variable() -> None:
    result = run("render", str(WORKSHOP / "ec2nodeclass.yaml"), env={"CLUSTER_NAME": "prod"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().endswith("missing variable(s): AMI_VERSION, KARPENTER_NODE_ROLE")


def test_render_fills_placeholders_from_env_and_set_with_set_winning() -> None:
    result = run(
        "render",
        str(WORKSHOP / "ec2nodeclass.yaml"),
        "--set",
        "AMI_VERSION=v20260827",
        "--set",
        "CLUSTER_NAME=prod",
        env={"KARPENTER_NODE_ROLE": "NodeRole", "CLUSTER_NAME": "from-env"},
    )
    assert result.exit_code == 0
    assert "alias: al2023@v20260827" in result.stdout
    assert "karpenter.sh/discovery: prod" in result.stdout
    assert "role: NodeRole" in result.stdout
    assert "$" not in result.stdout.split("role:")[1].split("\n")[0]


def test_render_output_validates_cleanly(tmp_path: Path) -> None:
    values = [
        "--set",
        "AMI_VERSION=v20260827",
        "--set",
        "CLUSTER_NAME=c",
        "--set",
        "KARPENTER_NODE_ROLE=r",
    ]
    result = run("render", str(WORKSHOP / "ec2nodeclass.yaml"), *values)
    checked = load_text(result.stdout, "rendered.yaml")
    assert checked.issues == []


def test_render_rejects_a_malformed_set() -> None:
    result = run("render", str(WORKSHOP / "nodepool.yaml"), "--set", "NOVALUE")
    assert result.exit_code == 2
    assert "--set 'NOVALUE' must be KEY=VALUE" in result.stderr


def test_demo_validates_and_plans_the_workshop_and_shows_the_gpu_limit() -> None:
    result = run("demo")
    assert result.exit_code == 0
    assert "NodePool/gpu" in result.stdout
    assert "1 new node(s)" in result.stdout
    assert (
        'default/vllm-6: nodepool "gpu": all available instance types exceed limits'
        in result.stdout
    )
    assert "6 new node(s)" in result.stdout
    assert "warning" not in result.stderr


def test_an_unexpected_failure_is_one_line_on_stderr_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*_: Any, **__: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(loading, "load_paths", boom)
    monkeypatch.setattr(sys, "argv", ["gpucap", "validate", str(WORKSHOP)])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    assert exit_info.value.code == 70
    err = capsys.readouterr().err
    assert err.strip() == "gpucap: internal error: RuntimeError: disk on fire (please report this)"


def test_two_files_with_the_same_object_both_load(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(to_yaml(nodepool("a"), nodeclass()))
    result = run("validate", str(tmp_path / "a.yaml"))
    assert result.exit_code == 0
    assert "2 objects valid" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["lint", "--image-size", "foo[/SIZE]"],
        ["lint", "-o", "[/x]"],
        ["plan", "--zones", "[bold]x[/bold]"],
    ],
)
def test_option_values_that_look_like_rich_markup_are_quoted_not_crashed_on(
    args: list[str],
) -> None:
    result = runner.invoke(app, [args[0], str(WORKSHOP), *args[1:]])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert args[-1] in errors[0]
    assert "internal error" not in result.stderr
