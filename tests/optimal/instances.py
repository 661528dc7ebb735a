"""Small inputs for the `plan --optimal` tests (not a test module): the bundled catalog, the
builders' NodePool narrowed as each case needs, and a plan of them."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.controllers.provisioning.loop import Plan
from gpucap.operator.plan import plan
from tests.builders import GPU_TOLERATION, deployment, edit, load, nodeclass, nodepool

CATALOG = load_catalog("us-east-1")
HOSTNAME = "kubernetes.io/hostname"


def gpu_pool(
    name: str = "gpu", families: list[str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    """The builders' GPU NodePool with these instance families and limits."""
    doc = nodepool(name, limits=limits or {"nvidia.com/gpu": "100"})
    return edit(doc, "spec.template.spec.requirements[2].values", families or ["g5"])


def gpu_deployment(name: str, replicas: int, gpu: int = 1, **extra: Any) -> dict[str, Any]:
    return deployment(name, replicas=replicas, gpu=gpu, tolerations=[GPU_TOLERATION], **extra)


def hostname_spread(app: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}},
        }
    ]


def manifests(*docs: dict[str, Any]) -> Manifests:
    result = load(nodeclass(), *docs)
    assert result.ok, [str(i) for i in result.issues]
    return result.objects


def planned(*docs: dict[str, Any]) -> tuple[Manifests, Plan]:
    m = manifests(*docs)
    return m, plan(m, CATALOG)


@st.composite
def random_inputs(
    draw: st.DrawFn,
    families: st.SearchStrategy[list[str]],
    limits: st.SearchStrategy[int],
    replicas: st.SearchStrategy[int],
) -> list[dict[str, Any]]:
    """One or two GPU NodePools (instance families from `families`, a GPU limit from `limits`) and one to three GPU
    Deployments of mixed CPU, memory and GPU shapes (`replicas` each), some spread on hostname:
    the random instances of the laws."""
    pools = [
        gpu_pool(f"pool{i}", draw(families), {"nvidia.com/gpu": str(draw(limits))})
        for i in range(draw(st.integers(1, 2)))
    ]
    workloads = []
    for j in range(draw(st.integers(1, 3))):
        name = f"w{j}"
        extra: dict[str, Any] = {
            "cpu": str(draw(st.sampled_from([1, 2, 4, 8]))),
            "memory": f"{draw(st.sampled_from([1, 4, 16, 30]))}Gi",
        }
        if draw(st.booleans()):
            extra["topologySpreadConstraints"] = hostname_spread(name)
        workloads.append(
            gpu_deployment(name, draw(replicas), draw(st.sampled_from([1, 1, 2, 4])), **extra)
        )
    return [*pools, *workloads]
