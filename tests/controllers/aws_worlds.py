"""A NodeClaim lifecycle over the AWS cloud provider and a simulated EC2, shared by the lifecycle
and interruption tests (not a test module)."""

from __future__ import annotations

from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.controllers.nodeclaim.lifecycle import Lifecycle
from gpucap.controllers.nodeclaim.registering import registering_node
from gpucap.runtime.clock import FakeClock
from gpucap.state.cluster import Cluster
from tests.builders import GPU_TOLERATION, deployment, nodeclass, nodepool, to_yaml
from tests.controllers.lifecycle_builders import World

PODS = ("default/vllm-0", "default/vllm-1")


def launched(w: World, name: str = "gpu-1") -> None:
    result = w.lifecycle.reconcile(name)
    assert result.launched, result


def register(w: World, name: str = "gpu-1", *, ready: bool = True) -> str:
    """The kubelet of NodeClaim `name` registers its Node; returns the Node's name."""
    nc = w.cluster.node_claim(name)
    assert nc is not None
    node = registering_node(nc, f"ip-{name}", ready=ready)
    result = w.lifecycle.register(node)
    assert result is not None
    return node.metadata.name


def aws_world() -> tuple[Cluster, SimulatedEC2, AWSCloudProvider, FakeClock, Lifecycle]:
    loaded = load_text(
        to_yaml(
            nodepool(),
            nodeclass(),
            deployment(replicas=1, gpu=1, tolerations=[GPU_TOLERATION]),
        ),
        "t.yaml",
    )
    assert loaded.errors == []
    clock = FakeClock()
    cluster = Cluster.from_manifests(loaded.objects, clock=clock)
    api = SimulatedEC2(CATALOG, clock)
    api.publish_amis("1.36")
    provider = AWSCloudProvider(api, CATALOG, clock, {nc.name: nc for nc in cluster.nodeclasses()})
    return cluster, api, provider, clock, Lifecycle(cluster, provider, clock)


CATALOG = load_catalog("us-east-1")
