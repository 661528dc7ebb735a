"""Drift detection (`controllers/disruption/drift.py`): the Drifted condition as Karpenter sets
it — NodePool hash drift (which fields count), requirement drift, instance-type drift, and the
AWS provider's AMI, node-class and subnet drift — over AWSCloudProvider +
SimulatedEC2 on a FakeClock for the AWS rules and FakeCloudProvider for the core ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.hashing import (
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    nodepool_hash,
)
from gpucap.apis.labels import INSTANCE_TYPE, NODEPOOL
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import NodeClaimNotFoundError
from gpucap.controllers.disruption.drift import (
    DRIFTED,
    INSTANCE_TYPE_NOT_FOUND,
    NODEPOOL_DRIFTED,
    REQUIREMENTS_DRIFTED,
    DriftDetection,
)
from gpucap.controllers.disruption.methods import not_all_pods_would_schedule
from gpucap.controllers.nodeclaim import conditions as cond
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.runtime.clock import FakeClock
from gpucap.scheduling.instancetypes import InstanceType, Offering
from gpucap.scheduling.requirements import Requirements
from gpucap.state.cluster import Cluster
from tests.builders import GPU_TOLERATION, deployment, edit, load, nodeclass, nodepool
from tests.controllers.lifecycle_builders import World, provisioned, world

CATALOG = load_catalog("us-east-1")
K8S = "1.36"
OLD, NEW = "v20260714", "v20260827"
HOUR = 3600.0


# ---- the AWS world: SimulatedEC2 -> AWSCloudProvider, NodeClaims from the provisioner ----------
@dataclass
class Aws:
    cluster: Cluster
    ec2: SimulatedEC2
    cloud: AWSCloudProvider
    clock: FakeClock
    nodeclasses: dict[str, EC2NodeClass]
    drift: DriftDetection

    def apply_nodepool(self, **edits: Any) -> None:
        """Re-apply the NodePool `gpu` with `edits` (dotted paths under the NodePool)."""
        self.cluster.apply(_edited(self.cluster.nodepool("gpu"), edits))

    def apply_nodeclass(self, **edits: Any) -> None:
        """Re-apply the EC2NodeClass `gpu` with `edits` (the world's nodeclasses map too)."""
        nc = self.nodeclasses["gpu"]
        changed: EC2NodeClass = _edited(nc, edits)
        self.cluster.apply(changed)
        self.nodeclasses["gpu"] = changed

    def claim(self, name: str = "gpu-1") -> NodeClaim:
        nc = self.cluster.node_claim(name)
        assert nc is not None
        return nc


def _edited(obj: Any, edits: dict[str, Any]) -> Any:
    doc = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    for path, value in edits.items():
        doc = edit(doc, path, value)
    loaded = load(doc)
    assert loaded.ok, [str(e) for e in loaded.errors]
    return loaded.objects.items[0].obj


def aws(alias: str = "al2023@latest") -> Aws:
    """A GPU NodePool over an EC2NodeClass with `alias`, one pending 1-GPU pod, EKS AMIs
    published with `OLD` as the recommended release."""
    loaded = load(
        nodepool("gpu"),
        edit(nodeclass("gpu"), "spec.amiSelectorTerms", [{"alias": alias}]),
        deployment("vllm", replicas=1, gpu=1, tolerations=[GPU_TOLERATION]),
    )
    assert loaded.ok, [str(e) for e in loaded.errors]
    clock = FakeClock()
    cluster = Cluster.from_manifests(loaded.objects, clock=clock)
    ec2 = SimulatedEC2(CATALOG, clock)
    ec2.publish_amis(K8S, recommended=OLD)
    nodeclasses = {nc.name: nc for nc in cluster.nodeclasses()}
    cloud = AWSCloudProvider(ec2, CATALOG, clock, nodeclasses, kubernetes_version=K8S)
    return Aws(cluster, ec2, cloud, clock, nodeclasses, DriftDetection(cluster, cloud, clock))


def launch(a: Aws, name: str = "gpu-1") -> NodeClaim:
    """The provisioner's NodeClaim for the pending pod, launched by the lifecycle controller."""
    snap = a.cluster.snapshot()
    provisioner = Provisioner(a.cloud)
    results = provisioner.schedule(
        a.cluster.nodepools(), state_nodes=snap.nodes, pending=list(snap.pending)
    )
    (claim,) = provisioner.node_claims(results, names=lambda _: name)
    a.cluster.add_node_claim(claim)
    assert Lifecycle(a.cluster, a.cloud, a.clock).reconcile(name).launched
    return a.claim(name)


def drifted(claim: NodeClaim) -> str | None:
    """The Drifted condition's reason when True; None when there is no such condition."""
    c = cond.condition(claim, DRIFTED)
    if c is None:
        return None
    assert c.status == "True"
    return c.reason


# ---- AMI drift ----------------------------------------------------------------------------------
def test_at_latest_drifts_after_a_release_once_the_ssm_cache_expires() -> None:
    a = aws("al2023@latest")
    launched = launch(a)
    assert a.ec2.release_of(launched.status.image_id or "") == OLD
    assert a.drift.reconcile() == []
    a.ec2.publish_release(K8S, NEW)
    # Karpenter serves what SSM said for 24 hours from its first read (at the launch).
    a.clock.advance(24 * HOUR - 1)
    assert a.drift.reconcile() == []
    assert drifted(a.claim()) is None
    a.clock.advance(1)
    assert a.drift.reconcile() == [("gpu-1", "AMIDrift")]
    assert drifted(a.claim()) == "AMIDrift"
    # A node launched now gets the new release and is not drifted.
    a.cluster.delete_node_claim("gpu-1")
    fresh = launch(a, "gpu-2")
    assert a.ec2.release_of(fresh.status.image_id or "") == NEW
    assert a.drift.reconcile() == []


def test_a_pinned_alias_never_drifts_on_a_release() -> None:
    a = aws(f"al2023@{OLD}")
    launch(a)
    a.ec2.publish_release(K8S, NEW)
    for _ in range(4):
        a.clock.advance(24 * HOUR)
        assert a.drift.reconcile() == []
    assert drifted(a.claim()) is None


def test_bumping_a_pinned_alias_drifts_at_once() -> None:
    a = aws(f"al2023@{OLD}")
    launch(a)
    # The alias is not hashed (amiSelectorTerms is hash:"ignore"): the AMI itself drifts it,
    # with no SSM cache in the way (a new parameter is read for the first time).
    a.apply_nodeclass(**{"spec.amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]})
    assert a.drift.reconcile() == [("gpu-1", "AMIDrift")]


def test_the_drifted_condition_keeps_its_time_while_the_node_stays_drifted() -> None:
    a = aws(f"al2023@{OLD}")
    launch(a)
    a.apply_nodeclass(**{"spec.amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]})
    a.drift.reconcile()
    first = cond.condition(a.claim(), DRIFTED)
    a.clock.advance(600)
    assert a.drift.reconcile() == []  # not newly drifted
    again = cond.condition(a.claim(), DRIFTED)
    assert first is not None
    assert again is not None
    assert again.last_transition_time == first.last_transition_time


def test_drift_clears_when_the_node_class_is_changed_back() -> None:
    a = aws(f"al2023@{OLD}")
    launch(a)
    a.apply_nodeclass(**{"spec.amiSelectorTerms": [{"alias": f"al2023@{NEW}"}]})
    a.drift.reconcile()
    a.apply_nodeclass(**{"spec.amiSelectorTerms": [{"alias": f"al2023@{OLD}"}]})
    assert a.drift.reconcile() == []
    assert drifted(a.claim()) is None  # removed, not set False


# ---- EC2NodeClass hash --------------------------------------------------------------------------
def test_changing_the_nodeclass_block_devices_drifts_its_claims() -> None:
    a = aws()
    launch(a)
    a.apply_nodeclass(**{"spec.blockDeviceMappings[0].ebs.volumeSize": "300Gi"})
    assert a.drift.reconcile() == [("gpu-1", "NodeClassDrift")]


def test_reordering_block_devices_or_changing_selectors_does_not_drift() -> None:
    a = aws()
    two = [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "200Gi", "volumeType": "gp3"}},
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "500Gi", "volumeType": "gp3"}},
    ]
    a.apply_nodeclass(**{"spec.blockDeviceMappings": two})
    launch(a)
    a.apply_nodeclass(
        **{
            "spec.blockDeviceMappings": list(reversed(two)),
            "spec.subnetSelectorTerms": [{"tags": {"team": "ml"}}],
            "spec.securityGroupSelectorTerms": [{"tags": {"team": "ml"}}],
            "spec.amiFamily": "AL2023",  # the family the alias resolves to anyway
        }
    )
    assert a.drift.reconcile() == []


def test_changing_the_kubelet_or_user_data_drifts() -> None:
    for edits in (
        {"spec.kubelet": {"maxPods": 50}},
        {"spec.userData": "echo hello"},
        {"spec.tags": {"cost-center": "ml"}},
    ):
        a = aws()
        launch(a)
        a.apply_nodeclass(**edits)
        assert a.drift.reconcile() == [("gpu-1", "NodeClassDrift")], edits


# ---- subnets ----------------------------------------------------------------------------------
class MovedEC2(SimulatedEC2):
    """SimulatedEC2 whose subnets can go away."""

    hidden_subnets: set[str]

    def describe_subnets(self, **kwargs: Any) -> dict[str, Any]:
        out = super().describe_subnets(**kwargs)
        return {"Subnets": [s for s in out["Subnets"] if s["SubnetId"] not in self.hidden_subnets]}


def moved() -> Aws:
    a = aws()
    ec2 = MovedEC2(CATALOG, a.clock)
    ec2.hidden_subnets = set()
    ec2.publish_amis(K8S, recommended=OLD)
    a.ec2 = ec2
    a.cloud = AWSCloudProvider(ec2, CATALOG, a.clock, a.nodeclasses, kubernetes_version=K8S)
    a.drift = DriftDetection(a.cluster, a.cloud, a.clock)
    return a


def test_an_instance_whose_subnet_the_class_no_longer_has_is_subnet_drift() -> None:
    a = moved()
    launch(a)
    assert a.drift.reconcile() == []
    inst = a.ec2.instances[(a.claim().status.provider_id or "").rsplit("/", 1)[1]]
    assert isinstance(a.ec2, MovedEC2)
    a.ec2.hidden_subnets.add(inst.subnet_id)
    a.clock.advance(60)  # what EC2 says is asked once per instant
    assert a.drift.reconcile() == [("gpu-1", "SubnetDrift")]


def test_node_class_drift_is_reported_before_ami_drift() -> None:
    a = aws(f"al2023@{OLD}")
    launch(a)
    a.apply_nodeclass(
        **{"spec.amiSelectorTerms": [{"alias": f"al2023@{NEW}"}], "spec.userData": "echo hi"}
    )
    assert a.drift.reconcile() == [("gpu-1", "NodeClassDrift")]


def test_a_terminated_instance_leaves_the_condition_as_it_was() -> None:
    a = aws(f"al2023@{OLD}")
    launch(a)
    a.ec2.terminate_instances(InstanceIds=[(a.claim().status.provider_id or "").rsplit("/")[-1]])
    a.clock.advance(60)
    with pytest.raises(NodeClaimNotFoundError):
        a.cloud.is_drifted(a.claim())
    assert a.drift.reconcile() == []
    assert drifted(a.claim()) is None


# ---- NodePool hash ------------------------------------------------------------------------------
def test_changing_nodepool_weight_or_limits_does_not_drift() -> None:
    a = aws()
    launch(a)
    a.apply_nodepool(
        **{
            "spec.weight": 50,
            "spec.limits": {"nvidia.com/gpu": "64"},
            "spec.disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "2h",
                "budgets": [{"nodes": "1"}],
            },
        }
    )
    assert a.drift.reconcile() == []
    assert drifted(a.claim()) is None


