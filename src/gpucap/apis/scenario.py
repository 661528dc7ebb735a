"""Scenario (`gpucap.dev/v1alpha1`): what `gpucap simulate` runs, as in contract.md.

A scenario names the manifests applied at t=0, optional image sizes for the cold-start model,
optional AMI releases, add-ons installed outside the manifests (`addons`: the NVIDIA device
plugin or the GPU Operator, as Helm installs them), cold-start timing overrides (`timings`), and
timed events, each with exactly one action (apply, scale, delete, capacity, interrupt,
amiRelease, reclaim). `reservations` names the account's capacity reservations (a file shaped
like EC2's DescribeCapacityReservations answer, or that document inline) and `start` the
simulated clock's start (RFC 3339), so that reservations' real dates can be run. Times are Go
durations (`5m`, `1h30m`). This module parses, and
`apis/validation.py` checks what needs nothing else; the simulator's loader
(`sim/scenario.py`) checks the rest against the catalog and the files and resolves it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from gpucap.apis.meta import KarpenterModel, ObjectMeta
from gpucap.apis.quantity import Quantity

__all__ = [
    "ADDON_NAMES",
    "EVENT_ACTIONS",
    "EVENT_KINDS",
    "MAX_SCENARIO_SECONDS",
    "Scenario",
    "ScenarioEvent",
]

EVENT_ACTIONS = ("apply", "scale", "delete", "capacity", "interrupt", "ami_release", "reclaim")
# The actions as the YAML spells them (event "kinds").
EVENT_KINDS = ("apply", "scale", "delete", "capacity", "interrupt", "amiRelease", "reclaim")
# What `spec.addons[].name` may name.
ADDON_NAMES = ("nvidia-device-plugin", "gpu-operator")
# The longest scenario gpucap runs: 30 days. A month is the longest horizon anyone plans a GPU
# fleet's bill over (Karpenter's default expireAfter is 720h); beyond it a typo (`6000h`) would
# be a run of hours of wall time.
MAX_SCENARIO_SECONDS = 30 * 24 * 3600


class ImageSize(KarpenterModel):
    compressed: Quantity
    uncompressed: Quantity | None = None


class ApplyAction(KarpenterModel):
    file: StrictStr | None = None
    manifest: dict[str, Any] | None = None


class ObjectRef(KarpenterModel):
    kind: StrictStr
    name: StrictStr
    namespace: StrictStr = "default"


class ScaleAction(ObjectRef):
    replicas: StrictInt


class CapacityAction(KarpenterModel):
    # What the event selects: any combination of a type (or a family), a zone and a capacity
    # type; at least one (`sim/scenario.py` checks them against the catalog).
    instance_type: StrictStr | None = None
    instance_family: StrictStr | None = None
    zone: StrictStr | None = None
    capacity_type: Literal["spot", "on-demand", "reserved"] | None = None
    available: StrictBool = False
    for_: StrictStr | None = Field(default=None, alias="for")


class InterruptAction(KarpenterModel):
    node_claim: StrictStr


class AMIReleaseAction(KarpenterModel):
    kubernetes_version: StrictStr
    version: StrictStr


class ReclaimAction(KarpenterModel):
    # The interruptible capacity reservation its owner takes back (`cr-...`).
    reservation: StrictStr


class ScenarioEvent(KarpenterModel):
    at: StrictStr
    apply: ApplyAction | None = None
    scale: ScaleAction | None = None
    delete: ObjectRef | None = None
    capacity: CapacityAction | None = None
    interrupt: InterruptAction | None = None
    ami_release: AMIReleaseAction | None = None
    reclaim: ReclaimAction | None = None

    @property
    def actions(self) -> list[str]:
        return [a for a in EVENT_ACTIONS if getattr(self, a) is not None]


class TimeSlicing(KarpenterModel):
    replicas: StrictInt = 1
    rename_by_default: StrictBool = False


class AddonSpec(KarpenterModel):
    name: StrictStr
    time_slicing: TimeSlicing | None = None


class SpotMarketSpec(KarpenterModel):
    # Where EC2 reclaims spot pools by itself (`sim/spotmarket.py`): `none` (only `interrupt`
    # events), `advisor` (Spot Instance Advisor buckets) or `measured` (fitted from traces);
    # `ratePerHour` (instance family or type -> reclaims per pool-hour) overrides the model.
    model: Literal["none", "advisor", "measured"] = "none"
    rate_per_hour: dict[StrictStr, float] = Field(default_factory=dict)


class WorldSpec(KarpenterModel):
    spot: SpotMarketSpec | None = None


class MetricTrace(KarpenterModel):
    # `hpa`: NAME or NAMESPACE/NAME; `trace`: a CSV file (relative to the scenario) or
    # `bundled:NAME`; `column`: the value column (default: the first); `scale` multiplies;
    # `metric`: the HPA metric's name it feeds (default: every External/Pods metric).
    hpa: StrictStr
    trace: StrictStr
    column: StrictStr | None = None
    scale: StrictFloat | StrictInt = 1
    metric: StrictStr | None = None


class ScenarioSpec(KarpenterModel):
    region: StrictStr = "us-east-1"
    kubernetes_version: StrictStr = "1.36"
    seed: StrictInt = 1
    duration: StrictStr = "1h"
    manifests: list[StrictStr] = Field(default_factory=list)
    images: dict[str, ImageSize] = Field(default_factory=dict)
    ami_releases: dict[str, list[StrictStr]] | None = None
    addons: list[AddonSpec] = Field(default_factory=list)
    timings: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    events: list[ScenarioEvent] = Field(default_factory=list)
    # The simulated clock's start (RFC 3339); None: `runtime/clock.py` EPOCH.
    start: StrictStr | None = None
    # Capacity reservations: a file (relative to the scenario) or the document inline
    # (`{CapacityReservations: [...]}`); checked by the loader (`sim/scenario.py`).
    reservations: StrictStr | dict[str, Any] | None = None
    # The world's own behaviour (`sim/worldspec.py` checks it); None: only what events script.
    world: WorldSpec | None = None
    # Metric traces feeding HorizontalPodAutoscalers (`sim/metrics.py` loads and checks them).
    metrics: list[MetricTrace] = Field(default_factory=list)


class Scenario(KarpenterModel):
    api_version: Literal["gpucap.dev/v1alpha1"] = "gpucap.dev/v1alpha1"
    kind: Literal["Scenario"] = "Scenario"
    metadata: ObjectMeta
    spec: ScenarioSpec = Field(default_factory=ScenarioSpec)
