"""JobSet (jobset.x-k8s.io/v1alpha2) and the pods its Jobs create.

Read from kubernetes-sigs/jobset @ 08dfbdfd6827 (2026-08): `api/jobset/v1alpha2/` (fields, CRD
defaults: a replicatedJob's `replicas` 1), `pkg/controllers/jobset_controller.go` (constructJob,
labelAndAnnotateObject, addNamespacedJobNodeSelector, addTaintToleration), `pkg/util/placement/`
(GenJobName, GenPodName), `pkg/webhooks/pod_webhook.go` (exclusive placement) and
`pkg/webhooks/jobset_webhook.go` (defaults: completionMode Indexed; what it rejects):

- Each replicatedJob makes `replicas` Jobs named `<jobset>-<replicatedJob>-<j>`; each Job makes
  `min(parallelism, completions)` pods (parallelism default 1), as `apis/workloads.py` counts a
  Job. gpucap names the pods `<jobset>-<replicatedJob>-<j>-<k>` (JobSet's GenPodName; the Job
  controller adds a random suffix). A suspended JobSet makes none.
- Labels added: `jobset.sigs.k8s.io/jobset-name`, `replicatedjob-name`, `replicatedjob-replicas`,
  `job-index`, `job-key` (SHA-1 of `<namespace>/<job name>`), `batch.kubernetes.io/job-completion
  -index` (annotation too); the UID and restart labels are left out.
- Exclusive placement (`alpha.jobset.sigs.k8s.io/exclusive-topology: KEY` on the JobSet or a
  replicatedJob template): the pod webhook gives each Job's leader (completion index 0) a
  required pod affinity to its Job (`job-key In [key]`) and a required anti-affinity to other
  Jobs of the same priority (`job-key Exists, NotIn [key]`, `jobset.sigs.k8s.io/priority In
  [p]`, p from `spec.priority`, 0 when unset, as the priority admission plugin defaults it);
  followers get, once the leader is bound, a node selector for the leader's domain, for which
  gpucap uses the equivalent required pod affinity to their Job. The webhook's empty
  namespaceSelector (all namespaces) is read as the pod's namespace: a JobSet's pods share one.
  With `alpha.jobset.sigs.k8s.io/node-selector` the controller adds instead the node selector
  `alpha.jobset.sigs.k8s.io/namespaced-job: <namespace>_<job>` and a toleration of
  `alpha.jobset.sigs.k8s.io/no-schedule`.
- `dependsOn` and `startupPolicy: InOrder` only delay Jobs; a plan places every Job at once.

Called by `apis/expansion.py` and `apis/validation.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from gpucap.apis.core import Pod, PodTemplateSpec, Toleration
from gpucap.apis.leaderworkerset import exclusive_affinity, sha1_hex
from gpucap.apis.meta import (
    KarpenterModel,
    KubeModel,
    LabelSelectorRequirement,
    NamespacedObjectMeta,
    ObjectMeta,
)
from gpucap.apis.workloads import JobSpec, PodGroup, build_pod

__all__ = ["JobSet", "ReplicatedJob", "job_name", "jobset_pod_groups", "pods_per_job"]

PREFIX = "jobset.sigs.k8s.io/"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE = "alpha.jobset.sigs.k8s.io/no-schedule"
JOB_KEY = PREFIX + "job-key"
PRIORITY = PREFIX + "priority"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]


class JobTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec


class DependsOn(KarpenterModel):
    name: StrictStr
    status: Literal["Ready", "Complete"]


class ReplicatedJob(KarpenterModel):
    name: StrictStr
    template: JobTemplateSpec
    group_name: StrictStr = "default"
    replicas: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)] = 1
    depends_on: list[DependsOn] = Field(default_factory=list)


class JobSetSpec(KarpenterModel):
    replicated_jobs: list[ReplicatedJob] = Field(default_factory=list)
    network: dict[str, Any] | None = None
    success_policy: dict[str, Any] | None = None
    failure_policy: dict[str, Any] | None = None
    startup_policy: dict[str, Any] | None = None
    suspend: StrictBool | None = None
    coordinator: dict[str, Any] | None = None
    managed_by: StrictStr | None = None
    ttl_seconds_after_finished: Annotated[StrictInt, Field(ge=0)] | None = None
    volume_claim_policies: list[dict[str, Any]] = Field(default_factory=list)


class JobSet(KarpenterModel):
    api_version: Literal["jobset.x-k8s.io/v1alpha2"] = "jobset.x-k8s.io/v1alpha2"
    kind: Literal["JobSet"] = "JobSet"
    metadata: NamespacedObjectMeta
    spec: JobSetSpec
    status: dict[str, Any] | None = None


def job_name(js: JobSet, rjob: ReplicatedJob, index: int) -> str:
    """JobSet's GenJobName."""
    return f"{js.metadata.name}-{rjob.name}-{index}"


