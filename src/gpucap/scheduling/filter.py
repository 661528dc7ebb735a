"""Which of a NodeClaim's instance types can still take a pod: Karpenter's type filter.

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/nodeclaim.go`
@ 2266468104f3 (`filterInstanceTypesByRequirements` and `InstanceTypeFilterError`): keep the
types that meet the requirements, fit the requests plus their DaemonSet group's overhead, and
have an available offering the requirements allow; when none is left, say which of the three
no type met together, in Karpenter's words (`_FilterOutcome.message`). gpucap runs it over a
mask of an `InstanceTypeTable` (vectorised, memoised per requirement set).

Called by `NodeClaim.can_add` (`nodeclaim.py`), by the scheduler for each NodePool's types
(`passcache.py`), and by callers with a plain list of types (`filter_instance_types`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpucap.apis.core import Pod
from gpucap.apis.labels import HOSTNAME
from gpucap.apis.quantity import format_base_units
from gpucap.scheduling.hostports import HostPort, host_ports
from gpucap.scheduling.instancetypes import (
    InstanceType,
    InstanceTypeTable,
    Mask,
    satisfies_min_values,
)
from gpucap.scheduling.nodeclaimtemplate import DaemonOverheadGroup
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.resources import Resources, add

__all__ = ["filter_instance_types", "filter_options"]


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


def _format_resources(resources: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in format_base_units(resources).items()) + "}"


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
    """Karpenter's `filterInstanceTypesByRequirements` over a mask of `table`'s types: keep the
    options that intersect `reqs`, fit `total_requests` plus their DaemonSet group's overhead,
    and have an allowed available offering. Vectorised; memoised per requirement set. `ports`:
    `pod`'s host ports when the caller has them (read from `pod` otherwise)."""
    if ports is None:
        ports = host_ports(pod) if pod is not None else ()
    # The placeholder hostname of a planned node never matters to instance types (they do not
    # define the key; the table's memo reads only the keys they do, so it is shared across
    # nodes without building the set less the hostname).
    type_reqs = reqs.without(HOSTNAME) if HOSTNAME in table.keys and HOSTNAME in reqs else reqs
    covered: Mask | None = None
    fit: Mask | None = None
    for group in groups:
        # DaemonSet groups partition the types; a group whose host ports clash with the
        # pod's is skipped entirely, as in Karpenter.
        if ports and pod is not None and group.host_ports.conflict(pod, ports):
            continue
        gmask = group.mask if group.mask is not None else table.mask_of(group.instance_types)
        total = add(total_requests, group.overhead) if group.overhead else total_requests
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
    compat = table.compatible(type_reqs)
    offered = table.offered(reqs)
    # `fit` lies within `covered` (each group's fit is cut to its mask), so the options
    # covered, compatible, fitting and offered are `options & fit & compat & offered`.
    remaining = options & fit
    remaining &= compat
    remaining &= offered
    outcome = _FilterOutcome()
    if not _any(remaining):
        outcome.empty = True
        opt = options & covered
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


def _any(mask: Mask) -> bool:
    """`mask.any()` in two C calls (the method goes through a Python-level wrapper; this is
    asked once or twice per pod tried on a target): the first True, if there is one."""
    return len(mask) > 0 and bool(mask[mask.argmax()])


def filter_instance_types(
    options: Sequence[InstanceType],
    reqs: Requirements,
    pod: Pod | None,
    groups: Sequence[DaemonOverheadGroup],
    total_requests: Resources,
    *,
    relax_min_values: bool,
) -> tuple[list[InstanceType], dict[str, int], _FilterOutcome]:
    """`filter_options` for a plain list of instance types (kept in their order)."""
    table = InstanceTypeTable(options)
    mask, unmet, outcome = filter_options(
        table,
        np.ones(len(table.types), dtype=np.bool_),
        reqs,
        pod,
        groups,
        total_requests,
        relax_min_values=relax_min_values,
    )
    return table.types_of(mask), unmet, outcome
