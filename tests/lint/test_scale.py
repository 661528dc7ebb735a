"""Lint's per-pod questions are answered once per pod shape, not once per pod (issue 9).

Rules ask, for every pod, which NodePools it could use; with 1,000 workloads and 500 pools that
was pods x pools x instance types (52 s for 2,000 files). The answers depend only on the pod's
requirements, tolerations and requests, so alike pods share them. Counted, not timed.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.serde import load_text
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run
from gpucap.scheduling.instancetypes import InstanceType
from tests.builders import GPU_TOLERATION, deployment, edit, nodeclass, nodepool, to_yaml
from tests.lint.builders import CATALOG, FILE


def _pools(n: int) -> list[dict[str, Any]]:
    return [edit(nodepool(f"gpu-{i}"), "spec.template.spec.requirements", []) for i in range(n)]


def _deployments(n: int, **kw: Any) -> list[dict[str, Any]]:
    return [deployment(f"vllm-{i}", gpu=1, **kw) for i in range(n)]


def _lint(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    result = load_text(to_yaml(*docs), FILE)
    assert not result.errors, [str(e) for e in result.errors]
    findings = run(LintContext(result.manifests, CATALOG), LintConfig()).findings
    return [(f.rule, f.object_ref, f.message) for f in findings]


def _checks(monkeypatch: pytest.MonkeyPatch, docs: list[dict[str, Any]]) -> int:
    calls = [0]
    original = InstanceType.is_compatible

    def counted(self: InstanceType, reqs: Any) -> bool:
        calls[0] += 1
        return original(self, reqs)

    monkeypatch.setattr(InstanceType, "is_compatible", counted)
    _lint(docs)
    monkeypatch.undo()
    return calls[0]


def test_alike_pods_cost_what_one_pod_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    base = [nodeclass(), *_pools(4)]
    one = _checks(monkeypatch, [*base, *_deployments(1, tolerations=[GPU_TOLERATION])])
    many = _checks(monkeypatch, [*base, *_deployments(25, tolerations=[GPU_TOLERATION])])
    assert many == one


# A taint EKS's admission does not tolerate for a GPU pod (it tolerates nvidia.com/gpu).
DEDICATED = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
DEDICATED_TOLERATION = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}


def _dedicated_pools(n: int) -> list[dict[str, Any]]:
    return [edit(p, "spec.template.spec.taints", [DEDICATED]) for p in _pools(n)]


def test_alike_pods_still_get_a_finding_each() -> None:
    # Without the pools' toleration every deployment is told, by name, that it stays Pending.
    findings = _lint([nodeclass(), *_dedicated_pools(3), *_deployments(5)])
    pending = sorted(ref for rule, ref, _ in findings if rule == "POD002")
    assert pending == [f"Deployment/default/vllm-{i}" for i in range(5)]


def test_pods_that_differ_in_tolerations_are_not_mixed_up() -> None:
    docs = [
        nodeclass(),
        *_dedicated_pools(2),
        deployment("tolerant", gpu=1, tolerations=[DEDICATED_TOLERATION]),
        deployment("intolerant", gpu=1),
    ]
    pending = [ref for rule, ref, _ in _lint(docs) if rule == "POD002"]
    assert pending == ["Deployment/default/intolerant"]
