"""Loading manifests: every kind of the contract, every input form, and the way problems are
reported (file, document, object, field; line numbers kept for lint)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from gpucap.apis.serde import KINDS, load_paths, load_text
from tests.builders import (
    GPU_TOLERATION,
    daemonset,
    deployment,
    edit,
    job,
    jobset,
    leaderworkerset,
    load,
    nodeclass,
    nodepool,
    pod,
    raycluster,
    rayjob,
    rayservice,
    to_yaml,
)

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"


def one_of_each_kind() -> list[dict[str, Any]]:
    statefulset = edit(deployment("db", replicas=1), "kind", "StatefulSet")
    replicaset = edit(deployment("rs", replicas=1), "kind", "ReplicaSet")
    return [
        nodepool(),
        nodeclass(),
        {
            "apiVersion": "karpenter.sh/v1alpha1",
            "kind": "NodeOverlay",
            "metadata": {"name": "time-sliced"},
            "spec": {
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}
                ],
                "capacity": {"nvidia.com/gpu": "4"},
            },
        },
        pod(),
        deployment(),
        statefulset,
        replicaset,
        job(),
        daemonset(),
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "ip-10-0-1-2", "labels": {"karpenter.sh/nodepool": "gpu"}},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc"},
            "status": {"capacity": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
        },
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "gpu-abcde"},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu",
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["g5.xlarge"],
                    }
                ],
            },
            "status": {"providerID": "aws:///us-east-1a/i-0abc", "nodeName": "ip-10-0-1-2"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
            "data": {
                "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                "    - name: nvidia.com/gpu\n      replicas: 4\n"
            },
        },
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}},
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "vllm"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "vllm"}}},
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "vllm"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
                "maxReplicas": 4,
                "metrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": {"name": "requests_per_second"},
                            "target": {"type": "AverageValue", "averageValue": "80"},
                        },
                    }
                ],
            },
        },
        raycluster(),
        rayservice(),
        rayjob(),
        leaderworkerset(),
        jobset(),
        {
            "apiVersion": "gpucap.dev/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "workshop"},
            "spec": {
                "duration": "6h",
                "manifests": ["nodepool.yaml"],
                "images": {
                    "vllm/vllm-openai:v0.11.0": {"compressed": "9Gi", "uncompressed": "18Gi"}
                },
                "events": [
                    {"at": "5m", "apply": {"file": "vllm.yaml"}},
                    {"at": "1h", "scale": {"kind": "Deployment", "name": "vllm", "replicas": 3}},
                    {
                        "at": "20m",
                        "capacity": {
                            "instanceType": "g5.xlarge",
                            "zone": "us-east-1a",
                            "capacityType": "spot",
                            "available": False,
                            "for": "30m",
                        },
                    },
                    {"at": "2h", "interrupt": {"nodeClaim": "gpu-1"}},
                    {
                        "at": "3h",
                        "amiRelease": {"kubernetesVersion": "1.36", "version": "v20261001"},
                    },
                    {"at": "4h", "delete": {"kind": "Deployment", "name": "vllm"}},
                ],
            },
        },
    ]


def test_every_kind_in_the_contract_loads_into_its_model() -> None:
    docs = one_of_each_kind()
    result = load(*docs)
    assert result.issues == []
    loaded = {m.obj.kind: type(m.obj) for m in result.manifests}
    assert loaded == {kind: model for kind, (_, model, _) in KINDS.items()}


def test_the_workshop_example_loads_with_only_placeholder_warnings() -> None:
    result = load_paths([str(WORKSHOP)])
    assert result.errors == []
    assert {w.rule for w in result.warnings} == {"PLACEHOLDER"}
    assert [m.ref for m in result.manifests] == [
        "EC2NodeClass/gpu",
        "NodePool/gpu",
        "DaemonSet/kube-system/nvidia-device-plugin-daemonset",
        "ConfigMap/gpu-operator/time-slicing-config",
        "ClusterPolicy/cluster-policy",
        "Deployment/default/vllm",
    ]


def test_placeholder_warning_names_the_variable_the_field_and_the_line() -> None:
    result = load_paths([str(WORKSHOP / "ec2nodeclass.yaml")])
    role = next(w for w in result.warnings if "${KARPENTER_NODE_ROLE}" in w.message)
    assert str(role) == (
        f"{WORKSHOP}/ec2nodeclass.yaml: ${{KARPENTER_NODE_ROLE}} is not filled: "
        "[0] EC2NodeClass/gpu spec.role"
    )
    assert role.line == 8


def test_multi_document_yaml_loads_every_document_in_order() -> None:
    result = load_text(to_yaml(nodepool("a"), nodepool("b"), nodeclass()), "all.yaml")
    assert [str(m.source) for m in result.manifests] == [
        "all.yaml[0]",
        "all.yaml[1]",
        "all.yaml[2]",
    ]
    assert [m.ref for m in result.manifests] == ["NodePool/a", "NodePool/b", "EC2NodeClass/gpu"]


def test_empty_documents_are_skipped_but_keep_their_index() -> None:
    text = "---\n" + to_yaml(nodepool("a")) + "---\n---\n" + to_yaml(nodepool("b"))
    result = load_text(text, "gaps.yaml")
    assert [str(m.source) for m in result.manifests] == ["gaps.yaml[0]", "gaps.yaml[2]"]


def test_a_list_kind_is_unpacked_and_items_are_named_in_errors() -> None:
    bad = edit(nodepool("bad"), "spec.template.spec.requirements[0].operator", "Inn")
    doc = {"apiVersion": "v1", "kind": "List", "items": [nodepool("good"), bad]}
    text = to_yaml(doc)
    result = load_text(text, "list.yaml")
    assert [m.ref for m in result.manifests] == ["NodePool/good"]
    assert str(result.errors[0]).startswith(
        "list.yaml[0].items[1] NodePool/bad: spec.template.spec.requirements[0].operator:"
    )
    assert result.errors[0].line == text.splitlines().index("          operator: Inn") + 1


def test_json_files_load_including_tab_indented_json(tmp_path: Path) -> None:
    f = tmp_path / "np.json"
    f.write_text(json.dumps(nodepool(), indent="\t"))
    result = load_paths([str(f)])
    assert result.issues == []
    assert result.manifests[0].ref == "NodePool/gpu"


def test_directories_are_read_recursively_in_sorted_order_ignoring_other_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "pool.yml").write_text(to_yaml(nodepool("from-b")))
    (tmp_path / "a.yaml").write_text(to_yaml(nodepool("from-a")))
    (tmp_path / "notes.txt").write_text("not yaml: [")
    result = load_paths([str(tmp_path)])
    assert result.issues == []
    assert [m.ref for m in result.manifests] == ["NodePool/from-a", "NodePool/from-b"]


def test_stdin_is_read_for_a_dash() -> None:
    result = load_paths(["-"], stdin=io.StringIO(to_yaml(nodepool("piped"))))
    assert [str(m.source) for m in result.manifests] == ["<stdin>[0]"]


def test_missing_path_is_an_error_naming_it() -> None:
    result = load_paths(["/no/such/file.yaml"])
    assert [str(e) for e in result.errors] == ["/no/such/file.yaml: no such file or directory"]


def test_malformed_yaml_is_one_error_with_line_and_column() -> None:
    result = load_text("kind: NodePool\nspec: [1, 2\n", "broken.yaml")
    assert len(result.errors) == 1
    message = str(result.errors[0])
    assert message.startswith("broken.yaml: line 3 column 1: invalid YAML:")
    assert "\n" not in message


def test_a_key_defined_twice_is_an_error_as_kubectl_makes_it() -> None:
    text = to_yaml(nodepool()).replace("  limits:", "  weight: 10\n  weight: 20\n  limits:")
    result = load_text(text, "dup.yaml")
    second = text.splitlines().index("  weight: 20") + 1
    assert [str(e) for e in result.errors] == [
        f"dup.yaml: mapping key 'weight' is defined twice (again on line {second})"
    ]


def test_unknown_kinds_are_reported_once_per_kind_as_ignored() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}}
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "a"}}
    result = load(svc, svc, ing, nodepool())
    assert result.errors == []
    assert [str(w) for w in result.warnings] == [
        "ignored kinds gpucap does not use: Ingress, Service (2)"
    ]
    assert len(result.manifests) == 1


def test_ignored_kinds_are_counted_across_files(tmp_path: Path) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}}
    (tmp_path / "a.yaml").write_text(to_yaml(svc))
    (tmp_path / "b.yaml").write_text(to_yaml(svc))
    result = load_paths([str(tmp_path)])
    assert [str(w) for w in result.warnings] == ["ignored kinds gpucap does not use: Service (2)"]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([1, 2], "test.yaml[0]: a manifest must be a mapping, got array"),
        ({"apiVersion": "v1"}, "test.yaml[0]: kind: required field is missing"),
        (
            {"kind": "Pod", "metadata": {"name": "x"}},
            "test.yaml[0] Pod: apiVersion: required field is missing",
        ),
        (
            {"apiVersion": "v1", "kind": "Pod"},
            "test.yaml[0] Pod: metadata: required field is missing",
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {}}},
            "test.yaml[0] Pod: metadata.name: required field is missing",
        ),
    ],
)
def test_documents_without_identity_get_a_clear_error(doc: Any, expected: str) -> None:
    assert [str(e) for e in load(doc).errors] == [expected]


def test_field_lines_are_kept_for_every_object() -> None:
    result = load_paths([str(WORKSHOP / "nodepool.yaml")])
    source = result.manifests[0].source
    assert source.line_of(("spec", "limits")) == 40
    assert source.line_of(("spec", "template", "spec", "requirements", 3, "values")) == 28
    # a path below a scalar falls back to the nearest ancestor with a line
    assert source.line_of(("spec", "disruption", "budgets", 0, "nodes", "x")) == 46


def test_pods_without_a_namespace_are_in_default_and_get_a_stable_uid() -> None:
    first, second = load(pod()), load(pod())
    p1, p2 = first.objects.pods[0], second.objects.pods[0]
    assert p1.metadata.namespace == "default"
    assert p1.key == "default/web-0"
    assert p1.metadata.uid
    assert p1.metadata.uid == p2.metadata.uid


def test_yaml_merge_keys_are_honoured() -> None:
    # The anchor sits on a field the Pod has: a top-level `base:` is an unknown field.
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: merged}\n"
        "spec:\n  containers:\n  - name: a\n    resources:\n"
        "      limits: &base {cpu: '1', memory: 1Gi}\n      requests:\n        <<: *base\n"
    )
    result = load_text(text, "merge.yaml")
    pod_obj = result.objects.pods[0]
    assert str(pod_obj.spec.containers[0].resources.requests["memory"]) == "1Gi"


def test_gpu_request_defaults_from_limit_as_the_api_server_does() -> None:
    result = load(pod(gpu=2, tolerations=[GPU_TOLERATION]))
    requests = result.objects.pods[0].spec.containers[0].resources.requests
    assert str(requests["nvidia.com/gpu"]) == "2"


def test_lines_asked_for_before_the_texts_are_released_are_kept_and_later_ones_are_none(
    tmp_path: Path,
) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(to_yaml(nodepool(name)))
    result = load_paths([str(tmp_path)])
    assert not result.issues
    assert len(result.texts) == 2
    first, second = (m.source for m in result.manifests)
    assert first.line_of(("spec",)) == 5
    result.release_texts()
    assert result.texts == []
    assert first.line_of(("spec",)) == 5  # built before: kept
    assert second.line_of(("spec",)) is None  # not built before: the text is gone


def test_a_list_item_is_let_go_once_its_model_is_built() -> None:
    from gpucap.apis.serde import load_documents, parse_text  # noqa: PLC0415

    doc = {"apiVersion": "v1", "kind": "List", "items": [nodepool("a"), nodepool("b")]}
    docs = parse_text(to_yaml(doc), "list.yaml")
    assert not isinstance(docs, str)
    result = load_documents(docs, "list.yaml")
    assert [m.ref for m in result.manifests] == ["NodePool/a", "NodePool/b"]
    assert docs[0][0]["items"] == [None, None]


def test_each_document_is_let_go_once_its_model_is_built() -> None:
    from gpucap.apis.serde import load_documents, parse_text  # noqa: PLC0415

    docs = parse_text(to_yaml(nodepool("a"), nodepool("b")), "two.yaml")
    assert not isinstance(docs, str)
    result = load_documents(docs, "two.yaml")
    assert [m.ref for m in result.manifests] == ["NodePool/a", "NodePool/b"]
    assert [data for data, _ in docs] == [None, None]
    assert result.manifests[1].source.line_of(("spec",)) is not None  # line maps stay
