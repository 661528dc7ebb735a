"""The NodeClaim results turned into events: what Karpenter's NodeClaim lifecycle, termination,
interruption, expiration, garbage collection and disruption controllers decided, written to the
event log and passed on to the actors it concerns.

Karpenter's controllers act on the API server and each hears the others through its watches; in
the simulator each controller returns a result record (`LifecycleResult`, `TerminationResult`,
`InterruptionResult`, `DisruptionResult`, `Collected`), and this actor reads it:
- a launch (`launch`, `create_replacement`): `NodeClaimLaunched` and the first `AMIResolved` per
  EC2NodeClass and image, the offerings an insufficient-capacity error marked unavailable
  (`OfferingUnavailable`), `LaunchFailed`; the kubelet hears `claim_launched`, and the
  NodeClaim's expiry is scheduled (`controllers/expiration.py`);
- Initialized: the kubelet hears `claim_initialized`; a requeue asked for: a timer that runs the
  lifecycle controller again (`nodeclaim/lifecycle`);
- termination (`controllers/nodeclaim/termination.py`): evicted pods (`PodEvicted`) leave
  their node and pend again, `NodeClaimDeleted` and `NodeTerminated` when the NodeClaim and
  Node are gone;
- disruption: `DisruptionDecision` per candidate of a decided command, `DisruptionAbandoned`, and
  the NodeClaims being deleted reconciled at once; expiration and garbage collection likewise,
  and a spot interruption warning (`controllers/interruption.py`). What a pass found held back is
  said when it first appears or changes, not every pass (Karpenter's recorder dedupes an
  object's event for 2 minutes, 15 for Unconsolidatable, and says it again after; the simulator
  runs a pass only when something changed, so a repeat would say nothing new):
  `DisruptionBlocked` for a managed node that is no candidate (its message Karpenter's,
  `controllers/disruption/candidates.py`) and `DisruptionUnblocked` when a later pass finds it
  free again (gpucap's: it tells when a block stops being in force); `DisruptionBlocked` for a
  drifted node whose pods would not all schedule elsewhere (drift's, kept apart: only a pass
  that reaches drift frees it); `DisruptionBlocked` for a NodePool whose budget allows 0 for a
  reason (`nodePool`, `reason`), `DisruptionUnblocked` when it allows more; `Unconsolidatable`
  for a node single-node consolidation found no command for, or consolidation turned away
  (consolidation disabled, WhenEmpty and not empty; said again only with another message).
  A pass the simulator skips (no NodePool consolidates, nothing drifted) still says what it
  would have held back, once per cluster change (`Disruption.held_back`);
- termination: an eviction a PodDisruptionBudget refuses is followed from the first refusal;
  `EvictionBlocked` (pod, node, pdb, its maxUnavailable or minAvailable, `since`, `for`) when
  the pod finally goes (evicted, force-deleted at the drain deadline, or released with its
  node) or at the end of the run if it never does (`evicted` false).
The pods a NodeClaim releases pend again at once when it had a Node, else at the pod
controller's requeue (Karpenter's provisioning node controller triggers on a deleting Node only).

Built by the `World` (`sim/world.py`), which wires the bus's `claim_result`, `launch`,
`disrupted` and `collected` here, gives `create_replacement` to the disruption controller and
calls `spot_interrupted` when the scenario interrupts a spot instance. It tells the others
through the bus (`sim/bus.py`): the kubelet (`claim_launched`, `claim_initialized`,
`claim_removed`), kube-scheduler (`pod_left`, `node_removed`, `trigger_bind`) and the pod
controller (`pod_pending`, `pod_requeued`, `trigger_provisioning`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, ZONE
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import base_units
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import InsufficientCapacityError
from gpucap.controllers.disruption.controller import DisruptionResult
from gpucap.controllers.disruption.types import Blocked
from gpucap.controllers.expiration import Expiration
from gpucap.controllers.garbagecollection import Collected
from gpucap.controllers.interruption import Interruption
from gpucap.controllers.nodeclaim.conditions import INITIALIZED, is_true
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle, LifecycleResult
from gpucap.controllers.nodeclaim.termination import TerminationResult
from gpucap.runtime.clock import Clock
from gpucap.sim.bus import (
    GPU_KEYS,
    PRIORITY_CONTROLLER,
    Bus,
    created_now,
    instance_type_options,
    pod_exists,
)
from gpucap.sim.engine import Timer
from gpucap.state.cluster import Cluster
from gpucap.utils.pdb import pdb_key

__all__ = ["NodeClaimEvents"]


class NodeClaimEvents:
    """The NodeClaim controllers' results, read (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        lifecycle: Lifecycle,
        *,
        interruption: Interruption,
        expiration: Expiration,
        aws: AWSCloudProvider,
        ec2: SimulatedEC2,
        nodeclasses: dict[str, EC2NodeClass],
        clock: Clock,
        until: float,
    ) -> None:
        self.bus = bus
        self.engine = bus.engine
        self.cluster = cluster
        self.lifecycle = lifecycle
        self.interruption = interruption
        self.expiration = expiration
        self.aws = aws
        self.ec2 = ec2
        self.nodeclasses = nodeclasses
        self.clock = clock
        self.until = until  # the run's end: an expiry after it is not scheduled
        self._claim_timers: dict[str, Timer] = {}
        self._images_of_class: dict[str, set[str]] = {}  # EC2NodeClass -> images launched
        # What is held back and already said: NodeClaim -> its DisruptionBlocked message in
        # force; (NodePool, reason) blocked by a budget; NodeClaim -> its last Unconsolidatable
        # message.
        self._blocked: dict[str, str] = {}
        self._drift_blocked: dict[str, str] = {}  # drift's, said apart (its own passes)
        self._budget_blocked: set[tuple[str, str]] = set()
        self._unconsolidatable: dict[str, str] = {}
        # pod -> (node, PDB words, first refusal): evictions a PDB holds (`_held`), and
        # whether the end-of-run timer that says the ones still held is set.
        self._evictions_held: dict[str, tuple[str | None, dict[str, Any], float]] = {}
        self._end_timer = False

    # ---- lifecycle -------------------------------------------------------------------------
    def launch(self, name: str, nodepool: str) -> None:
        before = set(self.aws.unavailable.active())
        result = self.lifecycle.reconcile(name)
        self._offerings_marked(before, reason="InsufficientInstanceCapacity")
        self.lifecycle_result(result, nodepool=nodepool)

    def _offerings_marked(self, before: set[str], *, reason: str) -> None:
        for key in sorted(set(self.aws.unavailable.active()) - before):
            capacity_type, instance_type, zone = key.split(":", 2)
            self.bus.emit(
                "OfferingUnavailable",
                instanceType=instance_type,
                zone=zone,
                capacityType=capacity_type,
                reason=reason,
            )

    def lifecycle_result(self, result: LifecycleResult, *, nodepool: str | None = None) -> None:
        name = result.node_claim
        claim = self.cluster.node_claim(name)
        if result.launched and claim is not None:
            self._launched(claim)
        if result.error is not None and not result.deleted:
            self.bus.emit(
                "LaunchFailed",
                nodeClaim=name,
                nodePool=nodepool or "",
                reason=result.error_reason or "LaunchFailed",
                message=result.error_message or result.error,
            )
        if result.deleted is not None and result.termination is None and result.gone:
            if not result.launched and claim is None and nodepool is not None:
                self.bus.emit(
                    "LaunchFailed",
                    nodeClaim=name,
                    nodePool=nodepool,
                    reason=result.deleted,
                    message=result.error or "",
                )
            self.bus.emit("NodeClaimDeleted", nodeClaim=name, reason=result.deleted)
        if result.initialized == "True" or (claim is not None and is_true(claim, INITIALIZED)):
            self.bus.claim_initialized(name)  # once: it returns for a node already initialized
        if result.termination is not None:
            self._terminated(name, result.termination)
        # Pods of a NodeClaim that never had a Node (its launch failed, or it never
        # registered) are not changed by its deletion: nothing but the pod controller's
        # requeue brings them back to the provisioner (Karpenter's provisioning node
        # controller triggers on a deleting Node only). Pods of a node that had one pend now.
        had_node = self.bus.registered_node(name) is not None
        for key in result.released:
            self.bus.pod_left(key)
            if pod_exists(self.cluster, key) and self.cluster.pod(key).spec.node_name is None:
                if had_node:
                    self.bus.pod_pending(key)
                else:
                    self.bus.pod_requeued(key)
        if result.requeue_after is not None and not result.gone:
            self._requeue_claim(name, result.requeue_after)

    def _requeue_claim(self, name: str, after: float) -> None:
        old = self._claim_timers.pop(name, None)
        if old is not None:
            self.engine.cancel(old)
        self._claim_timers[name] = self.engine.after(
            after,
            lambda: self._reconcile_claim(name),
            priority=PRIORITY_CONTROLLER,
            label=f"nodeclaim {name}",
        )

    def reconcile_claim(self, name: str) -> None:
        """Reconcile NodeClaim `name` now (a controller deleted it) and tell what followed."""
        self._reconcile_claim(name)

    def terminated(self, name: str, result: TerminationResult) -> None:
        """What a termination pass of NodeClaim `name` did, told (evictions, removal)."""
        self._terminated(name, result)

    def _reconcile_claim(self, name: str) -> None:
        self._claim_timers.pop(name, None)
        self.lifecycle_result(self.lifecycle.reconcile(name))

    def _launched(self, claim: NodeClaim) -> None:
        labels = claim.metadata.labels
        instance_type = labels.get(INSTANCE_TYPE, "")
        zone = labels.get(ZONE, "")
        capacity_type = labels.get(CAPACITY_TYPE, "")
        nodepool = labels.get(NODEPOOL, "")
        capacity = base_units(claim.status.capacity)
        gpus = sum(capacity.get(r, 0) for r in GPU_KEYS)
        nodeclass = self.nodeclasses.get(claim.spec.node_class_ref.name)
        self.bus.emit(
            "NodeClaimLaunched",
            nodeClaim=claim.name,
            nodePool=nodepool,
            instanceType=instance_type,
            zone=zone,
            capacityType=capacity_type,
            pricePerHour=self._price(claim),
            gpus=gpus,
        )
        seen = self._images_of_class.setdefault(nodeclass.name if nodeclass else "", set())
        if nodeclass is not None and claim.status.image_id and claim.status.image_id not in seen:
            seen.add(claim.status.image_id)
            alias = next((t.alias for t in nodeclass.spec.ami_selector_terms if t.alias), None)
            self.bus.emit(
                "AMIResolved",
                nodeClass=nodeclass.name,
                alias=alias,
                image=claim.status.image_id,
                version=self.ec2.release_of(claim.status.image_id),
            )
        self._schedule_expiry(claim)
        self.bus.claim_launched(claim)

    def _price(self, claim: NodeClaim) -> float:
        """What EC2 bills for the claim's instance (the simulated EC2 priced it at launch)."""
        instance = self.ec2.instances.get((claim.status.provider_id or "").rsplit("/", 1)[-1])
        return instance.price if instance is not None else 0.0

    # ---- disruption, expiration, interruption, garbage collection ----------------------------
    def disrupted(self, result: DisruptionResult) -> None:
        command = result.decided
        if command is not None:
            replacements = [r.name for r in command.replacements]
            # One list for every candidate's event: the events carry equal lists, made once
            # (a pass that deletes hundreds of empty nodes at once made one per candidate).
            candidates = [x.node_claim.name for x in command.candidates]
            for c in command.candidates:
                self.bus.emit(
                    "DisruptionDecision",
                    nodeClaim=c.node_claim.name,
                    node=c.node.metadata.name if c.node is not None else None,
                    nodePool=c.nodepool.name,
                    instanceType=c.instance_type.name if c.instance_type else None,
                    capacityType=c.capacity_type,
                    reason=command.reason,
                    method=command.method,
                    decision=command.decision,
                    candidates=candidates,
                    replacements=replacements,
                    message=command.message,
                )
        for name in result.abandoned:
            self.bus.emit("DisruptionAbandoned", nodeClaim=name)
        self._held_back(result)
        for name in result.deleting:
            self._reconcile_claim(name)
        if result.deleting or result.abandoned:
            self.bus.trigger_provisioning()

    def _held_back(self, result: DisruptionResult) -> None:
        """DisruptionBlocked, DisruptionUnblocked and Unconsolidatable for what this pass
        found that was not said already (see the module docstring)."""
        if result.blocked is not None:
            self._say_blocked(self._blocked, result.blocked)
        if result.drift_blocked is not None:
            self._say_blocked(self._drift_blocked, result.drift_blocked)
        for reason, pools in result.budget_blocked.items():
            for pool, held in sorted(k for k in self._budget_blocked if k[1] == reason):
                if pool not in pools:
                    self._budget_blocked.discard((pool, held))
                    self.bus.emit("DisruptionUnblocked", nodePool=pool, reason=reason)
            for pool in pools:
                if (pool, reason) in self._budget_blocked:
                    continue
                self._budget_blocked.add((pool, reason))
                self.bus.emit(
                    "DisruptionBlocked",
                    nodePool=pool,
                    reason=reason,
                    message=f"No allowed disruptions for disruption reason {reason} due to "
                    "blocking budget",
                )
        for name, message in result.unconsolidatable.items():
            if self._unconsolidatable.get(name) == message:
                continue
            self._unconsolidatable[name] = message
            self.bus.emit(
                "Unconsolidatable",
                nodeClaim=name,
                node=self.bus.registered_node(name),
                message=message,
            )

    def _say_blocked(self, said: dict[str, str], blocked: Mapping[str, Blocked]) -> None:
        """DisruptionUnblocked for the NodeClaims in `said` no longer in `blocked`, and
        DisruptionBlocked for each in `blocked` whose message is new (`said` updated)."""
        for name in [n for n in said if n not in blocked]:
            del said[name]
            if self.cluster.node_claim(name) is not None:
                self.bus.emit(
                    "DisruptionUnblocked", nodeClaim=name, node=self.bus.registered_node(name)
                )
        for name, why in blocked.items():
            message = why.message
            if said.get(name) == message:
                continue
            said[name] = message
            self.bus.emit(
                "DisruptionBlocked",
                nodeClaim=name,
                node=self.bus.registered_node(name),
                **_named(why),
                message=message,
            )

    def create_replacement(self, claim: NodeClaim) -> None:
        """A replacement the disruption controller added to the cluster: launch it now (a
        failed launch raises, which abandons the command)."""
        claim = created_now(claim, self.clock.now())
        self.cluster.update_node_claim(claim)
        nodepool = claim.metadata.labels.get(NODEPOOL, "")
        self.bus.emit(
            "NodeClaimCreated",
            nodeClaim=claim.name,
            nodePool=nodepool,
            **instance_type_options(_instance_types_of(claim)),
            reason="replacement",
        )
        before = set(self.aws.unavailable.active())
        result = self.lifecycle.reconcile(claim.name)
        self._offerings_marked(before, reason="InsufficientInstanceCapacity")
        self.lifecycle_result(result, nodepool=nodepool)
        if result.deleted is not None or result.error is not None:
            raise InsufficientCapacityError(result.error or result.deleted or "launch failed")

    def spot_interrupted(self, name: str) -> None:
        """EC2 sent NodeClaim `name`'s instance its two-minute spot interruption warning:
        Karpenter's interruption controller marks the offering unavailable and deletes the
        NodeClaim (termination drains it)."""
        self.bus.emit(
            "SpotInterruptionWarning", nodeClaim=name, node=self.bus.registered_node(name)
        )
        before = set(self.aws.unavailable.active())
        result = self.interruption.spot_interruption(name)
        self._offerings_marked(before, reason="SpotInterruption")
        if result is not None:
            self.bus.emit("DisruptionDecision", nodeClaim=name, reason="Interrupted")
            if result.termination is not None:
                self._terminated(name, result.termination)

    def collected(self, collected: Collected) -> None:
        """What a garbage collection pass collected: the pods of instances gone pend again,
        the NodeClaims without an instance are deleted."""
        for key in collected.released:
            self.bus.pod_left(key)
            self.bus.pod_pending(key)
        for name in collected.node_claims:
            self.bus.emit("DisruptionDecision", nodeClaim=name, reason="GarbageCollected")
            self._reconcile_claim(name)

    def _schedule_expiry(self, claim: NodeClaim) -> None:
        at = self.expiration.expires_at(claim)
        if at is None:
            return
        t = (at - self.engine.clock_at(0.0)).total_seconds()
        if t <= self.until:
            self.engine.at(
                max(t, self.bus.now),
                self._expire,
                priority=PRIORITY_CONTROLLER,
                label="expiration",
            )

    def _expire(self) -> None:
        for name in self.expiration.reconcile():
            self.bus.emit(
                "DisruptionDecision", nodeClaim=name, reason="Expired", method="expiration"
            )
            self._reconcile_claim(name)

    # ---- termination --------------------------------------------------------------------------
    def _terminated(self, name: str, result: TerminationResult) -> None:
        self._pdb_holds(result)
        for key in result.evicted:
            self.bus.emit("PodEvicted", pod=key, node=result.node, reason=result.reason or "")
            self.bus.pod_left(key)
            if pod_exists(self.cluster, key):
                self.bus.pod_pending(key)
        if result.evicted:
            self.bus.trigger_bind()  # evicted pods already nominated elsewhere bind there
        for key in result.released:
            if key not in result.evicted:
                self.bus.pod_left(key)
                self.bus.pod_pending(key)
        for key in result.deleted_pods:
            self.bus.pod_left(key)
        if result.removed:
            self._unblocked_gone(name)
            self.bus.emit("NodeClaimDeleted", nodeClaim=name, reason=result.reason or "")
            self.bus.emit("NodeTerminated", nodeClaim=name, node=result.node)
            self.bus.claim_removed(name)
            node = result.node or name
            self.bus.node_removed(node)
        elif result.requeue_after is not None:
            self._requeue_claim(name, result.requeue_after)
        self.bus.trigger_provisioning()

    def _unblocked_gone(self, name: str) -> None:
        """A NodeClaim gone: what was said of it is no longer in force."""
        self._blocked.pop(name, None)
        self._unconsolidatable.pop(name, None)

    def _pdb_holds(self, result: TerminationResult) -> None:
        """The evictions a PodDisruptionBudget refused in this drain pass start being followed
        (a back-off between refusals keeps them held); those held that went now, evicted,
        force-deleted or released with their node, get their `EvictionBlocked`."""
        now = self.bus.now
        refused = dict(result.blocked)
        for key, why in result.blocked:
            if key in self._evictions_held or not (
                why.startswith("pdb ") or why == "multiple pdbs"
            ):
                continue
            self._evictions_held[key] = (result.node, self._pdb_fields(why), now)
            if not self._end_timer:
                self._end_timer = True
                self.engine.at(
                    self.until,
                    self._evictions_never_passed,
                    priority=PRIORITY_CONTROLLER + 100,
                    label="evictions held at the end",
                )
        gone = (*result.evicted, *result.deleted_pods, *result.released, *result.force_deleted)
        for key in dict.fromkeys(gone):
            held = self._evictions_held.pop(key, None)
            if held is not None:
                self._eviction_blocked(key, held, evicted=True)
        if result.node is None:
            return
        for key, held in list(self._evictions_held.items()):
            # A held pod of this node's drain, neither refused nor gone now, left another way
            # (its workload deleted it): no eviction to tell of.
            if (
                held[0] == result.node
                and key not in refused
                and (
                    not pod_exists(self.cluster, key)
                    or self.cluster.pod(key).spec.node_name != result.node
                )
            ):
                del self._evictions_held[key]

    def _pdb_fields(self, why: str) -> dict[str, Any]:
        """What an EvictionBlocked event says of the PodDisruptionBudget that refused the
        eviction ("pdb ns/name"): `pdb` and its `maxUnavailable` or `minAvailable`;
        `multiplePDBs` when two or more select the pod."""
        if not why.startswith("pdb "):
            return {"pdb": None, "multiplePDBs": True}
        key = why.removeprefix("pdb ")
        fields: dict[str, Any] = {"pdb": key}
        for pdb in self.cluster.pdbs():
            if pdb_key(pdb) == key:
                spec = pdb.spec
                if spec.max_unavailable is not None:
                    fields["maxUnavailable"] = spec.max_unavailable
                elif spec.min_available is not None:
                    fields["minAvailable"] = spec.min_available
        return fields

    def _eviction_blocked(
        self, key: str, held: tuple[str | None, dict[str, Any], float], *, evicted: bool
    ) -> None:
        node, pdb, since = held
        # The words of Karpenter's FailedDraining warning on the Node (terminator/eviction.go).
        why = (
            "eviction does not support multiple PDBs"
            if pdb.get("multiplePDBs")
            else "evicting pod violates a PDB"
        )
        self.bus.emit(
            "EvictionBlocked",
            pod=key,
            node=node,
            **pdb,
            since=since,
            evicted=evicted,
            message=f"Failed to drain node, {why} (Pod={key})",
            **{"for": self.bus.now - since},
        )

    def _evictions_never_passed(self) -> None:
        """The end of the run: the evictions still held, said with how long so far."""
        for key, held in sorted(self._evictions_held.items()):
            self._eviction_blocked(key, held, evicted=False)
        self._evictions_held.clear()


def _named(why: Blocked) -> dict[str, str]:
    """A DisruptionBlocked event's objects from its reason's structured values: `pod`,
    `pdb` (or `pdbs`), `label`."""
    words = {"Pod": "pod", "PodDisruptionBudget": "pdb", "PodDisruptionBudget(s)": "pdbs"}
    return {words.get(k, k): v for k, v in why.values}


def _instance_types_of(claim: NodeClaim) -> list[str]:
    for req in claim.spec.requirements:
        if req.key == INSTANCE_TYPE and req.operator == "In":
            return list(req.values)
    return []
