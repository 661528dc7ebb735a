"""Which instance types can take a pod: the scheduler's type filter, as named steps.

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/` @ 2266468104f3 narrows a
pod's instance types in three places: `NewScheduler` keeps a NodePool's types that meet its
requirements and have an offering (scheduler.go, `filterInstanceTypesByRequirements` with no
pod); `addToNewNodeClaim` drops the types above what is left of the NodePool's limits
(`filterByRemainingResources`); `NodeClaim.CanAdd` keeps the types that meet the pod's
requirements, fit its requests plus their DaemonSet group's overhead, and have an available
offering the requirements allow (nodeclaim.go, `filterInstanceTypesByRequirements`), and when
none is left says which of the three no type met together (`InstanceTypeFilterError`, here
`_FilterOutcome.message`).

gpucap writes each as a `FilterStep` (a name and the types it keeps, as a mask over an
`InstanceTypeTable`, vectorised and memoised per requirement set), in `SCHEDULER_STEPS` order.
The scheduler runs them where Karpenter does: `filter_options` runs `CLAIM_STEPS` for
`NodeClaim.can_add` (`nodeclaim.py`), `nodepool_types` the NodePool's step for the templates
(`passcache.py`). `Scheduler.explain` (`plan --explain`) runs the same steps with
`trace=True`: each traced step says what it kept and rejected and, when it left nothing, why
(the functions of `explanation.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpucap.apis.core import Pod
from gpucap.apis.labels import HOSTNAME
from gpucap.apis.quantity import format_base_units
from gpucap.scheduling import explanation
from gpucap.scheduling.hostports import HostPort, HostPortUsage, host_ports
from gpucap.scheduling.instancetypes import (
    InstanceType,
    InstanceTypeTable,
    Mask,
    satisfies_min_values,
)
from gpucap.scheduling.nodeclaimtemplate import DaemonOverheadGroup
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources, add

__all__ = [
    "CLAIM_STEPS",
    "FITS",
    "NODEPOOL_REQUIREMENTS",
    "NODE_CLASS",
    "OFFERING",
    "POD_REQUIREMENTS",
    "SCHEDULER_STEPS",
    "WITHIN_LIMITS",
    "FilterInput",
    "FilterStep",
    "TracedStep",
    "filter_options",
    "nodepool_types",
    "run_steps",
]


@dataclass(slots=True)
class _FilterOutcome:
    """Which of the filter's three tests some option passed, alone and in pairs, when none
    passed all three (for the message), and the minValues error if that emptied it."""

    requirements_met: bool = False
    fits: bool = False
    has_offering: bool = False
    requirements_and_fits: bool = False
    requirements_and_offering: bool = False
    fits_and_offering: bool = False
    min_values_error: str | None = None
    # No option is left (the filter's answer is an all-False mask).
    empty: bool = False

    def message(self, requests: Resources) -> str:
        """Karpenter's `InstanceTypeFilterError` wording (requirements dump left out)."""
        res = f"resources={_format_resources(requests)}"
        if self.min_values_error:
            return f"{self.min_values_error}, {res}"
        r, f, o = self.requirements_met, self.fits, self.has_offering
        if not r and not f and not o:
            text = (
                "no instance type met the scheduling requirements or had enough resources or "
                "had a required offering"
            )
        elif not r and not f:
            text = "no instance type met the scheduling requirements or had enough resources"
        elif not r and not o:
            text = "no instance type met the scheduling requirements or had a required offering"
        elif not f and not o:
            text = "no instance type had enough resources or had a required offering"
        elif not r:
            text = "no instance type met all requirements"
        elif not f:
            text = "no instance type has enough resources"
        elif not o:
            text = "no instance type has the required offering"
        elif self.requirements_and_fits:
            text = (
                "no instance type which met the scheduling requirements and had enough "
                "resources, had a required offering"
            )
        elif self.fits_and_offering:
            text = (
                "no instance type which had enough resources and the required offering met the "
                "scheduling requirements"
            )
        elif self.requirements_and_offering:
            text = (
                "no instance type which met the scheduling requirements and the required "
                "offering had the required resources"
            )
        else:
            text = "no instance type met the requirements/resources/offering tuple"
        return f"{text}, {res}"


# Nothing requested (read only).
_NOTHING: Resources = {}


def _format_resources(resources: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in format_base_units(resources).items()) + "}"


