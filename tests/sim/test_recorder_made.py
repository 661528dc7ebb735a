"""`Event.made`, the recorder's way of making an event, gives the dataclass's own event:
equal, with the same JSON, the same types (an int time becomes a float) and the same errors for
what it refuses, on random times and fields (names, counts, seconds, prices, nested maps and
lists). A hand-made mutation (the time stored unrounded) is caught."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.sim import recorder
from gpucap.sim.recorder import Event, Recorder

NAMES = st.sampled_from(
    ["pod", "node", "nodeClaim", "reason", "message", "pricePerHour", "loadSeconds", "gpus", "a"]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=5),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=6,
)
TIMES = st.one_of(
    st.integers(0, 10**6), st.floats(0, 1e7, allow_nan=False), st.sampled_from([-0.0, 0.0005])
)


def _same(a: Event, b: Event) -> bool:
    return (
        a == b
        and a.to_json() == b.to_json()
        and type(a.t) is type(b.t)
        and math.copysign(1, a.t) == math.copysign(1, b.t)
        and type(a.fields) is type(b.fields)
    )


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(TIMES, st.sampled_from(["PodReady", "Custom"]), st.dictionaries(NAMES, VALUES))
def test_made_is_the_dataclass_event(t: float, kind: str, fields: dict[str, Any]) -> None:
    assert _same(Event.made(t, kind, fields), Event(t, kind, fields))


@pytest.mark.parametrize(
    ("t", "fields", "error"),
    [
        (float("nan"), {}, ValueError),
        (float("inf"), {}, ValueError),
        (True, {}, TypeError),
        ("1", {}, TypeError),
        (0.0, {"type": "x"}, ValueError),
        (0.0, {"t": 1}, ValueError),
        (0.0, {"when": object()}, TypeError),
        (0.0, {"gpus": {1: 2}}, TypeError),
        (0.0, {"loadSeconds": float("nan")}, ValueError),
    ],
)
def test_made_refuses_what_the_dataclass_refuses(
    t: Any, fields: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error) as made:
        Event.made(t, "PodReady", fields)
    with pytest.raises(error) as plain:
        Event(t, "PodReady", fields)
    assert str(made.value) == str(plain.value)


def test_the_recorder_still_names_the_missing_fields() -> None:
    with pytest.raises(ValueError, match="PodBound event needs field\\(s\\) pod, node"):
        Recorder().emit(0.0, "PodBound", nodeClaim="x")


def test_the_law_catches_a_time_stored_unrounded(monkeypatch: pytest.MonkeyPatch) -> None:
    canonical = recorder._canonical_event

    def unrounded(t: float, fields: Any) -> tuple[float, Any]:
        return float(t), canonical(t, fields)[1]

    made = Event.made(1.23456, "PodReady", {})
    monkeypatch.setattr(recorder, "_canonical_event", unrounded)
    mutant = Event.made(1.23456, "PodReady", {})
    monkeypatch.undo()
    assert _same(made, Event(1.23456, "PodReady", {}))
    assert not _same(mutant, Event(1.23456, "PodReady", {}))
