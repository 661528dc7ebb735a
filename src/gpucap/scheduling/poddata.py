"""What the scheduler reads of a pod: its requests and its node requirements, read once.

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/scheduler.go` @ 2266468104f3
keeps a `PodData` per pod (`updateCachedPodData`: requests, requirements and strict
requirements) so that the many targets a pod is tried on do not read it again;
`pkg/scheduling/requirements.go` `NewPodRequirements`/`NewStrictPodRequirements` build the
requirements, and `pkg/controllers/provisioning/provisioner.go` `Validate` says which pods the
scheduler takes at all (`validate_pod`).

Part of the scheduler's vocabulary: read by the scheduler, its targets, the DaemonSet overhead
(`nodeclaimtemplate.py`), the provisioner, lint and readiness; it imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpucap.apis.core import Pod, PodSpec
from gpucap.apis.labels import NODEPOOL, restricted_label_problem
from gpucap.scheduling.hostports import HostPort, host_ports
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources, pod_requests

__all__ = ["PodData", "pod_data", "pod_requirements", "validate_pod"]


@dataclass(frozen=True, slots=True)
class PodData:
    """A pod's requests (plus `pods: 1`), its requirements with and without the preferred
    node-affinity term, and its host ports (`pod_data`)."""

    requests: Resources
    requirements: Requirements
    strict_requirements: Requirements
    # The pod's host ports, read once: every target the pod is tried on asks for them.
    ports: tuple[HostPort, ...]


def pod_requirements(pod: Pod, *, strict: bool = False) -> Requirements:
    """Karpenter's `NewPodRequirements`: nodeSelector, the heaviest preferred node-affinity term
    (unless `strict`), and the first required node-affinity term."""
    reqs = Requirements.from_labels(pod.spec.node_selector)
    aff = pod.spec.affinity
    if aff is None or aff.node_affinity is None:
        return reqs
    na = aff.node_affinity
    preferred = na.preferred_during_scheduling_ignored_during_execution
    if not strict and preferred:
        heaviest = sorted(preferred, key=lambda t: -t.weight)[0]
        reqs = reqs.merge(Requirements.from_node_selector(heaviest.preference.match_expressions))
    required = na.required_during_scheduling_ignored_during_execution
    if required is not None and required.node_selector_terms:
        first = required.node_selector_terms[0]
        reqs = reqs.merge(Requirements.from_node_selector(first.match_expressions))
    return reqs


def pod_data(
    pod: Pod,
    options: SchedulingOptions,
    requests_of: Callable[[PodSpec], Resources] = pod_requests,
) -> PodData:
    """What the scheduler reads of `pod` under `options` (see `PodData`). `requests_of` gives a
    spec's requests as a new dict: `pod_requests`, or the scheduler's `PassCache.pod_requests`,
    which keeps them per spec for the run."""
    strict = pod_requirements(pod, strict=True)
    aff = pod.spec.affinity
    preferred = (
        aff is not None
        and aff.node_affinity is not None
        and bool(aff.node_affinity.preferred_during_scheduling_ignored_during_execution)
    )
    # Without preferred node-affinity terms both readings are the same set.
    requirements = (
        pod_requirements(pod) if preferred and options.preference_policy != "Ignore" else strict
    )
    requests = requests_of(pod.spec)  # a new dict: Karpenter's `pods: 1` is added in place
    requests["pods"] = requests.get("pods", 0) + 1
    return PodData(requests, requirements, strict, host_ports(pod))


def validate_pod(pod: Pod) -> str | None:
    """Why Karpenter would not consider a pending pod at all (`provisioner.go: Validate`)."""
    if pod.spec.resource_claims:
        return (
            "pod has Dynamic Resource Allocation requirements that are not yet supported by "
            "Karpenter"
        )
    keys = list(pod.spec.node_selector)
    aff = pod.spec.affinity
    if aff is not None and aff.node_affinity is not None:
        req = aff.node_affinity.required_during_scheduling_ignored_during_execution
        for term in req.node_selector_terms if req else []:
            if term.match_fields:
                return "node selector term with matchFields is not supported"
            keys += [e.key for e in term.match_expressions]
        for pref in aff.node_affinity.preferred_during_scheduling_ignored_during_execution:
            keys += [e.key for e in pref.preference.match_expressions]
    for key in keys:
        problem = restricted_label_problem(key)
        if problem and key != NODEPOOL:
            return f"invalid node selector or affinity: {problem}"
    return None
