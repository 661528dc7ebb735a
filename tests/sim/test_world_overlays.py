"""NodeOverlays in the simulator as in `plan`: judged against every NodePool (issue 20; the
decorator is `cloudprovider/overlay.py`, the rule's unit tests are in
tests/cloudprovider/test_overlay.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpucap.apis.serde import load_paths
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.operator.plan import plan
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import simulate
from tests.builders import GPU_TOLERATION, nodeclass, nodepool, pod, to_yaml

G5_XLARGE = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}


def _overlay(name: str, *reqs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": list(reqs), **spec},
    }


def _manifests(folder: Path) -> Path:
    # Pool "a" is asked about first and launches only g5.xlarge; "y" would time-slice its GPU
    # four ways in every pool, but "z" sets the same price in pool "b": a same-weight conflict,
    # so Karpenter rejects "y" everywhere and a 2-GPU pod fits no node of "a".
    only_b = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["b"]}
    a = nodepool("a")
    a["spec"]["template"]["spec"]["requirements"].append(G5_XLARGE)
    two_gpus = pod(
        "web",
        gpu=2,
        tolerations=[GPU_TOLERATION],
        nodeSelector={"karpenter.sh/nodepool": "a"},
    )
    path = folder / "manifests.yaml"
    path.write_text(
        to_yaml(
            nodeclass(),
            a,
            nodepool("b"),
            _overlay("z", G5_XLARGE, only_b, price="0.01"),
            _overlay("y", G5_XLARGE, price="0.02", capacity={"nvidia.com/gpu": "4"}),
            two_gpus,
        )
    )
    return path


def test_simulate_rejects_an_overlay_conflicting_in_another_nodepool_as_plan_does(
    tmp_path: Path,
) -> None:
    manifests = _manifests(tmp_path)
    catalog = load_catalog("us-east-1")
    planned = plan(load_paths([str(manifests)]).objects, catalog)
    assert not planned.node_claims  # plan: "y" rejected, the pod fits no node of "a"
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        to_yaml(
            {
                "apiVersion": "gpucap.dev/v1alpha1",
                "kind": "Scenario",
                "metadata": {"name": "overlays"},
                "spec": {"duration": "10m", "manifests": [manifests.name]},
            }
        )
    )
    result = simulate(load_scenario(str(scenario), load_catalog), catalog)
    assert not [e for e in result.events if e.type == "NodeClaimCreated"]
