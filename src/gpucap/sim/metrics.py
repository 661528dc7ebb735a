"""A scenario's metric traces (`spec.metrics`): what the HorizontalPodAutoscalers read.

    spec:
      metrics:
      - hpa: vllm                     # NAME or NAMESPACE/NAME of an HPA in the manifests
        trace: bundled:azure-llm-conv # or a CSV file, relative to the scenario
        column: requests_per_second   # default: the first value column
        scale: 2.5                    # multiplies every value (default 1)
        metric: requests_per_second   # the HPA metric it feeds (default: every External/Pods one)

A trace is a CSV with a header: a `time` column (seconds since the scenario's start,
increasing) and one or more value columns. Its value at `t` is the last sample at or before `t`
(step interpolation; before the first sample, the first sample's value).

What the value means: the workload's **total** (e.g. requests per second over all its
replicas). An `External` metric reads it as it is; a `Pods` metric's per-pod value is the total
divided over the target's Ready pods, so adding replicas lowers it: the feedback a real
request-rate autoscaler sees (`sim/podautoscaler.py`). `Resource`, `ContainerResource` (CPU,
memory) and `Object` metrics are not simulated: one warning line per HPA says so and the HPA
leaves replicas alone for them.

`bundled:NAME` reads `data/world/trace-NAME.csv` (`azure-llm-code`, `azure-llm-conv`: per-minute
request rates of the Azure LLM inference trace 2023, CC-BY-4.0; `diurnal-24h`: a synthetic day;
provenance in `data/world/trace-PROVENANCE.md`).

Bad input is the scenario's: one line naming the file and the field (`metrics[0].trace:
demand.csv line 4: time 60 is not after the row before (120)`), exit 2. Called by the scenario
loader (`sim/scenario.py`, one hook) and read by the HPA actor (`sim/podautoscaler.py`).
"""

from __future__ import annotations

import bisect
import csv
import io
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from gpucap.apis.errors import FieldPath, closest_name
from gpucap.apis.horizontalpodautoscaler import SIMULATED_METRIC_TYPES, HorizontalPodAutoscaler
from gpucap.apis.limits import Budget
from gpucap.apis.reading import InputError, read_path
from gpucap.apis.scenario import MetricTrace
from gpucap.apis.serde import Manifest

__all__ = [
    "BUNDLED_TRACES",
    "MetricFeed",
    "Trace",
    "feed_for",
    "hpa_key",
    "load_metrics",
]

BUNDLED = "bundled:"
BUNDLED_TRACES = ("azure-llm-code", "azure-llm-conv", "diurnal-24h")
# The kinds the simulated HPA scales (those a scenario's `scale` event may change).
TARGET_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "LeaderWorkerSet")


@dataclass(frozen=True, slots=True)
class Trace:
    """One value column of a trace, scaled: `values[i]` from `times[i]` on."""

    source: str
    column: str
    times: tuple[float, ...]
    values: tuple[float, ...]

    def at(self, t: float) -> float:
        """The last sample at or before `t` (the first sample before it)."""
        i = bisect.bisect_right(self.times, t) - 1
        return self.values[max(i, 0)]


@dataclass(frozen=True, slots=True)
class MetricFeed:
    """`spec.metrics[index]`: the trace that feeds the HPA `namespace/name` (its metric
    `metric`, or every External/Pods metric when None)."""

    index: int
    namespace: str
    name: str
    metric: str | None
    trace: Trace


def hpa_key(hpa: HorizontalPodAutoscaler) -> tuple[str, str]:
    return (hpa.metadata.namespace, hpa.metadata.name)


def feed_for(
    feeds: Iterable[MetricFeed], key: tuple[str, str], metric_name: str
) -> MetricFeed | None:
    """The feed of the HPA `key`'s metric `metric_name`: one naming it, else one for all."""
    mine = [f for f in feeds if (f.namespace, f.name) == key]
    named = [f for f in mine if f.metric == metric_name]
    if named:
        return named[0]
    return next((f for f in mine if f.metric is None), None)


