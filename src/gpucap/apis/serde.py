"""Loading manifests: files, directories and stdin -> typed, defaulted, validated objects.

Accepts what people `kubectl apply`: multi-document YAML, JSON, and `kind: List`. Every
document is parsed with its line numbers kept (`Source.line_of` maps a field path back to
`file:line`, which lint findings use), dispatched on (apiVersion, kind) to its model, defaulted
and validated (`apis/validation.py`). Problems become `Issue`s that name the file, the
document, the object and the field:

    nodepool.yaml[0] NodePool/gpu: spec.template.spec.requirements[2].operator: 'Inn' is not ...

Kinds gpucap does not use are reported once per kind as ignored (a warning), never silently
dropped. Workloads are expanded into pods afterwards (`Manifests.pods`, `apis/expansion.py`).

The same object (kind, namespace, name) in two files, or twice in one file or `kind: List`, is
what `kubectl apply` of them in order makes of it: the later one wins. `LoadResult.manifests`
keeps everything that loaded (validate lists each); `LoadResult.objects` (plan, lint) holds
only the winners, each at the place of the object's first occurrence, with the version it
replaced in `Manifest.replaces` (lint's AMI003 compares them); a `DUPLICATE` warning says which
file won.
Called by the CLI (`cli/`), the simulator (scenario manifests) and tests.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TextIO, TypeAlias

import yaml
from pydantic import BaseModel, ValidationError

from gpucap.apis import retired
from gpucap.apis.admission import admit
from gpucap.apis.apirules import object_meta_problems
from gpucap.apis.capacityreservation import Reservations
from gpucap.apis.core import ConfigMap, Node, Pod, PodDisruptionBudget
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.errors import FieldPath, format_path, translate
from gpucap.apis.expansion import POD_CREATORS, PodCreator, expand, expansion_notes, pod_groups
from gpucap.apis.gpuoperator import ClusterPolicy
from gpucap.apis.horizontalpodautoscaler import HorizontalPodAutoscaler
from gpucap.apis.jobset import JobSet
from gpucap.apis.kuberay import RayCluster, RayJob, RayService
from gpucap.apis.leaderworkerset import LeaderWorkerSet
from gpucap.apis.limits import (
    MAX_FILE_BYTES,
    MAX_WORKLOAD_PODS,
    Budget,
    InputLimitError,
    size_text,
)
from gpucap.apis.meta import json_kind
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.placeholders import (
    Occurrence,
    bare_is_placeholder,
    fill_hint,
    group_message,
    is_runtime_field,
    placeholders,
    terraform_template,
)
from gpucap.apis.reading import (
    MANIFEST_SUFFIXES,
    InputError,
    load_json,
    manifest_files,
    os_reason,
    read_path,
    read_stream,
)
from gpucap.apis.scenario import Scenario
from gpucap.apis.schema import check_embedded, check_fields, load_schema, repeats_schema_error
from gpucap.apis.validation import validate_object
from gpucap.apis.violation import Violation
from gpucap.apis.workloads import (
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    StatefulSet,
    pod_uid,
)
from gpucap.apis.yamltext import (
    NOT_JSON,
    DuplicateKeyError,
    LazyLines,
    TextLines,
    documents,
    json_document,
    split_items,
)
from gpucap.runtime.collector import collector_paused

__all__ = [
    "KINDS",
    "LIMIT",
    "MANIFEST_SUFFIXES",
    "Issue",
    "LoadResult",
    "Manifest",
    "Manifests",
    "Source",
    "format_path",
    "load_paths",
    "load_text",
]

KubeObject: TypeAlias = (
    NodePool
    | NodeClaim
    | EC2NodeClass
    | NodeOverlay
    | Pod
    | Node
    | ConfigMap
    | PodCreator
    | DaemonSet
    | PodDisruptionBudget
    | ClusterPolicy
    | HorizontalPodAutoscaler
    | Scenario
)

# (kind) -> (apiVersion gpucap reads, model, namespaced)
KINDS: dict[str, tuple[str, type[BaseModel], bool]] = {
    "NodePool": ("karpenter.sh/v1", NodePool, False),
    "NodeClaim": ("karpenter.sh/v1", NodeClaim, False),
    "EC2NodeClass": ("karpenter.k8s.aws/v1", EC2NodeClass, False),
    "NodeOverlay": ("karpenter.sh/v1alpha1", NodeOverlay, False),
    "Pod": ("v1", Pod, True),
    "Node": ("v1", Node, False),
    "ConfigMap": ("v1", ConfigMap, True),
    "Deployment": ("apps/v1", Deployment, True),
    "StatefulSet": ("apps/v1", StatefulSet, True),
    "ReplicaSet": ("apps/v1", ReplicaSet, True),
    "Job": ("batch/v1", Job, True),
    "RayCluster": ("ray.io/v1", RayCluster, True),
    "RayService": ("ray.io/v1", RayService, True),
    "RayJob": ("ray.io/v1", RayJob, True),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1", LeaderWorkerSet, True),
    "JobSet": ("jobset.x-k8s.io/v1alpha2", JobSet, True),
    "DaemonSet": ("apps/v1", DaemonSet, True),
    "PodDisruptionBudget": ("policy/v1", PodDisruptionBudget, True),
    "ClusterPolicy": ("nvidia.com/v1", ClusterPolicy, False),
    "HorizontalPodAutoscaler": ("autoscaling/v2", HorizontalPodAutoscaler, True),
    "Scenario": ("gpucap.dev/v1alpha1", Scenario, False),
}

# The rule of an Issue that is an input limit (`apis/limits.py`) met inside a document: bad
# input (exit 2) for every command, not a finding `lint` reports among others.
LIMIT = "LIMIT"

Path_: TypeAlias = FieldPath


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from: file, document index (0-based), `kind: List` item, lines."""

    file: str
    index: int
    item: int | None = None
    lines: Mapping[Path_, int] = field(default_factory=dict, compare=False, repr=False)

    def __str__(self) -> str:
        where = f"{self.file}[{self.index}]"
        return where if self.item is None else f"{where}.items[{self.item}]"

    def line_of(self, path: Sequence[str | int] = ()) -> int | None:
        """1-based line of the field at `path`, or of its nearest ancestor that has one."""
        p = tuple(path)
        while True:
            if p in self.lines:
                return self.lines[p]
            if not p:
                return None
            p = p[:-1]


