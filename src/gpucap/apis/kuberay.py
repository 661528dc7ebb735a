"""KubeRay's RayCluster, RayService and RayJob (ray.io/v1), and the pods the operator creates.

Read from ray-project/kuberay @ feeaf72facab (2026-08), `ray-operator/apis/ray/v1/*_types.go`
(fields, CRD defaults) and `ray-operator/controllers/ray/` (`raycluster_controller.go`
reconcilePods/buildHeadPod/buildWorkerPod, `utils/util.go` GetWorkerGroupDesiredReplicas and
PodName, `common/pod.go` labelPod, the autoscaler sidecar and the wait-gcs-ready init container,
`common/job.go` the default submitter, `rayjob_controller.go`, `utils/validation.go`):

- A RayCluster makes one head pod and, per worker group, `replicas` clamped to
  [`minReplicas`, `maxReplicas`] (CRD defaults 0, 0, 2^31-1; a suspended group or cluster
  makes none) times `numOfHosts` (default 1) worker pods. With `enableInTreeAutoscaling` the
  operator starts the same count; the Ray autoscaler changes `replicas` later.
- Names: the operator uses generateName (`<cluster>-head-xxxxx`, `<cluster>-<group>-worker-xxxxx`);
  gpucap names them `<cluster>-head` (KubeRay's deterministic head-pod name) and
  `<cluster>-<group>-worker-<i>`. A RayService's or RayJob's cluster is `<name>-xxxxx` in
  KubeRay and `<name>` here.
- Pods carry the template labels, the group's `labels`, and KubeRay's own (`ray.io/cluster`,
  `ray.io/node-type`, `ray.io/group`, `ray.io/identifier`, `ray.io/is-ray-node`,
  `app.kubernetes.io/name`, `app.kubernetes.io/created-by`); node selectors and tolerations are
  the template's. The head pod gets the autoscaler container (500m / 512Mi, or
  `autoscalerOptions.resources`) when autoscaling is on; worker pods get the `wait-gcs-ready`
  init container (200m / 256Mi), which counts when it is larger than the containers.
- A RayJob in `K8sJobMode` (the default) also runs a submitter Job named `<rayjob>`: one pod,
  `<rayjob>-0` here, from `submitterPodTemplate` or KubeRay's default container (requests 500m /
  200Mi). In `SidecarMode` that container joins the head pod instead; `HTTPMode` and
  `InteractiveMode` add nothing. With `clusterSelector` the job uses an existing cluster (no
  cluster pods); a suspended RayJob or RayService creates nothing.

The CRDs are structural without preserved unknown fields, so unknown fields are errors (as for
the Karpenter kinds); nested Kubernetes objects gpucap does not read (services, autoscaler
options, ...) are kept as given. Called by `apis/expansion.py` and `apis/validation.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from gpucap.apis.core import Container, Pod, PodTemplateSpec, ResourceRequirements
from gpucap.apis.meta import KarpenterModel, KubeModel, NamespacedObjectMeta
from gpucap.apis.workloads import FieldPath, PodGroup, build_pod

__all__ = [
    "HeadGroupSpec",
    "RayCluster",
    "RayClusterSpec",
    "RayJob",
    "RayService",
    "WorkerGroupSpec",
    "cluster_spec",
    "desired_workers",
    "ray_pod_groups",
]

MAX_INT32 = 2**31 - 1
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=MAX_INT32)]

AUTOSCALER_RESOURCES = {"cpu": "500m", "memory": "512Mi"}
WAIT_GCS_READY_RESOURCES = {"cpu": "200m", "memory": "256Mi"}
SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


class HeadGroupSpec(KarpenterModel):
    template: PodTemplateSpec
    head_service: dict[str, Any] | None = None
    enable_ingress: StrictBool | None = None
    ingress_options: dict[str, Any] | None = None
    resources: dict[str, StrictStr] = Field(default_factory=dict)
    labels: dict[str, StrictStr] = Field(default_factory=dict)
    ray_start_params: dict[str, StrictStr] = Field(default_factory=dict)
    service_type: StrictStr | None = None


class WorkerGroupSpec(KarpenterModel):
    group_name: StrictStr
    template: PodTemplateSpec
    suspend: StrictBool | None = None
    # CRD defaults (+kubebuilder:default): replicas 0, minReplicas 0, maxReplicas 2^31-1.
    replicas: Int32 = 0
    min_replicas: Int32 = 0
    max_replicas: Int32 = MAX_INT32
    idle_timeout_seconds: Int32 | None = None
    priority: Int32 | None = None
    resources: dict[str, StrictStr] = Field(default_factory=dict)
    labels: dict[str, StrictStr] = Field(default_factory=dict)
    ray_start_params: dict[str, StrictStr] = Field(default_factory=dict)
    scale_strategy: dict[str, Any] | None = None
    num_of_hosts: Int32 = 1


class AutoscalerOptions(KubeModel):
    resources: ResourceRequirements | None = None


class RayClusterSpec(KarpenterModel):
    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] = Field(default_factory=list)
    ray_version: StrictStr | None = None
    enable_in_tree_autoscaling: StrictBool | None = None
    autoscaler_options: AutoscalerOptions | None = None
    suspend: StrictBool | None = None
    upgrade_strategy: dict[str, Any] | None = None
    auth_options: dict[str, Any] | None = None
    managed_by: StrictStr | None = None
    head_service_annotations: dict[str, StrictStr] = Field(default_factory=dict)
    gcs_fault_tolerance_options: dict[str, Any] | None = None
    history_server_options: dict[str, Any] | None = None
    network_policy: dict[str, Any] | None = None
    tls_options: dict[str, Any] | None = Field(default=None, alias="tlsOptions")


class RayCluster(KarpenterModel):
    api_version: Literal["ray.io/v1"] = "ray.io/v1"
    kind: Literal["RayCluster"] = "RayCluster"
    metadata: NamespacedObjectMeta
    spec: RayClusterSpec
    status: dict[str, Any] | None = None


class RayServiceSpec(KarpenterModel):
    ray_cluster_config: RayClusterSpec
    serve_config_v2: StrictStr | None = Field(default=None, alias="serveConfigV2")
    ray_cluster_deletion_delay_seconds: Int32 | None = None
    service_unhealthy_second_threshold: Int32 | None = None
    deployment_unhealthy_second_threshold: Int32 | None = None
    serve_service: dict[str, Any] | None = None
    upgrade_strategy: dict[str, Any] | None = None
    managed_by: StrictStr | None = None
    exclude_head_pod_from_serve_svc: StrictBool | None = None
    suspend: StrictBool | None = None


class RayService(KarpenterModel):
    api_version: Literal["ray.io/v1"] = "ray.io/v1"
    kind: Literal["RayService"] = "RayService"
    metadata: NamespacedObjectMeta
    spec: RayServiceSpec
    status: dict[str, Any] | None = None


class RayJobSpec(KarpenterModel):
    ray_cluster_spec: RayClusterSpec | None = None
    submitter_pod_template: PodTemplateSpec | None = None
    # CRD default K8sJobMode.
    submission_mode: Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"] = (
        "K8sJobMode"
    )
    cluster_selector: dict[str, StrictStr] = Field(default_factory=dict)
    suspend: StrictBool = False
    entrypoint: StrictStr | None = None
    runtime_env_yaml: StrictStr | None = Field(default=None, alias="runtimeEnvYAML")
    job_id: StrictStr | None = None
    active_deadline_seconds: Int32 | None = None
    backoff_limit: Int32 | None = None
    metadata: dict[str, StrictStr] = Field(default_factory=dict)
    submitter_config: dict[str, Any] | None = None
    managed_by: StrictStr | None = None
    deletion_strategy: dict[str, Any] | None = None
    entrypoint_resources: StrictStr | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    ttl_seconds_after_finished: Int32 | None = None
    pre_running_deadline_seconds: Int32 | None = None
    shutdown_after_job_finishes: StrictBool | None = None


class RayJob(KarpenterModel):
    api_version: Literal["ray.io/v1"] = "ray.io/v1"
    kind: Literal["RayJob"] = "RayJob"
    metadata: NamespacedObjectMeta
    spec: RayJobSpec
    status: dict[str, Any] | None = None


RayKind = RayCluster | RayService | RayJob


def desired_workers(group: WorkerGroupSpec) -> int:
    """KubeRay's GetWorkerGroupDesiredReplicas: replicas clamped to [min, max], x numOfHosts."""
    if group.suspend:
        return 0
    replicas = group.replicas
    if replicas < group.min_replicas:
        replicas = group.min_replicas
    elif replicas > group.max_replicas:
        replicas = group.max_replicas
    return replicas * max(1, group.num_of_hosts)


