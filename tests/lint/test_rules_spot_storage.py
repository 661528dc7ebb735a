"""SPOT001 (lint/rules/spot.py), STG001-STG002 (lint/rules/storage.py)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.config import LintConfig
from gpucap.lint.context import KNOWN_IMAGE_SIZES, LintContext
from gpucap.lint.queries import pull_seconds
from gpucap.lint.registry import Finding
from gpucap.lint.runner import run
from tests.builders import (
    DELETE,
    GPU_TOLERATION,
    deployment,
    edit,
    nodeclass,
    nodepool,
    to_yaml,
)

CATALOG = load_catalog("us-east-1")
WORKSHOP = resources.files("gpucap") / "data/examples/workshop"
VALUES = {"AMI_VERSION": "v20260714", "CLUSTER_NAME": "c", "KARPENTER_NODE_ROLE": "r"}
GIB = 2**30
VLLM_IMAGE = "vllm/vllm-openai:v0.11.0"
IMAGE = "spec.template.spec.containers[0].image"
VOLUME = "spec.blockDeviceMappings[0].ebs"
ON_DEMAND = ("spec.template.spec.requirements[1].values", ["on-demand"])


def lint(
    *docs: dict[str, Any], select: str, image_sizes: Mapping[str, tuple[int, int]] | None = None
) -> tuple[list[Finding], str]:
    text = to_yaml(*docs)
    loaded = load_text(text, "test.yaml")
    assert not loaded.errors, loaded.errors
    ctx = LintContext(loaded.manifests, CATALOG)
    if image_sizes is not None:
        ctx = LintContext(loaded.manifests, CATALOG, image_sizes=image_sizes)
    return run(ctx, LintConfig(select=(select,))).findings, text


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def only(findings: list[Finding], rule: str) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, findings
    return hits[0]


def vllm(**kw: Any) -> dict[str, Any]:
    return edit(
        deployment("vllm", replicas=1, gpu=1, tolerations=[GPU_TOLERATION], **kw), IMAGE, VLLM_IMAGE
    )


def test_pull_model_is_disk_bound_at_gp3_default() -> None:
    compressed, unpacked = KNOWN_IMAGE_SIZES["vllm/vllm-openai"]
    assert round(pull_seconds(compressed, unpacked, 125)) == 221  # 27 GiB at 125 MiB/s
    assert round(pull_seconds(compressed, unpacked, 1000)) == 28
    assert round(pull_seconds(compressed, 0, 10_000)) == 8  # network: 10 Gbps line rate


# ==== SPOT001 ==================================================================================


def test_spot001_vllm_cold_start_on_spot() -> None:
    findings, text = lint(nodepool(), nodeclass(), vllm(), select="SPOT001")
    f = only(findings, "SPOT001")
    assert f.severity == "warning"
    assert f.line == line_of(text, VLLM_IMAGE)
    assert "pod default/vllm-0 can run on spot (NodePool gpu)" in f.message
    # 200Gi gp3 without throughput: 125 MiB/s; 21 + 30 + 30 + 221 + 84 = 386 s
    assert "about 386 s" in f.message
    assert "image pull 221 s (9Gi compressed + 18Gi unpacked at 125 MiB/s)" in f.message
    assert "more than the 120 s spot notice" in f.message


def test_spot001_termination_grace_period() -> None:
    doc = deployment(
        "batch", gpu=1, tolerations=[GPU_TOLERATION], terminationGracePeriodSeconds=300
    )
    findings, text = lint(nodepool(), nodeclass(), doc, select="SPOT001")
    f = only(findings, "SPOT001")
    assert f.line == line_of(text, "terminationGracePeriodSeconds: 300")
    assert "terminationGracePeriodSeconds 300 > 120" in f.message


def test_spot001_quiet() -> None:
    # on-demand only
    findings, _ = lint(edit(nodepool(), *ON_DEMAND), nodeclass(), vllm(), select="SPOT001")
    assert findings == []
    # a small GPU pod (image of unknown size, not a model server): 81 s of fixed stages
    small = deployment(
        "tool", gpu=1, tolerations=[GPU_TOLERATION], terminationGracePeriodSeconds=60
    )
    findings, _ = lint(nodepool(), nodeclass(), small, select="SPOT001")
    assert findings == []


# ==== STG001 ===================================================================================


def test_stg001_no_block_device_mappings() -> None:
    nc = edit(nodeclass(), "spec.blockDeviceMappings", DELETE)
    findings, text = lint(nodepool(), nc, vllm(), select="STG001")
    f = only(findings, "STG001")
    assert f.severity == "warning"
    assert f.object_ref == "EC2NodeClass/gpu"
    assert f.line == line_of(text, "role:") - 1  # the EC2NodeClass's spec
    assert "has no blockDeviceMappings: nodes get the 20Gi default root volume" in f.message
    assert "vllm/vllm-openai:v0.11.0: 9Gi compressed, 18Gi unpacked" in f.message


def test_stg001_volume_smaller_than_images() -> None:
    nc = edit(nodeclass(), f"{VOLUME}.volumeSize", "25Gi")
    findings, text = lint(nodepool(), nc, vllm(), select="STG001")
    f = only(findings, "STG001")
    assert f.line == line_of(text, "volumeSize: 25Gi")
    assert "volume of 25Gi for NodePool gpu is smaller than 27Gi needed" in f.message


def test_stg001_quiet() -> None:
    findings, _ = lint(nodepool(), nodeclass(), vllm(), select="STG001")
    assert findings == []
    # a CPU pool without mappings is not a GPU pool
    cpu = edit(nodepool(), "spec.template.spec.requirements[2].values", ["m5"])
    nc = edit(nodeclass(), "spec.blockDeviceMappings", DELETE)
    findings, _ = lint(cpu, nc, select="STG001")
    assert findings == []


def test_stg001_workshop_20gi_root_volume() -> None:
    text = substitute((WORKSHOP / "ec2nodeclass.yaml").read_text(encoding="utf-8"), VALUES).text
    text = text.replace("volumeSize: 200Gi", "volumeSize: 20Gi")
    manifests = load_text(text, "ec2nodeclass.yaml").manifests
    for name in ("nodepool.yaml", "vllm.yaml", "nvidia-device-plugin.yaml"):
        manifests += load_text((WORKSHOP / name).read_text(encoding="utf-8"), name).manifests
    findings = run(LintContext(manifests, CATALOG), LintConfig(select=("STG001",))).findings
    f = only(findings, "STG001")
    assert (f.file, f.severity) == ("ec2nodeclass.yaml", "warning")
    assert f.line == line_of(text, "volumeSize: 20Gi")
    assert "volume of 20Gi for NodePool gpu is smaller than 27Gi" in f.message
    assert "vllm/vllm-openai:v0.11.0: 9Gi compressed" in f.message


# ==== STG002 ===================================================================================


def test_stg002_default_gp3_throughput_with_vllm() -> None:
    findings, text = lint(nodepool(), nodeclass(), vllm(), select="STG002")
    f = only(findings, "STG002")
    assert f.severity == "warning"  # > 120 s
    assert f.line == line_of(text, "deviceName: /dev/xvda")
    assert "gp3 without throughput at 125 MiB/s: about 221 s disk-bound" in f.message
    assert "about 28 s at 1000 MiB/s" in f.message


def test_stg002_info_below_two_minutes() -> None:
    sizes = {"example.com/model-server": (2 * GIB, 4 * GIB)}
    doc = edit(
        deployment("ms", gpu=1, tolerations=[GPU_TOLERATION]), IMAGE, "example.com/model-server:1"
    )
    findings, _ = lint(nodepool(), nodeclass(), doc, select="STG002", image_sizes=sizes)
    f = only(findings, "STG002")
    assert f.severity == "info"
    assert "about 49 s disk-bound" in f.message


def test_stg002_quiet() -> None:
    fast = edit(nodeclass(), f"{VOLUME}.throughput", 500)
    findings, _ = lint(nodepool(), fast, vllm(), select="STG002")
    assert findings == []
    sizes = {"example.com/tiny": (GIB // 2, GIB)}
    doc = edit(deployment("t", gpu=1, tolerations=[GPU_TOLERATION]), IMAGE, "example.com/tiny:1")
    findings, _ = lint(nodepool(), nodeclass(), doc, select="STG002", image_sizes=sizes)
    assert findings == []
