"""Topology spread counts the pods of the spreading pod's namespace: a pod written with
`namespace: default` and one written without a namespace are in the same namespace
(`apis/meta.py` `NamespacedObjectMeta`; `scheduling/topology.py`)."""

from __future__ import annotations

from typing import Any

from gpucap.apis.core import Pod
from gpucap.scheduling.existingnode import StateNode
from tests.builders import deployment, edit, pod
from tests.scheduling.builders import CPU_TYPES, cpu_pool, run

ZONE = "topology.kubernetes.io/zone"
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


def _placed_with_one_running_in_1b(running: dict[str, Any], web: dict[str, Any]) -> int:
    """How many of `web`'s 3 pods a pool launching only in us-east-1a places, while `running`
    (built directly as a model, not loaded) runs in us-east-1b."""
    node = StateNode(
        name="ip-b",
        labels={"kubernetes.io/hostname": "ip-b", ZONE: "us-east-1b"},
        allocatable={"cpu": 0, "memory": 0, "pods": 0},
        pods=(Pod.model_validate(running),),
    )
    zone_a = [{"key": ZONE, "operator": "In", "values": ["us-east-1a"]}]
    pool = edit(cpu_pool(), "spec.template.spec.requirements", zone_a)
    result = run([pool, web], CPU_TYPES, state_nodes=(node,))
    return sum(len(c.pods) for c in result.new_node_claims)


def _running(namespace: str | None) -> dict[str, Any]:
    return edit(pod("web-old", namespace=namespace), "metadata.labels", {"app": "web"})


def test_a_pod_without_a_namespace_counts_for_a_spread_written_in_default() -> None:
    # 1b holds one matching pod: two new pods in 1a keep the skew within 1, a third would not.
    web = edit(
        deployment("web", replicas=3, topologySpreadConstraints=SPREAD),
        "metadata.namespace",
        "default",
    )
    assert _placed_with_one_running_in_1b(_running(None), web) == 2


def test_a_pod_written_in_default_counts_for_a_spread_without_a_namespace() -> None:
    web = deployment("web", replicas=3, topologySpreadConstraints=SPREAD)
    assert _placed_with_one_running_in_1b(_running("default"), web) == 2


def test_a_pod_of_another_namespace_does_not_count_for_the_spread() -> None:
    web = deployment("web", replicas=3, topologySpreadConstraints=SPREAD)
    assert _placed_with_one_running_in_1b(_running("other"), web) == 1
