"""pydantic validation errors as gpucap's one-line messages, and field paths as text.

pydantic reports `('spec', 'requirements', 2, 'operator')` and "Input should be 'In', ...";
users get `spec.requirements[2].operator: 'Inn' is not one of In, NotIn, ...`, worded like the
API server's errors, with a did-you-mean for a misspelt field. Called by the loader
(`apis/serde.py`) and by the device-plugin config parser (`apis/gpuoperator.py`).
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Iterable
from typing import Any, TypeAlias

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from gpucap.apis.meta import json_kind

__all__ = ["FieldPath", "closest_name", "format_path", "show_value", "translate"]

FieldPath: TypeAlias = tuple[str | int, ...]
Path_ = FieldPath


def format_path(path: Iterable[str | int]) -> str:
    """`('spec', 'requirements', 2, 'key')` -> `spec.requirements[2].key`.

    Map keys that are not plain identifiers (label keys, resource names) are bracketed:
    `spec.limits[nvidia.com/gpu]`.
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out


def translate(detail: ErrorDetails, model: type[BaseModel]) -> tuple[Path_, str]:
    loc = tuple(p for p in detail["loc"] if not _is_union_tag(p))
    kind = detail["type"]
    given = detail.get("input")
    ctx = detail.get("ctx") or {}
    if kind == "missing":
        return loc, "required field is missing"
    if kind == "extra_forbidden":
        name = str(loc[-1]) if loc else ""
        hint = _suggest(model, loc[:-1], name)
        return loc, f"unknown field {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
    if kind == "literal_error":
        allowed = ", ".join(re.findall(r"'([^']*)'", str(ctx.get("expected", ""))))
        return loc, f"{given!r} is not one of {allowed}"
    if kind in ("string_type",):
        return loc, f"expected a string, got {json_kind(given)} {_show(given)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return loc, f"expected an integer, got {json_kind(given)} {_show(given)}"
    if kind in ("bool_type", "bool_parsing"):
        return loc, f"expected a boolean (true or false), got {json_kind(given)} {_show(given)}"
    if kind in ("list_type", "tuple_type"):
        return loc, f"expected a list, got {json_kind(given)}"
    if kind in ("dict_type", "model_type", "model_attributes_type", "mapping_type"):
        return loc, f"expected an object (mapping), got {json_kind(given)}"
    if kind == "greater_than_equal":
        return loc, f"{given!r} is less than the minimum {ctx.get('ge')}"
    if kind == "less_than_equal":
        return loc, f"{given!r} is greater than the maximum {ctx.get('le')}"
    if kind in ("float_type", "float_parsing"):
        return loc, f"expected a number, got {json_kind(given)} {_show(given)}"
    return loc, str(detail["msg"])


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def show_value(value: Any) -> str:
    """`integer 1`, `string "1"`: a wrong value as type errors name it (shortened to 40 chars)."""
    return f"{json_kind(value)} {_show(value)}"


def closest_name(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate a misspelt field name most likely meant, or None: difflib's closest match
    (ratio >= 0.6), else a case-insensitive equal (`consolidateafter` -> `consolidateAfter`)."""
    names = list(candidates)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return close[0]
    return {a.lower(): a for a in names}.get(name.lower())


def _is_union_tag(part: str | int) -> bool:
    # pydantic names union members in error locations (`str`, `function-plain[...]`, ...).
    return isinstance(part, str) and (
        part in ("str", "int", "float", "bool", "list", "dict", "none") or "[" in part
    )


def _suggest(model: type[BaseModel], path: Path_, name: str) -> str | None:
    """The field name closest to a misspelt one, looking up the model at `path`."""
    target: Any = model
    for part in path:
        target = _field_type(target, part)
        if target is None:
            return None
    if not (isinstance(target, type) and issubclass(target, BaseModel)):
        return None
    return closest_name(name, (f.alias or n for n, f in target.model_fields.items()))


def _field_type(target: Any, part: str | int) -> Any:
    target = _unwrap(target)
    if isinstance(part, int):
        args = typing.get_args(target)
        return _unwrap(args[0]) if args else None
    if isinstance(target, type) and issubclass(target, BaseModel):
        for n, f in target.model_fields.items():
            if part in (n, f.alias):
                return _unwrap(f.annotation)
        return None
    if typing.get_origin(target) is dict:
        return _unwrap(typing.get_args(target)[1])
    return None


def _unwrap(tp: Any) -> Any:
    """Strip Optional/Annotated; return the model or container type underneath."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp
