"""The Kubernetes API schema check: what the API server's strict decoding rejects, gpucap rejects.

Rules as sentences on minimal inputs, a table of misspelt fields at every depth of the pod
template, laws over the whole bundled schema (hypothesis), and the bundled file against its
build script. Real public files are in tests/realworld/test_validate.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from gpucap.apis.schema import (
    EnumOf,
    ListOf,
    MapOf,
    ObjectType,
    check_embedded,
    check_fields,
    load_schema,
)
from gpucap.apis.serde import KINDS, load_text
from tests.builders import (
    GPU_TOLERATION,
    daemonset,
    deployment,
    edit,
    job,
    load,
    pod,
)

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(
    os.environ.get(
        "GPUCAP_KUBERNETES_OPENAPI",
        ROOT.parent / "shared" / "data" / "kubernetes" / "swagger.json.unprocessed",
    )
)
# kubernetes/api (a clone or mirror): the source of the enum values.
ENUM_SOURCE = Path(
    os.environ.get("GPUCAP_KUBERNETES_API", ROOT.parent / "shared" / "data" / "kubernetes+api")
)
POD = "test.yaml[0] Pod/default/web-0: "
DEP = "test.yaml[0] Deployment/default/vllm: "


def errors(*docs: dict[str, Any]) -> list[str]:
    return [str(e) for e in load(*docs).errors]


def statefulset() -> dict[str, Any]:
    doc = deployment("db")
    return {**doc, "kind": "StatefulSet"}


# ---- rules as sentences ------------------------------------------------------------------------


def test_a_misspelt_security_context_field_is_an_unknown_field_with_its_path_and_a_suggestion() -> (
    None
):
    doc = edit(
        deployment(),
        "spec.template.spec.containers[0].securityContext",
        {"allowPrivilegedEscalation": False},
    )
    assert errors(doc) == [
        DEP + "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation: "
        "unknown field 'allowPrivilegedEscalation' (did you mean 'allowPrivilegeEscalation'?)"
    ]


def test_a_misspelt_toleration_operator_is_rejected_instead_of_being_read_as_equal() -> None:
    toleration = {"key": "nvidia.com/gpu", "operatr": "Exists", "effect": "NoSchedule"}
    result = load(pod(tolerations=[toleration]))
    assert [str(e) for e in result.errors] == [
        POD + "spec.tolerations[0].operatr: unknown field 'operatr' (did you mean 'operator'?)"
    ]
    assert result.manifests == []


def test_a_field_name_is_case_sensitive_as_the_api_server_decodes_it() -> None:
    doc = edit(pod(), "spec.containers[0].Image", "busybox")
    assert errors(doc) == [
        POD + "spec.containers[0].Image: unknown field 'Image' (did you mean 'image'?)"
    ]


def test_an_unknown_field_with_nothing_close_has_no_suggestion() -> None:
    doc = edit(pod(), "spec.containers[0].gpuCount", 1)
    assert errors(doc) == [POD + "spec.containers[0].gpuCount: unknown field 'gpuCount'"]


def test_a_string_where_the_api_says_integer_is_an_error_the_api_server_does_not_coerce_it() -> (
    None
):
    doc = edit(pod(), "spec.securityContext", {"runAsUser": "1000"})
    assert errors(doc) == [
        POD + 'spec.securityContext.runAsUser: expected an integer, got string "1000"'
    ]


def test_an_unquoted_true_in_an_env_value_is_an_error_as_the_string_field_gets_a_boolean() -> None:
    doc = edit(pod(), "spec.containers[0].env", [{"name": "DEBUG", "value": True}])
    assert errors(doc) == [
        POD + "spec.containers[0].env[0].value: expected a string, got boolean true"
    ]


def test_a_number_with_no_fraction_is_an_integer_as_kubectl_sends_it_but_a_fraction_is_not() -> (
    None
):
    ok = edit(pod(), "spec.terminationGracePeriodSeconds", 30.0)
    assert errors(ok) == []
    bad = edit(pod(), "spec.terminationGracePeriodSeconds", 30.5)
    assert errors(bad) == [
        POD + "spec.terminationGracePeriodSeconds: expected an integer, got number 30.5"
    ]


def test_a_boolean_is_not_an_integer() -> None:
    doc = edit(pod(), "spec.priority", True)
    assert errors(doc) == [POD + "spec.priority: expected an integer, got boolean true"]


def test_int32_fields_reject_a_value_outside_32_bits() -> None:
    doc = edit(pod(), "spec.containers[0].ports", [{"containerPort": 2**31}])
    assert errors(doc) == [
        POD + "spec.containers[0].ports[0].containerPort: 2147483648 is outside the 32-bit "
        "integer range"
    ]


def test_int_or_string_fields_take_an_integer_or_a_string_and_nothing_else() -> None:
    def probe(port: Any) -> dict[str, Any]:
        return edit(
            pod(), "spec.containers[0].readinessProbe", {"httpGet": {"path": "/", "port": port}}
        )

    assert errors(probe(8000)) == []
    assert errors(probe("http")) == []
    assert errors(probe(True)) == [
        POD + "spec.containers[0].readinessProbe.httpGet.port: expected an integer or a string, "
        "got boolean true"
    ]
    assert errors(probe(80.5)) == [
        POD + "spec.containers[0].readinessProbe.httpGet.port: expected an integer or a string, "
        "got number 80.5"
    ]


def test_quantity_fields_take_strings_and_numbers_in_the_quantity_grammar() -> None:
    def volume(size: Any) -> dict[str, Any]:
        return edit(pod(), "spec.volumes", [{"name": "cache", "emptyDir": {"sizeLimit": size}}])

    assert errors(volume("8Gi")) == []
    assert errors(volume(1)) == []
    assert errors(volume(0.5)) == []
    assert errors(volume("8GB")) == [
        POD + "spec.volumes[0].emptyDir.sizeLimit: '8GB' is not a valid quantity"
    ]
    assert errors(volume(False)) == [
        POD + "spec.volumes[0].emptyDir.sizeLimit: expected a quantity (a string such as '500m' "
        "or a number), got boolean false"
    ]


def test_a_list_field_given_a_mapping_is_an_error() -> None:
    doc = edit(pod(), "spec.containers[0].args", {"model": "qwen"})
    assert errors(doc) == [POD + "spec.containers[0].args: expected a list, got object"]


def test_an_object_field_given_a_string_is_an_error() -> None:
    doc = edit(pod(), "spec.containers[0].securityContext", "restricted")
    assert errors(doc) == [
        POD + "spec.containers[0].securityContext: expected an object (mapping), got string"
    ]


def test_null_is_accepted_for_any_field_as_the_go_decoder_leaves_it_unset() -> None:
    doc = edit(pod(), "metadata.creationTimestamp", None)
    doc = edit(doc, "spec.containers[0].securityContext", None)
    doc = edit(doc, "spec.containers[0].resources.limits", None)
    assert load(doc).issues == []


def test_metadata_is_checked_too_labels_are_strings_and_field_names_are_known() -> None:
    assert errors(edit(pod(), "metadata.labels", {"version": 2})) == [
        POD + "metadata.labels.version: expected a string, got integer 2"
    ]
    assert errors(edit(pod(), "metadata.label", {"app": "web"})) == [
        POD + "metadata.label: unknown field 'label' (did you mean 'labels'?)"
    ]


def test_a_creation_timestamp_must_be_an_rfc3339_time() -> None:
    assert errors(edit(pod(), "metadata.creationTimestamp", "2026-11-30T10:00:00Z")) == []
    assert errors(edit(pod(), "metadata.creationTimestamp", "yesterday")) == [
        POD + "metadata.creationTimestamp: 'yesterday' is not an RFC 3339 time "
        "(e.g. 2026-01-01T00:00:00Z)"
    ]


def test_status_is_not_checked_because_controllers_write_it_and_kubectl_get_output_carries_it() -> (
    None
):
    doc = {**pod(), "status": {"phase": "Pending", "fieldFromANewerCluster": {"x": 1}}}
    assert load(doc).issues == []


def test_an_unquoted_date_in_a_string_field_is_a_string_as_kubectl_reads_it() -> None:
    # PyYAML reads `2026-01-01` as a date; the YAML library kubectl uses keeps it a string.
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web-0, annotations: {since: 2026-01-01}}\n"
        "spec:\n  containers:\n  - name: a\n    env: [{name: SINCE, value: 2026-01-01}]\n"
    )
    assert load_text(text, "test.yaml").issues == []


def test_every_problem_in_a_document_is_reported_in_document_order() -> None:
    doc = edit(pod(), "spec.containers[0].imagePullPolicy", 1)
    doc = edit(doc, "spec.tolerations", [{**GPU_TOLERATION, "tolerationSecond": 5}])
    assert errors(doc) == [
        POD + "spec.containers[0].imagePullPolicy: expected a string, got integer 1",
        POD + "spec.tolerations[0].tolerationSecond: unknown field 'tolerationSecond' "
        "(did you mean 'tolerationSeconds'?)",
    ]


def test_a_model_error_at_a_path_the_schema_already_reported_is_not_repeated() -> None:
    # The pod model also types `priority` as an integer; one line, not two.
    assert errors(edit(pod(), "spec.priority", "high")) == [
        POD + 'spec.priority: expected an integer, got string "high"'
    ]


def test_model_rules_still_apply_next_to_schema_errors() -> None:
    doc = edit(pod(), "spec.containers[0].resources.requests.cpu", "1 core")
    doc = edit(doc, "spec.containers[0].stdinn", True)
    assert errors(doc) == [
        POD + "spec.containers[0].resources.requests.cpu: '1 core' is not a valid quantity",
        POD + "spec.containers[0].stdinn: unknown field 'stdinn' (did you mean 'stdin'?)",
    ]


def test_kinds_gpucap_ignores_are_not_checked_only_reported_as_ignored() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "vllm"},
        "spec": {"portz": [{"port": 80}]},
    }
    result = load(service)
    assert result.errors == []
    assert [str(w) for w in result.warnings] == ["ignored kinds gpucap does not use: Service"]


def test_a_top_level_field_the_kind_does_not_have_is_an_error() -> None:
    assert errors({**pod(), "sepc": {}}) == [
        POD + "sepc: unknown field 'sepc' (did you mean 'spec'?)"
    ]


# ---- the table: misspelt fields at every depth, in every kind with a pod template -------------

C0 = "containers[0]"
MISSPELT: list[tuple[str, Any, str]] = [
    # (path under the pod spec, value, expected "path: message" under the pod spec)
    ("hostNetwrok", True, "hostNetwrok: unknown field 'hostNetwrok' (did you mean 'hostNetwork'?)"),
    (
        f"{C0}.imagePullPolicyy",
        "Always",
        f"{C0}.imagePullPolicyy: unknown field 'imagePullPolicyy' (did you mean 'imagePullPolicy'?)",
    ),
    (
        f"{C0}.resources.limit",
        {"nvidia.com/gpu": "1"},
        f"{C0}.resources.limit: unknown field 'limit' (did you mean 'limits'?)",
    ),
    (
        f"{C0}.securityContext.capabilities",
        {"drop": ["ALL"], "addd": ["NET_ADMIN"]},
        f"{C0}.securityContext.capabilities.addd: unknown field 'addd' (did you mean 'add'?)",
    ),
    (
        f"{C0}.livenessProbe",
        {"httpGet": {"path": "/", "port": 80}, "initialDelaySecond": 5},
        f"{C0}.livenessProbe.initialDelaySecond: unknown field 'initialDelaySecond' "
        "(did you mean 'initialDelaySeconds'?)",
    ),
    (
        f"{C0}.readinessProbe",
        {"httpGet": {"pat": "/health", "port": 80}},
        f"{C0}.readinessProbe.httpGet.pat: unknown field 'pat' (did you mean 'path'?)",
    ),
    (
        f"{C0}.env",
        [{"name": "IP", "valueFrom": {"fieldRef": {"fieldpath": "status.podIP"}}}],
        f"{C0}.env[0].valueFrom.fieldRef.fieldpath: unknown field 'fieldpath' "
        "(did you mean 'fieldPath'?)",
    ),
    (
        f"{C0}.volumeMounts",
        [{"name": "cache", "mountpath": "/cache"}],
        f"{C0}.volumeMounts[0].mountpath: unknown field 'mountpath' (did you mean 'mountPath'?)",
    ),
    (
        "volumes",
        [{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "paht": "a"}]}}],
        "volumes[0].configMap.items[0].paht: unknown field 'paht' (did you mean 'path'?)",
    ),
    (
        "volumes",
        [{"name": "shm", "emptydir": {"medium": "Memory"}}],
        "volumes[0].emptydir: unknown field 'emptydir' (did you mean 'emptyDir'?)",
    ),
    (
        "tolerations",
        [{"key": "nvidia.com/gpu", "operator": "Exists", "efect": "NoSchedule"}],
        "tolerations[0].efect: unknown field 'efect' (did you mean 'effect'?)",
    ),
    (
        "affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "In", "value": ["b"]}]}
                    ]
                }
            }
        },
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].value: unknown field 'value' (did you mean 'values'?)",
    ),
    (
        "affinity",
        {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologykey": "x"}]
            }
        },
        "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologykey: "
        "unknown field 'topologykey' (did you mean 'topologyKey'?)",
    ),
    (
        "topologySpreadConstraints",
        [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabel": {"app": "x"}},
            }
        ],
        "topologySpreadConstraints[0].labelSelector.matchLabel: unknown field 'matchLabel' "
        "(did you mean 'matchLabels'?)",
    ),
    (
        "securityContext",
        {"seccompProfile": {"typ": "RuntimeDefault"}},
        "securityContext.seccompProfile.typ: unknown field 'typ' (did you mean 'type'?)",
    ),
    (
        "initContainers",
        [{"name": "init", "image": "busybox", "comand": ["true"]}],
        "initContainers[0].comand: unknown field 'comand' (did you mean 'command'?)",
    ),
]

KINDS_WITH_PODS: list[tuple[str, dict[str, Any], str, str]] = [
    ("Pod", pod(), "spec", POD),
    ("Deployment", deployment(), "spec.template.spec", DEP),
    ("StatefulSet", statefulset(), "spec.template.spec", "test.yaml[0] StatefulSet/default/db: "),
    (
        "DaemonSet",
        daemonset(),
        "spec.template.spec",
        "test.yaml[0] DaemonSet/kube-system/nvidia-device-plugin: ",
    ),
    ("Job", job(), "spec.template.spec", "test.yaml[0] Job/default/train: "),
]


@pytest.mark.parametrize(
    ("kind", "doc", "base", "head"), KINDS_WITH_PODS, ids=[k[0] for k in KINDS_WITH_PODS]
)
@pytest.mark.parametrize(("path", "value", "expected"), MISSPELT, ids=[m[0] for m in MISSPELT])
def test_a_misspelt_field_at_any_depth_of_a_pod_spec_is_one_error_with_its_path(
    kind: str, doc: dict[str, Any], base: str, head: str, *, path: str, value: Any, expected: str
) -> None:
    result = load(edit(doc, f"{base}.{path}", value))
    assert [str(e) for e in result.errors] == [f"{head}{base}.{expected}"]
    assert result.manifests == []


def test_a_misspelt_replicaset_template_field_is_rejected_as_well() -> None:
    rs = {**deployment(), "kind": "ReplicaSet"}
    doc = edit(rs, "spec.template.spec.schedulerNmae", "x")
    assert errors(doc) == [
        "test.yaml[0] ReplicaSet/default/vllm: spec.template.spec.schedulerNmae: unknown field "
        "'schedulerNmae' (did you mean 'schedulerName'?)"
    ]


def test_a_misspelt_workload_spec_field_is_rejected_as_well() -> None:
    assert errors(edit(deployment(), "spec.replica", 3)) == [
        DEP + "spec.replica: unknown field 'replica' (did you mean 'replicas'?)"
    ]


def test_a_misspelt_field_in_a_node_a_configmap_and_a_pdb_is_rejected() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"taint": []}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dat": {"a": "b"}}
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "p"},
        "spec": {"minAvailible": 1},
    }
    assert errors(node, cm, pdb) == [
        "test.yaml[0] Node/n1: spec.taint: unknown field 'taint' (did you mean 'taints'?)",
        "test.yaml[1] ConfigMap/default/c: dat: unknown field 'dat' (did you mean 'data'?)",
        "test.yaml[2] PodDisruptionBudget/default/p: spec.minAvailible: unknown field "
        "'minAvailible' (did you mean 'minAvailable'?)",
    ]


# ---- laws over the bundled schema ----------------------------------------------------------------

SCHEMA = load_schema()
POD_ROOT = SCHEMA.root("v1", "Pod")
assert POD_ROOT is not None

VALID_SCALARS = {
    "string": "x",
    "boolean": True,
    "number": 1.5,
    "int32": 1,
    "int64": 1,
    "int-or-string": "25%",
    "quantity": "1Gi",
    "time": "2026-01-01T00:00:00Z",
    "any": {"k": "v"},
}
WRONG_SCALARS = {
    "string": 1,
    "boolean": "true",
    "number": "1.5",
    "int32": "1",
    "int64": "1",
    "int-or-string": True,
    "quantity": True,
    "time": 1,
}


def minimal_valid(t: Any) -> Any:
    if isinstance(t, ObjectType | MapOf):
        return {}
    if isinstance(t, ListOf):
        return []
    if isinstance(t, EnumOf):
        return min(t.values)
    return VALID_SCALARS[t]


@st.composite
def object_paths(
    draw: st.DrawFn,
) -> tuple[ObjectType, ObjectType, list[str | int], dict[str, Any], Any]:
    """A path from a kind's root down to some object type, and a document holding it.

    Returns (the kind's root type, the object type reached, the path to it, the document, the
    empty mapping at the path that a test fills)."""
    key = draw(st.sampled_from(sorted(SCHEMA.kinds)))
    t: Any = SCHEMA.kinds[key]
    doc: dict[str, Any] = {}
    holder: Any = doc
    path: list[str | int] = []
    for _ in range(draw(st.integers(0, 8))):
        choices = sorted(
            f
            for f, ft in t.fields.items()
            if not (not path and f == "status") and _leads_to_object(ft)
        )
        if not choices:
            break
        name = draw(st.sampled_from(choices))
        ft = t.fields[name]
        path.append(name)
        while not isinstance(ft, ObjectType):
            if isinstance(ft, ListOf):
                holder[name] = [{}]
                holder = holder[name]
                name, ft = 0, ft.item
            else:
                assert isinstance(ft, MapOf)
                holder[name] = {}
                holder = holder[name]
                name, ft = "k", ft.value
            path.append(name)
        holder[name] = {}
        holder = holder[name]
        t = ft
    return SCHEMA.kinds[key], t, path, doc, holder


def _leads_to_object(t: Any) -> bool:
    while isinstance(t, ListOf | MapOf):
        t = t.item if isinstance(t, ListOf) else t.value
    return isinstance(t, ObjectType)


@settings(max_examples=300, deadline=None)
@given(found=object_paths(), data=st.data())
def test_every_field_name_the_schema_has_is_accepted_at_its_path(found: Any, data: Any) -> None:
    root, t, _, doc, holder = found
    if not t.fields:
        return
    name = data.draw(st.sampled_from(sorted(t.fields)))
    holder[name] = minimal_valid(t.fields[name])
    # The decoding alone: the validation rules would ask for the required fields of the
    # otherwise empty objects on the path (their own tests: tests/apis/test_apirules.py).
    assert check_fields(root, doc, with_rules=False) == []


@settings(max_examples=300, deadline=None)
@given(found=object_paths(), name=st.text(min_size=1, max_size=12))
def test_every_other_field_name_is_rejected_with_its_exact_path(found: Any, name: str) -> None:
    root, t, path, doc, holder = found
    if name in t.fields:
        return
    holder[name] = "x"
    problems = check_fields(root, doc)
    assert [p for p, _ in problems] == [(*path, name)]
    assert problems[0][1].startswith(f"unknown field {name!r}")


@settings(max_examples=300, deadline=None)
@given(found=object_paths(), data=st.data())
def test_a_scalar_field_given_a_value_of_another_json_type_is_rejected_at_its_path(
    found: Any, data: Any
) -> None:
    root, t, path, doc, holder = found
    scalars = sorted(f for f, ft in t.fields.items() if isinstance(ft, str) and ft in WRONG_SCALARS)
    if not path:
        scalars = [f for f in scalars if f != "status"]
    if not scalars:
        return
    name = data.draw(st.sampled_from(scalars))
    holder[name] = WRONG_SCALARS[t.fields[name]]
    assert [p for p, _ in check_fields(root, doc)] == [(*path, name)]


# ---- the bundled schema ------------------------------------------------------------------------


def test_every_core_kind_gpucap_reads_is_in_the_schema() -> None:
    core_versions = ("v1", "apps/v1", "batch/v1", "policy/v1")
    wanted = {f"{v}/{k}" for k, (v, _, _) in KINDS.items() if v in core_versions}
    assert wanted == set(SCHEMA.kinds)


def _model_of(annotation: Any) -> Any:
    """The pydantic model inside Optional/list/dict/Annotated, or None."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, dict):
        for arg in reversed(typing.get_args(annotation)):
            found = _model_of(arg)
            if found is not None:
                return found
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _schema_object(t: Any) -> ObjectType | None:
    while isinstance(t, ListOf | MapOf):
        t = t.item if isinstance(t, ListOf) else t.value
    return t if isinstance(t, ObjectType) else None