@dataclass(frozen=True, slots=True)
class Issue:
    """A problem found while loading: an error (the object is rejected) or a warning."""

    severity: Literal["error", "warning"]
    source: Source | None
    object_ref: str | None
    path: Path_
    message: str
    rule: str = "SCHEMA"

    @property
    def line(self) -> int | None:
        return self.source.line_of(self.path) if self.source else None

    def __str__(self) -> str:
        parts = []
        if self.source is not None:
            parts.append(str(self.source))
        if self.object_ref:
            parts.append(self.object_ref)
        head = " ".join(parts)
        tail = f"{format_path(self.path)}: {self.message}" if self.path else self.message
        return f"{head}: {tail}" if head else tail


@dataclass(frozen=True, slots=True)
class Manifest:
    """One loaded object and where it came from; `replaces` is the earlier version of the same
    object (kind, namespace, name) in the input that this one overrides, if any."""

    obj: KubeObject
    source: Source
    replaces: Manifest | None = None

    @property
    def ref(self) -> str:
        return object_ref(self.obj)

    @property
    def history(self) -> list[Manifest]:
        """The versions of this object in input order, this one last."""
        out: list[Manifest] = []
        m: Manifest | None = self
        while m is not None:
            out.append(m)
            m = m.replaces
        return out[::-1]


def object_ref(obj: KubeObject) -> str:
    """`Kind/name` (cluster scoped) or `Kind/namespace/name` (namespaced)."""
    _, _, namespaced = KINDS[obj.kind]
    if namespaced:
        return f"{obj.kind}/{obj.metadata.namespace}/{obj.metadata.name}"
    return f"{obj.kind}/{obj.metadata.name}"


