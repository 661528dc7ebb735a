"""`${VAR}` / `$VAR` placeholders in manifests: finding them, telling them from the variables a
program reads at run time, filling them (what envsubst does, with gpucap's refusals), and
recognising a Terraform template, which only Terraform can fill.

Four questions, four parts:

- *What is a reference?* `${NAME}` and `$NAME`, as envsubst reads them, except that `$$` is one
  token and never starts a reference: `$${DEV}` and `$$DEV` are left as written. That is how
  bash (`$$` is the PID), Kubernetes (`$$(VAR)` escapes `$(VAR)`), Terraform (`$${` escapes
  `${`) and docker compose lex `$$`; envsubst alone reads `$${DEV}` as `$` + `${DEV}`.
  Kubernetes' own `$(VAR)` and shell forms such as `${#A[@]}` or `${X:-d}` are not references.
- *Is it a placeholder?* Not in a **runtime field**, whose text a program expands when it runs:
  an EC2NodeClass `spec.userData` (the node's boot script), a container's `command`, `args`
  and exec-probe/lifecycle `command` (a shell may run them), a ConfigMap entry that is a script
  (`run.sh`, `job.py`, or text starting `#!`), a RayService `serveConfigV2` and a RayJob
  `runtimeEnvYAML` (Ray expands `$VAR` in `runtime_env.env_vars` when the worker starts). A
  container's `env[].value` is *not* one: the kubelet expands only `$(VAR)` there and no shell
  ever reads it, so a `$VAR` in it reaches the program as those characters unless a template
  step fills it. A name that also appears outside runtime fields is a placeholder everywhere.
  `${NAME}` is a placeholder in any other field; a bare `$NAME` only where no literal `$` can
  be meant (`bare_is_placeholder`: Karpenter's kinds, a container's `image` and `env[].value`).
- *What does render do?* `render` fills template variables from `values`, leaves runtime
  variables as written (and names them), and reports every placeholder without a value,
  rather than writing an empty string as envsubst does (`alias: al2023@` resolves no AMI). With
  `only`, exactly the named variables are filled and every other byte is kept, like envsubst's
  SHELL-FORMAT argument.
- *Is it a Terraform template?* `terraform_expression` finds the first `${a.b}`, `${f(x)}`,
  `${a ? b : c}` or `%{ for/if }` in a field gpucap judges: text only Terraform's
  `templatefile` can render, so gpucap reads no manifest from it.

Called by the loader (`apis/serde.py`: `placeholders`, `is_runtime_field`,
`bare_is_placeholder`, `terraform_expression`, the grouped warning texts), `gpucap render`
(`render`, `terraform_expression`) and `gpucap demo` and tests (`substitute`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import yaml

from gpucap.apis.limits import MAX_FILE_BYTES
from gpucap.apis.yamltext import Loader

__all__ = [
    "PLACEHOLDER",
    "Occurrence",
    "Reference",
    "RenderResult",
    "Substitution",
    "TerraformExpression",
    "Use",
    "bare_is_placeholder",
    "fill_hint",
    "group_message",
    "is_runtime_field",
    "parse_only",
    "pin_alias",
    "placeholders",
    "references",
    "render",
    "scan",
    "substitute",
    "terraform_expression",
    "terraform_template",
]

# `$$` comes first so that it is consumed as one token and never opens a reference.
PLACEHOLDER = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")

FieldPath = tuple[str | int, ...]

_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_RUNTIME_DOCUMENT_FIELDS = {
    "EC2NodeClass": frozenset({("spec", "userData")}),
    "RayService": frozenset({("spec", "serveConfigV2")}),
    "RayJob": frozenset({("spec", "runtimeEnvYAML")}),
}
# Kinds whose fields never hold a literal `$NAME` (IAM role names, tag values, label values and
# AMI aliases cannot contain `$`), so an unbraced `$NAME` there is a placeholder too. In core
# kinds only `${NAME}` is, outside the fields below: a `$` in an annotation or ConfigMap data
# may be meant.
_UNBRACED_PLACEHOLDER_KINDS = frozenset({"NodePool", "NodeClaim", "EC2NodeClass", "NodeOverlay"})
# The file names of programs whose own syntax uses `$NAME` or `${...}` (shell variables, Perl and
# PHP variables, JavaScript and Groovy interpolation, Python's literal `$` before an f-string
# `{...}`): a ConfigMap entry named so is the program's text, not a template's.
_SCRIPT_SUFFIXES = (
    ".sh",
    ".bash",
    ".zsh",
    ".ksh",
    ".py",
    ".pl",
    ".rb",
    ".php",
    ".js",
    ".mjs",
    ".ts",
    ".ps1",
    ".groovy",
)


@dataclass(frozen=True, slots=True)
class Reference:
    """One `${NAME}` or `$NAME` at `text[start:end]`."""

    name: str
    start: int
    end: int
    braced: bool


def references(text: str) -> list[Reference]:
    """Every variable reference in `text`, in order (`$$` escapes skipped)."""
    out = []
    for m in PLACEHOLDER.finditer(text):
        if m.group(1):
            out.append(Reference(m.group(1), m.start(), m.end(), True))
        elif m.group(2):
            out.append(Reference(m.group(2), m.start(), m.end(), False))
    return out


def placeholders(text: str, *, braced_only: bool = False) -> list[str]:
    """Variable names referenced in `text`, in order of first appearance."""
    seen: dict[str, None] = {}
    for ref in references(text):
        if ref.braced or not braced_only:
            seen.setdefault(ref.name, None)
    return list(seen)


def _container_field(path: FieldPath) -> FieldPath | None:
    """The part of `path` inside its innermost container (`...containers[i]`), or None when
    `path` is not inside a container."""
    for i in range(len(path) - 2, -1, -1):
        if path[i] in _CONTAINER_LISTS and isinstance(path[i + 1], int):
            return path[i + 2 :]
    return None


def is_script(key: str, text: str | None = None) -> bool:
    """Whether a ConfigMap entry named `key` holding `text` is a program: named like one
    (`run.sh`, `process.py`) or starting with a `#!` line."""
    return key.lower().endswith(_SCRIPT_SUFFIXES) or (text is not None and text.startswith("#!"))


def is_runtime_field(kind: str | None, path: FieldPath, value: str | None = None) -> bool:
    """Whether the string `value` at `path` of a `kind` object is text a program expands at run
    time (boot script, container command/args, a ConfigMap script, Ray runtime config), not a
    manifest template."""
    if kind is not None and tuple(path) in _RUNTIME_DOCUMENT_FIELDS.get(kind, ()):
        return True
    if kind == "ConfigMap" and len(path) == 2 and path[0] == "data" and isinstance(path[1], str):
        return is_script(path[1], value)
    rest = _container_field(path)
    if rest is None:
        return False
    if len(rest) == 2 and rest[0] in ("command", "args"):
        return True
    # exec probes and lifecycle hooks: livenessProbe.exec.command[k], ...
    return len(rest) >= 3 and rest[-3] == "exec" and rest[-2] == "command"


def bare_is_placeholder(kind: str | None, path: FieldPath) -> bool:
    """Whether a bare `$NAME` at `path` of a `kind` object is a placeholder, as `${NAME}` is
    everywhere outside runtime fields: in Karpenter's kinds, and in a container's `image` (no
    image reference holds a `$`) and `env[].value` (the kubelet passes `$NAME` there as
    written; only `$(NAME)` names another variable)."""
    if kind in _UNBRACED_PLACEHOLDER_KINDS:
        return True
    rest = _container_field(path)
    return rest is not None and (
        rest == ("image",) or (len(rest) == 3 and rest[0] == "env" and rest[2] == "value")
    )


# ---- envsubst-like substitution (no field awareness) -----------------------------------------
@dataclass(frozen=True, slots=True)
class Substitution:
    text: str
    missing: tuple[str, ...]  # sorted, each once


def substitute(text: str, values: Mapping[str, str]) -> Substitution:
    """Replace `${VAR}` and `$VAR` with `values[VAR]`; unknown names are kept and reported.
    `$$` is kept as written. For text known to hold no runtime variables (the workshop)."""
    missing: set[str] = set()
    parts: list[str] = []
    last = 0
    for ref in references(text):
        if ref.name in values:
            parts.append(text[last : ref.start])
            parts.append(values[ref.name])
            last = ref.end
        else:
            missing.add(ref.name)
    parts.append(text[last:])
    return Substitution("".join(parts), tuple(sorted(missing)))


# ---- where a reference sits in a YAML text ---------------------------------------------------
Where = Literal["field", "runtime", "comment"]


@dataclass(frozen=True, slots=True)
class Use:
    """A reference and where it sits: in a field value or key, in a runtime field, or outside
    every scalar (a comment)."""

    ref: Reference
    where: Where


# What a scalar of a manifest is: a runtime field, free text gpucap does not read (a ConfigMap
# entry that is not a script: a config file, a dashboard), or any other field.
_Category = Literal["runtime", "data", "field"]


def _category(kind: str | None, path: FieldPath, value: str) -> _Category:
    if is_runtime_field(kind, path, value):
        return "runtime"
    if kind == "ConfigMap" and len(path) == 2 and path[0] in ("data", "binaryData"):
        return "data"
    return "field"


def _spans(text: str) -> list[tuple[int, int, _Category]] | None:
    """(start, end, category) of every scalar in `text`, by character offset; None when the
    text is not YAML (a Helm template, say)."""
    spans: list[tuple[int, int, _Category]] = []
    seen: set[int] = set()  # an alias is the node it names (and may name its own ancestor)

    def walk(node: yaml.Node, kind: str | None, path: FieldPath) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                spans.append((key.start_mark.index, key.end_mark.index, "field"))
                name = key.value if isinstance(key, yaml.ScalarNode) else ""
                walk(value, kind, (*path, name))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, kind, (*path, i))
        else:
            start, end = node.start_mark.index, node.end_mark.index
            spans.append((start, end, _category(kind, path, str(node.value))))

    def kind_of(node: yaml.Node) -> str | None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if getattr(key, "value", None) == "kind" and isinstance(value, yaml.ScalarNode):
                    return str(value.value)
        return None

    def walk_list_items(node: yaml.SequenceNode) -> None:
        for item in node.value:
            walk(item, kind_of(item), ())

    def walk_document(root: yaml.Node) -> None:
        # Node ids are only unique while the document's nodes are alive (aliases never cross
        # documents): a freed document's ids are reused by the next one.
        seen.clear()
        kind = kind_of(root)
        if kind == "List" and isinstance(root, yaml.MappingNode):
            for key, value in root.value:
                spans.append((key.start_mark.index, key.end_mark.index, "field"))
                if getattr(key, "value", None) == "items" and isinstance(value, yaml.SequenceNode):
                    walk_list_items(value)
                else:
                    walk(value, kind, (key.value,))
            return
        walk(root, kind, ())

    try:
        # libyaml when present (as the loader, `yamltext.Loader`): the same nodes and marks
        # (character offsets), ~10x faster than PyYAML's own scanner on a large file.
        for root in yaml.compose_all(text, Loader=Loader):
            if root is not None:
                walk_document(root)
    except (yaml.YAMLError, RecursionError):
        # Not YAML, or nested past what the composer can walk: no field is known to be a
        # runtime one (render then treats every reference as a field, as for any other text).
        return None
    spans.sort()
    return spans


def scan(text: str) -> list[Use]:
    """Every reference in `text` with where it sits. Text that is not YAML is all `field`: no
    field can be shown to be a runtime one, so nothing is left unfilled by guess."""
    refs = references(text)
    if not refs:
        return []
    spans = _spans(text)
    if spans is None:
        return [Use(r, "field") for r in refs]
    return [
        Use(r, "comment" if c is None else "runtime" if c == "runtime" else "field")
        for r, c in zip(refs, _locate([r.start for r in refs], spans), strict=True)
    ]


def _locate(
    offsets: Sequence[int], spans: Sequence[tuple[int, int, _Category]]
) -> list[_Category | None]:
    """The category of the scalar holding each of the sorted `offsets`; None outside every
    scalar (a comment, or YAML syntax)."""
    out: list[_Category | None] = []
    j = 0
    for at in offsets:  # both lists are sorted by offset
        while j < len(spans) and spans[j][1] <= at:
            j += 1
        # scalars do not overlap: the first one ending after `at` holds it, if any does
        out.append(spans[j][2] if j < len(spans) and spans[j][0] <= at else None)
    return out


# ---- Terraform templates ---------------------------------------------------------------------
# What only Terraform's template language writes: an interpolation that is more than a name
# (`${var.cluster_name}`, `${indent(2, x)}`, `${enabled ? "a" : "b"}`, `${~ x}`) and the
# `%{ for }` / `%{ if }` directives. None of them is a shell form (bash has no `${a.b}` or
# `${f(x)}`; its `${X?msg}` has no space before the `?`), and `$${`/`%%{` are Terraform's own
# escapes, skipped as tokens like `$$` above.
_TERRAFORM = re.compile(
    r"\$\$|%%"
    r"|(\$\{~?\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_]|\s*\(|\s+\?)"
    r"|\$\{~"
    r"|%\{~?\s*(?:for|if|else|endfor|endif)\b)"
)


@dataclass(frozen=True, slots=True)
class TerraformExpression:
    """The first Terraform-only construct of a text: its line (1-based) and that line, trimmed."""

    line: int
    text: str


def terraform_expression(text: str) -> TerraformExpression | None:
    """The first Terraform interpolation or directive of `text` that sits where gpucap reads a
    manifest field, or None. One in a runtime field (a script may be JavaScript or Python, whose
    `${a.b}` is its own), in ConfigMap data (a config file, a dashboard) or in a comment does
    not make the file a template; in text that is not YAML every one counts."""
    found = [m.start(1) for m in _TERRAFORM.finditer(text) if m.group(1)]
    if not found:
        return None
    spans = _spans(text)
    if spans is not None:
        found = [at for at, c in zip(found, _locate(found, spans), strict=True) if c == "field"]
    if not found:
        return None
    at = found[0]
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start : end if end >= 0 else len(text)].strip()
    return TerraformExpression(text.count("\n", 0, at) + 1, line)


def terraform_template(text: str, file: str) -> str | None:
    """The one-line error for a Terraform template (`${indent(2, x)}`, `%{ for }` in a field),
    or None. Its manifests exist only once Terraform renders it: gpucap reads nothing from it
    rather than judging text that is half template (a cascade of errors about `${...}`).
    Called by the loader (`apis/serde.load_text`) and `gpucap render`."""
    if len(text) > MAX_FILE_BYTES or not ("${" in text or "%{" in text):
        return None  # the loader refuses a file over the limit, with its own line
    found = terraform_expression(text)
    if found is None:
        return None
    return (
        f"{file}: line {found.line}: a Terraform template ({found.text}): render it with "
        "Terraform first (templatefile), then check the output"
    )


# ---- render ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RenderResult:
    """What `render` made of each text: the output, the variables it needed and had no value
    for (per text, sorted), and the runtime variables it left as written (over all texts)."""

    texts: tuple[str, ...]
    missing: tuple[tuple[str, ...], ...]
    left: tuple[str, ...]


def render(
    texts: Sequence[str],
    values: Mapping[str, str],
    *,
    only: Collection[str] | None = None,
    explicit: Collection[str] = (),
) -> RenderResult:
    """Fill the texts' placeholders as `gpucap render` does.

    `explicit` are the names the user gave a value on the command line (`--set`, `--pin-ami`):
    always filled, wherever they appear. With `only`, the names in `only` and `explicit` are
    filled and nothing else is touched. Without it, a name used in a field outside the runtime
    fields (in any of the texts: they are applied together) is a placeholder and filled
    everywhere; a name used only in runtime fields (and comments) is left as written, even when
    the environment has it, since `$HOME` or `$LD_LIBRARY_PATH` there mean the node's or the
    container's, never the user's. A placeholder without a value is kept and reported in
    `missing`; a comment never makes a placeholder missing.
    """
    scans = [scan(t) for t in texts]
    if only is not None:
        wanted = set(only) | set(explicit)
        left: set[str] = set()
    else:
        wanted = {u.ref.name for s in scans for u in s if u.where == "field"} | set(explicit)
        left = {u.ref.name for s in scans for u in s if u.where == "runtime"} - wanted
    outputs: list[str] = []
    missing_per_text: list[tuple[str, ...]] = []
    for text, uses in zip(texts, scans, strict=True):
        parts: list[str] = []
        missing: set[str] = set()
        last = 0
        for u in uses:
            name = u.ref.name
            if name not in wanted:
                continue
            if name not in values:
                if u.where != "comment":
                    missing.add(name)
                continue
            parts.append(text[last : u.ref.start])
            parts.append(values[name])
            last = u.ref.end
        parts.append(text[last:])
        outputs.append("".join(parts))
        missing_per_text.append(tuple(sorted(missing)))
    return RenderResult(tuple(outputs), tuple(missing_per_text), tuple(sorted(left)))


# ---- the loader's grouped warning ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Occurrence:
    """One field holding a placeholder, as the loader saw it."""

    file: str
    where: str  # `file[0]` or `file[0].items[2]`
    object_ref: str
    path: str  # the field, as text


_SHOWN_OBJECTS = 3
_SHOWN_FIELDS = 2


def group_message(name: str, occurrences: Sequence[Occurrence]) -> str:
    """One line for every field where `${name}` is left unfilled: how many fields in how many
    objects, the first objects (document index; file too when not the first file) and the
    first object's fields."""
    first_file = occurrences[0].file
    objects: dict[tuple[str, str], list[str]] = {}
    for o in occurrences:
        fields = objects.setdefault((o.where, o.object_ref), [])
        if o.path not in fields:
            fields.append(o.path)
    shown = []
    for i, ((where, ref), fields) in enumerate(objects.items()):
        if i == _SHOWN_OBJECTS:
            break
        at = where[len(first_file) :] if where.startswith(first_file + "[") else where
        text = f"{at} {ref}"
        if i == 0:
            more = len(fields) - _SHOWN_FIELDS
            text += " " + ", ".join(fields[:_SHOWN_FIELDS]) + (f" (+{more})" if more > 0 else "")
        shown.append(text)
    rest = len(objects) - len(shown)
    listing = "; ".join(shown) + (f"; and {rest} more object{'s' * (rest != 1)}" if rest else "")
    n, m = len(occurrences), len(objects)
    if n == 1:
        return f"${{{name}}} is not filled: {listing}"
    files = len({o.file for o in occurrences})
    count = f"{n} fields" + (f" of {m} objects" if m > 1 else "")
    count += f" in {files} files" if files > 1 else ""
    return f"${{{name}}} is not filled in {count}: {listing}"


