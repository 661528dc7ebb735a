"""What the lint rule tests share: `lint()` loads manifests as one file and runs one rule over
them through the lint runner, `line_of()` finds where a finding should point, and builders for
the GPU kinds the rules read (a GPU Operator ClusterPolicy, a NodeOverlay, Bottlerocket
time-slicing settings). Builders of Karpenter's and Kubernetes' own kinds are `tests/builders.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from gpucap.lint.rules import ALL
from gpucap.lint.runner import run
from tests.builders import to_yaml

__all__ = [
    "CATALOG",
    "FILE",
    "TIME_SLICING",
    "Linted",
    "check_public",
    "cluster_policy",
    "line_of",
    "lint",
    "overlay",
]

CATALOG = load_catalog("us-east-1")
FILE = "manifests.yaml"


@dataclass
class Linted:
    text: str
    findings: list[Finding]

    def line(self, *needles: str) -> int:
        return line_of(self.text, *needles)

    @property
    def only(self) -> Finding:
        assert len(self.findings) == 1, [str(f) for f in self.findings]
        return self.findings[0]


def line_of(text: str, *needles: str) -> int:
    """1-based line of the last needle, each searched after the line of the previous one."""
    lines = text.splitlines()
    index = -1
    for needle in needles:
        index = next(i for i in range(index + 1, len(lines)) if needle in lines[i])
    return index + 1


def lint(rule_id: str, *docs: dict[str, Any]) -> Linted:
    """Load `docs` as one file and run one rule over them."""
    text = to_yaml(*docs)
    result = load_text(text, FILE)
    assert not result.errors, [str(e) for e in result.errors]
    ctx = LintContext(result.manifests, CATALOG)
    findings = run(ctx, LintConfig(select=(rule_id,))).findings
    for f in findings:
        check_public(f)
    return Linted(text, [f for f in findings if f.rule == rule_id])


RULES_BY_ID = {r.id: r for r in ALL}
# What user output never names (issue 23): gpucap's internal design notes and seed files.
INTERNAL_FILE = re.compile(r"\b[\w.-]+\.md\b|\bseed\b", re.IGNORECASE)


def check_public(f: Finding) -> None:
    """Every finding of every rule test: a severity its rule declares (docs/rules.md lists the
    same), and no internal file named in its message."""
    rule = RULES_BY_ID[f.rule]
    assert f.severity in rule.severities, (f.rule, f.severity, rule.severities, f.message)
    assert not INTERNAL_FILE.search(f.message), (f.rule, f.message)


def cluster_policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def overlay(name: str, requirement: dict[str, Any], capacity: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [requirement], "capacity": capacity},
    }


# Bottlerocket userData that time-slices each GPU 4 ways (its NVIDIA device plugin's settings).
TIME_SLICING = """\
[settings.kubelet-device-plugins.nvidia]
device-sharing-strategy = "time-slicing"
[settings.kubelet-device-plugins.nvidia.time-slicing]
replicas = 4
rename-by-default = false
"""
