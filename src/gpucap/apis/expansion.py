"""Every kind that creates pods, and the pods its controller or operator would create.

One entry point for `Manifests.pods` (plan, simulate), the lint context (one sample pod per
template, with the template's path for `file:line`) and the CLI's summaries: Deployments,
StatefulSets, ReplicaSets and Jobs (`apis/workloads.py`), KubeRay's RayCluster, RayService and
RayJob (`apis/kuberay.py`), LeaderWorkerSet (`apis/leaderworkerset.py`) and JobSet
(`apis/jobset.py`). DaemonSets are not here: they are per-node overhead.
"""

from __future__ import annotations

from gpucap.apis.core import Pod
from gpucap.apis.jobset import JobSet, jobset_pod_groups
from gpucap.apis.kuberay import RayCluster, RayJob, RayService, ray_pod_groups
from gpucap.apis.leaderworkerset import LeaderWorkerSet, lws_pod_groups
from gpucap.apis.workloads import (
    Deployment,
    Job,
    PodGroup,
    ReplicaSet,
    StatefulSet,
    workload_pod_groups,
)

__all__ = ["POD_CREATORS", "PodCreator", "expand", "pod_groups", "sample_pods"]

PodCreator = (
    Deployment
    | StatefulSet
    | ReplicaSet
    | Job
    | RayCluster
    | RayService
    | RayJob
    | LeaderWorkerSet
    | JobSet
)
POD_CREATORS = (
    Deployment,
    StatefulSet,
    ReplicaSet,
    Job,
    RayCluster,
    RayService,
    RayJob,
    LeaderWorkerSet,
    JobSet,
)


def pod_groups(obj: PodCreator) -> list[PodGroup]:
    """The pod templates of `obj`, each with how many pods its controller makes from it."""
    if isinstance(obj, RayCluster | RayService | RayJob):
        return ray_pod_groups(obj)
    if isinstance(obj, LeaderWorkerSet):
        return lws_pod_groups(obj)
    if isinstance(obj, JobSet):
        return jobset_pod_groups(obj)
    return workload_pod_groups(obj)


def expand(obj: PodCreator) -> list[Pod]:
    """Every pod `obj` creates, template by template."""
    return [p for g in pod_groups(obj) for p in g.pods]


def sample_pods(obj: PodCreator) -> list[tuple[PodGroup, Pod]]:
    """One pod per template (even a template that makes no pods yet), for the linter."""
    return [(g, g.sample()) for g in pod_groups(obj)]
