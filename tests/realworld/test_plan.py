"""`gpucap plan` on real public NodePools with a pod written by the test: the static NodePool
blueprint (its node is capacity), its EKS Auto Mode variant (no NodePool Karpenter manages) and
Karpenter's Windows example (priced at the Linux rate, with a note). Provenance in this
directory's PROVENANCE.yaml; helpers shared with tests/cli/test_plan.py."""

from __future__ import annotations

import json
from pathlib import Path

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from tests.builders import GPU_TOLERATION, pod
from tests.cli.plans import cheapest_spot, plan_json, run_plan, vllm
from tests.realworld.corpus import real

STATIC = (
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodepool.yaml",
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodeclass.yaml",
)
STATIC_AUTOMODE = (
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodepool-automode.yaml",
    "aws-samples__karpenter-blueprints/blueprints/static-nodepool/static-nodeclass-automode.yaml",
)
WINDOWS = "aws__karpenter-provider-aws/examples/v1/windows-2022.yaml"


def test_static_nodepool_nodes_take_pods(tmp_path: Path) -> None:
    # aws-samples/karpenter-blueprints' static GPU pool: replicas 1 of g6e.8xlarge.
    files = [str(real(f)) for f in STATIC]
    trainer = pod("trainer", gpu=1, tolerations=[GPU_TOLERATION])
    doc = json.loads(run_plan(tmp_path, files, trainer, extra=("-o", "json")).stdout)
    (claim,) = doc["nodeClaims"]
    assert (claim["name"], claim["nodePool"], claim["static"], claim["pass"]) == (
        "gpu-static-1",
        "gpu-static",
        True,
        0,
    )
    assert claim["launch"]["instanceType"] == "g6e.8xlarge"
    # The pool allows spot and on-demand: spot is launched, as for any NodeClaim.
    _, price = cheapest_spot(["g6e.8xlarge"])
    assert (claim["launch"]["capacityType"], claim["launch"]["pricePerHour"]) == ("spot", price)
    assert claim["pods"] == ["default/trainer"]
    assert claim["labels"]["capacity-type"] == "gpu-static"
    assert doc["unschedulable"] == []
    assert doc["summary"]["pricePerHour"] == price
    table = run_plan(tmp_path, files).stdout.splitlines()
    assert table[1].split()[:4] == ["gpu-static-1", "gpu-static", "static", "g6e.8xlarge"]


def test_a_static_nodepool_keeps_its_nodes_without_any_pod(tmp_path: Path) -> None:
    files = [str(real(f)) for f in STATIC]
    doc = json.loads(run_plan(tmp_path, files, extra=("-o", "json")).stdout)
    assert [(c["name"], c["pods"]) for c in doc["nodeClaims"]] == [("gpu-static-1", [])]
    assert doc["summary"]["pricePerHour"] > 0


def test_no_nodepools_found(tmp_path: Path) -> None:
    # The blueprint's EKS Auto Mode variant: its NodePool uses eks.amazonaws.com/NodeClass,
    # which the Karpenter controller does not manage. Before issue 21 item 5 the trainer was
    # unschedulable ("no dynamic nodepools found"); EKS Auto Mode serves it, so it is listed
    # apart, not planned.
    files = [str(real(f)) for f in STATIC_AUTOMODE]
    trainer = pod("trainer", gpu=1, tolerations=[GPU_TOLERATION])
    doc = json.loads(run_plan(tmp_path, files, trainer, extra=("-o", "json")).stdout)
    assert doc["nodeClaims"] == []
    assert doc["unschedulable"] == []
    assert [(u["pod"], u["servedBy"]) for u in doc["notPlanned"]] == [
        ("default/trainer", "EKS Auto Mode")
    ]
    # No NodePool in the input at all.
    doc = json.loads(run_plan(tmp_path, [], pod("web"), extra=("-o", "json")).stdout)
    assert doc["unschedulable"] == [{"pod": "default/web", "reason": "no dynamic nodepools found"}]


def test_windows_nodes_are_priced_at_the_linux_rate_with_a_note(tmp_path: Path) -> None:
    # aws/karpenter-provider-aws examples/v1/windows-2022.yaml and a Windows pod.
    iis = pod("iis", nodeSelector={"kubernetes.io/os": "windows"})
    doc = json.loads(run_plan(tmp_path, [str(real(WINDOWS))], iis, extra=("-o", "json")).stdout)
    (claim,) = doc["nodeClaims"]
    assert claim["labels"]["kubernetes.io/os"] == "windows"
    its = {it.name: it for it in load_catalog("us-east-1").instance_types(None)}
    linux = min(
        o.price
        for o in its[claim["launch"]["instanceType"]].offerings
        if o.available and o.capacity_type == "on-demand"
    )
    assert claim["launch"]["pricePerHour"] == linux
    assert any("Windows nodes are priced here at the Linux rate" in n for n in doc["notes"]), doc[
        "notes"
    ]
    # A Linux plan has no such note.
    assert not any("Windows" in n for n in plan_json(tmp_path, vllm(1))["notes"])
