"""`plan --optimal`: the cheapest fleet the same NodePools allow for the pods Karpenter placed
on new nodes, its LP relaxation (the cost floor), and the decoded fleet (docs/design/optimal.md).

`instance.py` builds the bin-packing instance from a `Plan` with the scheduler's own
compatibility checks, `milp.py` solves it with HiGHS (`scipy.optimize.milp`), `fleet.py`
decodes the solution into nodes and checks each pod fits; `floor.py` is the floor of a population
of pods, memoised (the simulator's `costFloorUSD`). Called by `operator/changes.py`,
`gpucap plan --optimal` and `sim/costfloor.py`.
"""

from gpucap.controllers.provisioning.optimal.fleet import (
    DEFAULT_TIME_LIMIT,
    OptimalFleet,
    check,
    optimise,
)
from gpucap.controllers.provisioning.optimal.instance import (
    Bin,
    FleetNode,
    Instance,
    PodClass,
    build_instance,
)

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "Bin",
    "FleetNode",
    "Instance",
    "OptimalFleet",
    "PodClass",
    "build_instance",
    "check",
    "optimise",
]
