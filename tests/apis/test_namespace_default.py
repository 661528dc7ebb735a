"""A namespaced object without a namespace is in "default", from the moment it is a model (as the
API server gives it the request's namespace on create); a cluster-scoped one has none; and no
output gpucap prints back gains a namespace the user did not write (`apis/meta.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpucap.apis.core import Pod, PodDisruptionBudget
from gpucap.apis.meta import NamespacedObjectMeta, ObjectMeta
from gpucap.apis.serde import KINDS
from gpucap.apis.workloads import DaemonSet, Deployment, expand_workload
from gpucap.cli.main import app
from gpucap.scheduling.nodeclaimtemplate import daemon_pod
from tests.builders import DELETE, daemonset, deployment, edit, nodepool, pod, to_yaml

runner = CliRunner()


def test_a_pod_without_a_namespace_is_in_default() -> None:
    # Built directly, not through the loader: the model itself applies the default.
    built = Pod.model_validate(pod("web-0"))
    assert built.metadata.namespace == "default"
    assert built.key == "default/web-0"


@pytest.mark.parametrize("written", [None, ""])
def test_a_null_or_empty_namespace_is_default_too(written: str | None) -> None:
    built = Pod.model_validate(edit(pod("web-0"), "metadata.namespace", written))
    assert built.metadata.namespace == "default"


def test_a_written_namespace_is_kept() -> None:
    assert Pod.model_validate(pod("web-0", namespace="ml")).key == "ml/web-0"


def _metadata_model(model: Any) -> Any:
    return model.model_fields["metadata"].annotation


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_namespaced_kind_defaults_its_namespace_and_no_cluster_scoped_kind_has_one(
    kind: str,
) -> None:
    _, model, namespaced = KINDS[kind]
    meta = _metadata_model(model).model_validate({"name": "x"})
    if namespaced:
        assert isinstance(meta, NamespacedObjectMeta)
        assert meta.namespace == "default"
    else:
        assert type(meta) is ObjectMeta
        assert meta.namespace is None


def test_a_pdb_without_a_namespace_is_in_default() -> None:
    pdb = PodDisruptionBudget.model_validate(
        {"metadata": {"name": "web"}, "spec": {"maxUnavailable": 1}}
    )
    assert pdb.metadata.namespace == "default"


def test_the_pods_of_a_workload_without_a_namespace_are_in_default() -> None:
    pods = expand_workload(Deployment.model_validate(deployment("vllm", replicas=2)))
    assert [p.key for p in pods] == ["default/vllm-0", "default/vllm-1"]


def test_the_pods_of_a_workload_are_in_its_namespace() -> None:
    doc = edit(deployment("vllm", replicas=1), "metadata.namespace", "ml")
    assert [p.key for p in expand_workload(Deployment.model_validate(doc))] == ["ml/vllm-0"]


def test_a_daemonsets_pod_is_in_the_daemonsets_namespace_or_default() -> None:
    plugin = daemonset()  # written in kube-system
    assert daemon_pod(DaemonSet.model_validate(plugin)).key == "kube-system/nvidia-device-plugin"
    bare = edit(plugin, "metadata.namespace", DELETE)
    assert daemon_pod(DaemonSet.model_validate(bare)).key == "default/nvidia-device-plugin"


def test_render_does_not_add_a_namespace(tmp_path: Path) -> None:
    text = to_yaml(pod("web-0"), deployment("vllm"))
    f = tmp_path / "in.yaml"
    f.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["render", str(f)])
    assert result.exit_code == 0, result.output
    assert result.stdout == text
    assert "namespace" not in result.stdout


def test_validate_lists_a_cluster_scoped_object_without_a_namespace(tmp_path: Path) -> None:
    # `validate -o yaml` lists the objects as defaulted: the pod in "default" (as it printed
    # before the model applied the default: the loader writes it), the NodePool without one.
    f = tmp_path / "in.yaml"
    f.write_text(to_yaml(nodepool("gpu"), pod("web-0")), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(f), "-o", "yaml"])
    assert result.exit_code == 0, result.output
    items = {i["kind"]: i["metadata"] for i in yaml.safe_load(result.stdout)["items"]}
    assert "namespace" not in items["NodePool"]
    assert items["Pod"]["namespace"] == "default"