def test_every_field_gpucap_models_for_a_core_kind_is_a_field_of_the_api() -> None:
    # A field the models read but the API does not have would be rejected before it is read.
    missing: list[str] = []
    seen: set[tuple[type[BaseModel], str]] = set()

    def walk(model: type[BaseModel], obj: ObjectType, where: str) -> None:
        if (model, obj.name) in seen:
            return
        seen.add((model, obj.name))
        for name, info in model.model_fields.items():
            wire = info.alias or name
            if wire not in obj.fields:
                missing.append(f"{where}.{wire} ({obj.name})")
                continue
            sub_model = _model_of(info.annotation)
            sub_obj = _schema_object(obj.fields[wire])
            if sub_model is not None and sub_obj is not None:
                walk(sub_model, sub_obj, f"{where}.{wire}")

    for key, root in SCHEMA.kinds.items():
        kind = key.rsplit("/", 1)[1]
        walk(KINDS[kind][1], root, kind)
    assert missing == []


def test_the_schema_says_where_it_comes_from() -> None:
    p = SCHEMA.provenance
    assert p["repository"] == "kubernetes-client/python"
    assert p["path"] == "kubernetes/swagger.json.unprocessed"
    assert len(p["commit"]) == 40
    assert p["kubernetes"] == "1.36"


