"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) and the pods the LWS controller creates.

Read from kubernetes-sigs/lws @ 060ab4da17ee (2026-08): `api/leaderworkerset/v1/` (fields, CRD
defaults: replicas 1, size 1, startupPolicy LeaderCreated), `pkg/controllers/
leaderworkerset_controller.go` (constructLeaderStatefulSetApplyConfiguration),
`pkg/controllers/pod_controller.go` (constructWorkerStatefulSetApplyConfiguration,
setNodeSelectorForWorkerPods), `pkg/webhooks/pod_webhook.go` (labels, SetExclusiveAffinities)
and `pkg/webhooks/leaderworkerset_webhook.go` (what it rejects):

- `replicas` groups of `size` pods. The leader StatefulSet `<lws>` makes the leaders
  `<lws>-<g>` from `leaderTemplate` (or `workerTemplate` when there is none); each leader's
  worker StatefulSet `<lws>-<g>` makes `<lws>-<g>-1` .. `<lws>-<g>-<size-1>` (ordinals start at
  1) from `workerTemplate`. These names are deterministic, so gpucap uses them as they are.
- Labels added: `leaderworkerset.sigs.k8s.io/name`, `group-index`, `worker-index` (0 for the
  leader), `group-key` (SHA-1 of `<namespace>/<leader pod>`); the revision-hash label is left out.
- Exclusive placement (annotation `leaderworkerset.sigs.k8s.io/exclusive-topology: KEY`): the
  webhook gives the leader a required pod affinity to its own group (`group-key In [key]`) and a
  required anti-affinity to every other group (`group-key Exists, NotIn [key]`), both on KEY.
  Workers get, once the leader is bound, a node selector `KEY: <leader's node's value>`; a plan
  has no bound leader, so gpucap gives each worker the equivalent required pod affinity to its
  group on KEY. Subgroup exclusive placement is not modelled (a note would be needed per group).
- `startupPolicy: LeaderReady` delays workers until the leader is ready; a plan places them all.

Called by `apis/expansion.py` and `apis/validation.py`.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt

from gpucap.apis.core import (
    Affinity,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    PodTemplateSpec,
)
from gpucap.apis.meta import (
    IntOrString,
    KarpenterModel,
    LabelSelector,
    LabelSelectorRequirement,
    NamespacedObjectMeta,
)
from gpucap.apis.workloads import PodGroup, build_pod

__all__ = [
    "EXCLUSIVE_TOPOLOGY",
    "GROUP_KEY",
    "LeaderWorkerSet",
    "exclusive_affinity",
    "lws_pod_groups",
    "sha1_hex",
]

PREFIX = "leaderworkerset.sigs.k8s.io/"
SET_NAME = PREFIX + "name"
GROUP_INDEX = PREFIX + "group-index"
WORKER_INDEX = PREFIX + "worker-index"
GROUP_KEY = PREFIX + "group-key"
SIZE = PREFIX + "size"
EXCLUSIVE_TOPOLOGY = PREFIX + "exclusive-topology"
SUBGROUP_EXCLUSIVE_TOPOLOGY = PREFIX + "subgroup-exclusive-topology"

Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]


class SubGroupPolicy(KarpenterModel):
    subgroup_policy_type: Literal["LeaderWorker", "LeaderExcluded"] = Field(
        default="LeaderWorker", alias="subGroupPolicyType"
    )
    subgroup_size: Int32 | None = Field(default=None, alias="subGroupSize")


class LeaderWorkerTemplate(KarpenterModel):
    worker_template: PodTemplateSpec
    leader_template: PodTemplateSpec | None = None
    size: Int32 = 1
    restart_policy: Literal[
        "Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"
    ] = "RecreateGroupOnPodRestart"
    subgroup_policy: SubGroupPolicy | None = Field(default=None, alias="subGroupPolicy")
    volume_claim_templates: list[dict[str, Any]] = Field(default_factory=list)
    persistent_volume_claim_retention_policy: dict[str, Any] | None = None


class RollingUpdateConfiguration(KarpenterModel):
    partition: Int32 = 0
    max_unavailable: IntOrString = 1
    max_surge: IntOrString = 0


class RolloutStrategy(KarpenterModel):
    type: Literal["RollingUpdate"] = "RollingUpdate"
    rolling_update_configuration: RollingUpdateConfiguration | None = None


class NetworkConfig(KarpenterModel):
    subdomain_policy: Literal["Shared", "UniquePerReplica"] | None = None


class LeaderWorkerSetSpec(KarpenterModel):
    leader_worker_template: LeaderWorkerTemplate
    replicas: Int32 = 1
    rollout_strategy: RolloutStrategy | None = None
    startup_policy: Literal["LeaderCreated", "LeaderReady"] = "LeaderCreated"
    network_config: NetworkConfig | None = None


