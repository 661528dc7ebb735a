"""A consolidation simulation is a scheduler option (Karpenter's `IsConsolidationSimulation`):
the existing nodes named in `SchedulingOptions.held_back` are built as under consolidateAfter
and take none of the pods in `movers`; pending pods still go there, and outside a
consolidation simulation the names are ignored.

Law (hypothesis): with nodes held back, the pod classes (which never keep a held-back
refusal) plan exactly what trying every pod on every target plans."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.scheduler import PoolInput, Results, Scheduler
from tests.builders import pod
from tests.scheduling.builders import CPU_TYPES, GIB, cpu_pool, load_models


def _node(name: str, cpu: int = 4000) -> StateNode:
    return StateNode(
        name=name,
        labels={"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64"},
        allocatable={"cpu": cpu, "memory": 64 * GIB, "pods": 110},
    )


def _solve(
    nodes: tuple[StateNode, ...],
    n_pods: int,
    options: SchedulingOptions,
    *,
    cpu: str = "1",
    pod_classes: bool = True,
) -> Results:
    nodepools, pods = load_models(cpu_pool(), *(pod(f"p{i}", cpu=cpu) for i in range(n_pods)))
    pools = [PoolInput(np, CPU_TYPES) for np in nodepools]
    scheduler = Scheduler(
        pools, state_nodes=nodes, pending_pods=pods, options=options, pod_classes=pod_classes
    )
    return scheduler.solve(pods)


def test_a_node_under_consolidate_after_takes_pending_pods_but_no_mover() -> None:
    options = SchedulingOptions(
        consolidation=True, held_back=frozenset({"ip-1"}), movers=frozenset({"default/p0"})
    )
    result = _solve((_node("ip-1"),), 2, options)
    assert result.pods_on_existing_nodes() == {"ip-1": ["default/p1"]}
    assert [[p.key for p in c.pods] for c in result.new_node_claims] == [["default/p0"]]


def test_a_mover_goes_to_a_node_that_is_not_held_back() -> None:
    options = SchedulingOptions(
        consolidation=True, held_back=frozenset({"ip-1"}), movers=frozenset({"default/p0"})
    )
    result = _solve((_node("ip-1"), _node("ip-2")), 1, options)
    assert result.pods_on_existing_nodes() == {"ip-2": ["default/p0"]}
    assert result.new_node_claims == []


def test_held_back_nodes_take_movers_outside_a_consolidation_simulation() -> None:
    options = SchedulingOptions(held_back=frozenset({"ip-1"}), movers=frozenset({"default/p0"}))
    result = _solve((_node("ip-1"),), 2, options)
    assert result.pods_on_existing_nodes() == {"ip-1": ["default/p0", "default/p1"]}
    assert not any(n.under_consolidate_after for n in result.existing_nodes)


def _shape(r: Results) -> tuple[object, ...]:
    return (
        [
            ([p.key for p in c.pods], [it.name for it in c.instance_types])
            for c in r.new_node_claims
        ],
        [(n.name, [p.key for p in n.pods]) for n in r.existing_nodes],
        sorted(r.pod_errors.items()),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(1, 8), min_size=1, max_size=4),
    st.integers(1, 12),
    st.sampled_from(["500m", "1", "3"]),
    st.data(),
)
def test_pod_classes_plan_as_every_pod_on_every_target_with_nodes_held_back(
    node_cpus: list[int], n_pods: int, cpu: str, data: st.DataObject
) -> None:
    nodes = tuple(_node(f"ip-{i}", cpu=c * 1000) for i, c in enumerate(node_cpus))
    held = data.draw(st.frozensets(st.sampled_from([n.name for n in nodes])))
    movers = data.draw(st.frozensets(st.sampled_from([f"default/p{i}" for i in range(n_pods)])))
    options = SchedulingOptions(consolidation=True, held_back=held, movers=movers)
    with_classes = _solve(nodes, n_pods, options, cpu=cpu)
    without = _solve(nodes, n_pods, options, cpu=cpu, pod_classes=False)
    assert _shape(with_classes) == _shape(without)
    for node in with_classes.existing_nodes:
        if node.name in held:
            assert not {p.key for p in node.pods} & movers