def build_script() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_kubernetes_schema", ROOT / "scripts" / "build_kubernetes_schema.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(
    not (SOURCE.exists() and ENUM_SOURCE.exists()),
    reason="no copy of the Kubernetes OpenAPI document or of kubernetes/api",
)
def test_the_bundled_schema_is_what_the_build_script_makes_from_the_openapi_document() -> None:
    bundled = ROOT / "src" / "gpucap" / "data" / "kubernetes" / "schema.json"
    text = build_script().build(SOURCE, enum_source=ENUM_SOURCE)
    assert text == bundled.read_text(encoding="utf-8")


def test_the_bundled_schema_is_sorted_one_definition_per_line() -> None:
    text = (ROOT / "src" / "gpucap" / "data" / "kubernetes" / "schema.json").read_text("utf-8")
    lines = text.splitlines()[2:-1]
    names = [json.loads("{" + line.rstrip(",") + "}").popitem()[0] for line in lines]
    assert names == sorted(names)
    assert len(names) == len(json.loads(text)["types"])


def synthetic_document() -> dict[str, Any]:
    """The nine kinds, each an object whose `spec` is the same small struct."""
    definitions: dict[str, Any] = {
        "io.k8s.api.core.v1.Spec": {
            "properties": {
                "port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
                "size": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
                "limits": {
                    "type": "object",
                    "additionalProperties": {
                        "$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"
                    },
                },
                "count": {"type": "integer", "format": "int32"},
                "seconds": {"type": "integer", "format": "int64"},
                "args": {"type": "array", "items": {"type": "string"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "children": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Child"},
                },
                "since": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
            }
        },
        "io.k8s.api.core.v1.Child": {"properties": {"on": {"type": "boolean"}}},
        "io.k8s.api.core.v1.Unreached": {"properties": {"x": {"type": "string"}}},
    }
    for api_version, kind in build_script().KINDS:
        group, _, version = api_version.rpartition("/")
        definitions[f"io.k8s.api.x.{version}.{kind}"] = {
            "properties": {"spec": {"$ref": "#/definitions/io.k8s.api.core.v1.Spec"}},
            "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": kind}],
        }
    return definitions


