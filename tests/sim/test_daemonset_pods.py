"""DaemonSet pods are pods (issue 20): the simulator's DaemonSet controller (`sim/daemonsets.py`)
puts one bound pod per DaemonSet on every node it selects, as Kubernetes' DaemonSet controller
does (`pkg/controller/daemon/daemon_controller.go`, `NodeShouldRunDaemonPod`). Karpenter then
sees them as it sees any pod on the node: a DaemonSet pod with `karpenter.sh/do-not-disrupt`
blocks the node's disruption (kubernetes-sigs/karpenter `pkg/controllers/state/statenode.go`
`ValidatePodsDisruptable`), the drain evicts it after the other pods (`terminator.go`
`groupPodsByPriority`), and its requests take room on the node kube-scheduler binds to.

Each rule on a minimal story (one NodePool, one or two Deployments, a DaemonSet); the law over
the random stories of `test_laws.py` (with two or three DaemonSets added): after every instant of
every run, each registered node not being deleted has exactly the pods of the DaemonSets that
land on it (`sim/kubelet.daemonsets_for`), and no DaemonSet pod is bound to a node that is gone.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from gpucap.apis.core import Node, NodeSpec, Pod, Taint
from gpucap.apis.meta import ObjectMeta
from gpucap.apis.workloads import DaemonSet
from gpucap.sim.daemonsets import daemon_pod_for, should_run
from gpucap.sim.kubelet import daemonsets_for
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import SimulationResult, World
from tests.sim.laws import (
    DEVICE_PLUGIN,
    EXAMPLES,
    GPU_TAINT,
    Story,
    _catalog,
    _deployment,
    _nodeclass,
    _nodepool,
    stories,
)

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _daemonset(
    name: str,
    *,
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    cpu: str = "50m",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tolerations": tolerations or [],
        "containers": [
            {
                "name": name,
                "image": f"example.com/{name}:1",
                "resources": {"requests": {"cpu": cpu, "memory": "32Mi"}},
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                "spec": spec,
            },
        },
    }


# node-exporter as its chart ships it: on every node, whatever the taints.
NODE_EXPORTER = _daemonset("node-exporter", tolerations=[{"operator": "Exists"}])
PINNED_EXPORTER = _daemonset(
    "node-exporter", tolerations=[{"operator": "Exists"}], annotations={DO_NOT_DISRUPT: "true"}
)


def _pool(
    name: str = "gpu",
    *,
    gpu: bool = True,
    tainted: bool = True,
    policy: str = "WhenEmpty",
    after: str = "0s",
    capacity: tuple[str, ...] = ("on-demand",),
    types: tuple[str, ...] = ("g5.xlarge",),
) -> dict[str, Any]:
    return _nodepool(
        name,
        gpu,
        types=types,
        capacity=capacity,
        tainted=tainted,
        policy=policy,
        after=after,
        budgets=None,
        limit=None,
        expire="720h",
    )


def _story(
    manifests: list[dict[str, Any]], events: list[dict[str, Any]], duration: str = "1h"
) -> Story:
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "daemonsets"},
        "spec": {"duration": duration, "events": events},
    }
    return Story(scenario, (_nodeclass("al2023@latest"), *manifests))


def _scale(at: str, name: str, replicas: int) -> dict[str, Any]:
    scale = {"kind": "Deployment", "name": name, "namespace": "default", "replicas": replicas}
    return {"at": at, "scale": scale}


def _gpu_app(replicas: int = 1, cpu: str = "1") -> dict[str, Any]:
    return _deployment(
        "app", gpu=True, cpu=cpu, replicas=replicas, tolerations=[GPU_TOLERATION], pinned=False
    )


def _daemon_pods(world: World) -> set[tuple[str, str]]:
    """(DaemonSet name, node) of every DaemonSet-owned pod in the cluster."""
    out: set[tuple[str, str]] = set()
    for pod in world.cluster.pods():
        for ref in pod.metadata.owner_references:
            if ref.kind == "DaemonSet":
                out.add((ref.name, pod.spec.node_name or ""))
    return out


def _of_type(result: SimulationResult, type_: str, **match: Any) -> list[Event]:
    return [
        e for e in result.events if e.type == type_ and all(e.get(k) == v for k, v in match.items())
    ]


# ---- disruption --------------------------------------------------------------------------------
def _emptied(exporter: dict[str, Any]) -> tuple[World, SimulationResult]:
    """One GPU node (WhenEmpty, consolidateAfter 0s) whose only workload pod goes at 20m."""
    story = _story([_pool(), DEVICE_PLUGIN, exporter, _gpu_app()], [_scale("20m", "app", 0)])
    return story.run()


def test_a_daemonset_pod_with_do_not_disrupt_keeps_an_otherwise_empty_node() -> None:
    world, result = _emptied(PINNED_EXPORTER)
    assert _of_type(result, "NodeRegistered", nodeClaim="gpu-1")
    assert _of_type(result, "DisruptionDecision") == []
    assert ("node-exporter", "gpu-1") in _daemon_pods(world)
    assert world.cluster.node("gpu-1") is not None


def test_the_empty_node_goes_when_its_daemonset_pod_does_not_say_do_not_disrupt() -> None:
    world, result = _emptied(NODE_EXPORTER)
    (decision,) = _of_type(result, "DisruptionDecision", nodeClaim="gpu-1")
    assert decision.get("reason") == "Empty"
    assert decision.t >= 20 * 60
    assert world.cluster.node("gpu-1") is None
    # Its DaemonSet pod went with it.
    assert _daemon_pods(world) == set()


# ---- where they run ----------------------------------------------------------------------------
def test_daemonset_pods_are_made_on_each_node_they_select_and_on_no_other() -> None:
    cpu_app = _deployment("web", gpu=False, cpu="1", replicas=1, tolerations=[], pinned=False)
    cpu_pool = _pool("cpu", gpu=False, tainted=False, types=("m5.large",), after="Never")
    untolerant = _daemonset("log-agent")  # no toleration: not on the tainted GPU node
    gpu_only = _daemonset(
        "dcgm", tolerations=[GPU_TOLERATION], node_selector={"karpenter.sh/nodepool": "gpu"}
    )
    story = _story(
        [_pool(after="Never"), cpu_pool, untolerant, gpu_only, NODE_EXPORTER, _gpu_app(), cpu_app],
        [],
        duration="20m",
    )
    world, result = story.run()
    assert {e.get("nodeClaim") for e in _of_type(result, "NodeRegistered")} == {"gpu-1", "cpu-1"}
    assert _daemon_pods(world) == {
        ("log-agent", "cpu-1"),
        ("dcgm", "gpu-1"),
        ("node-exporter", "gpu-1"),
        ("node-exporter", "cpu-1"),
    }
    pod = world.cluster.pod("monitoring/dcgm-gpu-1")
    assert pod.spec.node_name == "gpu-1"
    assert pod.status.phase == "Running"
    assert [(r.kind, r.name) for r in pod.metadata.owner_references] == [("DaemonSet", "dcgm")]


def test_daemonset_pods_leave_no_trace_in_the_event_log() -> None:
    _, result = _emptied(NODE_EXPORTER)
    pods = {e.get("pod") for e in result.events if e.get("pod") is not None}
    assert pods == {"default/app-0"}
    assert result.summary == _emptied(_daemonset("idle", node_selector={"none": "x"}))[1].summary


def test_a_daemonset_applied_later_lands_on_the_running_nodes_and_goes_when_deleted() -> None:
    delete = {"kind": "DaemonSet", "name": "node-exporter", "namespace": "monitoring"}
    story = _story(
        [_pool(after="Never"), _gpu_app()],
        [
            {"at": "10m", "apply": {"manifest": NODE_EXPORTER}},
            {"at": "30m", "delete": delete},
        ],
    )
    world = _world(story)
    seen: list[tuple[float, bool]] = []
    world.run(on_step=lambda t: seen.append((t, _has(world, "monitoring/node-exporter-gpu-1"))))
    assert world.cluster.node("gpu-1") is not None
    assert {there for t, there in seen if t < 10 * 60} == {False}
    assert {there for t, there in seen if 10 * 60 <= t < 30 * 60} == {True}
    assert {there for t, there in seen if t >= 30 * 60} == {False}


def test_a_daemonset_pod_that_does_not_tolerate_a_startup_taint_comes_once_it_is_removed() -> None:
    pool = _pool(after="Never")
    startup = {"key": "example.com/agent-not-ready", "value": "true", "effect": "NoSchedule"}
    pool["spec"]["template"]["spec"]["startupTaints"] = [startup]
    story = _story([pool, _daemonset("agent", tolerations=[GPU_TOLERATION]), _gpu_app()], [])
    seen: list[tuple[float, bool]] = []
    world = _world(story)
    world.run(on_step=lambda t: seen.append((t, _has(world, "monitoring/agent-gpu-1"))))
    (registered,) = [e for e in world.recorder.events if e.type == "NodeRegistered"]
    first = min(t for t, there in seen if there)
    assert first >= registered.t + world.timings.daemonset_start


# ---- the drain ---------------------------------------------------------------------------------
def test_daemonset_pods_are_evicted_after_the_other_pods_of_a_drained_node() -> None:
    pool = _pool(capacity=("spot",), after="Never")
    agent = _daemonset("agent", tolerations=[GPU_TOLERATION])  # not the disrupted taint
    story = _story(
        [pool, DEVICE_PLUGIN, agent, NODE_EXPORTER, _gpu_app()],
        [{"at": "20m", "interrupt": {"nodeClaim": "gpu-1"}}],
        duration="30m",
    )
    world = _world(story)
    gone: list[float] = []

    def step(t: float) -> None:
        if not gone and not _has(world, "monitoring/agent-gpu-1") and t > 20 * 60:
            gone.append(t)

    result = world.run(on_step=step)
    (evicted,) = _of_type(result, "PodEvicted", pod="default/app-0")
    assert evicted.get("node") == "gpu-1"
    assert gone
    assert gone[0] > evicted.t
    # The exporter tolerates the disrupted taint: not evicted, it goes with its Node.
    assert ("node-exporter", "gpu-1") not in _daemon_pods(world)


# ---- kube-scheduler's room ---------------------------------------------------------------------
def test_a_pod_that_fits_only_without_the_daemonset_requests_does_not_bind() -> None:
    # dcgm-exporter selects GPU nodes by a label GPU Feature Discovery adds at run time: Karpenter
    # does not count it when it sizes the node (the pool cannot say the label will be there),
    # the DaemonSet controller puts it on the node, and what is left does not hold the pod.
    dcgm = _daemonset(
        "dcgm-exporter",
        tolerations=[GPU_TOLERATION],
        node_selector={"nvidia.com/gpu.present": "true"},
        cpu="1",
    )
    app = _gpu_app(cpu="3")
    world, result = _story([_pool(after="Never"), DEVICE_PLUGIN, dcgm, app], []).run()
    assert ("dcgm-exporter", "gpu-1") in _daemon_pods(world)
    assert _of_type(result, "PodNominated", pod="default/app-0")
    assert _of_type(result, "PodBound", pod="default/app-0") == []

    _, result = _story([_pool(after="Never"), DEVICE_PLUGIN, app], []).run()
    assert _of_type(result, "PodBound", pod="default/app-0", node="gpu-1")


# ---- the law -----------------------------------------------------------------------------------
def _world(story: Story) -> World:
    """The story's World, not yet run (loaded as `Story.run` loads it)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "objects.yaml").write_text(yaml.safe_dump_all(list(story.manifests)))
        scenario = {**story.scenario}
        scenario["spec"] = {**scenario["spec"], "manifests": ["objects.yaml"]}
        (root / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
        loaded = load_scenario(str(root / "scenario.yaml"), _catalog)
    return World(loaded, _catalog())


def _has(world: World, key: str) -> bool:
    try:
        world.cluster.pod(key)
    except KeyError:
        return False
    return True


def daemon_law(world: World) -> list[str]:
    """Every registered node not being deleted has exactly the pods of the DaemonSets that land
    on it; no DaemonSet pod is bound to a node that is gone."""
    broken: list[str] = []
    daemonsets = world.cluster.daemonsets()
    placed: dict[str, set[str]] = {}
    for pod in world.cluster.pods():
        owner = _owner(pod)
        if owner is None:
            continue
        node = pod.spec.node_name or ""
        if world.cluster.node(node) is None:
            broken.append(f"DaemonSet pod {pod.key} is bound to {node!r}, which is gone")
        placed.setdefault(node, set()).add(owner)
    for node in world.cluster.nodes():
        name = node.metadata.name
        claim = world.cluster.node_claim_for_node(node)
        deleting = claim is not None and claim.metadata.deletion_timestamp is not None
        if deleting or name in world.cluster.marked_for_deletion():
            continue
        want = {
            ds.metadata.name
            for ds in daemonsets_for(node.metadata.labels, node.spec.taints, daemonsets)
        }
        have = placed.get(name, set())
        if want != have:
            broken.append(f"node {name}: DaemonSet pods {sorted(have)}, selected {sorted(want)}")
    return broken


def _owner(pod: Pod) -> str | None:
    return next((r.name for r in pod.metadata.owner_references if r.kind == "DaemonSet"), None)


@st.composite
def stories_with_daemonsets(draw: st.DrawFn) -> Story:
    story = draw(stories())
    extra = [copy.deepcopy(NODE_EXPORTER), _daemonset("cpu-agent")]
    if draw(st.booleans()):
        # the GPU taint tolerated, only on GPU NodePools' nodes
        extra.append(
            _daemonset(
                "gpu-agent",
                tolerations=[{"key": GPU_TAINT["key"], "operator": "Exists"}],
                node_selector={"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"},
            )
        )
    return Story(story.scenario, (*story.manifests, *extra))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stories_with_daemonsets())