def test_changing_nodepool_taints_drifts() -> None:
    a = aws()
    launch(a)
    assert a.claim().metadata.annotations[NODEPOOL_HASH_VERSION_ANNOTATION] == "v3"
    a.apply_nodepool(
        **{
            "spec.template.spec.taints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "team", "value": "ml", "effect": "NoSchedule"},
            ]
        }
    )
    assert a.drift.reconcile() == [("gpu-1", NODEPOOL_DRIFTED)]


def pool(**edits: Any) -> NodePool:
    np: NodePool = load(nodepool("gpu")).objects.nodepools[0]
    return _edited(np, edits) if edits else np


TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
OTHER = {"key": "team", "value": "ml", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("edits", "drifts"),
    [
        # spec.template: hashed (everything but the requirements)
        ({"spec.template.metadata.labels": {"team": "infra"}}, True),
        ({"spec.template.metadata.annotations": {"a": "b"}}, True),
        ({"spec.template.spec.taints": [TAINT, OTHER]}, True),
        ({"spec.template.spec.startupTaints": [OTHER]}, True),
        ({"spec.template.spec.nodeClassRef.name": "other"}, True),
        ({"spec.template.spec.expireAfter": "24h"}, True),
        ({"spec.template.spec.expireAfter": "Never"}, True),
        ({"spec.template.spec.terminationGracePeriod": "1h"}, True),
        # the same values written differently
        ({"spec.template.spec.expireAfter": "43200m"}, False),  # = 720h, the default
        ({"spec.template.spec.taints": [{**TAINT}]}, False),
        # spec.template.spec.requirements: hash:"ignore" (requirement drift instead)
        ({"spec.template.spec.requirements": []}, False),
        # outside the template
        ({"spec.weight": 10}, False),
        ({"spec.limits": {"cpu": "1000"}}, False),
        ({"spec.disruption.budgets": [{"nodes": "0"}]}, False),
        ({"spec.disruption.consolidationPolicy": "WhenEmpty"}, False),
        ({"spec.disruption.consolidateAfter": "Never"}, False),
    ],
    ids=str,
)
def test_which_nodepool_fields_change_its_hash(edits: dict[str, Any], drifts: bool) -> None:
    assert (nodepool_hash(pool(**edits)) != nodepool_hash(pool())) is drifts