def test_the_build_script_keeps_field_types_and_only_the_reachable_definitions() -> None:
    kinds, types_ = build_script().extract(synthetic_document())
    assert kinds["v1/Pod"] == "x.v1.Pod"
    assert kinds["policy/v1/PodDisruptionBudget"] == "x.v1.PodDisruptionBudget"
    assert types_["core.v1.Spec"] == {
        "port": "int-or-string",
        "size": "quantity",
        "limits": "{}quantity",
        "count": "int32",
        "seconds": "int64",
        "args": "[]string",
        "raw": "any",
        "children": "[]core.v1.Child",
        "since": "time",
    }
    assert types_["core.v1.Child"] == {"on": "boolean"}
    assert "core.v1.Unreached" not in types_


def test_the_build_script_refuses_a_document_that_is_not_the_pinned_one(tmp_path: Path) -> None:
    other = tmp_path / "swagger.json"
    other.write_text(json.dumps({"definitions": synthetic_document()}))
    with pytest.raises(SystemExit, match="is not the pinned document's"):
        build_script().build(other)


# ---- pod templates embedded in operators' objects ------------------------------------------------


def template(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray", **container}]}}


def test_a_misspelt_field_in_a_ray_worker_group_template_is_reported_with_its_path() -> None:
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "r"},
        "spec": {
            "headGroupSpec": {"template": template()},
            "workerGroupSpecs": [
                {"groupName": "cpu", "template": template()},
                {"groupName": "gpu", "template": template(imagePullPolicyy="Always")},
            ],
        },
    }
    assert check_embedded(SCHEMA, "ray.io/v1", "RayCluster", ray) == [
        (
            (
                "spec",
                "workerGroupSpecs",
                1,
                "template",
                "spec",
                "containers",
                0,
                "imagePullPolicyy",
            ),
            "unknown field 'imagePullPolicyy' (did you mean 'imagePullPolicy'?)",
        )
    ]