def test_every_node_has_exactly_the_daemonset_pods_that_select_it(story: Story) -> None:
    note(story.to_yaml())
    world = _world(story)
    broken: list[str] = []

    def step(t: float) -> None:
        if not broken:  # the first instant that breaks it
            broken.extend(f"t={t:.0f}s: {b}" for b in daemon_law(world))

    world.run(on_step=step)
    assert not broken, "\n".join(broken)


def test_the_law_sees_a_missing_and_a_stray_daemonset_pod() -> None:
    world, _ = _story([_pool(after="Never"), NODE_EXPORTER, _gpu_app()], [], "15m").run()
    assert daemon_law(world) == []
    pod = world.cluster.pod("monitoring/node-exporter-gpu-1")
    world.cluster.delete_pod(pod.key)
    assert daemon_law(world) == ["node gpu-1: DaemonSet pods [], selected ['node-exporter']"]
    world.cluster.add_pod(
        pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": "gone"})})
    )
    assert daemon_law(world) == [
        "DaemonSet pod monitoring/node-exporter-gpu-1 is bound to 'gone', which is gone",
        "node gpu-1: DaemonSet pods [], selected ['node-exporter']",
    ]


def test_a_daemonset_applied_again_with_another_template_replaces_its_pods() -> None:
    bigger = _daemonset("node-exporter", tolerations=[{"operator": "Exists"}], cpu="200m")
    story = _story(
        [_pool(after="Never"), NODE_EXPORTER, _gpu_app()],
        [
            {"at": "10m", "apply": {"manifest": NODE_EXPORTER}},  # the same: the pod stays
            {"at": "20m", "apply": {"manifest": bigger}},
        ],
        "30m",
    )
    world = _world(story)
    created: dict[float, str] = {}

    def step(t: float) -> None:
        pod = world.cluster.pod("monitoring/node-exporter-gpu-1") if t > 60 else None
        if pod is not None:
            stamp = pod.metadata.creation_timestamp
            created.setdefault(t, stamp.isoformat() if stamp else "")

    world.run(on_step=step)
    before = {c for t, c in created.items() if t < 20 * 60}
    after = {c for t, c in created.items() if t >= 20 * 60}
    assert len(before) == 1
    assert len(after) == 1
    assert before != after
    pod = world.cluster.pod("monitoring/node-exporter-gpu-1")
    assert pod.spec.containers[0].resources is not None
    assert str(pod.spec.containers[0].resources.requests["cpu"]) == "200m"


