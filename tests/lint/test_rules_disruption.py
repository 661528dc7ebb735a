"""DIS001-DIS004 (lint/rules/disruption.py)."""

from __future__ import annotations

from importlib import resources
from typing import Any

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from gpucap.lint.runner import run
from tests.builders import GPU_TOLERATION, deployment, edit, nodeclass, nodepool, pod, to_yaml

CATALOG = load_catalog("us-east-1")
WORKSHOP = resources.files("gpucap") / "data/examples/workshop"
VALUES = {"AMI_VERSION": "v20260714", "CLUSTER_NAME": "c", "KARPENTER_NODE_ROLE": "r"}
DND = "karpenter.sh/do-not-disrupt"
CPU_FAMILY = ("spec.template.spec.requirements[2].values", ["m5", "c5"])


def lint(*docs: dict[str, Any], select: str) -> tuple[list[Finding], str]:
    text = to_yaml(*docs)
    loaded = load_text(text, "test.yaml")
    assert not loaded.errors, loaded.errors
    return run(LintContext(loaded.manifests, CATALOG), LintConfig(select=(select,))).findings, text


def line_of(text: str, needle: str, after: str | None = None) -> int:
    lines = text.splitlines()
    start = 0
    if after is not None:
        start = next(i for i, line in enumerate(lines) if after in line) + 1
    return next(i + 1 for i in range(start, len(lines)) if needle in lines[i])


def only(findings: list[Finding], rule: str) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, findings
    return hits[0]


def disruption(**fields: Any) -> dict[str, Any]:
    return nodepool(disruption=fields)


GPU_POD = pod("gpu-0", gpu=1, tolerations=[GPU_TOLERATION])


# ==== DIS001 ===================================================================================


def test_dis001_defaults() -> None:
    findings, text = lint(nodepool(), nodeclass(), select="DIS001")
    f = only(findings, "DIS001")
    assert f.severity == "warning"
    assert f.line == line_of(text, "spec:")  # nothing written: the NodePool's spec
    assert "consolidationPolicy WhenEmptyOrUnderutilized (the default when unset)" in f.message
    assert "consolidateAfter 0s (the default when unset)" in f.message
    assert "replace a fully used GPU node with a cheaper one" in f.message


def test_dis001_balanced_short_consolidate_after() -> None:
    np = disruption(consolidationPolicy="Balanced", consolidateAfter="5m")
    findings, text = lint(np, nodeclass(), select="DIS001")
    f = only(findings, "DIS001")
    assert f.line == line_of(text, "consolidationPolicy: Balanced")
    assert "consolidateAfter 5m:" in f.message
    assert "savings score" in f.message


def test_dis001_quiet() -> None:
    for np in (
        disruption(consolidationPolicy="WhenEmpty", consolidateAfter="0s"),
        disruption(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="30m"),
        disruption(consolidateAfter="Never"),
        edit(nodepool(), *CPU_FAMILY),  # not a GPU pool
    ):
        findings, _ = lint(np, nodeclass(), select="DIS001")
        assert findings == [], np


def test_dis001_workshop_underutilized_5m() -> None:
    text = substitute((WORKSHOP / "nodepool.yaml").read_text(encoding="utf-8"), VALUES).text
    text = text.replace(
        "consolidationPolicy: WhenEmpty", "consolidationPolicy: WhenEmptyOrUnderutilized"
    )
    text = text.replace("consolidateAfter: 2h", "consolidateAfter: 5m")
    manifests = load_text(text, "nodepool.yaml").manifests
    manifests += load_text(
        substitute((WORKSHOP / "ec2nodeclass.yaml").read_text(encoding="utf-8"), VALUES).text,
        "ec2nodeclass.yaml",
    ).manifests
    findings = run(LintContext(manifests, CATALOG), LintConfig(select=("DIS001",))).findings
    f = only(findings, "DIS001")
    assert (f.file, f.severity) == ("nodepool.yaml", "warning")
    assert f.line == line_of(text, "consolidationPolicy:")
    assert "WhenEmptyOrUnderutilized and consolidateAfter 5m" in f.message


# ==== DIS002 ===================================================================================