def test_ray_service_ray_job_lws_and_jobset_templates_are_checked_where_their_crds_embed_them() -> (
    None
):
    bad = template(securityContext={"allowPrivilegedEscalation": False})
    cases = [
        (
            "RayService",
            "ray.io/v1",
            {"rayClusterConfig": {"headGroupSpec": {"template": bad}}},
            ("spec", "rayClusterConfig", "headGroupSpec", "template"),
        ),
        (
            "RayJob",
            "ray.io/v1",
            {"submitterPodTemplate": bad},
            ("spec", "submitterPodTemplate"),
        ),
        (
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io/v1",
            {"leaderWorkerTemplate": {"workerTemplate": bad}},
            ("spec", "leaderWorkerTemplate", "workerTemplate"),
        ),
        (
            "JobSet",
            "jobset.x-k8s.io/v1alpha2",
            {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": bad}}}]},
            ("spec", "replicatedJobs", 0, "template", "spec", "template"),
        ),
    ]
    for kind, api_version, spec, base in cases:
        doc = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec}
        paths = [p for p, _ in check_embedded(SCHEMA, api_version, kind, doc)]
        assert paths == [
            (*base, "spec", "containers", 0, "securityContext", "allowPrivilegedEscalation")
        ], kind


def test_an_operator_object_without_templates_or_another_kind_has_nothing_embedded_to_check() -> (
    None
):
    assert check_embedded(SCHEMA, "ray.io/v1", "RayCluster", {"spec": {}}) == []
    assert check_embedded(SCHEMA, "v1", "Service", {"spec": {"portz": []}}) == []


