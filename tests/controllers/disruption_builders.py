"""Set-up for the disruption tests: a Cluster with NodePools and pods, running nodes made
through the real lifecycle (launch, register, initialize) over a FakeCloudProvider, the
termination controller, a FakeClock, and a `Disruption` whose replacements launch through
the same lifecycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpucap.apis.core import Pod
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from gpucap.apis.nodepool import NodeClaim
from gpucap.cloudprovider.types import CloudProvider, FakeCloudProvider, node_claim_for
from gpucap.controllers.disruption.controller import Disruption, DisruptionResult
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.nodeclaim.podevents import PodEvents
from gpucap.controllers.nodeclaim.registering import advertise, registering_node
from gpucap.controllers.nodeclaim.termination import Termination
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.cluster import Cluster
from tests.builders import DELETE, GPU_TOLERATION, edit, load, nodepool, pod
from tests.scheduling.builders import GPU_TYPES

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def pool(
    name: str = "gpu",
    *,
    policy: str = "WhenEmptyOrUnderutilized",
    after: str = "0s",
    capacity_types: tuple[str, ...] = ("on-demand",),
) -> dict[str, Any]:
    """A GPU NodePool with no requirement but the capacity types, no limits, and the given
    consolidation policy and consolidateAfter."""
    doc = edit(
        nodepool(name),
        "spec.template.spec.requirements",
        [{"key": CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)}],
    )
    doc = edit(doc, "spec.limits", DELETE)
    return edit(doc, "spec.disruption", {"consolidationPolicy": policy, "consolidateAfter": after})


def gpu_pod(name: str, gpus: int = 1, **kw: Any) -> dict[str, Any]:
    kw.setdefault("tolerations", [GPU_TOLERATION])
    return pod(name, gpu=gpus, **kw)


def unlimited(cluster: Cluster, reason: str, **_: object) -> dict[str, int]:
    """A budget mapping letting every NodePool disrupt 100 nodes."""
    return {np.name: 100 for np in cluster.nodepools()}


@dataclass
class Env:
    cluster: Cluster
    provider: CloudProvider
    clock: FakeClock
    lifecycle: Lifecycle
    termination: Termination
    disruption: Disruption
    podevents: PodEvents
    launched: list[str] = field(default_factory=list)

    def node(
        self,
        name: str,
        instance_type: str,
        *,
        capacity_type: str = "on-demand",
        zone: str = "us-east-1a",
        nodepool: str = "gpu",
        gpus: int = 1,
        pods: tuple[str, ...] = (),
        annotations: dict[str, str] | None = None,
    ) -> str:
        """A NodeClaim of `instance_type` launched, registered and initialized as Node `name`,
        with `pods` bound to it."""
        reqs = Requirements.of(
            Requirement.new(INSTANCE_TYPE, "In", [instance_type]),
            Requirement.new(CAPACITY_TYPE, "In", [capacity_type]),
            Requirement.new(ZONE, "In", [zone]),
        )
        claim = node_claim_for(
            name, nodepool, reqs, {"cpu": 1000, "nvidia.com/gpu": gpus}, node_class="gpu"
        )
        self.cluster.add_node_claim(claim)
        assert self.lifecycle.reconcile(name).launched
        self.initialize(name, annotations=annotations)
        for key in pods:
            self.bind(key, name)
        return name

    def initialize(self, name: str, *, annotations: dict[str, str] | None = None) -> None:
        """Register NodeClaim `name`'s Node (named after it) and advertise its GPUs."""
        nc = self.cluster.node_claim(name)
        assert nc is not None
        gpus = int(str(nc.status.capacity.get("nvidia.com/gpu", 0)))
        node = advertise(registering_node(nc, name), {"nvidia.com/gpu": gpus})
        if annotations:
            meta = node.metadata.model_copy(update={"annotations": annotations})
            node = node.model_copy(update={"metadata": meta})
        result = self.lifecycle.register(node)
        assert result is not None
        assert result.initialized == name, result

    def bind(self, key: str, node: str) -> Pod:
        bound = self.cluster.bind(key, node)
        self.podevents.pod_changed(bound, node)
        return bound

    def reconcile(self) -> DisruptionResult:
        return self.disruption.reconcile()

    def run(self, seconds: float) -> list[DisruptionResult]:
        """Call `reconcile` whenever it asks to be called, for `seconds` of clock time; the
        passes that decided or deleted something."""
        end = self.clock.monotonic() + seconds
        out: list[DisruptionResult] = []
        while True:
            result = self.reconcile()
            if result.decided is not None or result.deleting or result.abandoned:
                out.append(result)
            step = result.requeue_after if result.requeue_after is not None else 10.0
            if self.clock.monotonic() + step > end:
                return out
            self.clock.advance(step)

    def launch(self, claim: NodeClaim) -> None:
        """The world's part for a replacement: launch it through the lifecycle."""
        self.launched.append(claim.name)
        self.lifecycle.reconcile(claim.name)


def env(
    *docs: dict[str, Any],
    types: list[InstanceType] | None = None,
    budgets: Any = unlimited,
    provider: CloudProvider | None = None,
    clock: FakeClock | None = None,
    **options: Any,
) -> Env:
    """NodePools and pods from `docs` over `types` (default: g5.xlarge, g5.2xlarge,
    g5.12xlarge)."""
    loaded = load(*docs)
    assert loaded.errors == [], [str(e) for e in loaded.errors]
    clock = clock or FakeClock()
    cluster = Cluster.from_manifests(loaded.objects, clock=clock)
    cp = provider if provider is not None else FakeCloudProvider(types or GPU_TYPES)
    termination = Termination(cluster, cp, clock)
    lifecycle = Lifecycle(cluster, cp, clock, termination=termination)
    holder: list[Env] = []

    def launch(claim: NodeClaim) -> None:
        holder[0].launch(claim)

    disruption = Disruption(
        cluster,
        Provisioner(cp),
        cp,
        termination,
        clock,
        budgets=budgets,
        on_create=launch,
        **options,
    )
    e = Env(cluster, cp, clock, lifecycle, termination, disruption, PodEvents(cluster, clock))
    holder.append(e)
    return e


def requirement_values(claim: NodeClaim, key: str) -> list[str]:
    reqs = Requirements.from_node_selector(claim.spec.requirements)
    found = reqs.get(key)
    return found.sorted_values() if found is not None else []