@dataclass(slots=True)
class LoadResult:
    """Everything a load produced: the objects that validated, and every issue found."""

    manifests: list[Manifest] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    # The texts the line maps are built from, when asked for (`release_texts`).
    texts: list[TextLines] = field(default_factory=list, repr=False, compare=False)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def extend(self, other: LoadResult) -> None:
        self.manifests.extend(other.manifests)
        self.issues.extend(other.issues)
        self.texts.extend(other.texts)

    def release_texts(self) -> None:
        """Free the files' text: line maps not built by now stay empty, so an issue formatted
        afterwards has no line. `gpucap plan` calls it once the issues are reported."""
        for text in self.texts:
            text.release()
        self.texts.clear()

    @property
    def objects(self) -> Manifests:
        """The objects a cluster would hold after applying the input: later versions win."""
        return Manifests(tuple(effective(self.manifests)))


def effective(manifests: Sequence[Manifest]) -> list[Manifest]:
    """One manifest per object: the last version (`replaces` chaining the earlier ones), at the
    position of the first."""
    slots: dict[str, int] = {}
    out: list[Manifest] = []
    for m in manifests:
        key = m.ref
        at = slots.get(key)
        if at is None:
            slots[key] = len(out)
            out.append(m)
        else:
            out[at] = Manifest(m.obj, m.source, replaces=out[at])
    return out


def _report_duplicates(result: LoadResult) -> None:
    """A warning per object given more than once: which version wins (the later one)."""
    for m in effective(result.manifests):
        if m.replaces is None:
            continue
        earlier = ", ".join(str(v.source) for v in m.history[:-1])
        result.issues.append(
            Issue(
                "warning",
                m.source,
                m.ref,
                (),
                f"replaces the same object in {earlier} (the later one wins, as `kubectl "
                "apply` of both would)",
                "DUPLICATE",
            )
        )


@dataclass(frozen=True, slots=True)
class Manifests:
    """The loaded objects by kind, in input order; workloads expanded into pods; and the
    account's capacity reservations when the user gave a reservations file (`--reservations`,
    a Scenario's `spec.reservations`): not a Kubernetes object, EC2's answer."""

    items: tuple[Manifest, ...]
    reservations: Reservations = field(default_factory=Reservations)

    def of_kind(self, kind: str) -> list[Any]:
        return [m.obj for m in self.items if m.obj.kind == kind]

    @property
    def nodepools(self) -> list[NodePool]:
        return self.of_kind("NodePool")

    @property
    def nodeclasses(self) -> list[EC2NodeClass]:
        return self.of_kind("EC2NodeClass")

    @property
    def nodeclaims(self) -> list[NodeClaim]:
        return self.of_kind("NodeClaim")

    @property
    def nodeoverlays(self) -> list[NodeOverlay]:
        return self.of_kind("NodeOverlay")

    @property
    def nodes(self) -> list[Node]:
        return self.of_kind("Node")

    @property
    def daemonsets(self) -> list[DaemonSet]:
        return self.of_kind("DaemonSet")

    @property
    def configmaps(self) -> list[ConfigMap]:
        return self.of_kind("ConfigMap")

    @property
    def cluster_policies(self) -> list[ClusterPolicy]:
        return self.of_kind("ClusterPolicy")

    @property
    def pdbs(self) -> list[PodDisruptionBudget]:
        return self.of_kind("PodDisruptionBudget")

    @property
    def scenarios(self) -> list[Scenario]:
        return self.of_kind("Scenario")

    @property
    def workloads(self) -> list[PodCreator]:
        """Every object that creates pods (workloads and the operator kinds)."""
        return [m.obj for m in self.items if isinstance(m.obj, POD_CREATORS)]

    @property
    def pods(self) -> list[Pod]:
        """Pods as listed, plus the pods each workload creates, in input order, as the API
        server stores them (`apis/admission.py`)."""
        pods: list[Pod] = []
        for m in self.items:
            if isinstance(m.obj, Pod):
                pods.append(admit(m.obj))
            elif isinstance(m.obj, POD_CREATORS):
                pods.extend(expand(m.obj))
        return pods

    @property
    def notes(self) -> list[str]:
        """What a plan should say about the input itself: objects a later version replaced,
        and what the pods of operator kinds leave out (`expansion_notes`)."""
        notes = [
            f"{m.ref}: the version in {m.source} replaces the one in "
            f"{', '.join(str(v.source) for v in m.history[:-1])} (the later one wins, as "
            "`kubectl apply` of both would)"
            for m in self.items
            if m.replaces is not None
        ]
        for m in self.items:
            if isinstance(m.obj, POD_CREATORS):
                notes += [f"{m.ref}: {note}" for note in expansion_notes(m.obj)]
        return notes


