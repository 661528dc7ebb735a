"""Karpenter's pod controller and provisioning trigger in the simulator: a pending pod opens or
extends the batch window, the provisioner runs when it closes, and its results become
nominations, new NodeClaims (launched through the NodeClaim events) and pending reasons.

- `pending` / `requeued`: a pod became pending (created, evicted, its node gone) or is pending
  again unchanged (its NodeClaim failed before it had a Node); the first opens the batch
  (`Batcher`, Karpenter's `provisioning/batcher.go`), the second waits for the pod
  controller's requeue.
- `_retrigger`: Karpenter's pod controller requeues a provisionable pod every 10 s
  (`provisioning/controller.go`; karpenter-provisioning.md §3.1); a pass whose inputs (the
  bus's version and the insufficient-capacity marks) are those of the last pass is skipped,
  since the solve is deterministic and would decide the same.
- `_provision`: one `Provisioner.schedule` pass over the Ready NodePools (`ready_nodepools`,
  announcing `NodePoolNotReady`/`NodePoolReady`) with the pending pods and those of nodes being
  deleted (`deleting_node_pods`); pods placed on existing nodes are nominated (or bound at once
  on a node no NodeClaim owns), new NodeClaims are created and launched, and the pods that did
  not schedule get `PodUnschedulable` (once per reason) and `LimitReached` for the NodePools
  whose limits stopped them.

Built by the `World` (`sim/world.py`), which wires the bus's `pod_pending`, `pod_requeued`,
`pod_bound` and `trigger_provisioning` here and registers `pod_trigger` with the engine; the
disruption controller reads `ready_nodepools`. It tells the others through the bus
(`sim/bus.py`): `launch` (the NodeClaim events), `bind` and `trigger_bind` (kube-scheduler).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpucap.apis.automode import AUTO_MODE
from gpucap.apis.core import Pod
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.nodepool import NodePool
from gpucap.apis.quantity import base_units
from gpucap.cloudprovider.aws.automode import auto_mode_instance_types
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.controllers.nodepool.readiness import (
    NodePoolReadiness,
    NotReadyNodePool,
    UnmanagedNodePool,
    ready_nodepools,
    with_not_ready,
)
from gpucap.controllers.provisioning.batcher import Batcher
from gpucap.controllers.provisioning.loop import not_planned
from gpucap.controllers.provisioning.provisioner import Provisioner, deleting_node_pods
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.scheduler import Results
from gpucap.sim.bus import Bus, Loop, created_now, instance_type_options, pod_exists
from gpucap.sim.recorder import Event
from gpucap.state.cluster import Cluster
from gpucap.utils.pdb import Limits

__all__ = ["POD_RETRY_SECONDS", "PodController"]

# Karpenter's pod controller requeues a provisionable pod every 10 s
# (pkg/controllers/provisioning/controller.go; karpenter-provisioning.md §3.1).
POD_RETRY_SECONDS = 10.0


class PodController:
    """The pod controller, batcher and provisioner pass (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        provisioner: Provisioner,
        aws: AWSCloudProvider,
        *,
        nodeclasses: dict[str, EC2NodeClass],
        clock: Clock,
        names: Callable[[str], str],
    ) -> None:
        self.bus = bus
        self.engine = bus.engine
        self.cluster = cluster
        self.provisioner = provisioner
        self.aws = aws
        self.nodeclasses = nodeclasses
        self.clock = clock
        self.names = names  # the next NodeClaim name of a NodePool
        self.batcher = Batcher()
        self._provisioning = Loop("provisioner", self._provision)
        self.pod_trigger = Loop("provisioning.pods", self._retrigger)
        self._reasons: dict[str, str] = {}  # pod -> last PodUnschedulable reason
        # The not Ready NodePools announced so far (`ready_nodepools`).
        self._nodepool_readiness = _Announced()
        # NodePools of EKS Auto Mode or the KWOK provider (`ready_nodepools`), and Auto Mode's
        # instance types once one is seen: pods they would take are not simulated.
        self._unmanaged: list[UnmanagedNodePool] = []
        self._auto_mode_types: tuple[InstanceType, ...] | None = None
        self._limited: set[str] = set()  # NodePools whose limit stopped a pod
        self._last_pass: tuple[int, tuple[str, ...]] | None = None
        # Pods that became pending and may still be (the pod controller's retrigger reads it).
        self._maybe_pending: set[str] = set()

    def pending(self, key: str) -> None:
        """Pod `key` is pending (created, evicted, or its NodeClaim went): open or extend the
        batch window and run the provisioner when it closes."""
        self._maybe_pending.add(key)
        self.engine.wake(self.pod_trigger)  # see `_retrigger`
        self.batcher.add(self.bus.now, key)
        self.trigger_provisioning()

    def requeued(self, key: str) -> None:
        """Pod `key` is pending again but nothing about it changed: Karpenter's pod controller
        brings it to the provisioner at its next requeue (`_retrigger`), not at once."""
        self._maybe_pending.add(key)
        self.engine.wake(self.pod_trigger)

    def trigger_provisioning(self) -> None:
        ready = self.batcher.ready_at()
        if ready is None:
            self.batcher.add(self.bus.now)
            ready = self.batcher.ready_at()
            assert ready is not None
        self.engine.trigger(self._provisioning, after=max(0.0, ready - self.bus.now))

    def _retrigger(self) -> float | None:
        """Karpenter's pod controller: a provisionable pod triggers the provisioner every 10 s.
        Nothing the scheduler sees changed since the last pass (the same cluster state and
        insufficient-capacity marks): that pass's answer stands, so no trigger. No pod
        became pending since the last look: nothing to trigger for either (most runs), and
        every run every 10 s would come here again until `pending` adds a pod: the engine
        holds them until it wakes this one (`Engine.idle`: the same grid of times)."""
        if not self._maybe_pending:
            self.engine.idle(self.pod_trigger, POD_RETRY_SECONDS)
            return None
        self.aws.unavailable.expire()
        if (self.bus.version, tuple(self.aws.unavailable.active())) == self._last_pass:
            return POD_RETRY_SECONDS
        nominated = self.cluster.nominations()
        still = {
            key
            for key in self._maybe_pending
            if pod_exists(self.cluster, key)
            and not self.cluster.pod(key).spec.node_name
            and key not in nominated
        }
        self._maybe_pending = still
        if still:
            self.trigger_provisioning()
        return POD_RETRY_SECONDS

    def _provision(self) -> float | None:
        ready = self.batcher.ready_at()
        if ready is None:
            return None
        if ready > self.bus.now:
            return ready - self.bus.now
        self.batcher.reset()
        self.aws.unavailable.expire()
        marks = tuple(self.aws.unavailable.active())
        fingerprint = (self.bus.version, marks)
        if fingerprint == self._last_pass:
            return None
        deleting = bool(self.cluster.marked_for_deletion())
        if not deleting and not self.cluster.has_pending():
            # No pod to schedule: the pass would stop here, without the snapshot.
            self._last_pass = fingerprint
            return None
        snap = self.cluster.snapshot()
        pending = list(snap.pending)
        if deleting:
            nominated = self.cluster.nominations()
            limits = Limits.of(self.cluster)
            pending += deleting_node_pods(snap.nodes, self.clock.now(), limits, skip=nominated)
        if not pending:
            self._last_pass = fingerprint
            return None
        pools = self.ready_nodepools()
        results = self.provisioner.schedule(
            pools,
            state_nodes=snap.nodes,
            daemonsets=self.cluster.daemonsets(),
            pending=pending,
        )
        for existing in results.existing_nodes:
            for pod in existing.pods:
                self._nominate(pod.key, existing.name)
        claims = self.provisioner.node_claims(results, names=self.names)
        for planned, unstamped in zip(results.new_node_claims, claims, strict=True):
            claim = created_now(unstamped, self.clock.now())
            self.cluster.add_node_claim(claim)
            self.bus.emit(
                "NodeClaimCreated",
                nodeClaim=claim.name,
                nodePool=planned.nodepool,
                **instance_type_options([it.name for it in planned.instance_types]),
            )
            for pod in planned.pods:
                self._nominate(pod.key, claim.name)
            self.bus.launch(claim.name, planned.nodepool)
        errors = self._not_ready_reasons(
            {key: str(error) for key, error in results.pod_errors.items()}
        )
        if self._unmanaged:
            errors = self._not_planned(errors)
        self._unschedulable(errors, results)
        # A later pass is skipped only when its inputs equal this pass's inputs *before* it
        # ran: what the pass itself did (nominations, NodeClaims, a launch that failed and
        # marked offerings unavailable and put its pods back) is new input for the next one,
        # as for Karpenter, whose next batch schedules with those marks (the on-demand
        # fallback after an insufficient-capacity error). A pass that did nothing changes
        # nothing, so the next one, with the same inputs, is skipped.
        self._last_pass = fingerprint
        self.bus.trigger_bind()
        return None

    def ready_nodepools(self) -> list[NodePool]:
        """The NodePools Karpenter's provisioner uses: the Ready ones (`ready_nodepools`, with
        Karpenter's policy for a missing EC2NodeClass and each class's readiness from the AMIs
        it resolves now). A NodePool that turns not Ready is announced once
        (`NodePoolNotReady`, with Karpenter's reason and why), and `NodePoolReady` when it is
        Ready again; the provisioner ignores it meanwhile, so it gets no NodeClaim."""
        readiness = ready_nodepools(
            self.cluster.nodepools(),
            {name: self.aws.nodeclass_readiness(nc) for name, nc in self.nodeclasses.items()},
            missing_class="skip",
        )
        self._nodepool_readiness.update(readiness, self.cluster.nodepool, self.bus.emit)
        self._unmanaged = readiness.unmanaged
        return readiness.ready

    def _not_planned(self, errors: Mapping[str, str]) -> dict[str, str]:
        """The pending reasons of the pods no NodePool of another Karpenter (EKS Auto Mode, the
        KWOK provider) would take; each pod one would take gets `PodNotPlanned` once (served
        by that Karpenter, not simulated) instead of `PodUnschedulable`."""
        out: dict[str, str] = {}
        auto_types = self._auto_types()
        for key, reason in errors.items():
            try:
                pod = self.cluster.pod(key)
            except KeyError:
                out[key] = reason
                continue
            np = not_planned(pod, self._unmanaged, auto_types)
            if np is None:
                out[key] = reason
                continue
            if self._reasons.get(key) != np.reason:
                self._reasons[key] = np.reason
                self.bus.emit(
                    "PodNotPlanned",
                    pod=key,
                    nodePool=np.nodepools[0],
                    servedBy=np.served_by,
                    reason=np.reason,
                )
        return out

    def _auto_types(self) -> Sequence[InstanceType]:
        """EKS Auto Mode's instance types (built when an Auto Mode pool is first seen; none
        without one)."""
        if not any(u.served_by == AUTO_MODE for u in self._unmanaged):
            return ()
        if self._auto_mode_types is None:
            self._auto_mode_types = auto_mode_instance_types(self.aws.catalog)
        return self._auto_mode_types

    def _nominate(self, pod_key: str, target: str) -> None:
        claim = self.cluster.node_claim(target)
        if claim is None:
            # An existing node Karpenter does not manage: kube-scheduler binds there at once
            # (a pod still on a node being deleted binds once evicted, wherever there is room).
            if not self.cluster.pod(pod_key).spec.node_name:
                self.bus.bind(pod_key, target)
            return
        self.cluster.nominate(pod_key, target)
        self._reasons.pop(pod_key, None)
        self.bus.emit("PodNominated", pod=pod_key, nodeClaim=target)

    def forget(self, key: str) -> None:
        """Pod `key` is bound or deleted: a later PodUnschedulable for it is new again."""
        self._reasons.pop(key, None)

    def _unschedulable(self, errors: Mapping[str, str], results: Results) -> None:
        """`PodUnschedulable` for each pod in `errors` (pod key -> the reason shown) whose
        reason is new, and `LimitReached` for each NodePool whose limits now stop one of them
        (from `results`' typed errors: which pools, not what the text says)."""
        for key, reason in errors.items():
            if self._reasons.get(key) != reason:
                self._reasons[key] = reason
                self.bus.emit("PodUnschedulable", pod=key, reason=reason)
        limited = set(results.limited_pools(errors))
        for pool in sorted(limited - self._limited):
            usage = self.cluster.nodepool_usage(pool)
            np = self.cluster.nodepool(pool)
            limits = base_units(np.spec.limits) if np is not None and np.spec.limits else {}
            parts = [f"{r} {usage.get(r, 0)}/{v}" for r, v in sorted(limits.items())]
            self.bus.emit(
                "LimitReached",
                nodePool=pool,
                resource=",".join(sorted(limits)),
                message=f"limits ({', '.join(parts)}) stop new NodeClaims",
            )
        self._limited = limited

    def _not_ready_reasons(self, errors: Mapping[str, str]) -> dict[str, str]:
        """A pass's pending reasons with a part naming each not Ready NodePool that could take the
        pod (`readiness.with_not_ready`), for `_unschedulable`."""
        announced = self._nodepool_readiness
        if not announced.not_ready:
            return dict(errors)
        cluster = self.cluster

        def pod_of(key: str) -> Pod | None:
            try:
                return cluster.pod(key)
            except KeyError:
                return None

        return with_not_ready(errors, pod_of, announced.not_ready)


@dataclass(slots=True)
class _Announced:
    """The not Ready NodePools the log has announced (`PodController.ready_nodepools`), by name, and
    the current ones' entries (which pending pods' reasons name: `readiness.with_not_ready`)."""

    said: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (reason, message)
    not_ready: list[NotReadyNodePool] = field(default_factory=list)

    def update(
        self,
        readiness: NodePoolReadiness,
        nodepool_of: Callable[[str], NodePool | None],
        emit: Callable[..., Event],
    ) -> None:
        """Emit `NodePoolNotReady` for each pool that became not Ready (or whose reason
        changed) and `NodePoolReady` for each announced one that is Ready again."""
        self.not_ready = list(readiness.not_ready)
        now = {p.name: p for p in readiness.not_ready}
        for name in [n for n in self.said if n not in now]:
            del self.said[name]
            if nodepool_of(name) is not None:
                emit("NodePoolReady", nodePool=name)
        for name, pool in now.items():
            if self.said.get(name) == (pool.reason, pool.message):
                continue
            self.said[name] = (pool.reason, pool.message)
            emit(
                "NodePoolNotReady",
                nodePool=name,
                nodeClass=pool.nodeclass,
                reason=pool.reason,
                message=pool.message,
            )
