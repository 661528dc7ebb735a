"""A sweep (`gpucap sweep SWEEP.yaml`): the designs (variants) of one scenario, each run over
the same seeds, and which design is worth its cost.

- `load_sweep(path, catalog)`: the Sweep document (`apis/sweep.py`), its scenario (loaded once,
  `sim/scenario.load_scenario`), and every variant: the scenario with the axes' values applied
  to the targeted objects of `spec.manifests`, each changed object loaded again as `validate`
  loads it (`apis/serde.load_documents`: the schema, the models, the validation rules). Every
  problem is one line naming the sweep file and the field (an axis value alone:
  `axes[1].values[0]`; a variant's combination: `variants[2]`, or the grid's variant by name),
  all found before any run: a `SweepError`.
- `SweepRun`: the work every engine ships once (the variants' loaded scenarios and the catalog,
  a frozen dataclass, pickled by the Ray engine); called with an item `(variant, seed)` (small,
  picklable) it is one run (`sim/runset.SeedRun`).
- `variant_results(sweep, outcomes)`: per variant, its runs in seed order and their set summary
  (`sim/runset.set_summary`), and whether it is on the Pareto front of cost vs serving lost
  (`pareto_front`, on the p50s); `cheapest_within(results, bound)`: the `--max-serving-lost`
  choice.

How a value is applied: the target object's wire form (`apis/meta.dump`, which the loader reads back
to the same object) is changed and loaded again. A Scenario axis (the target `SCENARIO`) sets the
value in the scenario file's parsed document, which is loaded again as a whole
(`load_scenario(edit=...)`, `_reloaded`) before the objects' axes apply. `requirement: KEY` makes
the NodePool's requirement `KEY In values` (replacing the one with that key, or added after the
others); `path:` sets the field, creating the maps on the way (a list item must exist: `[N]`,
`[FIELD=VALUE]`). The axes apply in the order written; a later axis on the same field wins.

Called by `cli/sweep.py`, `cli/demo_world.py` (act 3's two designs) and bench/sweep.py. Pure
but for reading files at load: no wall clock, no random number (the runs draw from their seed).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucap.apis.errors import FieldPath, closest_name, format_path
from gpucap.apis.meta import dump
from gpucap.apis.reading import InputError, read_path
from gpucap.apis.serde import KINDS, Manifest, load_documents, parse_text
from gpucap.apis.sweep import (
    PathStep,
    Sweep,
    SweepAxis,
    parse_field_path,
    parse_sweep,
    sweep_problems,
)
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.sim.costcurve import COST_CURVE_POINTS
from gpucap.sim.runset import RunOutcome, SeedRun, set_summary
from gpucap.sim.scenario import LoadedScenario, ScenarioError, load_scenario

__all__ = [
    "SCENARIO",
    "SERVING_MEASURES",
    "LoadedSweep",
    "SweepError",
    "SweepRun",
    "Variant",
    "VariantResult",
    "apply_values",
    "cheapest_within",
    "load_sweep",
    "pareto_front",
    "serving_measure",
    "show_value",
    "variant_results",
]

# The measures of serving lost a sweep compares on: the HPA's share of asked-for replica-time
# not Ready (a fraction, when the scenario autoscales), else the pod-seconds of serving pods
# evicted (`sim/summary.py`).
SERVING_MEASURES = ("servingLostFraction", "servingLostSeconds")
_REQUIREMENTS: FieldPath = ("spec", "template", "spec", "requirements")
# The target index of a Scenario axis: the scenario itself, not one of its manifests.
SCENARIO = -2


class SweepError(InputError):
    """A sweep gpucap cannot run: one line per problem (`problems`), as `ScenarioError`."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems

    def lines(self) -> tuple[str, ...]:
        return self.problems


@dataclass(frozen=True)
class Variant:
    """One design: its position in the sweep, its name, the axes' values it gives (as written;
    an explicit variant may leave an axis as the scenario has it) and its scenario."""

    index: int
    name: str
    values: tuple[tuple[str, Any], ...]
    scenario: LoadedScenario


