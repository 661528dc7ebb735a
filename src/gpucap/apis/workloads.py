"""Workload controllers as manifests: Deployment, StatefulSet, ReplicaSet, Job, DaemonSet.

gpucap does not run these controllers; it expands a workload into the pods it would create,
named `<name>-<i>` (i = 0..), which is all a capacity model needs. Deployment, StatefulSet and
ReplicaSet make `replicas` pods (Kubernetes default 1); a Job makes `parallelism` pods (default 1),
capped by `completions` when that is smaller, as the Job controller does. DaemonSets are not
expanded: they are per-node overhead, computed where nodes are known.

Every kind that creates pods (these, and the operator kinds of `apis/kuberay.py`,
`apis/leaderworkerset.py`, `apis/jobset.py`) answers `pod_groups()`: one `PodGroup` per pod
template, with where that template's pod spec sits in the manifest (lint findings point there),
how many pods the controller makes from it and how to build the i-th. `build_pod` is the shared
constructor (deterministic UID, owner reference). Called by `apis/serde.py` (`Manifests.pods`),
the lint context and the CLI's summaries.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

from pydantic import Field, StrictInt

from gpucap.apis.core import Pod, PodSpec, PodTemplateSpec
from gpucap.apis.meta import KubeModel, LabelSelector, NamespacedObjectMeta, OwnerReference

__all__ = [
    "DaemonSet",
    "Deployment",
    "Job",
    "PodGroup",
    "ReplicaSet",
    "StatefulSet",
    "Workload",
    "build_pod",
    "expand_workload",
    "pod_uid",
    "replica_count",
    "workload_pod_groups",
]

NonNegativeInt = Annotated[StrictInt, Field(ge=0)]


FieldPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class PodGroup:
    """The pods a controller makes from one pod template.

    `path` is where the template's pod spec sits in the manifest; `count` how many pods the
    controller creates from it; `make(i)` builds the i-th (0 <= i < count). `sample()` builds a
    pod even when `count` is 0, for the linter, which judges templates rather than replicas.
    `key(i)`, when given, is `make(i).key` without building the pod (the simulated cluster
    diffs a scaled workload's pods by key and builds only the new ones).
    """

    path: FieldPath
    count: int
    make: Callable[[int], Pod]
    key: Callable[[int], str] | None = None

    @property
    def pods(self) -> list[Pod]:
        return [self.make(i) for i in range(self.count)]

    def key_of(self, i: int) -> str:
        """The key (`namespace/name`) of the i-th pod."""
        return self.key(i) if self.key is not None else self.make(i).key

    def sample(self) -> Pod:
        return self.make(0)


class PodOwner(Protocol):
    """What `build_pod` reads of the object that owns the pods."""

    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def metadata(self) -> NamespacedObjectMeta: ...


def build_pod(
    owner: PodOwner,
    name: str,
    spec: PodSpec,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
) -> Pod:
    """A pod named `name` in `owner`'s namespace, controlled by `owner`, with a stable UID."""
    meta = owner.metadata
    namespace = meta.namespace
    ref = OwnerReference(
        api_version=owner.api_version,
        kind=owner.kind,
        name=meta.name,
        uid=meta.uid or "",
        controller=True,
    )
    pod_meta = NamespacedObjectMeta(
        name=name,
        namespace=namespace,
        labels=dict(labels),
        annotations=dict(annotations or {}),
        uid=pod_uid(namespace, name),
        creation_timestamp=meta.creation_timestamp,
        owner_references=[ref],
    )
    return Pod(metadata=pod_meta, spec=spec)


class ReplicatedSpec(KubeModel):
    replicas: NonNegativeInt = 1
    selector: LabelSelector
    template: PodTemplateSpec


class Deployment(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["Deployment"] = "Deployment"
    metadata: NamespacedObjectMeta
    spec: ReplicatedSpec


class StatefulSet(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["StatefulSet"] = "StatefulSet"
    metadata: NamespacedObjectMeta
    spec: ReplicatedSpec


class ReplicaSet(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["ReplicaSet"] = "ReplicaSet"
    metadata: NamespacedObjectMeta
    spec: ReplicatedSpec


class JobSpec(KubeModel):
    parallelism: NonNegativeInt = 1
    completions: NonNegativeInt | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec


class Job(KubeModel):
    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["Job"] = "Job"
    metadata: NamespacedObjectMeta
    spec: JobSpec


class DaemonSetSpec(KubeModel):
    selector: LabelSelector
    template: PodTemplateSpec


class DaemonSet(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["DaemonSet"] = "DaemonSet"
    metadata: NamespacedObjectMeta
    spec: DaemonSetSpec


Workload = Deployment | StatefulSet | ReplicaSet | Job


def pod_uid(namespace: str, name: str) -> str:
    """A deterministic UID for a pod gpucap creates (same name, same UID, every run)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpucap://pods/{namespace}/{name}"))


def replica_count(workload: Workload) -> int:
    if isinstance(workload, Job):
        if workload.spec.completions is not None:
            return min(workload.spec.parallelism, workload.spec.completions)
        return workload.spec.parallelism
    return workload.spec.replicas


def expand_workload(workload: Workload, replicas: int | None = None) -> list[Pod]:
    """The pods `workload` creates: `<name>-0` .. `<name>-<n-1>`, owned by the workload.

    `replicas` overrides the manifest's count (the simulator's `scale` event).
    """
    (group,) = workload_pod_groups(workload, replicas)
    return group.pods


def workload_pod_groups(workload: Workload, replicas: int | None = None) -> list[PodGroup]:
    """`expand_workload` as one `PodGroup` (the template at `spec.template.spec`)."""
    count = replica_count(workload) if replicas is None else replicas
    template = workload.spec.template
    name = workload.metadata.name

    def make(i: int) -> Pod:
        return build_pod(
            workload,
            f"{name}-{i}",
            template.spec,
            template.metadata.labels,
            template.metadata.annotations,
        )

    namespace = workload.metadata.namespace

    def key(i: int) -> str:
        return f"{namespace}/{name}-{i}"  # build_pod's namespace and name, as Pod.key joins them

    return [PodGroup(("spec", "template", "spec"), count, make, key)]
