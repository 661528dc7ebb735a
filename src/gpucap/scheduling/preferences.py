"""Relaxing a pod's soft constraints, one step per failed attempt (Karpenter's `Preferences`,
`pkg/controllers/provisioning/scheduling/preferences.go`).

Order: drop the first of several required node-affinity terms (they are ORed; Karpenter tries
them one at a time), then the heaviest preferred pod-affinity, pod-anti-affinity and
node-affinity terms, then one `ScheduleAnyway` topology spread constraint, and finally (only if
some NodePool has a PreferNoSchedule taint) tolerate PreferNoSchedule taints.
Pods are immutable here: each step returns a new pod, or None when nothing is left to relax.
Called by the scheduler.
"""

from __future__ import annotations

from gpucap.apis.core import Affinity, NodeAffinity, NodeSelector, Pod, PodAffinity, Toleration

__all__ = ["drop_required_node_term", "relax", "tolerate_prefer_no_schedule"]

_PREFER_NO_SCHEDULE = Toleration(operator="Exists", effect="PreferNoSchedule")


def _with_affinity(pod: Pod, affinity: Affinity) -> Pod:
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"affinity": affinity})})


def drop_required_node_term(pod: Pod) -> Pod | None:
    aff = pod.spec.affinity
    na = aff.node_affinity if aff else None
    req = na.required_during_scheduling_ignored_during_execution if na else None
    if aff is None or na is None or req is None or len(req.node_selector_terms) <= 1:
        return None
    new_na = na.model_copy(
        update={
            "required_during_scheduling_ignored_during_execution": NodeSelector(
                node_selector_terms=req.node_selector_terms[1:]
            )
        }
    )
    return _with_affinity(pod, aff.model_copy(update={"node_affinity": new_na}))


def _drop_heaviest_pod_term(pod: Pod, field: str) -> Pod | None:
    aff = pod.spec.affinity
    section: PodAffinity | None = getattr(aff, field) if aff else None
    if aff is None or section is None:
        return None
    terms = section.preferred_during_scheduling_ignored_during_execution
    if not terms:
        return None
    ordered = sorted(terms, key=lambda t: -t.weight)  # stable, like sort.SliceStable
    new_section = section.model_copy(
        update={"preferred_during_scheduling_ignored_during_execution": ordered[1:]}
    )
    return _with_affinity(pod, aff.model_copy(update={field: new_section}))


def _drop_heaviest_node_term(pod: Pod) -> Pod | None:
    aff = pod.spec.affinity
    na: NodeAffinity | None = aff.node_affinity if aff else None
    if aff is None or na is None:
        return None
    terms = na.preferred_during_scheduling_ignored_during_execution
    if not terms:
        return None
    ordered = sorted(terms, key=lambda t: -t.weight)
    new_na = na.model_copy(
        update={"preferred_during_scheduling_ignored_during_execution": ordered[1:]}
    )
    return _with_affinity(pod, aff.model_copy(update={"node_affinity": new_na}))


def _drop_schedule_anyway(pod: Pod) -> Pod | None:
    tscs = list(pod.spec.topology_spread_constraints)
    for i, tsc in enumerate(tscs):
        if tsc.when_unsatisfiable == "ScheduleAnyway":
            # Karpenter swaps the last constraint into the removed slot.
            tscs[i] = tscs[-1]
            tscs.pop()
            spec = pod.spec.model_copy(update={"topology_spread_constraints": tscs})
            return pod.model_copy(update={"spec": spec})
    return None


def tolerate_prefer_no_schedule(pod: Pod) -> Pod | None:
    """The pod with an `Exists`/PreferNoSchedule toleration added; None if it already has one."""
    for t in pod.spec.tolerations:
        if t.operator == "Exists" and not t.key and t.effect == "PreferNoSchedule":
            return None
    spec = pod.spec.model_copy(update={"tolerations": [*pod.spec.tolerations, _PREFER_NO_SCHEDULE]})
    return pod.model_copy(update={"spec": spec})


def relax(pod: Pod, *, tolerate_prefer_no_schedule_taints: bool) -> Pod | None:
    """The pod with its next soft constraint removed, or None when nothing is left to relax."""
    steps = [
        drop_required_node_term,
        lambda p: _drop_heaviest_pod_term(p, "pod_affinity"),
        lambda p: _drop_heaviest_pod_term(p, "pod_anti_affinity"),
        _drop_heaviest_node_term,
        _drop_schedule_anyway,
    ]
    if tolerate_prefer_no_schedule_taints:
        steps.append(tolerate_prefer_no_schedule)
    for step in steps:
        relaxed = step(pod)
        if relaxed is not None:
            return relaxed
    return None
