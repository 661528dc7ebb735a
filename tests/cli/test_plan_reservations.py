"""`gpucap plan --reservations`: the RESERVATIONS table, the JSON's `reservations` and a reserved
launch's `reservationId`, the `reserved` price cell, `--explain`'s reservation lines, and the law
that a plan never puts more NodeClaims into a reservation than it has free (Karpenter's
provider counts each launch down, aws `capacityreservation/types.go` MarkLaunched, and the
scheduler reserves per NodeClaim, core `scheduling/reservationmanager.go`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpucap.apis.capacityreservation import parse_reservations
from gpucap.apis.serde import load_text
from gpucap.cli.main import app
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.operator.plan import plan, reservations_use
from tests.builders import GPU_TOLERATION, deployment, edit, nodeclass, nodepool, to_yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "reserved-capacity.yaml")
EXAMPLE_RESERVATIONS = str(ROOT / "examples" / "reserved-capacity-reservations.yaml")
CATALOG = load_catalog("us-east-1")
runner = CliRunner()


def reservation(
    rid: str, instance_type: str = "g5.xlarge", zone: str = "us-east-1b", free: int = 2
) -> dict[str, Any]:
    return {
        "CapacityReservationId": rid,
        "InstanceType": instance_type,
        "AvailabilityZone": zone,
        "OwnerId": "123456789012",
        "TotalInstanceCount": max(free, 1),
        "AvailableInstanceCount": free,
        "InstanceMatchCriteria": "targeted",
        "ReservationType": "default",
        "State": "active",
        "Tags": [{"Key": "team", "Value": "ml"}],
    }


def manifests_text(replicas: int) -> str:
    nc = edit(nodeclass(), "spec.capacityReservationSelectorTerms", [{"tags": {"team": "ml"}}])
    pool = edit(
        nodepool(),
        "spec.template.spec.requirements[1].values",
        ["reserved", "spot", "on-demand"],
    )
    pool = edit(pool, "spec.limits", {"nvidia.com/gpu": "100"})
    served = deployment(
        replicas=replicas, gpu=1, cpu="3", memory="12Gi", tolerations=[GPU_TOLERATION]
    )
    return to_yaml(nc, pool, served)


def run_plan(
    tmp_path: Path, replicas: int, *items: dict[str, Any], extra: tuple[str, ...] = ()
) -> str:
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(manifests_text(replicas))
    given_file = tmp_path / "reservations.yaml"
    given_file.write_text(yaml.safe_dump({"CapacityReservations": list(items)}))
    result = runner.invoke(app, ["plan", str(manifests), "--reservations", str(given_file), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_table_shows_each_reservation_free_used_and_left(tmp_path: Path) -> None:
    text = run_plan(tmp_path, 3, reservation("cr-0aaa"))
    assert "RESERVATION" in text
    row = next(line for line in text.splitlines() if line.startswith("cr-0aaa"))
    assert row.split() == ["cr-0aaa", "g5.xlarge", "us-east-1b", "default", "2", "2", "0"]
    assert "2 of 3 new node(s) in reservations; 1 spot" in text


def test_a_reserved_node_shows_reserved_for_its_price(tmp_path: Path) -> None:
    text = run_plan(tmp_path, 1, reservation("cr-0aaa"))
    claim = next(line for line in text.splitlines() if line.startswith("gpu-1"))
    assert claim.split()[5:7] == ["reserved", "reserved"]
    assert "the reservation pays for them" in text


def test_the_json_names_the_reservation_of_each_reserved_launch(tmp_path: Path) -> None:
    doc = json.loads(run_plan(tmp_path, 3, reservation("cr-0aaa"), extra=("-o", "json")))
    assert doc["reservations"] == [
        {
            "id": "cr-0aaa",
            "instanceType": "g5.xlarge",
            "zone": "us-east-1b",
            "type": "default",
            "interruptible": False,
            "available": 2,
            "used": 2,
            "nodeClaims": ["gpu-1", "gpu-2"],
            "nodeClasses": ["gpu"],
        }
    ]
    launches = [c["launch"] for c in doc["nodeClaims"]]
    assert [launch.get("reservationId") for launch in launches] == ["cr-0aaa", "cr-0aaa", None]


def test_a_reservation_no_class_selects_is_noted_with_why(tmp_path: Path) -> None:
    other = reservation("cr-0bbb")
    other["Tags"] = [{"Key": "team", "Value": "web"}]
    text = run_plan(tmp_path, 1, reservation("cr-0aaa"), other)
    assert (
        "note: reservation cr-0bbb is not selected: matched by no capacityReservationSelectorTerms"
        in text
    )


def test_a_plan_without_reservations_has_no_reservations_section(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(manifests_text(1))
    result = runner.invoke(app, ["plan", str(manifests), "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert "reservations" not in doc
    assert "reservationId" not in doc["nodeClaims"][0]["launch"]


def test_explain_names_a_full_reservation_and_who_holds_it(tmp_path: Path) -> None:
    text = run_plan(tmp_path, 3, reservation("cr-0aaa"), extra=("--explain", "vllm-2"))
    assert "cr-0aaa: full: all 2 held by NodeClaim(s) gpu-1, gpu-2" in text


def test_explain_names_the_zone_the_pod_excludes(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests.yaml"
    served = edit(
        deployment(replicas=1, gpu=1, cpu="3", memory="12Gi", tolerations=[GPU_TOLERATION]),
        "spec.template.spec.nodeSelector",
        {"topology.kubernetes.io/zone": "us-east-1a"},
    )
    text = manifests_text(1).split("---\n")
    manifests.write_text("---\n".join([*text[:2], to_yaml(served)]))
    given_file = tmp_path / "reservations.yaml"
    given_file.write_text(yaml.safe_dump({"CapacityReservations": [reservation("cr-0aaa")]}))
    result = runner.invoke(
        app,
        ["plan", str(manifests), "--reservations", str(given_file), "--explain", "vllm-0"],
    )
    assert result.exit_code == 0, result.output
    assert "cr-0aaa: the pod's requirements exclude zone us-east-1b" in result.stdout


def test_the_bundled_example_fills_the_capacity_block_and_the_odcr() -> None:
    result = runner.invoke(
        app, ["plan", EXAMPLE, "--reservations", EXAMPLE_RESERVATIONS, "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    used = {r["id"]: (r["type"], r["used"], r["available"]) for r in doc["reservations"]}
    assert used == {
        "cr-0b10c0000000000a1": ("capacity-block", 2, 2),
        "cr-0dc70000000000b2": ("default", 2, 2),
    }
    assert doc["unschedulable"] == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    replicas=st.integers(min_value=1, max_value=6),
    spec=st.lists(
        st.tuples(
            st.sampled_from(["g5.xlarge", "g5.2xlarge"]),
            st.sampled_from(["us-east-1a", "us-east-1b", "us-east-1c"]),
            st.integers(min_value=0, max_value=3),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_a_plan_never_puts_more_nodeclaims_into_a_reservation_than_it_has_free(
    replicas: int, spec: list[tuple[str, str, int]]
) -> None:
    items = [reservation(f"cr-0{i}", t, z, n) for i, (t, z, n) in enumerate(spec)]
    loaded = load_text(manifests_text(replicas), "manifests.yaml")
    assert not loaded.errors
    objects = dataclasses.replace(
        loaded.objects,
        reservations=parse_reservations({"CapacityReservations": items}, source="r.yaml"),
    )
    made = plan(objects, CATALOG)
    use = reservations_use(objects, made)
    free = {u.id: u.available for u in use.uses}
    for u in use.uses:
        assert u.used <= u.available, (u.id, u.node_claims, u.available)
    for claim in made.node_claims:
        launch = claim.launch
        if launch is not None and launch.capacity_type == "reserved":
            assert launch.reservation_id in free
    # Every pod is placed: what does not fit the reservations falls back to spot or on-demand.
    assert not made.pod_errors