class LeaderWorkerSet(KarpenterModel):
    api_version: Literal["leaderworkerset.x-k8s.io/v1"] = "leaderworkerset.x-k8s.io/v1"
    kind: Literal["LeaderWorkerSet"] = "LeaderWorkerSet"
    metadata: NamespacedObjectMeta
    spec: LeaderWorkerSetSpec
    status: dict[str, Any] | None = None


def sha1_hex(text: str) -> str:
    """The operators' `Sha1Hash`: hex SHA-1 of the text (LWS group keys, JobSet job keys)."""
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def exclusive_affinity(
    spec: PodSpec,
    label: str,
    value: str,
    topology_key: str,
    *,
    exclusive: bool,
    extra_anti: tuple[LabelSelectorRequirement, ...] = (),
) -> PodSpec:
    """`spec` plus a required pod affinity to pods with `label=value` on `topology_key` and,
    when `exclusive`, a required anti-affinity to pods with another value of `label` there
    (the LWS and JobSet webhooks' SetExclusiveAffinities)."""
    aff = spec.affinity or Affinity()
    together = PodAffinityTerm(
        label_selector=LabelSelector(
            match_expressions=[LabelSelectorRequirement(key=label, operator="In", values=[value])]
        ),
        topology_key=topology_key,
    )
    pod_affinity = aff.pod_affinity or PodAffinity()
    pod_affinity = pod_affinity.model_copy(
        update={
            "required_during_scheduling_ignored_during_execution": [
                *pod_affinity.required_during_scheduling_ignored_during_execution,
                together,
            ]
        }
    )
    anti = aff.pod_anti_affinity or PodAffinity()
    if exclusive:
        apart = PodAffinityTerm(
            label_selector=LabelSelector(
                match_expressions=[
                    LabelSelectorRequirement(key=label, operator="Exists"),
                    LabelSelectorRequirement(key=label, operator="NotIn", values=[value]),
                    *extra_anti,
                ]
            ),
            topology_key=topology_key,
        )
        anti = anti.model_copy(
            update={
                "required_during_scheduling_ignored_during_execution": [
                    *anti.required_during_scheduling_ignored_during_execution,
                    apart,
                ]
            }
        )
    affinity = aff.model_copy(update={"pod_affinity": pod_affinity, "pod_anti_affinity": anti})
    return spec.model_copy(update={"affinity": affinity})


def lws_pod_groups(lws: LeaderWorkerSet) -> list[PodGroup]:
    """Leaders (`<lws>-<g>`) then workers (`<lws>-<g>-<w>`), as the LWS controller makes them."""
    name = lws.metadata.name
    namespace = lws.metadata.namespace
    tpl = lws.spec.leader_worker_template
    replicas, size = lws.spec.replicas, tpl.size
    leader_tpl = tpl.leader_template or tpl.worker_template
    worker_tpl = tpl.worker_template
    topology = lws.metadata.annotations.get(EXCLUSIVE_TOPOLOGY)
    base_annotations = {SIZE: str(size)}
    if topology:
        base_annotations[EXCLUSIVE_TOPOLOGY] = topology

    def group_key(g: int) -> str:
        return sha1_hex(f"{namespace}/{name}-{g}")

    def make_leader(g: int) -> Pod:
        key = group_key(g)
        labels = {
            **leader_tpl.metadata.labels,
            SET_NAME: name,
            WORKER_INDEX: "0",
            GROUP_INDEX: str(g),
            GROUP_KEY: key,
        }
        spec = leader_tpl.spec
        if topology:
            spec = exclusive_affinity(spec, GROUP_KEY, key, topology, exclusive=True)
        annotations = {**leader_tpl.metadata.annotations, **base_annotations}
        return build_pod(lws, f"{name}-{g}", spec, labels, annotations)

    per_group = max(size - 1, 0)

    def make_worker(k: int) -> Pod:
        g, w = divmod(k, per_group) if per_group else (k, 0)
        key = group_key(g)
        labels = {
            **worker_tpl.metadata.labels,
            SET_NAME: name,
            GROUP_INDEX: str(g),
            GROUP_KEY: key,
            WORKER_INDEX: str(w + 1),
        }
        spec = worker_tpl.spec
        if topology:
            # Stand-in for the node selector the controller copies from the bound leader.
            spec = exclusive_affinity(spec, GROUP_KEY, key, topology, exclusive=False)
        annotations = {
            **worker_tpl.metadata.annotations,
            **base_annotations,
            PREFIX + "leader-name": f"{name}-{g}",
        }
        return build_pod(lws, f"{name}-{g}-{w + 1}", spec, labels, annotations)

    leader_path = (
        ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec")
        if tpl.leader_template is not None
        else ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")
    )
    groups = [PodGroup(leader_path, max(replicas, 0), make_leader)]
    if per_group:
        groups.append(
            PodGroup(
                ("spec", "leaderWorkerTemplate", "workerTemplate", "spec"),
                max(replicas, 0) * per_group,
                make_worker,
            )
        )
    return groups