def test_a_static_nodepools_replicas_are_outside_the_hash() -> None:
    static = edit(edit(nodepool("gpu"), "spec.replicas", 2), "spec.limits", None)
    assert nodepool_hash(load(static).objects.nodepools[0]) == nodepool_hash(
        _edited(load(static).objects.nodepools[0], {"spec.replicas": 5})
    )


taints = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["a", "b", "nvidia.com/gpu"]),
            "value": st.sampled_from(["x", "y"]),
            "effect": st.sampled_from(["NoSchedule", "NoExecute"]),
        }
    ),
    max_size=4,
    unique_by=lambda t: (t["key"], t["effect"]),
)


@given(taints, st.randoms(use_true_random=False))
def test_the_order_of_taints_and_labels_never_changes_the_hash(
    ts: list[dict[str, str]], rnd: Any
) -> None:
    labels = {f"l{i}": str(i) for i in range(4)}
    shuffled_ts = list(ts)
    rnd.shuffle(shuffled_ts)
    keys = list(labels)
    rnd.shuffle(keys)
    a = pool(**{"spec.template.spec.taints": ts, "spec.template.metadata.labels": labels})
    b = pool(
        **{
            "spec.template.spec.taints": shuffled_ts,
            "spec.template.metadata.labels": {k: labels[k] for k in keys},
        }
    )
    assert nodepool_hash(a) == nodepool_hash(b)


