"""YAML text -> Python data with each field's line, within the input limits.

The loader (`apis/serde.py`) and the device-plugin config parser (`apis/gpuoperator.py`, for
the YAML a ConfigMap embeds) read YAML through here. libyaml (or PyYAML's pure-Python parser
when libyaml is missing) composes the node graph; `Builder` turns it into dicts and lists,
recording lines, applying merge keys, and enforcing MAX_ALIAS_NODES, MAX_DEPTH and
MAX_INT_DIGITS (`apis/limits.py`) as it goes: the composer shares an anchor's node among its
aliases, so building is where an alias bomb would expand and where it is stopped.

Speed (issue 12): the composer asks the loader to resolve every plain scalar's tag; `_Fast`
remembers the answer per value (a resolution depends on the value alone: a safe loader has no
path resolvers), and `Builder` constructs the str, int, float, bool and null scalars by their
constructor directly. Line maps can be left out (`documents(..., lines=False)`) and built again
when something asks for a line (`LazyLines`): most runs never ask. A JSON text is read by the
json module when that is sure to give what YAML would (`json_document`), which is most of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, Final

import yaml

from gpucap.apis.errors import FieldPath, format_path
from gpucap.apis.limits import MAX_ALIAS_NODES, MAX_DEPTH, MAX_INT_DIGITS, Budget
from gpucap.apis.reading import InputError, depth_message, int_message

__all__ = [
    "NOT_JSON",
    "DuplicateKeyError",
    "LazyLines",
    "Loader",
    "documents",
    "json_document",
    "load_one",
]

Path_ = FieldPath

Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKeyError(ValueError):
    """A mapping key given twice in one mapping (the message says where again)."""

    def __init__(self, path: Path_, key: str, line: int) -> None:
        super().__init__(f"mapping key {key!r} is defined twice (again on line {line})")
        self.path = path


class _ReadError(ValueError):
    """A YAML document refused while it is built (a limit, a value YAML cannot construct);
    the message names the line, column and field."""

    def __init__(self, node: yaml.Node | None, path: Path_, message: str) -> None:
        super().__init__(message)
        self.line = node.start_mark.line + 1 if node is not None else None
        self.column = node.start_mark.column + 1 if node is not None else None
        self.path = path

    def where(self, file: str, index: int) -> str:
        out = f"{file}[{index}]: "
        if self.line is not None:
            out += f"line {self.line} column {self.column}: "
        if len(self.path) > 12:  # a deep or recursive path: its head says where it starts
            out += f"{format_path(self.path[:8])}...({len(self.path) - 8} more): "
        elif self.path:
            out += f"{format_path(self.path)}: "
        return out + str(self)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
# At most this many plain scalars' tags are remembered per file (an input of distinct values
# should not grow the memo without bound; past it, resolving is as slow as PyYAML's).
_MEMO_LIMIT = 200_000
_FAST: dict[type[yaml.SafeLoader], type[yaml.SafeLoader]] = {}
_NO_PATHS: dict[Any, Any] = {}  # stays empty: see `Fast.descend_resolver`


def _fast(base: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    """`base` with the composer's per-node resolver calls made cheap (same answers)."""
    fast = _FAST.get(base)
    if fast is not None:
        return fast
    assert not base.yaml_path_resolvers, "a loader with path resolvers cannot memo its tags"
    # The first characters some implicit resolver (int, float, bool, null, merge...) starts
    # with; a plain scalar starting with any other is a string whatever follows.
    resolvers = base.yaml_implicit_resolvers
    assert None not in resolvers, "a wildcard implicit resolver would see every scalar"
    first = frozenset(k for k in resolvers if k)
    base_resolve: Callable[[Any, Any, Any, Any], str] = base.resolve
    scalar, sequence, mapping = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
    scalar_tag: str = base.DEFAULT_SCALAR_TAG
    sequence_tag: str = base.DEFAULT_SEQUENCE_TAG
    mapping_tag: str = base.DEFAULT_MAPPING_TAG

    class Fast(base):  # type: ignore[valid-type,misc]
        """A safe loader has no path resolvers, so the tag of a plain scalar depends on its
        value alone and descending or ascending the node path does nothing."""

        # The composer calls these two for every node and ignores what they return; builtins
        # (an empty dict's `get` takes the node and index, `tuple()` nothing) keep those calls
        # in C. Neither is a descriptor: the instance hands them out unbound.
        descend_resolver = _NO_PATHS.get
        ascend_resolver = tuple

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._tags: dict[str, str] = {}

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            # BaseResolver.resolve's answers without path resolvers, in fewer steps.
            if kind is scalar:
                if not implicit[0]:
                    return scalar_tag  # quoted, or tagged `!`
                if value and value[0] not in first:
                    return scalar_tag  # no implicit resolver starts with this character
                tag = self._tags.get(value)
                if tag is None:
                    tag = base_resolve(self, kind, value, implicit)
                    if len(self._tags) < _MEMO_LIMIT:
                        self._tags[value] = tag
                return tag
            if kind is sequence:
                return sequence_tag
            if kind is mapping:
                return mapping_tag
            return str(base_resolve(self, kind, value, implicit))

    _FAST[base] = Fast
    return Fast


