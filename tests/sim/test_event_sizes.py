"""Events stay small on a big catalog: a `NodeClaimCreated` event names at most the 60 instance
types Karpenter's AWS provider would send to CreateFleet, and says how many there were."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app

NODECLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@v20260827}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: any}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
---
apiVersion: v1
kind: Pod
metadata: {name: small, namespace: default}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
"""


def test_a_nodeclaim_created_event_names_at_most_60_types_and_counts_them(tmp_path: Path) -> None:
    (tmp_path / "objects.yaml").write_text(NODECLASS)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: wide}\n"
        "spec:\n  duration: 10m\n  manifests: [objects.yaml]\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(scenario), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    events = json.loads(result.stdout)["events"]
    created = [e for e in events if e["type"] == "NodeClaimCreated"]
    assert created
    for e in created:
        assert len(e["instanceTypes"]) == 60
        assert e["instanceTypeCount"] > 60
