"""The simulated EC2's kept listings and descriptions (`SimulatedEC2._listing`, `_describe`)
and the AWS cloud provider's kept `list()` answer are the plain computation's: after any mix of
launches, terminations, tag changes, spot interruptions and clock steps (across the launch
latency, the two-minute notice and the termination latency), an EC2 that keeps its answers
and one that describes every instance anew give equal responses, and a cloud provider over
each lists equal NodeClaims."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.runtime.clock import FakeClock
from tests.builders import load, nodeclass

CATALOG = load_catalog("us-east-1")
NODEPOOL = "karpenter.sh/nodepool"
CLUSTER = "eks:eks-cluster-name"
LISTING = [
    {"Name": "tag-key", "Values": [NODEPOOL]},
    {"Name": f"tag:{CLUSTER}", "Values": ["demo"]},
    {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
]

operation = st.one_of(
    st.tuples(st.just("launch"), st.sampled_from(["spot", "on-demand"]), st.booleans()),
    st.tuples(st.just("terminate"), st.integers(0, 9)),
    st.tuples(st.just("tag"), st.integers(0, 9), st.sampled_from(["a", "b"])),
    st.tuples(st.just("interrupt"), st.integers(0, 9)),
    st.tuples(st.just("wait"), st.sampled_from([0.0, 1.0, 14.0, 15.0, 29.5, 30.0, 60.0, 120.0])),
    st.tuples(st.just("list"), st.booleans()),
)


def fleet(capacity_type: str, tagged: bool) -> dict[str, Any]:
    tags = [{"Key": CLUSTER, "Value": "demo"}, {"Key": "karpenter.sh/nodeclaim", "Value": "nc"}]
    if tagged:
        tags.append({"Key": NODEPOOL, "Value": "gpu"})
    return {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "DefaultTargetCapacityType": capacity_type,
            "TotalTargetCapacity": 1,
        },
        "LaunchTemplateConfigs": [
            {"Overrides": [{"InstanceType": "g5.xlarge", "AvailabilityZone": "us-east-1a"}]}
        ],
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
    }


def apply(ec2: SimulatedEC2, op: tuple[Any, ...]) -> None:
    ids = sorted(ec2.instances)
    kind = op[0]
    if kind == "launch":
        ec2.create_fleet(**fleet(op[1], op[2]))
    elif kind == "terminate" and ids:
        ec2.terminate_instances(InstanceIds=[ids[op[1] % len(ids)]])
    elif kind == "tag" and ids:
        ec2.create_tags(Resources=[ids[op[1] % len(ids)]], Tags=[{"Key": "x", "Value": op[2]}])
    elif kind == "interrupt" and ids:
        target = ids[op[1] % len(ids)]
        if ec2.instances[target].capacity_type == "spot":
            ec2.interrupt(target)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=30))
def test_kept_listings_are_the_listings_described_anew(ops: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    kept = SimulatedEC2(CATALOG, clock)
    plain = SimulatedEC2(CATALOG, clock, cache_descriptions=False)
    nc = load(nodeclass("gpu")).objects.nodeclasses[0]
    clouds = [
        AWSCloudProvider(ec2, CATALOG, clock, {"gpu": nc}, cluster_name="demo")
        for ec2 in (kept, plain)
    ]
    for op in ops:
        if op[0] == "wait":
            clock.advance(op[1])
        elif op[0] != "list":
            apply(kept, op)
            apply(plain, op)
        # Listed after every step (both filter sets), so a kept answer is always tried.
        filters = LISTING if op[0] != "list" or op[1] else []
        assert kept.describe_instances(Filters=filters) == plain.describe_instances(Filters=filters)
        assert clouds[0].list() == clouds[1].list()
        ids = sorted(kept.instances)
        if ids:
            assert kept.describe_instances(InstanceIds=ids) == plain.describe_instances(
                InstanceIds=ids
            )
    assert [i.advance(clock.now()) for i in kept.instances.values()] == [
        i.advance(clock.now()) for i in plain.instances.values()
    ]


def test_an_unchanged_fleet_is_listed_from_the_kept_answer_until_a_state_changes() -> None:
    clock = FakeClock()
    ec2 = SimulatedEC2(CATALOG, clock)
    ec2.create_fleet(**fleet("spot", True))
    first = ec2.describe_instances(Filters=LISTING)["Reservations"][0]["Instances"]
    assert first[0]["State"]["Name"] == "pending"
    clock.advance(5)
    again = ec2.describe_instances(Filters=LISTING)["Reservations"][0]["Instances"]
    assert again[0] is first[0]  # kept: nothing changed, no state boundary crossed
    clock.advance(10)  # the 15 s launch latency is over
    running = ec2.describe_instances(Filters=LISTING)["Reservations"][0]["Instances"]
    assert running[0]["State"]["Name"] == "running"
    (instance_id,) = ec2.instances
    ec2.interrupt(instance_id)
    clock.advance(120)  # the notice runs out: EC2 reclaims it, the listing drops it
    assert ec2.describe_instances(Filters=LISTING) == {"Reservations": []}