_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"


class _NotPlainError(Exception):
    """`Builder._plain` met something only the full build handles."""


class Builder:
    """Builds Python data from one file's composed YAML nodes, recording each field's line,
    within the limits (`apis/limits.py`).

    The composer shares the node of an anchor between its aliases; building is where they
    expand, so this is where they are counted: a node reached a second time (through `*alias`,
    or a merge key `<<`) adds itself and everything below it to `alias_nodes`, and a "billion
    laughs" stops at MAX_ALIAS_NODES. A node reached again while it is being built is a
    recursive alias. Nesting stops at MAX_DEPTH; integers at MAX_INT_DIGITS digits (Python
    refuses to convert 4,300)."""

    def __init__(self, loader: yaml.SafeLoader, *, lines: bool = True, plain: bool = False) -> None:
        self.loader = loader
        self.record = lines
        # The text holds no anchor (`&`) and no `<<`: `_plain` builds it (see there).
        self.plain = plain
        self.alias_nodes = 0
        self.lines: dict[Path_, int] = {}
        self._seen: set[int] = set()
        self._active: set[int] = set()
        self._merged: dict[int, list[tuple[yaml.Node, yaml.Node]]] = {}

    def document(self, node: yaml.Node) -> tuple[Any, dict[Path_, int]]:
        self.lines = {}
        self._seen.clear()
        self._merged.clear()
        if self.plain and not self.record:
            try:
                return self._plain(node, 0), self.lines
            except _NotPlainError:
                pass  # the full build below gives the same data, or the error
        return self._build(node, (), 0, via_alias=False), self.lines

    def _plain(self, node: yaml.Node, depth: int) -> Any:
        """`_build` for a document without anchors or merge keys, and without lines: no node
        is reached twice, so there is nothing to count or to catch recursing, and no path to
        carry. Anything else (a limit, a key given twice, a value that cannot be built, a merge
        key) raises _NotPlainError, and `document` builds it again the full way, which says why."""
        cls = node.__class__
        if cls is yaml.ScalarNode:
            tag = node.tag
            if tag == _STR_TAG:
                return node.value
            if tag not in _SCALAR_TAGS:
                # construct_object (a timestamp, a binary...) keeps state when it fails, which
                # would change the full build's message: only the full build calls it.
                raise _NotPlainError
            try:
                return self._scalar(node, ())
            except _ReadError:
                raise _NotPlainError from None
        if depth >= MAX_DEPTH:
            raise _NotPlainError
        if cls is yaml.MappingNode:
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _STR_TAG and key_node.__class__ is yaml.ScalarNode:
                    name = key_node.value
                elif key_node.tag not in _SCALAR_TAGS and key_node.tag != _VALUE_TAG:
                    raise _NotPlainError  # a merge key, a timestamp, a collection...
                else:
                    if key_node.tag == _VALUE_TAG:
                        key_node.tag = _STR_TAG  # as `_pairs` reads `=`
                    try:
                        name = self._key(key_node, ())
                    except _ReadError:
                        raise _NotPlainError from None
                out[name] = self._plain(value_node, depth + 1)
            if len(out) != len(node.value):
                raise _NotPlainError  # a key given twice: `_build` names it
            return out
        if cls is yaml.SequenceNode:
            return [self._plain(item, depth + 1) for item in node.value]
        raise _NotPlainError

    def _charge(self, node: yaml.Node, path: Path_, n: int) -> None:
        self.alias_nodes += n
        if self.alias_nodes > MAX_ALIAS_NODES:
            raise _ReadError(
                node,
                path,
                f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes (gpucap's limit for "
                'one file; a "billion laughs" alias bomb?)',
            )

    def _build(self, node: yaml.Node, path: Path_, depth: int, *, via_alias: bool) -> Any:
        if self.record:
            self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            if via_alias:
                self._charge(node, path, 1)
            return self._scalar(node, path)
        key = id(node)
        if key in self._active:
            raise _ReadError(node, path, "a recursive YAML alias (an anchor used inside itself)")
        if key in self._seen:
            via_alias = True
        else:
            self._seen.add(key)
        if via_alias:
            self._charge(node, path, 1)
        if depth >= MAX_DEPTH:
            raise _ReadError(node, path, depth_message())
        self._active.add(key)
        try:
            if isinstance(node, yaml.MappingNode):
                out: dict[Any, Any] = {}
                for key_node, value_node in self._pairs(node, path, depth):
                    name = self._key(key_node, path)
                    child = (*path, name)
                    if name in out:
                        raise DuplicateKeyError(child, name, key_node.start_mark.line + 1)
                    if self.record:
                        self.lines[child] = key_node.start_mark.line + 1
                    out[name] = self._build(value_node, child, depth + 1, via_alias=via_alias)
                return out
            if isinstance(node, yaml.SequenceNode):
                return [
                    self._build(item, (*path, i), depth + 1, via_alias=via_alias)
                    for i, item in enumerate(node.value)
                ]
            return self._scalar(node, path)
        finally:
            self._active.discard(key)

    def _key(self, node: yaml.Node, path: Path_) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise _ReadError(node, path, "a mapping key must be a string, not a collection")
        key = self._scalar(node, path)
        if isinstance(key, str):
            return key
        return str(key).lower() if isinstance(key, bool) else str(key)

    def _scalar(self, node: yaml.Node, path: Path_) -> Any:
        value = node.value
        tag = node.tag
        if tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
            return value  # what construct_yaml_str gives, without its bookkeeping
        if tag == _INT_TAG and isinstance(value, str) and len(value) > MAX_INT_DIGITS:
            digits = sum(c.isalnum() for c in value)
            if digits > MAX_INT_DIGITS:
                raise _ReadError(node, path, int_message(digits))
        try:
            if tag in _SCALAR_TAGS and isinstance(node, yaml.ScalarNode):
                # Immutable values: the constructor's memo of built nodes changes nothing.
                return self.loader.yaml_constructors[tag](self.loader, node)
            return self.loader.construct_object(node, deep=True)
        except Exception as err:  # PyYAML's constructors raise ValueError, AttributeError...
            tag = node.tag.rsplit(":", 1)[-1] if node.tag else "value"
            reason = getattr(err, "problem", None) or str(err).splitlines()[0]
            shown = value if isinstance(value, str) else ""
            raise _ReadError(
                node, path, f"{shown[:80]!r} cannot be read as a YAML {tag}: {reason}"
            ) from None

    def _pairs(
        self, node: yaml.MappingNode, path: Path_, depth: int
    ) -> list[tuple[yaml.Node, yaml.Node]]:
        """The key/value pairs of a mapping with its merge keys (`<<`) applied: keys written in
        the mapping win over merged ones, and among merged mappings the first listed wins (the
        YAML merge-key rule). Unlike PyYAML's `flatten_mapping`, a key merged twice is kept
        once, so merging a mapping into itself over and over does not double it."""
        own: list[tuple[yaml.Node, yaml.Node]] = []
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                if key_node.tag == _VALUE_TAG:
                    key_node.tag = _STR_TAG  # `=` as a key is the string "=", as PyYAML reads it
                own.append((key_node, value_node))
                continue
            if isinstance(value_node, yaml.MappingNode):
                sources = [value_node]
            elif isinstance(value_node, yaml.SequenceNode) and all(
                isinstance(s, yaml.MappingNode) for s in value_node.value
            ):
                sources = value_node.value
            else:
                raise _ReadError(
                    value_node, path, "a merge key (<<) takes a mapping or a list of mappings"
                )
            for source in sources:
                if id(source) in self._active:
                    raise _ReadError(
                        source, path, "a recursive YAML alias (an anchor merged into itself)"
                    )
                if depth + 1 >= MAX_DEPTH:
                    raise _ReadError(source, path, depth_message())
                sub = self._merged.get(id(source))
                if sub is None:  # each merged mapping is flattened once, however often merged
                    self._active.add(id(source))
                    try:
                        sub = self._pairs(source, path, depth + 1)
                    finally:
                        self._active.discard(id(source))
                    self._merged[id(source)] = sub
                self._charge(source, path, len(sub))
                merged.extend(sub)
        if not merged:
            return own
        taken = {(k.tag, k.value) for k, _ in own if isinstance(k, yaml.ScalarNode)}
        out: list[tuple[yaml.Node, yaml.Node]] = []
        for k, v in merged:
            if isinstance(k, yaml.ScalarNode):
                if (k.tag, k.value) in taken:
                    continue
                taken.add((k.tag, k.value))
            out.append((k, v))
        return out + own


def documents(
    text: str, file: str, budget: Budget, *, lines: bool = True
) -> Iterator[tuple[Any, dict[Path_, int]]]:
    """Each document of `text` as (data, {field path: line}); `None` data for an empty one.
    `lines=False` leaves the line maps empty (`LazyLines` builds them when asked).

    Raises yaml.YAMLError (syntax), DuplicateKeyError, InputError (a limit, or a value YAML
    cannot construct: the message names `file[index]`, line and field) and InputLimitError
    (documents per run, charged to `budget`)."""
    loader = _fast(Loader)(text)
    # Without `&` there is no anchor, so no alias; without `<<`, no merge key (an explicit
    # `!!merge` tag `_plain` hands back). Either may be inside a string: then only slower.
    builder = Builder(loader, lines=lines, plain="&" not in text and "<<" not in text)
    index = 0
    try:
        while loader.check_node():
            budget.charge_object()
            node = loader.get_node()
            if node is None:
                yield None, {}
            else:
                try:
                    yield builder.document(node)
                except _ReadError as err:
                    raise InputError(err.where(file, index)) from None
            index += 1
    except RecursionError:
        # PyYAML's pure-Python composer recurses per level (libyaml stops at 1,000 itself).
        raise InputError(f"{file}[{index}]: {depth_message()}") from None
    finally:
        loader.dispose()


def load_one(text: str, name: str) -> Any:
    """The data of a YAML text holding one document (an embedded config), within the limits.

    Raises yaml.YAMLError or ValueError (InputError, DuplicateKeyError, more than one
    document) when the text is not one readable YAML document."""
    docs = list(documents(text, name, Budget()))
    if len(docs) > 1:
        raise ValueError(f"{name}: {len(docs)} YAML documents where one is expected")
    return docs[0][0] if docs else None


_SCALAR_TAGS = frozenset({_INT_TAG, _FLOAT_TAG, _BOOL_TAG, _NULL_TAG})


# ---- lazy line maps ---------------------------------------------------------------------------
class LazyLines(Mapping[Path_, int]):
    """A line map built on first use: `compute()` runs once, when a line is asked for (a lint
    finding, an error shown with its line). Loading keeps these instead of building every
    field's line up front, which most runs never read."""

    __slots__ = ("_compute", "_lines")

    def __init__(self, compute: Callable[[], Mapping[Path_, int]]) -> None:
        self._compute: Callable[[], Mapping[Path_, int]] | None = compute
        self._lines: Mapping[Path_, int] | None = None

    def _get(self) -> Mapping[Path_, int]:
        if self._lines is None:
            assert self._compute is not None
            self._lines, self._compute = self._compute(), None
        return self._lines

    def __getitem__(self, key: Path_) -> int:
        return self._get()[key]

    def __iter__(self) -> Iterator[Path_]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __contains__(self, key: object) -> bool:
        return key in self._get()


class TextLines:
    """The line maps of every document of one text, built together on first use (one more
    YAML pass over the text), for the `LazyLines` of its documents."""

    def __init__(self, text: str, file: str) -> None:
        self._text: str | None = text
        self._file = file
        self._docs: list[dict[Path_, int]] | None = None

    def document(self, index: int) -> LazyLines:
        # A bound method, not a closure: a loaded scenario is pickled whole to the workers of a
        # Ray engine (issue 26), and the text then goes once, shared by its documents' maps.
        return LazyLines(partial(self._document, index))

    def release(self) -> None:
        """Let the text go: a line map not built by now stays empty. For a command that asks
        for no line once its input is loaded and reported (`gpucap plan`), so that the text
        (57 MB for 50,000 pods) does not stay in memory to the end."""
        if self._docs is None:
            self._docs = []
        self._text = None

    def _document(self, index: int) -> dict[Path_, int]:
        if self._docs is None:
            text, self._text = self._text or "", None
            try:
                self._docs = [lines for _, lines in documents(text, self._file, Budget())]
            except (yaml.YAMLError, ValueError, RecursionError):
                # Only JSON that YAML cannot read gets here: it has no line map, as before.
                self._docs = []
        return self._docs[index] if index < len(self._docs) else {}


def split_items(lines: Mapping[Path_, int]) -> dict[int, dict[Path_, int]]:
    """A `kind: List` document's line map cut into one per item, paths relative to the item."""
    out: dict[int, dict[Path_, int]] = {}
    for k, v in lines.items():
        if len(k) >= 2 and k[0] == "items" and isinstance(k[1], int):
            out.setdefault(k[1], {})[k[2:]] = v
    return out


# ---- JSON, when the json module reads it as YAML would ----------------------------------------
class _NotJSON:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Final = _NotJSON()


class _UnsureError(ValueError):
    """The json module read something YAML might read differently: take the YAML path."""


# What YAML reads differently from JSON, or refuses, in a text the json module accepts:
# characters YAML does not allow in a stream or takes for line breaks (DEL, the C1 controls
# with NEL, LS, PS, BOM, non-characters, surrogates), escapes of surrogates (libyaml refuses
# them), a key whose colon is on another line or far after it (YAML's simple keys), and
# integers past MAX_INT_DIGITS (`_json_int`: the YAML path says where). Each is searched for
# on its own: one alternation of them all cost six times as much (no literal to skip ahead
# to), the digit run most of all.
_YAML_UNSURE_CHARS = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_YAML_UNSURE_ASCII = (
    re.compile(r"\\u[dD][89a-fA-F]"),
    re.compile(r"\"\s*[\r\n]\s*:"),
    re.compile(r"\"[ \t]{32,}:"),
)
# A key longer than this may span more than the 1,024 characters YAML allows a simple key
# (six characters per escaped one, plus quotes).
_LONGEST_KEY = 150


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _UnsureError("a key given twice")  # YAML's DuplicateKeyError names where
    if out and max(map(len, out)) > _LONGEST_KEY:
        raise _UnsureError("a long key")
    return out


def _json_int(text: str) -> int:
    """A JSON integer, when it is within what the YAML path reads without a limit error."""
    if len(text) > MAX_INT_DIGITS:
        raise _UnsureError("a long integer")  # the YAML path names the line (or reads it)
    return int(text)


def json_document(text: str) -> Any:
    """The data of `text` when it is one JSON object or array that YAML would read as the same
    data without error (what `documents` would build), else NOT_JSON.

    The json module is some forty times faster than composing YAML nodes and building from
    them; the YAML path stays for everything else (and for every error message). Differences
    handled: a JSON number that is not a YAML float (`1e3`: YAML reads a string), NaN and
    Infinity (not JSON), duplicate keys, nesting past MAX_DEPTH, tabs where YAML refuses them
    and the characters above all leave NOT_JSON."""
    body = text.strip(" \t\r\n")
    if not body or body[0] not in "{[":
        return NOT_JSON
    if "\t" in text and ("\t" in text[: len(text) - len(text.lstrip())] or not _tabs_in_flow()):
        return NOT_JSON
    if "\t" in text[len(text.rstrip()) :]:
        return NOT_JSON
    if not text.isascii() and _YAML_UNSURE_CHARS.search(text):
        return NOT_JSON
    if "\x7f" in text or any(p.search(text) for p in _YAML_UNSURE_ASCII):
        return NOT_JSON
    try:
        data = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_json_int,
            parse_float=_yaml_float,
            parse_constant=_not_json_constant,
        )
    except (ValueError, RecursionError):
        return NOT_JSON
    return data if _within_depth(data) else NOT_JSON


def _within_depth(data: Any) -> bool:
    """Whether parsed JSON nests no deeper than MAX_DEPTH (what `reading.check_depth` checks):
    level by level over the containers only (a third cheaper than visiting every value)."""
    level = [data] if type(data) is dict or type(data) is list else []
    depth = 0
    while level:
        if depth >= MAX_DEPTH:
            return False
        below: list[Any] = []
        for value in level:
            below += [
                c
                for c in (value.values() if type(value) is dict else value)
                if type(c) is dict or type(c) is list
            ]
        level = below
        depth += 1
    return True


def _yaml_float(text: str) -> Any:
    """A JSON number with a fraction or exponent as YAML reads the same plain scalar."""
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if tag == _FLOAT_TAG:
        return float(text)
    if tag == _STR_TAG:
        return text
    raise _UnsureError(f"{text} resolves to {tag}")


def _not_json_constant(word: str) -> Any:
    raise _UnsureError(word)


_RESOLVER = yaml.resolver.Resolver()  # the implicit resolvers every safe loader uses


def _tabs_in_flow() -> bool:
    """libyaml allows tabs between tokens inside `{...}` and `[...]`; PyYAML's own scanner
    does not."""
    return Loader is getattr(yaml, "CSafeLoader", None)
