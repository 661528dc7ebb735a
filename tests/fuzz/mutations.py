"""Structure-aware, seeded mutations of the fuzzer's seeds, each tagged with the class of hostile
input it stands for.

A mutation is a list of concrete `Step`s (a path and a value, a byte offset as a fraction of the
file, a file-level replacement), drawn by `draw_steps` from a `random.Random` the caller seeds: the
same seed gives the same steps, and a reproducer is the seed plus the steps, which `shrink` in the
driver removes one by one. Steps work at three levels:

- the parsed documents (`TreeStep`): swap a value for one of another type or an edge value, attack
  a string, rename, delete or duplicate keys, nest 1,000 levels deep, plant a YAML alias bomb,
  copy a document 1,000 times, set `replicas: 2147483648`;
- the serialized bytes (`ByteStep`): truncate, insert bytes that are not UTF-8, re-encode, repeat
  a line (a duplicate key);
- the whole file (`FileStep`): empty, binary, a symlink to `/dev/zero`, a name too long for the
  OS, 2,000 copies in a directory, the file at the bottom of a directory 1,000 levels deep.

Oracle mutations (`ORACLES`) are separate: each makes a valid object into one the Kubernetes API
server, Karpenter's CRDs or the GPU Operator would refuse, so `gpucap validate` must exit 2.

Called by `driver.py`; no I/O except `FileStep.write`, no global randomness.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpucap.apis.serde import KINDS
from tests.fuzz.seeds import Format, SeedFile

__all__ = [
    "ORACLES",
    "ByteStep",
    "FileStep",
    "Oracle",
    "Raw",
    "Step",
    "TreeStep",
    "draw_steps",
    "serialize",
]

Path_ = tuple[Any, ...]  # (document index, key or list index, ...)


@dataclass(frozen=True, slots=True)
class Raw:
    """Text written verbatim where a value goes (a 5,000-digit integer, `.inf`, a flow sequence
    nested 1,000 deep, an alias bomb): what no YAML or JSON dumper would write for us."""

    text: str

    def __repr__(self) -> str:
        return f"Raw({_short(self.text)})"


def _short(text: str, keep: int = 60) -> str:
    return repr(text) if len(text) <= keep else f"{text[:keep]!r}...<{len(text)} chars>"


# -- serialization --------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes `Raw` values as placeholders (replaced by their text afterwards)."""


def _dump_yaml(docs: list[Any]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000)