class _Loader(Protocol):
    """What the scenario loader (`sim/scenario.py` `_Loader`) lends: its file, base directory,
    input budget, the inputs and warnings it collects, and its one-line error."""

    path: str
    base: Path
    budget: Budget
    inputs: list[str]
    warnings: list[str]

    def fail(self, path: FieldPath, message: str) -> Exception: ...


def load_metrics(
    loader: _Loader, spec: Any, initial: Iterable[Manifest], actions: Iterable[Any]
) -> tuple[MetricFeed, ...]:
    """`spec.metrics` checked and loaded against the HPAs the scenario applies (`initial`, the
    spec.manifests, and the `manifests` of its apply `actions`). Adds one warning per HPA
    whose metrics are not all simulated."""
    objects = [m.obj for m in initial] + [m.obj for a in actions for m in a.manifests]
    hpas = {hpa_key(o): o for o in objects if isinstance(o, HorizontalPodAutoscaler)}
    given: Sequence[MetricTrace] = spec.metrics
    feeds = [_feed(loader, i, m, hpas) for i, m in enumerate(given)]
    seen: dict[tuple[str, str, str | None], int] = {}
    for f in feeds:
        key = (f.namespace, f.name, f.metric)
        if key in seen:
            raise loader.fail(
                ("metrics", f.index, "hpa"),
                f"metrics[{seen[key]}] already feeds HorizontalPodAutoscaler "
                f"{f.namespace}/{f.name}" + (f" metric {f.metric}" if f.metric else ""),
            )
        seen[key] = f.index
    loader.warnings.extend(_not_simulated(hpas.values(), feeds))
    return tuple(feeds)


def _not_simulated(
    hpas: Iterable[HorizontalPodAutoscaler], feeds: Sequence[MetricFeed]
) -> list[str]:
    lines = []
    for hpa in hpas:
        ref = f"HorizontalPodAutoscaler {hpa.metadata.namespace}/{hpa.metadata.name}"
        target = hpa.spec.scale_target_ref
        if target.kind not in TARGET_KINDS:
            lines.append(
                f"{ref}: scaleTargetRef {target.kind}/{target.name} is not simulated "
                f"(gpucap's HPA scales {', '.join(TARGET_KINDS)}); it changes nothing"
            )
            continue
        idle = []
        for i, m in enumerate(hpa.spec.metrics):
            what = f"metrics[{i}] ({m.type} {m.metric_name})"
            if m.type not in SIMULATED_METRIC_TYPES:
                idle.append(f"{what} is not simulated")
            elif feed_for(feeds, hpa_key(hpa), m.metric_name) is None:
                idle.append(f"{what} has no trace in the scenario's spec.metrics")
        if idle:
            lines.append(f"{ref}: {'; '.join(idle)}: the HPA leaves replicas alone for it")
    return lines


def _feed(
    loader: _Loader, i: int, m: MetricTrace, hpas: dict[tuple[str, str], HorizontalPodAutoscaler]
) -> MetricFeed:
    at: FieldPath = ("metrics", i)
    namespace, _, name = m.hpa.rpartition("/")
    key = (namespace or "default", name)
    hpa = hpas.get(key)
    if hpa is None:
        known = sorted(f"{ns}/{n}" if ns != "default" else n for ns, n in hpas)
        hint = closest_name(m.hpa, known)
        raise loader.fail(
            (*at, "hpa"),
            f"no HorizontalPodAutoscaler {m.hpa!r} in the scenario's manifests"
            + (f" (did you mean {hint!r}?)" if hint else ""),
        )
    fed = [x for x in hpa.spec.metrics if x.type in SIMULATED_METRIC_TYPES]
    if m.metric is not None:
        names = [x.metric_name for x in hpa.spec.metrics]
        if m.metric not in names:
            hint = closest_name(m.metric, names)
            raise loader.fail(
                (*at, "metric"),
                f"HorizontalPodAutoscaler {m.hpa} has no metric {m.metric!r}"
                + (f" (did you mean {hint!r}?)" if hint else f"; it has {', '.join(names)}"),
            )
        fed = [x for x in fed if x.metric_name == m.metric]
        if not fed:
            raise loader.fail(
                (*at, "metric"),
                f"{m.metric!r} is not an External or Pods metric: gpucap does not simulate it",
            )
    if not fed:
        raise loader.fail(
            (*at, "hpa"),
            f"HorizontalPodAutoscaler {m.hpa} has no External or Pods metric for a trace to feed",
        )
    if not (math.isfinite(m.scale) and m.scale >= 0):
        raise loader.fail((*at, "scale"), f"{m.scale} must be a number >= 0")
    source, text = _trace_text(loader, (*at, "trace"), m.trace)
    trace = _parse(
        source, text, m.column, float(m.scale), lambda p, msg: loader.fail((*at, *p), msg)
    )
    return MetricFeed(i, key[0], key[1], m.metric, trace)


