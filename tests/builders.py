"""Test builders: manifests as the dicts a YAML file would hold, with Karpenter-valid defaults.

Tests change one field with `edit(doc, "spec.template.spec.requirements[2].operator", "Inn")`
(or delete it with `DELETE`) rather than writing dict literals, so each test shows only the
rule it is about.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from gpucap.apis.serde import LoadResult, load_text

DELETE = object()


def nodepool(name: str = "gpu", **spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu",
                    },
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["spot", "on-demand"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["g5", "g6"],
                        },
                    ],
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
                    ],
                },
            },
            "limits": {"nvidia.com/gpu": "6"},
        },
    }
    doc["spec"].update(spec)
    return doc


def nodeclass(name: str = "gpu") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiSelectorTerms": [{"alias": "al2023@v20260714"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "200Gi", "volumeType": "gp3"}}
            ],
        },
    }


def container(
    name: str = "app",
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    gpu: int | None = None,
    image: str = "busybox",
) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu is not None:
        limits["nvidia.com/gpu"] = str(gpu)
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": image, "resources": resources}


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pod_spec(
    *,
    gpu: int | None = None,
    tolerations: list[Any] | None = None,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(gpu=gpu, cpu=cpu, memory=memory)]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    spec.update(extra)
    return spec


def pod(name: str = "web-0", namespace: str | None = None, **spec_kw: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(**spec_kw)}


def deployment(name: str = "vllm", replicas: int | None = 2, **spec_kw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(**spec_kw)},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def daemonset(name: str = "nvidia-device-plugin") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"name": name}},
            "template": {
                "metadata": {"labels": {"name": name}},
                "spec": pod_spec(tolerations=[GPU_TOLERATION]),
            },
        },
    }


def job(
    name: str = "train", parallelism: int | None = 3, completions: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": pod_spec(gpu=1, tolerations=[GPU_TOLERATION])}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def edit(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `doc` with the field at `path` (`a.b[2].c`) set to `value` (or deleted).

    A key containing dots is written in brackets with quotes: `limits["nvidia.com/gpu"]`.
    """
    out = copy.deepcopy(doc)
    steps: list[str | int] = []
    for quoted, plain, index in re.findall(r'\["([^"]+)"\]|([^.\[\]]+)|\[(\d+)\]', path):
        steps.append(quoted or plain or int(index))
    target: Any = out
    for step in steps[:-1]:
        if isinstance(step, str) and step not in target:
            target[step] = {}
        target = target[step]
    last = steps[-1]
    if value is DELETE:
        del target[last]
    elif isinstance(last, int) and last == len(target):
        target.append(value)
    else:
        target[last] = value
    return out


def to_yaml(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def load(*docs: dict[str, Any], file: str = "test.yaml") -> LoadResult:
    return load_text(to_yaml(*docs), file)


# ---- operator workloads (KubeRay, LeaderWorkerSet, JobSet) ----------------------------------
def ray_cluster_spec(workers: int | None = 2, *, gpu: int = 1, **group: Any) -> dict[str, Any]:
    """A RayCluster spec: a CPU head and one GPU worker group `gpu-group` of `workers` replicas."""
    worker: dict[str, Any] = {
        "groupName": "gpu-group",
        "template": {
            "spec": pod_spec(gpu=gpu, cpu="4", memory="16Gi", tolerations=[GPU_TOLERATION])
        },
    }
    if workers is not None:
        worker["replicas"] = workers
    worker.update(group)
    return {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": pod_spec(cpu="2", memory="8Gi")},
        },
        "workerGroupSpecs": [worker],
    }


def raycluster(name: str = "ray", workers: int | None = 2, **group: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": ray_cluster_spec(workers, **group),
    }


def rayservice(name: str = "llm", workers: int | None = 2, **group: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name},
        "spec": {
            "serveConfigV2": "applications: []\n",
            "rayClusterConfig": ray_cluster_spec(workers, **group),
        },
    }


def rayjob(name: str = "train", workers: int | None = 2, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "entrypoint": "python train.py",
        "rayClusterSpec": ray_cluster_spec(workers),
    }
    body.update(spec)
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": body}


def leaderworkerset(
    name: str = "vllm", replicas: int | None = 2, size: int | None = 3, **template: Any
) -> dict[str, Any]:
    lwt: dict[str, Any] = {
        "workerTemplate": {"spec": pod_spec(gpu=1, tolerations=[GPU_TOLERATION])},
    }
    if size is not None:
        lwt["size"] = size
    lwt.update(template)
    spec: dict[str, Any] = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": spec,
    }


def jobset(
    name: str = "train", replicas: int = 2, parallelism: int = 2, completions: int | None = None
) -> dict[str, Any]:
    job_spec: dict[str, Any] = {
        "parallelism": parallelism,
        "template": {"spec": pod_spec(gpu=1, tolerations=[GPU_TOLERATION])},
    }
    if completions is not None:
        job_spec["completions"] = completions
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                {"name": "workers", "replicas": replicas, "template": {"spec": job_spec}}
            ]
        },
    }
