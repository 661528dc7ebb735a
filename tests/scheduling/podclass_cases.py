"""Pods, pools and schedulers for the pod-class shortcuts, shared by the shortcut tests (not a
test module)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gpucap.apis.core import Pod, Taint
from gpucap.apis.nodepool import NodePool
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.scheduler import PoolInput, Results, Scheduler
from tests.builders import GPU_TOLERATION, edit
from tests.scheduling.builders import CPU_TYPES, GIB, GPU_TYPES, ZONES, cpu_pool, gpu_pool

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("a", "b", "c")


def _pod(name: str, app: str, shape: dict[str, Any], selects: str | None = None) -> Pod:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "resources": {
                    "requests": {"cpu": shape["cpu"], "memory": shape["memory"]},
                    **({"limits": {"nvidia.com/gpu": str(shape["gpu"])}} if shape["gpu"] else {}),
                },
            }
        ]
    }
    if shape["tolerate"]:
        spec["tolerations"] = [GPU_TOLERATION]
    if shape["zone"]:
        spec["nodeSelector"] = {ZONE: shape["zone"]}
    own = {"matchLabels": {"app": app}}
    selector = {"matchLabels": {"app": selects or app}}  # what (anti-)affinity follows
    spreads = []
    for key, when, skew in shape["spreads"]:
        spreads.append(
            {
                "maxSkew": skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": own,
            }
        )
    if spreads:
        spec["topologySpreadConstraints"] = spreads
    affinity: dict[str, Any] = {}
    for kind, key, preferred in shape["affinities"]:
        section = affinity.setdefault(kind, {})
        term = {"topologyKey": key, "labelSelector": selector}
        if preferred:
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": 10, "podAffinityTerm": term}
            )
        else:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
    if affinity:
        spec["affinity"] = affinity
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": app}},
            "spec": spec,
        }
    )


def _pods(loads: list[tuple[str, dict[str, Any], int]]) -> list[Pod]:
    """The pods of drawn workloads: `replicas` pods named w<workload>-<replica> each."""
    return [
        _pod(f"w{w}-{r}", app, shape)
        for w, (app, shape, replicas) in enumerate(loads)
        for r in range(replicas)
    ]


shapes = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(["250m", "1", "3"]),
        "memory": st.sampled_from(["512Mi", "4Gi"]),
        "gpu": st.sampled_from([0, 0, 1]),
        "tolerate": st.booleans(),
        "zone": st.sampled_from([None, None, *ZONES[:2]]),
        "spreads": st.lists(
            st.tuples(
                st.sampled_from([ZONE, HOST]),
                st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
                st.integers(1, 2),
            ),
            max_size=2,
        ),
        "affinities": st.lists(
            st.tuples(
                st.sampled_from(["podAffinity", "podAntiAffinity"]),
                st.sampled_from([ZONE, HOST]),
                st.booleans(),
            ),
            max_size=2,
        ),
    }
)
# Workloads: (app, shape, replicas): runs of identical pods.
workloads = st.lists(st.tuples(st.sampled_from(APPS), shapes, st.integers(1, 6)), max_size=8)
existing = st.lists(
    st.tuples(
        st.sampled_from(ZONES),
        st.sampled_from([2, 4, 8]),  # vCPUs
        st.booleans(),  # GPU-tainted
        st.lists(st.tuples(st.sampled_from(APPS), shapes), max_size=3),  # bound pods
    ),
    max_size=3,
)


def _pools(gpu_limit: int | None, cpu_limit: str | None) -> list[PoolInput]:
    gpu = gpu_pool()
    gpu = edit(gpu, "spec.limits", {"nvidia.com/gpu": str(gpu_limit)} if gpu_limit else None)
    cpu = cpu_pool()
    cpu = edit(cpu, "spec.limits", {"cpu": cpu_limit} if cpu_limit else None)
    return [
        PoolInput(NodePool.model_validate(gpu), tuple(GPU_TYPES)),
        PoolInput(NodePool.model_validate(cpu), tuple(CPU_TYPES)),
    ]


def _nodes(specs: list[tuple[str, int, bool, list[tuple[str, dict[str, Any]]]]]) -> list[StateNode]:
    nodes = []
    for i, (zone, cpus, tainted, bound) in enumerate(specs):
        name = f"ip-{i}"
        nodes.append(
            StateNode(
                name=name,
                labels={HOST: name, ZONE: zone, "kubernetes.io/arch": "amd64"},
                allocatable={"cpu": cpus * 1000, "memory": 4 * cpus * GIB, "pods": 110},
                taints=(Taint(key="nvidia.com/gpu", effect="NoSchedule"),) if tainted else (),
                pods=tuple(_pod(f"{name}-bound-{j}", app, s) for j, (app, s) in enumerate(bound)),
            )
        )
    return nodes


def _plan(
    pods: list[Pod], pools: list[PoolInput], nodes: list[StateNode], *, classes: bool
) -> tuple[object, ...]:
    scheduler = Scheduler(pools, state_nodes=nodes, pending_pods=pods, pod_classes=classes)
    return _shape(scheduler.solve(pods))


def _shape(r: Results) -> tuple[object, ...]:
    return (
        [
            (
                c.name,
                [p.key for p in c.pods],
                [it.name for it in c.instance_types],
                str(c.requirements),
                sorted(c.requests.items()),
                sorted(c.labels.items()),
            )
            for c in r.new_node_claims
        ],
        [(n.name, [p.key for p in n.pods], sorted(n.remaining.items())) for n in r.existing_nodes],
        sorted(r.pod_errors.items()),
    )


def _shape_of(**kw: Any) -> dict[str, Any]:
    shape: dict[str, Any] = {
        "cpu": "1",
        "memory": "512Mi",
        "gpu": 0,
        "tolerate": False,
        "zone": None,
        "spreads": [],
        "affinities": [],
    }
    shape.update(kw)
    return shape
