"""Laws of reserved capacity in simulate over random reservations and workloads (issue 24):
a reservation never runs more instances at once than it had free, and `plan` and `simulate`
put the first provisioning of the same input into the same reservations."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from gpucap.apis.capacityreservation import Reservations, parse_reservations
from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.operator.plan import plan
from gpucap.runtime.clock import EPOCH
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.world import World

CATALOG = load_catalog("us-east-1")
TYPES = ("g6e.xlarge", "g6e.2xlarge")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")

_MANIFESTS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  amiSelectorTerms: [{alias: al2023@v20260827}]
  role: KarpenterNodeRole-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
  capacityReservationSelectorTerms: [{tags: {team: ml}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [g6e.xlarge, g6e.2xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: default}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: vllm}}
  template:
    metadata: {labels: {app: vllm}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.6.0
          resources: {requests: {cpu: "1"}, limits: {nvidia.com/gpu: "1"}}
"""


@st.composite
def _inputs(draw: st.DrawFn) -> tuple[int, list[dict[str, Any]], bool]:
    replicas = draw(st.integers(0, 6))
    dated = draw(st.booleans())  # Capacity Blocks that end within the run
    items = []
    for i in range(draw(st.integers(1, 3))):
        total = draw(st.integers(0, 3))
        item: dict[str, Any] = {
            "CapacityReservationId": f"cr-0{i}",
            "InstanceType": draw(st.sampled_from(TYPES)),
            "AvailabilityZone": draw(st.sampled_from(ZONES)),
            "OwnerId": "123456789012",
            "TotalInstanceCount": total,
            "AvailableInstanceCount": draw(st.integers(0, total)),
            "InstanceMatchCriteria": "targeted",
            "State": "active",
            "Tags": [{"Key": "team", "Value": "ml"}],
        }
        if dated:
            minutes = draw(st.integers(45, 100))
            item |= {
                "ReservationType": "capacity-block",
                "StartDate": EPOCH.isoformat(),
                "EndDate": (EPOCH + dt.timedelta(minutes=minutes)).isoformat(),
            }
        items.append(item)
    return replicas, items, dated


def _world(replicas: int, reservations: Reservations, duration: float) -> World:
    loaded = load_text(_MANIFESTS.replace("REPLICAS", str(replicas)), "m.yaml")
    assert not loaded.errors, [str(e) for e in loaded.errors]
    scenario = LoadedScenario(
        path="law.yaml",
        name="law",
        region="us-east-1",
        kubernetes_version="1.36",
        seed=1,
        duration=duration,
        initial=tuple(loaded.manifests),
        actions=(),
        images={},
        ami_releases=None,
        addons=(),
        timings={},
        reservations=reservations,
    )
    return World(scenario, CATALOG)


_LAW = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_LAW
@given(_inputs())
def test_a_reservation_never_runs_more_instances_than_it_had_free(
    drawn: tuple[int, list[dict[str, Any]], bool],
) -> None:
    replicas, items, _ = drawn
    note(repr(items))
    reservations = parse_reservations({"CapacityReservations": items}, source="law")
    world = _world(replicas, reservations, 2 * 3600.0)
    world.run()
    end = EPOCH + dt.timedelta(hours=2)
    for r in reservations.capacity_reservations:
        spans = [
            (i.launched_at, i.terminated_at or end)
            for i in world.ec2.instances.values()
            if i.reservation_id == r.capacity_reservation_id
        ]
        points = sorted({t for s in spans for t in s})
        most = max((sum(1 for a, b in spans if a <= t < b) for t in points), default=0)
        assert most <= r.available_instance_count, (r.capacity_reservation_id, spans)


@_LAW
@given(_inputs())
def test_plan_and_simulate_put_the_first_provisioning_into_the_same_reservations(
    drawn: tuple[int, list[dict[str, Any]], bool],
) -> None:
    replicas, items, _ = drawn
    note(repr(items))
    reservations = parse_reservations({"CapacityReservations": items}, source="law")
    loaded = load_text(_MANIFESTS.replace("REPLICAS", str(replicas)), "m.yaml")
    made = plan(dataclasses.replace(loaded.objects, reservations=reservations), CATALOG)
    planned = Counter(
        (c.launch.instance_type, c.launch.zone, c.launch.reservation_id)
        for c in made.node_claims
        if c.launch is not None and c.launch.reservation_id
    )
    world = _world(replicas, reservations, 120.0)
    world.run()
    simulated = Counter(
        (i.instance_type, i.zone, i.reservation_id)
        for i in world.ec2.instances.values()
        if i.reservation_id
    )
    assert simulated == planned
    assert len(world.ec2.instances) == len(made.node_claims)
