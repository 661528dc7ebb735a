"""Kubernetes API validation rules beyond field names and JSON types, keyed by API type.

The API server decodes a manifest (unknown fields, wrong JSON types: `apis/schema.py`) and then
validates it: names are DNS names, label keys and values have their syntax and length, ports are
port numbers, counts are not negative, selector operators take the values they need. Those rules
live in kubernetes/kubernetes `pkg/apis/core/validation/validation.go`, `pkg/apis/apps/...`,
`pkg/apis/batch/...`, `pkg/apis/policy/validation/validation.go` and apimachinery's
`pkg/api/validation` and `pkg/util/validation` (sources and commits: docs/design.md, "Kubernetes
API rules"). They are written here once per API type (`core.v1.Container`, `meta.v1.LabelSelector`)
so the schema walk applies each to every object of that type wherever it appears: in a Pod, a
Deployment's template, a RayCluster's worker group. A rule reads the document as loaded (after
the schema walk's normalization) and must tolerate values of the wrong type, which the walk has
already reported.

Enum values are not here: they come from the Go types (`+enum`) through the bundled schema.

Called by `apis/schema.py` (`rule_for`, once per object of a type with rules) and by
`apis/serde.py` (`object_meta_problems`: names of every kind, and labels and annotations of the
kinds outside the schema). Every rule is linear in the size of what it reads; the label syntax
checks are cached, since a List of pods repeats the same few labels on every pod.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeAlias

from gpucap.apis.errors import FieldPath
from gpucap.apis.labels import label_value_problem, qualified_name_problem

__all__ = [
    "Out",
    "dns1123_label_problem",
    "dns1123_subdomain_problem",
    "object_meta_problems",
    "rule_for",
]

Out: TypeAlias = list[tuple[FieldPath, str]]
Rule: TypeAlias = Callable[[dict[str, Any], FieldPath, Out], None]

_INT32_MAX = 2**31 - 1
# apimachinery `ValidateAnnotationsSize`: keys and values together.
TOTAL_ANNOTATION_SIZE = 256 * 1024

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_IANA_SVC_NAME = re.compile(r"[-a-z0-9]+")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


# ---- names (apimachinery pkg/util/validation) ------------------------------------------------
@lru_cache(maxsize=8192)
def dns1123_label_problem(name: str) -> str | None:
    """Why `name` is not an RFC 1123 label (63 characters of [a-z0-9-], alphanumeric at both
    ends), or None. Namespaces and container names are labels."""
    if len(name) > 63:
        return f"{_show(name)} must be no more than 63 characters"
    if not _DNS1123_LABEL.fullmatch(name):
        return (
            f"{_show(name)} must be a lowercase RFC 1123 label: lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


@lru_cache(maxsize=8192)
def dns1123_subdomain_problem(name: str) -> str | None:
    """Why `name` is not an RFC 1123 subdomain (253 characters; labels joined by '.'), or None.
    Most object names are subdomains."""
    if len(name) > 253:
        return f"{_show(name)} must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        return (
            f"{_show(name)} must be a lowercase RFC 1123 subdomain: lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit"
        )
    return None


def _show(text: str) -> str:
    # Short and escaped: the value may be long or hold control characters.
    return repr(text if len(text) <= 70 else text[:67] + "...")


@lru_cache(maxsize=4096)
def _iana_svc_name_problem(name: str) -> str | None:
    """apimachinery `IsValidPortName`: a port name (IANA service name)."""
    if len(name) > 15:
        return "must be no more than 15 characters"
    if not _IANA_SVC_NAME.fullmatch(name):
        return "must contain only lowercase letters, digits and '-'"
    if name.startswith("-") or name.endswith("-"):
        return "must not begin or end with a hyphen"
    if "--" in name:
        return "must not contain consecutive hyphens"
    if not any(c.isalpha() for c in name):
        return "must contain at least one letter"
    return None


# The name rule of each kind's `ValidateObjectMeta` call; every other kind gpucap reads (custom
# resources included: apiextensions validates their names as subdomains) uses a subdomain.
# StatefulSet: the apps validation gpucap read uses a subdomain (newer releases may narrow it
# to a label; the lenient rule never rejects what the API accepts).
_NAME_RULES: dict[str, Callable[[str], str | None]] = {"Namespace": dns1123_label_problem}


def object_meta_problems(kind: str, meta: dict[str, Any], *, labels: bool) -> Out:
    """The API server's `ValidateObjectMeta` for an object of `kind`: its name (or
    `generateName`, trailing '-' allowed), its namespace (a label), and, when `labels` (kinds
    the schema walk does not cover), its labels and annotations."""
    out: Out = []
    rule = _NAME_RULES.get(kind, dns1123_subdomain_problem)
    name = meta.get("name")
    if type(name) is str and name:
        problem = rule(name)
        if problem:
            out.append((("metadata", "name"), f"invalid name: {problem}"))
    generate = meta.get("generateName")
    if type(generate) is str and generate:
        # apimachinery `MaskTrailingDash`: a prefix may end in '-'.
        masked = generate[:-1] + "a" if len(generate) > 1 and generate.endswith("-") else generate
        problem = rule(masked)
        if problem:
            out.append((("metadata", "generateName"), f"invalid name prefix: {problem}"))
    namespace = meta.get("namespace")
    if type(namespace) is str and namespace:
        problem = dns1123_label_problem(namespace)
        if problem:
            out.append((("metadata", "namespace"), f"invalid namespace: {problem}"))
    if labels:
        _object_meta(meta, ("metadata",), out)
    return out


# ---- labels, annotations, selectors (apimachinery pkg/apis/meta/v1/validation) ---------------
@lru_cache(maxsize=8192)
def _label_key_problem(key: str) -> str | None:
    problem = qualified_name_problem(key)
    return None if problem is None else f"invalid label key {_show(key)}: {problem}"


@lru_cache(maxsize=8192)
def _label_value_problem(value: str) -> str | None:
    problem = label_value_problem(value)
    return None if problem is None else f"invalid label value {_show(value)}: {problem}"


def _labels(labels: dict[str, Any], path: FieldPath, out: Out) -> None:
    for key, value in labels.items():
        problem = _label_key_problem(key) if type(key) is str else None
        if problem:
            out.append(((*path, key), problem))
        problem = _label_value_problem(value) if type(value) is str else None
        if problem:
            out.append(((*path, key), problem))


@lru_cache(maxsize=8192)
def _annotation_key_problem(key: str) -> str | None:
    # `ValidateAnnotations` checks the key in lower case.
    problem = qualified_name_problem(key.lower())
    return None if problem is None else f"invalid annotation key {_show(key)}: {problem}"


def _annotations(annotations: dict[str, Any], path: FieldPath, out: Out) -> None:
    size = 0
    for key, value in annotations.items():
        if type(key) is str:
            problem = _annotation_key_problem(key)
            if problem:
                out.append(((*path, key), problem))
            size += len(key)
        if type(value) is str:
            size += len(value)
    if size > TOTAL_ANNOTATION_SIZE:
        out.append((path, f"annotations are {size} bytes; the limit is {TOTAL_ANNOTATION_SIZE}"))


def _object_meta(meta: dict[str, Any], path: FieldPath, out: Out) -> None:
    labels = meta.get("labels")
    if type(labels) is dict:
        _labels(labels, (*path, "labels"), out)
    annotations = meta.get("annotations")
    if type(annotations) is dict:
        _annotations(annotations, (*path, "annotations"), out)


def _label_selector(sel: dict[str, Any], path: FieldPath, out: Out) -> None:
    match = sel.get("matchLabels")
    if type(match) is dict:
        _labels(match, (*path, "matchLabels"), out)


def _label_selector_requirement(req: dict[str, Any], path: FieldPath, out: Out) -> None:
    key, op, values = req.get("key"), req.get("operator"), req.get("values")
    _qualified(key, (*path, "key"), "key", out)
    count = len(values) if type(values) is list else 0
    if op in ("In", "NotIn") and count == 0:
        out.append(((*path, "values"), f"must be specified when operator is {op!r}"))
    elif op in ("Exists", "DoesNotExist") and count:
        out.append(((*path, "values"), f"may not be specified when operator is {op!r}"))
    elif type(op) is str and op not in _SELECTOR_OPERATORS:
        out.append(
            (
                (*path, "operator"),
                f"{op!r} is not a valid selector operator (In, NotIn, Exists, DoesNotExist)",
            )
        )
    if type(values) is list:
        for i, v in enumerate(values):
            problem = _label_value_problem(v) if type(v) is str else None
            if problem:
                out.append(((*path, "values", i), problem))


def _qualified(key: Any, path: FieldPath, what: str, out: Out) -> None:
    if type(key) is str:
        problem = _qualified_problem(key, what)
        if problem:
            out.append((path, problem))


@lru_cache(maxsize=8192)
def _qualified_problem(key: str, what: str) -> str | None:
    if key == "":
        return f"{what} is required"
    problem = qualified_name_problem(key)
    return None if problem is None else f"{_show(key)} is not a valid {what}: {problem}"


# ---- core/v1 ---------------------------------------------------------------------------------
def _node_selector_requirement(req: dict[str, Any], path: FieldPath, out: Out) -> None:
    # core `ValidateNodeSelectorRequirement`; values are not label values here.
    op, values = req.get("operator"), req.get("values")
    count = len(values) if type(values) is list else 0
    if op in ("In", "NotIn") and count == 0:
        out.append(((*path, "values"), f"must be specified when operator is {op!r}"))
    elif op in ("Exists", "DoesNotExist") and count:
        out.append(((*path, "values"), f"may not be specified when operator is {op!r}"))
    elif op in ("Gt", "Lt") and count != 1:
        out.append(((*path, "values"), f"must be a single value when operator is {op!r}"))
    elif op == "":
        out.append(((*path, "operator"), "operator is required"))


def _node_selector_term(term: dict[str, Any], path: FieldPath, out: Out) -> None:
    exprs = term.get("matchExpressions")
    if type(exprs) is list:
        for i, req in enumerate(exprs):
            if type(req) is dict:
                _qualified(req.get("key"), (*path, "matchExpressions", i, "key"), "label key", out)
    fields = term.get("matchFields")
    if type(fields) is list:
        # core `ValidateNodeFieldSelectorRequirement`: only metadata.name, In/NotIn, one value.
        for i, req in enumerate(fields):
            if type(req) is not dict:
                continue
            p: FieldPath = (*path, "matchFields", i)
            if req.get("key") != "metadata.name":
                out.append(((*p, "key"), f"{req.get('key')!r} is not a valid field selector key"))
            values = req.get("values")
            if req.get("operator") in ("In", "NotIn") and (
                type(values) is not list or len(values) != 1
            ):
                out.append(((*p, "values"), "must be only one value when operator is In or NotIn"))
            elif req.get("operator") not in ("In", "NotIn"):
                out.append(((*p, "operator"), "must be In or NotIn for a field selector"))


def _node_selector(sel: dict[str, Any], path: FieldPath, out: Out) -> None:
    terms = sel.get("nodeSelectorTerms")
    if type(terms) is list and not terms:
        out.append(((*path, "nodeSelectorTerms"), "must have at least one node selector term"))


def _weight(obj: dict[str, Any], path: FieldPath, out: Out) -> None:
    w = obj.get("weight")
    if type(w) is int and not 1 <= w <= 100:
        out.append(((*path, "weight"), f"{w} must be in the range 1-100"))


def _pod_affinity_term(term: dict[str, Any], path: FieldPath, out: Out) -> None:
    key = term.get("topologyKey")
    _qualified("" if key is None else key, (*path, "topologyKey"), "topologyKey", out)
    namespaces = term.get("namespaces")
    if type(namespaces) is list:
        for i, ns in enumerate(namespaces):
            problem = dns1123_label_problem(ns) if type(ns) is str else None
            if problem:
                out.append(((*path, "namespaces", i), f"invalid namespace: {problem}"))
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        keys = term.get(field)
        if type(keys) is list:
            for i, k in enumerate(keys):
                _qualified(k, (*path, field, i), "label key", out)


def _topology_spread_constraint(tsc: dict[str, Any], path: FieldPath, out: Out) -> None:
    # core `validateTopologySpreadConstraints` (per constraint; duplicates: `_pod_spec`).
    skew = tsc.get("maxSkew")
    if type(skew) is int and skew <= 0:
        out.append(((*path, "maxSkew"), f"{skew} must be greater than zero"))
    key = tsc.get("topologyKey")
    _qualified("" if key is None else key, (*path, "topologyKey"), "topologyKey", out)
    when = tsc.get("whenUnsatisfiable")
    if when is None or when == "":
        out.append(((*path, "whenUnsatisfiable"), "whenUnsatisfiable is required"))
    domains = tsc.get("minDomains")
    if type(domains) is int:
        if domains <= 0:
            out.append(((*path, "minDomains"), f"{domains} must be greater than zero"))
        elif when != "DoNotSchedule":
            out.append(
                ((*path, "minDomains"), "can only be used with whenUnsatisfiable: DoNotSchedule")
            )
    keys = tsc.get("matchLabelKeys")
    if type(keys) is list:
        for i, k in enumerate(keys):
            _qualified(k, (*path, "matchLabelKeys", i), "label key", out)


def _container(c: dict[str, Any], path: FieldPath, out: Out) -> None:
    name = c.get("name")
    if type(name) is str:
        problem = dns1123_label_problem(name) if name else "name is required"
        if problem:
            out.append(((*path, "name"), f"invalid container name: {problem}"))
    ports = c.get("ports")
    if type(ports) is list:
        seen: set[str] = set()
        for i, port in enumerate(ports):
            port_name = port.get("name") if type(port) is dict else None
            if type(port_name) is str and port_name:
                if port_name in seen:
                    out.append(((*path, "ports", i, "name"), f"duplicate port name {port_name!r}"))
                seen.add(port_name)


def _container_port(port: dict[str, Any], path: FieldPath, out: Out) -> None:
    number, host = port.get("containerPort"), port.get("hostPort")
    if type(number) is int and not 1 <= number <= 65535:
        out.append(((*path, "containerPort"), f"{number} must be between 1 and 65535, inclusive"))
    if type(host) is int and host != 0 and not 1 <= host <= 65535:
        out.append(((*path, "hostPort"), f"{host} must be between 1 and 65535, inclusive"))
    name = port.get("name")
    if type(name) is str and name:
        problem = _iana_svc_name_problem(name)
        if problem:
            out.append(((*path, "name"), f"invalid port name {_show(name)}: {problem}"))


_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _host_ports(containers: Any, path: FieldPath, out: Out) -> None:
    """core `AccumulateUniqueHostPorts` over a pod's containers: one (hostPort, protocol,
    hostIP) per pod; an unset protocol is TCP."""
    if type(containers) is not list:
        return
    seen: set[tuple[Any, Any, Any]] = set()
    for i, c in enumerate(containers):
        ports = c.get("ports") if type(c) is dict else None
        if type(ports) is not list:
            continue
        for j, port in enumerate(ports):
            host = port.get("hostPort") if type(port) is dict else None
            if type(host) is not int or host == 0:
                continue
            key = (host, port.get("protocol") or "TCP", port.get("hostIP") or "")
            if key in seen:
                out.append(
                    ((*path, i, "ports", j, "hostPort"), f"duplicate hostPort {host}/{key[1]}")
                )
            seen.add(key)


def _pod_spec(spec: dict[str, Any], path: FieldPath, out: Out) -> None:
    # Container names are unique across all three lists (core `validateContainers` et al.).
    seen: set[str] = set()
    for field in _CONTAINER_LISTS:
        containers = spec.get(field)
        if type(containers) is not list:
            continue
        for i, c in enumerate(containers):
            name = c.get("name") if type(c) is dict else None
            if type(name) is str and name:
                if name in seen:
                    out.append(((*path, field, i, "name"), f"duplicate container name {name!r}"))
                seen.add(name)
    _host_ports(spec.get("containers"), (*path, "containers"), out)
    selector = spec.get("nodeSelector")
    if type(selector) is dict:
        _labels(selector, (*path, "nodeSelector"), out)
    deadline = spec.get("activeDeadlineSeconds")
    if type(deadline) is int and not 1 <= deadline <= _INT32_MAX:
        out.append(
            (
                (*path, "activeDeadlineSeconds"),
                f"{deadline} must be between 1 and {_INT32_MAX}, inclusive",
            )
        )
    for field in ("hostname", "subdomain"):
        value = spec.get(field)
        if type(value) is str and value:
            problem = dns1123_label_problem(value)
            if problem:
                out.append(((*path, field), f"invalid {field}: {problem}"))
    constraints = spec.get("topologySpreadConstraints")
    if type(constraints) is list:
        pairs: set[tuple[Any, Any]] = set()
        for i, tsc in enumerate(constraints):
            if type(tsc) is not dict:
                continue
            pair = (tsc.get("topologyKey"), tsc.get("whenUnsatisfiable"))
            if type(pair[0]) is str and type(pair[1]) is str:
                if pair in pairs:
                    out.append(
                        (
                            (*path, "topologySpreadConstraints", i),
                            f"duplicate constraint for topologyKey {pair[0]!r} and "
                            f"whenUnsatisfiable {pair[1]!r}",
                        )
                    )
                pairs.add(pair)


def _pdb_spec(spec: dict[str, Any], path: FieldPath, out: Out) -> None:
    # policy `ValidatePodDisruptionBudgetSpec`.
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        out.append((path, "minAvailable and maxUnavailable cannot both be set"))
    for field, value in (("minAvailable", low), ("maxUnavailable", high)):
        if type(value) is int and value < 0:
            out.append(((*path, field), f"{value} must be greater than or equal to 0"))
        elif type(value) is str:
            m = re.fullmatch(r"([0-9]+)%", value)
            if m is None:
                out.append(((*path, field), f"{_show(value)} must be an integer or a percentage"))
            elif int(m.group(1)) > 100:
                out.append(((*path, field), f"{value} must not be greater than 100%"))


# ---- integer ranges beyond the wire type ---------------------------------------------------------
# (type, field) -> inclusive minimum: the `ValidateNonnegativeField` and "greater than zero"
# calls of the core, apps and batch validation for the fields gpucap reads.
MINIMUMS: dict[str, dict[str, int]] = {
    "apps.v1.DeploymentSpec": {
        "replicas": 0,
        "minReadySeconds": 0,
        "revisionHistoryLimit": 0,
        "progressDeadlineSeconds": 0,
    },
    "apps.v1.ReplicaSetSpec": {"replicas": 0, "minReadySeconds": 0},
    "apps.v1.StatefulSetSpec": {"replicas": 0, "minReadySeconds": 0, "revisionHistoryLimit": 0},
    "apps.v1.RollingUpdateStatefulSetStrategy": {"partition": 0},
    "apps.v1.StatefulSetOrdinals": {"start": 0},
    "apps.v1.DaemonSetSpec": {"minReadySeconds": 0, "revisionHistoryLimit": 0},
    "batch.v1.JobSpec": {
        "parallelism": 0,
        "completions": 0,
        "activeDeadlineSeconds": 0,
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": 0,
        "backoffLimitPerIndex": 0,
        "maxFailedIndexes": 0,
    },
    "core.v1.Probe": {
        "initialDelaySeconds": 0,
        "timeoutSeconds": 0,
        "periodSeconds": 0,
        "successThreshold": 0,
        "failureThreshold": 0,
    },
}


def _minimums(table: dict[str, int]) -> Rule:
    def check(obj: dict[str, Any], path: FieldPath, out: Out) -> None:
        for field, low in table.items():
            value = obj.get(field)
            if type(value) is int and value < low:
                out.append(((*path, field), f"{value} must be greater than or equal to {low}"))

    return check


_RULES: dict[str, tuple[Rule, ...]] = {
    "meta.v1.ObjectMeta": (_object_meta,),
    "meta.v1.LabelSelector": (_label_selector,),
    "meta.v1.LabelSelectorRequirement": (_label_selector_requirement,),
    "core.v1.NodeSelector": (_node_selector,),
    "core.v1.NodeSelectorTerm": (_node_selector_term,),
    "core.v1.NodeSelectorRequirement": (_node_selector_requirement,),
    "core.v1.PreferredSchedulingTerm": (_weight,),
    "core.v1.WeightedPodAffinityTerm": (_weight,),
    "core.v1.PodAffinityTerm": (_pod_affinity_term,),
    "core.v1.TopologySpreadConstraint": (_topology_spread_constraint,),
    "core.v1.Container": (_container,),
    "core.v1.EphemeralContainer": (_container,),
    "core.v1.ContainerPort": (_container_port,),
    "core.v1.PodSpec": (_pod_spec,),
    "policy.v1.PodDisruptionBudgetSpec": (_pdb_spec,),
}


def rule_for(type_name: str) -> Rule | None:
    """The rules of one API type as one callable (None when it has none). The schema loader
    calls it once per type and keeps the result on the type."""
    rules = list(_RULES.get(type_name, ()))
    if type_name in MINIMUMS:
        rules.append(_minimums(MINIMUMS[type_name]))
    if not rules:
        return None
    if len(rules) == 1:
        return rules[0]

    def all_rules(obj: dict[str, Any], path: FieldPath, out: Out) -> None:
        for rule in rules:
            rule(obj, path, out)

    return all_rules