# ---- core rules over the fake provider ----------------------------------------------------------
def fake(*docs: dict[str, Any]) -> tuple[World, DriftDetection]:
    w = world(1, *docs)
    return w, DriftDetection(w.cluster, w.provider, w.clock)


def launched(w: World, name: str = "gpu-1", **kw: Any) -> NodeClaim:
    provisioned(w, name, **kw)
    assert w.lifecycle.reconcile(name).launched
    nc = w.cluster.node_claim(name)
    assert nc is not None
    return nc


def reapply(w: World, **edits: Any) -> None:
    w.cluster.apply(_edited(w.cluster.nodepool("gpu"), edits))


def test_a_node_claim_not_launched_has_no_drifted_condition() -> None:
    w, drift = fake()
    provisioned(w)
    reapply(w, **{"spec.template.spec.taints": [OTHER]})
    assert drift.reconcile() == []
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert cond.condition(nc, DRIFTED) is None


def test_the_condition_is_removed_once_a_claim_is_no_longer_launched() -> None:
    w, drift = fake()
    nc = launched(w)
    marked = cond.with_condition(nc, DRIFTED, "True", w.clock.now(), reason="AMIDrift")
    unlaunched = cond.with_condition(marked, cond.LAUNCHED, "False", w.clock.now())
    w.cluster.update_node_claim(unlaunched)
    drift.reconcile()
    nc = w.cluster.node_claim("gpu-1")
    assert nc is not None
    assert cond.condition(nc, DRIFTED) is None


def test_the_cloud_providers_reason_is_recorded() -> None:
    w, drift = fake()
    nc = launched(w)
    w.provider.drifted[nc.status.provider_id or ""] = "AMIDrift"
    assert drift.reconcile() == [("gpu-1", "AMIDrift")]


def test_a_deleting_claim_or_one_without_its_nodepool_is_left_alone() -> None:
    w, drift = fake()
    nc = launched(w)
    w.provider.drifted[nc.status.provider_id or ""] = "AMIDrift"
    deleting = nc.model_copy(
        update={"metadata": nc.metadata.model_copy(update={"deletion_timestamp": w.clock.now()})}
    )
    w.cluster.update_node_claim(deleting)
    assert drift.reconcile() == []
    w.cluster.update_node_claim(nc)
    w.cluster.delete("NodePool", None, "gpu")
    assert drift.reconcile() == []


