"""The plain build of the YAML reader (`yamltext.Builder._plain`, for texts without anchors or
merge keys) gives what the full build gives, value for value and type for type, and where the
full build refuses a document, it hands the document back so that the full build says why."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis import yamltext
from gpucap.apis.limits import MAX_DEPTH, Budget
from gpucap.apis.reading import InputError
from gpucap.apis.yamltext import Builder, DuplicateKeyError, documents
from tests.apis.typed import typed


def build(text: str, *, plain: bool) -> list[Any]:
    """Every document of `text` built by a Builder with or without the plain build; an error
    as (its type, its message)."""
    loader = yamltext._fast(yamltext.Loader)(text)
    builder = Builder(loader, lines=False, plain=plain)
    out: list[Any] = []
    try:
        while loader.check_node():
            out.append(typed(builder.document(loader.get_node())[0]))
    except (yamltext._ReadError, DuplicateKeyError) as err:
        out.append((type(err).__name__, str(err), getattr(err, "path", None)))
    finally:
        loader.dispose()
    return out


def same(text: str) -> None:
    assert build(text, plain=True) == build(text, plain=False), text


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.sampled_from(
        [
            "yes",
            "No",
            "on",
            "~",
            "=",
            "1e3",
            "0x1F",
            "0o17",
            "1_000",
            "12:30:00",
            "2024-01-02",
            "2024-01-02T03:04:05Z",
            ".inf",
            "-.NaN",
            "100m",
            "1Gi",
            "null",
            "",
            "a: b",
            "- x",
        ]
    )
)
keys = st.text(max_size=6) | st.sampled_from(["=", "1", "true", "null", "~", "0.5", "y"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(
    docs=st.lists(values, min_size=1, max_size=3),
    flow=st.sampled_from([None, True, False]),
    unicode=st.booleans(),
)
def test_the_plain_build_reads_dumped_yaml_as_the_full_build_does(
    docs: list[Any], flow: bool | None, unicode: bool
) -> None:
    same(yaml.safe_dump_all(docs, default_flow_style=flow, allow_unicode=unicode))


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",  # a key given twice
        "a:\n  b: 1\n  b: 2\n",
        "=: x\n",  # `=` as a key is the string "="
        "!!merge a: 1\n",  # a merge tag without `<<`
        "1: a\ntrue: b\n~: c\n0.5: d\n",  # keys that are not strings
        "1: a\n'1': b\n",  # two keys that read the same
        "? [a]\n: b\n",  # a collection as a key
        "a: 2024-01-02\nb: !!binary aGVsbG8=\n",  # values built by construct_object
        "a: !!int x\n",  # a value YAML cannot build
        "a: " + "1" * 101 + "\n",  # an integer past the limit
        "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1),
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "a: !!str 1\nb: ! 2\nc: !foo x\n",
        "---\na: 1\n---\n---\n- x\n",
    ],
)
def test_the_plain_build_agrees_where_reading_is_unusual(text: str) -> None:
    same(text)


def test_texts_with_anchors_or_merge_keys_take_the_full_build() -> None:
    text = "base: &b {x: 1}\nuse: *b\nmerged:\n  <<: *b\n  y: 2\n"
    assert next(iter(documents(text, "f", Budget(), lines=False)))[0] == {
        "base": {"x": 1},
        "use": {"x": 1},
        "merged": {"x": 1, "y": 2},
    }
    with pytest.raises(InputError, match="recursive YAML alias"):
        list(documents("a: &a [*a]\n", "f", Budget(), lines=False))


def test_a_manifest_without_anchors_is_built_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    def full_build(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the full build ran")

    monkeypatch.setattr(Builder, "_build", full_build)
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: 'on'}}\nspec: {x: [1, 2.5, true, null]}\n"
    assert next(iter(documents(text, "f", Budget(), lines=False)))[0] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "on"}},
        "spec": {"x": [1, 2.5, True, None]},
    }


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from([yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode]),
    value=st.text(max_size=8)
    | st.sampled_from(["yes", "~", "<<", "=", "1e3", "0x1F", ".inf", "2024-01-02", "", "!", "*"]),
    implicit=st.tuples(st.booleans(), st.booleans()),
)
def test_the_fast_resolver_answers_as_pyyamls_does(
    kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]
) -> None:
    fast = yamltext._fast(yamltext.Loader)("")
    plain = yamltext.Loader("")
    shown = value if kind is yaml.ScalarNode else None
    assert fast.resolve(kind, shown, implicit) == plain.resolve(kind, shown, implicit)
    assert fast.resolve(kind, shown, implicit) == plain.resolve(kind, shown, implicit)  # memo
