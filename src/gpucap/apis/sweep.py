"""Sweep (`gpucap.dev/v1alpha1`): what `gpucap sweep` runs: one scenario, many designs of it.

A sweep names a scenario (relative to the sweep file), how many seeds each design runs, and
axes: each axis changes one field of one object of the scenario's `spec.manifests` (`target`,
by kind and name), either a NodePool requirement's values (`requirement: KEY`) or any field by
its path (`path: spec.disruption.consolidateAfter`), over a list of `values`; or, with `target:
{kind: Scenario, name: SCENARIO}`, a field of the scenario itself (`spec.world.spot.model`,
`spec.timings.registration`, `spec.metrics[0].scale`), but not `spec.manifests` or
`spec.seed`. The designs (variants) are the product of the axes in the order written, unless
`variants:` lists them.

This module reads the document and checks what needs nothing else (`sweep_problems`: axis names,
one of requirement/path, path syntax, variants naming axes); `sim/sweep.py` applies the values
to the loaded scenario and validates each variant. The format is documented in
docs/scenario.md ("Sweeps"). Paths are written as `format_path` writes them: dotted fields,
`[N]` for a list's item, `[KEY]` for a map key that is not a plain word
(`spec.limits[nvidia.com/gpu]`), and `[FIELD=VALUE]` for the list item whose FIELD is VALUE
(`spec.template.spec.containers[name=vllm].image`).
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal, TypeAlias

from pydantic import Field, StrictInt, StrictStr, ValidationError

from gpucap.apis.errors import FieldPath, translate
from gpucap.apis.meta import KarpenterModel, ObjectMeta
from gpucap.apis.serde import KINDS

__all__ = [
    "MAX_SWEEP_RUNS",
    "PathStep",
    "Sweep",
    "SweepAxis",
    "SweepSpec",
    "SweepTarget",
    "SweepVariant",
    "parse_field_path",
    "parse_sweep",
    "sweep_problems",
]

# Runs (variants x seeds) a sweep may ask for: every run's summary is kept for the JSON
# document (a few KB each), so 100,000 runs is already a document of hundreds of MB.
MAX_SWEEP_RUNS = 100_000
MAX_SEEDS = 10_000

# One step of a field path: a map key, a list index, or a list item selected by (field, value).
PathStep: TypeAlias = str | int | tuple[str, str]


class SweepTarget(KarpenterModel):
    kind: StrictStr
    name: StrictStr
    namespace: StrictStr | None = None  # namespaced kinds: "default" when not given


class SweepAxis(KarpenterModel):
    name: StrictStr
    target: SweepTarget
    requirement: StrictStr | None = None
    path: StrictStr | None = None
    values: list[Any] = Field(min_length=1)


class SweepVariant(KarpenterModel):
    name: StrictStr | None = None
    values: dict[str, Any] = Field(default_factory=dict)


class SweepSpec(KarpenterModel):
    scenario: StrictStr
    seeds: StrictInt = Field(default=1, ge=1, le=MAX_SEEDS)
    axes: list[SweepAxis] = Field(min_length=1)
    variants: list[SweepVariant] | None = None


class Sweep(KarpenterModel):
    api_version: Literal["gpucap.dev/v1alpha1"] = "gpucap.dev/v1alpha1"
    kind: Literal["Sweep"] = "Sweep"
    metadata: ObjectMeta
    spec: SweepSpec


def parse_sweep(data: Any) -> Sweep | list[tuple[FieldPath, str]]:
    """The document as a `Sweep`, or its problems as (field path, message): pydantic's errors
    worded as the loader words them (`apis/errors.translate`)."""
    if not isinstance(data, dict):
        return [
            ((), "a sweep file holds one mapping of kind Sweep (apiVersion gpucap.dev/v1alpha1)")
        ]
    try:
        return Sweep.model_validate(data)
    except ValidationError as err:
        return [translate(detail, Sweep) for detail in err.errors(include_url=False)]


_STEP = re.compile(r"([^.\[\]]+)|\[([^\[\]]*)\]|(\.)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_field_path(text: str) -> tuple[PathStep, ...]:
    """`spec.limits[nvidia.com/gpu]` -> ('spec', 'limits', 'nvidia.com/gpu'); `[2]` is an index,
    `[name=vllm]` a selector. Raises ValueError with the reason."""
    steps: list[PathStep] = []
    pos = 0
    expect_field = True  # at the start and after a dot a field name must come
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None:
            raise ValueError(f"unexpected {text[pos]!r} at character {pos + 1}")
        word, bracket, dot = m.groups()
        if dot is not None:
            if expect_field:
                raise ValueError(f"a field name is missing before the '.' at character {pos + 1}")
            expect_field = True
        elif word is not None:
            if not expect_field:
                raise ValueError(f"a '.' is missing before {word!r}")
            steps.append(word)
            expect_field = False
        else:
            if expect_field and steps:
                raise ValueError(f"a field name is missing before '[{bracket}]'")
            if not bracket:
                raise ValueError("an empty [] selects nothing")
            if bracket.isdigit():
                steps.append(int(bracket))
            elif "=" in bracket:
                field, _, value = bracket.partition("=")
                if not _WORD.fullmatch(field) or not value:
                    raise ValueError(f"[{bracket}] is not a selector like [name=VALUE]")
                steps.append((field, value))
            else:
                steps.append(bracket)
            expect_field = False
        pos = m.end()
    if not steps or expect_field:
        raise ValueError("a path ends with a field name, like spec.disruption.consolidateAfter")
    if not isinstance(steps[0], str):
        raise ValueError("a path starts with a field name (spec, metadata)")
    return tuple(steps)


# Fields that say which object a document is: a sweep changes an object, not which one it is.
_IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))


def sweep_problems(sweep: Sweep) -> list[tuple[FieldPath, str]]:
    """What is wrong with a parsed sweep on its own (field path from `spec` down, message)."""
    s = sweep.spec
    out: list[tuple[FieldPath, str]] = []
    seen: dict[str, int] = {}
    for i, axis in enumerate(s.axes):
        at: FieldPath = ("axes", i)
        if not axis.name.strip():
            out.append(((*at, "name"), "an axis needs a name (the table's column)"))
        elif axis.name in seen:
            out.append(((*at, "name"), f"{axis.name!r} is also axes[{seen[axis.name]}]'s name"))
        else:
            seen[axis.name] = i
        if (axis.requirement is None) == (axis.path is None):
            out.append(
                (at, "give one of requirement (a NodePool requirement's key) or path (a field)")
            )
        if axis.requirement is not None:
            if axis.target.kind != "NodePool" and axis.target.kind in KINDS:
                out.append(
                    (
                        (*at, "requirement"),
                        f"a requirement axis changes a NodePool, not a {axis.target.kind}; "
                        "use path: for other kinds",
                    )
                )
            for j, value in enumerate(axis.values):
                if not _requirement_values(value):
                    out.append(
                        (
                            (*at, "values", j),
                            "a requirement's values are a list of strings (or one string)",
                        )
                    )
        for j, value in enumerate(axis.values):
            problem = _json_problem(value)
            if problem is not None:
                out.append(((*at, "values", j), problem))
        if axis.path is not None:
            try:
                steps = parse_field_path(axis.path)
            except ValueError as err:
                out.append(((*at, "path"), f"{axis.path!r}: {err}"))
            else:
                if any(steps[: len(f)] == f for f in _IDENTITY):
                    out.append(
                        (
                            (*at, "path"),
                            f"{axis.path} says which object this is; a sweep changes "
                            "an object's fields, not its identity",
                        )
                    )
                elif axis.target.kind == "Scenario":
                    problem = _scenario_path_problem(steps)
                    if problem is not None:
                        out.append(((*at, "path"), f"{axis.path}: {problem}"))
    for k, variant in enumerate(s.variants or ()):
        for key, value in variant.values.items():
            problem = _json_problem(value)
            if problem is not None:
                out.append((("variants", k, "values", key), problem))
            if key not in seen:
                known = ", ".join(seen) or "none"
                out.append((("variants", k, "values", key), f"not an axis (axes: {known})"))
    names = [v.name for v in s.variants or () if v.name is not None]
    for k, variant in enumerate(s.variants or ()):
        if variant.name is not None and names.count(variant.name) > 1:
            out.append((("variants", k, "name"), f"{variant.name!r} names two variants"))
    runs = len(s.variants) if s.variants is not None else _grid_size(s)
    if runs * s.seeds > MAX_SWEEP_RUNS:
        out.append(
            (
                ("seeds",),
                f"{runs:,} variants x {s.seeds:,} seeds is {runs * s.seeds:,} runs; a sweep runs "
                f"at most {MAX_SWEEP_RUNS:,}",
            )
        )
    if s.variants is not None and not s.variants:
        out.append((("variants",), "an empty list runs nothing; leave it out to run the grid"))
    return out


def _scenario_path_problem(steps: tuple[PathStep, ...]) -> str | None:
    """Why a Scenario axis cannot change this field, or None. Its world (`spec.world`,
    `spec.metrics`, `spec.timings`, `spec.images`, events...) is what a Scenario axis is for;
    which files it applies are the designs' common ground, and its seed is the sweep's."""
    if steps[0] != "spec" or len(steps) < 2:
        return "a Scenario axis changes a field under spec (spec.world.spot.model)"
    if steps[1] == "manifests":
        return (
            "a sweep changes the objects of spec.manifests (target them by kind and name), "
            "not which files the scenario applies"
        )
    if steps[1] == "seed":
        return "the runs' seeds are the sweep's (spec.seeds, from the scenario's seed on)"
    return None


def _grid_size(spec: SweepSpec) -> int:
    size = 1
    for axis in spec.axes:
        size *= len(axis.values)
    return size


def _requirement_values(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _json_problem(value: Any) -> str | None:
    """Why `value` cannot be a manifest's value (and the JSON document's), or None: YAML reads
    `2026-01-01` as a date and `.inf` as infinity, neither of which a manifest field holds."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a finite number"
    if isinstance(value, list):
        return next((p for v in value if (p := _json_problem(v)) is not None), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "a map's keys are strings"
        return next((p for v in value.values() if (p := _json_problem(v)) is not None), None)
    return f"{value!s} is read as a {type(value).__name__}, not a string: quote it"
