"""The capacity-reservation provider: the reservations a node class selects, and how many
instances each can still take (aws `pkg/providers/capacityreservation/provider.go`).

`CapacityReservationProvider.list(terms)` is Karpenter's `DefaultProvider.List`: one
DescribeCapacityReservations query per selector term part (`types.py`), each asking EC2 for
`active` reservations only; a query's answer is cached for a minute (`pkg/cache/cache.go`
DefaultTTL, on the injected clock) and, when fresh, replaces the availability counts; a query by
an ID EC2 does not know (`InvalidCapacityReservationId.NotFound`) answers nothing. The union
is then de-duplicated by ID (first seen kept) and a reservation whose `EndDate` is not after
now is dropped (Karpenter's `filterReservations`: EC2 may still call a just-ended reservation
`active`). So: not selected are every state but `active` (expired, cancelled, pending,
scheduled, payment-pending ... -- a Capacity Block before its start included) and any reservation
at or past its end.

The API is anything with `describe_capacity_reservations` (`CapacityReservationAPI`): an
`EC2API` (boto3 against real AWS), or `FileReservationsAPI` over a reservations file
(`describe.py`); `select(terms, reservations, now)` is the offline one-shot.

The availability bookkeeping (`mark_launched`, `mark_terminated`, `mark_unavailable`,
`get_available_instance_count`) is the provider's embedded `availabilityCache` (`types.py`).
Called by the AWS cloud provider, the instance-type offerings and launch (the lead's wiring).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pydantic import ValidationError

from gpucap.apis.capacityreservation import (
    CapacityReservationItem,
    InstanceMatchCriteria,
    Reservations,
    ReservationType,
)
from gpucap.apis.ec2nodeclass import CapacityReservationSelectorTerm
from gpucap.cloudprovider.aws.capacityreservation.describe import FileReservationsAPI
from gpucap.cloudprovider.aws.capacityreservation.types import (
    AVAILABILITY_TTL,
    AvailabilityCache,
    Query,
    queries_from_selector_terms,
)
from gpucap.cloudprovider.aws.ec2.api import EC2APIError, Response
from gpucap.runtime.clock import Clock, FakeClock
from gpucap.runtime.logging import get_logger

__all__ = [
    "QUERY_CACHE_TTL",
    "CapacityReservation",
    "CapacityReservationAPI",
    "CapacityReservationProvider",
    "select",
]

# pkg/cache/cache.go DefaultTTL: a query's answer is reused for a minute.
QUERY_CACHE_TTL: Final = dt.timedelta(minutes=1)
_NOT_FOUND: Final = "InvalidCapacityReservationId.NotFound"

_log = get_logger(__name__)


class CapacityReservationAPI(Protocol):
    """The one EC2 call the provider makes (every `EC2API` has it)."""

    def describe_capacity_reservations(self, **kwargs: Any) -> Response: ...


@dataclass(frozen=True, slots=True)
class CapacityReservation:
    """One selected reservation, as the offerings and launch read it (the fields of EC2's
    `CapacityReservation` Karpenter keeps in the node class status, plus the counts and start).

    `available_instance_count` is what EC2 said when listed; the live count (after gpucap's
    launches and terminations) is the provider's `get_available_instance_count(id)`."""

    id: str
    instance_type: str
    zone: str
    owner_id: str
    reservation_type: ReservationType  # "default" (an ODCR) or "capacity-block"
    interruptible: bool  # an interruptible reservation: its source's owner can reclaim it
    instance_match_criteria: InstanceMatchCriteria  # "open" or "targeted"
    total_instance_count: int
    available_instance_count: int
    start: dt.datetime | None
    end: dt.datetime | None  # None: never ends (EndDateType unlimited)
    state: str  # EC2's state when listed: always "active" for a selected reservation
    tags: tuple[tuple[str, str], ...] = ()
    # An interruptible reservation's source (InterruptionInfo.SourceCapacityReservationId).
    source_reservation_id: str | None = None

    @property
    def is_capacity_block(self) -> bool:
        return self.reservation_type == "capacity-block"

    @classmethod
    def from_item(cls, item: CapacityReservationItem) -> CapacityReservation:
        return cls(
            id=item.capacity_reservation_id,
            instance_type=item.instance_type,
            zone=item.availability_zone,
            owner_id=item.owner_id,
            reservation_type=item.reservation_type,
            interruptible=item.interruptible,
            instance_match_criteria=item.instance_match_criteria,
            total_instance_count=item.total_instance_count,
            available_instance_count=item.available_instance_count,
            start=item.start_date,
            end=item.end_date,
            state=item.state,
            tags=tuple(sorted(item.tag_map.items())),
            source_reservation_id=(
                item.interruption_info.source_capacity_reservation_id
                if item.interruption_info is not None
                else None
            ),
        )

    @classmethod
    def from_ec2(cls, raw: Mapping[str, Any]) -> CapacityReservation | None:
        """An item of a DescribeCapacityReservations response; None (logged) when EC2 sent
        what gpucap does not know (a new match criterion or reservation type): Karpenter leaves
        such a reservation out of the node class status (`CapacityReservationFromEC2`)."""
        try:
            return cls.from_item(CapacityReservationItem.model_validate(raw))
        except ValidationError as err:
            _log.error(
                "ignoring capacity reservation %s: %s",
                raw.get("CapacityReservationId"),
                err.errors()[0]["msg"],
            )
            return None


