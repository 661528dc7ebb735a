"""EKS's ExtendedResourceToleration admission (`apis/admission.py`): the pods the cluster stores
tolerate the NoSchedule taint of each extended resource they request; the manifests do not
change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpucap.apis.admission import admit, admitted_tolerations, is_extended_resource
from gpucap.apis.core import Pod, Toleration
from gpucap.apis.expansion import expand, sample_pods
from gpucap.cli.main import app
from gpucap.state.cluster import Cluster
from tests.builders import (
    DELETE,
    GPU_TOLERATION,
    container,
    deployment,
    edit,
    job,
    leaderworkerset,
    load,
    pod,
    raycluster,
    to_yaml,
)

GPU = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")


def loaded_pod(doc: dict[str, Any]) -> Pod:
    result = load(doc)
    assert not result.errors, [str(e) for e in result.errors]
    obj = result.manifests[0].obj
    assert isinstance(obj, Pod)
    return obj


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("aws.amazon.com/neuron", True),
        ("nvidia.com/mig-1g.5gb", True),
        ("cpu", False),
        ("memory", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/something", False),
        ("example.kubernetes.io/device", False),
        ("requests.nvidia.com/gpu", False),
    ],
)
def test_extended_resources_are_domain_prefixed_names_outside_kubernetes_io(
    name: str, extended: bool
) -> None:
    assert is_extended_resource(name) is extended


def test_a_pod_requesting_a_gpu_is_stored_tolerating_the_gpu_taint() -> None:
    written = loaded_pod(pod("trainer", gpu=1))
    assert written.spec.tolerations == []
    stored = admit(written)
    assert stored.spec.tolerations == [GPU]
    assert written.spec.tolerations == []  # the loaded object is not changed


def test_a_pod_without_extended_resources_is_stored_as_written() -> None:
    written = loaded_pod(pod("web"))
    assert admit(written) is written


def test_each_resource_of_containers_and_init_containers_is_tolerated_once_in_name_order() -> None:
    neuron = container("neuron", gpu=None)
    neuron["resources"]["limits"] = {"aws.amazon.com/neuron": "1"}
    init = container("init", gpu=1)
    doc = pod("mixed", gpu=2)
    doc["spec"]["initContainers"] = [init, neuron]
    assert [t.key for t in admit(loaded_pod(doc)).spec.tolerations] == [
        "aws.amazon.com/neuron",
        "nvidia.com/gpu",
    ]


def test_a_toleration_already_written_exactly_is_not_added_again() -> None:
    stored = admit(loaded_pod(pod("trainer", gpu=1, tolerations=[GPU_TOLERATION])))
    assert stored.spec.tolerations == [GPU]


def test_a_different_toleration_for_the_same_key_does_not_stand_for_the_admitted_one() -> None:
    equal = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    no_execute = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}
    spec = loaded_pod(pod("trainer", gpu=1, tolerations=[equal, no_execute])).spec
    assert admitted_tolerations(spec) == [GPU]


def test_workload_pods_are_admitted_and_their_templates_are_not() -> None:
    train = edit(job("train"), "spec.template.spec.tolerations", DELETE)
    result = load(deployment("vllm", gpu=1), train)
    for m in result.manifests:
        assert m.obj.spec.template.spec.tolerations == []  # type: ignore[union-attr]
    assert [p.spec.tolerations for p in result.objects.pods] == [[GPU]] * 5
    for m in result.manifests:
        # One pod per template, for validate's summary: as written.
        samples = sample_pods(m.obj)  # type: ignore[arg-type]
        assert [p.spec.tolerations for _, p in samples] == [[]]


def test_operator_kinds_pods_are_admitted() -> None:
    ray = edit(
        raycluster("ray", workers=2), "spec.workerGroupSpecs[0].template.spec.tolerations", DELETE
    )
    lws = edit(
        leaderworkerset("lws"), "spec.leaderWorkerTemplate.workerTemplate.spec.tolerations", DELETE
    )
    for m in load(ray, lws).manifests:
        pods = expand(m.obj)  # type: ignore[arg-type]
        gpu = [p for p in pods if "nvidia.com/gpu" in p.spec.containers[0].resources.requests]
        assert gpu
        assert all(p.spec.tolerations == [GPU] for p in gpu)
        assert all(p.spec.tolerations == [] for p in pods if p not in gpu)


def test_a_bare_pod_is_admitted_in_the_plan_input_and_the_manifest_keeps_what_was_written() -> None:
    result = load(pod("trainer", gpu=1))
    (stored,) = result.objects.pods
    assert stored.spec.tolerations == [GPU]
    assert result.manifests[0].obj.spec.tolerations == []  # type: ignore[union-attr]


def test_the_simulated_cluster_stores_an_applied_pod_admitted() -> None:
    cluster = Cluster()
    cluster.apply(loaded_pod(pod("trainer", gpu=1)))
    assert cluster.pod("default/trainer").spec.tolerations == [GPU]
    cluster.apply(load(deployment("vllm", replicas=1, gpu=1)).manifests[0].obj)
    assert cluster.pod("default/vllm-0").spec.tolerations == [GPU]


def test_the_pods_of_one_template_share_one_admitted_spec() -> None:
    (m,) = load(edit(deployment("vllm", gpu=1), "spec.replicas", 3)).manifests
    pods = expand(m.obj)  # type: ignore[arg-type]
    assert pods[0].spec is pods[1].spec is pods[2].spec


def test_validate_summarises_templates_as_written(tmp_path: Path) -> None:
    ray = edit(
        raycluster("ray", workers=1), "spec.workerGroupSpecs[0].template.spec.tolerations", DELETE
    )
    path = tmp_path / "ray.yaml"
    path.write_text(to_yaml(ray, deployment("vllm", gpu=1)))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "tolerates" not in result.stdout
    assert "nvidia.com/gpu" in result.stdout