# ---- loading --------------------------------------------------------------------------------
def load_paths(paths: Sequence[str], stdin: TextIO | None = None) -> LoadResult:
    """Load files, directories (every *.yaml|*.yml|*.json inside, recursively, sorted) and `-`,
    within the input limits (`apis/limits.py`): a limit hit ends the run with one error."""
    result = LoadResult()
    ignored: Counter[str] = Counter()
    budget = Budget()

    def cannot(message: str) -> None:
        result.issues.append(Issue("error", None, None, (), message))

    for raw in paths:
        if budget.exhausted:
            break
        if raw == "-":
            try:
                text = read_stream(stdin or sys.stdin, "<stdin>", budget)
            except InputError as err:
                cannot(str(err))
                continue
            result.extend(load_text(text, "<stdin>", ignored=ignored, budget=budget))
            continue
        try:
            is_dir = stat.S_ISDIR(os.stat(raw).st_mode)
        except OSError as err:
            missing = err.errno in {errno.ENOENT, errno.ENOTDIR}
            cannot(f"{raw}: " + ("no such file or directory" if missing else os_reason(err)))
            continue
        except ValueError:  # a NUL in the name
            cannot(f"{raw!r}: not a valid path")
            continue
        if is_dir:
            try:
                files = sorted(manifest_files(raw, budget))
            except InputError as err:
                cannot(str(err))
                continue
            if not files:
                cannot(f"{raw}: no *.yaml, *.yml or *.json files")
            for f in files:
                if budget.exhausted:
                    break
                result.extend(_load_file(str(f), ignored, budget))
        else:
            # Files, and FIFOs or devices too: `gpucap validate <(helm template ...)`.
            result.extend(_load_file(raw, ignored, budget))
    _group_placeholders(result)
    _report_ignored(result, ignored)
    _report_duplicates(result)
    return result


def _load_file(path: str, ignored: Counter[str], budget: Budget) -> LoadResult:
    try:
        text = read_path(path, budget)
    except InputError as err:
        return LoadResult(issues=[Issue("error", None, None, (), str(err))])
    return load_text(text, path, ignored=ignored, budget=budget)


def load_text(
    text: str,
    file: str = "<input>",
    *,
    ignored: Counter[str] | None = None,
    budget: Budget | None = None,
) -> LoadResult:
    """Load every document of one file's text. `ignored` collects unused kinds across files;
    `budget` counts documents and pods across the files of one run (`apis/limits.py`)."""
    budget = Budget() if budget is None else budget
    template = terraform_template(text, file)
    if template is not None:
        return LoadResult(issues=[Issue("error", None, None, (), template)])
    lines = TextLines(text, file)
    with collector_paused():
        parsed = parse_text(text, file, budget, lines)
        if isinstance(parsed, str):
            return LoadResult(issues=[Issue("error", None, None, (), parsed)])
        result = load_documents(parsed, file, ignored=ignored, budget=budget, text=text)
    result.texts.append(lines)
    return result


Document: TypeAlias = tuple[Any, Mapping[Path_, int]]


