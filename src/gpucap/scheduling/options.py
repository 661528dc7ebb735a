"""The settings one scheduling pass runs with (Karpenter's scheduler options).

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/scheduler.go` @ 2266468104f3
takes functional options in `NewScheduler` (`IgnorePreferences`, `MinValuesPolicy`,
`IsConsolidationSimulation`, ...), most of them from the operator's settings
(`pkg/operator/options`). gpucap keeps them in one frozen record: the provisioner holds the
operator's (`Provisioner.options`), and a disruption simulation hands the scheduler a copy
that says it is a consolidation simulation (`controllers/disruption/simulation.py`).

Part of the scheduler's vocabulary, below the scheduler and its targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpucap.scheduling.instancetypes import MAX_INSTANCE_TYPES

__all__ = ["SchedulingOptions"]


@dataclass(frozen=True, slots=True)
class SchedulingOptions:
    """Karpenter operator settings that change scheduling (`pkg/operator/options`), and the
    consolidation simulation's option (`IsConsolidationSimulation`).

    `consolidation`: the pass simulates a consolidation. Then an existing node named in
    `held_back` (inside its NodePool's consolidateAfter, `disruption.IsUnderConsolidateAfter`)
    is built as under consolidateAfter and takes none of the pods in `movers`, the keys of the
    pods moving off the candidates; pending pods and pods of deleting nodes may still go there
    (scheduler.go `addToExistingNode`). Karpenter tells those apart by the pod being bound to a
    node that is not deleting; gpucap hands the scheduler every pod unbound, so the caller
    names the movers. New NodeClaims are never held back.

    `reserved_offering_mode` (scheduler.go `ReservedOfferingMode`): `Strict` for the
    provisioner's passes (Karpenter's `DisableReservedCapacityFallback`: a pod that a reservation
    could take but none has room for waits for a later pass instead of going to spot or
    on-demand), `Fallback` (the default) for every other simulation (disruption's).
    """

    preference_policy: Literal["Respect", "Ignore"] = "Respect"
    min_values_policy: Literal["Strict", "BestEffort"] = "Strict"
    max_instance_types: int = MAX_INSTANCE_TYPES
    consolidation: bool = False
    held_back: frozenset[str] = frozenset()
    movers: frozenset[str] = frozenset()
    reserved_offering_mode: Literal["Fallback", "Strict"] = "Fallback"