def test_claims_of_a_static_nodepool_are_checked_too() -> None:
    static = edit(edit(nodepool("fixed"), "spec.replicas", 1), "spec.limits", None)
    w, drift = fake(static)
    nc = launched(w)
    labels = {**nc.metadata.labels, NODEPOOL: "fixed"}
    w.cluster.update_node_claim(
        nc.model_copy(update={"metadata": nc.metadata.model_copy(update={"labels": labels})})
    )
    w.provider.drifted[nc.status.provider_id or ""] = "AMIDrift"
    assert drift.reconcile() == [("gpu-1", "AMIDrift")]


@pytest.mark.parametrize(
    ("requirements", "drifts"),
    [
        # narrowing the family to one the node is not
        ([{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}], True),
        # widening
        (
            [
                {
                    "key": "karpenter.k8s.aws/instance-family",
                    "operator": "In",
                    "values": ["g5", "g6", "p5"],
                }
            ],
            False,
        ),
        # a label the node has may not exist any more
        ([{"key": "karpenter.k8s.aws/instance-family", "operator": "DoesNotExist"}], True),
        # a key the node's labels lack: only NotIn / DoesNotExist are met
        ([{"key": "example.com/rack", "operator": "In", "values": ["r1"]}], True),
        ([{"key": "example.com/rack", "operator": "DoesNotExist"}], False),
        ([{"key": "example.com/rack", "operator": "NotIn", "values": ["r1"]}], False),
        # Exists on a label it has
        ([{"key": "karpenter.sh/capacity-type", "operator": "Exists"}], False),
        # dropping every requirement
        ([], False),
    ],
    ids=str,
)
def test_requirement_drift(requirements: list[dict[str, Any]], drifts: bool) -> None:
    w, drift = fake()
    nc = launched(w, types=("g5.xlarge",))
    assert nc.metadata.labels["karpenter.k8s.aws/instance-family"] == "g5"
    reapply(w, **{"spec.template.spec.requirements": requirements})
    assert drift.reconcile() == ([("gpu-1", REQUIREMENTS_DRIFTED)] if drifts else [])


def test_a_claim_without_hash_annotations_is_stamped_and_compared_from_then_on() -> None:
    # NodeClaims built by hand (as an input manifest might hold them) carry no hash: the hash
    # controller stamps the NodePool's hash as it is now, so only later changes drift.
    w, drift = fake()
    nc = launched(w)
    assert NODEPOOL_HASH_ANNOTATION not in nc.metadata.annotations
    assert drift.reconcile() == []
    stamped = w.cluster.node_claim("gpu-1")
    assert stamped is not None
    pool_now = w.cluster.nodepool("gpu")
    assert pool_now is not None
    assert stamped.metadata.annotations[NODEPOOL_HASH_ANNOTATION] == nodepool_hash(pool_now)
    reapply(w, **{"spec.template.spec.expireAfter": "24h"})
    assert drift.reconcile() == [("gpu-1", NODEPOOL_DRIFTED)]


def test_a_hash_of_another_version_is_not_compared() -> None:
    w, drift = fake()
    drift.hash.reconcile()  # the NodePool is stamped before the claim exists
    nc = launched(w)
    old = {NODEPOOL_HASH_ANNOTATION: "12345", NODEPOOL_HASH_VERSION_ANNOTATION: "v2"}
    w.cluster.update_node_claim(
        nc.model_copy(update={"metadata": nc.metadata.model_copy(update={"annotations": old})})
    )
    assert NODEPOOL_HASH_VERSION != "v2"
    assert drift.reconcile() == []


def test_an_already_drifted_claim_keeps_its_old_hash_when_restamped() -> None:
    w, drift = fake()
    nc = launched(w)
    old = {NODEPOOL_HASH_ANNOTATION: "12345", NODEPOOL_HASH_VERSION_ANNOTATION: "v2"}
    marked = cond.with_condition(nc, DRIFTED, "True", w.clock.now(), reason=NODEPOOL_DRIFTED)
    w.cluster.update_node_claim(
        marked.model_copy(
            update={"metadata": marked.metadata.model_copy(update={"annotations": old})}
        )
    )
    drift.reconcile()
    after = w.cluster.node_claim("gpu-1")
    assert after is not None
    assert after.metadata.annotations[NODEPOOL_HASH_VERSION_ANNOTATION] == NODEPOOL_HASH_VERSION
    assert after.metadata.annotations[NODEPOOL_HASH_ANNOTATION] == "12345"
    assert drifted(after) == NODEPOOL_DRIFTED


