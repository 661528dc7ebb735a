"""The JSON fast path of the loader (`yamltext.json_document`): whenever it reads a text, the
data is what the YAML path builds from the same text, value for value and type for type; where
YAML would read the text differently or refuse it, it steps aside (NOT_JSON)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis import yamltext
from gpucap.apis.reading import InputError, check_depth
from gpucap.apis.serde import load_text
from gpucap.apis.yamltext import NOT_JSON, json_document
from tests.apis.typed import (
    agrees,
    values,
)


@settings(max_examples=400, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=8), values, max_size=5) | st.lists(values, max_size=5),
    indent=st.sampled_from([None, 0, 1, 2, 4, "\t"]),
    ascii_only=st.booleans(),
    compact=st.booleans(),
)
def test_the_fast_path_reads_json_as_yaml_does(
    value: Any, indent: Any, ascii_only: bool, compact: bool
) -> None:
    separators = (",", ":") if compact else None
    agrees(json.dumps(value, indent=indent, ensure_ascii=ascii_only, separators=separators))


def test_kubectl_style_json_takes_the_fast_path() -> None:
    pod = {"apiVersion": "v1", "kind": "List", "items": [{"a": 1, "b": [1.5, None, True, "x"]}]}
    assert agrees(json.dumps(pod, indent=4))
    assert agrees(json.dumps(pod))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1e3}',  # YAML 1.1 reads 1e3 as a string: the fast path gives the same string
        '{"a": 1.5e10}',
        '{"a": 1.5e+10}',
        '{"a": -0.0}',
        '{"a": "\\/"}',
        '{"a": "\\u0000"}',
        '{"a":\t1}',
        '{"a": "\\u00e9\\u4e2d"}',
        '{\r\n  "a": [1, 2],\r\n  "b": {}\r\n}\r\n',
        '  \n [ {"a": "x"} ]  \n\n',
        '{"a": "' + "1" * 101 + '"}',  # a long run of digits in a string is no integer
        '{"a": 1.' + "5" * 120 + "}",  # nor in a float (YAML's limit is for integers)
        '{"a": ' + "1" * 100 + "}",  # an integer at the limit
    ],
)
def test_numbers_escapes_and_line_ends_read_as_yaml_reads_them(text: str) -> None:
    assert agrees(text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"a": 1, "a": 2}', "a key given twice is YAML's error"),
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": "\\ud83d\\ude00"}', "libyaml refuses escaped surrogates"),
        ('{"a": "\u2028"}', "a line separator folds in YAML"),
        ('{"a": "\x85"}', "NEL is a YAML line break"),
        ('{"a": "\x7f"}', "DEL is not allowed in a YAML stream"),
        ('{"a"\n: 1}', "a simple key must be on one line"),
        ("\t{}", "a tab before the first token"),
        ("{}\n\t", "a tab after the last"),
        ('{"a": ' + "1" * 101 + "}", "an integer past the limit: the YAML path says where"),
        ('{"a": -' + "1" * 100 + "}", "a sign and 100 digits: the YAML path counts the digits"),
        ('[{"a": [' + "1" * 101 + "]}]", "an integer past the limit anywhere"),
        ("[" * 200 + "]" * 200, "deeper than the limit: the YAML path says where"),
        ('{"' + "k" * 151 + '": 1}', "a long key may pass YAML's 1,024-character simple key"),
        ('"text"', "a scalar document"),
        ("", "empty"),
        ("{} {}", "not JSON"),
    ],
)
def test_the_fast_path_steps_aside_where_yaml_may_differ(text: str, why: str) -> None:
    assert json_document(text) is NOT_JSON, why


def test_without_libyaml_tabs_inside_json_take_the_yaml_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(yamltext, "Loader", yaml.SafeLoader)
    assert json_document('{"a":\t1}') is NOT_JSON
    assert json_document('{"a": 1}') == {"a": 1}


def test_a_json_list_keeps_every_line_for_lint() -> None:
    text = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p{i}"},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                }
                for i in range(3)
            ],
        },
        indent=2,
    )
    result = load_text(text, "pods.json")
    sources = {m.obj.metadata.name: m.source for m in result.manifests}
    # Each item's own lines, from the YAML pass the first question triggers.
    names = [text.splitlines().index(f'        "name": "p{i}"') + 1 for i in range(3)]
    assert [sources[f"p{i}"].line_of(("metadata", "name")) for i in range(3)] == names
    assert sources["p2"].line_of(("spec", "nothing")) == names[2] + 2


@pytest.mark.parametrize("levels", [0, 1, 127, 128, 129, 130])
@pytest.mark.parametrize("opener", ["[", '{"k":'])
def test_the_depth_check_draws_the_line_where_the_reader_does(levels: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    data = json.loads(opener * levels + "1" + closer * levels)
    try:
        check_depth(data, lambda: "x")
        within = True
    except InputError:
        within = False
    assert yamltext._within_depth(data) is within
