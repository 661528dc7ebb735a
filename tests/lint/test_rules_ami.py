"""AMI001-AMI003 (lint/rules/ami.py): bundled release data, SSM through a fake EC2 API, and
old/new EC2NodeClasses in two files."""

from __future__ import annotations

from importlib import resources
from typing import Any

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import Manifest, load_text
from gpucap.cloudprovider.aws.ec2.api import EC2APIError
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from gpucap.lint.runner import run
from tests.builders import edit, nodeclass, nodepool, to_yaml

CATALOG = load_catalog("us-east-1")
WORKSHOP = resources.files("gpucap") / "data/examples/workshop"
ALIAS = "spec.amiSelectorTerms[0].alias"
CPU_FAMILY = ("spec.template.spec.requirements[2].values", ["m5"])


def pinned(alias: str, name: str = "gpu") -> dict[str, Any]:
    return edit(nodeclass(name), ALIAS, alias)


def load(text: str, file: str = "test.yaml") -> list[Manifest]:
    loaded = load_text(text, file)
    assert not loaded.errors, loaded.errors
    return loaded.manifests


def lint_ctx(ctx: LintContext, select: str) -> list[Finding]:
    return run(ctx, LintConfig(select=(select,))).findings


def lint(
    *docs: dict[str, Any], select: str, k8s: str = "1.36", **extra: Any
) -> tuple[list[Finding], str]:
    text = to_yaml(*docs)
    ctx = LintContext(load(text), CATALOG, kubernetes_version=k8s, **extra)
    return lint_ctx(ctx, select), text


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def only(findings: list[Finding], rule: str) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, findings
    return hits[0]


class FakeSSM:
    """`get_parameter` over a fixed set of names (the only EC2API call AMI002 makes)."""

    def __init__(self, names: set[str], error: str = "ParameterNotFound") -> None:
        self.names = names
        self.error = error
        self.calls: list[str] = []

    def get_parameter(self, **kwargs: Any) -> dict[str, Any]:
        name = kwargs["Name"]
        self.calls.append(name)
        if name not in self.names:
            raise EC2APIError(self.error, f"Parameter {name} not found.", operation="GetParameter")
        return {"Parameter": {"Name": name, "Value": "ami-0123456789abcdef0"}}

    def describe_images(self, **kwargs: Any) -> dict[str, Any]:
        raise AssertionError("not called")


NVIDIA_136 = (
    "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/"
    "amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260714/image_id"
)


# ==== AMI001 ===================================================================================


def test_ami001_latest() -> None:
    findings, text = lint(nodepool(), pinned("al2023@latest"), select="AMI001")
    f = only(findings, "AMI001")
    assert f.severity == "warning"
    assert f.line == line_of(text, "alias: al2023@latest")
    assert "al2023@latest: every new AMI release drifts all nodes of NodePool gpu" in f.message
    assert "can change the NVIDIA driver" in f.message
    assert "pin a release, e.g. al2023@v20260714 (NVIDIA driver 580.159.03, CUDA 13.0)" in f.message


def test_ami001_quiet_when_pinned() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@v20260714"), select="AMI001")
    assert findings == []


def test_ami001_workshop_latest() -> None:
    values = {"AMI_VERSION": "latest", "CLUSTER_NAME": "c", "KARPENTER_NODE_ROLE": "r"}
    text = substitute((WORKSHOP / "ec2nodeclass.yaml").read_text(encoding="utf-8"), values).text
    manifests = load(text, "ec2nodeclass.yaml")
    manifests += load((WORKSHOP / "nodepool.yaml").read_text(encoding="utf-8"), "nodepool.yaml")
    f = only(lint_ctx(LintContext(manifests, CATALOG), "AMI001"), "AMI001")
    assert (f.file, f.severity) == ("ec2nodeclass.yaml", "warning")
    assert f.line == line_of(text, "- alias: al2023@latest")


# ==== AMI002 ===================================================================================


def test_ami002_an_alias_that_resolves_nothing_names_its_not_ready_pools_and_known_releases() -> (
    None
):
    findings, text = lint(nodepool(), pinned("al2023@v20260701"), select="AMI002")
    f = only(findings, "AMI002")
    assert f.severity == "error"
    assert f.line == line_of(text, "alias: al2023@v20260701")
    assert "there is no EKS AMI release v20260701" in f.message
    assert "the EC2NodeClass is not Ready (AMIsReady Unknown) and neither is NodePool gpu" in (
        f.message
    )
    assert f.message.endswith(
        "al2023 releases gpucap knows for Kubernetes 1.36: v20260827, v20260714, v20260625, "
        "v20260618, v20260610"
    )


def test_ami002_many_known_releases_are_summarised_with_the_nearest() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@v20250102"), select="AMI002", k8s="1.30")
    f = only(findings, "AMI002")
    assert "gpucap knows 81 al2023 releases for Kubernetes 1.30, v20240514 to v20260714" in (
        f.message
    )
    assert "; the nearest: " in f.message


def test_ami002_release_without_this_kubernetes_version() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@v20260505"), select="AMI002")
    f = only(findings, "AMI002")
    assert f.severity == "error"
    assert "release v20260505 has no AMI for Kubernetes 1.36" in f.message
    assert "(gpucap knows it for Kubernetes 1.35," in f.message
    assert "neither is NodePool gpu" in f.message


def test_ami002_latest_with_no_release_for_the_kubernetes_version_is_an_error() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@latest"), select="AMI002", k8s="1.22")
    f = only(findings, "AMI002")
    assert f.severity == "error"
    assert "al2023@latest: no release for Kubernetes 1.22" in f.message
    assert "gpucap knows no al2023 release for Kubernetes 1.22" in f.message