@dataclass(frozen=True)
class LoadedSweep:
    """A sweep ready to run: the base scenario, the seeds and the variants, all checked."""

    path: str
    name: str
    scenario: LoadedScenario
    catalog: Catalog
    seeds: int
    axes: tuple[str, ...]
    variants: tuple[Variant, ...]

    @property
    def first_seed(self) -> int:
        return self.scenario.seed

    def items(self, only_first: int | None = None) -> list[tuple[int, int]]:
        """The runs `(variant index, seed)`, variant by variant, seeds in order."""
        chosen = self.variants if only_first is None else self.variants[:only_first]
        seeds = range(self.first_seed, self.first_seed + self.seeds)
        return [(v.index, s) for v in chosen for s in seeds]

    def work(self, points: int = COST_CURVE_POINTS) -> SweepRun:
        return SweepRun(tuple(v.scenario for v in self.variants), self.catalog, points)


@dataclass(frozen=True)
class SweepRun:
    """What every run of a sweep shares: each variant's loaded scenario and the catalog. Called
    with `(variant, seed)`, one run; its outcome depends on that pair alone."""

    scenarios: tuple[LoadedScenario, ...]
    catalog: Catalog
    points: int = COST_CURVE_POINTS

    def __call__(self, item: tuple[int, int]) -> RunOutcome:
        variant, seed = item
        return SeedRun(self.scenarios[variant], self.catalog, self.points)(seed)


# ---- loading -------------------------------------------------------------------------------------
def load_sweep(path: str, catalog: Catalog | Callable[[str], Catalog]) -> LoadedSweep:
    """Load and check the sweep at `path` (see the module docstring). `catalog`: the region's,
    or a function from the scenario's region to it."""
    sweep = _document(path)
    given = sweep.spec.scenario
    where = given if os.path.isabs(given) else str(Path(path).parent / given)
    loaded: list[Catalog] = []

    def catalog_for(region: str) -> Catalog:
        loaded.append(catalog if isinstance(catalog, Catalog) else catalog(region))
        return loaded[-1]

    scenario = load_scenario(where, catalog_for)
    problems: list[str] = []

    def fail(field: FieldPath, message: str) -> None:
        problems.append(f"{path}: {format_path(field)}: {message}")

    def reload(edits: Sequence[tuple[SweepAxis, Any]]) -> LoadedScenario | list[str]:
        return _reloaded(where, scenario, loaded[-1], edits)

    targets = [_target(scenario, i, axis, fail) for i, axis in enumerate(sweep.spec.axes)]
    if problems:
        raise SweepError(*problems)
    axes = sweep.spec.axes
    # Each value alone, so that a value the field rejects is named once, at the value.
    for i, axis in enumerate(axes):
        for j, value in enumerate(axis.values):
            bad = _apply(scenario, [(axis, targets[i], value)], reload)
            if isinstance(bad, list):
                for line in bad:
                    fail(("axes", i, "values", j), line)
    if problems:
        raise SweepError(*_unique(problems))
    variants: list[Variant] = []
    for k, (name, values, field) in enumerate(_designs(sweep)):
        chosen = [
            (axes[i], targets[i], values[axes[i].name])
            for i in range(len(axes))
            if axes[i].name in values
        ]
        made = _apply(scenario, chosen, reload)
        if isinstance(made, list):
            for line in made:
                fail(field, f"({name}) {line}")
            continue
        ordered = tuple((a.name, values[a.name]) for a in axes if a.name in values)
        variants.append(Variant(k, name, ordered, made))
    if problems:
        raise SweepError(*_unique(problems))
    return LoadedSweep(
        path=path,
        name=sweep.metadata.name,
        scenario=scenario,
        catalog=loaded[-1],
        seeds=sweep.spec.seeds,
        axes=tuple(a.name for a in axes),
        variants=tuple(variants),
    )