class FilterInput:
    """What the steps read for one question ("which of `table`'s types can take this"): the
    requirements `reqs` (a NodeClaim's with the pod's; for the NodePool's step, the
    NodePool's), the pod with its host ports, the DaemonSet overhead groups and the total
    `requests`, the NodePool's `limits`, and for the explanation the pod's own requirements.
    Each step's mask is computed once per input (the table memoises most across inputs)."""

    __slots__ = (
        "_compatible",
        "_covered",
        "_fit",
        "groups",
        "limits",
        "pod",
        "pod_reqs",
        "ports",
        "relax_min_values",
        "reqs",
        "requests",
        "table",
    )

    def __init__(  # noqa: PLR0917 - what filterInstanceTypesByRequirements reads
        self,
        table: InstanceTypeTable,
        reqs: Requirements,
        pod: Pod | None = None,
        groups: Sequence[DaemonOverheadGroup] = (),
        requests: Resources = _NOTHING,
        ports: tuple[HostPort, ...] = (),
        limits: Resources | None = None,
        pod_reqs: Requirements | None = None,
        relax_min_values: bool = False,
    ) -> None:
        # Positional and without branches: `filter_options` builds one per pod tried on a
        # new or planned NodeClaim. `ports` are `pod`'s host ports (the caller has them).
        self.table = table
        self.reqs = reqs
        self.pod = pod
        self.groups = groups
        self.requests = requests
        self.ports = ports
        self.limits = limits
        self.pod_reqs = pod_reqs
        self.relax_min_values = relax_min_values
        self._compatible: Mask | None = None
        self._covered: Mask | None = None
        self._fit: Mask | None = None

    # ---- each step's mask (`FilterStep.keep`) ---------------------------------------------
    def everything(self) -> Mask:
        """Every type of the table (the table is what the node class offers)."""
        return np.ones(len(self.table.types), dtype=np.bool_)

    def nodepool_types(self) -> Mask:
        """The types `reqs` (a NodePool's) allow, as `nodepool_types` answers."""
        return nodepool_types(self.table, self.reqs, self.relax_min_values)[0]

    def compatible(self) -> Mask:
        """The types whose requirements intersect `reqs`."""
        mask = self._compatible
        if mask is None:
            reqs, table = self.reqs, self.table
            # The placeholder hostname of a planned node never matters to instance types
            # (they do not define the key; the table's memo reads only the keys they do, so
            # it is shared across nodes without building the set less the hostname).
            if HOSTNAME in table.keys and HOSTNAME in reqs:
                reqs = reqs.without(HOSTNAME)
            mask = self._compatible = table.compatible(reqs)
        return mask

    def fits(self) -> Mask:
        """The types whose allocatable holds `requests` plus their DaemonSet group's overhead
        (the groups whose host ports clash with the pod's are skipped, as in Karpenter)."""
        fit = self._fit
        return fit if fit is not None else self._group_masks()

    def covered(self) -> Mask:
        """The types of the groups `fits` did not skip (for the outcome's message)."""
        if self._covered is None:
            self._group_masks()
        assert self._covered is not None
        return self._covered

    def offered(self) -> Mask:
        """The types with an available offering `reqs` allow."""
        return self.table.offered(self.reqs)

    def within_limits(self) -> Mask:
        """The types whose capacity is within `limits` (every type without limits)."""
        if self.limits is None:
            return self.everything()
        return self.table.within(self.limits)[0]

    def _group_masks(self) -> Mask:
        """Computes (once) `fits` and `covered`; returns the first."""
        table, pod, ports = self.table, self.pod, self.ports
        covered: Mask | None = None
        fit: Mask | None = None
        for group in self.groups:
            # DaemonSet groups partition the types; a group whose host ports clash with the
            # pod's is skipped entirely, as in Karpenter.
            if ports and pod is not None and group.host_ports.conflict(pod, ports):
                continue
            gmask = group.mask if group.mask is not None else table.mask_of(group.instance_types)
            total = add(self.requests, group.overhead) if group.overhead else self.requests
            gfit = table.fits(total)
            gfit &= gmask
            if covered is None or fit is None:
                # The first group (often the only one): its masks are the unions so far.
                covered, fit = gmask, gfit
            else:
                covered = covered | gmask
                fit |= gfit
        if covered is None or fit is None:
            covered = fit = np.zeros(len(table.types), dtype=np.bool_)
        self._covered, self._fit = covered, fit
        return fit

    # ---- why a step left nothing (`FilterStep.why_none`) ------------------------------------
    def why_not_nodepool(self, types: Sequence[InstanceType]) -> list[str]:
        outcome = nodepool_types(self.table, self.reqs, self.relax_min_values)[1]
        return [outcome.min_values_error or "requirements filtered out all instance types"]

    def why_not_compatible(self, types: Sequence[InstanceType]) -> list[str]:
        pod_reqs = self.pod_reqs if self.pod_reqs is not None else self.reqs
        return explanation.requirement_causes(types, pod_reqs)

    def why_not_fits(self, types: Sequence[InstanceType]) -> list[str]:
        covered, index = self.covered(), self.table.index
        if self.pod is not None and not any(covered[index[it.name]] for it in types):
            # Every group these types are in was skipped: the pod's host ports are taken by
            # their DaemonSet pods (Karpenter's wording for the first clash).
            pod, ports = self.pod, self.ports
            clash = next(
                (c for g in self.groups if (c := g.host_ports.conflict(pod, ports)) is not None),
                None,
            )
            if clash is not None:
                return [clash]
        # The smallest overhead a type can have: the requests can be no less than this.
        least = min((g.overhead for g in self.groups), key=lambda o: sum(o.values()), default={})
        return explanation.resource_causes(types, add(self.requests, least))

    def why_not_offered(self, types: Sequence[InstanceType]) -> list[str]:
        return explanation.offering_causes(types, self.reqs)

    def why_not_within_limits(self, types: Sequence[InstanceType]) -> list[str]:
        return explanation.limit_causes(types, self.limits or {})