# ---- NodeShouldRunDaemonPod ----------------------------------------------------------------------
def _node(taints: list[Taint], labels: dict[str, str] | None = None) -> Node:
    meta = ObjectMeta(name="n", labels=labels or {})
    return Node(metadata=meta, spec=NodeSpec(taints=taints))


def _daemon(doc: dict[str, Any]) -> Pod:
    return daemon_pod_for(DaemonSet.model_validate(doc))


def test_a_noschedule_taint_keeps_a_new_daemon_off_but_not_a_running_one() -> None:
    pod = _daemon(_daemonset("agent"))
    disrupted = Taint(key="karpenter.sh/disrupted", effect="NoSchedule")
    assert should_run(pod, _node([])) == (True, True)
    assert should_run(pod, _node([disrupted])) == (False, True)
    assert should_run(pod, _node([Taint(key="x", effect="NoExecute")])) == (False, False)
    # The DaemonSet controller's own tolerations.
    unreachable = Taint(key="node.kubernetes.io/unreachable", effect="NoExecute")
    assert should_run(pod, _node([unreachable])) == (True, True)


def test_runtime_gpu_labels_are_taken_as_met_on_gpu_nodes_only() -> None:
    pod = _daemon(_daemonset("dcgm", node_selector={"nvidia.com/gpu.present": "true"}))
    gpu = {"karpenter.k8s.aws/instance-gpu-count": "1"}
    assert should_run(pod, _node([], gpu)) == (True, True)
    assert should_run(pod, _node([], {"karpenter.k8s.aws/instance-gpu-count": "0"})) == (
        False,
        False,
    )
