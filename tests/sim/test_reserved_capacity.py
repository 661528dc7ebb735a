"""Reserved capacity in simulate (issue 24): the story tests/sim/stories/reserved/ (a p5.48xlarge
Capacity Block for a training Job, a g6e.xlarge ODCR and an interruptible g6e.xlarge reservation
for inference) run once, and rules named after Karpenter's tests
(aws `pkg/controllers/capacityreservation/{expiration,capacitytype}/suite_test.go`,
`pkg/controllers/interruption/suite_test.go`), checked on what the run did."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.runtime.clock import EPOCH
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import ScenarioError, load_scenario
from gpucap.sim.timeline import format_timeline
from gpucap.sim.world import SimulationResult, World

STORY = Path(__file__).parent / "stories" / "reserved" / "reserved.yaml"
HOUR = 3600.0


@functools.cache
def _run() -> SimulationResult:
    catalog = load_catalog("us-east-1")
    return World(load_scenario(str(STORY), catalog), catalog).run()


def _of(type_: str, **match: object) -> list[Event]:
    return [
        e for e in _run().events if e.type == type_ and all(e.get(k) == v for k, v in match.items())
    ]


def _launch(claim: str) -> Event:
    (e,) = _of("NodeClaimLaunched", nodeClaim=claim)
    return e


def test_the_first_provisioning_fills_the_reservations() -> None:
    launches = [e for e in _of("NodeClaimLaunched") if e.t < 60]
    assert sorted((e.get("instanceType"), e.get("capacityType")) for e in launches) == [
        ("g6e.xlarge", "reserved"),
        ("g6e.xlarge", "reserved"),
        ("g6e.xlarge", "reserved"),
        ("p5.48xlarge", "reserved"),
    ]


def test_spec_start_dates_the_run() -> None:
    result = _run()
    assert result.start != EPOCH
    assert result.start.isoformat() == "2026-12-07T00:00:00+00:00"


def test_should_delete_nodeclaims_associated_with_expiring_capacity_block_reservations() -> None:
    (decision,) = _of("DisruptionDecision", reason="CapacityBlockExpiring")
    assert decision.get("nodeClaim") == "training-1"
    # 40 minutes before the block's end (04:00), not later than the controller's minute.
    assert 3 * HOUR + 20 * 60 <= decision.t < 3 * HOUR + 21 * 60


def test_should_not_delete_nodeclaims_associated_with_standard_capacity_reservations_within_the_capacity_block_expiration_window() -> (
    None
):
    expired = {
        e.get("nodeClaim") for e in _of("DisruptionDecision", reason="CapacityBlockExpiring")
    }
    assert not any(str(c).startswith("inference") for c in expired)


def test_should_demote_nodeclaims_and_nodes_from_reserved_to_on_demand() -> None:
    demoted = _of("CapacityTypeDemoted")
    # The ODCR ends at 05:00: its two instances run on as on-demand.
    assert sorted(e.get("nodeClaim") for e in demoted) == ["inference-1", "inference-2"]
    assert all(5 * HOUR <= e.t < 5 * HOUR + 60 for e in demoted)


def test_should_delete_the_nodeclaim_when_receiving_a_capacity_reservation_interruption_warning() -> (
    None
):
    (warning,) = _of("CapacityReservationInstanceInterrupted")
    assert warning.t == 2 * HOUR
    assert warning.get("reservation") == "cr-0intr"
    claim = warning.get("nodeClaim")
    assert _of(
        "NodeClaimDeleted", nodeClaim=claim, reason="capacity_reservation_interrupted"
    ) or _of("NodeClaimDeleted", nodeClaim=claim)


def test_should_mark_the_capacity_reservation_as_unavailable_when_getting_an_interruption_warning() -> (
    None
):
    # The pod of the reclaimed node is not placed in the reclaimed reservation again: it falls
    # back to on-demand.
    after = [e for e in _of("NodeClaimLaunched", nodePool="inference") if e.t >= 2 * HOUR]
    assert after
    assert after[0].get("capacityType") == "on-demand"


def test_a_capacity_block_pays_for_its_whole_duration() -> None:
    rows = {r["reservation"]: r for r in _run().summary["reservations"]}
    block = rows["cr-0block"]
    price = _launch("training-1").get("pricePerHour")
    assert block["paid"] == pytest.approx(price * 4, abs=0.01)
    assert block["usedHours"] + block["idleHours"] == pytest.approx(4.0, abs=0.02)


def test_a_reclaimed_reservation_holds_nothing_after_the_reclaim() -> None:
    rows = {r["reservation"]: r for r in _run().summary["reservations"]}
    assert rows["cr-0intr"]["capacityHours"] == pytest.approx(2.0)


def test_the_timeline_tells_the_reservations_in_words() -> None:
    text = "\n".join(format_timeline(_run().events, start=_run().start))
    assert "Capacity Block 40 minutes from its end" in text
    assert "relabelled on-demand" in text
    assert "reclaimed by its owner" in text


def test_a_reclaim_of_an_unknown_or_standard_reservation_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text((STORY.parent / "reservations.yaml").read_text())
    (tmp_path / "s.yaml").write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  start: 'yesterday'\n  reservations: r.yaml\n  events:\n"
        "    - {at: 1m, reclaim: {reservation: cr-0nope}}\n"
        "    - {at: 2m, reclaim: {reservation: cr-0odcr}}\n"
    )
    with pytest.raises(ScenarioError) as err:
        load_scenario(str(tmp_path / "s.yaml"), load_catalog("us-east-1"))
    lines = err.value.lines()
    assert len(lines) == 3
    assert "start: 'yesterday' is not an RFC 3339 time" in lines[2] or any(
        "start:" in line for line in lines
    )
    assert any("events[0].reclaim.reservation: 'cr-0nope' is not among" in line for line in lines)
    assert any(
        "events[1].reclaim.reservation: cr-0odcr is not an interruptible" in line for line in lines
    )


# ---- drift (aws pkg/cloudprovider/suite_test.go, Context "Capacity Reservations") -----------
_ODCR = """CapacityReservations:
  - {CapacityReservationId: cr-0a, InstanceType: g6e.xlarge, AvailabilityZone: us-east-1b,
     OwnerId: "123456789012", TotalInstanceCount: 1, AvailableInstanceCount: 1,
     InstanceMatchCriteria: targeted, State: active, END}
  - {CapacityReservationId: cr-0b, InstanceType: g6e.xlarge, AvailabilityZone: us-east-1c,
     OwnerId: "123456789012", TotalInstanceCount: 1, AvailableInstanceCount: 1,
     InstanceMatchCriteria: targeted, State: active}