GO_TYPES = """
// RestartPolicy describes how the container should be restarted.
// +enum
type RestartPolicy string

const (
	RestartPolicyAlways    RestartPolicy = "Always"
	RestartPolicyNever     RestartPolicy = "Never"
)

// Not an enum: no marker.
type Phase string

const PhaseUp Phase = "Up"

type Spec struct {
	// comment
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
	Policies []RestartPolicy `json:"policies"`
	Pointer *RestartPolicy `json:"pointer,omitempty"`
	Phase Phase `json:"phase"`
	Name string `json:"name"`
}
"""


def test_the_build_script_reads_enum_values_from_the_go_enum_types() -> None:
    enums = build_script().extract_enums({"core.v1": GO_TYPES})
    assert enums == {
        "core.v1.Spec": {
            "restartPolicy": ["Always", "Never"],
            "policies": ["Always", "Never"],
            "pointer": ["Always", "Never"],
        }
    }


def test_the_build_script_writes_enum_values_into_string_fields_only() -> None:
    types_ = {"core.v1.Spec": {"restartPolicy": "string", "policies": "[]string", "n": "int32"}}
    enums = {"core.v1.Spec": {"restartPolicy": ["A", "B"], "policies": ["A"], "n": ["1"]}}
    build_script().apply_enums(types_, enums)
    assert types_ == {
        "core.v1.Spec": {"restartPolicy": "enum:A|B", "policies": "[]enum:A", "n": "int32"}
    }


def test_the_bundled_schema_knows_the_enum_values_of_the_api() -> None:
    spec = SCHEMA.types["core.v1.PodSpec"]
    restart = spec.fields["restartPolicy"]
    assert isinstance(restart, EnumOf)
    assert restart.values == {"Always", "OnFailure", "Never"}
    toleration = SCHEMA.types["core.v1.Toleration"].fields["operator"]
    assert isinstance(toleration, EnumOf)
    assert toleration.values == {"Equal", "Exists", "Lt", "Gt"}
    assert "kubernetes/api v0.36.3" in SCHEMA.provenance["enums"]
