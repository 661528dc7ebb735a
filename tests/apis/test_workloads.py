"""Workloads expand into the pods their controllers would create, named `<name>-<i>`."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.expansion import expand, expand_keys
from gpucap.apis.serde import load_paths
from tests.builders import (
    DELETE,
    GPU_TOLERATION,
    daemonset,
    deployment,
    edit,
    job,
    jobset,
    leaderworkerset,
    load,
    pod,
    pod_spec,
    raycluster,
    rayjob,
    rayservice,
)
from tests.realworld.corpus import PROVENANCE, ROOT


@pytest.mark.parametrize(
    ("kind", "replicas", "expected"),
    [
        ("Deployment", 3, ["vllm-0", "vllm-1", "vllm-2"]),
        ("StatefulSet", 2, ["vllm-0", "vllm-1"]),
        ("ReplicaSet", 1, ["vllm-0"]),
        ("Deployment", 0, []),
    ],
)
def test_replicated_workloads_make_replicas_pods_named_name_dash_index(
    kind: str, replicas: int, expected: list[str]
) -> None:
    doc = edit(deployment(replicas=replicas), "kind", kind)
    pods = load(doc).objects.pods
    assert [p.metadata.name for p in pods] == expected


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [(3, None, 3), (3, 2, 2), (2, 5, 2), (0, None, 0)],
)
def test_a_job_makes_parallelism_pods_capped_by_completions(
    parallelism: int, completions: int | None, count: int
) -> None:
    pods = load(job(parallelism=parallelism, completions=completions)).objects.pods
    assert len(pods) == count


def test_expanded_pods_carry_the_template_namespace_labels_spec_and_owner() -> None:
    doc = edit(
        deployment(replicas=2, gpu=1, tolerations=[GPU_TOLERATION]), "metadata.namespace", "ml"
    )
    pods = load(doc).objects.pods
    first = pods[0]
    assert first.key == "ml/vllm-0"
    assert first.metadata.labels == {"app": "vllm"}
    assert first.spec.tolerations[0].key == "nvidia.com/gpu"
    assert str(first.spec.containers[0].resources.requests["nvidia.com/gpu"]) == "1"
    owner = first.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.controller) == ("Deployment", "vllm", True)


def test_expanded_pods_have_distinct_uids_that_are_the_same_on_every_load() -> None:
    a = [p.metadata.uid for p in load(deployment(replicas=3)).objects.pods]
    b = [p.metadata.uid for p in load(deployment(replicas=3)).objects.pods]
    assert a == b
    assert len(set(a)) == 3


def test_daemonsets_are_not_expanded_into_pods() -> None:
    objs = load(daemonset(), pod()).objects
    assert [p.metadata.name for p in objs.pods] == ["web-0"]
    assert [d.metadata.name for d in objs.daemonsets] == ["nvidia-device-plugin"]


def test_pods_and_workloads_keep_input_order() -> None:
    objs = load(pod("first"), deployment("mid", replicas=2), pod("last")).objects
    assert [p.metadata.name for p in objs.pods] == ["first", "mid-0", "mid-1", "last"]


# ---- operator workloads: the pods KubeRay, LWS and JobSet create -------------------------------
def names(*docs: dict[str, Any]) -> list[str]:
    result = load(*docs)
    assert result.errors == [], [str(e) for e in result.errors]
    return [p.metadata.name for p in result.objects.pods]


def test_rayservice_creates_head_and_worker_pods() -> None:
    pods = load(rayservice("llm", workers=2)).objects.pods
    assert [p.metadata.name for p in pods] == [
        "llm-head",
        "llm-gpu-group-worker-0",
        "llm-gpu-group-worker-1",
    ]
    head, worker = pods[0], pods[1]
    assert head.metadata.labels["ray.io/node-type"] == "head"
    assert head.metadata.labels["ray.io/group"] == "headgroup"
    assert worker.metadata.labels["ray.io/group"] == "gpu-group"
    assert worker.metadata.labels["ray.io/cluster"] == "llm"
    assert worker.spec.tolerations[0].key == "nvidia.com/gpu"
    assert str(worker.spec.containers[0].resources.requests["nvidia.com/gpu"]) == "1"
    owner = worker.metadata.owner_references[0]
    assert (owner.kind, owner.name) == ("RayService", "llm")


@pytest.mark.parametrize(
    ("group", "count"),
    [
        ({}, 2),  # replicas 2, min 0, max 2^31-1
        ({"minReplicas": 3}, 3),  # replicas below minReplicas: raised to it
        ({"maxReplicas": 1}, 1),  # above maxReplicas: lowered to it
        ({"numOfHosts": 4}, 8),  # each replica is numOfHosts pods
        ({"suspend": True}, 0),
    ],
)
def test_a_ray_worker_group_makes_replicas_clamped_to_min_max_times_num_of_hosts(
    group: dict[str, Any], count: int
) -> None:
    assert len(names(raycluster(workers=2, **group))) == 1 + count


def test_a_ray_worker_group_without_replicas_starts_at_min_replicas() -> None:
    # CRD default replicas 0, raised to minReplicas
    assert len(names(raycluster(workers=None, minReplicas=1, maxReplicas=4))) == 2


def test_ray_autoscaling_adds_the_autoscaler_container_to_the_head() -> None:
    doc = edit(raycluster(), "spec.enableInTreeAutoscaling", True)
    head = load(doc).objects.pods[0]
    assert [c.name for c in head.spec.containers][-1] == "autoscaler"
    assert str(head.spec.containers[-1].resources.requests["cpu"]) == "500m"
    custom = edit(
        doc, "spec.autoscalerOptions", {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    )
    assert str(load(custom).objects.pods[0].spec.containers[-1].resources.requests["cpu"]) == "1"


def test_ray_workers_wait_for_gcs_with_an_init_container() -> None:
    worker = load(raycluster()).objects.pods[1]
    assert worker.spec.init_containers[-1].name == "wait-gcs-ready"


def test_a_rayjob_adds_a_submitter_pod_in_k8s_job_mode_only() -> None:
    assert names(rayjob("train", workers=1)) == [
        "train-head",
        "train-gpu-group-worker-0",
        "train-0",
    ]
    submitter = load(rayjob("train")).objects.pods[-1]
    assert str(submitter.spec.containers[0].resources.requests["cpu"]) == "500m"
    assert names(rayjob("train", workers=1, submissionMode="HTTPMode")) == [
        "train-head",
        "train-gpu-group-worker-0",
    ]
    sidecar = load(rayjob("train", workers=0, submissionMode="SidecarMode")).objects.pods
    assert [c.name for c in sidecar[0].spec.containers][-1] == "ray-job-submitter"


def test_a_rayjob_on_an_existing_cluster_makes_only_the_submitter() -> None:
    doc = rayjob("train", clusterSelector={"ray.io/cluster": "shared"})
    assert names(doc) == ["train-0"]


def test_suspended_ray_objects_make_no_pods() -> None:
    assert names(rayjob("train", suspend=True)) == []
    assert names(edit(rayservice(), "spec.suspend", True)) == []


def test_leaderworkerset_creates_replicas_times_size_pods() -> None:
    pods = load(leaderworkerset("vllm", replicas=2, size=3)).objects.pods
    assert [p.metadata.name for p in pods] == [
        "vllm-0",
        "vllm-1",
        "vllm-0-1",
        "vllm-0-2",
        "vllm-1-1",
        "vllm-1-2",
    ]
    by_name = {p.metadata.name: p.metadata.labels for p in pods}
    assert by_name["vllm-1-2"]["leaderworkerset.sigs.k8s.io/group-index"] == "1"
    assert by_name["vllm-1-2"]["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    assert by_name["vllm-1"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    # the group key is the same for the leader and its workers, and differs between groups
    key = "leaderworkerset.sigs.k8s.io/group-key"
    assert by_name["vllm-1"][key] == by_name["vllm-1-1"][key] != by_name["vllm-0"][key]


def test_leaderworkerset_defaults_to_one_group_of_one_pod() -> None:
    assert names(leaderworkerset("vllm", replicas=None, size=None)) == ["vllm-0"]


def test_lws_leaders_use_the_leader_template_when_given() -> None:
    doc = edit(
        leaderworkerset("vllm", replicas=1, size=2),
        "spec.leaderWorkerTemplate.leaderTemplate",
        {"metadata": {"labels": {"role": "leader"}}, "spec": pod_spec(cpu="2")},
    )
    leader, worker = load(doc).objects.pods
    assert leader.metadata.labels["role"] == "leader"
    assert "role" not in worker.metadata.labels
    assert "nvidia.com/gpu" not in leader.spec.containers[0].resources.requests


def test_lws_exclusive_placement_puts_each_group_alone_in_its_topology_domain() -> None:
    doc = edit(
        leaderworkerset("vllm", replicas=2, size=2),
        "metadata.annotations",
        {"leaderworkerset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone"},
    )
    leader, _, worker, _ = load(doc).objects.pods
    aff = leader.spec.affinity
    assert aff is not None
    assert aff.pod_affinity is not None
    assert aff.pod_anti_affinity is not None
    (together,) = aff.pod_affinity.required_during_scheduling_ignored_during_execution
    (apart,) = aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    key = leader.metadata.labels["leaderworkerset.sigs.k8s.io/group-key"]
    assert together.topology_key == apart.topology_key == "topology.kubernetes.io/zone"
    assert together.label_selector is not None
    assert together.label_selector.match_expressions[0].values == [key]
    assert apart.label_selector is not None
    assert [e.operator for e in apart.label_selector.match_expressions] == ["Exists", "NotIn"]
    # workers follow their leader's domain (a stand-in for the node selector LWS copies)
    waff = worker.spec.affinity
    assert waff is not None
    assert waff.pod_affinity is not None
    assert waff.pod_affinity.required_during_scheduling_ignored_during_execution == [together]
    assert waff.pod_anti_affinity is None or not (
        waff.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    )


@pytest.mark.parametrize(
    ("replicas", "parallelism", "completions", "count"),
    [(2, 2, None, 4), (3, 4, 2, 6), (1, 1, None, 1), (0, 2, None, 0)],
)
def test_jobset_creates_replicas_times_job_pods(
    replicas: int, parallelism: int, completions: int | None, count: int
) -> None:
    assert (
        len(names(jobset(replicas=replicas, parallelism=parallelism, completions=completions)))
        == count
    )


def test_jobset_pods_are_named_jobset_replicatedjob_job_index_pod_index() -> None:
    pods = load(jobset("train", replicas=2, parallelism=2)).objects.pods
    assert [p.metadata.name for p in pods] == [
        "train-workers-0-0",
        "train-workers-0-1",
        "train-workers-1-0",
        "train-workers-1-1",
    ]
    assert pods[3].metadata.labels["jobset.sigs.k8s.io/job-index"] == "1"
    assert pods[3].metadata.labels["batch.kubernetes.io/job-completion-index"] == "1"


def test_a_suspended_jobset_makes_no_pods() -> None:
    assert names(edit(jobset(), "spec.suspend", True)) == []


def test_jobset_exclusive_placement_makes_job_leaders_anti_affine_and_followers_follow() -> None:
    doc = edit(
        jobset("train", replicas=2, parallelism=2),
        "metadata.annotations",
        {"alpha.jobset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone"},
    )
    leader, follower, *_ = load(doc).objects.pods
    assert leader.spec.affinity is not None
    assert leader.spec.affinity.pod_anti_affinity is not None
    (apart,) = (
        leader.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    )
    assert apart.label_selector is not None
    assert [(e.key, e.operator) for e in apart.label_selector.match_expressions] == [
        ("jobset.sigs.k8s.io/job-key", "Exists"),
        ("jobset.sigs.k8s.io/job-key", "NotIn"),
        ("jobset.sigs.k8s.io/priority", "In"),
    ]
    assert follower.spec.affinity is not None
    assert follower.spec.affinity.pod_affinity is not None
    assert not (
        follower.spec.affinity.pod_anti_affinity
        and follower.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    )


def test_jobset_node_selector_strategy_selects_the_labelled_nodes_and_tolerates_their_taint() -> (
    None
):
    doc = edit(
        jobset("train", replicas=1, parallelism=1),
        "metadata.annotations",
        {
            "alpha.jobset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone",
            "alpha.jobset.sigs.k8s.io/node-selector": "true",
        },
    )
    (p,) = load(doc).objects.pods
    assert (
        p.spec.node_selector["alpha.jobset.sigs.k8s.io/namespaced-job"] == "default_train-workers-0"
    )
    assert any(t.key == "alpha.jobset.sigs.k8s.io/no-schedule" for t in p.spec.tolerations)
    assert p.spec.affinity is None


def test_operator_pods_have_stable_distinct_uids() -> None:
    a = [p.metadata.uid for p in load(rayservice(), leaderworkerset(), jobset()).objects.pods]
    b = [p.metadata.uid for p in load(rayservice(), leaderworkerset(), jobset()).objects.pods]
    assert a == b
    assert len(set(a)) == len(a)


# ---- what the CRDs and the operators reject ------------------------------------------------------
@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            edit(rayservice(), "spec.rayClusterConfig.workerGroupSpecs[0].replica", 2),
            "test.yaml[0] RayService/default/llm: spec.rayClusterConfig.workerGroupSpecs[0]."
            "replica: unknown field 'replica' (did you mean 'replicas'?)",
        ),
        (
            edit(raycluster(), "spec.workerGroupSpecs[0].replicas", "2"),
            "test.yaml[0] RayCluster/default/ray: spec.workerGroupSpecs[0].replicas: ",
        ),
        (
            edit(
                edit(raycluster(), "spec.workerGroupSpecs[0].minReplicas", 3),
                "spec.workerGroupSpecs[0].maxReplicas",
                2,
            ),
            "test.yaml[0] RayCluster/default/ray: spec.workerGroupSpecs[0].minReplicas: worker group "
            "gpu-group has minReplicas 3 greater than maxReplicas 2",
        ),
        (
            edit(
                raycluster(),
                "spec.workerGroupSpecs[1]",
                raycluster()["spec"]["workerGroupSpecs"][0],
            ),
            "spec.workerGroupSpecs[1].groupName: worker group names must be unique: 'gpu-group'",
        ),
        (
            # A DNS subdomain (the API server's rule) but not a DNS-1035 label (KubeRay's).
            edit(raycluster(), "metadata.name", "1ray"),
            "metadata.name: RayCluster name '1ray' must be a DNS-1035 label",
        ),
        (
            edit(rayjob(), "spec.submissionMode", "Batch"),
            "spec.submissionMode: ",
        ),
        (
            edit(rayjob(), "spec.rayClusterSpec", DELETE),
            "spec.rayClusterSpec: a RayJob needs rayClusterSpec, or clusterSelector",
        ),
        (
            edit(leaderworkerset(), "spec.leaderWorkerTemplate.size", 0),
            "spec.leaderWorkerTemplate.size: size must be equal or greater than 1",
        ),
        (
            edit(leaderworkerset(), "spec.leaderWorkerTemplate.workerTemplate.spec.toleration", []),
            "spec.leaderWorkerTemplate.workerTemplate.spec.toleration: unknown field 'toleration'",
        ),
        (
            edit(leaderworkerset(), "spec.startupPolicy", "Eager"),
            "spec.startupPolicy: ",
        ),
        (
            edit(jobset(), "spec.replicatedJobs[0].dependsOn", [{"name": "x", "status": "Ready"}]),
            "spec.replicatedJobs[0].dependsOn: DependsOn can't be set for the first ReplicatedJob",
        ),
        (
            edit(jobset(), "spec.replicatedJobs[0].replica", 2),
            "spec.replicatedJobs[0].replica: unknown field 'replica' (did you mean 'replicas'?)",
        ),
    ],
)
def test_operator_kinds_are_rejected_as_the_api_server_and_operators_would(
    doc: dict[str, Any], expected: str
) -> None:
    errors = [str(e) for e in load(doc).errors]
    assert errors, "expected an error"
    assert any(expected in e for e in errors), errors
    assert all("\n" not in e for e in errors)


# ---- what a plan of operator pods leaves out, said in notes ---------------------------------------
def test_a_plan_notes_how_far_the_ray_autoscaler_can_scale_a_worker_group() -> None:
    doc = edit(raycluster(workers=1, maxReplicas=4), "spec.enableInTreeAutoscaling", True)
    assert load(doc).objects.notes == [
        "RayCluster/default/ray: worker group gpu-group starts with 1 pod(s); the Ray autoscaler "
        "can scale it to 4 (maxReplicas 4)"
    ]
    # without the autoscaler nothing scales the group
    assert load(raycluster(workers=1, maxReplicas=4)).objects.notes == []


def test_a_plan_notes_pods_that_operators_start_later() -> None:
    lws = edit(leaderworkerset(), "spec.startupPolicy", "LeaderReady")
    js = edit(
        edit(
            jobset(),
            "spec.replicatedJobs[1]",
            {**jobset()["spec"]["replicatedJobs"][0], "name": "eval"},
        ),
        "spec.replicatedJobs[1].dependsOn",
        [{"name": "workers", "status": "Complete"}],
    )
    notes = load(lws, js).objects.notes
    assert notes == [
        "LeaderWorkerSet/default/vllm: startupPolicy LeaderReady creates the workers once their "
        "leader is ready; planned together",
        "JobSet/default/train: replicated job(s) eval start after the jobs they depend on; planned "
        "at the same time",
    ]


def _corpus_workloads() -> list[Any]:
    files = sorted(str(ROOT / f["file"]) for f in PROVENANCE)
    ml = edit(deployment(replicas=4, gpu=1), "metadata.namespace", "ml")
    built = [load(ml).objects.workloads[0], load(job(parallelism=3)).objects.workloads[0]]
    return built + [w for f in files for w in load_paths([f]).objects.workloads]


def test_expand_keys_are_the_expanded_pods_keys_and_build_the_same_pods() -> None:
    # The simulated cluster diffs a scaled workload by these keys and builds only new pods.
    workloads = _corpus_workloads()
    assert len(workloads) >= 10
    for w in workloads:
        pods = expand(w)
        keyed = expand_keys(w)
        assert [k for k, _ in keyed] == [p.key for p in pods]
        assert [build() for _, build in keyed] == pods