def _trace_text(loader: _Loader, at: FieldPath, trace: str) -> tuple[str, str]:
    if trace.startswith(BUNDLED):
        name = trace.removeprefix(BUNDLED)
        if name not in BUNDLED_TRACES:
            hint = closest_name(name, BUNDLED_TRACES)
            raise loader.fail(
                at,
                f"no bundled trace {name!r}"
                + (f" (did you mean {hint!r}?)" if hint else "")
                + f"; gpucap bundles {', '.join(BUNDLED_TRACES)}",
            )
        path = resources.files("gpucap.data") / "world" / f"trace-{name}.csv"
        return trace, path.read_text(encoding="utf-8")
    target = trace if os.path.isabs(trace) else str(loader.base / trace)
    loader.inputs.append(target)
    try:
        return trace, read_path(target, loader.budget)
    except InputError as err:
        raise loader.fail(at, str(err)) from None


def _parse(
    source: str,
    text: str,
    column: str | None,
    scale: float,
    fail: Callable[[FieldPath, str], Exception],
) -> Trace:
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    rows = [r for r in rows if r and any(c.strip() for c in r)]
    if not rows:
        raise fail(("trace",), f"{source}: empty; a trace has a header with a time column")
    header = [c.strip() for c in rows[0]]
    if "time" not in header:
        raise fail(("trace",), f"{source}: the header has no 'time' column ({', '.join(header)})")
    values = [c for c in header if c != "time"]
    if not values:
        raise fail(("trace",), f"{source}: no value column beside 'time'")
    name = values[0] if column is None else column
    if name not in values:
        hint = closest_name(name, values)
        raise fail(
            ("column",),
            f"{source} has no column {name!r}"
            + (f" (did you mean {hint!r}?)" if hint else f"; it has {', '.join(values)}"),
        )
    ti, vi = header.index("time"), header.index(name)
    times: list[float] = []
    samples: list[float] = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise fail(
                ("trace",), f"{source} line {line}: {len(row)} fields, the header has {len(header)}"
            )
        t = _number(row[ti], f"{source} line {line}: time", fail)
        v = _number(row[vi], f"{source} line {line}: {name}", fail)
        if t < 0:
            raise fail(("trace",), f"{source} line {line}: time {row[ti].strip()} is negative")
        if v < 0:
            raise fail(("trace",), f"{source} line {line}: {name} {row[vi].strip()} is negative")
        if times and t <= times[-1]:
            raise fail(
                ("trace",),
                f"{source} line {line}: time {row[ti].strip()} is not after the row before "
                f"({times[-1]:g}); times must increase",
            )
        times.append(t)
        samples.append(v * scale)
    if not times:
        raise fail(("trace",), f"{source}: no rows under the header")
    return Trace(source, name, tuple(times), tuple(samples))


def _number(text: str, what: str, fail: Callable[[FieldPath, str], Exception]) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise fail(("trace",), f"{what} {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise fail(("trace",), f"{what} {text.strip()!r} is not a finite number")
    return value