def test_ami002_quiet_for_a_cpu_pool_on_the_workshops_pinned_release() -> None:
    # A release has all its variants: v20260827's standard AMIs are known, as its NVIDIA one.
    cpu = edit(nodepool(), "spec.template.spec.requirements", [])
    assert lint(cpu, pinned("al2023@v20260827"), select="AMI002")[0] == []


def test_ami002_newer_than_bundled_list_is_info() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@v20270105"), select="AMI002")
    f = only(findings, "AMI002")
    assert f.severity == "info"
    assert "unknown, newer than the bundled list (through 2026-08-27)" in f.message


def test_ami002_not_a_release_version() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@v2026"), select="AMI002")
    f = only(findings, "AMI002")
    assert f.severity == "error"
    assert "'v2026' is not a release version" in f.message


def test_ami002_al2_refused_on_new_kubernetes() -> None:
    findings, _ = lint(nodepool(), pinned("al2@v20250715"), select="AMI002")
    f = only(findings, "AMI002")
    assert f.severity == "error"
    assert "AL2 aliases are no longer supported on EKS 1.33+" in f.message


def test_ami002_abandoned_release_is_warning() -> None:
    findings, _ = lint(nodepool(), pinned("al2023@v20260311"), select="AMI002", k8s="1.35")
    f = only(findings, "AMI002")
    assert f.severity == "warning"
    assert "marked abandoned" in f.message


def test_ami002_quiet_for_existing_releases() -> None:
    for alias in ("al2023@v20260714", "al2023@v20260827", "al2023@latest"):
        findings, _ = lint(nodepool(), pinned(alias), select="AMI002")
        assert findings == [], alias


def test_ami002_ssm_is_authoritative() -> None:
    # Bundled data says v20260505 has no 1.36 AMIs; SSM says the parameter exists: no finding.
    fake = FakeSSM({NVIDIA_136.replace("v20260714", "v20260505")})
    findings, _ = lint(nodepool(), pinned("al2023@v20260505"), select="AMI002", ec2api=fake)
    assert findings == []
    assert fake.calls == [NVIDIA_136.replace("v20260714", "v20260505")]


def test_ami002_ssm_parameter_missing() -> None:
    fake = FakeSSM(set())
    findings, text = lint(nodepool(), pinned("al2023@v20260714"), select="AMI002", ec2api=fake)
    f = only(findings, "AMI002")
    assert f.severity == "error"
    assert f.line == line_of(text, "alias: al2023@v20260714")
    assert f"SSM has no x86_64/nvidia ({NVIDIA_136}; NodePool gpu)" in f.message


def test_ami002_ssm_unreadable_is_info() -> None:
    fake = FakeSSM(set(), error="AccessDeniedException")
    findings, _ = lint(nodepool(), pinned("al2023@v20260714"), select="AMI002", ec2api=fake)
    f = only(findings, "AMI002")
    assert f.severity == "info"
    assert "could not read SSM parameter" in f.message


# ==== AMI003 ===================================================================================


def test_ami003_old_and_new_files() -> None:
    old = to_yaml(pinned("al2023@v20251023"))
    new = to_yaml(nodepool(), pinned("al2023@v20251112"))
    manifests = load(old, "old/ec2nodeclass.yaml") + load(new, "new/gpu.yaml")
    ctx = LintContext(manifests, CATALOG, kubernetes_version="1.33")
    f = only(lint_ctx(ctx, "AMI003"), "AMI003")
    assert (f.file, f.severity) == ("new/gpu.yaml", "warning")
    assert f.line == line_of(new, "alias: al2023@v20251112")
    assert "NVIDIA driver 570.195.03 (CUDA 12.8) -> 580.95.05 (CUDA 13.0)" in f.message
    assert "from al2023@v20251023 in old/ec2nodeclass.yaml to al2023@v20251112" in f.message
    assert "driver major 570 -> 580" in f.message


def test_ami003_previous_release_option() -> None:
    findings, text = lint(
        nodepool(),
        pinned("al2023@v20251112"),
        select="AMI003",
        k8s="1.33",
        previous_ami_release="v20251023",
    )
    f = only(findings, "AMI003")
    assert f.line == line_of(text, "alias: al2023@v20251112")
    assert "from --ami-previous v20251023 to al2023@v20251112" in f.message


def test_ami003_quiet() -> None:
    # same driver branch (580 -> 580)
    findings, _ = lint(
        nodepool(),
        pinned("al2023@v20260116"),
        select="AMI003",
        k8s="1.33",
        previous_ami_release="v20251112",
    )
    assert findings == []
    # both versions in one file: not an old/new pair
    docs = (pinned("al2023@v20251023"), pinned("al2023@v20251112"))
    ctx = LintContext(load(to_yaml(*docs)), CATALOG, kubernetes_version="1.33")
    assert lint_ctx(ctx, "AMI003") == []
    # the node class serves only CPU pools
    findings, _ = lint(
        edit(nodepool(), *CPU_FAMILY),
        pinned("al2023@v20251112"),
        select="AMI003",
        k8s="1.33",
        previous_ami_release="v20251023",
    )
    assert findings == []


def test_ami003_latest_resolves_to_the_newest_known_release() -> None:
    findings, _ = lint(
        nodepool(),
        pinned("al2023@latest"),
        select="AMI003",
        k8s="1.33",
        previous_ami_release="v20251023",
    )
    f = only(findings, "AMI003")
    assert "570.195.03 (CUDA 12.8) -> 580.159.03 (CUDA 13.0)" in f.message
    assert "to al2023@latest (now v20260714)" in f.message