def _document(path: str) -> Sweep:
    text = read_path(path)  # an InputError names the file
    parsed = parse_text(text, path)
    if isinstance(parsed, str):
        raise SweepError(parsed)
    docs = [d for d, _ in parsed if d is not None]
    kind = docs[0].get("kind") if len(docs) == 1 and isinstance(docs[0], dict) else None
    if kind != "Sweep":
        found = kind or f"{len(docs)} documents"
        raise SweepError(
            f"{path}: a sweep file holds one document of kind Sweep (apiVersion "
            f"gpucap.dev/v1alpha1); found {found}"
        )
    result = parse_sweep(docs[0])
    problems = result if isinstance(result, list) else sweep_problems(result)
    if problems:
        raise SweepError(*(f"{path}: {format_path(_from_spec(p))}: {m}" for p, m in problems))
    assert isinstance(result, Sweep)
    return result


def _from_spec(path: FieldPath) -> FieldPath:
    """Field paths from `spec` down, without `spec.`, as the scenario's errors write them."""
    return path[1:] if len(path) > 1 and path[0] == "spec" else path


def _unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def _designs(sweep: Sweep) -> list[tuple[str, dict[str, Any], FieldPath]]:
    """Each variant as (name, {axis: value}, the field its problems are named at): the explicit
    `variants:`, or the product of the axes in the order written (the last axis varies fastest)."""
    axes = sweep.spec.axes
    if sweep.spec.variants is not None:
        out: list[tuple[str, dict[str, Any], FieldPath]] = []
        for k, v in enumerate(sweep.spec.variants):
            values = dict(v.values)
            out.append((v.name or _name(axes, values), values, ("variants", k)))
        return out
    grid = itertools.product(*(a.values for a in axes))
    designs: list[tuple[str, dict[str, Any], FieldPath]] = []
    for combo in grid:
        values = {a.name: value for a, value in zip(axes, combo, strict=True)}
        designs.append((_name(axes, values), values, ("axes",)))
    return designs


def _name(axes: Sequence[SweepAxis], values: Mapping[str, Any]) -> str:
    """`capacity=spot,on-demand consolidateAfter=5m`: the axes' values, in the axes' order."""
    parts = [f"{a.name}={show_value(values[a.name])}" for a in axes if a.name in values]
    return " ".join(parts) or "as written"


def show_value(value: Any) -> str:
    """An axis value as the table and the variant's name say it: a list joined by commas."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join(show_value(v) for v in value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _target(
    scenario: LoadedScenario, i: int, axis: SweepAxis, fail: Callable[[FieldPath, str], None]
) -> int:
    """The index in `scenario.initial` of the axis's target; -1 (with the problem said) when the
    scenario's manifests have no such object."""
    t = axis.target
    if t.kind not in KINDS:
        hint = closest_name(t.kind, list(KINDS))
        fail(
            ("axes", i, "target", "kind"),
            f"unknown kind {t.kind!r}" + (f" (did you mean {hint!r}?)" if hint else ""),
        )
        return -1
    if t.kind == "Scenario":
        if t.name != scenario.name:
            fail(
                ("axes", i, "target", "name"),
                f"the sweep's scenario ({scenario.path}) is named {scenario.name!r}, not "
                f"{t.name!r}",
            )
            return -1
        return SCENARIO
    namespaced = KINDS[t.kind][2]
    namespace = (t.namespace or "default") if namespaced else None
    for n, m in enumerate(scenario.initial):
        meta = m.obj.metadata
        same = m.obj.kind == t.kind and meta.name == t.name
        if same and namespace in (None, getattr(meta, "namespace", None)):
            return n
    shown = f"{t.kind}/{namespace}/{t.name}" if namespace else f"{t.kind}/{t.name}"
    later = [
        a.index
        for a in scenario.actions
        for m in a.manifests
        if m.obj.kind == t.kind and m.obj.metadata.name == t.name
    ]
    if later:
        message = (
            f"{shown} is applied by events[{later[0]}]; a sweep changes the objects of the "
            "scenario's spec.manifests"
        )
    else:
        names = [m.obj.metadata.name for m in scenario.initial if m.obj.kind == t.kind]
        hint = closest_name(t.name, names)
        message = f"no {shown} in the scenario's spec.manifests ({scenario.path})" + (
            f" (did you mean {hint!r}?)"
            if hint
            else f"; its {t.kind}s: {', '.join(names)}"
            if names
            else ""
        )
    fail(("axes", i, "target"), message)
    return -1


