"""Stories of NodePools whose EC2NodeClass is or becomes not Ready, and the event-log readers the
readiness and Auto Mode tests share (not a test module)."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import SimulationResult, simulate

STORIES = Path(__file__).parent / "stories"
CPU_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: cpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: CLASS}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
"""
BAD_CLASS = (STORIES / "nodeclass.yaml").read_text().replace("v20260827", "v20250101")


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    return load_catalog(region)


def story(
    tmp_path: Path,
    manifests: list[str],
    *,
    events: list[Any] = (),
    duration: str = "30m",
    **files: str,
) -> SimulationResult:
    """Run a scenario over copies of the stories' manifests plus `files` (name -> text)."""
    folder = tmp_path / "story"
    if not folder.exists():
        shutil.copytree(STORIES, folder)
    for name, text in files.items():
        (folder / name).write_text(text)
    doc = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "readiness"},
        "spec": {"duration": duration, "manifests": manifests, "events": list(events)},
    }
    (folder / "scenario.yaml").write_text(yaml.safe_dump(doc))
    return simulate(load_scenario(str(folder / "scenario.yaml"), _catalog), _catalog())


def of_type(result: SimulationResult, type_: str, **match: Any) -> list[Event]:
    return [
        e for e in result.events if e.type == type_ and all(e.get(k) == v for k, v in match.items())
    ]


# ---- a release has all its variants -----------------------------------------------------------
