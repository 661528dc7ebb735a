"""Resource lists as integers in base units, and the arithmetic Karpenter does on them.

A `Resources` is a plain `dict[str, int]`: cpu in millicores, memory and storage in bytes,
pods and extended resources (nvidia.com/gpu) as counts. Quantities are parsed once at the
manifest boundary (`apis/quantity.py`); here they are only added, compared and subtracted.

`pod_requests` is Kubernetes' `PodRequests` (k8s.io/component-helpers/resource): containers
summed, sidecars (init containers with `restartPolicy: Always`) added, each ordinary init
container's peak counted as a maximum, pod-level resources overriding cpu/memory, overhead added.
`requests_for_pods` adds Karpenter's `pods: 1` per pod (`pkg/utils/resources/resources.go`).
Called by the scheduler, the CLI summaries and lint rules.

`pod_requests` keeps nothing: a memo of it is the run's (`runtime/memo.py`). The scheduler reads
a pending pod's requests through its `PassCache` (`PassCache.pod_requests`, per `PodSpec`
object: the pods of one template share their spec), the kube-scheduler model and the
consolidation pre-check through their per-run memos (`Cluster.memos`); the other callers (lint,
the CLI, readiness) read a pod once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpucap.apis.core import PodSpec
from gpucap.apis.quantity import base_units

__all__ = [
    "Resources",
    "add",
    "fits",
    "merge_max",
    "pod_requests",
    "requests_for_pods",
    "subtract",
]

Resources = dict[str, int]

# Pod-level resources may set only these (Kubernetes PodLevelResources feature).
_POD_LEVEL = ("cpu", "memory")


def add(*lists: Mapping[str, int]) -> Resources:
    out: Resources = {}
    for rl in lists:
        for k, v in rl.items():
            out[k] = out.get(k, 0) + v
    return out


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    """a - b for every key of a (keys only in b are ignored), may go negative."""
    return {k: v - b.get(k, 0) for k, v in a.items()}


def merge_max(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


def fits(requests: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    """Karpenter's `resources.Fits`: no negative allocatable, and every request <= allocatable
    (a resource missing from allocatable counts as 0)."""
    # Plain loops: asked for every pod on every existing node (and again for the pod
    # classes' lasting refusals), where generator expressions cost more than the comparisons.
    for v in allocatable.values():
        if v < 0:
            return False
    get = allocatable.get
    for k, v in requests.items():  # noqa: SIM110 - a loop, as said above
        if v > get(k, 0):
            return False
    return True


def pod_requests(spec: PodSpec) -> Resources:
    """The resources one pod requests (without Karpenter's `pods: 1`); a new dict each call.
    Pure (`PodSpec` is frozen), so a run may memoise it per spec object (see the module
    docstring)."""
    reqs: Resources = add(*(base_units(c.resources.requests) for c in spec.containers))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for c in spec.init_containers:
        own = base_units(c.resources.requests)
        if c.restart_policy == "Always":
            # A sidecar keeps running next to the app containers and later init containers.
            reqs = add(reqs, own)
            sidecars = add(sidecars, own)
            peak = sidecars
        else:
            peak = add(own, sidecars)
        init_peak = merge_max(init_peak, peak)
    reqs = merge_max(reqs, init_peak)
    if spec.resources is not None:
        level = base_units(spec.resources.requests)
        for name in _POD_LEVEL:
            if name in level:
                reqs[name] = level[name]
    reqs = add(reqs, base_units(spec.overhead))
    return reqs


def requests_for_pods(specs: Iterable[PodSpec]) -> Resources:
    """Summed requests of pods, each also requesting one `pods` slot (Karpenter's accounting)."""
    total: Resources = {}
    for spec in specs:
        total = add(total, pod_requests(spec), {"pods": 1})
    return total