def test_an_instance_type_no_longer_offered_drifts_only_after_an_hour() -> None:
    w, drift = fake()
    nc = launched(w)
    name = nc.metadata.labels[INSTANCE_TYPE]
    w.provider.instance_types = [it for it in w.provider.instance_types if it.name != name]
    w.clock.advance(HOUR)
    assert drift.reconcile() == []  # not older than an hour yet
    w.clock.advance(1)
    assert drift.reconcile() == [("gpu-1", INSTANCE_TYPE_NOT_FOUND)]


def test_a_passed_instance_type_check_is_not_repeated_for_30_minutes() -> None:
    w, drift = fake()
    nc = launched(w)
    w.clock.advance(HOUR + 1)
    assert drift.reconcile() == []  # checked: the type is offered
    name = nc.metadata.labels[INSTANCE_TYPE]
    w.provider.instance_types = [it for it in w.provider.instance_types if it.name != name]
    w.clock.advance(29 * 60)
    assert drift.reconcile() == []
    w.clock.advance(60)
    assert drift.reconcile() == [("gpu-1", INSTANCE_TYPE_NOT_FOUND)]


def test_hash_drift_is_reported_before_requirement_drift() -> None:
    w, drift = fake()
    launched(w)
    drift.reconcile()
    reapply(
        w,
        **{
            "spec.template.spec.taints": [OTHER],
            "spec.template.spec.requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p5"]}
            ],
        },
    )
    assert drift.reconcile() == [("gpu-1", NODEPOOL_DRIFTED)]


@pytest.mark.parametrize(
    ("errors", "message"),
    [
        ({}, "No Pod Scheduling Errors"),
        (
            {"default/b": "no room", "default/a": "taint"},
            "Not all pods would schedule, default/a => taint default/b => no room ",
        ),
        (
            {f"default/p{i}": "x" for i in range(7)},
            "Not all pods would schedule, "
            + "".join(f"default/p{i} => x " for i in range(5))
            + " and 2 other(s)",
        ),
    ],
)
def test_drift_names_at_most_five_pods_that_would_not_schedule(
    errors: dict[str, str], message: str
) -> None:
    """scheduler.go `NonPendingPodSchedulingErrors`, as drift's DisruptionBlocked message
    (`pretty.Sentence`): every pod and its error up to five, then how many others."""
    assert not_all_pods_would_schedule(errors).message == message


class _Types:
    """A cloud provider answering only instance types (what `_instance_type_gone` asks)."""

    def __init__(self, types: list[Any]) -> None:
        self.types = types

    def get_instance_types(self, nodepool: Any) -> list[Any]:
        return self.types


@pytest.mark.parametrize(
    ("offered", "gone"),
    [
        (("reserved",), False),
        (("on-demand",), False),
        (("reserved", "on-demand"), False),
        (("spot",), True),
        ((), True),
    ],
)
def test_a_reserved_node_is_checked_against_reserved_and_on_demand_offerings(
    offered: tuple[str, ...], gone: bool
) -> None:
    """core drift_test.go Context "Reserved Capacity", table "InstanceTypeNotFound": a reserved
    NodeClaim (perhaps demoted since) is found while its type has a reserved or an on-demand
    offering in its zone, its reservation labels not compared."""
    offerings = tuple(
        Offering(
            "us-east-1a",
            ct,
            1.0,
            True,
            reservation_id="cr-other" if ct == "reserved" else "",
            reservation_type="default" if ct == "reserved" else "",
        )
        for ct in offered
    )
    types = [InstanceType("g5.xlarge", Requirements.of(), {}, {}, offerings)]
    claim = NodeClaim.model_validate(
        {
            "metadata": {
                "name": "gpu-1",
                "labels": {
                    INSTANCE_TYPE: "g5.xlarge",
                    "topology.kubernetes.io/zone": "us-east-1a",
                    "karpenter.sh/capacity-type": "reserved",
                    "karpenter.k8s.aws/capacity-reservation-id": "cr-gone",
                    "karpenter.k8s.aws/capacity-reservation-type": "default",
                },
            },
            "spec": {
                "requirements": [],
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu",
                },
            },
        }
    )
    drift = DriftDetection(Cluster(), _Types(types), FakeClock())  # type: ignore[arg-type]
    assert drift._instance_type_gone(pool(), claim) is gone