def test_dis002_default_budget() -> None:
    findings, text = lint(nodepool(), nodeclass(), select="DIS002")
    f = only(findings, "DIS002")
    assert f.severity == "warning"
    assert f.line == line_of(text, "spec:")
    assert "GPU NodePool has no budgets (nodes: 10%)" in f.message


def test_dis002_budget_without_drift_window_is_info() -> None:
    findings, text = lint(disruption(budgets=[{"nodes": "1"}]), nodeclass(), select="DIS002")
    f = only(findings, "DIS002")
    assert f.severity == "info"
    assert f.line == line_of(text, "budgets:")
    assert "budgets (nodes: 1) apply at any hour" in f.message


def test_dis002_quiet_with_drift_window() -> None:
    budgets = [
        {"nodes": "1"},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 8 * * mon-fri", "duration": "10h"},
    ]
    findings, _ = lint(disruption(budgets=budgets), nodeclass(), select="DIS002")
    assert findings == []
    findings, _ = lint(edit(nodepool(), *CPU_FAMILY), nodeclass(), select="DIS002")
    assert findings == []


# ==== DIS003 ===================================================================================


def test_dis003_do_not_disrupt_pod_and_default_expire_after() -> None:
    protected = edit(GPU_POD, "metadata.annotations", {DND: "true"})
    findings, text = lint(nodepool(), nodeclass(), protected, select="DIS003")
    f = only(findings, "DIS003")
    assert f.severity == "warning"
    assert f.object_ref == "NodePool/gpu"
    assert f.line == line_of(text, "  spec:", after="template:")  # expireAfter not written
    assert "expireAfter 720h (the default) without terminationGracePeriod" in f.message
    assert 'pod default/gpu-0 has karpenter.sh/do-not-disrupt: "true"' in f.message


def test_dis003_fully_blocking_pdb() -> None:
    vllm = deployment("vllm", replicas=1, gpu=1, tolerations=[GPU_TOLERATION])
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "vllm"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "vllm"}}},
    }
    np = edit(nodepool(), "spec.template.spec.expireAfter", "168h")
    findings, text = lint(np, nodeclass(), vllm, pdb, select="DIS003")
    f = only(findings, "DIS003")
    assert f.line == line_of(text, "expireAfter: 168h")
    assert "PodDisruptionBudget default/vllm (minAvailable: 1 with 1 replica)" in f.message


def test_dis003_quiet() -> None:
    protected = edit(GPU_POD, "metadata.annotations", {DND: "true"})
    with_grace = edit(nodepool(), "spec.template.spec.terminationGracePeriod", "1h")
    never = edit(nodepool(), "spec.template.spec.expireAfter", "Never")
    timed = edit(GPU_POD, "metadata.annotations", {DND: "30m"})
    for docs in (
        (with_grace, protected),
        (never, protected),
        (nodepool(), timed),  # bounded protection
        (nodepool(), GPU_POD),
    ):
        findings, _ = lint(*docs, nodeclass(), select="DIS003")
        assert findings == [], docs


# ==== DIS004 ===================================================================================


def test_dis004_do_not_disrupt_on_spot_and_expiring_pool() -> None:
    protected = edit(GPU_POD, "metadata.annotations", {DND: "true"})
    findings, text = lint(nodepool(), nodeclass(), protected, select="DIS004")
    f = only(findings, "DIS004")
    assert f.severity == "info"
    assert f.object_ref == "Pod/default/gpu-0"
    assert f.line == line_of(text, DND)
    assert (
        "does not protect pod default/gpu-0 from spot interruption (gpu allows spot)" in f.message
    )
    assert "expiration after 720h (gpu)" in f.message


def test_dis004_quiet_on_on_demand_never_expiring_pool() -> None:
    np = edit(nodepool(), "spec.template.spec.requirements[1].values", ["on-demand"])
    np = edit(np, "spec.template.spec.expireAfter", "Never")
    protected = edit(GPU_POD, "metadata.annotations", {DND: "true"})
    findings, _ = lint(np, nodeclass(), protected, select="DIS004")
    assert findings == []
    findings, _ = lint(nodepool(), nodeclass(), GPU_POD, select="DIS004")
    assert findings == []
