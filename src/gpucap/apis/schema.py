"""The Kubernetes API schema of the core kinds gpucap reads, and the field check it drives.

`kubectl apply` sends a manifest to the API server, which decodes it strictly into the Go types
of the API: a field the type does not have is an error (strict field validation, the default of
`kubectl apply`), and so is a JSON value of the wrong type (`"1"` for an integer field, `true`
for a string), whatever the field validation setting. gpucap does the same for Pods, Nodes,
ConfigMaps, workloads and PodDisruptionBudgets, at every depth, from the bundled schema
`data/kubernetes/schema.json` (built from the Kubernetes OpenAPI document by
`scripts/build_kubernetes_schema.py`; its provenance is in the file).

What the decoder accepts, and so what passes here:
- `null` for any field (Go leaves the field unset);
- integers for integer fields, and numbers with no fraction (`1.0`: kubectl turns YAML and JSON
  numbers into `1` before sending them); `int32` fields only within int32;
- `int64` fields only within int64;
- enum fields (`+enum` Go types: `restartPolicy`, `imagePullPolicy`, a toleration's `effect`,
  ...) only with one of their values, or empty (the API server defaults an empty enum field or
  treats it as unset; the required ones are required by the rules);
- `int-or-string`: an integer or a string; `quantity`: a string or a number, in the quantity
  grammar; `time`: an RFC 3339 string;
- dates and times where a string is expected: PyYAML reads an unquoted `2026-01-01` as a date,
  while the YAML library `kubectl` uses keeps it a string.

After the fields of an object, the API server's validation rules of its type
(`apis/apirules.py`: names, labels, selectors, ports, ranges) run on it, wherever the type
appears.

`status` at the top of an object is not checked: controllers write it, `kubectl get` output
carries it, and the API server ignores it on create. Called by `apis/serde.py` for every
document of a kind in the schema, before the models.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any, TypeAlias

from gpucap.apis.apirules import Rule, rule_for
from gpucap.apis.errors import FieldPath, closest_name, show_value
from gpucap.apis.meta import json_kind
from gpucap.apis.quantity import Quantity, QuantityError

__all__ = [
    "EMBEDDED",
    "ObjectType",
    "Schema",
    "check_embedded",
    "check_fields",
    "load_schema",
    "repeats_schema_error",
]

# Scalar types, as the build script names them.
STRING, BOOLEAN, NUMBER, INT32, INT64, INT_OR_STRING, QUANTITY, TIME, ANY = (
    "string",
    "boolean",
    "number",
    "int32",
    "int64",
    "int-or-string",
    "quantity",
    "time",
    "any",
)
_SCALARS = frozenset((STRING, BOOLEAN, NUMBER, INT32, INT64, INT_OR_STRING, QUANTITY, TIME, ANY))
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_INTEGERS = frozenset((INT32, INT64, INT_OR_STRING))
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


@dataclass(eq=False, slots=True)
class ObjectType:
    """An API struct: its name (`core.v1.Container`) and each field's type."""

    name: str
    fields: dict[str, Type] = field(default_factory=dict)
    rule: Rule | None = None  # the API server's validation rules of this type (apirules)


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Type


@dataclass(frozen=True, slots=True)
class MapOf:
    value: Type


@dataclass(frozen=True, slots=True)
class EnumOf:
    """A string field with a closed set of values (`enum:A|B` in the bundled schema)."""

    values: frozenset[str]
    shown: str  # "'A', 'B'" for messages


Type: TypeAlias = "str | ObjectType | ListOf | MapOf | EnumOf"


@dataclass(frozen=True, slots=True)
class Schema:
    """The bundled schema: the root type of each `apiVersion/kind`, every type by name, and
    where it came from."""

    kinds: dict[str, ObjectType]
    types: dict[str, ObjectType]
    provenance: dict[str, str]

    def root(self, api_version: str, kind: str) -> ObjectType | None:
        return self.kinds.get(f"{api_version}/{kind}")


# Core API types embedded in the CRDs of pod-creating operators gpucap reads: (apiVersion, kind)
# -> (path pattern, type). Their CRDs are generated from the Go types (controller-gen), so the
# API server checks these parts as strictly as it checks a Deployment's template. `*` is every
# item of a list. The operators' own fields are checked by their models.
_RAY_CLUSTER = (("headGroupSpec", "template"), ("workerGroupSpecs", "*", "template"))
EMBEDDED: dict[tuple[str, str], tuple[tuple[tuple[str, ...], str], ...]] = {
    ("ray.io/v1", "RayCluster"): tuple(
        (("spec", *p), "core.v1.PodTemplateSpec") for p in _RAY_CLUSTER
    ),
    ("ray.io/v1", "RayService"): tuple(
        (("spec", "rayClusterConfig", *p), "core.v1.PodTemplateSpec") for p in _RAY_CLUSTER
    ),
    ("ray.io/v1", "RayJob"): (
        *((("spec", "rayClusterSpec", *p), "core.v1.PodTemplateSpec") for p in _RAY_CLUSTER),
        (("spec", "submitterPodTemplate"), "core.v1.PodTemplateSpec"),
    ),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): (
        (("spec", "leaderWorkerTemplate", "leaderTemplate"), "core.v1.PodTemplateSpec"),
        (("spec", "leaderWorkerTemplate", "workerTemplate"), "core.v1.PodTemplateSpec"),
    ),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): (
        (("spec", "replicatedJobs", "*", "template", "spec"), "batch.v1.JobSpec"),
    ),
}