def cluster_spec_path(obj: RayKind) -> FieldPath:
    """Where the RayClusterSpec sits in the manifest."""
    if isinstance(obj, RayService):
        return ("spec", "rayClusterConfig")
    if isinstance(obj, RayJob):
        return ("spec", "rayClusterSpec")
    return ("spec",)


def cluster_spec(obj: RayKind) -> RayClusterSpec | None:
    """The RayClusterSpec the operator turns into pods (None: suspended, or an existing
    cluster is used)."""
    if isinstance(obj, RayService):
        return None if obj.spec.suspend else obj.spec.ray_cluster_config
    if isinstance(obj, RayJob):
        if obj.spec.suspend or obj.spec.cluster_selector:
            return None
        return obj.spec.ray_cluster_spec
    return None if obj.spec.suspend else obj.spec


def _labels(cluster: str, node_type: str, group: str, *layers: dict[str, str]) -> dict[str, str]:
    """KubeRay's labelPod: template labels, the group's labels, then KubeRay's (three fixed)."""
    out = {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": cluster,
        "ray.io/node-type": node_type,
        "ray.io/group": group,
        "ray.io/identifier": f"{cluster}-{node_type}",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    fixed = ("ray.io/node-type", "ray.io/group", "ray.io/cluster")
    for layer in layers:
        out.update({k: v for k, v in layer.items() if k not in fixed})
    return out


def _container(name: str, resources: dict[str, Any], image: str | None) -> Container:
    return Container.model_validate({"name": name, "image": image, "resources": resources})


def _fixed(resources: dict[str, str]) -> dict[str, Any]:
    return {"limits": dict(resources), "requests": dict(resources)}


def ray_pod_groups(obj: RayKind) -> list[PodGroup]:
    """Head, worker groups and (RayJob) submitter, as KubeRay's operator creates them."""
    groups: list[PodGroup] = []
    name = obj.metadata.name
    spec = cluster_spec(obj)
    base = cluster_spec_path(obj)
    sidecar = isinstance(obj, RayJob) and obj.spec.submission_mode == "SidecarMode"
    if spec is not None:
        groups.append(_head_group(obj, name, spec, base, sidecar=sidecar))
        for i, wg in enumerate(spec.worker_group_specs):
            groups.append(_worker_group(obj, name, wg, (*base, "workerGroupSpecs", i)))
    if isinstance(obj, RayJob) and not obj.spec.suspend:
        submitter = _submitter_group(obj)
        if submitter is not None:
            groups.append(submitter)
    return groups


def _head_group(
    owner: RayKind, cluster: str, spec: RayClusterSpec, base: FieldPath, *, sidecar: bool
) -> PodGroup:
    head = spec.head_group_spec
    template = head.template
    image = template.spec.containers[0].image if template.spec.containers else None
    containers = list(template.spec.containers)
    if spec.enable_in_tree_autoscaling:
        options = spec.autoscaler_options
        if options is not None and options.resources is not None:
            containers.append(
                Container(name="autoscaler", image=image, resources=options.resources)
            )
        else:
            containers.append(_container("autoscaler", _fixed(AUTOSCALER_RESOURCES), image))
    if sidecar:
        containers.append(_container("ray-job-submitter", SUBMITTER_RESOURCES, image))
    pod_spec = template.spec.model_copy(update={"containers": containers})
    labels = _labels(cluster, "head", "headgroup", template.metadata.labels, head.labels)

    def make(_: int) -> Pod:
        return build_pod(owner, f"{cluster}-head", pod_spec, labels, template.metadata.annotations)

    return PodGroup((*base, "headGroupSpec", "template", "spec"), 1, make)


def _worker_group(owner: RayKind, cluster: str, wg: WorkerGroupSpec, path: FieldPath) -> PodGroup:
    template = wg.template
    image = template.spec.containers[0].image if template.spec.containers else None
    init = [
        *template.spec.init_containers,
        _container("wait-gcs-ready", _fixed(WAIT_GCS_READY_RESOURCES), image),
    ]
    pod_spec = template.spec.model_copy(update={"init_containers": init})
    labels = _labels(cluster, "worker", wg.group_name, template.metadata.labels, wg.labels)
    prefix = f"{cluster}-{wg.group_name}-worker"

    def make(i: int) -> Pod:
        return build_pod(owner, f"{prefix}-{i}", pod_spec, labels, template.metadata.annotations)

    return PodGroup((*path, "template", "spec"), desired_workers(wg), make)


def _submitter_group(job: RayJob) -> PodGroup | None:
    if job.spec.submission_mode != "K8sJobMode":
        return None
    name = job.metadata.name
    template = job.spec.submitter_pod_template
    path: FieldPath
    if template is not None:
        pod_spec, labels = template.spec, dict(template.metadata.labels)
        annotations = dict(template.metadata.annotations)
        path = ("spec", "submitterPodTemplate", "spec")
    else:
        cluster = job.spec.ray_cluster_spec
        head = cluster.head_group_spec.template.spec.containers if cluster else []
        image = head[0].image if head else None
        pod_spec = PodTemplateSpec.model_validate(
            {
                "spec": {
                    "containers": [
                        {
                            "name": "ray-job-submitter",
                            "image": image,
                            "resources": SUBMITTER_RESOURCES,
                        }
                    ],
                    "restartPolicy": "Never",
                }
            }
        ).spec
        labels, annotations, path = {}, {}, ("spec",)
    # The submitter is a batch/v1 Job named after the RayJob; its pod as gpucap names Job pods.
    labels = {**labels, "job-name": name, "batch.kubernetes.io/job-name": name}

    def make(i: int) -> Pod:
        return build_pod(job, f"{name}-{i}", pod_spec, labels, annotations)

    return PodGroup(path, 1, make)