def _nothing(_: FilterInput, __: Sequence[InstanceType]) -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class FilterStep:
    """One of the scheduler's instance-type filters: `name` reads after a count ("12 instance
    types meet the pod's requirements", as `plan --explain` prints it), `keep` gives the types
    it keeps as a mask over the input's table, and `why_none` why none of `types` (what the
    earlier steps left) is kept, when this step leaves nothing."""

    name: str
    keep: Callable[[FilterInput], Mask]
    why_none: Callable[[FilterInput, Sequence[InstanceType]], list[str]] = _nothing


@dataclass(frozen=True, slots=True)
class TracedStep:
    """What one step did, traced (`run_steps(..., trace=True)`): the types it kept and those
    it rejected, of what the earlier steps left, and when it left nothing, why (`cause`)."""

    name: str
    kept: list[InstanceType]
    rejected: list[InstanceType]
    cause: list[str] = field(default_factory=list)


NODE_CLASS = FilterStep("offered by the node class", FilterInput.everything)
NODEPOOL_REQUIREMENTS = FilterStep(
    "meet the NodePool's requirements", FilterInput.nodepool_types, FilterInput.why_not_nodepool
)
POD_REQUIREMENTS = FilterStep(
    "meet the pod's requirements", FilterInput.compatible, FilterInput.why_not_compatible
)
FITS = FilterStep("fit the pod plus DaemonSet overhead", FilterInput.fits, FilterInput.why_not_fits)
OFFERING = FilterStep(
    "have an available offering in an allowed zone",
    FilterInput.offered,
    FilterInput.why_not_offered,
)
WITHIN_LIMITS = FilterStep(
    "fit within the NodePool's limits",
    FilterInput.within_limits,
    FilterInput.why_not_within_limits,
)
# Karpenter's order as `plan --explain` shows it (the scheduler applies the limits before
# `CanAdd`; the types left at the end are the same).
SCHEDULER_STEPS = (
    NODE_CLASS,
    NODEPOOL_REQUIREMENTS,
    POD_REQUIREMENTS,
    FITS,
    OFFERING,
    WITHIN_LIMITS,
)
# `filterInstanceTypesByRequirements`: what `NodeClaim.CanAdd` runs for each pod.
CLAIM_STEPS = (POD_REQUIREMENTS, FITS, OFFERING)
_NO_TRACE: tuple[TracedStep, ...] = ()


def run_steps(
    steps: Sequence[FilterStep], inp: FilterInput, options: Mask, *, trace: bool = False
) -> tuple[Mask, Sequence[TracedStep]]:
    """The options of `inp.table` (`options`, a mask) that every step keeps (a new mask), and
    with `trace` what each step did (`TracedStep`, in order; nothing without it)."""
    if trace:
        return _traced(steps, inp, options)
    remaining: Mask | None = None
    for step in steps:
        if remaining is None:
            # The first step's: a new mask (`options` and the steps' masks may be shared),
            # narrowed in place by the others.
            remaining = options & step.keep(inp)
        else:
            remaining &= step.keep(inp)
    if remaining is None:
        remaining = options.copy()
    return remaining, _NO_TRACE


