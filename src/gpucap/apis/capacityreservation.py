"""A reservations file: EC2 capacity reservations as `DescribeCapacityReservations` answers.

The file is what `aws ec2 describe-capacity-reservations` prints (JSON) or the same in YAML: a
top-level `CapacityReservations` list of items in EC2's shape (botocore's `CapacityReservation`
structure: `CapacityReservationId`, `InstanceType`, `AvailabilityZone`, `TotalInstanceCount`,
`AvailableInstanceCount`, `ReservationType`, `State`, `StartDate`, `EndDate`, `EndDateType`,
`InstanceMatchCriteria`, `OwnerId`, `Tags`, `Interruptible`, ...). Whatever else EC2 returns
(`CapacityReservationArn`, `CapacityAllocations`, `NextToken` ...) is read and ignored, so a
real account's output loads as it is; `gpucap catalog export --from-aws --reservations-out`
writes one.

What the fields mean to Karpenter (aws `pkg/apis/v1/ec2nodeclass_status.go`
`CapacityReservationFromEC2`): a missing `ReservationType` is `default`; a missing
`Interruptible` is false; `EndDate` absent means the reservation never ends (`EndDateType:
unlimited`). Times are RFC 3339 (`2026-03-01T00:00:00Z`, or boto3's `+00:00`) and must carry a
zone. Values outside EC2's enums (a state, a match criterion, a type) are refused: gpucap would
not know what Karpenter does with them.

A bad file is one `ReservationsError` line naming the file, the item (index and id) and the
field, e.g. `res.yaml: CapacityReservations[2] (cr-0abc): AvailableInstanceCount: expected an
integer, got string "x"`; the CLI prints it and exits 2.

`load_reservations(path)` is what the CLI calls (`--reservations FILE`); `parse_reservations`
checks a document already read (a Scenario's inline reservations, the export's output).
Read by the AWS capacity-reservation provider (`cloudprovider/aws/capacityreservation/`).
"""

from __future__ import annotations

import datetime as dt
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, ValidationError
from pydantic.alias_generators import to_pascal
from pydantic_core import PydanticCustomError

from gpucap.apis.errors import format_path, show_value, translate
from gpucap.apis.limits import Budget, InputLimitError
from gpucap.apis.reading import InputError, load_json, read_path
from gpucap.apis.yamltext import load_one
from gpucap.runtime.rfc3339 import parse_rfc3339

__all__ = [
    "CAPACITY_RESERVATION_STATES",
    "CapacityReservationItem",
    "CapacityReservationState",
    "InstanceMatchCriteria",
    "InterruptionInfo",
    "ReservationTag",
    "ReservationType",
    "Reservations",
    "ReservationsError",
    "load_reservations",
    "parse_reservations",
]

# EC2's `CapacityReservationState` enum (botocore's EC2 model, 2026): the brief's eleven and
# `cancelling`, `unavailable`, which EC2 added since. Karpenter selects only `active` ones.
CapacityReservationState = Literal[
    "active",
    "expired",
    "cancelled",
    "pending",
    "failed",
    "scheduled",
    "payment-pending",
    "payment-failed",
    "assessing",
    "delayed",
    "unsupported",
    "cancelling",
    "unavailable",
]
CAPACITY_RESERVATION_STATES: tuple[str, ...] = typing.get_args(CapacityReservationState)
# Karpenter's `CapacityReservationType` values (aws pkg/apis/v1/ec2nodeclass_status.go), which
# are also EC2's `ReservationType` enum. An interruptible reservation is a `default` one with
# `Interruptible: true`, not a type of its own.
ReservationType = Literal["default", "capacity-block"]
InstanceMatchCriteria = Literal["open", "targeted"]


class ReservationsError(InputError):
    """A reservations file gpucap cannot use; one line naming the file, item and field."""


def _aware_time(value: object) -> object:
    """An RFC 3339 string (or a datetime, as boto3 hands them) -> an aware datetime."""
    if isinstance(value, str):
        try:
            value = parse_rfc3339(value)
        except ValueError:
            raise PydanticCustomError(
                "rfc3339",
                "expected an RFC 3339 time (2026-03-01T00:00:00Z), got {given}",
                {"given": show_value(value)},
            ) from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise PydanticCustomError(
                "rfc3339_zone",
                "the time has no zone: add Z (UTC) or an offset such as +00:00",
            )
        return value.astimezone(dt.timezone.utc)
    raise PydanticCustomError(
        "rfc3339_type",
        "expected an RFC 3339 time (2026-03-01T00:00:00Z), got {given}",
        {"given": show_value(value)},
    )


Time = Annotated[dt.datetime, BeforeValidator(_aware_time)]
Count = Annotated[int, Field(strict=True, ge=0, le=2**31 - 1)]
Text = Annotated[str, Field(strict=True, min_length=1)]


class _EC2Model(BaseModel):
    """EC2's PascalCase field names; fields gpucap does not read are ignored (EC2 adds some
    every year); immutable."""

    model_config = ConfigDict(
        alias_generator=to_pascal,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )


class ReservationTag(_EC2Model):
    key: Annotated[str, Field(strict=True)]
    value: Annotated[str, Field(strict=True)] = ""


class InterruptionInfo(_EC2Model):
    """For an interruptible reservation: the reservation whose owner can take it back."""

    source_capacity_reservation_id: Text | None = None
    interruption_type: Annotated[str, Field(strict=True)] | None = None


