"""The plan's note on spot zones that tie (issue 25): what `plan` cannot know about EC2's choice.

CreateFleet's `price-capacity-optimized` strategy picks among a spot type's zones by price and by
the spare capacity EC2 sees in each pool; the capacity half is not observable from outside.
The bundled catalog's spot prices are regional (every zone of a type has the same price), so
for a spot launch every allowed zone ties, and `plan` (deterministic) shows the first zone by
name, as the simulated EC2 does without a spot market. `simulate` with `spec.world.spot` draws
among tied zones from the scenario's seed instead (`cloudprovider/aws/simulated/fleet.py`).

`spot_tie_notes(claims)`: one note per spot instance type a planned NodeClaim launches as, when
more than one zone its requirements allow offers that type's spot at the launched price. Called
by the provisioning loop (`loop.py`) for `plan`'s notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gpucap.controllers.launchpreview import PreviewedLaunch
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements

__all__ = ["spot_tie_notes"]


class _Claim(Protocol):
    """What the note reads of a planned NodeClaim (`loop.PlannedNodeClaim`)."""

    @property
    def name(self) -> str: ...

    @property
    def launch(self) -> PreviewedLaunch | None: ...

    @property
    def requirements(self) -> Requirements | None: ...

    @property
    def launched_type(self) -> InstanceType | None: ...


# At most this many zones are named in a note; more are counted.
_SHOWN = 6


def spot_tie_notes(claims: Sequence[_Claim]) -> list[str]:
    """The notes, in instance-type order (see the module docstring)."""
    ties: dict[str, tuple[str, list[str], list[str]]] = {}  # type -> (zone shown, zones, claims)
    for claim in claims:
        launch, it = claim.launch, claim.launched_type
        if launch is None or it is None or launch.capacity_type != "spot":
            continue
        zones = sorted(
            {
                o.zone
                for o in it.offerings
                if o.capacity_type == "spot"
                and o.available
                and not o.reservation_id
                and o.price == launch.price
                and (claim.requirements is None or o.allowed_by(claim.requirements))
            }
        )
        if len(zones) < 2:
            continue
        shown, known, names = ties.setdefault(launch.instance_type, (launch.zone, zones, []))
        names.append(claim.name)
        known.extend(z for z in zones if z not in known)
    notes = []
    for itype, (shown, zones, names) in sorted(ties.items()):
        listed = ", ".join(sorted(zones)[:_SHOWN]) + (
            f" and {len(zones) - _SHOWN} more" if len(zones) > _SHOWN else ""
        )
        who = names[0] if len(names) == 1 else f"{len(names)} NodeClaims"
        notes.append(
            f"spot {itype} costs the same in {len(zones)} zones ({listed}): EC2's "
            f"price-capacity-optimized choice among them depends on capacity it does not "
            f"publish, so {who} show{'s' if len(names) == 1 else ''} the first by name "
            f"({shown}); simulate with a spot market (spec.world.spot) draws among them"
        )
    return notes
