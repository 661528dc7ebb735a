"""Shared pieces of every manifest model: the pydantic base classes, ObjectMeta, label selectors.

Two bases, one wire format (camelCase, as `kubectl` writes it):
- `KarpenterModel` for the CRDs gpucap owns the meaning of (NodePool, EC2NodeClass, NodeOverlay,
  NodeClaim, Scenario): unknown fields are errors, as the API server's strict field validation
  makes them, because a misspelt `consolidateAfter` silently defaulting is the costly mistake.
- `KubeModel` for core Kubernetes kinds, of which gpucap reads only part: unknown fields are kept
  (and round-trip); the loader checks every field name and JSON type of these kinds against the
  Kubernetes API schema (`schema.py`) before the model sees them, so typos are caught at any
  depth.

Two metadata models: `ObjectMeta` for cluster-scoped kinds and templates (no namespace unless
written), `NamespacedObjectMeta` for every namespaced kind gpucap models (Pod, the workloads,
DaemonSet, PodDisruptionBudget, ConfigMap, JobSet, LeaderWorkerSet, the KubeRay kinds): its
`namespace` is "default" when the input has none (absent, null or empty), as the API server
gives an object created without one the request's namespace, which is kubectl's "default". The
default is applied here, once, so every namespaced object the code handles has a namespace,
whether loaded (`serde.py` also writes it into the raw document, for the object's reference and
the pod UID) or built directly (tests, `workloads.build_pod`).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

__all__ = [
    "IntOrString",
    "KarpenterModel",
    "KubeModel",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NamespacedObjectMeta",
    "ObjectMeta",
    "OwnerReference",
    "matches_selector",
]


class KarpenterModel(BaseModel):
    """Strict base: camelCase on the wire, unknown fields rejected, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        strict=False,
        coerce_numbers_to_str=False,
    )


class KubeModel(BaseModel):
    """Lenient base for core kinds: camelCase, unknown fields kept, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
    )


class OwnerReference(KubeModel):
    api_version: str = ""
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(KubeModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    creation_timestamp: dt.datetime | None = None
    deletion_timestamp: dt.datetime | None = None
    owner_references: list[OwnerReference] = Field(default_factory=list)


def _default_namespace(value: object) -> object:
    # The API server on create: an object without a namespace (or an empty one) is created in
    # the request's namespace, "default" for `kubectl apply` without `-n` or a context namespace.
    return "default" if value is None or value == "" else value


class NamespacedObjectMeta(ObjectMeta):
    """The metadata of a namespaced kind: `namespace` is always set, "default" unless written
    (see the module docstring)."""

    namespace: Annotated[str, BeforeValidator(_default_namespace)] = "default"


class LabelSelectorRequirement(KubeModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(KubeModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


def matches_selector(selector: LabelSelector | None, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics; a nil selector matches nothing, empty matches all."""
    if selector is None:
        return False
    for k, v in selector.match_labels.items():
        if labels.get(k) != v:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        if req.operator == "In" and not (present and labels[req.key] in req.values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in req.values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def _int_or_string(value: Any) -> int | str:
    # Kubernetes IntOrString: a JSON integer or a string (e.g. "50%"), nothing else.
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise PydanticCustomError(
            "int_or_string",
            "expected an integer or a string, got {kind}",
            {"kind": json_kind(value)},
        )
    return value


IntOrString = Annotated[int | str, PlainValidator(_int_or_string)]


def json_kind(value: object) -> str:
    """The JSON type name of a loaded YAML value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def dump(model: BaseModel) -> dict[str, Any]:
    """The wire form of a model: camelCase, JSON types, no nulls."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