class CapacityReservationItem(_EC2Model):
    """One `CapacityReservations` item, the fields of EC2's `CapacityReservation` gpucap reads."""

    capacity_reservation_id: Text
    instance_type: Text
    availability_zone: Text
    owner_id: Text
    total_instance_count: Count
    available_instance_count: Count
    instance_match_criteria: InstanceMatchCriteria
    state: CapacityReservationState
    # EC2 always sends these; hand-written files may leave them out.
    reservation_type: ReservationType = "default"
    start_date: Time | None = None
    end_date: Time | None = None
    end_date_type: Literal["unlimited", "limited"] | None = None
    tags: tuple[ReservationTag, ...] = ()
    interruptible: StrictBool = False
    interruption_info: InterruptionInfo | None = None
    instance_platform: Annotated[str, Field(strict=True)] | None = None
    tenancy: Literal["default", "dedicated"] | None = None
    availability_zone_id: Annotated[str, Field(strict=True)] | None = None
    capacity_reservation_fleet_id: Annotated[str, Field(strict=True)] | None = None
    capacity_block_id: Annotated[str, Field(strict=True)] | None = None

    @property
    def tag_map(self) -> dict[str, str]:
        """The tags as a map (EC2 keys are unique per resource)."""
        return {t.key: t.value for t in self.tags}

    def to_ec2(self) -> dict[str, Any]:
        """This item in boto3's response shape (datetimes stay datetimes), as an EC2API answer
        carries it."""
        out = self.model_dump(by_alias=True, exclude_none=True)
        out["Tags"] = list(out["Tags"])
        return out


class Reservations(_EC2Model):
    """A reservations file: a `DescribeCapacityReservations` response."""

    capacity_reservations: tuple[CapacityReservationItem, ...] = ()

    def by_id(self) -> dict[str, CapacityReservationItem]:
        return {r.capacity_reservation_id: r for r in self.capacity_reservations}


# ---- reading ---------------------------------------------------------------------------------
_LIST = "CapacityReservations"


def load_reservations(path: str) -> Reservations:
    """The reservations file at `path` (YAML or JSON); `ReservationsError` (or the reader's
    `InputError`), one line naming the file, when it cannot be used."""
    text = read_path(path, Budget())
    return parse_reservations(_document(text, path), source=path)


def _document(text: str, source: str) -> object:
    if text.lstrip().startswith("{"):
        # The AWS CLI's output: read as JSON (YAML refuses JSON indented with tabs).
        return load_json(text, source)
    try:
        return load_one(text, source)
    except InputError:
        raise
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise ReservationsError(f"{source}: {where}invalid YAML: {problem}") from None
    except InputLimitError as err:
        raise ReservationsError(f"{source}: {err}") from None
    except ValueError as err:  # a key twice, more than one document
        message = str(err)
        if not message.startswith(source):
            message = f"{source}: {message}"
        raise ReservationsError(message) from None


def parse_reservations(doc: object, *, source: str) -> Reservations:
    """Check a parsed reservations document; `source` names it in errors."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get(_LIST), list):
        raise ReservationsError(
            f"{source}: expected a DescribeCapacityReservations response: an object with a "
            f"{_LIST} list"
        )
    items: list[Any] = doc[_LIST]
    try:
        reservations = Reservations.model_validate({_LIST: items})
    except ValidationError as err:
        raise _first_error(err, items, source) from None
    _check_consistency(reservations, source)
    return reservations


def _label(items: list[Any], index: int) -> str:
    raw = items[index] if 0 <= index < len(items) else None
    rid = raw.get("CapacityReservationId") if isinstance(raw, Mapping) else None
    return f" ({rid})" if isinstance(rid, str) and rid else ""


def _first_error(err: ValidationError, items: list[Any], source: str) -> ReservationsError:
    path, message = translate(err.errors()[0], Reservations)
    if len(path) >= 2 and path[0] == _LIST and isinstance(path[1], int):
        where = f"{_LIST}[{path[1]}]{_label(items, path[1])}"
        rest = format_path(path[2:])
        if rest:
            where += f": {rest}"
        elif message.startswith("expected an object"):
            message = f"each reservation must be an object, got {show_value(items[path[1]])}"
    else:
        where = format_path(path) or _LIST
    return ReservationsError(f"{source}: {where}: {message}")


def _check_consistency(reservations: Reservations, source: str) -> None:
    """What one field cannot say alone: counts, dates, duplicate ids."""
    seen: dict[str, int] = {}
    for index, r in enumerate(reservations.capacity_reservations):
        where = f"{source}: {_LIST}[{index}] ({r.capacity_reservation_id})"
        if r.capacity_reservation_id in seen:
            raise ReservationsError(
                f"{where}: CapacityReservationId: given twice (first at "
                f"{_LIST}[{seen[r.capacity_reservation_id]}])"
            )
        seen[r.capacity_reservation_id] = index
        if r.available_instance_count > r.total_instance_count:
            raise ReservationsError(
                f"{where}: AvailableInstanceCount: {r.available_instance_count} is more than "
                f"TotalInstanceCount {r.total_instance_count}"
            )
        if r.start_date is not None and r.end_date is not None and r.end_date <= r.start_date:
            raise ReservationsError(
                f"{where}: EndDate: {r.end_date.isoformat()} is not after StartDate "
                f"{r.start_date.isoformat()}"
            )
        if r.end_date_type == "limited" and r.end_date is None:
            raise ReservationsError(f"{where}: EndDate: required when EndDateType is limited")
