"""Every kind that creates pods, and the pods its controller or operator would create.

One entry point for `Manifests.pods` (plan, simulate), the lint context (one sample pod per
template, with the template's path for `file:line`) and the CLI's summaries: Deployments,
StatefulSets, ReplicaSets and Jobs (`apis/workloads.py`), KubeRay's RayCluster, RayService and
RayJob (`apis/kuberay.py`), LeaderWorkerSet (`apis/leaderworkerset.py`) and JobSet
(`apis/jobset.py`). DaemonSets are not here: they are per-node overhead.

Every pod made here is admitted as EKS's API server stores it (`apis/admission.py`: a pod that
requests an extended resource tolerates its NoSchedule taint), so plan, simulate and lint see
the pods the cluster would schedule; the templates themselves stay as written.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from gpucap.apis.admission import admit
from gpucap.apis.core import Pod, PodSpec
from gpucap.apis.jobset import JobSet, jobset_pod_groups
from gpucap.apis.kuberay import (
    RayCluster,
    RayJob,
    RayService,
    cluster_spec,
    desired_workers,
    ray_pod_groups,
)
from gpucap.apis.leaderworkerset import LeaderWorkerSet, lws_pod_groups
from gpucap.apis.workloads import (
    Deployment,
    Job,
    PodGroup,
    ReplicaSet,
    StatefulSet,
    workload_pod_groups,
)

__all__ = [
    "POD_CREATORS",
    "PodCreator",
    "expand",
    "expand_keys",
    "expansion_notes",
    "pod_groups",
    "sample_pods",
]

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
    """The pod templates of `obj`, each with how many pods its controller makes from it; the
    pods are built as the API server stores them (admitted)."""
    return [_admitting(g) for g in _written_groups(obj)]


def _written_groups(obj: PodCreator) -> list[PodGroup]:
    if isinstance(obj, RayCluster | RayService | RayJob):
        return ray_pod_groups(obj)
    if isinstance(obj, LeaderWorkerSet):
        return lws_pod_groups(obj)
    if isinstance(obj, JobSet):
        return jobset_pod_groups(obj)
    return workload_pod_groups(obj)


def _admitting(group: PodGroup) -> PodGroup:
    """`group` with each pod it makes admitted (`apis/admission.py`)."""
    # The pods of one template share their spec object: admit each spec once, and let the
    # pods share the admitted spec too (a workload can make thousands of pods).
    admitted: dict[int, tuple[PodSpec, PodSpec]] = {}

    def make(i: int) -> Pod:
        pod = group.make(i)
        hit = admitted.get(id(pod.spec))
        if hit is None or hit[0] is not pod.spec:
            hit = (pod.spec, admit(pod).spec)
            admitted[id(pod.spec)] = hit
        return pod if hit[1] is pod.spec else pod.model_copy(update={"spec": hit[1]})

    return PodGroup(group.path, group.count, make, group.key)


def expand(obj: PodCreator) -> list[Pod]:
    """Every pod `obj` creates, template by template."""
    return [p for g in pod_groups(obj) for p in g.pods]


def expand_keys(obj: PodCreator) -> list[tuple[str, Callable[[], Pod]]]:
    """`expand(obj)` as (pod key, a function building that pod), in the same order, building
    no pod whose key is known without it (the simulated cluster's `apply` builds only pods it
    does not have yet)."""
    out: list[tuple[str, Callable[[], Pod]]] = []
    for g in pod_groups(obj):
        for i in range(g.count):
            if g.key is not None:
                out.append((g.key(i), partial(g.make, i)))
            else:
                pod = g.make(i)
                out.append((pod.key, partial(_same, pod)))
    return out


def _same(pod: Pod) -> Pod:
    return pod


def sample_pods(obj: PodCreator) -> list[tuple[PodGroup, Pod]]:
    """One pod per template (even a template that makes no pods yet), for the linter and
    `validate`'s summary: as the template writes it, not admitted (the lint context admits
    it, `validate` shows what was written)."""
    return [(g, g.sample()) for g in _written_groups(obj)]


def expansion_notes(obj: PodCreator) -> list[str]:
    """What a plan of `obj`'s pods leaves out: later scaling by the Ray autoscaler, pods an
    operator starts only after others (a plan places them all at once)."""
    notes: list[str] = []
    if isinstance(obj, RayCluster | RayService | RayJob):
        spec = cluster_spec(obj)
        if spec is not None and spec.enable_in_tree_autoscaling:
            for wg in spec.worker_group_specs:
                most = wg.max_replicas * max(1, wg.num_of_hosts)
                if most > desired_workers(wg):
                    notes.append(
                        f"worker group {wg.group_name} starts with {desired_workers(wg)} pod(s); "
                        f"the Ray autoscaler can scale it to {most} (maxReplicas {wg.max_replicas})"
                    )
    elif isinstance(obj, LeaderWorkerSet):
        if obj.spec.startup_policy == "LeaderReady" and obj.spec.leader_worker_template.size > 1:
            notes.append(
                "startupPolicy LeaderReady creates the workers once their leader is ready; "
                "planned together"
            )
    elif isinstance(obj, JobSet):
        delayed = [rj.name for rj in obj.spec.replicated_jobs if rj.depends_on]
        if delayed:
            notes.append(
                f"replicated job(s) {', '.join(delayed)} start after the jobs they depend on; "
                "planned at the same time"
            )
        order = (obj.spec.startup_policy or {}).get("startupPolicyOrder")
        if order == "InOrder" and len(obj.spec.replicated_jobs) > 1:
            notes.append(
                "startupPolicyOrder InOrder starts the jobs one after another; planned together"
            )
    return notes
