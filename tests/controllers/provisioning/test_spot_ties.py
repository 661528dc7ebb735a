"""The plan's note on spot zones that tie (`controllers/provisioning/spotties.py`): `plan` shows
the first zone by name and says which zones tie at the launched price; nothing for on-demand, for
a zone the NodePool pins, or for a type whose spot price differs by zone."""

from __future__ import annotations

from gpucap.apis.labels import CAPACITY_TYPE, ZONE
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.operator.plan import plan
from tests.builders import GPU_TOLERATION, deployment, edit, load, nodeclass, nodepool

CATALOG = load_catalog("us-east-1")


def _notes(*requirements: dict[str, object]) -> list[str]:
    pool = edit(nodepool(), "spec.template.spec.requirements", list(requirements))
    vllm = deployment("vllm", 2, gpu=1, tolerations=[GPU_TOLERATION])
    made = plan(load(nodeclass(), pool, vllm).objects, CATALOG)
    assert made.node_claims, made.pod_errors
    return [n for n in made.notes if n.startswith("spot ")]


SPOT = {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot"]}


def test_a_spot_launch_names_the_zones_that_tie_and_the_first_by_name() -> None:
    (note,) = _notes(SPOT)
    assert "costs the same in" in note
    zones = note.split("(", 1)[1].split(")", 1)[0].split(", ")
    assert zones == sorted(zones)
    assert len(zones) >= 2
    assert f"the first by name ({zones[0]})" in note
    assert "2 NodeClaims show" in note or "gpu-1 shows" in note


def test_on_demand_launches_have_no_tie_note() -> None:
    assert _notes({"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}) == []


def test_a_nodepool_pinned_to_one_zone_has_no_tie_note() -> None:
    assert _notes(SPOT, {"key": ZONE, "operator": "In", "values": ["us-east-1a"]}) == []


def test_two_allowed_zones_tie_and_are_the_only_ones_named() -> None:
    (note,) = _notes(SPOT, {"key": ZONE, "operator": "In", "values": ["us-east-1b", "us-east-1c"]})
    assert "in 2 zones (us-east-1b, us-east-1c)" in note
