"""Karpenter's AWS launch decision for one NodeClaim: what CreateFleet would launch.

Pure: instance types (with their offerings, ICE'd ones marked unavailable), the NodeClaim's
requirements and resource requests in; a `Launch` (instance type, zone, capacity type, price and
the CreateFleet overrides considered) or an `InsufficientCapacityError` out. Called by the AWS
cloud provider's `create` (steps 1-7), by `SimulatedEC2.create_fleet` (`fleet_pick`) and, through
`LaunchPreview`, by `plan`'s launch column (the `launch` object of `gpucap plan -o json`).
`launch_filter` answers steps 1-6 as a `LaunchTrace` (what each filter kept and rejected, and
why a cheaper offering was not taken): the report asks it (`report/plan.py`).

Steps, in Karpenter's order (aws `pkg/providers/instance/instance.go: Create` and
`filterInstanceTypes`; the filters are in `pkg/providers/instance/filter/filter.go`):

1. compatible-available: keep a type when the claim's requirements are compatible with its
   requirements (keys both define must intersect; a claim key the type lacks, such as a
   NodePool's custom label, passes), its allocatable fits the claim's requests, and it has an
   available offering the claim allows (zone, capacity type).
2. reservations (only when the claim allows `reserved` and some type has an available allowed
   reserved offering; `filters.py` steps 2-4): one kind of reservation (the cheapest of
   default, capacity block, interruptible), then for capacity blocks the one type with the
   cheapest block, then per type and zone the reservation with the most free instances; the
   types keep only those offerings, the types without one are dropped.
3. exotic types (skipped when any requirement has minValues): drop types whose
   `instance-size` contains `metal`, or with non-zero `aws.amazon.com/neuron`,
   `aws.amazon.com/neuroncore`, `amd.com/gpu`, `nvidia.com/gpu` or `habana.ai/gaudi`
   *capacity* (a fractional GPU type advertises 0 and is not exotic) -- unless no other type
   is left, in which case all are kept.
4. spot offerings (skipped with minValues, and unless the claim allows both spot and on-demand
   and the remaining types have both kinds of available allowed offering): drop every spot
   offering priced above the cheapest available allowed on-demand offering; a type is dropped
   only when no offering at all is left.
5. truncate: order by the cheapest available allowed offering and keep 60; with minValues and
   the Strict policy, the kept types must still meet them.
   Any step that leaves no type, or a failed minValues check, is an `InsufficientCapacityError`.
6. capacity type (`getCapacityType`): `reserved`, then `spot`, if the claim allows it and some
   remaining type has an available allowed offering of it; else `on-demand`.
7. overrides: for every remaining type, each available offering allowed by the claim with the
   capacity type narrowed to the chosen one, one per type and zone, priced by the offering.

The pick among the overrides (`fleet_pick`) is gpucap's one deterministic model of EC2 Fleet,
which Karpenter leaves to EC2 (`price-capacity-optimized` for spot, `lowest-price` for
on-demand): the override with the lowest priority number (the provider sets it to the offering's
price), ties broken by instance type name, then zone, passing over pools without capacity. Spot
pool depth is not modelled, so price-capacity-optimized is treated as lowest price. The same
function serves `plan`'s launch column (every pool has capacity: the pick is `overrides[0]`) and
the simulated EC2's CreateFleet (scripted capacity windows), so the two cannot disagree.

Where Karpenter's code says more than karpenter-provisioning.md §4.2-4.4 and contract.md
(code wins):

- contract.md's "spot before on-demand when both are allowed and available" holds only after
  the spot-offering filter: when every spot offering costs more than the cheapest on-demand
  one, on-demand is launched although spot is allowed and available.
- The reservation filters do more than keep one reserved offering per zone: when the claim
  allows `reserved` and some type has such an offering, the types without one are dropped and
  the others keep only their reserved offerings (`capacityReservationTypeFilter`,
  `reservedOfferingFilter`).
- Compatible-available uses `Requirements.IsCompatible` with well-known labels allowed
  undefined, not a plain intersection; the two agree for catalog types, whose keys are all
  well-known. Requests are checked against each allocatable group (NodeOverlay capacity or
  overhead overrides make several); gpucap has no per-offering overrides, so one group.
- The spot-offering filter prunes spot offerings from *all* of a type's offerings (unavailable
  and disallowed ones included) and keeps a type while any offering remains; a price equal to
  the cheapest on-demand one is kept (`filter.go: spotOfferingFilter`).
- The exotic filter looks at any `instance-size` value containing `metal` (`metal-24xl` too)
  and at capacity, not allocatable; its fallback is "no non-exotic type left".
- The truncation error reads `insufficient capacity, truncating instance types based on the
  passed-in requirements, validating minValues, minValues requirement is not met for label(s)`
  (the labels are structured log values, here `unmet_min_values`), and with the BestEffort
  minValues policy truncation never fails (core `pkg/cloudprovider/types.go: Truncate`).
- `getCapacityType` falls back to on-demand without checking that the claim allows it; after
  step 1 that cannot launch a disallowed capacity type.

Not modelled: subnets (every zone of an offering is assumed to have one; Karpenter skips zones
without), launch-template splits other than per reservation, tenancy, placement groups,
NodeOverlay price priorities, and the log line Karpenter writes when it falls back to
on-demand with fewer than 5 instance types.

How it runs: steps 1-7 run on the numpy arrays of a `launchtable.LaunchTable` (one per
instance-type tuple, cached by identity; `launch_options`), a type at a time only in
`reference_filter_instance_types` (the named steps of `filters.py`, with `choose_capacity_type`
and `fleet_overrides` on a list), which is the specification the tables are tested against
(hypothesis) and the path for input a table cannot hold exactly. Claims that end step 1 alike
share steps 2-7: they are memoised per table by exactly what they read (`_vectorised`), so a
NodePool's many claims cost one step 1 each. docs/perf-log.md "Launch choice on tables" has the
decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np

from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.quantity import base_units
from gpucap.cloudprovider.aws.instance.filters import (
    ALL_UNAVAILABLE,
    MIN_VALUES_TRUNCATED,
    ON_DEMAND,
    RESERVED,
    SPOT,
    Filtered,
    run_filters,
)
from gpucap.cloudprovider.aws.instance.launchtable import EXOTIC_RESOURCES, LaunchTable, Mask
from gpucap.cloudprovider.types import InsufficientCapacityError
from gpucap.runtime.memo import IdentityMemo
from gpucap.scheduling.instancetypes import (
    InstanceType,
    Offering,
    compatible_offerings,
    offering_key,
    satisfies_min_values,
)
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = [
    "EXOTIC_RESOURCES",
    "MAX_LAUNCH_INSTANCE_TYPES",
    "FleetOverride",
    "FleetPick",
    "InsufficientCapacityError",
    "Launch",
    "LaunchOptions",
    "LaunchPreview",
    "LaunchTrace",
    "MinValuesPolicy",
    "choose_capacity_type",
    "choose_launch",
    "choose_node_claim_launch",
    "fleet_overrides",
    "fleet_pick",
    "launch_filter",
    "launch_options",
    "reference_filter_instance_types",
]

# aws pkg/providers/instance/instance.go `maxInstanceTypes`: the most types one CreateFleet gets.
MAX_LAUNCH_INSTANCE_TYPES: Final = 60

# Core `MIN_VALUES_POLICY` (pkg/operator/options/options.go), default Strict.
MinValuesPolicy = Literal["Strict", "BestEffort"]


@dataclass(frozen=True, slots=True)
class FleetOverride:
    """One CreateFleet launch-template override: a type in a zone, its `Priority` the price
    (lower goes first); for a reserved launch, the reservation its launch template targets
    (Karpenter makes one template per reservation, `getOverrides` keeps each template's
    overrides to its reservation's offering)."""

    instance_type: str
    zone: str
    price: float
    reservation_id: str = ""
    reservation_type: str = ""
    interruptible: bool = False


@dataclass(frozen=True, slots=True)
class Launch:
    """What CreateFleet would launch (`fleet_pick` over `overrides`, all pools with capacity: so
    `overrides[0]`), with every override it was offered, sorted by (price, instance type, zone)."""

    instance_type: str
    zone: str
    capacity_type: str
    price: float
    overrides: tuple[FleetOverride, ...]
    # The reservation a reserved launch goes into ("" for spot and on-demand).
    reservation_id: str = ""
    reservation_type: str = ""
    interruptible: bool = False


# ==== the decision =============================================================================


def choose_launch(
    instance_types: Iterable[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int] | None = None,
    *,
    min_values_policy: MinValuesPolicy = "Strict",
    max_instance_types: int = MAX_LAUNCH_INSTANCE_TYPES,
    among: Sequence[InstanceType] | None = None,
) -> Launch:
    """Karpenter's launch for a NodeClaim with `requirements` and `requests` (base units).

    `instance_types` are every type of the claim's node class, as Karpenter passes them; the
    claim's requirements (its `node.kubernetes.io/instance-type` list included) narrow them.
    `among`: see `launch_options`.
    """
    options = launch_options(
        instance_types,
        requirements,
        requests,
        min_values_policy=min_values_policy,
        max_instance_types=max_instance_types,
        among=among,
    )
    shared = options.shared_launch
    if shared is not None:
        return shared
    capacity_type = options.capacity_type()
    overrides = options.overrides(capacity_type)
    if not overrides:
        # Unreachable: step 1 leaves an allowed offering and the capacity type follows the
        # offerings. Karpenter would fail with a CreateError ("no capacity offerings ...").
        raise RuntimeError(f"no {capacity_type} override for a claim that passed the filters")
    best = fleet_pick(overrides).chosen
    assert best is not None  # every pool has capacity here
    chosen = Launch(
        instance_type=best.instance_type,
        zone=best.zone,
        capacity_type=capacity_type,
        price=best.price,
        overrides=overrides,
        reservation_id=best.reservation_id,
        reservation_type=best.reservation_type,
        interruptible=best.interruptible,
    )
    options.share_launch(chosen)
    return chosen


def choose_node_claim_launch(
    node_claim: NodeClaim,
    instance_types: Iterable[InstanceType],
    *,
    min_values_policy: MinValuesPolicy = "Strict",
) -> Launch:
    """`choose_launch` for a NodeClaim manifest (its spec requirements and resource requests)."""
    return choose_launch(
        instance_types,
        Requirements.from_node_selector(node_claim.spec.requirements),
        base_units(node_claim.spec.resources.requests),
        min_values_policy=min_values_policy,
    )


def launch_options(
    instance_types: Iterable[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int] | None = None,
    *,
    min_values_policy: MinValuesPolicy = "Strict",
    max_instance_types: int = MAX_LAUNCH_INSTANCE_TYPES,
    among: Sequence[InstanceType] | None = None,
    reference: bool = False,
) -> LaunchOptions:
    """Steps 1-5 for one claim, kept for steps 6-7 (`LaunchOptions`); raises
    InsufficientCapacityError as Karpenter's `filterInstanceTypes` does.

    Runs on the arrays of a `LaunchTable` (see "Launch choice, vectorised" in docs/perf-log.md):
    for a tuple the table of that tuple (cached by identity); for another sequence the table of
    `among` when it is a tuple holding every one of them (the NodePool's types the claim's
    options were drawn from: `plan` passes it), else a table built for this call. `among` only
    chooses the table: the answer is the same with or without it. `reference=True`, or a table
    that cannot hold the input exactly (a NaN price, an allocatable beyond int64), takes the
    same steps one type at a time (`reference_filter_instance_types`), the specification the
    tables are tested against.
    """
    if max_instance_types < 1:
        raise ValueError(f"max_instance_types must be >= 1, got {max_instance_types}")
    given = instance_types if isinstance(instance_types, tuple | list) else list(instance_types)
    found = None if reference else _table_and_rows(given, among)
    if found is None:
        kept = reference_filter_instance_types(
            given,
            requirements,
            requests,
            min_values_policy=min_values_policy,
            max_instance_types=max_instance_types,
        )
        return LaunchOptions(requirements, kept)
    table, rows = found
    return _vectorised(
        table,
        rows,
        requirements,
        requests or {},
        min_values_policy=min_values_policy,
        max_instance_types=max_instance_types,
    )


def launch_filter(
    instance_types: Iterable[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int] | None = None,
    *,
    min_values_policy: MinValuesPolicy = "Strict",
    max_instance_types: int = MAX_LAUNCH_INSTANCE_TYPES,
    among: Sequence[InstanceType] | None = None,
    reference: bool = False,
) -> LaunchTrace:
    """Steps 1-6 for one claim as a `LaunchTrace`: the types CreateFleet is offered (cheapest
    first), the capacity type, or Karpenter's error, and each filter's kept and rejected types
    when asked. A filter that narrows a type's offerings gives a new `InstanceType` with the
    remaining ones (the inputs are never changed), as Karpenter replaces `Offerings` on its
    copy. `among` and `reference`: see `launch_options`."""
    given = instance_types if isinstance(instance_types, tuple | list) else list(instance_types)
    inputs = _TraceInputs(given, requests or {}, min_values_policy, max_instance_types)
    try:
        options = launch_options(
            given,
            requirements,
            requests,
            min_values_policy=min_values_policy,
            max_instance_types=max_instance_types,
            among=among,
            reference=reference,
        )
    except InsufficientCapacityError as err:
        return LaunchTrace(requirements, None, error=err, inputs=inputs)
    return LaunchTrace(requirements, options, inputs=inputs)


@dataclass(frozen=True, slots=True)
class _TraceInputs:
    """What `LaunchTrace.steps` runs the filters on again."""

    types: Sequence[InstanceType]
    requests: Mapping[str, int]
    min_values_policy: MinValuesPolicy
    max_instance_types: int


class LaunchTrace:
    """What Karpenter's launch filters made of one claim's instance types (`launch_filter`):
    `types` offered to CreateFleet (none on an `error`), the `capacity_type` it launches, each
    step's kept and rejected types (`steps`, `filters.Filtered`), and `why` a cheaper offering
    of an option was not taken. The report (`report/plan.py`) asks `why`."""

    __slots__ = ("_inputs", "_options", "_steps", "error", "requirements")

    def __init__(
        self,
        requirements: Requirements,
        options: LaunchOptions | None,
        *,
        error: InsufficientCapacityError | None = None,
        inputs: _TraceInputs | None = None,
    ) -> None:
        if (options is None) == (error is None):
            raise ValueError("a LaunchTrace has either options or an error")
        self.requirements = requirements
        self.error = error
        self._options = options
        self._inputs = inputs
        self._steps: tuple[Filtered, ...] | None = None

    @property
    def types(self) -> list[InstanceType]:
        """The types CreateFleet is offered, cheapest first ([] on an error)."""
        return [] if self._options is None else self._options.types

    @property
    def capacity_type(self) -> str | None:
        """Step 6, the capacity type Karpenter launches (None on an error)."""
        return None if self._options is None else self._options.capacity_type()

    def offered(self) -> list[InstanceType]:
        """`types`; raises the InsufficientCapacityError Karpenter's launch fails with."""
        if self.error is not None:
            raise self.error
        return self.types

    def steps(self) -> tuple[Filtered, ...]:
        """Each filter's answer in order, the truncation last (`filters.run_filters`, run once
        when first asked; () for a trace built without its inputs)."""
        if self._steps is None:
            inputs = self._inputs
            if inputs is None:
                self._steps = ()
            else:
                self._steps, _ = run_filters(
                    inputs.types,
                    self.requirements,
                    inputs.requests,
                    strict_min_values=inputs.min_values_policy == "Strict",
                    limit=inputs.max_instance_types,
                )
        return self._steps

    def rejected_by(self, name: str) -> str | None:
        """The step that dropped the type named `name` (its `Filtered.name`), None when no
        step did."""
        for step in self.steps():
            if any(it.name == name for it in step.rejected):
                return step.name
        return None

    def why(self, it: InstanceType, offering: Offering) -> str:
        """Why `offering` of option `it`, cheaper than the launch, was not taken, checked in
        Karpenter's order: the offering is unavailable; its zone or capacity type is not
        allowed by the claim; the filters dropped the type (exotic, spot above on-demand, the
        60 cheapest) or pruned the offering (the spot filter); its capacity type is not the one
        `getCapacityType` chose; else EC2 Fleet passed it over."""
        reqs = self.requirements
        if not offering.available:
            return (
                f"no capacity: {offering.capacity_type} {it.name} in {offering.zone} is unavailable"
            )
        zones = reqs.get(ZONE)
        if zones is not None and not zones.has(offering.zone):
            return f"zone {offering.zone} is not allowed by the NodeClaim's requirements"
        caps = reqs.get(CAPACITY_TYPE)
        if caps is not None and not caps.has(offering.capacity_type):
            return f"{offering.capacity_type} is not allowed by the NodeClaim's requirements"
        kept = next((k for k in self.types if k.name == it.name), None)
        if kept is None:
            return (
                "dropped by Karpenter's launch filters before CreateFleet (exotic types, spot "
                "above on-demand, the 60 cheapest types)"
            )
        if not any(
            o.zone == offering.zone and o.capacity_type == offering.capacity_type
            for o in kept.offerings
        ):
            return (
                "spot offering priced above the cheapest on-demand one: Karpenter's spot filter "
                "drops it"
            )
        capacity_type = self.capacity_type
        if offering.capacity_type != capacity_type:
            return (
                f"Karpenter launches {capacity_type} when the NodeClaim allows it and some is "
                f"available; {offering.capacity_type} is its fallback"
            )
        return "EC2 Fleet passed it over"


def reference_filter_instance_types(
    instance_types: Iterable[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int] | None = None,
    *,
    min_values_policy: MinValuesPolicy = "Strict",
    max_instance_types: int = MAX_LAUNCH_INSTANCE_TYPES,
) -> list[InstanceType]:
    """Steps 1-5 one type at a time, as Karpenter's filters are written (`filters.py`): the
    types `launch_filter` offers, computed without tables (see `launch_options`); raises
    InsufficientCapacityError."""
    given = instance_types if isinstance(instance_types, tuple) else list(instance_types)
    steps, error = run_filters(
        given,
        requirements,
        requests or {},
        strict_min_values=min_values_policy == "Strict",
        limit=max_instance_types,
    )
    if error is not None:
        raise error
    return steps[-1].kept


def choose_capacity_type(instance_types: Sequence[InstanceType], requirements: Requirements) -> str:
    """Karpenter's `getCapacityType`: reserved, then spot, when the claim allows it and one of
    the types has an available allowed offering of it; otherwise on-demand."""
    allowed = requirements.get_or_exists(CAPACITY_TYPE)
    for capacity_type in (RESERVED, SPOT):
        if not allowed.has(capacity_type):
            continue
        narrowed = _with_capacity_type(requirements, capacity_type)
        if any(compatible_offerings(it, narrowed) for it in instance_types):
            return capacity_type
    return ON_DEMAND


def fleet_overrides(
    instance_types: Sequence[InstanceType], requirements: Requirements, capacity_type: str
) -> tuple[FleetOverride, ...]:
    """The CreateFleet overrides: each type's available offerings of `capacity_type` that the
    claim allows, one per type and zone (after the reservation filters, a reserved type has
    one reservation per zone), sorted by (price, instance type, zone)."""
    narrowed = _with_capacity_type(requirements, capacity_type)
    overrides: dict[tuple[str, str], FleetOverride] = {}
    for it in instance_types:
        for offering in compatible_offerings(it, narrowed):
            overrides.setdefault(
                (it.name, offering.zone),
                FleetOverride(
                    it.name,
                    offering.zone,
                    offering.price,
                    offering.reservation_id,
                    offering.reservation_type,
                    offering.interruptible,
                ),
            )
    return tuple(sorted(overrides.values(), key=lambda o: (o.price, o.instance_type, o.zone)))


@dataclass(frozen=True, slots=True)
class FleetPick:
    """What an EC2 Fleet `instant` request for one instance does with its overrides: `chosen`
    launches (None: none could), `passed_over` are the overrides tried before it, in order, for
    lack of capacity (every override when nothing launched)."""

    chosen: FleetOverride | None
    passed_over: tuple[FleetOverride, ...] = field(default=())


def fleet_pick(
    overrides: Iterable[FleetOverride],
    *,
    has_capacity: Callable[[FleetOverride], bool] | None = None,
) -> FleetPick:
    """gpucap's model of EC2 Fleet's choice (see the module docstring): the overrides by
    (priority, instance type, zone), the first whose pool `has_capacity` (default: every pool)."""
    passed_over: list[FleetOverride] = []
    for override in sorted(overrides, key=lambda o: (o.price, o.instance_type, o.zone)):
        if has_capacity is None or has_capacity(override):
            return FleetPick(override, tuple(passed_over))
        passed_over.append(override)
    return FleetPick(None, tuple(passed_over))


@dataclass(frozen=True, slots=True)
class LaunchPreview:
    """The launch decision without launching, bound to the operator's minValues policy: what
    `plan`'s provisioning loop is given to fill its launch column (`controllers/` may not
    import this module, so the composition root hands it over)."""

    min_values_policy: MinValuesPolicy = "Strict"

    def offered(
        self,
        instance_types: Iterable[InstanceType],
        requirements: Requirements,
        requests: Mapping[str, int] | None = None,
        *,
        among: Sequence[InstanceType] | None = None,
    ) -> list[InstanceType]:
        """The types CreateFleet would be offered (steps 1-5); raises InsufficientCapacityError.
        `among`: see `launch_options` (a speed-up only)."""
        return launch_filter(
            instance_types,
            requirements,
            requests,
            min_values_policy=self.min_values_policy,
            among=among,
        ).offered()

    def launch(
        self,
        instance_types: Iterable[InstanceType],
        requirements: Requirements,
        requests: Mapping[str, int] | None = None,
        *,
        among: Sequence[InstanceType] | None = None,
    ) -> Launch:
        """`choose_launch` under the policy; raises InsufficientCapacityError."""
        return choose_launch(
            instance_types,
            requirements,
            requests,
            min_values_policy=self.min_values_policy,
            among=among,
        )


# ==== steps 1-7 on a LaunchTable ===============================================================

# The table last built for a tuple: the provider's next answer is often the same types with
# an offering marked unavailable (or no longer), which `with_availability_of` derives from it.
_last_built: list[LaunchTable] = []


def _build_table(types: tuple[InstanceType, ...]) -> LaunchTable:
    table = _last_built[0].with_availability_of(types) if _last_built else None
    if table is None:
        table = LaunchTable(types)
    _last_built[:] = [table]
    return table


# Tables per instance-type tuple (the provider's answer, a NodePool's types), by identity.
_tables: IdentityMemo[tuple[InstanceType, ...], LaunchTable] = IdentityMemo(_build_table, size=64)

Rows = np.ndarray[Any, np.dtype[np.int64]]


def _table_and_rows(
    given: Sequence[InstanceType], among: Sequence[InstanceType] | None
) -> tuple[LaunchTable, Rows] | None:
    """The table to run on and the row of each given type (in their order); None when the
    table cannot hold the input exactly."""
    table: LaunchTable | None = None
    rows: Rows | None = None
    if isinstance(given, tuple):
        table = _tables(given)
    elif isinstance(among, tuple):
        universe = _tables(among)
        rows = universe.rows(given)
        if rows is not None:
            table = universe
    if table is None:
        table = LaunchTable(given)
    if not table.exact:
        return None
    if rows is None:
        rows = np.arange(len(table), dtype=np.int64)
    return table, rows


def _vectorised(
    table: LaunchTable,
    rows: Rows,
    reqs: Requirements,
    requests: Mapping[str, int],
    *,
    min_values_policy: MinValuesPolicy,
    max_instance_types: int,
) -> LaunchOptions:
    """Steps 1-5 as `reference_filter_instance_types` takes them, on the table's arrays.

    Step 1 runs per row over the whole table (its masks are memoised per requirement). What
    steps 2-5 answer (`_after_step_one`) depends only on the rows step 1 keeps, in their order,
    on the claim's zone and capacity-type requirements, on the limit and, when a requirement has
    minValues, on the requirements and the policy; it is memoised per table by exactly that, so
    claims that differ elsewhere (their requests, their other labels) share it.
    """
    # 1. compatible-available
    ok = table.compatible(reqs)
    ok &= table.fits(requests)
    ok &= table.offered(reqs)
    cur = rows[ok[rows]]
    if not len(cur):
        raise InsufficientCapacityError(ALL_UNAVAILABLE)
    min_values = reqs.has_min_values()
    key = (
        cur.tobytes(),
        offering_key(reqs),
        max_instance_types,
        (reqs, min_values_policy) if min_values else None,
    )
    memo = table.after_step_one
    kept: _Kept | None = memo.get(key)
    if kept is None:
        kept = _after_step_one(
            table,
            cur,
            reqs,
            min_values=min_values,
            min_values_policy=min_values_policy,
            max_instance_types=max_instance_types,
        )
        if len(memo) >= max(_AFTER_STEP_ONE_MIN, _AFTER_STEP_ONE_BYTES // (8 * len(table))):
            memo.clear()
        memo[key] = kept
    return LaunchOptions(reqs, arrays=_Arrays(table, kept))


# Bound of `LaunchTable.after_step_one` (cleared when full): a key holds the rows step 1 kept
# (8 bytes each, up to the whole table), so a table keeps about 1 MiB of keys at most.
_AFTER_STEP_ONE_BYTES: Final = 2**20
_AFTER_STEP_ONE_MIN: Final = 16


def _after_step_one(
    table: LaunchTable,
    cur: Rows,
    reqs: Requirements,
    *,
    min_values: bool,
    min_values_policy: MinValuesPolicy,
    max_instance_types: int,
) -> _Kept:
    """Steps 2-5 on the rows `cur` step 1 kept (in input order); reads of `reqs` only its
    offering requirements (`offering_key`) and, with `min_values`, its minValues (see
    `_vectorised`).

    The offering-level steps run on the offerings of the rows step 1 keeps only (`off`, with
    `seg` the start of each row's run in it). The state between steps: `cur`, the rows still
    offered, in input order; `keep`, per offering in `off`, whether it is still among its
    type's offerings (None: every type keeps all of its own).
    """
    present = np.zeros(len(table), dtype=np.bool_)
    present[cur] = True
    alive = np.flatnonzero(present)  # sorted: `np.searchsorted(alive, cur)` is each row's run
    off, seg = table.offerings_of(alive)
    local = np.repeat(np.arange(len(alive)), table.n_offerings[alive])
    allowed = table.allowed(reqs)[off]
    ct = table.off_ct[off]
    price = table.price[off]
    keep: Mask | None = None
    capacity_types = reqs.get_or_exists(CAPACITY_TYPE)
    # 2. reserved offerings: none in an exact table (`LaunchTable.exact`), nothing to do.
    # 3. exotic types, unless they are all that is left
    if not min_values:
        generic = cur[~table.exotic[cur]]
        if len(generic):
            cur = generic
    # 4. spot offerings above the cheapest on-demand one
    if not min_values and capacity_types.has(ON_DEMAND) and capacity_types.has(SPOT):
        in_cur = np.zeros(len(alive), dtype=np.bool_)
        in_cur[np.searchsorted(alive, cur)] = True
        in_cur = in_cur[local]
        usable = allowed & in_cur if keep is None else allowed & in_cur & keep
        on_demand = usable & (ct == table.ct_code(ON_DEMAND))
        spot = ct == table.ct_code(SPOT)
        if on_demand.any() and (usable & spot).any():
            ceiling = price[on_demand].min()
            drop = in_cur & spot & (price > ceiling)
            if drop.any():
                keep = ~drop if keep is None else keep & ~drop
                cur = cur[np.logical_or.reduceat(keep, seg)[np.searchsorted(alive, cur)]]
    if not len(cur):
        raise InsufficientCapacityError(ALL_UNAVAILABLE)
    # 5. truncate: by the cheapest available allowed offering left, ties by name (stable).
    if keep is None:
        prices = table.cheapest_allowed(reqs)[cur]
    else:
        left = np.where(keep & allowed, price, np.inf)
        prices = np.minimum.reduceat(left, seg)[np.searchsorted(alive, cur)]
    kept = cur[np.lexsort((table.name_rank[cur], prices))][:max_instance_types]
    runs = np.searchsorted(alive, kept)
    selected = np.zeros(len(alive), dtype=np.bool_)
    selected[runs] = True
    current = selected[local]
    narrowed: list[list[bool] | None] | None = None
    if keep is not None:
        current &= keep
        cut = np.add.reduceat(keep.astype(np.int64), seg) < table.n_offerings[alive]
        begin = seg.tolist()
        narrowed = [
            keep[begin[i] : begin[i] + int(table.n_offerings[r])].tolist() if cut[i] else None
            for r, i in zip(kept.tolist(), runs.tolist(), strict=True)
        ]
    if min_values:
        # minValues reads requirements only, which a narrowed copy shares with its row.
        _, unmet = satisfies_min_values([table.types[r] for r in kept.tolist()], reqs)
        if unmet and min_values_policy == "Strict":
            raise InsufficientCapacityError(MIN_VALUES_TRUNCATED, unmet_min_values=unmet)
    return _Kept(kept, off[current], narrowed)


@dataclass(slots=True, eq=False)
class _Kept:
    """What steps 2-5 keep of one table for a claim: a row per type, the offerings (indices in
    the table) those types have now, and per type the flags of its row's offerings it keeps
    (None: it is the row's own object; `narrowed` None: every type is). Shared by the claims
    whose step 1 ends the same (the value of `LaunchTable.after_step_one`), so never changed,
    but for `launch`: the `Launch` steps 6-7 give, set by `choose_launch` (they read of the
    claim only its zone and capacity-type requirements, which are part of the sharing key).
    It holds no reference to its table, which holds it: no garbage cycle when a table goes."""

    rows: Rows
    offerings: Rows
    narrowed: list[list[bool] | None] | None
    launch: Launch | None = None


@dataclass(frozen=True, slots=True)
class _Arrays:
    """Where `LaunchOptions.types` are: a table and what steps 2-5 kept of it."""

    table: LaunchTable
    kept: _Kept

    @property
    def rows(self) -> Rows:
        return self.kept.rows

    @property
    def offerings(self) -> Rows:
        return self.kept.offerings

    @property
    def narrowed(self) -> list[list[bool] | None] | None:
        return self.kept.narrowed


class LaunchOptions:
    """Steps 1-5 for one claim: `types`, what CreateFleet is offered (cheapest first), and
    steps 6-7 on them. Built by `launch_options` (on tables, `types` are made when first read:
    `choose_launch` never reads them)."""

    __slots__ = ("_arrays", "_types", "requirements")

    def __init__(
        self,
        requirements: Requirements,
        types: list[InstanceType] | None = None,
        *,
        arrays: _Arrays | None = None,
    ) -> None:
        if (types is None) == (arrays is None):
            raise ValueError("LaunchOptions takes either types or arrays")
        self.requirements = requirements
        self._types = types
        self._arrays = arrays

    @property
    def types(self) -> list[InstanceType]:
        """The types CreateFleet is offered, cheapest first; a type whose offerings a filter
        narrowed is a new `InstanceType` with the remaining ones."""
        if self._types is None:
            arrays = self._arrays
            assert arrays is not None
            table, rows = arrays.table, arrays.rows.tolist()
            if arrays.narrowed is None:
                self._types = [table.types[r] for r in rows]
            else:
                self._types = [
                    table.types[r] if kept is None else table.rebuilt(r, kept)
                    for r, kept in zip(rows, arrays.narrowed, strict=True)
                ]
        return self._types

    @property
    def shared_launch(self) -> Launch | None:
        """The launch `choose_launch` chose for options of the same arrays (None: not yet, or
        not on tables)."""
        return None if self._arrays is None else self._arrays.kept.launch

    def share_launch(self, chosen: Launch) -> None:
        """Keep `chosen` (`choose_launch`'s answer for these options) for the claims whose
        options share these arrays: steps 6-7 would answer the same for them."""
        if self._arrays is not None:
            self._arrays.kept.launch = chosen

    def capacity_type(self) -> str:
        """Step 6, `choose_capacity_type` of `types`."""
        arrays = self._arrays
        if arrays is None:
            return choose_capacity_type(self.types, self.requirements)
        allowed = self.requirements.get_or_exists(CAPACITY_TYPE)
        for capacity_type in (RESERVED, SPOT):
            if allowed.has(capacity_type) and self._of(arrays, capacity_type).any():
                return capacity_type
        return ON_DEMAND

    def overrides(
        self, capacity_type: str, *, only: Sequence[bool] | None = None
    ) -> tuple[FleetOverride, ...]:
        """Step 7, `fleet_overrides` of `types` (of those whose flag in `only` is set)."""
        arrays = self._arrays
        if arrays is None:
            types = (
                self.types
                if only is None
                else [t for t, u in zip(self.types, only, strict=True) if u]
            )
            return fleet_overrides(types, self.requirements, capacity_type)
        table, rows = arrays.table, arrays.rows
        if only is not None:
            rows = rows[np.fromiter(only, dtype=np.bool_, count=len(rows))]
        # Each offering's place: the first position of its type among `rows` (past the end:
        # not among them); one override per (type name, zone), the first by that place.
        position = np.full(len(table), len(rows), dtype=np.int64)
        position[rows[::-1]] = np.arange(len(rows) - 1, -1, -1)
        chosen = arrays.offerings[self._of(arrays, capacity_type)]
        place = position[table.off_row[chosen]]
        chosen = chosen[place < len(rows)]
        if not len(chosen):
            return ()
        chosen = chosen[np.argsort(position[table.off_row[chosen]], kind="stable")]
        names = table.name_rank[table.off_row[chosen]]
        _, first = np.unique(names * len(table.zones) + table.off_zone[chosen], return_index=True)
        chosen = chosen[first]
        # Sorted by (price, name, zone); zone codes are ranks (`LaunchTable.zones` is sorted).
        chosen = chosen[
            np.lexsort(
                (
                    table.off_zone[chosen],
                    table.name_rank[table.off_row[chosen]],
                    table.price[chosen],
                )
            )
        ]
        return tuple(
            FleetOverride(table.types[r].name, table.offerings[i].zone, table.offerings[i].price)
            for r, i in zip(table.off_row[chosen].tolist(), chosen.tolist(), strict=True)
        )

    def _of(self, arrays: _Arrays, capacity_type: str) -> Mask:
        """Per offering of `arrays.offerings`: available, in an allowed zone and of
        `capacity_type` (`compatible_offerings` with the capacity type narrowed to it)."""
        table, off = arrays.table, arrays.offerings
        mask: Mask = table.available[off] & (table.off_ct[off] == table.ct_code(capacity_type))
        zone = self.requirements.get(ZONE)
        if zone is not None:
            mask &= table.zones_allowed(zone)[table.off_zone[off]]
        return mask


# ==== helpers ==================================================================================


def _with_capacity_type(reqs: Requirements, capacity_type: str) -> Requirements:
    """The claim's requirements with the capacity type replaced by `In [capacity_type]`."""
    return reqs.without(CAPACITY_TYPE).add(Requirement.new(CAPACITY_TYPE, "In", [capacity_type]))