"""
_CLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  amiSelectorTerms: [{alias: al2023@v20260827}]
  role: KarpenterNodeRole-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
  capacityReservationSelectorTerms: [{id: ID}]
"""
_POOL_AND_APP = """---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: inference}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [g6e.xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: vllm}}
  template:
    metadata: {labels: {app: vllm}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.6.0
          resources: {requests: {cpu: "1"}, limits: {nvidia.com/gpu: "1"}}
"""


def _drift_run(tmp_path: Path, *, end: str, events: str) -> SimulationResult:
    (tmp_path / "r.yaml").write_text(_ODCR.replace("END", end))
    (tmp_path / "m.yaml").write_text(_CLASS.replace("ID", "cr-0a") + _POOL_AND_APP)
    (tmp_path / "c2.yaml").write_text(_CLASS.replace("ID", "cr-0b"))
    (tmp_path / "s.yaml").write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  start: '2026-12-07T00:00:00Z'\n  duration: 50m\n  reservations: r.yaml\n"
        f"  manifests: [m.yaml]\n  events: {events}\n"
    )
    catalog = load_catalog("us-east-1")
    return World(load_scenario(str(tmp_path / "s.yaml"), catalog), catalog).run()


def test_should_dynamically_drift_nodeclaims_for_capacity_reservations(tmp_path: Path) -> None:
    # The class stops selecting cr-0a at 20m: its instance, still in cr-0a, drifts.
    result = _drift_run(
        tmp_path, end="EndDateType: unlimited", events="[{at: 20m, apply: {file: c2.yaml}}]"
    )
    first = next(e for e in result.events if e.type == "NodeClaimLaunched")
    assert first.get("capacityType") == "reserved"
    drifted = [e for e in result.events if e.type == "NodeClaimDrifted"]
    assert [(e.get("nodeClaim"), e.get("reason")) for e in drifted][:1] == [
        (first.get("nodeClaim"), "CapacityReservationDrift")
    ]
    assert drifted[0].t >= 20 * 60


