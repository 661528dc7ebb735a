"""Why a filter of `Scheduler.explain` left no instance type: one line per cause.

Karpenter's own messages say that nothing was left ("no instance type met all requirements")
but not what ruled the types out. `Scheduler.explain` (behind `gpucap plan --explain`) traces the
scheduler's filter steps (`filter.py`), counting the types surviving each; when a step empties
the list, these functions (the steps' `why_none`) name the cause from what the earlier steps let
through: the pod requirement no type has a value for (with the values the types do have), the
resource larger than any type's allocatable, the zones and capacity types that have offerings,
the limit below the smallest type. This goes further than Karpenter on purpose
(docs/design/scheduling.md). `PoolExplanation` is the answer per NodePool, which
`plan --explain` renders (`cli/render.py`, `report/plan.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.apis.quantity import format_resource_value
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources

__all__ = [
    "PoolExplanation",
    "limit_causes",
    "offering_causes",
    "requirement_causes",
    "resource_causes",
]

_MAX_VALUES = 8  # enough to recognise the choices, short enough for one line


@dataclass(frozen=True, slots=True)
class PoolExplanation:
    """Why a NodePool could or could not take a pod: instance types left after each filter."""

    nodepool: str
    weight: int
    steps: list[tuple[str, int]]
    verdict: str
    # When a filter leaves nothing: what ruled the types out (the functions below).
    causes: list[str] = field(default_factory=list)


def _values(values: Iterable[str]) -> str:
    ordered = sorted(set(values))
    more = len(ordered) - _MAX_VALUES
    head = ", ".join(ordered[:_MAX_VALUES])
    return f"{head} and {more} more" if more > 0 else head


def _left(n: int) -> str:
    return "the only instance type left" if n == 1 else f"the {n} instance types left"


def _verb(n: int, singular: str, plural: str) -> str:
    return singular if n == 1 else plural


def _or_combined(causes: list[str], types: Sequence[InstanceType], combined: str) -> list[str]:
    # No single requirement, resource or limit rules every type out: only their combination does.
    return causes if causes or not types else [combined]


def requirement_causes(types: Sequence[InstanceType], pod_reqs: Requirements) -> list[str]:
    """The pod requirements that no type in `types` meets, each with the values they have."""
    causes = []
    for key in sorted(pod_reqs):
        wanted = pod_reqs.get_or_exists(key)
        offered = [it.requirements.get(key) for it in types]
        defined = [r for r in offered if r is not None]
        if not defined:
            continue  # a label the types do not define: Karpenter matches it against the pool
        if any(r.has_intersection(wanted) for r in defined):
            continue
        values = [v for r in defined if not r.complement for v in r.values]
        have = _values(values) if values else "no value for it"
        causes.append(f"{wanted}: {_left(len(types))} {_verb(len(types), 'has', 'have')} {have}")
    return _or_combined(
        causes,
        types,
        "each pod requirement is met by some instance type, but no single type meets all of "
        "them together",
    )


def resource_causes(types: Sequence[InstanceType], needed: Resources) -> list[str]:
    """The requested resources (pod plus the smallest DaemonSet overhead) larger than the
    largest allocatable among `types`."""
    causes = []
    for resource in sorted(needed):
        want = needed[resource]
        if want <= 0:
            continue
        largest = max((it.allocatable.get(resource, 0) for it in types), default=0)
        if want > largest:
            causes.append(
                f"{resource}: needs {format_resource_value(resource, want)} with DaemonSet "
                f"overhead; the largest allocatable among {_left(len(types))} "
                f"is {format_resource_value(resource, largest)}"
            )
    return _or_combined(
        causes,
        types,
        "each requested resource fits some instance type, but no single type holds all of "
        "them together",
    )


def offering_causes(types: Sequence[InstanceType], reqs: Requirements) -> list[str]:
    """Where the types are offered (available zones and capacity types) against what the
    NodePool and the pod allow."""
    available = [o for it in types for o in it.offerings if o.available]
    if not available:
        return [
            f"{_left(len(types))} {_verb(len(types), 'has', 'have')} no available offering at all"
        ]
    zones = _values(o.zone for o in available)
    kinds = _values(o.capacity_type for o in available)
    allowed = "; ".join(str(reqs.get_or_exists(k)) for k in (ZONE, CAPACITY_TYPE) if k in reqs)
    return [
        f"{_left(len(types))} {_verb(len(types), 'is', 'are')} offered in {zones} as {kinds}; "
        f"allowed: {allowed or 'any zone and capacity type'}"
    ]


def limit_causes(types: Sequence[InstanceType], limits: Mapping[str, int]) -> list[str]:
    """The NodePool limits below the smallest capacity among `types`."""
    causes = []
    for resource in sorted(limits):
        smallest = min((it.capacity.get(resource, 0) for it in types), default=0)
        if smallest > limits[resource]:
            causes.append(
                f"limit {resource}={format_resource_value(resource, limits[resource])}: the "
                f"smallest among {_left(len(types))} has "
                f"{format_resource_value(resource, smallest)}"
            )
    return _or_combined(
        causes, types, "each instance type is within some limits, but none within all of them"
    )