def fill_hint(files: Iterable[str], names: Sequence[str]) -> str:
    """The `gpucap render` command that fills `names` in `files` (stdin shown as `-`)."""
    paths = " ".join("-" if f == "<stdin>" else shlex.quote(f) for f in dict.fromkeys(files))
    sets = " ".join(f"--set {n}=..." for n in names)
    what = "it" if len(names) == 1 else f"these {len(names)} placeholders"
    return f"fill {what} before applying: gpucap render {paths} {sets}"


_ONLY_ITEM = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$?([A-Za-z_][A-Za-z0-9_]*)")


def parse_only(items: Iterable[str]) -> list[str]:
    """The names of `--only` values: `VAR,VAR`, repeated, or envsubst's SHELL-FORMAT
    (`'$VAR ${VAR}'`). Raises ValueError naming the first item that is not a variable."""
    names: list[str] = []
    for item in items:
        for token in re.split(r"[,\s]+", item.strip()):
            if not token:
                continue
            m = _ONLY_ITEM.fullmatch(token)
            if m is None:
                raise ValueError(token)
            names.append(m.group(1) or m.group(2))
    if not names:
        raise ValueError("")
    return list(dict.fromkeys(names))


# An `amiSelectorTerms` alias that follows AWS's newest release: `al2023@latest`, quoted or not.
_LATEST_ALIAS = re.compile(r"(alias:\s*[\"']?[a-z0-9]+@)latest\b")


def pin_alias(text: str, release: str) -> str:
    """`text` with every `alias: <family>@latest` pinned to `<family>@<release>`. `@latest`
    rolls the whole fleet on AWS's schedule; a pinned release rolls when the file changes.
    Called by `gpucap render --pin-ami` (`cli/render_cmd.py`) on each rendered file."""
    return _LATEST_ALIAS.sub(rf"\g<1>{release}", text)
