"""The PodDisruptionBudget limits (`gpucap.utils.pdb`, Karpenter's `pkg/utils/pdb/pdb.go`): a PDB
selects the pods of its own namespace, and a PDB or pod written without a namespace is in
`default`, the same namespace as one written `namespace: default` (`apis/meta.py`)."""

from __future__ import annotations

from typing import Any

from gpucap.apis.core import Pod, PodDisruptionBudget
from gpucap.utils.pdb import Limits, pdb_key
from tests.builders import edit, pod


def _pdb(namespace: str | None) -> PodDisruptionBudget:
    meta: dict[str, Any] = {"name": "web"}
    if namespace is not None:
        meta["namespace"] = namespace
    spec = {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 0}
    return PodDisruptionBudget.model_validate({"metadata": meta, "spec": spec})


def _web(namespace: str | None, name: str = "web-0") -> Pod:
    # Built as models directly, not loaded: the model applies the namespace default.
    return Pod.model_validate(
        edit(pod(name, namespace=namespace), "metadata.labels", {"app": "web"})
    )


def test_a_pdb_written_in_default_selects_a_pod_without_a_namespace() -> None:
    budget = _pdb("default")
    assert Limits([budget], [_web(None)]).selecting(_web(None)) == [budget]


def test_a_pdb_without_a_namespace_selects_a_pod_written_in_default() -> None:
    budget = _pdb(None)
    assert Limits([budget], [_web("default")]).selecting(_web("default")) == [budget]


def test_a_pdb_without_a_namespace_counts_the_pods_written_in_default() -> None:
    limits = Limits([_pdb(None)], [_web("default"), _web(None, "web-1")])
    assert limits.status(limits.pdbs[0]).expected == 2


def test_a_pdb_does_not_select_a_pod_of_another_namespace() -> None:
    assert Limits([_pdb(None)], [_web("ml")]).selecting(_web("ml")) == []


def test_a_pdb_without_a_namespace_is_named_in_default() -> None:
    assert pdb_key(_pdb(None)) == "default/web"
