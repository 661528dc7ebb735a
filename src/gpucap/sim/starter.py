"""A starter Scenario over a user's own manifests: what `gpucap simulate --init FILES...` prints.

Writing a first scenario means knowing the format (docs/scenario.md) before seeing anything run.
`starter_scenario` writes one that runs as it is and reads as a template: the files that hold only
workloads (pods and what makes them) are applied 5 minutes in, everything else (NodePools,
EC2NodeClasses, DaemonSets, ...) is there from the start; the first scalable workload is scaled
up at 1h05m, while spot capacity of the GPU families the NodePools can launch is gone in one
zone from 1h for an hour (on-demand when no GPU pool allows spot), so Karpenter's
insufficient-capacity cache and fallback show; at 4h the workload scales to zero and
consolidation has four hours to empty the fleet. Every event carries a comment saying what it
is for. Paths are written as given (relative to where the command runs: write the scenario
beside them, or edit them).

Called by `cli/simulate.py`; the families come from `plan`'s provider stack
(`operator/plan.py` `pools_for`), so they are the types Karpenter could launch for each pool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gpucap.apis.core import Pod
from gpucap.apis.expansion import POD_CREATORS, PodCreator, pod_groups
from gpucap.apis.gpu import GPU_RESOURCES
from gpucap.apis.labels import CAPACITY_TYPE
from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.resolve import offered_zones
from gpucap.operator.plan import pools_for
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate

__all__ = ["starter_scenario"]

_SCALABLE = ("Deployment", "ReplicaSet", "StatefulSet", "LeaderWorkerSet")


def _flow(value: object) -> str:
    """A YAML flow value: JSON is YAML, and quotes only what needs them."""
    return json.dumps(value)


def _ref(w: PodCreator) -> str:
    """A scale event's object reference, as flow-YAML fields."""
    namespace = w.metadata.namespace or "default"
    return f"kind: {w.kind}, name: {_flow(w.metadata.name)}, namespace: {_flow(namespace)}"


def _workload_only(kinds: set[str]) -> bool:
    return bool(kinds) and all(k == "Pod" or k in {c.__name__ for c in POD_CREATORS} for k in kinds)


def _gpu_families(manifests: Manifests, catalog: Catalog) -> tuple[list[str], str]:
    """The instance families of the GPU types the input's NodePools can launch, and the capacity
    type to take away (spot when a GPU pool allows it)."""
    families: dict[str, None] = {}
    spot = False
    for pool in pools_for(manifests, catalog, []):
        reqs = NodeClaimTemplate.from_nodepool(pool.nodepool).requirements
        gpu_types = [
            it
            for it in pool.instance_types
            if any(it.capacity.get(r, 0) > 0 for r in GPU_RESOURCES) and it.is_compatible(reqs)
        ]
        for it in gpu_types:
            families.setdefault(it.name.split(".", 1)[0])
        capacity = reqs.get(CAPACITY_TYPE) if CAPACITY_TYPE in reqs else None
        if gpu_types and capacity is not None and capacity.has("spot"):
            spot = True
    return list(families), "spot" if spot else "on-demand"


def _zone(catalog: Catalog, family: str) -> str | None:
    """The first zone (by name) of the region where some type of `family` is offered."""
    zones: set[str] = set()
    for info in catalog.infos:
        if info.family == family:
            zones |= offered_zones(info, catalog.region, catalog.zones)
    return min(zones) if zones else None


def starter_scenario(
    paths: Sequence[str], manifests: Manifests, catalog: Catalog, *, name: str = "starter"
) -> str:
    """The starter scenario's YAML text over the files `paths` (as given) holding `manifests`
    (see the module docstring)."""
    kinds_of: dict[str, set[str]] = {p: set() for p in paths}
    for m in manifests.items:
        for p in paths:
            if m.source.file == p or m.source.file.startswith(p.rstrip("/") + "/"):
                kinds_of[p].add(m.obj.kind)
                break
    workload_files = [p for p in paths if _workload_only(kinds_of[p])]
    initial = [p for p in paths if p not in workload_files]
    scalable = [w for w in manifests.workloads if w.kind in _SCALABLE]
    families, capacity_type = _gpu_families(manifests, catalog)
    gpu_pods = any(isinstance(m.obj, (Pod, *POD_CREATORS)) for m in manifests.items)

    out = [
        "# A starter scenario written by `gpucap simulate --init` over:",
        *(f"#   {p}" for p in paths),
        "# Run it: gpucap simulate scenario.yaml   Edit the times and numbers; the format is in",
        "# docs/scenario.md. Paths are relative to this file: keep it where you ran --init.",
        "apiVersion: gpucap.dev/v1alpha1",
        "kind: Scenario",
        f"metadata: {{name: {name}}}",
        "spec:",
        f"  region: {catalog.region}",
        "  duration: 8h",
        "  # What the cluster has from the start: NodePools, EC2NodeClasses, DaemonSets, ...",
        f"  manifests: {_flow(initial)}",
    ]
    if families:
        out += [
            "  # Installed outside these manifests (with Helm)? Declare it, or GPU nodes never",
            "  # advertise their GPUs (drop this if the manifests carry the device plugin).",
            "  addons: [{name: nvidia-device-plugin}]",
        ]
    out.append("  events:")
    events = 0
    for f in workload_files:
        out += [
            "    # Your workloads arrive: Karpenter provisions for their pending pods.",
            f"    - {{at: 5m, apply: {{file: {_flow(f)}}}}}",
        ]
        events += 1
    for family in families:
        zone = _zone(catalog, family)
        where = f", zone: {zone}" if zone else ""
        out += [
            f"    # {capacity_type.capitalize()} {family} is gone"
            + (f" in {zone}" if zone else "")
            + " for an hour: launches there fail,",
            "    # Karpenter marks the offerings unavailable for 3 minutes and falls back to",
            "    # the next zone, type or capacity type.",
            f"    - {{at: 1h, capacity: {{instanceFamily: {family}{where}, "
            f"capacityType: {capacity_type}, available: false, for: 1h}}}}",
        ]
        events += 1
    if scalable:
        w = scalable[0]
        replicas = sum(g.count for g in pod_groups(w))
        ref = _ref(w)
        more = max(2 * replicas, replicas + 1)
        out += [
            f"    # Demand doubles during the outage: {w.kind} {w.metadata.name} goes from "
            f"{replicas} to {more} replicas.",
            f"    - {{at: 1h05m, scale: {{{ref}, replicas: {more}}}}}",
        ]
        events += 1
    if scalable:
        ref = _ref(scalable[0])
        out += [
            "    # Scale to zero: watch consolidation (or its absence) empty the GPU nodes.",
            f"    - {{at: 4h, scale: {{{ref}, replicas: 0}}}}",
        ]
        events += 1
    if not events:
        out[-1] = "  events: []"
        if not gpu_pods:
            out.append("  # No workload in the input: add one with an apply event.")
    return "\n".join(out) + "\n"
