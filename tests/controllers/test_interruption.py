"""Spot interruption: the offering is marked unavailable for 3 minutes, the NodeClaim is
deleted through termination and its pods pend again (AWSCloudProvider over SimulatedEC2)."""

from __future__ import annotations

import ast
from pathlib import Path

from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from gpucap.cloudprovider.aws.cache import UNAVAILABLE_OFFERINGS_TTL
from gpucap.controllers.interruption import SPOT_INTERRUPTED, Interruption, instance_id
from gpucap.controllers.nodeclaim.registering import advertise, registering_node
from tests.controllers.aws_worlds import aws_world
from tests.controllers.lifecycle_builders import claim

SRC = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "controllers"


def test_interrupted_spot_claim_is_deleted_and_its_pods_pend_again() -> None:
    cluster, api, provider, clock, lifecycle = aws_world()
    cluster.add_node_claim(claim("gpu-1"))
    cluster.nominate("default/vllm-0", "gpu-1")
    assert lifecycle.reconcile("gpu-1").launched
    nc = cluster.node_claim("gpu-1")
    assert nc is not None
    labels = nc.metadata.labels
    offering = (labels[INSTANCE_TYPE], labels[ZONE], labels[CAPACITY_TYPE])
    assert offering[2] == "spot"
    lifecycle.register(advertise(registering_node(nc, "ip-1"), {"nvidia.com/gpu": 1}))
    cluster.bind("default/vllm-0", "ip-1")
    api.interrupt(instance_id(nc.status.provider_id or ""))

    interruption = Interruption(cluster, lifecycle.termination, marker=provider)
    (result,) = interruption.handle(SPOT_INTERRUPTED, [instance_id(nc.status.provider_id or "")])
    assert (result.node_claim, result.node, result.marked_unavailable, result.deleted) == (
        "gpu-1",
        "ip-1",
        True,
        True,
    )
    assert provider.unavailable.is_unavailable("spot", offering[0], offering[1])
    assert result.termination is not None
    assert result.termination.evicted == ("default/vllm-0",)
    assert [p.key for p in cluster.pending()] == ["default/vllm-0"]
    while cluster.node_claim("gpu-1") is not None:
        r = lifecycle.reconcile("gpu-1")
        assert r.requeue_after is not None or r.gone
        clock.advance(r.requeue_after or 0)
    assert cluster.node("ip-1") is None

    # The next launch for the pod is steered off the interrupted offering ...
    cluster.add_node_claim(claim("gpu-2"))
    assert lifecycle.reconcile("gpu-2").launched
    again = cluster.node_claim("gpu-2")
    assert again is not None
    assert (again.metadata.labels[INSTANCE_TYPE], again.metadata.labels[ZONE]) != offering[:2]
    # ... for 3 minutes.
    clock.advance(UNAVAILABLE_OFFERINGS_TTL.total_seconds())
    assert not provider.unavailable.is_unavailable("spot", offering[0], offering[1])


def test_a_second_warning_for_a_deleting_claim_does_not_delete_it_again() -> None:
    cluster, _api, provider, _clock, lifecycle = aws_world()
    cluster.add_node_claim(claim("gpu-1"))
    lifecycle.reconcile("gpu-1")
    interruption = Interruption(cluster, lifecycle.termination, marker=provider)
    first = interruption.spot_interruption("gpu-1")
    second = interruption.spot_interruption("gpu-1")
    assert first is not None
    assert second is not None
    assert (first.deleted, second.deleted) == (True, False)
    assert interruption.spot_interruption("no-such-claim") is None


def test_other_message_kinds_take_no_action() -> None:
    cluster, _api, provider, _clock, lifecycle = aws_world()
    cluster.add_node_claim(claim("gpu-1"))
    lifecycle.reconcile("gpu-1")
    nc = cluster.node_claim("gpu-1")
    assert nc is not None
    interruption = Interruption(cluster, lifecycle.termination, marker=provider)
    (result,) = interruption.handle(
        "rebalance_recommendation", [instance_id(nc.status.provider_id or "")]
    )
    assert (result.marked_unavailable, result.deleted, result.termination) == (False, False, None)
    assert provider.unavailable.active() == []
    assert interruption.handle(SPOT_INTERRUPTED, ["i-unknown"]) == []


def test_controllers_do_not_import_the_aws_provider() -> None:
    # They reach it only through the CloudProvider protocol and the OfferingMarker callback.
    offenders = []
    mine = sorted((SRC / "nodeclaim").glob("*.py"))  # the lifecycle and termination
    for path in [*mine, SRC / "interruption.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            offenders += [
                f"{path.name}: {n}" for n in names if n.startswith("gpucap.cloudprovider.aws")
            ]
    assert offenders == []