def parse_text(
    text: str, file: str, budget: Budget | None = None, lines: TextLines | None = None
) -> list[Document] | str:
    """The first stage of `load_text`: each document of `text` as (data, line map), or the
    one-line error that refuses the whole file. `lines` builds the line maps (a new one over
    `text` if not given)."""
    budget = Budget() if budget is None else budget
    if len(text) > MAX_FILE_BYTES:
        return f"{file}: larger than {size_text(MAX_FILE_BYTES)} (gpucap's limit for one file)"
    # Line maps are built when a line is asked for (lint, mostly), by one more YAML pass over
    # the text; a JSON text the json module reads as YAML would skips the YAML parser.
    lines = TextLines(text, file) if lines is None else lines
    try:
        data = json_document(text)
        if data is not NOT_JSON:
            budget.charge_object()
            return [(data, lines.document(0))]
        return [
            (data, lines.document(i))
            for i, (data, _) in enumerate(documents(text, file, budget, lines=False))
        ]
    except DuplicateKeyError as err:
        return f"{file}: {err}"
    except InputError as err:
        return str(err)
    except InputLimitError as err:
        return f"{file}: {err}"
    except UnicodeEncodeError as err:  # text from a caller, not the reader: a lone surrogate
        line = text.count("\n", 0, err.start) + 1
        return f"{file}: line {line}: a lone surrogate character, not text (not UTF-8)"
    except yaml.YAMLError as err:
        if file.endswith(".json"):
            # JSON that YAML cannot read (tabs, for instance) is still JSON.
            try:
                return [(load_json(text, file), {})]
            except InputError as json_err:
                if "not valid JSON" not in str(json_err):
                    return str(json_err)
        return f"{file}: {_yaml_error(err)}"


def load_documents(
    docs: Sequence[Document],
    file: str,
    *,
    ignored: Counter[str] | None = None,
    budget: Budget | None = None,
    text: str | None = None,
) -> LoadResult:
    """The second stage of `load_text`: dispatch, default and validate each parsed document
    (the items of a `kind: List` one by one). `text`, the documents' source, lets it skip
    looking for placeholders in every field when the text cannot hold a `$`. It consumes the
    documents (when `docs` is a list) and the items of a `kind: List`: each is set to None
    once loaded, so that the parsed trees and the models built from them are not all alive at
    once (peak memory)."""
    dollars = text is None or _may_hold_dollar(text)
    own_counter = ignored is None
    counter: Counter[str] = Counter() if ignored is None else ignored
    budget = Budget() if budget is None else budget
    result = LoadResult()
    for index, (data, lines) in enumerate(docs):
        if budget.exhausted:
            break
        if data is None:
            continue
        source = Source(file, index, None, lines)
        if isinstance(data, dict) and data.get("kind") == "List":
            items = data.get("items")
            if not isinstance(items, list):
                result.issues.append(
                    Issue("error", source, "List", ("items",), "a List needs an items array")
                )
                continue
            # Each item's line map is cut from the document's when first asked for, all items
            # in one pass (one pass per item made a List of 1,000 pods quadratic).
            split = _ItemSplit(lines)
            for i, item in enumerate(items):
                item_source = Source(file, index, i, LazyLines(partial(split.item, i)))
                try:
                    budget.charge_object()
                except InputLimitError as err:
                    result.issues.append(Issue("error", item_source, None, (), str(err), LIMIT))
                    break
                _load_document(item, item_source, result, counter, budget, dollars)
                items[i] = None  # its model is built: the parsed tree can go (peak memory)
                if budget.exhausted:
                    break
            continue
        _load_document(data, source, result, counter, budget, dollars)
        if isinstance(docs, list):
            docs[index] = (None, lines)  # as a List item: the parsed tree can go
    if own_counter:
        _group_placeholders(result)
        _report_ignored(result, counter)
        _report_duplicates(result)
    return result


class _ItemSplit:
    """A `kind: List` document's line map cut per item on first use (`split_items`)."""

    def __init__(self, lines: Mapping[Path_, int]) -> None:
        self._lines = lines
        self._items: dict[int, dict[Path_, int]] | None = None

    def item(self, i: int) -> dict[Path_, int]:
        if self._items is None:
            self._items = split_items(self._lines)
        return self._items.get(i, {})


