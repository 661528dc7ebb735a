"""EC2's answer to DescribeCapacityReservations over a reservations file, at a given time.

Karpenter's provider asks EC2; offline, gpucap answers from the user's reservations file
(`apis/capacityreservation.py`) the way EC2 would at the clock's time, so that the provider
code path is the same against real AWS (`BotoEC2API`) and offline. `FileReservationsAPI` is that
answer; `describe_capacity_reservations` the pure function under it, which the simulated EC2
can call too.

EC2's side, modelled:
- `CapacityReservationIds`: only those IDs; an ID the account does not have is EC2's
  `InvalidCapacityReservationId.NotFound` error (Karpenter treats it as "none").
- Filters are ANDed, the values of one filter ORed; names used by Karpenter: `state`,
  `owner-id`, `instance-match-criteria`, `tag:<key>`, `tag-key`, plus `instance-type` and
  `availability-zone`. Tag values and keys match with EC2's wildcards (`*` any run of
  characters, `?` exactly one, `\\` escapes); the other filters match exactly.
- Time: a file is a snapshot, and reservations move on in virtual time as EC2 moves them
  (`state_at`): a `scheduled` reservation (a Capacity Block or future-dated ODCR bought ahead)
  is `active` from its `StartDate` (without one it stays `scheduled`), and an `active` or
  `scheduled` one with an `EndDate` is `expired` from then. No other state changes by itself
  (a `pending` or `payment-pending` one stays as written). The answer carries the state at
  that time.
- `MaxResults`/`NextToken` page through the answer (MaxResults is refused together with IDs,
  as EC2 refuses it).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from gpucap.apis.capacityreservation import CapacityReservationItem, Reservations
from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.runtime.clock import Clock

__all__ = [
    "FileReservationsAPI",
    "describe_capacity_reservations",
    "ec2_wildcard",
    "state_at",
]

_OPERATION = "DescribeCapacityReservations"


def state_at(item: CapacityReservationItem, now: dt.datetime) -> str:
    """The state EC2 reports for the reservation at `now` (see the module docstring)."""
    state: str = item.state
    if state in ("active", "scheduled") and item.end_date is not None and now >= item.end_date:
        return "expired"
    if state == "scheduled" and item.start_date is not None and now >= item.start_date:
        return "active"
    return state


@cache
def _pattern(value: str) -> re.Pattern[str]:
    out: list[str] = []
    chars = iter(value)
    for c in chars:
        if c == "\\":
            out.append(re.escape(next(chars, "\\")))
        elif c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        else:
            out.append(re.escape(c))
    return re.compile("".join(out), re.DOTALL)


def ec2_wildcard(pattern: str, text: str) -> bool:
    """Whether `text` matches an EC2 filter value with wildcards (`*`, `?`, `\\` escapes)."""
    return _pattern(pattern).fullmatch(text) is not None


def _matches(item: CapacityReservationItem, state: str, name: str, values: Sequence[str]) -> bool:
    tags = item.tag_map
    if name.startswith("tag:"):
        key = name[4:]
        return key in tags and any(ec2_wildcard(v, tags[key]) for v in values)
    if name == "tag-key":
        return any(ec2_wildcard(v, k) for v in values for k in tags)
    field = {
        "state": state,
        "owner-id": item.owner_id,
        "instance-match-criteria": item.instance_match_criteria,
        "instance-type": item.instance_type,
        "availability-zone": item.availability_zone,
    }.get(name)
    if field is None:
        raise EC2APIError(
            "InvalidParameterValue", f"The filter '{name}' is invalid", operation=_OPERATION
        )
    return field in values


def describe_capacity_reservations(
    items: Iterable[CapacityReservationItem], now: dt.datetime, request: Mapping[str, Any]
) -> Response:
    """The response EC2 gives `request` (boto3 kwargs) for these reservations at `now`."""
    listed = list(items)
    ids = list(request.get("CapacityReservationIds") or [])
    max_results = request.get("MaxResults")
    if ids and max_results is not None:
        raise EC2APIError(
            "InvalidParameterCombination",
            "MaxResults cannot be used with CapacityReservationIds",
            operation=_OPERATION,
        )
    if ids:
        known = {r.capacity_reservation_id for r in listed}
        missing = [i for i in ids if i not in known]
        if missing:
            raise EC2APIError(
                "InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{missing[0]}' does not exist",
                operation=_OPERATION,
            )
        listed = [r for r in listed if r.capacity_reservation_id in ids]
    filters = [(f["Name"], list(f.get("Values") or [])) for f in request.get("Filters") or []]
    answer: list[dict[str, Any]] = []
    for item in sorted(listed, key=lambda r: r.capacity_reservation_id):
        state = state_at(item, now)
        if all(_matches(item, state, name, values) for name, values in filters):
            answer.append({**item.to_ec2(), "State": state})
    start = int(request.get("NextToken") or 0)
    if max_results is None:
        return {"CapacityReservations": answer[start:]}
    end = start + int(max_results)
    page: Response = {"CapacityReservations": answer[start:end]}
    if end < len(answer):
        page["NextToken"] = str(end)
    return page


class FileReservationsAPI:
    """The one EC2 call the capacity-reservation provider makes, answered from a reservations
    file at the clock's time. Like `EC2API`'s implementations, it follows `NextToken` itself:
    one call returns every page merged."""

    def __init__(self, reservations: Reservations, clock: Clock) -> None:
        self._items = reservations.capacity_reservations
        self._clock = clock
        self.calls: list[dict[str, Any]] = []  # each request, for tests

    def describe_capacity_reservations(self, **kwargs: Any) -> Response:
        self.calls.append(dict(kwargs))
        now = self._clock.now()
        request = dict(kwargs)
        merged: list[dict[str, Any]] = []
        while True:
            page = describe_capacity_reservations(self._items, now, request)
            merged.extend(page["CapacityReservations"])
            if "NextToken" not in page:
                return {"CapacityReservations": merged}
            request["NextToken"] = page["NextToken"]
