"""The Provisioner over the CloudProvider seam: it asks the provider for each dynamic NodePool's
instance types, and the NodeClaims it decides are the ones `create` takes, whichever provider
answers (`controllers/provisioning/provisioner.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.labels import CAPACITY_TYPE, INITIALIZED, INSTANCE_TYPE, NODEPOOL, REGISTERED
from gpucap.apis.nodepool import NodeClaim
from gpucap.apis.serde import Manifests
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.settings import node_class_settings
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import CloudProvider, FakeCloudProvider
from gpucap.controllers.provisioning import Provisioner
from gpucap.controllers.provisioning.provisioner import node_selector
from gpucap.operator.plan import plan, plan_provider, pools_for
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.state.cluster import Cluster
from gpucap.state.snapshot import snapshot
from tests.builders import (
    GPU_TOLERATION,
    daemonset,
    deployment,
    edit,
    load,
    nodeclass,
    nodepool,
    pod,
)
from tests.state.builders import node

CATALOG = load_catalog("us-east-1")


def manifests(*extra: dict[str, Any]) -> Manifests:
    pool = edit(
        nodepool("gpu"),
        "spec.template.spec.startupTaints",
        [{"key": "nvidia.com/gpu.startup", "effect": "NoSchedule"}],
    )
    docs = [
        pool,
        nodeclass("gpu"),
        deployment("vllm", replicas=3, gpu=1, tolerations=[GPU_TOLERATION]),
        *extra,
    ]
    result = load(*docs)
    assert result.ok, [str(e) for e in result.errors]
    return result.objects


def fake_for(objs: Manifests) -> FakeCloudProvider:
    nc: EC2NodeClass = objs.nodeclasses[0]
    return FakeCloudProvider(CATALOG.instance_types(node_class_settings(nc)))


def aws_for(objs: Manifests) -> AWSCloudProvider:
    clock = FakeClock()
    api = SimulatedEC2(CATALOG, clock)
    api.publish_amis("1.36")
    return AWSCloudProvider(api, CATALOG, clock, {nc.name: nc for nc in objs.nodeclasses})


def first_node_claims(cp: CloudProvider, objs: Manifests) -> list[NodeClaim]:
    snap = snapshot(objs.pods, objs.nodes, objs.nodeclaims)
    provisioner = Provisioner(cp)
    results = provisioner.schedule(
        objs.nodepools, state_nodes=snap.nodes, daemonsets=objs.daemonsets, pending=snap.pending
    )
    return provisioner.node_claims(results)


def test_the_fake_and_aws_over_simulated_ec2_give_the_same_first_node_claims() -> None:
    objs = manifests()
    over_fake = first_node_claims(fake_for(objs), objs)
    over_aws = first_node_claims(aws_for(objs), objs)
    assert over_fake  # the three 1-GPU pods need at least one new NodeClaim
    assert [c.model_dump() for c in over_fake] == [c.model_dump() for c in over_aws]


def test_both_providers_launch_the_first_node_claim_as_the_same_offering() -> None:
    objs = manifests()
    fake, aws = fake_for(objs), aws_for(objs)
    claim = first_node_claims(aws, objs)[0]
    by_fake, by_aws = fake.create(claim), aws.create(claim)
    keys = (INSTANCE_TYPE, CAPACITY_TYPE, "topology.kubernetes.io/zone")
    assert [by_fake.metadata.labels[k] for k in keys] == [by_aws.metadata.labels[k] for k in keys]


def test_plan_and_the_provisioner_decide_the_same_first_node_claims() -> None:
    objs = manifests()
    made = plan(objs, CATALOG, max_passes=1)
    snap = snapshot(objs.pods, objs.nodes, objs.nodeclaims)
    provisioner = Provisioner(plan_provider(objs, CATALOG))
    results = provisioner.schedule(
        objs.nodepools, state_nodes=snap.nodes, daemonsets=objs.daemonsets, pending=snap.pending
    )
    claims = provisioner.node_claims(results)
    assert [c.name for c in made.node_claims] == [c.name for c in claims]
    for planned, new, claim in zip(made.node_claims, results.new_node_claims, claims, strict=True):
        assert [p.key for p in planned.pods] == [p.key for p in new.pods]
        offered = Requirements.from_node_selector(claim.spec.requirements)[INSTANCE_TYPE]
        assert sorted(it.name for it in planned.instance_types) == offered.sorted_values()


def test_the_provisioner_asks_the_provider_for_each_dynamic_nodepool_only() -> None:
    static = edit(edit(nodepool("fixed"), "spec.replicas", 1), "spec.limits", None)
    objs = manifests(static)
    fake = fake_for(objs)
    first_node_claims(fake, objs)
    assert [c for c in fake.calls if c[0] == "get_instance_types"] == [
        ("get_instance_types", "gpu")
    ]
    assert not [c for c in fake.calls if c[0] == "create"]  # launching is the caller's


def test_a_node_claim_carries_what_create_needs_and_no_scheduling_only_key() -> None:
    claim = first_node_claims(fake_for(objs := manifests()), objs)[0]
    reqs = Requirements.from_node_selector(claim.spec.requirements)
    options = reqs[INSTANCE_TYPE].sorted_values()
    assert options
    assert all(name.startswith(("g5.", "g6.")) for name in options)  # the pool's families
    assert reqs[CAPACITY_TYPE].sorted_values() == ["on-demand", "spot"]
    assert REGISTERED not in reqs
    assert INITIALIZED not in reqs
    assert claim.metadata.labels[NODEPOOL] == "gpu"
    assert claim.metadata.labels["team"] == "ml"
    assert claim.spec.node_class_ref.name == "gpu"
    assert [t.key for t in claim.spec.taints] == ["nvidia.com/gpu"]
    assert [t.key for t in claim.spec.startup_taints] == ["nvidia.com/gpu.startup"]
    # The three 1-GPU pods on one NodeClaim: their requests summed.
    assert claim.spec.resources.requests["nvidia.com/gpu"].value() == 3
    assert claim.spec.resources.requests["pods"].value() == 3


def test_a_node_claim_from_the_provisioner_launches_through_aws_create() -> None:
    objs = manifests()
    aws = aws_for(objs)
    claim = first_node_claims(aws, objs)[0]
    launched = aws.create(claim)
    assert launched.status.provider_id
    assert launched.metadata.labels[INSTANCE_TYPE].startswith(("g5.", "g6."))


@pytest.mark.parametrize(
    "requirement",
    [
        Requirement.new("a", "In", ["x", "y"]),
        Requirement.new("a", "NotIn", ["x"]),
        Requirement.new("a", "Exists"),
        Requirement.new("a", "DoesNotExist"),
        Requirement.new("a", "Gt", ["3"]),
        Requirement.new("a", "Lt", ["8"]),
        Requirement.new("a", "In", ["x", "y", "z"], min_values=2),
    ],
    ids=str,
)
def test_node_selector_reads_back_exactly(requirement: Requirement) -> None:
    reqs = Requirements.of(requirement)
    entries = node_selector(reqs)
    back = Requirements.of(
        *(
            Requirement.new(e["key"], e["operator"], e.get("values", ()), e.get("minValues"))
            for e in entries
        )
    )
    assert back == reqs


def test_a_nodepool_without_its_ec2nodeclass_is_planned_with_the_default_one() -> None:
    result = load(nodepool("gpu"))
    notes: list[str] = []
    (pool,) = pools_for(result.objects, CATALOG, notes)
    assert pool.instance_types is CATALOG.instance_types(None)
    assert notes == [
        "NodePool gpu: EC2NodeClass gpu is not in the input; "
        "planned with a default one (AL2023, 20Gi root volume)"
    ]


def test_a_caller_running_many_passes_names_the_node_claims() -> None:
    objs = manifests()
    snap = snapshot(objs.pods, objs.nodes, objs.nodeclaims)
    provisioner = Provisioner(fake_for(objs))
    results = provisioner.schedule(objs.nodepools, pending=snap.pending)
    counter = iter(range(7, 100))
    claims = provisioner.node_claims(results, names=lambda pool: f"{pool}-{next(counter)}")
    assert [c.name for c in claims] == [f"gpu-{7 + i}" for i in range(len(claims))]


def _passes() -> list[tuple[Manifests, Any]]:
    """Scheduling inputs that change from pass to pass the way a simulation's do: the same
    objects again, a node with a bound pod, a new DaemonSet object, a second NodePool."""
    plugin = daemonset()
    bigger = edit(daemonset(), "spec.template.spec.containers[0].resources.requests.cpu", "2")
    cpu_pool = edit(nodepool("cpu"), "spec.template.spec.taints", [])
    first = manifests(plugin)
    with_node = manifests(plugin, node("ip-1", pool="gpu", gpus=4))
    cluster = Cluster.from_manifests(with_node)
    cluster.bind("default/vllm-0", "ip-1")
    bound = cluster.snapshot()
    changed = manifests(bigger, cpu_pool, node("ip-1", pool="gpu", gpus=4))
    cluster2 = Cluster.from_manifests(changed)
    cluster2.bind("default/vllm-1", "ip-1")
    return [
        (first, snapshot(first.pods, first.nodes, first.nodeclaims)),
        (with_node, bound),
        (with_node, bound),
        (changed, cluster2.snapshot()),
        (with_node, bound),
    ]


def _decide(provisioner: Provisioner, objs: Manifests, snap: Any) -> list[Any]:
    results = provisioner.schedule(
        objs.nodepools, state_nodes=snap.nodes, daemonsets=objs.daemonsets, pending=snap.pending
    )
    claims = [c.model_dump() for c in provisioner.node_claims(results)]
    remaining = [(n.name, sorted(n.remaining.items())) for n in results.existing_nodes]
    return [claims, results.pods_on_existing_nodes(), results.pod_errors, remaining]


def test_a_provisioners_later_passes_decide_what_a_fresh_provisioner_decides() -> None:
    # The provisioner shares tables, DaemonSet groups, domains and node requirements between
    # its passes (PassCache); each pass must still be what it would be on its own.
    passes = _passes()
    objs = passes[0][0]
    fake = FakeCloudProvider(CATALOG.instance_types(node_class_settings(objs.nodeclasses[0])))
    shared = Provisioner(fake)
    for objs, snap in passes:
        assert _decide(shared, objs, snap) == _decide(Provisioner(fake), objs, snap)
    assert any(_decide(Provisioner(fake), o, s)[1] for o, s in passes)  # a node took pods


def test_plan_takes_an_alias_with_an_unfilled_placeholder_as_resolvable() -> None:
    # The workshop's EC2NodeClass is a template (al2023@${AMI_VERSION}): plan plans it before
    # `gpucap render` fills it, as it always has; lint reports the placeholder.
    nc = edit(nodeclass("gpu"), "spec.amiSelectorTerms", [{"alias": "al2023@${AMI_VERSION}"}])
    gpu_pod = pod("vllm-0", gpu=1, tolerations=[GPU_TOLERATION])
    out = plan(load(nc, nodepool("gpu"), gpu_pod).objects, CATALOG)
    assert len(out.node_claims) == 1
    assert not any("not Ready" in n for n in out.notes)