def _yaml_error(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is not None:
        return f"line {mark.line + 1} column {mark.column + 1}: invalid YAML: {problem}"
    return f"invalid YAML: {problem}"


# What gpucap itself writes (`plan -o yaml`, `simulate -o json`, `lint -o json`): a folder of
# manifests that also holds a saved plan is read without a word about it.
_OWN_OUTPUTS = frozenset(
    ("gpucap.dev/v1alpha1", kind) for kind in ("Plan", "Simulation", "LintReport")
)


def _report_ignored(result: LoadResult, ignored: Counter[str]) -> None:
    if not ignored:
        return
    kinds = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in sorted(ignored.items()))
    result.issues.append(
        Issue("warning", None, None, (), f"ignored kinds gpucap does not use: {kinds}", "IGNORED")
    )
    ignored.clear()


def _may_hold_dollar(text: str) -> bool:
    """Whether a value parsed from `text` may contain `$`: written as is, or as a YAML or
    JSON escape."""
    return any(s in text for s in ("$", "\\x24", "\\u0024", "\\U00000024"))


def _load_document(  # noqa: PLR0917 - one document's context, passed down
    data: Any,
    source: Source,
    result: LoadResult,
    ignored: Counter[str],
    budget: Budget,
    dollars: bool = True,
) -> None:
    def error(path: Path_, message: str, ref: str | None = None) -> None:
        result.issues.append(Issue("error", source, ref, path, message))

    if not isinstance(data, dict):
        error((), f"a manifest must be a mapping, got {json_kind(data)}")
        return
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        error(("kind",), "required field is missing" if kind is None else "must be a string")
        return
    if not isinstance(api_version, str) or not api_version:
        error(("apiVersion",), "required field is missing", kind)
        return
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    ref = f"{kind}/{name}" if isinstance(name, str) and name else kind
    retired_api = retired.retired_karpenter_api(api_version, kind)
    if retired_api is not None:
        error(("apiVersion",), retired_api, ref)
        return
    if kind not in KINDS:
        unknown = retired.unknown_karpenter_kind(api_version, kind)
        if unknown is not None:
            error(("kind",), unknown, ref)  # "no matches for kind": not a kind to ignore
        elif (api_version, kind) not in _OWN_OUTPUTS:
            ignored[kind] += 1
        return
    want_version, model, namespaced = KINDS[kind]
    if kind == "HorizontalPodAutoscaler" and api_version != want_version:
        ignored[kind] += 1  # autoscaling/v1 (CPU only): ignored as before v2 was read
        return
    if api_version != want_version:
        error(
            ("apiVersion",),
            f"{api_version!r} is not supported for {kind}; gpucap reads {want_version}",
            ref,
        )
        return
    if not isinstance(meta, dict):
        error(("metadata",), "required field is missing", ref)
        return
    if not isinstance(name, str) or not name:
        error(("metadata", "name"), "required field is missing", ref)
        return
    if namespaced:
        # The raw document, not yet a model, needs its namespace now (the reference, the pod
        # UID); the model (`NamespacedObjectMeta`) defaults it the same way.
        namespace = meta.get("namespace") or "default"
        data = {**data, "metadata": {**meta, "namespace": namespace}}
        ref = f"{kind}/{namespace}/{name}"
        if kind == "Pod" and not meta.get("uid"):
            # Pods need a stable UID: Karpenter's queue breaks ties on it.
            data["metadata"]["uid"] = pod_uid(namespace, name)
    # The Kubernetes API schema first (unknown fields and wrong JSON types at any depth, as the
    # API server's strict decoding finds them), then the models; a model error at or below a
    # path the schema already reported says the same thing again and is dropped.
    schema = load_schema()
    root = schema.root(api_version, kind)
    reported: list[Path_] = []
    problems = (
        check_fields(root, data)
        if root is not None
        else check_embedded(schema, api_version, kind, data)
    )
    # Names, namespaces, and the labels and annotations of kinds the schema walk does not
    # reach (custom resources), as the API server's ValidateObjectMeta checks them.
    problems = [*object_meta_problems(kind, data["metadata"], labels=root is None), *problems]
    # A value that breaks its field's syntax because it holds `${VAR}` or `$VAR` (`id: ${AMI_ID}`,
    # `namespace: $NAMESPACE`) is a placeholder not filled yet, not a wrong value: it gets the
    # placeholder warning and the rest of the object is judged. Those problems are held back;
    # they are errors after all if the model cannot take the value either (`replicas: $N`).
    held = _placeholder_fields(data, kind, [p for p, _ in problems]) if dollars else set()
    deferred = [(p, m) for p, m in problems if p in held]
    for path, message in problems:
        if path not in held:
            error(path, message, ref)
            reported.append(path)

    def note_placeholders() -> None:
        # Every object of a kind gpucap reads has its placeholders noted, valid or not: an
        # error caused by one (`replicas: $N`) then comes with the command that fills it.
        if dollars:
            _check_placeholders(data, (), source, ref, result, held)

    try:
        obj = model.model_validate(data)
    except ValidationError as err:
        details = [
            (*translate(detail, model), detail["type"] == "missing")
            for detail in err.errors(include_url=False)
        ]
        for held_path, message in deferred:
            if any(repeats_schema_error(path, False, [held_path]) for path, _, _ in details):
                error(held_path, message, ref)
                reported.append(held_path)
        for path, message, missing in details:
            if not repeats_schema_error(path, missing, reported):
                error(path, message, ref)
        if dollars:  # `replicas: $N`: a bare `$N` where a number goes is a placeholder too
            held |= _placeholder_fields(data, kind, [path for path, _, _ in details])
        note_placeholders()
        return
    if reported:
        # The rules would judge an object that lost its misspelt fields: their findings would
        # be the typo's consequences (`values` missing next to an unknown `value`). The API
        # server, too, stops at the decoding errors.
        note_placeholders()
        return
    violations = validate_object(obj)
    if dollars:
        newly = _placeholder_fields(data, kind, [v.path for v in violations])
        violations = [v for v in violations if v.path not in newly]
        held |= newly
    for v in violations:
        result.issues.append(Issue(v.severity, source, ref, v.path, v.message, v.rule or "SCHEMA"))
    if any(v.severity == "error" for v in violations):
        note_placeholders()
        return
    if not _within_pod_limits(obj, source, ref, result, budget):
        return
    note_placeholders()
    result.manifests.append(Manifest(obj, source))  # type: ignore[arg-type]