def parse_schema(doc: dict[str, Any]) -> Schema:
    """Compile the bundled JSON (type strings) into linked `ObjectType`s."""
    raw_types: dict[str, dict[str, str]] = doc["types"]
    objects = {name: ObjectType(name, rule=rule_for(name)) for name in raw_types}

    def compile_type(text: str) -> Type:
        if text.startswith("[]"):
            return ListOf(compile_type(text[2:]))
        if text.startswith("{}"):
            return MapOf(compile_type(text[2:]))
        if text.startswith("enum:"):
            values = text[5:].split("|")
            return EnumOf(frozenset(values), ", ".join(repr(v) for v in values))
        if text in _SCALARS:
            return text
        if text in objects:
            return objects[text]
        raise ValueError(f"schema: unknown type {text!r}")

    for name, fields in raw_types.items():
        objects[name].fields.update({f: compile_type(t) for f, t in fields.items()})
    kinds = {key: objects[name] for key, name in doc["kinds"].items()}
    return Schema(kinds, objects, dict(doc["provenance"]))


@cache
def load_schema() -> Schema:
    """The bundled schema, read once."""
    text = (resources.files("gpucap.data") / "kubernetes" / "schema.json").read_text("utf-8")
    return parse_schema(json.loads(text))


def check_fields(
    root: ObjectType, data: dict[str, Any], *, with_rules: bool = True
) -> list[tuple[FieldPath, str]]:
    """Every unknown field and wrongly typed value of one document, as (path, message), in
    document order. `data` is the document as loaded; top-level `status` is skipped.

    The document is also normalized in place as kubectl's conversion to JSON leaves it, so the
    models see what the API server would: a field set to null is dropped, `1.0` in an integer
    field becomes `1`, and a YAML date in a string field becomes its text."""
    out: list[tuple[FieldPath, str]] = []
    rules: list[tuple[FieldPath, str]] = []
    _check_object(data, root, (), out, rules, top=True)
    # Like the API server, which validates only what it could decode: rule findings count
    # only when the document has no decoding error.
    return out or (rules if with_rules else [])


def check_embedded(
    schema: Schema, api_version: str, kind: str, data: dict[str, Any]
) -> list[tuple[FieldPath, str]]:
    """`check_fields` for the core types embedded in an operator's object (`EMBEDDED`): pod
    templates of KubeRay, LeaderWorkerSet and JobSet objects. Empty for any other kind."""
    out: list[tuple[FieldPath, str]] = []
    rules: list[tuple[FieldPath, str]] = []
    for pattern, type_name in EMBEDDED.get((api_version, kind), ()):
        t = schema.types[type_name]
        for path, value in _at(data, pattern, ()):
            if type(value) is dict:
                _check_object(value, t, path, out, rules)
    return out or rules


def _at(value: Any, pattern: tuple[str, ...], path: FieldPath) -> Any:
    """(path, value) of every value `pattern` reaches in `value` (`*`: each list item)."""
    if not pattern:
        yield path, value
        return
    step, rest = pattern[0], pattern[1:]
    if step == "*":
        if type(value) is list:
            for i, item in enumerate(value):
                yield from _at(item, rest, (*path, i))
    elif type(value) is dict and step in value:
        yield from _at(value[step], rest, (*path, step))


def repeats_schema_error(path: FieldPath, missing: bool, reported: Sequence[FieldPath]) -> bool:
    """Whether a model error at `path` repeats an error this check reported: it is at or below
    a reported path, or it is a required field `missing` next to a reported unknown field (most
    likely its misspelling: `topologykey` for `topologyKey`). The loader drops those."""
    return any(path[: len(p)] == p or (missing and path[:-1] == p[:-1]) for p in reported)


def _unknown(name: str, obj: ObjectType) -> str:
    hint = closest_name(name, obj.fields)
    return f"unknown field {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")


_UNCHANGED = object()


