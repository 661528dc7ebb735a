"""The world's shared per-spec values are the plain computation's and stay so: what a pod takes
from a node (`KubeScheduler.requests_of`, its requests and `pods: 1`, shared per `PodSpec` object) equals
`add(pod_requests(spec), {"pods": 1})` for every pod, also after whole runs in which the
kube-scheduler model added and subtracted it for every bind, eviction and deletion (a caller
that changed the shared dict would show here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.scheduling.resources import add, pod_requests
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import World

STORIES = Path(__file__).parent / "stories"


@pytest.mark.parametrize(
    "story", ["underutilized", "interrupt", "expire-zero-budget", "timeslicing"]
)
def test_what_a_pod_takes_is_the_plain_sum_after_a_whole_run(story: str) -> None:
    path = STORIES / f"{story}.yaml"
    world = World(load_scenario(str(path), load_catalog), load_catalog("us-east-1"))
    requests_of = world.binder.requests_of
    before = {p.key: requests_of(p) for p in world.cluster.pods()}
    world.run()
    pods = world.cluster.pods()
    assert pods
    for pod in pods:
        plain = add(pod_requests(pod.spec), {"pods": 1})
        assert requests_of(pod) == plain
        assert requests_of(pod) is requests_of(pod)  # shared, not rebuilt
    for key, value in before.items():
        pod = next((p for p in pods if p.key == key), None)
        if pod is not None:
            assert value == add(pod_requests(pod.spec), {"pods": 1})