def apply_values(
    scenario: LoadedScenario, chosen: Sequence[tuple[SweepAxis, int, Any]]
) -> LoadedScenario:
    """`scenario` with each (axis, target index, value) applied; raises SweepError (the
    problems, without the sweep's file) when a value does not apply or the object it makes
    does not validate. For tests and callers that build variants of the objects themselves;
    an axis on the scenario's own fields (a `SCENARIO` target) needs its file read again, which
    `load_sweep` does."""
    made = _apply(scenario, chosen, None)
    if isinstance(made, list):
        raise SweepError(*made)
    return made


# Loads the scenario again with the given Scenario axes' values (`_reloaded`, bound by
# `load_sweep`).
Reload = Callable[[Sequence[tuple[SweepAxis, Any]]], LoadedScenario | list[str]]


def _reloaded(
    where: str, base: LoadedScenario, catalog: Catalog, edits: Sequence[tuple[SweepAxis, Any]]
) -> LoadedScenario | list[str]:
    """The scenario at `where` loaded again with the Scenario axes' values set in its document
    (`load_scenario(edit=...)`): checked as `simulate` checks it, its problems one line each."""

    def edit(doc: dict[str, Any]) -> None:
        for axis, value in edits:
            assert axis.path is not None  # a Scenario axis has a path (sweep_problems)
            _set_path(doc, parse_field_path(axis.path), value)

    try:
        return load_scenario(where, catalog, edit=edit)
    except _PathError as err:
        return [f"Scenario/{base.name}: {err}"]
    except ScenarioError as err:
        return list(err.problems)


def _apply(
    scenario: LoadedScenario,
    chosen: Sequence[tuple[SweepAxis, int, Any]],
    reload: Reload | None,
) -> LoadedScenario | list[str]:
    # The scenario's own fields first: the objects' axes then change the objects it loads
    # (the same files: a Scenario axis cannot change spec.manifests).
    edits = [(axis, value) for axis, target, value in chosen if target == SCENARIO]
    if edits:
        if reload is None:
            return ["a Scenario axis is applied by load_sweep (the scenario is read again)"]
        again = reload(edits)
        if isinstance(again, list):
            return again
        scenario = again
    docs: dict[int, dict[str, Any]] = {}
    problems: list[str] = []
    for axis, target, value in chosen:
        if target == SCENARIO:
            continue
        if target not in docs:
            docs[target] = copy.deepcopy(dump(scenario.initial[target].obj))
        m = scenario.initial[target]
        try:
            if axis.requirement is not None:
                _set_requirement(docs[target], axis.requirement, value)
            else:
                assert axis.path is not None  # one of the two, checked by sweep_problems
                _set_path(docs[target], parse_field_path(axis.path), value)
        except _PathError as err:
            problems.append(f"{m.ref}: {err}")
    if problems:
        return problems
    initial = list(scenario.initial)
    for target, doc in sorted(docs.items()):
        m = scenario.initial[target]
        result = load_documents([(doc, {})], m.source.file)
        if result.errors or len(result.manifests) != 1:
            problems += [
                f"{m.ref} {format_path(issue.path)}: {issue.message}"
                if issue.path
                else f"{m.ref}: {issue.message}"
                for issue in result.errors
            ]
            continue
        # Where it came from stays the file's: the variant is that object with one field changed.
        initial[target] = Manifest(result.manifests[0].obj, m.source)
    if problems:
        return problems
    return dataclasses.replace(scenario, initial=tuple(initial))


class _PathError(Exception):
    """A value that cannot be put where the axis says: the message is the line's tail."""


def _set_requirement(doc: dict[str, Any], key: str, value: Any) -> None:
    values = [value] if isinstance(value, str) else list(value)
    node: Any = doc
    for step in _REQUIREMENTS:
        node = node.setdefault(step, {} if step != "requirements" else [])
    wanted = {"key": key, "operator": "In", "values": values}
    for item in node:
        if isinstance(item, dict) and item.get("key") == key:
            item.update(operator="In", values=values)
            return
    node.append(wanted)


