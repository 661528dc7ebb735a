"""The simulator's event log: what happened, when, to which object (contract.md, `simulate`).

The world (`sim/world.py`) calls `Recorder.emit` for every notable change; the log is the one
source of the `-o json` events, the `--events FILE` JSON lines, the summary (`sim/summary.py`)
and the timeline (`cli/simulate_render.py`), so everything a run reports can be recomputed from
the log alone.

An `Event` is canonical from the moment it is made, so that the same run gives the same bytes
and an event read back from its JSON line equals the one written:
- `t` (seconds since the scenario start) and every other float are rounded to milliseconds,
  except prices and costs (`PRICE_KEYS`), which keep 6 decimals (a spot price of $0.3112/h must
  not become $0.311); `-0.0` becomes `0.0`; NaN and infinities are refused (a bug in the world).
- Keys come out in one order whatever order the emitter passed them in: `t`, `type`, the objects
  (`FIELD_ORDER`), the other fields alphabetically, then `reason` and `message`; mappings nested
  inside fields (`gpus: {resource: n}`) have sorted keys; tuples become lists.
- Values are JSON's own: str, int, float, bool, None, lists and string-keyed mappings.

Names in events come from user manifests. A JSON line keeps the exact name (JSON escapes it), and
`json_line` additionally writes every character a terminal would act on or not show (controls,
DEL, C1, bidi overrides, zero-width characters, per `runtime/terminal.escape`'s rule) as a
`\\uXXXX` escape, so `cat events.jsonl` or `tail -f` cannot drive the terminal. Text for a
person goes through `runtime.terminal.Terminal`, which escapes at print time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TextIO

__all__ = [
    "EVENT_FIELDS",
    "FIELD_ORDER",
    "PRICE_KEYS",
    "Event",
    "Recorder",
    "json_line",
    "read_events",
]

# The objects an event concerns, in the order a person reads them (contract.md's list first).
FIELD_ORDER = (
    "pod",
    "nodeClaim",
    "node",
    "nodePool",
    "nodeClass",
    "instanceType",
    "zone",
    "capacityType",
)
_LAST = ("reason", "message")
_RANK = {k: i for i, k in enumerate(FIELD_ORDER)}

# Floats in dollars: 6 decimals, like `plan`'s pricePerHour; every other float is seconds.
PRICE_KEYS = frozenset({"pricePerHour", "price", "costUSD", "usdPerHour"})

# The fields each event type must carry (SIM-INTERFACES.md); the summary and the timeline rely
# on them. Types not listed here are recorded as given ("more may be added").
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "PodCreated": ("pod", "gpus"),
    "PodNominated": ("pod", "nodeClaim"),
    "PodBound": ("pod", "node"),
    "PodReady": ("pod", "node"),
    "PodUnschedulable": ("pod", "reason"),
    "PodNotPlanned": ("pod", "nodePool", "servedBy", "reason"),
    "PodEvicted": ("pod", "node", "reason"),
    "PodDeleted": ("pod",),
    "NodeClaimCreated": ("nodeClaim", "nodePool"),
    "NodeClaimLaunched": (
        "nodeClaim",
        "nodePool",
        "instanceType",
        "zone",
        "capacityType",
        "pricePerHour",
        "gpus",
    ),
    "LaunchFailed": ("nodeClaim", "reason"),
    "OfferingUnavailable": ("instanceType", "zone", "capacityType"),
    "NodeRegistered": ("nodeClaim", "node"),
    "NodeInitialized": ("nodeClaim", "node", "gpusAdvertised"),
    "NodeClaimDeleted": ("nodeClaim",),
    "NodeTerminated": ("nodeClaim",),
    "LimitReached": ("nodePool",),
    "DisruptionDecision": ("nodeClaim", "reason"),
    "DisruptionBlocked": ("message",),  # a node's (nodeClaim, node) or a NodePool's budget
    "Unconsolidatable": ("nodeClaim", "node", "message"),
    "EvictionBlocked": ("pod", "node", "pdb", "since", "for", "evicted"),
    "SpotInterruptionWarning": ("nodeClaim",),
    # The spot market's (`sim/spotmarket.py`): a pool reclaimed (its outage in seconds), back.
    "SpotPoolReclaimed": ("instanceType", "zone", "capacityType", "instances", "outage"),
    "SpotPoolRestored": ("instanceType", "zone", "capacityType"),
}

# The same as sets, for the check on every emit.
_REQUIRED = {kind: frozenset(names) for kind, names in EVENT_FIELDS.items()}

# The escapes of characters a terminal would act on or not show (runtime/terminal.py's rule:
# whatever str.isprintable() rejects). Built lazily per character and memoised.
_JSON_ESCAPES: dict[str, str] = {}


def _json_escape(c: str) -> str:
    escaped = _JSON_ESCAPES.get(c)
    if escaped is None:
        if c.isprintable():
            escaped = c
        else:
            o = ord(c)
            if o < 0x10000:
                escaped = f"\\u{o:04x}"
            else:  # JSON spells characters beyond the BMP as a UTF-16 surrogate pair
                o -= 0x10000
                escaped = f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
        _JSON_ESCAPES[c] = escaped
    return escaped


_PLAIN = frozenset({str, int, bool})


def _canonical(value: Any, key: str) -> Any:
    """`value` as the JSON-ready, rounded value an event stores (see the module docstring)."""
    if type(value) in _PLAIN:  # the usual case, checked first: names and counts
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"event field {key!r} is {value}: events hold finite numbers only")
        rounded = round(value, 6 if key in PRICE_KEYS else 3)
        return rounded + 0.0  # -0.0 -> 0.0
    if isinstance(value, str):
        return str(value)  # a StrEnum member becomes its plain value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k in sorted(value):
            if not isinstance(k, str):
                raise TypeError(f"event field {key!r} has a non-string key {k!r}")
            out[k] = _canonical(value[k], k)
        return out
    if isinstance(value, list | tuple):
        return [_canonical(v, key) for v in value]
    raise TypeError(f"event field {key!r} holds a {type(value).__name__}, not a JSON value")


# The canonical order of each tuple of field names (as given), memoised: every event of a type
# is emitted with the same names in the same order. Bounded.
_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _ordered(names: tuple[str, ...]) -> tuple[str, ...]:
    out = _ORDERS.get(names)
    if out is None:
        if len(_ORDERS) >= 1024:
            _ORDERS.clear()
        out = _ORDERS[names] = tuple(sorted(names, key=_order))
    return out


def _order(key: str) -> tuple[int, int, str]:
    if key in _RANK:
        return (0, _RANK[key], "")
    if key in _LAST:
        return (2, _LAST.index(key), "")
    return (1, 0, key)


def _canonical_event(t: float, fields: Mapping[str, Any]) -> tuple[float, Mapping[str, Any]]:
    """An event's time and fields as it stores them (see the module docstring); raises for a
    time that is no finite number and for fields named `t` or `type`."""
    if not isinstance(t, int | float) or isinstance(t, bool):
        raise TypeError(f"event time must be a number, not {t!r}")
    if not math.isfinite(t):
        raise ValueError(f"event time is {t}: events happen at finite times")
    if "t" in fields or "type" in fields:
        raise ValueError("an event's fields cannot be named 't' or 'type'")
    canonical = {k: _canonical(fields[k], k) for k in _ordered(tuple(fields))}
    return round(float(t), 3) + 0.0, MappingProxyType(canonical)


_set = object.__setattr__  # how a frozen dataclass sets its own attributes


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened at `t` seconds after the scenario start; `fields` are the objects
    it concerns and what else the type carries (contract.md). Canonical on construction."""

    t: float
    type: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t, fields = _canonical_event(self.t, self.fields)
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "fields", fields)

    @classmethod
    def made(cls, t: float, type_: str, fields: Mapping[str, Any]) -> Event:
        """`Event(t, type_, fields)`, each attribute set once with its canonical value (the
        dataclass's `__init__` sets the given values and `__post_init__` then replaces two of
        them). The recorder makes every event of a run this way."""
        event = object.__new__(cls)
        t, canonical = _canonical_event(t, fields)
        _set(event, "t", t)
        _set(event, "type", type_)
        _set(event, "fields", canonical)
        return event

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def to_json(self) -> dict[str, Any]:
        """`{"t": .., "type": .., **fields}` in the canonical key order."""
        return {"t": self.t, "type": self.type, **self.fields}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Event:
        """The event `to_json` wrote (`Event.from_json(e.to_json()) == e`)."""
        fields = {k: v for k, v in doc.items() if k not in ("t", "type")}
        t, kind = doc.get("t"), doc.get("type")
        if not isinstance(t, int | float) or isinstance(t, bool) or not isinstance(kind, str):
            raise ValueError("an event needs a numeric 't' and a string 'type'")
        return cls(float(t), kind, fields)