def _dump_toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return (
            "inf"
            if v == math.inf
            else "-inf"
            if v == -math.inf
            else "nan"
            if math.isnan(v)
            else repr(v)
        )
    if isinstance(v, str):
        return json.dumps(v)  # JSON's escapes are a subset of TOML basic strings'
    if isinstance(v, list):
        return "[" + ", ".join(_dump_toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return (
            "{"
            + ", ".join(
                f"{json.dumps(str(k))} = {_dump_toml_value(x)}"
                for k, x in v.items()
                if x is not None
            )
            + "}"
        )
    return '""'  # TOML has no null


def _dump_toml(doc: Any) -> str:
    if not isinstance(doc, dict):
        return _dump_toml_value(doc)
    lines = []
    for table, body in doc.items():
        if isinstance(body, dict):
            lines.append(f"[{json.dumps(str(table))}]")
            lines += [
                f"{json.dumps(str(k))} = {_dump_toml_value(v)}"
                for k, v in body.items()
                if v is not None
            ]
        elif body is not None:
            lines.insert(0, f"{json.dumps(str(table))} = {_dump_toml_value(body)}")
    return "\n".join(lines) + "\n"


def serialize(fmt: Format, docs: list[Any]) -> bytes:
    """The documents as the bytes of a file of format `fmt`, `Raw` values written verbatim."""
    raws: list[str] = []

    def swap(node: Any) -> Any:
        if isinstance(node, Raw):
            raws.append(node.text)
            return f"RAWTOKEN{len(raws) - 1}X"
        if isinstance(node, dict):
            return {k: swap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    plain = [swap(d) for d in docs]
    if fmt == "yaml":
        text = _dump_yaml(plain)
    elif fmt == "json":
        text = json.dumps(plain[0] if plain else None, ensure_ascii=False, indent=1)
    else:
        text = _dump_toml(plain[0] if plain else {})
    # One pass over the text (a replace per token was raws x text: a thousand copies of a
    # document holding a 200,000-character value stalled the fuzzer itself); a quoted token
    # (JSON, TOML) loses its quotes.
    if raws:
        text = _RAW_TOKEN.sub(lambda m: raws[int(m.group(1) or m.group(2))], text)
    return text.encode("utf-8", "surrogatepass")


_RAW_TOKEN = re.compile(r'"RAWTOKEN(\d+)X"|RAWTOKEN(\d+)X')


# -- paths ----------------------------------------------------------------------------------------


def walk(docs: list[Any]) -> Iterator[tuple[Path_, Any]]:
    """Every node below the documents (not the documents themselves), with its path."""
    stack: list[tuple[Path_, Any]] = [((i,), d) for i, d in enumerate(docs)]
    while stack:
        path, node = stack.pop()
        children: list[tuple[Any, Any]] = []
        if isinstance(node, dict):
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        for k, v in children:
            yield (*path, k), v
            stack.append(((*path, k), v))


def get(docs: list[Any], path: Path_) -> Any:
    node: Any = docs
    for k in path:
        node = node[k]
    return node


def _parent(docs: list[Any], path: Path_) -> Any:
    try:
        parent = get(docs, path[:-1])
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(parent, dict) and path[-1] in parent:
        return parent
    if isinstance(parent, list) and isinstance(path[-1], int) and path[-1] < len(parent):
        return parent
    return None


# -- steps ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One concrete change; `cls` is the class of hostile input it belongs to."""

    cls: str

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class TreeStep(Step):
    """A change to the parsed documents: set (or add) `path` to `value`, delete it (`op`
    "delete"), rename its key ("rename", `value` the new key), or copy document `path[0]`
    (`op` "copy-doc", `value` the number of copies; `rename` gives each copy its own name)."""

    op: str = "set"
    path: Path_ = ()
    value: Any = None
    rename: bool = False

    def apply(self, docs: list[Any]) -> list[Any]:
        """The documents after the step; a path that no longer exists leaves them as they are."""
        docs = copy.deepcopy(docs)
        if self.op == "copy-doc":
            if not docs:
                return docs
            src = docs[self.path[0] % len(docs)]
            copies = []
            for i in range(self.value):
                c = copy.deepcopy(src)
                if self.rename and isinstance(c, dict) and isinstance(c.get("metadata"), dict):
                    c["metadata"]["name"] = f"{c['metadata'].get('name', 'x')}-{i}"
                copies.append(c)
            return docs + copies
        if self.op == "set" and len(self.path) >= 2:
            try:
                parent = get(docs, self.path[:-1])
            except (KeyError, IndexError, TypeError):
                return docs
            key = self.path[-1]
            if isinstance(parent, dict):
                parent[key] = self.value
            elif isinstance(parent, list) and isinstance(key, int):
                if key < len(parent):
                    parent[key] = self.value
                else:
                    parent.append(self.value)
            return docs
        if self.op == "set" and len(self.path) == 1:
            if self.path[0] < len(docs):
                docs[self.path[0]] = self.value
            else:
                docs.append(self.value)
            return docs
        parent = _parent(docs, self.path)
        if parent is None:
            return docs
        key = self.path[-1]
        if self.op == "delete":
            del parent[key]
        elif self.op == "rename" and isinstance(parent, dict):
            items = [(self.value if k == key else k, v) for k, v in parent.items()]
            parent.clear()
            parent.update(items)
        return docs

    def describe(self) -> str:
        where = "".join(f"[{k!r}]" for k in self.path)
        if self.op == "copy-doc":
            return f"copy document {self.path[0]} {self.value} times" + (
                " (renamed)" if self.rename else ""
            )
        if self.op == "delete":
            return f"delete docs{where}"
        if self.op == "rename":
            return f"rename key docs{where} to {_short(str(self.value))}"
        shown = self.value if isinstance(self.value, Raw) else _short(repr(self.value))
        return f"set docs{where} = {shown}"


@dataclass(frozen=True, slots=True)
class ByteStep(Step):
    """A change to the serialized file: `op` is "truncate", "insert" (`data` at `at`),
    "reencode" (the text as `data.decode()`'s codec name, after a non-ASCII comment) or
    "dup-line" (the line at `at` twice); `at` is a fraction of the length."""

    op: str = "truncate"
    at: float = 0.5
    data: bytes = b""

    def apply(self, raw: bytes) -> bytes:
        pos = int(len(raw) * self.at)
        if self.op == "truncate":
            return raw[:pos]
        if self.op == "insert":
            return raw[:pos] + self.data + raw[pos:]
        if self.op == "reencode":
            text = "# café, naïve\n" + raw.decode("utf-8", "replace")
            return text.encode(self.data.decode(), "replace")
        if self.op == "dup-line":
            lines = raw.splitlines(keepends=True)
            if not lines:
                return raw
            i = min(int(len(lines) * self.at), len(lines) - 1)
            return b"".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
        return raw

    def describe(self) -> str:
        if self.op == "insert":
            return f"insert {self.data[:20]!r} at {self.at:.2f} of the file"
        if self.op == "reencode":
            return f"re-encode the file as {self.data.decode()} (after a '# café' line)"
        return f"{self.op} at {self.at:.2f} of the file"


@dataclass(frozen=True, slots=True)
class FileStep(Step):
    """The file replaced as a whole: "empty", "binary" (`size` seeded random bytes), "dev-zero"
    (a symlink to the endless `/dev/zero`), "long-name" (a name the OS refuses; not written),
    "many-files" (2,000 copies in a directory, which is what gpucap is given) or "deep-dir"
    (the file at the bottom of a directory 1,000 levels deep, given as the top directory)."""

    op: str = "empty"
    size: int = 0
    rng_seed: int = 0

    def write(self, path: Path, content: bytes) -> Path:
        """Write the file for this step at `path` (or a sibling); the path to give gpucap."""
        if self.op == "empty":
            path.write_bytes(b"")
        elif self.op == "binary":
            path.write_bytes(random.Random(self.rng_seed).randbytes(self.size))
        elif self.op == "dev-zero":
            path.symlink_to("/dev/zero")
        elif self.op == "long-name":
            return path.with_name("n" * 300 + path.suffix)
        elif self.op == "many-files":  # the same file 2,000 times, given as one directory
            many = path.with_name("many")
            many.mkdir()
            for i in range(2000):
                (many / f"f{i:04d}{path.suffix}").write_bytes(content)
            return many
        elif self.op == "deep-dir":  # made a level at a time: os.makedirs recurses
            top = folder = path.with_name("deep")
            top.mkdir()
            for _ in range(1000):
                folder /= "d"
                folder.mkdir()
            (folder / path.name).write_bytes(content)
            return top
        else:
            path.write_bytes(content)
        return path

    def describe(self) -> str:
        return {
            "empty": "the file is empty",
            "binary": f"the file is {self.size} random bytes",
            "dev-zero": "the file is a symlink to /dev/zero",
            "long-name": "the file's name is 300 characters long",
            "many-files": "the file 2,000 times in one directory, given as the directory",
            "deep-dir": "the file 1,000 directories deep, given as the top directory",
        }[self.op]


# -- value pools ----------------------------------------------------------------------------------

HUGE_INT = Raw("9" * 5001)
TYPE_SWAPS: tuple[Any, ...] = (
    "",
    "x",
    0,
    1,
    -1,
    1.5,
    True,
    False,
    None,
    [],
    {},
    ["a", 1],
    {"a": {"b": 1}},
    "null",
    "0x1F",
    "true",
)
NUMBER_EDGES: tuple[Any, ...] = (
    0, -1, 2147483647, 2147483648, -2147483648, -2147483649, 9223372036854775807,
    9223372036854775808, -9223372036854775809, 1e308, 1e-300, 0.5,
    Raw(".inf"), Raw("-.inf"), Raw(".nan"), Raw("1.0e+999"),
)  # fmt: skip
HUGE_QUANTITIES = (
    "1e999999999", "1e-999999999", "1e5000", "9" * 5001, "1" + "0" * 5000 + "Ki",
    "99999999999999999999999Ei", "0.0000000000000000000000001", "9223372036854775808", "1Qi",
)  # fmt: skip
STRING_ATTACKS = (
    "\x1b[2J", "\x00", "a\nb", "\u202egnp.exe", "x" * 100_000, "²", "\u0661\u0662\u0663", "\r", "\x9b31m",
    "\ud800", "\x07", "\u2066x\u2069", "\ufeff",
)  # fmt: skip
WORKLOAD_SIZE_KEYS = (
    "replicas",
    "parallelism",
    "completions",
    "size",
    "minReplicas",
    "maxReplicas",
    "numOfHosts",
)
# Past gpucap's pod limit (refused before any pod is built: apis/limits.py), just past it, and
# large but within it. Not 100,000: planning that many pods is honest work of ~10 s (issue 12
# makes it faster), which the per-command bound would call a hang.
WORKLOAD_SIZES: tuple[Any, ...] = (
    2147483648,
    2147483647,
    10**6,
    150_001,
    20_000,
    -1,
    0,
    Raw("9" * 5001),
    Raw("1.0e+999"),
)
DURATION_KEYS = (
    "consolidateAfter", "expireAfter", "terminationGracePeriod", "schedule", "duration", "at",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "nodes",
)  # fmt: skip
DURATION_ATTACKS: tuple[Any, ...] = (
    "²h", "1e39s", "1000000000000000000000000000000000000000s", "9999999999999999999h", "-5m",
    "Never", "² * * * *", "* * * * * *", "@every 1h", "60 * * * *", "1h1h", "", "0s", "1.5.5h",
    "100%", "101%", "-1%", "\u0661h", Raw("9" * 5001), 10**40,
)  # fmt: skip
QUANTITY_PARENTS = (
    "requests",
    "limits",
    "capacity",
    "overhead",
    "volumeSize",
    "memory",
    "cpu",
    "nvidia.com/gpu",
    "ephemeral-storage",
    "compressed",
    "uncompressed",
)
NAME_KEYS = ("name", "namespace", "kind", "key", "value", "image", "app")


def _nested(fmt: Format, depth: int) -> Raw:
    if fmt == "json":
        return Raw('{"a": ' * depth + "1" + "}" * depth)
    return Raw("[" * depth + "]" * depth)


ALIAS_BOMB = Raw(
    "[&a0 [l, l, l, l, l, l, l, l, l, l], "
    + ", ".join(f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9))
    + "]"
)
RECURSIVE_ALIASES = (Raw("&r0 [*r0]"), Raw("&r1 {a: *r1}"), Raw("&r2 [a, &r3 [*r2, *r3]]"))


# -- drawing --------------------------------------------------------------------------------------


def _pick_path(
    rng: random.Random, docs: list[Any], want: Callable[[Path_, Any], bool] | None = None
) -> Path_ | None:
    paths = [p for p, v in walk(docs) if want is None or want(p, v)]
    return rng.choice(paths) if paths else None


def _is_leaf(_p: Path_, v: Any) -> bool:
    return not isinstance(v, dict | list)


def _key_in(keys: tuple[str, ...]) -> Callable[[Path_, Any], bool]:
    return lambda p, v: isinstance(p[-1], str) and p[-1] in keys and not isinstance(v, dict | list)


def _under(keys: tuple[str, ...]) -> Callable[[Path_, Any], bool]:
    return lambda p, v: (
        any(isinstance(k, str) and k in keys for k in p[1:]) and not isinstance(v, dict | list)
    )


def _set(
    cls: str,
    rng: random.Random,
    docs: list[Any],
    values: tuple[Any, ...],
    *wants: Callable[[Path_, Any], bool] | None,
) -> TreeStep | None:
    """Set a path chosen by the first filter that matches anything to one of `values`."""
    for want in wants:
        path = _pick_path(rng, docs, want)
        if path is not None:
            return TreeStep(cls, "set", path, rng.choice(values))
    return None


def _value_type(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    return _set("value-type", rng, docs, TYPE_SWAPS, None)


def _number_edge(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    number = lambda p, v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    return _set("number-edge", rng, docs, NUMBER_EDGES, number, _is_leaf)


def _huge_int(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    number = lambda p, v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    return _set(
        "huge-int", rng, docs, (HUGE_INT, Raw("-" + "1" * 5001), "9" * 5001), number, _is_leaf
    )


def _huge_quantity(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    return _set("huge-quantity", rng, docs, HUGE_QUANTITIES, _under(QUANTITY_PARENTS), _is_leaf)


def _string_attack(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    attack = rng.choice(STRING_ATTACKS)
    if fmt == "toml" and attack == "\ud800":
        attack = "\x1b[2J"  # TOML strings cannot hold a lone surrogate
    if rng.random() < 0.25:  # an attacking key: unknown-field messages quote it
        path = _pick_path(rng, docs, lambda p, v: isinstance(p[-1], str))
        return None if path is None else TreeStep("string-attack", "rename", path, f"k{attack}")
    path = _pick_path(rng, docs, _key_in(NAME_KEYS)) if rng.random() < 0.6 else None
    path = (
        path
        or _pick_path(rng, docs, lambda p, v: isinstance(v, str))
        or _pick_path(rng, docs, _is_leaf)
    )
    if path is None:
        return None
    old = get(docs, path)
    base = old if isinstance(old, str) else "v"
    return TreeStep(
        "string-attack", "set", path, rng.choice((attack, base + attack, attack + base))
    )


def _key(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    path = _pick_path(rng, docs, lambda p, v: isinstance(p[-1], str))
    if path is None:
        return None
    key: str = path[-1]
    choice = rng.randrange(4)
    if choice == 0:
        return TreeStep("key", "delete", path)
    if choice == 1 and len(key) > 1:
        i = rng.randrange(len(key) - 1)
        return TreeStep("key", "rename", path, key[:i] + key[i + 1] + key[i] + key[i + 2 :])
    if choice == 2:
        return TreeStep("key", "rename", path, key.lower() if key != key.lower() else key.upper())
    return ByteStep("key", "dup-line", rng.random())


def _nesting(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    path = _pick_path(rng, docs)
    depth = rng.choice((1000, 5000, 100_000))
    return None if path is None else TreeStep("nesting", "set", path, _nested(fmt, depth))


def _alias(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    path = _pick_path(rng, docs)
    if fmt != "yaml" or path is None:
        return None
    return TreeStep("alias", "set", path, rng.choice((ALIAS_BOMB, *RECURSIVE_ALIASES)))


def _encoding(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    choice = rng.randrange(4)
    if choice == 0:
        return ByteStep(
            "encoding",
            "insert",
            rng.random(),
            rng.choice((b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x80abc")),
        )
    if choice == 1:
        return ByteStep("encoding", "reencode", 0.0, rng.choice((b"latin-1", b"utf-16", b"cp1252")))
    if choice == 2:
        return ByteStep("encoding", "insert", 0.0, b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
    return ByteStep(
        "encoding", "insert", rng.random(), rng.choice((b"\x00", b"\x1b[2J", b"\x7f", b"\xc2\x85"))
    )


def _truncation(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    return ByteStep("truncation", "truncate", rng.random())


def _duplication(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    if fmt != "yaml" or not docs:
        return None
    return TreeStep(
        "duplication",
        "copy-doc",
        (rng.randrange(len(docs)),),
        rng.choice((1000, 2000)),
        rng.random() < 0.5,
    )


def _workload_size(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    return _set("workload-size", rng, docs, WORKLOAD_SIZES, _key_in(WORKLOAD_SIZE_KEYS))


def _duration_cron(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    return _set("duration-cron", rng, docs, DURATION_ATTACKS, _key_in(DURATION_KEYS))


def _file(rng: random.Random, docs: list[Any], fmt: Format) -> Step | None:
    op = rng.choice(("empty", "binary", "dev-zero", "long-name", "many-files", "deep-dir"))
    return FileStep("file", op, rng.choice((1, 4096, 1 << 20)), rng.randrange(1 << 30))


# (generator, weight): the weights favour structure over file-level blows, which are few.
GENERATORS: tuple[tuple[Callable[[random.Random, list[Any], Format], Step | None], int], ...] = (
    (_value_type, 10), (_number_edge, 8), (_huge_int, 3), (_huge_quantity, 5),
    (_string_attack, 10), (_key, 8), (_nesting, 2), (_alias, 2), (_encoding, 3),
    (_truncation, 3), (_duplication, 1), (_workload_size, 4), (_duration_cron, 5), (_file, 1),
)  # fmt: skip


def draw_steps(rng: random.Random, target: SeedFile, count: int) -> tuple[Step, ...]:
    """`count` steps for `target`, each drawn against the documents the previous ones left.
    File steps end the list (nothing applies after a file is replaced)."""
    docs = list(target.docs)
    steps: list[Step] = []
    funcs, weights = zip(*GENERATORS, strict=True)
    tries = 0
    while len(steps) < count and tries < 10 * count:
        tries += 1
        gen = rng.choices(funcs, weights)[0]
        step = gen(rng, docs, target.fmt)
        if step is None:
            continue
        steps.append(step)
        if isinstance(step, TreeStep):
            docs = step.apply(docs)
        if isinstance(step, FileStep):
            break
    return tuple(steps)


def apply_steps(target: SeedFile, steps: tuple[Step, ...]) -> tuple[list[Any], bytes]:
    """The target file's documents after the tree steps, and its bytes after the byte steps."""
    docs = list(target.docs)
    for s in steps:
        if isinstance(s, TreeStep):
            docs = s.apply(docs)
    raw = serialize(target.fmt, docs)
    for s in steps:
        if isinstance(s, ByteStep):
            raw = s.apply(raw)
    return docs, raw


# -- oracles --------------------------------------------------------------------------------------

POD_TEMPLATE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job")
# The kinds gpucap reads (the loader's own table); oracles apply to these only.
READ_KINDS = tuple(KINDS)
NAMESPACED = ("Pod", "ConfigMap", "PodDisruptionBudget", *POD_TEMPLATE_KINDS)


def pod_spec_path(doc: Any) -> tuple[Any, ...] | None:
    """Where a Pod's or workload's pod spec is, inside the document."""
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == "Pod":
        return ("spec",)
    if doc.get("kind") in POD_TEMPLATE_KINDS:
        return ("spec", "template", "spec")
    return None


@dataclass(frozen=True, slots=True)
class Oracle:
    """A change the API server (or the CRD, or the operator) would refuse: `make(doc)` returns
    the step paths and values relative to the document, or None when the document does not fit."""

    name: str
    why: str
    make: Callable[[Any], list[tuple[str, tuple[Any, ...], Any]] | None]
    kinds: tuple[str, ...] = field(default=())

    def steps(self, doc_index: int, doc: Any) -> tuple[TreeStep, ...] | None:
        if not isinstance(doc, dict) or doc.get("kind") not in (self.kinds or READ_KINDS):
            return None  # gpucap lists the kinds it does not read and ignores them (README)
        made = self.make(doc)
        if made is None:
            return None
        return tuple(TreeStep(f"oracle:{self.name}", op, (doc_index, *p), v) for op, p, v in made)


def _pod(
    edit: Callable[[Any, tuple[Any, ...]], list[tuple[str, tuple[Any, ...], Any]] | None],
) -> Callable[[Any], Any]:
    def make(doc: Any) -> Any:
        path = pod_spec_path(doc)
        if path is None:
            return None
        try:
            spec = get([doc], (0, *path))
        except (KeyError, IndexError, TypeError):
            return None
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("containers"), list)
            or not spec["containers"]
        ):
            return None
        return edit(spec, path)

    return make


def _name(value: str) -> Callable[[Any], Any]:
    return lambda doc: (
        [("set", ("metadata", "name"), value)]
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict)
        else None
    )


def _label(key: str, value: str) -> Callable[[Any], Any]:
    def make(doc: Any) -> Any:
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
            return None
        labels = dict(doc["metadata"].get("labels") or {})
        labels[key] = value
        return [("set", ("metadata", "labels"), labels)]

    return make


def _spec_field(path: tuple[Any, ...], value: Any) -> Callable[[Any], Any]:
    def make(doc: Any) -> Any:
        try:
            parent = get([doc], (0, *path[:-1]))
        except (KeyError, IndexError, TypeError):
            return None
        return [("set", path, value)] if isinstance(parent, dict) else None

    return make


def _container(key: str, value: Any) -> Callable[[Any], Any]:
    return _pod(lambda spec, p: [("set", (*p, "containers", 0, key), value)])


def _dup_container(spec: Any, p: tuple[Any, ...]) -> Any:
    return [
        ("set", (*p, "containers", len(spec["containers"])), copy.deepcopy(spec["containers"][0]))
    ]


def _pdb(body: dict[str, Any]) -> Callable[[Any], Any]:
    """A PodDisruptionBudget in place of the seed document (any document will do)."""
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, **body},
    }
    return lambda doc: [("set", (), pdb)]


def _configmap_key(key: str) -> Callable[[Any], Any]:
    """A ConfigMap data key the API server refuses (`IsConfigMapKey`)."""

    def make(doc: Any) -> Any:
        data = doc.get("data")
        if isinstance(data, dict):
            return [("set", ("data", key), "x")]
        return [("set", ("data",), {key: "x"})]

    return make


def _merged_label_key(doc: Any) -> Any:
    """A topology spread constraint whose matchLabelKeys repeat a key of its labelSelector that
    the pod has as a label: the API server's merge (1.33+) names the key twice, which it refuses."""
    path = pod_spec_path(doc)
    if path is None:
        return None
    labels_path = (
        ("metadata", "labels") if doc.get("kind") == "Pod" else (*path[:-1], "metadata", "labels")
    )
    try:
        labels = get([doc], (0, *labels_path))
    except (KeyError, IndexError, TypeError):
        labels = {}
    if not isinstance(labels, dict):
        return None
    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"oracle-key": "v"}},
        "matchLabelKeys": ["oracle-key"],
    }
    return [
        ("set", labels_path, {**labels, "oracle-key": "v"}),
        ("set", (*path, "topologySpreadConstraints"), [spread]),
    ]


REPLICATED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet")

ORACLES: tuple[Oracle, ...] = (
    Oracle("name-dots", "object names are DNS subdomains: '../x' is not", _name("../x")),
    Oracle("name-non-ascii", "object names are DNS subdomains: 'é' is not", _name("é")),
    Oracle("name-newline", "object names are DNS subdomains: a newline is not allowed", _name("a\nb")),
    Oracle("name-trailing-dot", "a DNS subdomain does not end with '.'", _name("gpu.")),
    Oracle("name-upper", "a DNS subdomain is lower case", _name("GPU")),
    Oracle("name-too-long", "a DNS subdomain is at most 253 characters", _name("a" * 254)),
    Oracle("namespace-bad", "namespaces are DNS labels", lambda d: [("set", ("metadata", "namespace"), "Bad_NS")] if isinstance(d, dict) and isinstance(d.get("metadata"), dict) else None, NAMESPACED),
    Oracle("label-key-bad", "label keys are qualified names: 'bad key!' is not", _label("bad key!", "v")),
    Oracle("label-key-prefix-bad", "a label key's prefix is a DNS subdomain", _label("Bad_Prefix/app", "v")),
    Oracle("label-value-bad", "label values start and end alphanumeric", _label("app", "-bad-")),
    Oracle("label-value-long", "label values are at most 63 characters", _label("app", "a" * 64)),
    Oracle("node-selector-key-bad", "nodeSelector keys are label keys", _pod(lambda s, p: [("set", (*p, "nodeSelector"), {"bad key": "x"})])),
    Oracle("template-label-bad", "template labels are labels", _spec_field(("spec", "template", "metadata", "labels"), {"a/b/c": "x"}), POD_TEMPLATE_KINDS),
    Oracle("container-port-70000", "containerPort is 1-65535", _container("ports", [{"containerPort": 70000}])),
    Oracle("container-port-0", "containerPort is 1-65535", _container("ports", [{"containerPort": 0}])),
    Oracle("container-name-bad", "container names are DNS labels", _container("name", "Web_1")),
    Oracle("container-name-duplicate", "container names are unique in a pod", _pod(_dup_container)),
    Oracle("restart-policy-sometimes", "restartPolicy is Always, OnFailure or Never", _pod(lambda s, p: [("set", (*p, "restartPolicy"), "Sometimes")])),
    Oracle("priority-int32", "priority is an int32", _pod(lambda s, p: [("set", (*p, "priority"), 2147483648)])),
    Oracle("grace-period-int64", "terminationGracePeriodSeconds is an int64", _pod(lambda s, p: [("set", (*p, "terminationGracePeriodSeconds"), 9223372036854775808)])),
    Oracle("max-skew-zero", "topologySpreadConstraints maxSkew is at least 1", _pod(lambda s, p: [("set", (*p, "topologySpreadConstraints"), [{"maxSkew": 0, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}])])),
    Oracle("bad-quantity", "'12Gx' is not a quantity", _container("resources", {"requests": {"cpu": "12Gx"}})),
    Oracle("unknown-field", "strict field validation refuses unknown fields", _pod(lambda s, p: [("set", (*p, "restartPolcy"), "Always")])),
    Oracle("replicas-int32", "replicas is an int32", _spec_field(("spec", "replicas"), 2147483648), ("Deployment", "StatefulSet", "ReplicaSet")),
    Oracle("replicas-negative", "replicas is at least 0", _spec_field(("spec", "replicas"), -1), ("Deployment", "StatefulSet", "ReplicaSet")),
    Oracle("nodepool-bad-duration", "consolidateAfter is a duration or 'Never'", _spec_field(("spec", "disruption", "consolidateAfter"), "5 minutes"), ("NodePool",)),
    Oracle("nodepool-bad-expire", "expireAfter is a duration or 'Never'", _spec_field(("spec", "template", "spec", "expireAfter"), "720hours"), ("NodePool",)),
    Oracle("nodepool-weight-101", "NodePool weight is 1-100", _spec_field(("spec", "weight"), 101), ("NodePool",)),
    Oracle("nodepool-unknown-field", "the NodePool CRD is structural", _spec_field(("spec", "template", "spec", "taint"), []), ("NodePool",)),
    Oracle("nodepool-bad-limit", "limits are quantities", _spec_field(("spec", "limits"), {"cpu": "lots"}), ("NodePool",)),
    Oracle("ec2nodeclass-max-pods", "kubelet maxPods is at least 0", _spec_field(("spec", "kubelet"), {"maxPods": -1}), ("EC2NodeClass",)),
    Oracle("ec2nodeclass-hop-limit", "httpPutResponseHopLimit is 1-64", _spec_field(("spec", "metadataOptions"), {"httpPutResponseHopLimit": 65}), ("EC2NodeClass",)),
    Oracle("device-plugin-config-yaml", "the GPU Operator refuses a device-plugin config that is not YAML", lambda d: [("set", ("data", next(iter(d["data"]))), "version: v1\nsharing: [")] if isinstance(d, dict) and isinstance(d.get("data"), dict) and d["data"] else None, ("ConfigMap",)),
    Oracle("pdb-both", "a PDB has minAvailable or maxUnavailable, not both", _pdb({"minAvailable": 1, "maxUnavailable": 1})),
    Oracle("pdb-over-100", "a PDB percentage is at most 100%", _pdb({"minAvailable": "150%"})),
    Oracle("scenario-duration-1e39", "a Go duration fits in an int64 of nanoseconds", _spec_field(("spec", "duration"), "1000000000000000000000000000000000000000s"), ("Scenario",)),
    # issue 20: what the API server refuses and validate used to accept
    Oracle("karpenter-kind-typo", "the karpenter.sh group has no kind Nodepool", lambda d: [("set", ("kind",), "Nodepool")], ("NodePool",)),
    Oracle("init-restart-policy-lowercase", "an init container restarts 'Always' or not at all", _pod(lambda s, p: [("set", (*p, "initContainers"), [{"name": "oracle-init", "image": "busybox", "restartPolicy": "always"}])])),
    Oracle("priority-class-bad", "a priorityClassName is a DNS subdomain", _pod(lambda s, p: [("set", (*p, "priorityClassName"), "High_Priority")])),
    Oracle("volume-mount-missing", "a volume mount names a volume of the pod", _container("volumeMounts", [{"name": "no-such-volume", "mountPath": "/oracle"}])),
    Oracle("volume-duplicate", "two volumes of a pod have two names", _pod(lambda s, p: [("set", (*p, "volumes"), [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}])])),
    Oracle("mount-path-duplicate", "a container mounts at a path once", _pod(lambda s, p: [("set", (*p, "volumes"), [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}]), ("set", (*p, "containers", 0, "volumeMounts"), [{"name": "a", "mountPath": "/d"}, {"name": "b", "mountPath": "/d"}])])),
    Oracle("env-empty-name", "an environment variable has a name", _container("env", [{"name": "", "value": "1"}])),
    Oracle("configmap-key-space", "a ConfigMap key has no space", _configmap_key("a b"), ("ConfigMap",)),
    Oracle("configmap-key-dotdot", "a ConfigMap key does not start with '..'", _configmap_key("..x"), ("ConfigMap",)),
    Oracle("deployment-surge-zero", "maxSurge and maxUnavailable are not both 0", _spec_field(("spec", "strategy"), {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}), ("Deployment",)),
    Oracle("deployment-recreate-rolling", "a Recreate strategy has no rollingUpdate", _spec_field(("spec", "strategy"), {"type": "Recreate", "rollingUpdate": {}}), ("Deployment",)),
    Oracle("template-restart-never", "a controller's pods restart Always", _spec_field(("spec", "template", "spec", "restartPolicy"), "Never"), REPLICATED_KINDS),
    Oracle("template-deadline", "a controller's pods have no activeDeadlineSeconds", _spec_field(("spec", "template", "spec", "activeDeadlineSeconds"), 60), REPLICATED_KINDS),
    Oracle("image-whitespace", "a pod's image has no surrounding whitespace", _container("image", " busybox")),
    Oracle("match-label-keys-merged", "a matchLabelKeys key is not in the merged selector twice", _merged_label_key),
)  # fmt: skip
