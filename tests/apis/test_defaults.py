"""Defaults equal Karpenter's: every OpenAPI `default:` of the NodePool, NodeClaim and
EC2NodeClass CRDs (extracted into tests/data/karpenter_crd_defaults.json from the AWS
provider's CRDs) is applied by gpucap when the field is absent, and nothing else is invented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpucap.apis.meta import dump
from tests.builders import deployment, edit, job, load, nodeclass, nodepool

CRD_DEFAULTS = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "karpenter_crd_defaults.json").read_text()
)["defaults"]


def nodeclaim() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "gpu-x"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
            "requirements": [],
        },
    }


MINIMAL = {
    "NodePool": edit(nodepool(), "spec.disruption", {"budgets": [{}]}),
    "NodeClaim": nodeclaim(),
    "EC2NodeClass": nodeclass(),
}


def _values_at(obj: Any, path: list[str]) -> list[Any]:
    """Every value at a CRD schema path (`a.b[].c`), descending into list items for `[]`."""
    if not path:
        return [obj]
    head, rest = path[0], path[1:]
    key, is_list = (head[:-2], True) if head.endswith("[]") else (head, False)
    child = obj.get(key)
    if child is None:
        return []
    if is_list:
        return [v for item in child for v in _values_at(item, rest)]
    return _values_at(child, rest)


CASES = [
    (kind, path, default) for kind, paths in CRD_DEFAULTS.items() for path, default in paths.items()
]


@pytest.mark.parametrize(("kind", "path", "default"), CASES, ids=[f"{k}:{p}" for k, p, _ in CASES])
def test_an_absent_field_gets_karpenters_crd_default(kind: str, path: str, default: Any) -> None:
    result = load(MINIMAL[kind])
    assert result.issues == []
    wire = dump(result.manifests[0].obj)
    values = _values_at(wire, path.split("."))
    assert values, f"{path} missing after defaulting"
    for value in values:
        if isinstance(default, dict):
            assert {k: value[k] for k in default} == default
        else:
            assert value == default


def test_the_default_budget_allows_ten_percent_of_nodes() -> None:
    np = load(nodepool()).objects.nodepools[0]
    assert [b.nodes for b in np.spec.disruption.budgets] == ["10%"]
    assert np.spec.disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert np.spec.disruption.consolidate_after_seconds == 0


def test_a_nodepool_without_weight_counts_as_weight_zero() -> None:
    np = load(nodepool()).objects.nodepools[0]
    assert np.spec.weight is None
    assert np.effective_weight == 0


def test_expire_after_defaults_to_thirty_days_and_never_means_none() -> None:
    np = load(nodepool()).objects.nodepools[0]
    never = load(edit(nodepool(), "spec.template.spec.expireAfter", "Never")).objects.nodepools[0]
    assert np.spec.template.spec.expire_after_seconds == 720 * 3600
    assert never.spec.template.spec.expire_after_seconds is None


def test_capacity_type_is_not_defaulted_as_in_karpenter_v1() -> None:
    np = load(edit(nodepool(), "spec.template.spec.requirements", [])).objects.nodepools[0]
    assert np.spec.template.spec.requirements == []


def test_the_ami_family_is_inferred_from_the_alias_and_not_written_into_the_spec() -> None:
    nc = load(nodeclass()).objects.nodeclasses[0]
    assert nc.spec.ami_family is None
    assert nc.ami_family == "AL2023"
    assert "amiFamily" not in dump(nc)["spec"]


def test_deployment_replicas_and_job_parallelism_default_to_one() -> None:
    objs = load(deployment(replicas=None), job(parallelism=None)).objects
    assert [p.metadata.name for p in objs.pods] == ["vllm-0", "train-0"]


def test_toleration_operator_defaults_to_equal() -> None:
    result = load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "a"}],
                "tolerations": [
                    {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
                ],
            },
        }
    )
    assert result.objects.pods[0].spec.tolerations[0].operator == "Equal"


def test_topology_spread_policies_default_as_kubernetes_does() -> None:
    result = load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "a"}],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                    }
                ],
            },
        }
    )
    tsc = result.objects.pods[0].spec.topology_spread_constraints[0]
    assert (tsc.node_affinity_policy, tsc.node_taints_policy) == ("Honor", "Ignore")