def _within_pod_limits(
    obj: Any, source: Source, ref: str, result: LoadResult, budget: Budget
) -> bool:
    """Count the pods `obj` makes (from its templates' counts, before any pod is built) against
    MAX_WORKLOAD_PODS and the run's MAX_PODS; False, with the error recorded, past either."""
    if isinstance(obj, Pod):
        made = 1
    elif isinstance(obj, POD_CREATORS):
        groups = pod_groups(obj)
        made = sum(g.count for g in groups)
        if made > MAX_WORKLOAD_PODS:
            biggest = max(groups, key=lambda g: g.count)
            result.issues.append(
                Issue(
                    "error",
                    source,
                    ref,
                    biggest.path,
                    f"makes {made:,} pods; gpucap plans at most {MAX_WORKLOAD_PODS:,} per "
                    "workload (Kubernetes' limit for a whole cluster)",
                    LIMIT,
                )
            )
            return False
    else:
        return True
    over = budget.charge_pods(made)
    if over is not None:
        result.issues.append(Issue("error", source, ref, (), over, LIMIT))
        return False
    return not budget.exhausted


@dataclass(frozen=True, slots=True)
class _PlaceholderIssue(Issue):
    """One field holding placeholders, before `_group_placeholders` turns all of a load's into
    one line per variable. `runtime`: the field is one a program expands at run time."""

    names: tuple[str, ...] = ()
    runtime: bool = False


