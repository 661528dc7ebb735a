"""kube-scheduler's bind queue (`sim/bindqueue.py`) against the plain pass, on random histories
of one cluster: pods made, deleted and nominated, NodeClaims made, their Nodes registering,
turning Ready, advertising GPUs and changing taints, other pods taking and freeing a node's room,
and bind passes in between. With the queue a pass tries only the nominations whose inputs
changed since their last try; the binds, their order and the pods' nodes must be those of the
plain pass (every nomination on every pass) after every history. The whole-run law is
tests/sim/test_bind_fast_path.py; this one reaches what the stories rarely do (room freed on a
node a pod waits for)."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Node, Pod
from gpucap.apis.nodepool import NodeClaim
from gpucap.controllers.nodeclaim.podevents import PodEvents
from gpucap.runtime.clock import FakeClock
from gpucap.sim.binder import KubeScheduler
from gpucap.state.cluster import Cluster
from tests.builders import GPU_TOLERATION, load, pod
from tests.state.builders import GPU_TAINT, node, node_claim

PODS, CLAIMS = 4, 2
OTHER_TAINT = {"key": "example.com/other", "value": "x", "effect": "NoSchedule"}


class _Bus:
    """The bus messages the binder sends and asks (`sim/bus.py`), kept as a log."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []
        self.node_for: dict[str, str] = {}  # NodeClaim -> its registered Node

    def node_of_claim(self, claim: str) -> str | None:
        return self.node_for.get(claim)

    def claim_of_node(self, name: str) -> str | None:
        return next((c for c, n in self.node_for.items() if n == name), None)

    def emit(self, type_: str, **fields: Any) -> None:
        self.log.append((type_, fields))

    def pod_bound(self, key: str) -> None:
        pass

    def start_pod(self, pod: Pod, node: str, claim: str | None) -> None:
        pass


def _obj(doc: dict[str, Any]) -> Any:
    return load(doc).manifests[0].obj


def _node(j: int, *, ready: bool, gpus: int, other: bool) -> Node:
    doc = node(f"n{j}", gpus=gpus, taints=[GPU_TAINT, *([OTHER_TAINT] if other else [])])
    doc["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return cast(Node, _obj(doc))


class _World:
    """One cluster and binder a history is played on (`fast`: with the queue)."""

    def __init__(self, fast: bool) -> None:
        clock = FakeClock()
        self.cluster = Cluster(clock=clock)
        self.bus = _Bus()
        KubeScheduler.retry_changed = fast
        try:
            self.binder = KubeScheduler(
                cast(Any, self.bus), self.cluster, PodEvents(self.cluster, clock), clock
            )
        finally:
            KubeScheduler.retry_changed = True
        self.nodes: dict[int, dict[str, Any]] = {}
        self.fillers = 0

    def step(self, op: tuple[Any, ...]) -> None:
        kind, i, j = op
        c = self.cluster
        key = f"default/p{i}"
        if kind == "pod" and not _exists(c, key):
            c.add_pod(cast(Pod, _obj(pod(f"p{i}", gpu=1, tolerations=[GPU_TOLERATION]))))
        elif kind in ("tolerate", "untolerate") and _exists(c, key):
            if not c.pod(key).spec.node_name:  # the same pod written again, its tolerations changed
                tolerations = [GPU_TOLERATION] if kind == "tolerate" else []
                c.add_pod(cast(Pod, _obj(pod(f"p{i}", gpu=1, tolerations=tolerations))))
        elif kind == "delete" and _exists(c, key):
            c.delete_pod(key)
            self.binder.deleted(key)
        elif kind == "claim" and c.node_claim(f"c{j}") is None:
            c.add_node_claim(cast(NodeClaim, _obj(node_claim(f"c{j}"))))
        elif kind == "nominate" and _exists(c, key) and c.node_claim(f"c{j}") is not None:
            if not c.pod(key).spec.node_name:
                c.nominate(key, f"c{j}")
        elif kind == "register" and c.node_claim(f"c{j}") is not None and j not in self.nodes:
            self.nodes[j] = {"ready": False, "gpus": 0, "other": False}
            self.bus.node_for[f"c{j}"] = f"n{j}"
            c.add_node(_node(j, **self.nodes[j]))
        elif kind in NODE_CHANGES and j in self.nodes:
            field, value = NODE_CHANGES[kind]
            self.nodes[j][field] = 1 + i % 2 if kind == "gpus" else value
            c.update_node(_node(j, **self.nodes[j]))
        elif kind == "occupy" and j in self.nodes:
            self.fillers += 1
            filler = cast(Pod, _obj(pod(f"filler{self.fillers}", gpu=1)))
            self.binder.place(filler, f"n{j}")
        elif kind == "free" and self.fillers:
            self.binder.unplace(f"default/filler{1 + i % self.fillers}")
        elif kind == "pass":
            self.binder.bind_all()

    def outcome(self) -> tuple[object, ...]:
        return (
            self.bus.log,
            sorted((p.key, p.spec.node_name) for p in self.cluster.pods()),
        )


def _exists(cluster: Cluster, key: str) -> bool:
    return key in {p.key for p in cluster.pods()}


# A Node's changes: its field in `_World.nodes` and the value ("gpus": 1 or 2, by the index).
NODE_CHANGES: dict[str, tuple[str, Any]] = {
    "ready": ("ready", True),
    "unready": ("ready", False),
    "gpus": ("gpus", None),
    "nogpus": ("gpus", 0),
    "taint": ("other", True),
    "untaint": ("other", False),
}
KINDS = ("pod", "tolerate", "untolerate", "delete", "claim", "nominate", "register", *NODE_CHANGES)
OPS = st.tuples(
    st.sampled_from((*KINDS, "ready", "gpus", "occupy", "free", "pass", "pass", "pass")),
    st.integers(0, PODS - 1),
    st.integers(0, CLAIMS - 1),
)


# Room freed on a node a pod failed to bind to for lack of it, nothing else changing: only
# the binder's own cache (`used_changed`) says to try again.
FREED = [("register", 0, 0), ("ready", 0, 0), ("gpus", 0, 0), ("occupy", 0, 0), ("pass", 0, 0)]
FREED += [("free", 0, 0), ("pass", 0, 0)]
# A pod written again, now tolerating the node's taint, nothing else changing.
RETOLERATED = [("register", 0, 0), ("ready", 0, 0), ("gpus", 0, 0), ("untolerate", 0, 0)]
RETOLERATED += [("untolerate", 2, 0), ("pass", 0, 0), ("tolerate", 0, 0), ("pass", 0, 0)]


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=60))
@example(FREED)
@example(RETOLERATED)
def test_the_bind_queue_binds_what_the_plain_pass_binds(ops: list[tuple[Any, ...]]) -> None:
    fast, plain = _World(fast=True), _World(fast=False)
    assert fast.binder.queue is not None
    assert plain.binder.queue is None
    # Every NodeClaim made and every pod made and nominated first, so that the history's few
    # steps reach the Nodes registering, turning Ready, advertising GPUs and filling up.
    setup = [("claim", 0, j) for j in range(CLAIMS)]
    setup += [op for i in range(PODS) for op in (("pod", i, 0), ("nominate", i, i % CLAIMS))]
    for op in [*setup, *ops, ("pass", 0, 0)]:
        fast.step(op)
        plain.step(op)
        assert fast.outcome() == plain.outcome()
