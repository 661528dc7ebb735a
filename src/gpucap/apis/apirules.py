"""Kubernetes API validation rules beyond field names and JSON types, keyed by API type.

The API server decodes a manifest (unknown fields, wrong JSON types: `apis/schema.py`) and then
validates it: names are DNS names, label keys and values have their syntax and length, ports are
port numbers, counts are not negative, selector operators take the values they need. Those rules
live in kubernetes/kubernetes `pkg/apis/core/validation/validation.go`, `pkg/apis/apps/...`,
`pkg/apis/batch/...`, `pkg/apis/policy/validation/validation.go` and apimachinery's
`pkg/api/validation` and `pkg/util/validation` (sources and commits: docs/design/apis.md,
"Kubernetes API rules"). They are written here once per API type (`core.v1.Container`,
`meta.v1.LabelSelector`) so the schema walk applies each to every object of that type wherever
it appears: in a Pod, a Deployment's template, a RayCluster's worker group. A rule reads the
document as loaded (after the schema walk's normalization) and must tolerate values of the wrong
type, which the walk has already reported. The walk judges an object after its fields, so a rule
of a workload's spec runs after those of its pod template (the StatefulSet rule relies on it).

Besides validation proper, the checks the API server makes when it *creates a pod* (image
whitespace, matchLabelKeys after the label merge of `pkg/registry/core/pod/strategy.go`) are
applied to pods and to pod templates alike: a template the API server accepts still makes no
pod, which for a capacity plan is the same as being refused.

Enum values are not here: they come from the Go types (`+enum`) through the bundled schema.

Called by `apis/schema.py` (`rule_for`, once per object of a type with rules) and by
`apis/serde.py` (`object_meta_problems`: names of every kind, and labels and annotations of the
kinds outside the schema). Every rule is linear in the size of what it reads; the label syntax
checks are cached, since a List of pods repeats the same few labels on every pod.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, TypeAlias

from gpucap.apis.errors import FieldPath, closest_name
from gpucap.apis.goparse import atoi
from gpucap.apis.labels import label_value_problem, qualified_name_problem

__all__ = [
    "Out",
    "configmap_key_problem",
    "dns1123_label_problem",
    "dns1123_subdomain_problem",
    "missing_volume",
    "object_meta_problems",
    "rule_for",
    "volume_names",
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
    env = c.get("env")
    if type(env) is list:
        # core `ValidateEnv`: a variable's name is required (its syntax depends on the
        # RelaxedEnvironmentVariableValidation gate, so only emptiness is judged here).
        for i, var in enumerate(env):
            if type(var) is dict and var.get("name", "") == "":
                out.append(((*path, "env", i, "name"), "an environment variable needs a name"))
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
    _init_restart_policies(spec.get("initContainers"), (*path, "initContainers"), out)
    _volumes(spec, path, out)
    _volume_mounts(spec, path, out, volume_names(spec))
    priority_class = spec.get("priorityClassName")
    if type(priority_class) is str and priority_class:
        problem = dns1123_subdomain_problem(priority_class)
        if problem:
            out.append(((*path, "priorityClassName"), f"invalid priorityClassName: {problem}"))
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


def _init_restart_policies(containers: Any, path: FieldPath, out: Out) -> None:
    """core `validateInitContainerRestartPolicy`: an init container's restartPolicy, when given,
    is `Always` (a sidecar). Any other value, `always` included, is refused; `Never` and
    `OnFailure` only with the alpha ContainerRestartRules gate (off by default, and not one EKS
    turns on)."""
    if type(containers) is not list:
        return
    for i, c in enumerate(containers):
        policy = c.get("restartPolicy") if type(c) is dict else None
        if type(policy) is str and policy != "Always":
            out.append(
                (
                    (*path, i, "restartPolicy"),
                    f"{_show(policy)} is not supported for an init container: only 'Always' "
                    "(a sidecar); 'Never' and 'OnFailure' need the alpha ContainerRestartRules "
                    "feature gate",
                )
            )


# ---- volumes and their mounts (core ValidateVolumes, ValidateVolumeMounts) --------------------
def _volume_name_problem(name: str, seen: set[str]) -> str | None:
    if not name:
        return "a volume needs a name"
    problem = dns1123_label_problem(name)
    if problem:
        return f"invalid volume name: {problem}"
    if name in seen:
        return f"duplicate volume name {name!r}"
    return None


def _named_volumes(spec: dict[str, Any]) -> Iterator[tuple[int, str]]:
    volumes = spec.get("volumes")
    if type(volumes) is list:
        for i, v in enumerate(volumes):
            name = v.get("name", "") if type(v) is dict else None
            if type(name) is str:
                yield i, name


def volume_names(spec: dict[str, Any]) -> set[str]:
    """The names a volume mount of this pod spec may name: those of its volumes without a name
    error (the API server keeps only those for the mounts' check)."""
    names: set[str] = set()
    for _, name in _named_volumes(spec):
        if _volume_name_problem(name, names) is None:
            names.add(name)
    return names


def _volumes(spec: dict[str, Any], path: FieldPath, out: Out) -> None:
    """Each volume's name is a DNS label, and no two volumes of a pod share one."""
    seen: set[str] = set()
    for i, name in _named_volumes(spec):
        problem = _volume_name_problem(name, seen)
        if problem:
            out.append(((*path, "volumes", i, "name"), problem))
        else:
            seen.add(name)


def _mounts(spec: dict[str, Any]) -> Iterator[tuple[str, int, int, dict[str, Any]]]:
    """(container list, container index, mount index, mount) of every volume mount."""
    for field in _CONTAINER_LISTS:
        containers = spec.get(field)
        if type(containers) is not list:
            continue
        for i, c in enumerate(containers):
            mounts = c.get("volumeMounts") if type(c) is dict else None
            if type(mounts) is list:
                for j, mount in enumerate(mounts):
                    if type(mount) is dict:
                        yield field, i, j, mount


def missing_volume(path: FieldPath, name: str, known: set[str]) -> tuple[FieldPath, str]:
    """The error of a mount at `path` naming `name`, which is not one of the `known` volumes."""
    hint = closest_name(name, sorted(known))
    return (
        (*path, "name"),
        f"no volume {_show(name)} in the pod's volumes"
        + (f" (did you mean {hint!r}?)" if hint else ""),
    )


def _volume_mounts(spec: dict[str, Any], path: FieldPath, out: Out, known: set[str]) -> None:
    """Each mount names a volume of the pod, and a container mounts at most once at a path."""
    paths: dict[tuple[str, int], dict[str, int]] = {}
    for field, i, j, mount in _mounts(spec):
        mp: FieldPath = (*path, field, i, "volumeMounts", j)
        name = mount.get("name", "")
        if type(name) is str:
            if not name:
                out.append(((*mp, "name"), "a volume mount needs the name of a volume"))
            elif name not in known:
                out.append(missing_volume(mp, name, known))
        mount_path = mount.get("mountPath", "")
        if type(mount_path) is not str:
            continue
        if not mount_path:
            out.append(((*mp, "mountPath"), "a volume mount needs a mountPath"))
            continue
        seen = paths.setdefault((field, i), {})
        if mount_path in seen:
            out.append(
                (
                    (*mp, "mountPath"),
                    f"{_show(mount_path)} is mounted already by volumeMounts[{seen[mount_path]}] "
                    "of this container (mount paths must be unique)",
                )
            )
        else:
            seen[mount_path] = j


# ---- what the API server checks when it creates a pod ------------------------------------------
# Go's `strings.TrimSpace` (`unicode.IsSpace`): Python's `str.strip()` also strips the
# separators U+001C-U+001F, which Go keeps.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _pod(pod: dict[str, Any], path: FieldPath, out: Out) -> None:
    _pod_creation(pod, path, out, template=False)


def _pod_template(template: dict[str, Any], path: FieldPath, out: Out) -> None:
    _pod_creation(template, path, out, template=True)


def _pod_creation(obj: dict[str, Any], path: FieldPath, out: Out, *, template: bool) -> None:
    """What core `ValidatePodCreate` checks of a pod beyond its spec: images without surrounding
    whitespace (`validateContainersOnlyForPod`), and matchLabelKeys once the pod's labels are
    merged into the selectors (`pkg/registry/core/pod/strategy.go` mutatePodAffinity and
    mutateTopologySpreadConstraints, then `validateMatchLabelKeys*`). A workload's template is
    not checked for these by the API server, but each pod made from it is, and refused: for
    gpucap such a workload runs no pod, an error too."""
    spec = obj.get("spec")
    if type(spec) is not dict:
        return
    meta = obj.get("metadata")
    labels = meta.get("labels") if type(meta) is dict else None
    pod_labels = labels if type(labels) is dict else {}
    spec_path: FieldPath = (*path, "spec")
    why = "; the API server refuses each pod this template makes" if template else ""
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if type(containers) is not list:
            continue
        for i, c in enumerate(containers):
            image = c.get("image") if type(c) is dict else None
            if type(image) is str and image != image.strip(_GO_SPACE):
                out.append(
                    (
                        (*spec_path, field, i, "image"),
                        f"{_show(image)} has leading or trailing whitespace{why}",
                    )
                )
    for term_path, term, affinity in _label_key_terms(spec, spec_path):
        _merged_label_keys(term, term_path, pod_labels, out, affinity=affinity, why=why)


def _label_key_terms(
    spec: dict[str, Any], path: FieldPath
) -> Iterator[tuple[FieldPath, dict[str, Any], bool]]:
    """(path, term, is a pod (anti-)affinity term) of every topology spread constraint and pod
    (anti-)affinity term of a pod spec."""
    constraints = spec.get("topologySpreadConstraints")
    if type(constraints) is list:
        for i, tsc in enumerate(constraints):
            if type(tsc) is dict:
                yield (*path, "topologySpreadConstraints", i), tsc, False
    affinity = spec.get("affinity")
    if type(affinity) is not dict:
        return
    for kind in ("podAffinity", "podAntiAffinity"):
        block = affinity.get(kind)
        if type(block) is not dict:
            continue
        base: FieldPath = (*path, "affinity", kind)
        required = block.get("requiredDuringSchedulingIgnoredDuringExecution")
        if type(required) is list:
            for i, term in enumerate(required):
                if type(term) is dict:
                    yield (*base, "requiredDuringSchedulingIgnoredDuringExecution", i), term, True
        preferred = block.get("preferredDuringSchedulingIgnoredDuringExecution")
        if type(preferred) is list:
            for i, weighted in enumerate(preferred):
                term = weighted.get("podAffinityTerm") if type(weighted) is dict else None
                if type(term) is dict:
                    tp: FieldPath = (
                        *base,
                        "preferredDuringSchedulingIgnoredDuringExecution",
                        i,
                        "podAffinityTerm",
                    )
                    yield tp, term, True


def _merged_label_keys(
    term: dict[str, Any],
    path: FieldPath,
    labels: dict[str, Any],
    out: Out,
    *,
    affinity: bool,
    why: str,
) -> None:
    """matchLabelKeys need a labelSelector; since Kubernetes 1.33 the API server appends
    `key In (the pod's value)` to the selector for each of them the pod has as a label (for
    (anti-)affinity terms also `key NotIn (value)` for mismatchLabelKeys), then refuses a
    matchLabelKeys key the merged selector names twice: a key written in the selector as well."""
    keys = term.get("matchLabelKeys")
    mismatch = term.get("mismatchLabelKeys") if affinity else None
    keys = [k for k in keys if type(k) is str] if type(keys) is list else []
    mismatch = [k for k in mismatch if type(k) is str] if type(mismatch) is list else []
    if not keys and not mismatch:
        return
    selector = term.get("labelSelector")
    if type(selector) is not dict:
        field = "matchLabelKeys" if keys else "mismatchLabelKeys"
        out.append(((*path, field), f"must not be set without a labelSelector{why}"))
        return
    counts: Counter[Any] = Counter()
    match_labels = selector.get("matchLabels")
    if type(match_labels) is dict:
        counts.update(list(match_labels))
    expressions = selector.get("matchExpressions")
    if type(expressions) is list:
        counts.update(e.get("key") for e in expressions if type(e) is dict)
    counts.update(k for k in keys if k in labels)
    counts.update(k for k in mismatch if k in labels)
    reported: set[str] = set()
    for i, key in enumerate(keys):
        if key in reported:
            continue
        if counts[key] >= 2:
            reported.add(key)
            out.append(
                (
                    (*path, "matchLabelKeys", i),
                    f"{_show(key)} is in both matchLabelKeys and the labelSelector once the "
                    f"pod's labels are merged in{why}",
                )
            )
        if key in mismatch:
            reported.add(key)
            out.append(
                (
                    (*path, "matchLabelKeys", i),
                    f"{_show(key)} is in both matchLabelKeys and mismatchLabelKeys{why}",
                )
            )


# ---- workloads (apps and batch validation) ------------------------------------------------------
def _template_spec(spec: dict[str, Any]) -> dict[str, Any] | None:
    template = spec.get("template")
    inner = template.get("spec") if type(template) is dict else None
    return inner if type(inner) is dict else None


def _replicated_template(kind: str) -> Rule:
    """apps `ValidatePodTemplateSpecForReplicaSet`, `ValidateDaemonSetSpec`,
    `ValidateStatefulSetSpec`: the pods of a controller that keeps them running restart
    `Always` (an empty restartPolicy is defaulted to it) and have no activeDeadlineSeconds."""

    def check(spec: dict[str, Any], path: FieldPath, out: Out) -> None:
        inner = _template_spec(spec)
        if inner is None:
            return
        tp: FieldPath = (*path, "template", "spec")
        policy = inner.get("restartPolicy")
        if type(policy) is str and policy not in ("", "Always"):
            out.append(
                (
                    (*tp, "restartPolicy"),
                    f"{_show(policy)} is not supported in a {kind}'s pod template: only 'Always'",
                )
            )
        if inner.get("activeDeadlineSeconds") is not None:
            out.append(
                (
                    (*tp, "activeDeadlineSeconds"),
                    f"may not be set in a {kind}'s pod template (its pods run until replaced)",
                )
            )

    return check


def _statefulset_spec(spec: dict[str, Any], path: FieldPath, out: Out) -> None:
    """The StatefulSet controller adds a volume per volumeClaimTemplate to each pod it makes, so
    a template's mount may name a claim template: the pod spec's check (which ran first, the walk
    judging a type after its fields) reported those mounts as naming no volume; they are taken
    back here."""
    inner = _template_spec(spec)
    claims = spec.get("volumeClaimTemplates")
    if inner is None or type(claims) is not list:
        return
    names = set()
    for claim in claims:
        meta = claim.get("metadata") if type(claim) is dict else None
        name = meta.get("name") if type(meta) is dict else None
        if type(name) is str:
            names.add(name)
    known = volume_names(inner)
    tp: FieldPath = (*path, "template", "spec")
    for field, i, j, mount in _mounts(inner):
        name = mount.get("name")
        if type(name) is str and name in names and name not in known:
            finding = missing_volume((*tp, field, i, "volumeMounts", j), name, known)
            if finding in out:
                out.remove(finding)


def _int_or_percent(value: Any, path: FieldPath, out: Out) -> int:
    """apps `ValidatePositiveIntOrPercent` of an int-or-string, and its value as
    `getIntOrPercentValue` reads it (a string that is no percentage reads as strconv.Atoi
    does, 0 when it fails)."""
    if type(value) is int:
        if value < 0:
            out.append((path, f"{value} must be greater than or equal to 0"))
        return value
    if type(value) is not str:
        return 0
    m = re.fullmatch(r"([0-9]+)%", value)
    if m is None:
        out.append((path, f"{_show(value)} must be an integer or a percentage (e.g. '25%')"))
        return atoi(value) or 0
    return int(m.group(1))


def _deployment_strategy(strategy: dict[str, Any], path: FieldPath, out: Out) -> None:
    """apps `ValidateDeploymentStrategy` after the defaults: an empty type is RollingUpdate,
    whose unset maxUnavailable and maxSurge are 25%. Recreate takes no rollingUpdate; a rolling
    update with both at 0 could never replace a pod."""
    kind = strategy.get("type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate")
    rp: FieldPath = (*path, "rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            out.append((rp, "may not be set when the strategy type is 'Recreate'"))
        return
    if kind != "RollingUpdate" or (rolling is not None and type(rolling) is not dict):
        return  # the enum and the type are the schema walk's
    fields = rolling if type(rolling) is dict else {}
    unavailable = _int_or_percent(fields.get("maxUnavailable", "25%"), (*rp, "maxUnavailable"), out)
    surge = _int_or_percent(fields.get("maxSurge", "25%"), (*rp, "maxSurge"), out)
    if unavailable == 0 and surge == 0:
        out.append(
            (
                (*rp, "maxUnavailable"),
                "may not be 0 when maxSurge is 0 (a rollout could never replace a pod)",
            )
        )
    value = fields.get("maxUnavailable")
    if type(value) is str and re.fullmatch(r"[0-9]+%", value) and unavailable > 100:
        out.append(((*rp, "maxUnavailable"), f"{value} must not be greater than 100%"))


_MAX_INDEXED_PARALLELISM = 100_000  # batch validation's maxParallelismForIndexedJob


def _job(job: dict[str, Any], path: FieldPath, out: Out) -> None:
    """batch `validateJobSpec` after `SetDefaults_Job` (completions and parallelism both unset
    become 1; parallelism alone unset becomes 1): an Indexed Job needs completions, and at most
    100,000 parallel pods."""
    spec = job.get("spec")
    if type(spec) is not dict or spec.get("completionMode") != "Indexed":
        return
    parallelism = spec.get("parallelism")
    if spec.get("completions") is None and parallelism is not None:
        out.append(
            (
                (*path, "spec", "completions"),
                "an Indexed Job needs completions (only a Job without parallelism either is "
                "defaulted to 1)",
            )
        )
    if type(parallelism) is int and parallelism > _MAX_INDEXED_PARALLELISM:
        out.append(
            (
                (*path, "spec", "parallelism"),
                f"{parallelism} must be at most {_MAX_INDEXED_PARALLELISM:,} for an Indexed Job",
            )
        )


# ---- ConfigMap (core ValidateConfigMap, apimachinery IsConfigMapKey) ---------------------------
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")


@lru_cache(maxsize=4096)
def configmap_key_problem(key: str) -> str | None:
    """Why `key` cannot be a ConfigMap (or Secret) key, or None: at most 253 characters of
    letters, digits, '-', '_' and '.', and not '.', '..' or starting with '..' (a key is a file
    name when the ConfigMap is mounted)."""
    if len(key.encode("utf-8")) > 253:
        return "must be no more than 253 characters"
    if not _CONFIG_KEY.fullmatch(key):
        return "must consist of letters, digits, '-', '_' or '.'"
    if key in (".", ".."):
        return f"must not be {key!r}"
    if key.startswith(".."):
        return "must not start with '..'"
    return None


def _configmap(cm: dict[str, Any], path: FieldPath, out: Out) -> None:
    data, binary = cm.get("data"), cm.get("binaryData")
    for field, entries in (("data", data), ("binaryData", binary)):
        if type(entries) is not dict:
            continue
        for key in entries:
            problem = configmap_key_problem(key) if type(key) is str else None
            if problem:
                out.append(((*path, field, key), f"invalid key {_show(key)}: {problem}"))
    if type(data) is dict and type(binary) is dict:
        for key in data:
            if key in binary:
                out.append(((*path, "data", key), f"{_show(key)} is a key of binaryData too"))


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
    "core.v1.Pod": (_pod,),
    "core.v1.PodTemplateSpec": (_pod_template,),
    "core.v1.ConfigMap": (_configmap,),
    "apps.v1.DeploymentSpec": (_replicated_template("Deployment"),),
    "apps.v1.ReplicaSetSpec": (_replicated_template("ReplicaSet"),),
    "apps.v1.DaemonSetSpec": (_replicated_template("DaemonSet"),),
    "apps.v1.StatefulSetSpec": (_replicated_template("StatefulSet"), _statefulset_spec),
    "apps.v1.DeploymentStrategy": (_deployment_strategy,),
    "batch.v1.Job": (_job,),
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
