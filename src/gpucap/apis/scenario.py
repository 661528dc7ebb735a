"""Scenario (`gpucap.dev/v1alpha1`): what `gpucap simulate` runs, as in contract.md.

A scenario names the manifests applied at t=0, optional image sizes for the cold-start model,
optional AMI releases, and timed events, each with exactly one action (apply, scale, delete,
capacity, interrupt, amiRelease). Times are Go durations (`5m`, `1h30m`). This module only
parses and validates; the simulator (`sim/scenario.py`) turns it into scheduled events.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from gpucap.apis.meta import KarpenterModel, ObjectMeta
from gpucap.apis.quantity import Quantity

__all__ = ["Scenario", "ScenarioEvent"]

EVENT_ACTIONS = ("apply", "scale", "delete", "capacity", "interrupt", "ami_release")


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
    instance_type: StrictStr
    zone: StrictStr | None = None
    capacity_type: Literal["spot", "on-demand", "reserved"] | None = None
    available: StrictBool = False
    for_: StrictStr | None = Field(default=None, alias="for")


class InterruptAction(KarpenterModel):
    node_claim: StrictStr


class AMIReleaseAction(KarpenterModel):
    kubernetes_version: StrictStr
    version: StrictStr


class ScenarioEvent(KarpenterModel):
    at: StrictStr
    apply: ApplyAction | None = None
    scale: ScaleAction | None = None
    delete: ObjectRef | None = None
    capacity: CapacityAction | None = None
    interrupt: InterruptAction | None = None
    ami_release: AMIReleaseAction | None = None

    @property
    def actions(self) -> list[str]:
        return [a for a in EVENT_ACTIONS if getattr(self, a) is not None]


class ScenarioSpec(KarpenterModel):
    region: StrictStr = "us-east-1"
    kubernetes_version: StrictStr = "1.36"
    seed: StrictInt = 1
    duration: StrictStr = "1h"
    manifests: list[StrictStr] = Field(default_factory=list)
    images: dict[str, ImageSize] = Field(default_factory=dict)
    ami_releases: dict[str, list[StrictStr]] | None = None
    events: list[ScenarioEvent] = Field(default_factory=list)


class Scenario(KarpenterModel):
    api_version: Literal["gpucap.dev/v1alpha1"] = "gpucap.dev/v1alpha1"
    kind: Literal["Scenario"] = "Scenario"
    metadata: ObjectMeta
    spec: ScenarioSpec = Field(default_factory=ScenarioSpec)
