"""Workload controllers as manifests: Deployment, StatefulSet, ReplicaSet, Job, DaemonSet.

gpucap does not run these controllers; it expands a workload into the pods it would create,
named `<name>-<i>` (i = 0..), which is all a capacity model needs. Deployment, StatefulSet and
ReplicaSet make `replicas` pods (Kubernetes default 1); a Job makes `parallelism` pods (default 1),
capped by `completions` when that is smaller, as the Job controller does. DaemonSets are not
expanded: they are per-node overhead, computed where nodes are known.
Called by `apis/serde.py` after validation.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import Field, StrictInt

from gpucap.apis.core import Pod, PodTemplateSpec
from gpucap.apis.meta import KubeModel, LabelSelector, ObjectMeta, OwnerReference

__all__ = [
    "DaemonSet",
    "Deployment",
    "Job",
    "ReplicaSet",
    "StatefulSet",
    "Workload",
    "expand_workload",
    "pod_uid",
    "replica_count",
]

NonNegativeInt = Annotated[StrictInt, Field(ge=0)]


class ReplicatedSpec(KubeModel):
    replicas: NonNegativeInt = 1
    selector: LabelSelector
    template: PodTemplateSpec


class Deployment(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["Deployment"] = "Deployment"
    metadata: ObjectMeta
    spec: ReplicatedSpec


class StatefulSet(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["StatefulSet"] = "StatefulSet"
    metadata: ObjectMeta
    spec: ReplicatedSpec


class ReplicaSet(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["ReplicaSet"] = "ReplicaSet"
    metadata: ObjectMeta
    spec: ReplicatedSpec


class JobSpec(KubeModel):
    parallelism: NonNegativeInt = 1
    completions: NonNegativeInt | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec


class Job(KubeModel):
    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["Job"] = "Job"
    metadata: ObjectMeta
    spec: JobSpec


class DaemonSetSpec(KubeModel):
    selector: LabelSelector
    template: PodTemplateSpec


class DaemonSet(KubeModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["DaemonSet"] = "DaemonSet"
    metadata: ObjectMeta
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
    count = replica_count(workload) if replicas is None else replicas
    meta = workload.metadata
    namespace = meta.namespace or "default"
    template = workload.spec.template
    owner = OwnerReference(
        api_version=workload.api_version,
        kind=workload.kind,
        name=meta.name,
        uid=meta.uid or "",
        controller=True,
    )
    pods = []
    for i in range(count):
        name = f"{meta.name}-{i}"
        pod_meta = ObjectMeta(
            name=name,
            namespace=namespace,
            labels=dict(template.metadata.labels),
            annotations=dict(template.metadata.annotations),
            uid=pod_uid(namespace, name),
            creation_timestamp=meta.creation_timestamp,
            owner_references=[owner],
        )
        pods.append(Pod(metadata=pod_meta, spec=template.spec))
    return pods
