"""Workloads expand into the pods their controllers would create, named `<name>-<i>`."""

from __future__ import annotations

import pytest

from tests.builders import GPU_TOLERATION, daemonset, deployment, edit, job, load, pod


@pytest.mark.parametrize(
    ("kind", "replicas", "expected"),
    [
        ("Deployment", 3, ["vllm-0", "vllm-1", "vllm-2"]),
        ("StatefulSet", 2, ["vllm-0", "vllm-1"]),
        ("ReplicaSet", 1, ["vllm-0"]),
        ("Deployment", 0, []),
    ],
)
def test_replicated_workloads_make_replicas_pods_named_name_dash_index(
    kind: str, replicas: int, expected: list[str]
) -> None:
    doc = edit(deployment(replicas=replicas), "kind", kind)
    pods = load(doc).objects.pods
    assert [p.metadata.name for p in pods] == expected


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [(3, None, 3), (3, 2, 2), (2, 5, 2), (0, None, 0)],
)
def test_a_job_makes_parallelism_pods_capped_by_completions(
    parallelism: int, completions: int | None, count: int
) -> None:
    pods = load(job(parallelism=parallelism, completions=completions)).objects.pods
    assert len(pods) == count


def test_expanded_pods_carry_the_template_namespace_labels_spec_and_owner() -> None:
    doc = edit(
        deployment(replicas=2, gpu=1, tolerations=[GPU_TOLERATION]), "metadata.namespace", "ml"
    )
    pods = load(doc).objects.pods
    first = pods[0]
    assert first.key == "ml/vllm-0"
    assert first.metadata.labels == {"app": "vllm"}
    assert first.spec.tolerations[0].key == "nvidia.com/gpu"
    assert str(first.spec.containers[0].resources.requests["nvidia.com/gpu"]) == "1"
    owner = first.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.controller) == ("Deployment", "vllm", True)


def test_expanded_pods_have_distinct_uids_that_are_the_same_on_every_load() -> None:
    a = [p.metadata.uid for p in load(deployment(replicas=3)).objects.pods]
    b = [p.metadata.uid for p in load(deployment(replicas=3)).objects.pods]
    assert a == b
    assert len(set(a)) == 3


def test_daemonsets_are_not_expanded_into_pods() -> None:
    objs = load(daemonset(), pod()).objects
    assert [p.metadata.name for p in objs.pods] == ["web-0"]
    assert [d.metadata.name for d in objs.daemonsets] == ["nvidia-device-plugin"]


def test_pods_and_workloads_keep_input_order() -> None:
    objs = load(pod("first"), deployment("mid", replicas=2), pod("last")).objects
    assert [p.metadata.name for p in objs.pods] == ["first", "mid-0", "mid-1", "last"]