def pods_per_job(rjob: ReplicatedJob) -> int:
    spec = rjob.template.spec
    if spec.completions is not None:
        return min(spec.parallelism, spec.completions)
    return spec.parallelism


def jobset_pod_groups(js: JobSet) -> list[PodGroup]:
    """One group per replicatedJob: `replicas` Jobs x pods per Job, in Job then index order."""
    if js.spec.suspend:
        return [
            PodGroup(_path(i), 0, _maker(js, rj)) for i, rj in enumerate(js.spec.replicated_jobs)
        ]
    return [
        PodGroup(_path(i), rj.replicas * pods_per_job(rj), _maker(js, rj))
        for i, rj in enumerate(js.spec.replicated_jobs)
    ]


def _path(i: int) -> tuple[str | int, ...]:
    return ("spec", "replicatedJobs", i, "template", "spec", "template", "spec")


def _maker(js: JobSet, rjob: ReplicatedJob) -> Callable[[int], Pod]:
    namespace = js.metadata.namespace
    per_job = max(pods_per_job(rjob), 1)
    template: PodTemplateSpec = rjob.template.spec.template
    topology = rjob.template.metadata.annotations.get(
        EXCLUSIVE_TOPOLOGY, js.metadata.annotations.get(EXCLUSIVE_TOPOLOGY)
    )
    strategy = NODE_SELECTOR_STRATEGY in rjob.template.metadata.annotations or (
        EXCLUSIVE_TOPOLOGY not in rjob.template.metadata.annotations
        and NODE_SELECTOR_STRATEGY in js.metadata.annotations
    )

    def make(i: int) -> Pod:
        j, k = divmod(i, per_job)
        job = job_name(js, rjob, j)
        key = sha1_hex(f"{namespace}/{job}")
        labels = {
            **rjob.template.metadata.labels,
            **template.metadata.labels,
            PREFIX + "jobset-name": js.metadata.name,
            PREFIX + "replicatedjob-name": rjob.name,
            PREFIX + "replicatedjob-replicas": str(rjob.replicas),
            PREFIX + "job-index": str(j),
            JOB_KEY: key,
            COMPLETION_INDEX: str(k),
            "job-name": job,
            "batch.kubernetes.io/job-name": job,
        }
        annotations = {**template.metadata.annotations, COMPLETION_INDEX: str(k)}
        spec = template.spec
        if topology and strategy:
            spec = spec.model_copy(
                update={
                    "node_selector": {**spec.node_selector, NAMESPACED_JOB: f"{namespace}_{job}"},
                    "tolerations": [
                        *spec.tolerations,
                        Toleration(key=NO_SCHEDULE, operator="Exists", effect="NoSchedule"),
                    ],
                }
            )
        elif topology:
            annotations[EXCLUSIVE_TOPOLOGY] = topology
            priority = str(spec.priority or 0)
            labels[PRIORITY] = priority
            spec = exclusive_affinity(
                spec,
                JOB_KEY,
                key,
                topology,
                exclusive=k == 0,
                extra_anti=(
                    LabelSelectorRequirement(key=PRIORITY, operator="In", values=[priority]),
                ),
            )
        name = f"{js.metadata.name}-{rjob.name}-{j}-{k}"
        return build_pod(js, name, spec, labels, annotations)

    return make