def _set_path(doc: dict[str, Any], steps: Sequence[PathStep], value: Any) -> None:
    node: Any = doc
    walked: list[str | int] = []
    for n, step in enumerate(steps):
        last = n == len(steps) - 1
        where = format_path(walked) or "the document"
        if isinstance(step, str):
            if not isinstance(node, dict):
                raise _PathError(f"{where} is not an object; cannot set {step!r} in it")
            if last:
                node[step] = copy.deepcopy(value)
                return
            if node.get(step) is None:
                node[step] = {} if isinstance(steps[n + 1], str) else []
            node = node[step]
            walked.append(step)
            continue
        if not isinstance(node, list):
            raise _PathError(f"{where} is not a list; {_show_step(step)} selects a list's item")
        if isinstance(step, int):
            if step >= len(node):
                raise _PathError(f"{where} has {len(node)} item(s); there is no [{step}]")
            index = step
        else:
            field, wanted = step
            found = [
                i
                for i, item in enumerate(node)
                if isinstance(item, dict) and str(item.get(field)) == wanted
            ]
            if not found:
                raise _PathError(f"{where} has no item whose {field} is {wanted!r}")
            index = found[0]
        if last:
            node[index] = copy.deepcopy(value)
            return
        node = node[index]
        walked.append(index)


def _show_step(step: PathStep) -> str:
    if isinstance(step, tuple):
        return f"[{step[0]}={step[1]}]"
    return f"[{step}]"


# ---- results -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VariantResult:
    """A variant's finished runs (seed order), their set summary, and its place on the front."""

    variant: Variant
    outcomes: tuple[RunOutcome, ...]
    summary: dict[str, Any]
    pareto: bool


def serving_measure(summaries: Sequence[Mapping[str, Any]]) -> str:
    """The serving-lost measure the front and the choice read: the HPA's fraction when every
    variant with runs has it, else the pod-seconds of evicted serving pods."""
    with_runs = [s for s in summaries if s["runs"]]
    fraction = SERVING_MEASURES[0]
    if with_runs and all((s.get(fraction) or {}).get("p50") is not None for s in with_runs):
        return fraction
    return SERVING_MEASURES[1]


def pareto_front(points: Sequence[tuple[float, float] | None]) -> list[bool]:
    """For each point (cost, serving lost; lower is better for both; None: no runs), whether no
    other point is as good in both and better in one (ties on both are all on the front)."""
    out = []
    for p in points:
        if p is None:
            out.append(False)
            continue
        dominated = any(
            q is not None and q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1])
            for q in points
        )
        out.append(not dominated)
    return out


def variant_results(
    sweep: LoadedSweep,
    outcomes: Mapping[tuple[int, int], RunOutcome],
    *,
    variants: Sequence[Variant] | None = None,
) -> tuple[list[VariantResult], str]:
    """Each variant's runs and summary, the front marked on the p50s of cost and the serving
    measure (`serving_measure`), which is returned with them."""
    chosen = list(sweep.variants if variants is None else variants)
    runs: dict[int, list[RunOutcome]] = {v.index: [] for v in chosen}
    for (index, _), outcome in sorted(outcomes.items()):
        if index in runs:
            runs[index].append(outcome)
    summaries = [set_summary(runs[v.index], requested=sweep.seeds) for v in chosen]
    measure = serving_measure(summaries)
    points = [_point(s, measure) for s in summaries]
    front = pareto_front(points)
    results = [
        VariantResult(v, tuple(runs[v.index]), s, f)
        for v, s, f in zip(chosen, summaries, front, strict=True)
    ]
    return results, measure


def _point(summary: Mapping[str, Any], measure: str) -> tuple[float, float] | None:
    cost = summary["costUSD"]["p50"]
    lost = (summary.get(measure) or {}).get("p50")
    return None if cost is None or lost is None else (float(cost), float(lost))


def cheapest_within(
    results: Sequence[VariantResult], measure: str, bound: float
) -> VariantResult | None:
    """The variant of lowest p50 cost whose p50 of `measure` is at most `bound` (ties: the
    lower serving lost, then the earlier variant); None when no variant keeps within it."""
    fits = [
        (p[0], p[1], r.variant.index, r)
        for r in results
        if (p := _point(r.summary, measure)) is not None and p[1] <= bound
    ]
    return min(fits, key=lambda f: f[:3])[3] if fits else None
