"""Build gpucap's bundled Kubernetes API schema from the published OpenAPI document.

Reads the Kubernetes OpenAPI (Swagger 2.0) document `swagger.json` as the official Python
client vendors it unprocessed (`kubernetes-client/python`, `kubernetes/swagger.json.unprocessed`,
generated from kubernetes/kubernetes `api/openapi-spec/swagger.json` of the release branch named
in the client's `scripts/constants.py`), and writes `src/gpucap/data/kubernetes/schema.json`,
which `gpucap.apis.schema` loads to check every field of the core kinds gpucap reads (the
field names and JSON types the API server's strict decoding accepts).

`--source` is the document itself or a git directory of kubernetes-client/python (a clone or a
mirror; the file is read at `--commit`). Its SHA-256 must be the pinned `SHA256`: the provenance
written into the output is the pinned one, so a different document needs new pins, not a
silent rebuild. Default source: `../shared/data/kubernetes/swagger.json.unprocessed`.
`--check` exits 1 when the committed file is stale (for CI).

What is kept: the kinds gpucap reads (`KINDS`, by their `x-kubernetes-group-version-kind`) and
every definition reachable from them, each as `{field: type}`. A type is a string:

- `string`, `boolean`, `number`, `int32`, `int64`: JSON scalars (integer formats kept: the
  decoder rejects an int32 field's value outside int32);
- `int-or-string` (`intstr.IntOrString`), `quantity` (`resource.Quantity`, a string or a
  number), `time` (`meta/v1.Time`, an RFC 3339 string), `any` (`meta/v1.FieldsV1`, kept raw);
- the short name of another definition (`core.v1.PodSpec`: `io.k8s.api.` and
  `io.k8s.apimachinery.pkg.apis.` dropped);
- `[]T` a list of T, `{}T` a map from string to T.

- `enum:A|B|C` (or `[]enum:A|B|C`): a string field whose Go type is marked `+enum`, and the
  values its constants declare. The OpenAPI v2 document carries no `enum` (nor, in the client's
  copy, the "Possible enum values" text openapi-gen derives from the same markers), so the
  values are read from the Go types themselves: kubernetes/api (`ENUM_REPOSITORY`) at the tag of
  the same release (`ENUM_COMMIT`), the source openapi-gen reads. A struct field's Go type is
  matched to the OpenAPI definition of the same name (`core.v1.PodSpec.restartPolicy` has type
  `RestartPolicy`, an `+enum` with the constants Always, OnFailure, Never).

Dropped: descriptions, defaults, `required` (the API server's validation, not its decoding,
enforces those; gpucap's models check the ones it needs), patch and list-merge extensions.

Output: a header (format, provenance, kinds), then one definition per line in name order, keys
sorted: a rebuild from the same input is byte-identical.

Usage: `.venv/bin/python scripts/build_kubernetes_schema.py [--source PATH] [--commit SHA]
[--enum-source GITDIR] [--out DIR] [--check]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "kubernetes" / "swagger.json.unprocessed"
DEFAULT_OUT = ROOT / "src" / "gpucap" / "data" / "kubernetes"
OUTPUT_NAME = "schema.json"
FORMAT = "gpucap.dev/kubernetes-schema/v1"

# The pinned source: kubernetes-client/python at this commit vendors the release-1.36 document.
REPOSITORY = "kubernetes-client/python"
SOURCE_PATH = "kubernetes/swagger.json.unprocessed"
COMMIT = "024658493d124f046fc0a9827a2a3165cf2aee28"
SHA256 = "c316f6e232c666148076e82e20371ff656ffbb12e59d8953e6d94ec7685bc75c"
KUBERNETES = "1.36"
UPSTREAM = "kubernetes/kubernetes api/openapi-spec/swagger.json, branch release-1.36"

# The pinned source of enum values: kubernetes/api at tag v0.36.3 (Kubernetes 1.36), the Go
# types the OpenAPI document is generated from. A git directory (clone or mirror).
ENUM_REPOSITORY = "kubernetes/api"
ENUM_COMMIT = "3fde3c43c3cf3447606b9c2ac2c6257095444387"
ENUM_TAG = "v0.36.3"
DEFAULT_ENUM_SOURCE = ROOT.parent / "shared" / "data" / "kubernetes+api"
# Go package folder -> definition prefix (`core.v1.PodSpec`).
ENUM_PACKAGES = {"core/v1": "core.v1", "apps/v1": "apps.v1", "batch/v1": "batch.v1"}
ENUM_PACKAGES["policy/v1"] = "policy.v1"

# (apiVersion, kind) gpucap reads from the core API (apis/serde.py KINDS).
KINDS = (
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "ConfigMap"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("policy/v1", "PodDisruptionBudget"),
)

# Definitions that are scalars on the wire, by their full name.
SCALAR_DEFINITIONS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "any",
}
PREFIXES = ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis.")


def read_source(source: Path, commit: str) -> bytes:
    """The document's bytes: the file itself, or `SOURCE_PATH` at `commit` in a git directory."""
    if source.is_file():
        return source.read_bytes()
    if source.is_dir():
        done = subprocess.run(
            ["git", "--git-dir", str(source), "show", f"{commit}:{SOURCE_PATH}"],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return done.stdout
        git_dir = source / ".git"
        if git_dir.exists():
            return read_source(git_dir, commit)
        raise SystemExit(f"{source}: cannot read {SOURCE_PATH} at {commit}: {done.stderr!r}")
    raise SystemExit(f"{source}: no such file or git directory")


_ENUM_TYPE = re.compile(r"^// \+enum\n(?:^//.*\n)*^type (\w+) string$", re.M)
_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_STRUCT_FIELD = re.compile(r'^\t\w+\s+(\[\])?\*?(?:(\w+)\.)?(\w+)\s+`json:"(\w+)[,"]', re.M)


def extract_enums(packages: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """{definition: {field: sorted values}} from Go source: `packages` maps a definition prefix
    (`core.v1`) to the concatenated text of that package's files. A type is an enum when a
    `// +enum` comment block ends on `type T string`; its values are every `Name T = "value"`
    constant of the package. A field has an enum when its Go type (`T`, `*T`, `[]T`, or `v1.T`
    from core/v1 in another package) is one."""
    enums: dict[tuple[str, str], list[str]] = {}
    for prefix, text in packages.items():
        for name in _ENUM_TYPE.findall(text):
            values = re.findall(rf'^\s*\w+\s+{name}\s*=\s*"([^"]*)"', text, re.M)
            if not values:
                raise SystemExit(f"{prefix}.{name}: an +enum type without constants")
            if any("|" in v for v in values):
                raise SystemExit(f"{prefix}.{name}: an enum value contains '|'")
            enums[(prefix, name)] = sorted(set(values))
    out: dict[str, dict[str, list[str]]] = {}
    for prefix, text in packages.items():
        for struct, body in _STRUCT.findall(text):
            for _, qualifier, type_name, json_name in _STRUCT_FIELD.findall(body):
                package = prefix if not qualifier else "core.v1" if qualifier == "v1" else ""
                values = enums.get((package, type_name))
                if values is not None:
                    out.setdefault(f"{prefix}.{struct}", {})[json_name] = values
    return out


def read_enum_packages(source: Path, commit: str) -> dict[str, str]:
    """The Go files (no tests, no generated code) of `ENUM_PACKAGES` at `commit` in the git
    directory `source`, one text per package."""
    git_dir = source / ".git" if (source / ".git").exists() else source

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"{source}: git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    packages: dict[str, str] = {}
    for folder, prefix in ENUM_PACKAGES.items():
        names = git("ls-tree", "--name-only", f"{commit}:{folder}").split()
        wanted = [
            n
            for n in names
            if n.endswith(".go")
            and not n.endswith("_test.go")
            and not n.startswith(("zz_", "generated"))
        ]
        packages[prefix] = "\n".join(git("show", f"{commit}:{folder}/{n}") for n in sorted(wanted))
    return packages


def apply_enums(types: dict[str, dict[str, str]], enums: dict[str, dict[str, list[str]]]) -> None:
    """Turn each `string` (or `[]string`) field with enum values into `enum:...` (`[]enum:...`)."""
    for name, fields in types.items():
        for field, values in enums.get(name, {}).items():
            if fields.get(field) in ("string", "[]string"):
                list_prefix = "[]" if fields[field].startswith("[]") else ""
                fields[field] = f"{list_prefix}enum:{'|'.join(values)}"


def short_name(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def type_of(prop: dict[str, Any], where: str) -> tuple[str, str | None]:
    """(type string, full name of a referenced definition or None) for one property schema."""
    if "$ref" in prop or "allOf" in prop:
        ref = prop["$ref"] if "$ref" in prop else prop["allOf"][0]["$ref"]
        name = ref.rsplit("/", 1)[-1]
        if name in SCALAR_DEFINITIONS:
            return SCALAR_DEFINITIONS[name], None
        return short_name(name), name
    kind = prop.get("type")
    if prop.get("x-kubernetes-preserve-unknown-fields") or prop.get("x-kubernetes-int-or-string"):
        return ("int-or-string" if prop.get("x-kubernetes-int-or-string") else "any"), None
    if kind == "array":
        inner, ref = type_of(prop["items"], where)
        return "[]" + inner, ref
    if kind == "object":
        if "additionalProperties" not in prop:
            return "any", None
        inner, ref = type_of(prop["additionalProperties"], where)
        return "{}" + inner, ref
    if kind == "integer":
        return ("int32" if prop.get("format") == "int32" else "int64"), None
    if kind == "string":
        if prop.get("format") == "int-or-string":
            return "int-or-string", None
        return "string", None
    if kind in ("boolean", "number"):
        return kind, None
    raise SystemExit(f"{where}: unsupported property schema {sorted(prop)} type={kind!r}")


def extract(definitions: dict[str, Any]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(`apiVersion/kind` -> root type name, type name -> {field: type}) for `KINDS` and every
    definition reachable from them."""
    roots: dict[str, str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            group, version = gvk["group"], gvk["version"]
            api_version = f"{group}/{version}" if group else version
            if (api_version, gvk["kind"]) in KINDS:
                roots[f"{api_version}/{gvk['kind']}"] = name
    missing = [f"{a}/{k}" for a, k in KINDS if f"{a}/{k}" not in roots]
    if missing:
        raise SystemExit(f"kinds not in the document: {missing}")

    types: dict[str, dict[str, str]] = {}
    stack = sorted(roots.values())
    while stack:
        name = stack.pop()
        short = short_name(name)
        if short in types:
            continue
        schema = definitions[name]
        if "properties" not in schema:
            raise SystemExit(f"{name}: a definition without properties is not a known scalar")
        fields: dict[str, str] = {}
        for field, prop in schema["properties"].items():
            fields[field], ref = type_of(prop, f"{name}.{field}")
            if ref is not None:
                stack.append(ref)
        types[short] = fields
    return {key: short_name(roots[key]) for key in sorted(roots)}, types


def build(
    source: Path,
    commit: str = COMMIT,
    enum_source: Path = DEFAULT_ENUM_SOURCE,
    enum_commit: str = ENUM_COMMIT,
) -> str:
    raw = read_source(source, commit)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256:
        raise SystemExit(
            f"{source}: SHA-256 {digest} is not the pinned document's ({SHA256}); "
            "update COMMIT, SHA256 and KUBERNETES together"
        )
    kinds, types = extract(json.loads(raw)["definitions"])
    apply_enums(types, extract_enums(read_enum_packages(enum_source, enum_commit)))
    header = {
        "format": FORMAT,
        "provenance": {
            "repository": REPOSITORY,
            "path": SOURCE_PATH,
            "commit": COMMIT,
            "sha256": SHA256,
            "kubernetes": KUBERNETES,
            "upstream": UPSTREAM,
            "enums": f"{ENUM_REPOSITORY} {ENUM_TAG} ({ENUM_COMMIT}), +enum Go types",
        },
        "kinds": kinds,
    }
    head = json.dumps(header, sort_keys=True, separators=(",", ":"))
    lines = [
        f"{json.dumps(name)}:{json.dumps(types[name], sort_keys=True, separators=(',', ':'))}"
        for name in sorted(types)
    ]
    return head[:-1] + ',\n"types":{\n' + ",\n".join(lines) + "\n}}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="document or git dir")
    parser.add_argument("--commit", default=COMMIT, help="commit to read in a git directory")
    parser.add_argument(
        "--enum-source", type=Path, default=DEFAULT_ENUM_SOURCE, help="kubernetes/api git dir"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--check", action="store_true", help="exit 1 if the output is stale")
    args = parser.parse_args(argv)
    text = build(args.source, args.commit, args.enum_source)
    target = args.out / OUTPUT_NAME
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(f"{target} is stale: run scripts/build_kubernetes_schema.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    count = text.count("\n") - 2
    print(f"wrote {target} ({len(text.encode())} bytes, {count} definitions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