@dataclass(frozen=True, slots=True)
class _FileSource(Source):
    """Where a grouped warning points: the file (its first field's line for lint)."""

    def __str__(self) -> str:
        return self.file


def _placeholder_fields(data: Any, kind: str, paths: Iterable[Path_]) -> set[Path_]:
    """Those of `paths` (fields a check found wrong) whose value in `data` is text holding a
    `${VAR}` or `$VAR` outside a runtime field: the check judged a placeholder, not a value.
    Bare `$VAR` counts too, since it is what broke a syntax no `$` belongs in."""
    held: set[Path_] = set()
    for path in paths:
        value = _value_at(data, path)
        if (
            isinstance(value, str)
            and "$" in value
            and placeholders(value)
            and not is_runtime_field(kind, path, value)
        ):
            held.add(path)
    return held


def _value_at(data: Any, path: Path_) -> Any:
    for step in path:
        found = (isinstance(data, dict) and step in data) or (
            isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data)
        )
        if not found:
            return None
        data = data[step]
    return data


def _check_placeholders(  # noqa: PLR0917 - one document's context, passed down
    value: Any,
    path: Path_,
    source: Source,
    ref: str,
    result: LoadResult,
    bare: Collection[Path_] = (),
) -> None:
    """Note every field with a placeholder left in it (envsubst/`gpucap render` was not run):
    `${VAR}` anywhere, a bare `$VAR` where `bare_is_placeholder` says so or in the fields of
    `bare` (held back from a syntax check for it)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_placeholders(v, (*path, k), source, ref, result, bare)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_placeholders(v, (*path, i), source, ref, result, bare)
    elif isinstance(value, str) and "$" in value:
        kind = ref.split("/", 1)[0]
        braced_only = not (bare_is_placeholder(kind, path) or path in bare)
        names = placeholders(value, braced_only=braced_only)
        if names:
            result.issues.append(
                _PlaceholderIssue(
                    "warning",
                    source,
                    ref,
                    path,
                    f"unsubstituted placeholder {', '.join('${' + n + '}' for n in names)}",
                    "PLACEHOLDER",
                    names=tuple(names),
                    runtime=is_runtime_field(kind, path, value),
                )
            )


def _group_placeholders(result: LoadResult) -> None:
    """Replace the per-field placeholder notes of a whole load by one warning per variable
    (count, objects, first fields) and one with the `gpucap render` command that fills them.

    A name seen only in runtime fields (userData, container command/args, ConfigMap scripts) is
    the node's or the container's variable, not a placeholder: nothing is said about it. A name
    that is also a placeholder elsewhere counts in those fields too."""
    raw = [i for i in result.issues if isinstance(i, _PlaceholderIssue)]
    if not raw:
        return
    templates = {n for i in raw if not i.runtime for n in i.names}
    by_name: dict[str, list[_PlaceholderIssue]] = {}
    for issue in raw:
        for n in issue.names:
            if n in templates:
                by_name.setdefault(n, []).append(issue)
    grouped: list[Issue] = []
    for name, issues in by_name.items():
        first = issues[0]
        if first.source is None:  # every field note has its document; this keeps mypy sure
            continue
        occurrences = [
            Occurrence(i.source.file, str(i.source), i.object_ref or "", format_path(i.path))
            for i in issues
            if i.source is not None
        ]
        where = _FileSource(
            first.source.file, first.source.index, first.source.item, {(): first.line or 1}
        )
        grouped.append(
            Issue("warning", where, None, (), group_message(name, occurrences), "PLACEHOLDER")
        )
    if by_name:
        files = [
            i.source.file
            for i in raw
            if i.source is not None and any(n in templates for n in i.names)
        ]
        hint = fill_hint(files, list(by_name))
        grouped.append(Issue("warning", None, None, (), hint, "PLACEHOLDER"))
    first_at = result.issues.index(raw[0])
    rest = [i for i in result.issues if not isinstance(i, _PlaceholderIssue)]
    result.issues[:] = [*rest[:first_at], *grouped, *rest[first_at:]]


__all__ += ["KubeObject", "Violation", "effective", "object_ref"]
