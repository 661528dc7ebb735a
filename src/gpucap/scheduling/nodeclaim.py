"""A NodeClaim the scheduler plans in this pass: its pods, requirements and instance types left.

kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/nodeclaim.go`
@ 2266468104f3: a new NodeClaim starts from its NodePool's template with every instance type
the pool allows (within its limits) and keeps, as pods are added, every type that still fits
them all (`CanAdd`: taints, requirements, topology, then the type filter of `filter.py`); it
does not pick one. The scheduler finalizes it after the loop (`Scheduler._finalize`).

Reserved capacity (`offeringsToReserve`, `Add`, `FinalizeScheduling`): when the pass has
reservations, every pod added makes the claim hold one slot in *each* reservation whose
available offering its remaining types and requirements allow (pessimistic: it may launch into
any of them) and give back the ones it can no longer use (`reservationmanager.py`). In the
provisioner's strict mode a pod is refused (`Cause.RESERVED_OFFERING`, never kept as a lasting
refusal: other claims give slots back) when such a reservation exists but none has a slot
left, or when it would take the claim off every reservation it holds. Finalizing a claim that
holds reservations pins it to them: capacity type `reserved` only, the reservation ids `In`.

Not `apis.nodepool.NodeClaim` (the API object): the provisioner turns one of these into that
(`provisioner.to_node_claim`). Built and filled by the scheduler (`scheduler.py`); read by the
provisioner and the disruption controllers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import HOSTNAME
from gpucap.scheduling.filter import filter_options
from gpucap.scheduling.instancetypes import InstanceType, InstanceTypeTable, Mask, Offering
from gpucap.scheduling.nodeclaimtemplate import DaemonOverheadGroup, NodeClaimTemplate
from gpucap.scheduling.podclasses import PERMANENT, TARGET, Hold
from gpucap.scheduling.poddata import PodData
from gpucap.scheduling.refusal import Cause, Refusal, SchedulingError
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirements
from gpucap.scheduling.reservationmanager import ReservationManager
from gpucap.scheduling.resources import Resources, add
from gpucap.scheduling.taints import format_taint, untolerated
from gpucap.scheduling.topology import Topology, TopologyError

__all__ = ["NONE_LEFT", "WOULD_LOSE_ALL", "Fit", "NodeClaim", "template_refusal"]

_INT64_MAX = 2**63 - 1  # `InstanceTypeTable.fits` compares requests capped here
_RESERVED = "reserved"
# nodeclaim.go `offeringsToReserve`'s two ReservedOfferingErrors.
NONE_LEFT = (
    "one or more instance types with compatible reserved offerings are available, "
    "but could not be reserved"
)
WOULD_LOSE_ALL = (
    "satisfying updated nodeclaim constraints would remove all compatible reserved offering options"
)
# What `can_add` answers: the narrowed requirements and options, and the reserved offerings
# the claim would hold with the pod (None: the pass has no reservation).
Fit = tuple[Requirements, Mask, tuple[Offering, ...] | None]


@dataclass(slots=True, eq=False)
class NodeClaim:
    """A NodeClaim planned in this pass: its pods, requirements and remaining instance types
    (a mask over its template's table while scheduling; a price-ordered list once finalized)."""

    template: NodeClaimTemplate
    hostname: str
    requirements: Requirements
    options: Mask
    daemon_groups: list[DaemonOverheadGroup]
    pods: list[Pod] = field(default_factory=list)
    requests: Resources = field(default_factory=dict)
    name: str = ""
    min_values_relaxed: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    final_types: list[InstanceType] | None = None
    # How many pods it has taken (what a pod class's TARGET refusal was seen at).
    version: int = 0
    # Per resource, the most any remaining option has allocatable (None: not computed since
    # the options last changed); see `may_fit`.
    _most: dict[str, int] | None = None
    # The pass's reservations (None: it has none), whether the provisioner's strict mode
    # holds, and the reserved offerings the claim holds (see the module docstring).
    reservations: ReservationManager | None = None
    strict_reservations: bool = False
    reserved: tuple[Offering, ...] = ()

    def may_fit(self, requests: Resources) -> bool:
        """False when adding `requests` exceeds, for some resource, the most allocatable of any
        remaining option: then `can_add` would fail on resources, whatever else it checks.

        A cheap test before `can_add`, which the scheduler runs for every pod against every
        planned NodeClaim (pods x claims); most full claims are ruled out here in a few
        dictionary look-ups instead of a requirement merge and a table filter.
        """
        most = self._most_allocatable()
        for k, v in requests.items():
            if v > 0 and min(self.requests.get(k, 0) + v, _INT64_MAX) > most.get(k, 0):
                return False
        return True

    def _most_allocatable(self) -> dict[str, int]:
        most = self._most
        if most is None:
            # Shared per option mask by the table (only read here).
            most = self._most = self.table.most_allocatable(self.options)
        return most

    def headroom(self) -> dict[str, int]:
        """Per resource, what the roomiest remaining option has left after the claim's pods
        (a resource not listed: none)."""
        return {k: v - self.requests.get(k, 0) for k, v in self._most_allocatable().items()}

    @property
    def nodepool(self) -> str:
        return self.template.name

    @property
    def table(self) -> InstanceTypeTable:
        assert self.template.table is not None
        return self.template.table

    @property
    def instance_types(self) -> list[InstanceType]:
        """The instance types this NodeClaim may still become."""
        if self.final_types is not None:
            return self.final_types
        return self.table.types_of(self.options)

    def can_add(
        self, pod: Pod, data: PodData, topology: Topology, *, relax_min_values: bool
    ) -> Fit:
        """Whether `pod` fits; returns the narrowed requirements and options and the reserved
        offerings the claim would hold (`Fit`), or raises (with the reason's `Hold` for the
        pod classes, see `podclasses.py`)."""
        refused = template_refusal(self.template.taints, self.requirements, pod, data)
        if refused is not None:
            # Built as it is raised: an exception kept in a local of this frame would form a
            # cycle with its traceback (garbage only the collector frees; see loop.py).
            raise refused.error()
        reqs = self.requirements.merge(data.requirements)
        try:
            topo = topology.add_requirements(
                pod, self.template.taints, data.strict_requirements, reqs
            )
        except TopologyError as terr:
            raise SchedulingError(terr, terr.group) from terr
        no_topology = topo is reqs  # no topology group applies to the pod here
        if not no_topology:
            # (Without topology, `reqs` against itself is compatible and merges into an equal
            # set: requirements are kept normalised, so `r ∩ r == r`.)
            if not reqs.is_compatible(topo, ALLOW_UNDEFINED_WELL_KNOWN):
                err = reqs.compatible(topo, ALLOW_UNDEFINED_WELL_KNOWN)
                raise SchedulingError(err or "")
            reqs = reqs.merge(topo)
        requests = add(self.requests, data.requests)
        remaining, unmet, outcome = filter_options(
            self.table,
            self.options,
            reqs,
            pod,
            self.daemon_groups,
            requests,
            relax_min_values=relax_min_values,
            ports=data.ports,
        )
        if relax_min_values and unmet:
            # BestEffort: lower each unmet minValues to what the remaining types offer.
            reqs = Requirements(
                {k: replace(r, min_values=unmet[k]) if k in unmet else r for k, r in reqs.items()}
            )
        if outcome.empty:
            requests_of_pod = data.requests
            # No option fits the requests whatever the requirements: options only narrow and
            # requests only grow, so that lasts. Otherwise, without topology (`topo is reqs`)
            # the answer is the claim's own until it takes a pod.
            hold: Hold = (
                PERMANENT
                if not outcome.fits and outcome.min_values_error is None
                else TARGET
                if no_topology
                else None
            )
            raise SchedulingError(lambda: outcome.message(requests_of_pod), hold)
        if self.reservations is None:
            return reqs, remaining, None
        return reqs, remaining, self._offerings_to_reserve(remaining, reqs, self.reservations)

    def _offerings_to_reserve(
        self, options: Mask, reqs: Requirements, manager: ReservationManager
    ) -> tuple[Offering, ...]:
        """`offeringsToReserve`: the available reserved offerings of the remaining options
        that `reqs` allows and the manager lets this claim hold (see the module docstring)."""
        out: list[Offering] = []
        compatible = False
        types = self.table.types
        for i in self.table.reserved_rows:
            if not options[i]:
                continue
            for o in types[i].offerings:
                if o.capacity_type != _RESERVED or not o.available or not o.allowed_by(reqs):
                    continue
                compatible = True
                if manager.can_reserve(self.hostname, o):
                    out.append(o)
        if self.strict_reservations and not out:
            if compatible:
                raise SchedulingError(NONE_LEFT, cause=Cause.RESERVED_OFFERING)
            if self.reserved:
                raise SchedulingError(WOULD_LOSE_ALL, cause=Cause.RESERVED_OFFERING)
        return tuple(out)

    def add(
        self,
        pod: Pod,
        data: PodData,
        reqs: Requirements,
        options: Mask,
        topology: Topology,
        *,
        reserve: tuple[Offering, ...] | None = None,
    ) -> None:
        if reserve is not None and self.reservations is not None:
            # Reserve the new set, then give back what dropped out of it (`Add`).
            self.reservations.reserve(self.hostname, *reserve)
            kept = {o.reservation_id for o in reserve}
            self.reservations.release(
                self.hostname, *(o for o in self.reserved if o.reservation_id not in kept)
            )
            self.reserved = reserve
        self.pods.append(pod)
        self.version += 1
        self._most = None  # looked up again (per mask, by the table) when next asked
        self.options = options
        self.requests = add(self.requests, data.requests)
        self.requirements = reqs
        topology.register(HOSTNAME, self.hostname)
        topology.record(pod, self.template.taints, reqs)
        ports = data.ports
        for group in self.daemon_groups:
            group.host_ports.add(pod, ports)


def template_refusal(
    taints: tuple[Taint, ...], requirements: Requirements, pod: Pod, data: PodData
) -> Refusal | None:
    """Why a NodeClaim with `taints` and `requirements` refuses `pod` before its instance
    types are looked at (the first checks of Karpenter's `NodeClaim.CanAdd`): a taint the pod
    does not tolerate, or requirements that cannot meet the pod's; None when neither. Read by
    `NodeClaim.can_add` and by `Scheduler.explain` for a NodePool's template."""
    taint = untolerated(taints, pod.spec.tolerations)
    if taint is not None:
        return Refusal(lambda: f"did not tolerate taint {format_taint(taint)}", PERMANENT)
    if not requirements.is_compatible(data.requirements, ALLOW_UNDEFINED_WELL_KNOWN):
        # (The message, only built on a refusal, says why.)
        err = requirements.compatible(data.requirements, ALLOW_UNDEFINED_WELL_KNOWN)
        return Refusal(lambda: f"incompatible requirements, {err}", TARGET)
    return None