def _check_object(
    value: dict[str, Any],
    t: ObjectType,
    path: FieldPath,
    out: list[tuple[FieldPath, str]],
    rules: list[tuple[FieldPath, str]],
    *,
    top: bool = False,
) -> None:
    fields = t.fields
    nulls: list[str] = []
    for key, item in value.items():
        if top and key == "status":
            continue
        ft = fields.get(key)
        if ft is None:
            out.append(((*path, key), _unknown(key, t)))
        elif item is None:
            nulls.append(key)
        elif ft == STRING and type(item) is str:
            continue  # the commonest field, and fine: `_check` would find nothing to say
        else:
            new = _check(item, ft, (*path, key), out, rules)
            if new is not _UNCHANGED:
                value[key] = new
    for key in nulls:
        del value[key]
    if t.rule is not None:
        t.rule(value, path, rules)


def _check(
    value: Any,
    t: Type,
    path: FieldPath,
    out: list[tuple[FieldPath, str]],
    rules: list[tuple[FieldPath, str]],
) -> Any:
    """Check one value (one call per value: the walk is linear in the size of the document);
    return what replaces it in the document, or `_UNCHANGED`."""
    if type(t) is ObjectType:
        if type(value) is not dict:
            out.append((path, f"expected an object (mapping), got {json_kind(value)}"))
        else:
            _check_object(value, t, path, out, rules)
    elif type(t) is str:
        kind = type(value)
        if kind is float and t in _INTEGERS and value.is_integer():
            value = int(value)
            new: Any = value
        elif t == STRING and (kind is dt.date or kind is dt.datetime):
            return value.isoformat()
        else:
            new = _UNCHANGED
        problem = _scalar_problem(value, t)
        if problem is not None:
            out.append((path, problem))
        return new
    elif type(t) is EnumOf:
        if type(value) is not str:
            out.append((path, f"expected a string, got {show_value(value)}"))
        elif value and value not in t.values:
            out.append((path, f"unsupported value {value[:60]!r}: supported values: {t.shown}"))
    elif type(t) is ListOf:
        if type(value) is not list:
            out.append((path, f"expected a list, got {json_kind(value)}"))
            return _UNCHANGED
        item_type = t.item
        strings = item_type == STRING
        for i, item in enumerate(value):
            if item is not None and not (strings and type(item) is str):
                new = _check(item, item_type, (*path, i), out, rules)
                if new is not _UNCHANGED:
                    value[i] = new
    elif type(t) is MapOf:
        if type(value) is not dict:
            out.append((path, f"expected an object (mapping), got {json_kind(value)}"))
            return _UNCHANGED
        value_type = t.value
        strings = value_type == STRING
        for key, item in value.items():
            if item is not None and not (strings and type(item) is str):
                new = _check(item, value_type, (*path, key), out, rules)
                if new is not _UNCHANGED:
                    value[key] = new
    return _UNCHANGED


def _scalar_problem(value: Any, t: str) -> str | None:
    kind = type(value)
    if t == STRING:
        if kind is str or kind is dt.date or kind is dt.datetime:
            return None
        return f"expected a string, got {show_value(value)}"
    if t in (INT64, INT32):
        if kind is not int:
            return f"expected an integer, got {show_value(value)}"
        if t == INT32 and not _INT32[0] <= value <= _INT32[1]:
            return f"{value} is outside the 32-bit integer range"
        if not _INT64[0] <= value <= _INT64[1]:
            return f"{value} is outside the 64-bit integer range"
        return None
    if t == BOOLEAN:
        return (
            None if kind is bool else f"expected a boolean (true or false), got {show_value(value)}"
        )
    if t == INT_OR_STRING:
        if kind is str:
            return None
        if kind is int:
            if not _INT32[0] <= value <= _INT32[1]:
                return f"{value} is outside the 32-bit integer range"
            return None
        return f"expected an integer or a string, got {show_value(value)}"
    if t == QUANTITY:
        if kind is str or kind is int or kind is float:
            return _quantity_problem(value)
        return f"expected a quantity (a string such as '500m' or a number), got {show_value(value)}"
    if t == NUMBER:
        return (
            None if kind is int or kind is float else f"expected a number, got {show_value(value)}"
        )
    if t == TIME:
        if kind is dt.datetime:
            return None
        if kind is str and _RFC3339.fullmatch(value):
            return None
        if kind is str:
            return f"{value!r} is not an RFC 3339 time (e.g. 2026-01-01T00:00:00Z)"
        return f"expected a time string (RFC 3339), got {show_value(value)}"
    return None  # ANY


@lru_cache(maxsize=4096)
def _quantity_problem(value: str | int | float) -> str | None:
    # Cached: real manifests repeat the same few quantities ("1", "16Gi") on every pod.
    try:
        Quantity.parse(value)
    except QuantityError as err:
        return str(err)
    return None
