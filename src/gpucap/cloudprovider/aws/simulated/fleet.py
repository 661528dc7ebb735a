"""CreateFleet of the simulated EC2 (`ec2.py` `SimulatedEC2`, which inherits this mixin).

EC2 Fleet `instant` requests modelled with `launch.fleet_pick`, the one model of the fleet's
choice that `plan`'s launch column also uses: the overrides of the requested capacity type are
tried in the order of their `Priority` (the AWS provider sets it to the offering price;
price-capacity-optimized for spot is modelled as "the cheapest pool that has capacity";
lowest-price for on-demand), ties by instance type then zone; each override whose pool has no
capacity adds an `InsufficientInstanceCapacity` error; the first pool with capacity launches.
The overrides of a launch template that targets a capacity reservation launch only into it
(`reservations.py`). Called by the AWS cloud provider through the EC2 API seam.

Spot ties: which of several equal-price pools EC2's price-capacity-optimized strategy takes
depends on their spare capacity, which no one outside EC2 sees. Without a stochastic world the
model takes the first zone by name (every spot node of a type lands in one zone). When the
simulator's world has a spot market (`spec.world.spot`, `sim/spotmarket.py`) it sets
`spot_ties`, a random source derived from the scenario's seed alone, and each spot fleet breaks
the remaining ties between the zones of one type with it (`seeded_pick`): prices still come
first (a per-zone price, where the catalog has one, is the override's `Priority`), then the
type, then a fresh draw per zone for the request.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpucap.apis.capacityreservation import CapacityReservationItem
from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.cloudprovider.aws.instance.launch import FleetOverride, FleetPick, fleet_pick
from gpucap.cloudprovider.aws.simulated.reservations import ReservationsEC2

if TYPE_CHECKING:
    from gpucap.cloudprovider.aws.simulated.instance import SimulatedInstance

__all__ = ["FleetEC2", "seeded_pick", "tags_for"]


class FleetEC2(ReservationsEC2):
    """CreateFleet of `SimulatedEC2` (see the module docstring); the attributes below are the
    simulated EC2's own."""

    _next_fleet: int
    _prices: Callable[[str], dict[tuple[str, str], float]]
    has_capacity: Callable[[str, str, str], bool]
    _launch: Callable[..., SimulatedInstance]
    # The seeded tie-break between equal-price spot zones (see the module docstring); None:
    # the first zone by name.
    spot_ties: random.Random | None

    def create_fleet(self, **kwargs: Any) -> Response:
        """EC2 Fleet `instant`: `launch.fleet_pick` over the overrides of the target capacity
        type (by their `Priority`, ties by type then zone); every override passed over adds an
        error (`Unsupported` when the catalog does not offer it, else
        `InsufficientInstanceCapacity`); the instances launch in the chosen pool. The overrides
        of a launch template that targets a capacity reservation launch only into it (see the
        module docstring)."""
        self.calls.append("CreateFleet")
        if kwargs.get("Type") != "instant":
            raise EC2APIError(
                "InvalidParameterValue",
                "only instant fleets are simulated",
                operation="CreateFleet",
            )
        target = kwargs["TargetCapacitySpecification"]
        capacity_type = target.get("DefaultTargetCapacityType", "on-demand")
        count = int(target.get("TotalTargetCapacity", 1))
        tags = tags_for(kwargs.get("TagSpecifications", []), "instance")
        # Each config with the reservation its template targets (None: an ordinary one).
        configs = [
            (config, self._target_reservation(config))
            for config in kwargs.get("LaunchTemplateConfigs", [])
        ]
        # A reservation's instances are billed at the on-demand price (an ODCR's rate).
        reserved = any(into is not None for _, into in configs)
        prices = self._prices("on-demand" if reserved else capacity_type)
        # Each override as gpucap's fleet model sees it: its `Priority` (the AWS provider sets
        # the offering price; lower goes first), else the simulated price; one per type x zone
        # (and reservation).
        requested: dict[
            tuple[str, str, str],
            tuple[FleetOverride, Mapping[str, Any], CapacityReservationItem | None],
        ] = {}
        for config, into in configs:
            rid = into.capacity_reservation_id if into is not None else ""
            for o in config.get("Overrides", []):
                key = (o["InstanceType"], o["AvailabilityZone"], rid)
                priority = o.get("Priority", prices.get(key[:2], float("inf")))
                requested.setdefault(
                    key, (FleetOverride(key[0], key[1], float(priority), rid), o, into)
                )

        def launchable(override: FleetOverride) -> bool:
            key = (override.instance_type, override.zone)
            if override.reservation_id:
                into = requested[(key[0], key[1], override.reservation_id)][2]
                return into is not None and self._reservation_refusal(into, *key) is None
            return key in prices and self.has_capacity(key[0], key[1], capacity_type)

        overrides = [f for f, _, _ in requested.values()]
        if self.spot_ties is not None and capacity_type == "spot" and not reserved:
            pick = seeded_pick(overrides, self.spot_ties, has_capacity=launchable)
        else:
            pick = fleet_pick(overrides, has_capacity=launchable)
        self._next_fleet += 1
        fleet_id = f"fleet-{self._next_fleet:08x}-sim"
        errors: list[dict[str, Any]] = []
        for passed in pick.passed_over:
            key3 = (passed.instance_type, passed.zone, passed.reservation_id)
            _, o, into = requested[key3]
            if into is not None:
                code, message = self._reservation_refusal(into, *key3[:2]) or ("", "")
                errors.append(_fleet_error(o, code, message))
            elif key3[:2] not in prices:
                errors.append(
                    _fleet_error(
                        o, "Unsupported", "The requested configuration is currently not supported."
                    )
                )
            else:
                errors.append(
                    _fleet_error(
                        o,
                        "InsufficientInstanceCapacity",
                        f"We currently do not have sufficient {o['InstanceType']} capacity in the "
                        f"Availability Zone you requested ({o['AvailabilityZone']}).",
                    )
                )
        launched: list[SimulatedInstance] = []
        if pick.chosen is not None:
            key3 = (pick.chosen.instance_type, pick.chosen.zone, pick.chosen.reservation_id)
            _, o, into = requested[key3]
            while len(launched) < count:
                if into is not None and self._reservation_refusal(into, *key3[:2]) is not None:
                    break  # the reservation is full: EC2 launches what it can
                launched.append(
                    self._launch(
                        o,
                        "reserved" if into is not None else capacity_type,
                        prices.get(key3[:2], 0.0),
                        tags,
                        into=into,
                    )
                )
        response: dict[str, Any] = {"FleetId": fleet_id, "Errors": errors, "Instances": []}
        if launched:
            first = launched[0]
            response["Instances"] = [
                {
                    "InstanceIds": [i.instance_id for i in launched],
                    "InstanceType": first.instance_type,
                    "Lifecycle": "spot" if capacity_type == "spot" else "on-demand",
                    "LaunchTemplateAndOverrides": {
                        "Overrides": {
                            "InstanceType": first.instance_type,
                            "AvailabilityZone": first.zone,
                            "SubnetId": first.subnet_id,
                            "ImageId": first.image_id,
                        }
                    },
                }
            ]
        return response


