"""The reservations file (`apis/capacityreservation.py`): what `aws ec2
describe-capacity-reservations` prints loads as is, in JSON or YAML; a bad item is one line
naming the file, the item (index and id) and the field, and the CLI exits 2 on it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from gpucap.apis.capacityreservation import (
    CAPACITY_RESERVATION_STATES,
    ReservationsError,
    load_reservations,
    parse_reservations,
)
from gpucap.runtime.errors import GpucapInputError

UTC = dt.timezone.utc

# An item as the AWS CLI v2 prints it for a Capacity Block (every field EC2 returns).
CLI_OUTPUT = """\
{
    "CapacityReservations": [
        {
            "CapacityReservationId": "cr-0123456789abcdef0",
            "OwnerId": "123456789012",
            "CapacityReservationArn": "arn:aws:ec2:us-east-1:123456789012:capacity-reservation/cr-0123456789abcdef0",
            "AvailabilityZoneId": "use1-az6",
            "InstanceType": "p5.48xlarge",
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": "us-east-1a",
            "Tenancy": "default",
            "TotalInstanceCount": 2,
            "AvailableInstanceCount": 1,
            "EbsOptimized": true,
            "EphemeralStorage": false,
            "State": "active",
            "StartDate": "2026-01-01T11:30:00.000Z",
            "EndDate": "2026-01-15T11:30:00.000Z",
            "EndDateType": "limited",
            "InstanceMatchCriteria": "targeted",
            "CreateDate": "2025-12-20T09:12:44.000Z",
            "Tags": [{"Key": "team", "Value": "training"}],
            "CapacityAllocations": [{"AllocationType": "used", "Count": 1}],
            "ReservationType": "capacity-block",
            "UnusedReservationBillingOwnerId": "123456789012",
            "CommitmentInfo": {"CommittedInstanceCount": 2},
            "DeliveryPreference": "fixed",
            "CapacityBlockId": "cb-0123456789abcdef0"
        }
    ],
    "NextToken": "eyJ2IjoiMiJ9"
}
"""


def item(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "CapacityReservationId": "cr-0aaa",
        "InstanceType": "g5.xlarge",
        "AvailabilityZone": "us-east-1a",
        "OwnerId": "123456789012",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": 4,
        "InstanceMatchCriteria": "open",
        "State": "active",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def error_of(*items: Any) -> str:
    with pytest.raises(ReservationsError) as info:
        parse_reservations({"CapacityReservations": list(items)}, source="res.yaml")
    return str(info.value)


def test_a_reservations_file_from_describe_capacity_reservations_loads_as_is(
    tmp_path: Path,
) -> None:
    path = tmp_path / "reservations.json"
    path.write_text(CLI_OUTPUT, encoding="utf-8")

    (r,) = load_reservations(str(path)).capacity_reservations

    assert (r.capacity_reservation_id, r.instance_type, r.availability_zone) == (
        "cr-0123456789abcdef0",
        "p5.48xlarge",
        "us-east-1a",
    )
    assert (r.reservation_type, r.state, r.instance_match_criteria) == (
        "capacity-block",
        "active",
        "targeted",
    )
    assert (r.total_instance_count, r.available_instance_count) == (2, 1)
    assert r.start_date == dt.datetime(2026, 1, 1, 11, 30, tzinfo=UTC)
    assert r.end_date == dt.datetime(2026, 1, 15, 11, 30, tzinfo=UTC)
    assert r.tag_map == {"team": "training"}
    assert r.interruptible is False


def test_the_same_file_in_yaml_loads_the_same(tmp_path: Path) -> None:
    as_json = tmp_path / "r.json"
    as_json.write_text(CLI_OUTPUT, encoding="utf-8")
    as_yaml = tmp_path / "r.yaml"
    doc = json.loads(CLI_OUTPUT)
    as_yaml.write_text(
        "CapacityReservations:\n"
        + "".join(
            f"  {'-' if i == 0 else ' '} {k}: {json.dumps(v)}\n"
            for i, (k, v) in enumerate(doc["CapacityReservations"][0].items())
        ),
        encoding="utf-8",
    )

    assert load_reservations(str(as_yaml)) == load_reservations(str(as_json))


def test_a_missing_reservation_type_is_default_and_a_missing_interruptible_is_false() -> None:
    # Karpenter: CapacityReservationTypeFromEC2("") is default; lo.FromPtrOr(Interruptible, false)
    # (aws pkg/apis/v1/ec2nodeclass_status.go; nodeclass/capacityreservation_test.go "should
    # handle capacity reservations with nil Interruptible field").
    (r,) = parse_reservations({"CapacityReservations": [item()]}, source="r").capacity_reservations
    assert (r.reservation_type, r.interruptible, r.end_date) == ("default", False, None)


def test_an_interruptible_reservation_keeps_its_flag_and_source() -> None:
    doc = item(
        Interruptible=True,
        InterruptionInfo={"SourceCapacityReservationId": "cr-0src", "InterruptionType": "adhoc"},
    )
    (r,) = parse_reservations({"CapacityReservations": [doc]}, source="r").capacity_reservations
    assert r.interruptible
    assert r.interruption_info is not None
    assert r.interruption_info.source_capacity_reservation_id == "cr-0src"


def test_every_ec2_state_is_accepted() -> None:
    items = [
        item(CapacityReservationId=f"cr-{i}", State=s)
        for i, s in enumerate(CAPACITY_RESERVATION_STATES)
    ]
    loaded = parse_reservations({"CapacityReservations": items}, source="r")
    assert [r.state for r in loaded.capacity_reservations] == list(CAPACITY_RESERVATION_STATES)


def test_bad_reservation_field_is_one_line_naming_file_item_and_field() -> None:
    message = error_of(item(), item(CapacityReservationId="cr-0bad", AvailableInstanceCount="x"))
    assert message == (
        "res.yaml: CapacityReservations[1] (cr-0bad): AvailableInstanceCount: expected an "
        'integer, got string "x"'
    )
    assert "\n" not in message
    assert isinstance(ReservationsError(message), GpucapInputError)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"State": "activ"},
            "res.yaml: CapacityReservations[0] (cr-0aaa): State: 'activ' is not one of active, "
            "expired, cancelled, pending, failed, scheduled, payment-pending, payment-failed, "
            "assessing, delayed, unsupported, cancelling, unavailable",
        ),
        (
            {"ReservationType": "interruptible"},
            "res.yaml: CapacityReservations[0] (cr-0aaa): ReservationType: 'interruptible' is "
            "not one of default, capacity-block",
        ),
        (
            {"InstanceType": None},
            "res.yaml: CapacityReservations[0] (cr-0aaa): InstanceType: required field is missing",
        ),
        (
            {"EndDate": "2026-01-15"},
            "res.yaml: CapacityReservations[0] (cr-0aaa): EndDate: the time has no zone: add Z "
            "(UTC) or an offset such as +00:00",
        ),
        (
            {"StartDate": "next tuesday"},
            "res.yaml: CapacityReservations[0] (cr-0aaa): StartDate: expected an RFC 3339 time "
            '(2026-03-01T00:00:00Z), got string "next tuesday"',
        ),
        (
            {"AvailableInstanceCount": 5},
            "res.yaml: CapacityReservations[0] (cr-0aaa): AvailableInstanceCount: 5 is more than "
            "TotalInstanceCount 4",
        ),
        (
            {"StartDate": "2026-02-01T00:00:00Z", "EndDate": "2026-01-01T00:00:00Z"},
            "res.yaml: CapacityReservations[0] (cr-0aaa): EndDate: 2026-01-01T00:00:00+00:00 is "
            "not after StartDate 2026-02-01T00:00:00+00:00",
        ),
        (
            {"Tags": [{"Value": "x"}]},
            "res.yaml: CapacityReservations[0] (cr-0aaa): Tags[0].Key: required field is missing",
        ),
    ],
)
def test_each_bad_field_is_named(fields: dict[str, Any], expected: str) -> None:
    assert error_of(item(**fields)) == expected


def test_a_reservation_id_given_twice_is_refused() -> None:
    message = error_of(item(), item())
    assert message == (
        "res.yaml: CapacityReservations[1] (cr-0aaa): CapacityReservationId: given twice "
        "(first at CapacityReservations[0])"
    )


def test_a_file_that_is_not_a_describe_response_says_what_it_expects(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("- CapacityReservationId: cr-1\n", encoding="utf-8")
    with pytest.raises(ReservationsError) as info:
        load_reservations(str(path))
    assert str(info.value) == (
        f"{path}: expected a DescribeCapacityReservations response: an object with a "
        "CapacityReservations list"
    )


def test_unreadable_yaml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("CapacityReservations: [\n", encoding="utf-8")
    with pytest.raises(GpucapInputError) as info:
        load_reservations(str(path))
    assert str(info.value).startswith(f"{path}: ")
    assert "\n" not in str(info.value)


def test_an_empty_list_is_no_reservations() -> None:
    assert parse_reservations({"CapacityReservations": []}, source="r").capacity_reservations == ()
