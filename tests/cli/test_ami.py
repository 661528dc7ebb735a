"""`gpucap ami` and `gpucap render --pin-ami`: offline from the bundled releases, online from
SSM (moto's server standing in for AWS)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucap.cli import aws as cli_aws
from gpucap.cli.main import app
from gpucap.cloudprovider.aws.amifamily.releases import latest_release
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.runtime.clock import FakeClock

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"
runner = CliRunner()


def test_resolve_offline_prints_the_newest_bundled_release() -> None:
    result = runner.invoke(app, ["ami", "resolve", "--offline", "--kubernetes-version", "1.33"])
    assert result.exit_code == 0
    expected = latest_release("1.33", "al2023", "x86_64", "nvidia")
    assert expected is not None
    assert result.stdout.strip() == expected.version


def test_resolve_json_gives_the_alias_to_pin() -> None:
    result = runner.invoke(
        app, ["ami", "resolve", "--offline", "-o", "json", "--variant", "standard"]
    )
    doc = json.loads(result.stdout)
    assert doc["alias"] == f"al2023@{doc['release']}"
    assert doc["source"] == "bundled"


def test_list_offline_shows_releases_newest_first_with_driver_and_cuda() -> None:
    result = runner.invoke(app, ["ami", "list", "--offline", "--kubernetes-version", "1.31"])
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["RELEASE", "DATE", "NVIDIA", "DRIVER", "CUDA", "KERNEL"]
    versions = [ln.split()[0] for ln in lines[1:]]
    assert versions == sorted(versions, reverse=True)
    assert any("570.124.06" in ln for ln in lines)


def test_diff_flags_a_driver_major_version_change_as_a_risk() -> None:
    result = runner.invoke(
        app, ["ami", "diff", "v20250403", "v20250410", "--kubernetes-version", "1.31"]
    )
    assert result.exit_code == 0
    assert "NVIDIA driver: 560.35.05 -> 570.124.06" in result.stdout
    assert result.stdout.strip().endswith("images built for the old CUDA may break")


def test_diff_of_a_minor_driver_change_is_not_a_risk() -> None:
    result = runner.invoke(
        app, ["ami", "diff", "v20250410", "v20250419", "--kubernetes-version", "1.31"]
    )
    assert "RISK" not in result.stdout


def test_diff_of_an_unknown_release_is_exit_2() -> None:
    result = runner.invoke(app, ["ami", "diff", "v20000101", "v20250410"])
    assert result.exit_code == 2


def test_render_pin_ami_offline_fills_ami_version_and_never_writes_latest(tmp_path: Path) -> None:
    f = tmp_path / "nc.yaml"
    f.write_text(
        (WORKSHOP / "ec2nodeclass.yaml")
        .read_text()
        .replace("al2023@${AMI_VERSION}", "al2023@latest")
    )
    result = runner.invoke(
        app,
        [
            "render",
            str(f),
            "--pin-ami",
            "--offline",
            "--set",
            "CLUSTER_NAME=c",
            "--set",
            "KARPENTER_NODE_ROLE=r",
        ],
    )
    assert result.exit_code == 0
    assert "@latest" not in result.stdout
    assert "alias: al2023@v2026" in result.stdout


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> SimulatedEC2:
    """The CLI's AWS (normally boto3) replaced by SimulatedEC2, which publishes the bundled
    releases under the real SSM parameter names (moto refuses to create `/aws/service/...`)."""
    api = SimulatedEC2(load_catalog("us-east-1"), FakeClock())
    api.publish_amis("1.36", recommended="v20260714")
    monkeypatch.setattr(cli_aws, "aws_api", lambda region: api)
    return api


def test_resolve_reads_the_recommended_release_from_ssm(aws: SimulatedEC2) -> None:
    result = runner.invoke(app, ["ami", "resolve", "--region", "us-east-1", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["release"] == "v20260714"
    assert doc["releaseVersion"].endswith("-20260714")
    assert doc["source"] == (
        "ssm:/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/recommended/release_version"
    )
    assert "GetParameter" in aws.calls


def test_list_reads_the_release_parameters_from_ssm(aws: SimulatedEC2) -> None:
    result = runner.invoke(app, ["ami", "list", "--region", "us-east-1"])
    assert result.exit_code == 0, result.stderr
    versions = [ln.split()[0] for ln in result.stdout.splitlines()[1:]]
    assert versions[0] == "v20260827"  # published, though not yet recommended
    assert versions == sorted(versions, reverse=True)
    assert "GetParametersByPath" in aws.calls


def test_render_pin_ami_uses_ssm_when_online(aws: SimulatedEC2, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "render",
            str(WORKSHOP / "ec2nodeclass.yaml"),
            "--pin-ami",
            "--set",
            "CLUSTER_NAME=c",
            "--set",
            "KARPENTER_NODE_ROLE=r",
        ],
    )
    assert "alias: al2023@v20260714" in result.stdout


def test_a_missing_ssm_parameter_is_one_line_and_exit_2(aws: SimulatedEC2) -> None:
    result = runner.invoke(
        app, ["ami", "resolve", "--kubernetes-version", "1.20", "--region", "us-east-1"]
    )
    assert result.exit_code == 2
    assert "ParameterNotFound" in result.stderr


def test_list_for_a_kubernetes_version_with_no_release_is_an_error_not_an_empty_table() -> None:
    result = runner.invoke(app, ["ami", "list", "--offline", "--kubernetes-version", "1.99"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: no bundled al2023 x86_64/nvidia release for Kubernetes 1.99"
    ]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["resolve", "--offline", "--family", "bottlerocket"], "AMI family 'bottlerocket'"),
        (["resolve", "--offline", "--variant", "weird"], "variant 'weird'"),
        (["list", "--offline", "--family", "bottlerocket"], "AMI family 'bottlerocket'"),
        (["diff", "v20250410", "v20000101"], "v20000101"),
    ],
)
def test_every_ami_lookup_error_is_one_line_on_stderr_and_exit_2(
    args: list[str], fragment: str
) -> None:
    result = runner.invoke(app, ["ami", *args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert fragment in lines[0]