def json_line(event: Event) -> str:
    """The event as one line of JSON (no newline): canonical key order, UTF-8 text, and every
    character a terminal would act on written as a `\\u` escape (the module docstring)."""
    text = json.dumps(event.to_json(), ensure_ascii=False, allow_nan=False)
    if text.isprintable():
        return text
    # Outside strings JSON text is printable ASCII, so every character escaped here is inside a
    # string, where `\\uXXXX` means the same character.
    return "".join(_json_escape(c) for c in text)


def read_events(lines: Iterable[str]) -> list[Event]:
    """Events back from `--events` JSON lines (blank lines skipped); a bad line raises
    ValueError naming its line number."""
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            events.append(Event.from_json(doc))
        except (ValueError, TypeError) as err:
            raise ValueError(f"line {number}: {err}") from None
    return events


class Recorder:
    """Collects the events of one run in order; with a `sink`, writes each as a JSON line the
    moment it is emitted (`--events FILE`), flushed, so the file can be followed live."""

    def __init__(self, *, sink: TextIO | None = None) -> None:
        self.events: list[Event] = []
        self._sink = sink

    def emit(self, t: float, type: str, /, **fields: Any) -> Event:
        """Record that `type` happened at `t` (seconds since start) to the objects in `fields`.
        Raises ValueError when a known type lacks a field it must carry (EVENT_FIELDS) or when
        time goes backwards: both are bugs in the emitter, caught where they happen."""
        required = _REQUIRED.get(type)
        if required is not None and not required <= fields.keys():
            missing = [k for k in EVENT_FIELDS[type] if k not in fields]
            raise ValueError(f"{type} event needs field(s) {', '.join(missing)}")
        event = Event.made(t, type, fields)
        if self.events and event.t < self.events[-1].t:
            raise ValueError(
                f"{type} event at t={event.t} after one at t={self.events[-1].t}: "
                "events are emitted in time order"
            )
        self.events.append(event)
        if self._sink is not None:
            self._sink.write(json_line(event) + "\n")
            self._sink.flush()
        return event