class CapacityReservationProvider:
    """Karpenter's capacity-reservation `DefaultProvider` (see the module docstring)."""

    def __init__(
        self,
        api: CapacityReservationAPI,
        clock: Clock,
        *,
        query_ttl: dt.timedelta = QUERY_CACHE_TTL,
        availability_ttl: dt.timedelta = AVAILABILITY_TTL,
    ) -> None:
        self._api = api
        self._clock = clock
        self._query_ttl = query_ttl
        self._queries: dict[Query, tuple[dt.datetime, tuple[CapacityReservation, ...]]] = {}
        self.availability = AvailabilityCache(clock, availability_ttl)

    def list(self, terms: Iterable[CapacityReservationSelectorTerm]) -> list[CapacityReservation]:
        """The reservations `terms` select now, in the order the queries found them."""
        now = self._clock.now()
        found: list[CapacityReservation] = []
        for query in queries_from_selector_terms(terms):
            cached = self._queries.get(query)
            if cached is not None and now - cached[0] <= self._query_ttl:
                found.extend(cached[1])
                continue
            answer = self._describe(query)
            self.availability.sync({r.id: r.available_instance_count for r in answer})
            self._queries[query] = (now, answer)
            found.extend(answer)
        seen: set[str] = set()
        selected: list[CapacityReservation] = []
        for r in found:
            if r.id in seen:
                continue
            seen.add(r.id)
            if r.end is None or r.end > now:
                selected.append(r)
        return selected

    def _describe(self, query: Query) -> tuple[CapacityReservation, ...]:
        try:
            response = self._api.describe_capacity_reservations(**query.request())
        except EC2APIError as err:
            if err.code == _NOT_FOUND:
                return ()
            raise
        parsed = (CapacityReservation.from_ec2(raw) for raw in response["CapacityReservations"])
        return tuple(r for r in parsed if r is not None)

    # ---- availability (types.go availabilityCache) --------------------------------------------
    def get_available_instance_count(self, reservation_id: str) -> int:
        return self.availability.get_available_instance_count(reservation_id)

    def mark_launched(self, reservation_id: str) -> None:
        self.availability.mark_launched(reservation_id)

    def mark_terminated(self, reservation_id: str) -> None:
        self.availability.mark_terminated(reservation_id)

    def mark_unavailable(self, *reservation_ids: str) -> None:
        self.availability.mark_unavailable(reservation_ids)


def select(
    terms: Sequence[CapacityReservationSelectorTerm],
    reservations: Reservations,
    now: dt.datetime,
) -> list[CapacityReservation]:
    """The reservations of a file that `terms` select at `now`, as Karpenter would list them
    from EC2 (a one-shot `CapacityReservationProvider` over `FileReservationsAPI`)."""
    clock = FakeClock(now)
    return CapacityReservationProvider(FileReservationsAPI(reservations, clock), clock).list(terms)
