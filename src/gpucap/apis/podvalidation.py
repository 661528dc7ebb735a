"""Kubernetes' validation of pods and of the objects that create them, beyond types.

The API server's rules for pods (`pkg/apis/core/validation`: containers, resources, tolerations,
node affinity), the workload controllers' selectors (`apps/validation`), a PodDisruptionBudget,
the device-plugin ConfigMap, and the operators' admission rules (KubeRay's name lengths, the
LeaderWorkerSet and JobSet webhooks). A rule yields a `Violation` with the field path.

Called by `apis/validation.py`'s `validate_object`, which dispatches on the object's type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpucap.apis import labels
from gpucap.apis.core import (
    ConfigMap,
    Container,
    NodeSelectorTerm,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    Toleration,
)
from gpucap.apis.goparse import atoi
from gpucap.apis.gpuoperator import DevicePluginConfigError, device_plugin_configs
from gpucap.apis.jobset import JobSet, job_name
from gpucap.apis.kuberay import RayCluster, RayClusterSpec, RayJob, RayService, cluster_spec_path
from gpucap.apis.leaderworkerset import SUBGROUP_EXCLUSIVE_TOPOLOGY, LeaderWorkerSet
from gpucap.apis.meta import matches_selector
from gpucap.apis.violation import INT32_MAX, Found, Path, Violation
from gpucap.apis.workloads import DaemonSet, Deployment, Job, ReplicaSet, StatefulSet

__all__ = ["POD_CHECKS"]

_NATIVE_RESOURCE_PREFIXES = ("kubernetes.io/", "requests.", "hugepages-")
_NATIVE_RESOURCES = {"cpu", "memory", "ephemeral-storage", "pods", "storage"}


def _pod(pod: Pod) -> Found:
    yield from _pod_spec(pod.spec, ("spec",))


def _pod_spec(spec: PodSpec, base: Path) -> Found:
    if not spec.containers:
        yield Violation((*base, "containers"), "a pod needs at least one container")
    for field, containers in (
        ("containers", spec.containers),
        ("initContainers", spec.init_containers),
    ):
        for i, c in enumerate(containers):
            yield from _container(c, (*base, field, i))
    for i, t in enumerate(spec.tolerations):
        yield from _toleration(t, (*base, "tolerations", i))
    for key, value in spec.node_selector.items():
        problem = labels.label_value_problem(value)
        if problem:
            yield Violation(
                (*base, "nodeSelector", key), f"invalid label value {value!r}: {problem}"
            )
    aff = spec.affinity
    if aff is not None and aff.node_affinity is not None:
        na = aff.node_affinity
        na_base: Path = (*base, "affinity", "nodeAffinity")
        req = na.required_during_scheduling_ignored_during_execution
        if req is not None:
            rp: Path = (*na_base, "requiredDuringSchedulingIgnoredDuringExecution")
            if not req.node_selector_terms:
                yield Violation((*rp, "nodeSelectorTerms"), "must have at least one term")
            for i, term in enumerate(req.node_selector_terms):
                yield from _node_selector_term(term, (*rp, "nodeSelectorTerms", i))
        for i, pref in enumerate(na.preferred_during_scheduling_ignored_during_execution):
            yield from _node_selector_term(
                pref.preference,
                (*na_base, "preferredDuringSchedulingIgnoredDuringExecution", i, "preference"),
            )
    for i, tsc in enumerate(spec.topology_spread_constraints):
        if not tsc.topology_key:
            yield Violation(
                (*base, "topologySpreadConstraints", i, "topologyKey"), "may not be empty"
            )


def _container(c: Container, base: Path) -> Found:
    rp: Path = (*base, "resources")
    requests, limits = c.resources.requests, c.resources.limits
    for field, rl in (("requests", requests), ("limits", limits)):
        for name, q in rl.items():
            if q.nanos < 0:
                yield Violation((*rp, field, name), f"{q} must be greater than or equal to 0")
            # A request defaulted from its limit is reported once, on the limit.
            defaulted = field == "requests" and name in limits and limits[name] == q
            if _is_extended(name) and not q.is_integer() and not defaulted:
                yield Violation((*rp, field, name), f"{q} must be an integer")
    for name, q in requests.items():
        if _is_extended(name):
            if name not in limits:
                # Requests were defaulted from limits, so a request without a limit was written.
                yield Violation(
                    (*rp, "limits", name),
                    f"{name} is an extended resource: it must be set in limits "
                    "(Limit must be set for non overcommitable resources)",
                )
            elif limits[name] != q:
                yield Violation(
                    (*rp, "requests", name),
                    f"must be equal to {name} limit of {limits[name]} "
                    "(extended resources cannot be overcommitted)",
                )
        elif name in limits and q > limits[name]:
            yield Violation(
                (*rp, "requests", name),
                f"{q} must be less than or equal to {name} limit of {limits[name]}",
            )


def _is_extended(name: str) -> bool:
    """Kubernetes `IsExtendedResourceName`: a domain-prefixed name outside kubernetes.io."""
    if name in _NATIVE_RESOURCES or name.startswith(_NATIVE_RESOURCE_PREFIXES):
        return False
    return "/" in name


def _toleration(t: Toleration, base: Path) -> Found:
    if t.operator == "Exists" and t.value:
        yield Violation((*base, "value"), "value must be empty when operator is 'Exists'")
    if not t.key and t.operator != "Exists":
        yield Violation((*base, "operator"), "operator must be 'Exists' when key is empty")
    if t.toleration_seconds is not None and t.effect != "NoExecute":
        yield Violation((*base, "tolerationSeconds"), "only valid with effect 'NoExecute'")
    if t.key:
        problem = labels.qualified_name_problem(t.key)
        if problem:
            yield Violation((*base, "key"), f"{t.key!r} is not a valid taint key: {problem}")


def _node_selector_term(term: NodeSelectorTerm, base: Path) -> Found:
    for i, r in enumerate(term.match_expressions):
        p: Path = (*base, "matchExpressions", i)
        problem = labels.qualified_name_problem(r.key)
        if problem:
            yield Violation((*p, "key"), f"{r.key!r} is not a valid label key: {problem}")
        if r.operator in ("In", "NotIn") and not r.values:
            yield Violation((*p, "values"), f"must be specified when operator is {r.operator!r}")
        if r.operator in ("Exists", "DoesNotExist") and r.values:
            yield Violation((*p, "values"), f"may not be specified when operator is {r.operator!r}")
        if r.operator in ("Gt", "Lt") and (len(r.values) != 1 or not _is_int(r.values[0])):
            yield Violation((*p, "values"), f"operator {r.operator!r} needs a single integer value")


def _is_int(text: str) -> bool:
    # The scheduler reads a Gt/Lt value with strconv.ParseInt(v, 10, 64): ASCII, within int64.
    return atoi(text) is not None


def _replicated(w: Deployment | StatefulSet | ReplicaSet) -> Found:
    yield from _selector_matches_template(w.spec.selector, w.spec.template.metadata.labels)
    yield from _pod_spec(w.spec.template.spec, ("spec", "template", "spec"))


def _job(j: Job) -> Found:
    yield from _pod_spec(j.spec.template.spec, ("spec", "template", "spec"))


def _daemonset(ds: DaemonSet) -> Found:
    yield from _selector_matches_template(ds.spec.selector, ds.spec.template.metadata.labels)
    yield from _pod_spec(ds.spec.template.spec, ("spec", "template", "spec"))


def _selector_matches_template(selector: Any, template_labels: dict[str, str]) -> Found:
    if not selector.match_labels and not selector.match_expressions:
        yield Violation(("spec", "selector"), "empty selector is invalid for a workload")
    elif not matches_selector(selector, template_labels):
        yield Violation(
            ("spec", "template", "metadata", "labels"),
            "`selector` does not match template `labels`",
        )


# ---- operator workloads (KubeRay, LeaderWorkerSet, JobSet) ---------------------------------------
# What the operators reject, read from their sources (see the modules' docstrings): KubeRay's
# utils/validation.go and webhooks, the LWS and JobSet webhooks. A rejected object creates no
# pods in a cluster, so it is an error here.
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_MAX_RAY_CLUSTER_NAME = 53  # KubeRay MaxRayClusterNameLength; RayService/RayJob: 6 fewer


def _dns1035(name: str, path: Path, what: str, max_len: int = 63) -> Found:
    if len(name) > max_len:
        yield Violation(path, f"{what} {name!r} is longer than {max_len} characters")
    elif not _DNS1035.fullmatch(name):
        yield Violation(
            path,
            f"{what} {name!r} must be a DNS-1035 label (lowercase letters, digits and '-', "
            "starting with a letter)",
        )


def _ray(obj: RayCluster | RayService | RayJob) -> Found:
    limit = _MAX_RAY_CLUSTER_NAME - (0 if isinstance(obj, RayCluster) else 6)
    yield from _dns1035(obj.metadata.name, ("metadata", "name"), f"{obj.kind} name", limit)
    if isinstance(obj, RayCluster):
        spec: RayClusterSpec | None = obj.spec
    elif isinstance(obj, RayService):
        spec = obj.spec.ray_cluster_config
    else:
        spec = obj.spec.ray_cluster_spec
        if spec is None and not obj.spec.cluster_selector:
            yield Violation(
                ("spec", "rayClusterSpec"),
                "a RayJob needs rayClusterSpec, or clusterSelector to use an existing RayCluster",
            )
        if obj.spec.submitter_pod_template is not None:
            yield from _pod_spec(
                obj.spec.submitter_pod_template.spec, ("spec", "submitterPodTemplate", "spec")
            )
    if spec is None:
        return
    base = cluster_spec_path(obj)
    head = spec.head_group_spec
    yield from _pod_spec(head.template.spec, (*base, "headGroupSpec", "template", "spec"))
    yield from _ray_resources(
        "Head", head.ray_start_params, head.resources, (*base, "headGroupSpec")
    )
    seen: set[str] = set()
    for i, wg in enumerate(spec.worker_group_specs):
        wp: Path = (*base, "workerGroupSpecs", i)
        if wg.group_name in seen:
            yield Violation(
                (*wp, "groupName"), f"worker group names must be unique: {wg.group_name!r}"
            )
        seen.add(wg.group_name)
        yield from _pod_spec(wg.template.spec, (*wp, "template", "spec"))
        for field, value in (("minReplicas", wg.min_replicas), ("maxReplicas", wg.max_replicas)):
            if value < 0:
                yield Violation(
                    (*wp, field), f"worker group {wg.group_name} has negative {field} {value}"
                )
        if wg.min_replicas > wg.max_replicas:
            yield Violation(
                (*wp, "minReplicas"),
                f"worker group {wg.group_name} has minReplicas {wg.min_replicas} greater than "
                f"maxReplicas {wg.max_replicas}",
            )
        if wg.num_of_hosts < 1:
            yield Violation((*wp, "numOfHosts"), f"{wg.num_of_hosts} must be at least 1")
        yield from _ray_resources(wg.group_name, wg.ray_start_params, wg.resources, wp)


def _ray_resources(
    group: str, start_params: dict[str, str], resources: dict[str, str], path: Path
) -> Found:
    if resources and any(
        start_params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")
    ):
        yield Violation(
            (*path, "resources"),
            f"resource fields should not be set in both rayStartParams and resources for {group} "
            "group; use only one",
        )


def _lws(lws: LeaderWorkerSet) -> Found:
    yield from _dns1035(lws.metadata.name, ("metadata", "name"), "LeaderWorkerSet name")
    spec, tpl = lws.spec, lws.spec.leader_worker_template
    if not 0 <= spec.replicas <= 1_000_000:
        yield Violation(("spec", "replicas"), f"{spec.replicas} must be between 0 and 1000000")
    if tpl.size < 1:
        yield Violation(
            ("spec", "leaderWorkerTemplate", "size"), "size must be equal or greater than 1"
        )
    elif spec.replicas * tpl.size > INT32_MAX:
        yield Violation(
            ("spec", "replicas"),
            f"the product of replicas and size must not exceed {INT32_MAX}",
        )
    if tpl.subgroup_policy is None and SUBGROUP_EXCLUSIVE_TOPOLOGY in lws.metadata.annotations:
        yield Violation(
            ("metadata", "annotations", SUBGROUP_EXCLUSIVE_TOPOLOGY),
            "cannot have subgroup-exclusive-topology without subGroupSize set",
        )
    base: Path = ("spec", "leaderWorkerTemplate")
    if tpl.leader_template is not None:
        yield from _pod_spec(tpl.leader_template.spec, (*base, "leaderTemplate", "spec"))
    yield from _pod_spec(tpl.worker_template.spec, (*base, "workerTemplate", "spec"))


def _jobset(js: JobSet) -> Found:
    yield from _dns1035(js.metadata.name, ("metadata", "name"), "JobSet name")
    names: set[str] = set()
    for i, rj in enumerate(js.spec.replicated_jobs):
        rp: Path = ("spec", "replicatedJobs", i)
        if rj.name in names:
            yield Violation((*rp, "name"), f"duplicate replicatedJob name {rj.name!r}")
        names.add(rj.name)  # the webhook inserts it before checking dependsOn
        if i == 0 and rj.depends_on:
            yield Violation(
                (*rp, "dependsOn"), "DependsOn can't be set for the first ReplicatedJob"
            )
        for d, dep in enumerate(rj.depends_on):
            if dep.name not in names:
                yield Violation(
                    (*rp, "dependsOn", d, "name"),
                    f"replicatedJob {rj.name} cannot depend on replicatedJob {dep.name}",
                )
        if rj.replicas > 0:
            longest = job_name(js, rj, rj.replicas - 1)
            yield from _dns1035(longest, (*rp, "name"), "generated Job name")
        if rj.template.spec.parallelism * rj.replicas > INT32_MAX:
            yield Violation(
                (*rp, "replicas"),
                f"the product of replicas and parallelism must not exceed {INT32_MAX}",
            )
        yield from _pod_spec(
            rj.template.spec.template.spec, (*rp, "template", "spec", "template", "spec")
        )


def _configmap(cm: ConfigMap) -> Found:
    try:
        device_plugin_configs(cm)
    except DevicePluginConfigError as err:
        yield Violation(("data", err.key), f"invalid device-plugin config: {err}")


def _pdb(pdb: PodDisruptionBudget) -> Found:
    if pdb.spec.min_available is not None and pdb.spec.max_unavailable is not None:
        yield Violation(("spec",), "minAvailable and maxUnavailable cannot both be set")
    for field, v in (
        ("minAvailable", pdb.spec.min_available),
        ("maxUnavailable", pdb.spec.max_unavailable),
    ):
        if isinstance(v, str) and not re.fullmatch(r"[0-9]+%", v):
            yield Violation(("spec", field), f"{v!r} must be an integer or a percentage")
        if isinstance(v, int) and v < 0:
            yield Violation(("spec", field), f"{v} must be greater than or equal to 0")


POD_CHECKS: dict[type[Any], Callable[[Any], Found]] = {
    Pod: _pod,
    Deployment: _replicated,
    StatefulSet: _replicated,
    ReplicaSet: _replicated,
    Job: _job,
    DaemonSet: _daemonset,
    RayCluster: _ray,
    RayService: _ray,
    RayJob: _ray,
    LeaderWorkerSet: _lws,
    JobSet: _jobset,
    ConfigMap: _configmap,
    PodDisruptionBudget: _pdb,
}
