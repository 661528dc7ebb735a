"""`render.write_json` writes what `json.dumps(value, indent=2)` writes, byte for byte."""

from __future__ import annotations

import enum
import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cli import render


class Colour(str, enum.Enum):  # enum.StrEnum from Python 3.11 on; the same str subclass
    RED = "red"


class Size(enum.IntEnum):
    LARGE = 3


def written(value: Any) -> str:
    out = io.StringIO()
    render.write_json(value, out)
    return out.getvalue()


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too: json writes NaN, Infinity, -Infinity
    | st.text(max_size=8)
    | st.sampled_from([Colour.RED, Size.LARGE, "\u00e9\u4e2d\U0001f600", '"\\\n\t'])
)
keys = st.text(max_size=6) | st.integers() | st.booleans() | st.none() | st.floats()
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(st.text(max_size=6), max_size=5)  # the one-piece list of strings
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_the_writer_writes_what_json_dumps_writes(value: Any) -> None:
    assert written(value) == json.dumps(value, indent=2)


def test_a_long_document_is_written_whole_across_flushes() -> None:
    doc = {
        "claims": [{"name": f"c-{i}", "options": [f"t{j}" for j in range(50)]} for i in range(500)]
    }
    assert written(doc) == json.dumps(doc, indent=2)


@pytest.mark.parametrize("value", [object(), {"a": {1, 2}}, {(1, 2): "tuple key"}])
def test_what_json_cannot_encode_is_refused_as_json_refuses_it(value: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(value, indent=2)
    with pytest.raises(TypeError):
        written(value)
