"""YAML text -> Python data with each field's line, within the input limits.

The loader (`apis/serde.py`) and the device-plugin config parser (`apis/gpuoperator.py`, for
the YAML a ConfigMap embeds) read YAML through here. libyaml (or PyYAML's pure-Python parser
when libyaml is missing) composes the node graph; `Builder` turns it into dicts and lists,
recording lines, applying merge keys, and enforcing MAX_ALIAS_NODES, MAX_DEPTH and
MAX_INT_DIGITS (`apis/limits.py`) as it goes: the composer shares an anchor's node among its
aliases, so building is where an alias bomb would expand and where it is stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from gpucap.apis.errors import FieldPath, format_path
from gpucap.apis.limits import MAX_ALIAS_NODES, MAX_DEPTH, MAX_INT_DIGITS, Budget
from gpucap.apis.reading import InputError, depth_message, int_message

__all__ = ["DuplicateKeyError", "Loader", "documents", "load_one"]

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
_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"


class Builder:
    """Builds Python data from one file's composed YAML nodes, recording each field's line,
    within the limits (`apis/limits.py`).

    The composer shares the node of an anchor between its aliases; building is where they
    expand, so this is where they are counted: a node reached a second time (through `*alias`,
    or a merge key `<<`) adds itself and everything below it to `alias_nodes`, and a "billion
    laughs" stops at MAX_ALIAS_NODES. A node reached again while it is being built is a
    recursive alias. Nesting stops at MAX_DEPTH; integers at MAX_INT_DIGITS digits (Python
    refuses to convert 4,300)."""

    def __init__(self, loader: yaml.SafeLoader) -> None:
        self.loader = loader
        self.alias_nodes = 0
        self.lines: dict[Path_, int] = {}
        self._seen: set[int] = set()
        self._active: set[int] = set()
        self._merged: dict[int, list[tuple[yaml.Node, yaml.Node]]] = {}

    def document(self, node: yaml.Node) -> tuple[Any, dict[Path_, int]]:
        self.lines = {}
        self._seen.clear()
        self._merged.clear()
        return self._build(node, (), 0, via_alias=False), self.lines

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
        if node.tag == _INT_TAG and isinstance(value, str) and len(value) > MAX_INT_DIGITS:
            digits = sum(c.isalnum() for c in value)
            if digits > MAX_INT_DIGITS:
                raise _ReadError(node, path, int_message(digits))
        try:
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


def documents(text: str, file: str, budget: Budget) -> Iterator[tuple[Any, dict[Path_, int]]]:
    """Each document of `text` as (data, {field path: line}); `None` data for an empty one.

    Raises yaml.YAMLError (syntax), DuplicateKeyError, InputError (a limit, or a value YAML
    cannot construct: the message names `file[index]`, line and field) and InputLimitError
    (documents per run, charged to `budget`)."""
    loader = Loader(text)
    builder = Builder(loader)
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
