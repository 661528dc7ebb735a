"""`plan`'s provisioning passes with a reservation: the first pass fills it (one claim per free
instance, the pods past it wait in the provisioner's strict mode), the next sees it counted down
(Karpenter's `MarkLaunched`) and sends the rest to spot or on-demand."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli import main as cli_main

MANIFESTS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  amiSelectorTerms: [{alias: al2023@v20260827}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  capacityReservationSelectorTerms: [{tags: {team: inference}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, spot, on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge]}
      taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: vllm}}
  template:
    metadata: {labels: {app: vllm}}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.6.0
          resources: {requests: {cpu: "3", memory: 12Gi}, limits: {nvidia.com/gpu: "1"}}
"""
RESERVATIONS = """\
CapacityReservations:
  - CapacityReservationId: cr-0123456789abcdef0
    InstanceType: g5.xlarge
    AvailabilityZone: us-east-1b
    OwnerId: "123456789012"
    TotalInstanceCount: 2
    AvailableInstanceCount: 2
    InstanceMatchCriteria: targeted
    State: active
    Tags: [{Key: team, Value: inference}]
"""


def plan_json(tmp_path: Path, capsys: Any, monkeypatch: Any, *extra: str) -> Any:
    (tmp_path / "m.yaml").write_text(MANIFESTS)
    (tmp_path / "r.yaml").write_text(RESERVATIONS)
    args = ["gpucap", "plan", str(tmp_path / "m.yaml"), "-o", "json", *extra]
    monkeypatch.setattr(sys, "argv", args)
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    captured = capsys.readouterr()
    assert (exit_info.value.code or 0, captured.err) == (0, "")
    return json.loads(captured.out)


def _launches(doc: Any) -> list[tuple[int, str, str]]:
    return [
        (c["pass"], c["launch"]["capacityType"], c["launch"]["zone"]) for c in doc["nodeClaims"]
    ]


def test_the_reservation_is_filled_first_and_the_next_pass_falls_back(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    doc = plan_json(tmp_path, capsys, monkeypatch, "--reservations", str(tmp_path / "r.yaml"))
    launches = _launches(doc)
    assert launches[:2] == [(1, "reserved", "us-east-1b"), (1, "reserved", "us-east-1b")]
    assert launches[2][0] == 2
    assert launches[2][1] in ("spot", "on-demand")


def test_without_the_reservations_file_nothing_is_reserved(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    doc = plan_json(tmp_path, capsys, monkeypatch)
    assert all(capacity != "reserved" for _, capacity, _ in _launches(doc))
