"""One invalid manifest per validation rule: each gives exactly the expected one-line error.

The rules are Karpenter's CRD rules (patterns, enums, CEL) and runtime validation, and the
Kubernetes API rules gpucap relies on. The same table is run through the CLI in
tests/cli/test_cli.py to check the exit code (2) and that the line reaches stderr.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.apis.validation_cases import (
    CASES,
    NC,
    NP,
    REQ,
    TPL,
)
from tests.builders import (
    GPU_TOLERATION,
    container,
    daemonset,
    deployment,
    edit,
    load,
    nodeclass,
    nodepool,
    pod,
)


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_manifest_gives_the_expected_one_line_error(
    doc: dict[str, Any], expected: str
) -> None:
    result = load(doc)
    assert [str(e) for e in result.errors] == [expected]
    assert result.manifests == []


def test_there_is_an_invalid_manifest_for_at_least_thirty_rules() -> None:
    assert len({c[0] for c in CASES}) >= 30


VALID: list[tuple[str, dict[str, Any]]] = [
    ("nodepool", nodepool()),
    ("nodeclass", nodeclass()),
    ("pod", pod(gpu=1, tolerations=[GPU_TOLERATION])),
    ("deployment", deployment()),
    ("daemonset", daemonset()),
    (
        "gte operator",
        edit(
            nodepool(),
            f"{REQ}[3]",
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["1"]},
        ),
    ),
    (
        "budget with schedule",
        edit(
            nodepool(),
            "spec.disruption",
            {
                "budgets": [
                    {
                        "nodes": "0",
                        "schedule": "0 9 * * mon-fri",
                        "duration": "8h",
                        "reasons": ["Underutilized"],
                    }
                ]
            },
        ),
    ),
    (
        "sidecar init container",
        edit(pod(), "spec.initContainers", [{**container("proxy"), "restartPolicy": "Always"}]),
    ),
    (
        "nodeclass id terms with amiFamily",
        edit(
            edit(
                nodeclass(),
                "spec.amiSelectorTerms",
                [{"id": "ami-0abc"}, {"name": "my-ami-*", "owner": "self"}],
            ),
            "spec.amiFamily",
            "AL2023",
        ),
    ),
]


@pytest.mark.parametrize("doc", [v[1] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_manifest_loads_without_issues(doc: dict[str, Any]) -> None:
    result = load(doc)
    assert result.issues == []
    assert len(result.manifests) == 1


def test_capacity_type_with_one_unknown_value_is_a_warning_as_karpenter_only_logs_it() -> None:
    result = load(edit(nodepool(), f"{REQ}[1].values", ["spot", "preemptible"]))
    assert result.errors == []
    assert [str(w) for w in result.warnings] == [
        NP + f"{REQ}[1].values: ['preemptible'] are not values of karpenter.sh/capacity-type "
        "(expected ['on-demand', 'reserved', 'spot']); Karpenter ignores them"
    ]
    assert len(result.manifests) == 1


def test_subnet_id_with_tags_is_rejected_only_when_every_term_combines_them_as_the_crd_does() -> (
    None
):
    both = {"id": "subnet-0abc", "tags": {"a": "b"}}
    one_term = load(edit(nodeclass(), "spec.subnetSelectorTerms", [both]))
    mixed = load(edit(nodeclass(), "spec.subnetSelectorTerms", [both, {"tags": {"c": "d"}}]))
    assert [str(e) for e in one_term.errors] == [
        NC + "spec.subnetSelectorTerms: 'id' is mutually exclusive, cannot be set with a "
        "combination of other fields in subnetSelectorTerms"
    ]
    assert mixed.errors == []


def test_every_violation_in_a_document_is_reported_not_only_the_first() -> None:
    doc = edit(edit(nodepool(), f"{REQ}[1].operator", "Inn"), f"{TPL}.taints[0].effect", "Never")
    assert len(load(doc).errors) == 2


def test_a_node_class_ref_to_another_provider_is_a_warning_because_the_pool_never_gets_ready() -> (
    None
):
    result = load(edit(nodepool(), f"{TPL}.nodeClassRef.kind", "AKSNodeClass"))
    assert result.errors == []
    assert [str(w) for w in result.warnings] == [
        NP + f"{TPL}.nodeClassRef: karpenter.k8s.aws/AKSNodeClass is not the AWS provider's node "
        "class (karpenter.k8s.aws/EC2NodeClass); this NodePool would never become Ready"
    ]


def test_an_eks_auto_mode_node_class_ref_is_valid_without_a_warning() -> None:
    doc = edit(nodepool(), f"{TPL}.nodeClassRef.group", "eks.amazonaws.com")
    result = load(edit(doc, f"{TPL}.nodeClassRef.kind", "NodeClass"))
    assert (result.errors, result.warnings) == ([], [])


def test_a_duration_with_a_trailing_newline_is_rejected_as_the_api_server_does() -> None:
    result = load(edit(nodepool(), "spec.disruption", {"consolidateAfter": "10m\n"}))
    assert [e.path for e in result.errors] == [("spec", "disruption", "consolidateAfter")]