def _traced(
    steps: Sequence[FilterStep], inp: FilterInput, options: Mask
) -> tuple[Mask, list[TracedStep]]:
    """`run_steps` with `trace`: the same masks, each step's kept and rejected types noted."""
    table = inp.table
    remaining = options.copy()
    traced: list[TracedStep] = []
    for step in steps:
        kept = step.keep(inp)
        after = remaining & kept
        types = table.types_of(remaining)
        left = table.types_of(after)
        cause = step.why_none(inp, types) if types and not left else []
        traced.append(TracedStep(step.name, left, table.types_of(remaining & ~kept), cause))
        remaining = after
    return remaining, traced


def filter_options(  # noqa: PLR0917 - mirrors filterInstanceTypesByRequirements
    table: InstanceTypeTable,
    options: Mask,
    reqs: Requirements,
    pod: Pod | None,
    groups: Sequence[DaemonOverheadGroup],
    total_requests: Resources,
    *,
    relax_min_values: bool,
    ports: tuple[HostPort, ...] | None = None,
) -> tuple[Mask, dict[str, int], _FilterOutcome]:
    """Karpenter's `filterInstanceTypesByRequirements` over a mask of `table`'s types: the
    options `CLAIM_STEPS` keep (they intersect `reqs`, fit `total_requests` plus their
    DaemonSet group's overhead, and have an allowed available offering), then the minValues
    check. `ports`: `pod`'s host ports when the caller has them (read from `pod` otherwise)."""
    if ports is None:
        ports = host_ports(pod) if pod is not None else ()
    inp = FilterInput(table, reqs, pod, groups, total_requests, ports)
    # `CLAIM_STEPS` run by hand: this is asked for every pod tried on every new or planned
    # NodeClaim, and the generic loop of `run_steps` cost 3-5 % of a 10,000-pod solve. A law
    # (tests/scheduling/test_filter_laws.py) holds this equal to `run_steps(CLAIM_STEPS, ...)`.
    remaining = options & inp.fits()
    remaining &= inp.compatible()
    remaining &= inp.offered()
    outcome = _FilterOutcome()
    if not _any(remaining):
        outcome.empty = True
        compat, fit, offered = inp.compatible(), inp.fits(), inp.offered()
        # `fit` lies within `covered` (each group's fit is cut to its mask).
        opt = options & inp.covered()
        outcome.requirements_met = bool((opt & compat).any())
        outcome.fits = bool((opt & fit).any())
        outcome.has_offering = bool((opt & offered).any())
        outcome.requirements_and_fits = bool((opt & compat & fit & ~offered).any())
        outcome.requirements_and_offering = bool((opt & compat & offered & ~fit).any())
        outcome.fits_and_offering = bool((opt & fit & offered & ~compat).any())
    unmet: dict[str, int] = {}
    if reqs.has_min_values():
        _, unmet = satisfies_min_values(table.types_of(remaining), reqs)
        if unmet:
            keys = ", ".join(sorted(unmet))
            if not relax_min_values:
                outcome.min_values_error = (
                    f"minValues requirement is not met for label(s) (label(s)=[{keys}])"
                )
                remaining = np.zeros(len(table.types), dtype=np.bool_)
                outcome.empty = True
    return remaining, unmet, outcome


def nodepool_types(
    table: InstanceTypeTable,
    reqs: Requirements,
    relax_min_values: bool,
    everything: Mask | None = None,
) -> tuple[Mask, _FilterOutcome]:
    """The types of `table` (a node class's) that a NodePool with requirements `reqs` keeps
    (Karpenter's `NewScheduler`: the type filter with the NodePool's requirements, no pod and
    nothing requested), and the outcome that says why when it keeps none. `everything`: the
    table's types as a mask, when the caller has it."""
    if everything is None:
        everything = np.ones(len(table.types), dtype=np.bool_)
    group = DaemonOverheadGroup(frozenset(), {}, HostPortUsage(), everything)
    mask, _, outcome = filter_options(
        table, everything, reqs, None, [group], {}, relax_min_values=relax_min_values
    )
    return mask, outcome


def _any(mask: Mask) -> bool:
    """`mask.any()` in two C calls (the method goes through a Python-level wrapper; this is
    asked once or twice per pod tried on a target): the first True, if there is one."""
    return len(mask) > 0 and bool(mask[mask.argmax()])