def test_should_not_drift_when_capacity_reservation_falls_back_to_on_demand(
    tmp_path: Path,
) -> None:
    # cr-0a ends at 20m: EC2 describes the instance without it; it is demoted, not drifted.
    result = _drift_run(tmp_path, end="EndDate: '2026-12-07T00:20:00Z'", events="[]")
    assert not [e for e in result.events if e.type == "NodeClaimDrifted"]
    assert [e.get("nodeClaim") for e in result.events if e.type == "CapacityTypeDemoted"] == [
        "inference-1"
    ]


def test_a_demoted_node_with_its_interruptible_label_drifts_instance_type_not_found() -> None:
    # Karpenter keeps `capacity-reservation-interruptible` on a demoted NodeClaim while on-demand
    # offerings require it not to exist: core's instanceTypeNotFound drifts it (its first hour
    # past); docs/design/controllers.md, "Capacity-reservation controllers".
    reasons = {(e.get("nodeClaim"), e.get("reason")) for e in _of("NodeClaimDrifted")}
    assert reasons == {
        ("inference-1", "InstanceTypeNotFound"),
        ("inference-2", "InstanceTypeNotFound"),
    }


# ---- input: inline reservations, --reservations, errors --------------------------------------
def _scenario(tmp_path: Path, spec: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n" + spec
    )
    return path


def test_inline_reservations_are_read_as_a_file_is(tmp_path: Path) -> None:
    spec = (
        "  reservations:\n    CapacityReservations:\n"
        "      - {CapacityReservationId: cr-0a, InstanceType: g6e.xlarge, "
        "AvailabilityZone: us-east-1b, OwnerId: '123456789012', TotalInstanceCount: 2, "
        "AvailableInstanceCount: 1, InstanceMatchCriteria: targeted, State: active}\n"
    )
    loaded = load_scenario(str(_scenario(tmp_path, spec)), load_catalog("us-east-1"))
    assert loaded.reservations is not None
    (item,) = loaded.reservations.capacity_reservations
    assert (item.capacity_reservation_id, item.available_instance_count) == ("cr-0a", 1)


def test_a_bad_reservations_file_is_one_line_naming_the_scenario_field(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("CapacityReservations: [{CapacityReservationId: cr-0a}]\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(
            str(_scenario(tmp_path, "  reservations: r.yaml\n")), load_catalog("us-east-1")
        )
    (line,) = err.value.lines()
    assert line.startswith(f"{tmp_path / 's.yaml'}: reservations: {tmp_path / 'r.yaml'}: ")


def test_no_reservations_leave_the_run_without_a_reservations_summary() -> None:
    # The summary (and every recorded output) is as before when a scenario has none.
    story = Path(__file__).parent / "stories" / "ami-pinned.yaml"
    loaded = load_scenario(str(story), load_catalog("us-east-1"))
    assert loaded.reservations is None
    assert World(loaded, load_catalog("us-east-1")).reservations is None


def test_simulate_reservations_option_replaces_spec_reservations(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(_CLASS.replace("ID", "cr-0b") + _POOL_AND_APP)
    (tmp_path / "r.yaml").write_text(_ODCR.replace("END", "EndDateType: unlimited"))
    scenario = _scenario(tmp_path, "  duration: 5m\n  manifests: [m.yaml]\n")
    result = CliRunner().invoke(
        app, ["simulate", str(scenario), "--reservations", str(tmp_path / "r.yaml"), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    assert '"reservation": "cr-0b"' in result.output
    assert '"capacityType": "reserved"' in result.output