def seeded_pick(
    overrides: Sequence[FleetOverride],
    rng: random.Random,
    *,
    has_capacity: Callable[[FleetOverride], bool],
) -> FleetPick:
    """`fleet_pick` with the ties between the zones of one type at one price broken by `rng`
    (one draw per zone, in zone order, per request) instead of by zone name."""
    rank = {zone: rng.random() for zone in sorted({o.zone for o in overrides})}
    passed_over: list[FleetOverride] = []
    for override in sorted(
        overrides, key=lambda o: (o.price, o.instance_type, rank[o.zone], o.zone)
    ):
        if has_capacity(override):
            return FleetPick(override, tuple(passed_over))
        passed_over.append(override)
    return FleetPick(None, tuple(passed_over))


def tags_for(specs: Iterable[Mapping[str, Any]], resource: str) -> dict[str, str]:
    for spec in specs:
        if spec.get("ResourceType") == resource:
            return {t["Key"]: t["Value"] for t in spec.get("Tags", [])}
    return {}


def _fleet_error(override: Mapping[str, Any], code: str, message: str) -> dict[str, Any]:
    return {
        "LaunchTemplateAndOverrides": {"Overrides": dict(override)},
        "Lifecycle": None,
        "ErrorCode": code,
        "ErrorMessage": message,
    }
