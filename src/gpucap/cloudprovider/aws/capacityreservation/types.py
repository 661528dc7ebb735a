"""The DescribeCapacityReservations queries a node class's selector terms make, and the
availability bookkeeping between two queries (aws `pkg/providers/capacityreservation/types.go`).

Queries (`queries_from_selector_terms`, Karpenter's `QueriesFromSelectorTerms`): each
`capacityReservationSelectorTerms` entry gives
- a query by ID when it has `id` (the CRD forbids `id` with any other field);
- a query by owner, tags and match criteria when it has `tags` or `instanceMatchCriteria`; an
  `ownerID` on its own asks nothing (the CRD refuses such a term: at least one of `tags`, `id`,
  `instanceMatchCriteria`).
Each query asks EC2 for `state=active` reservations only (`Query.request`); a tag whose value is
`*` becomes a `tag-key` filter (any value), any other a `tag:<key>` filter.

Availability (`AvailabilityCache`, Karpenter's `availabilityCache`): per reservation ID, the
count EC2 last reported, then moved by gpucap's own launches and terminations until the next
query replaces it. Called by the provider (`provider.py`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpucap.apis.ec2nodeclass import CapacityReservationSelectorTerm
from gpucap.runtime.clock import Clock

__all__ = [
    "AVAILABILITY_TTL",
    "MAX_RESULTS",
    "AvailabilityCache",
    "Query",
    "queries_from_selector_terms",
]

# DescribeCapacityReservations returns at most 1,000 items a page (types.go).
MAX_RESULTS: Final = 1000
# pkg/cache/cache.go CapacityReservationAvailabilityTTL: an availability count is kept a day
# without a refresh (EC2 outages), then forgotten.
AVAILABILITY_TTL: Final = dt.timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class Query:
    """One DescribeCapacityReservations call (Karpenter's `Query`): by `id`, or by owner, tags
    and match criteria. Frozen and hashable: the provider's cache key."""

    id: str = ""
    owner_id: str = ""
    tags: tuple[tuple[str, str], ...] = ()  # sorted (key, value)
    instance_match_criteria: str = ""

    def request(self) -> dict[str, Any]:
        """The boto3 request (Karpenter's `DescribeCapacityReservationsInput`)."""
        filters: list[dict[str, Any]] = [{"Name": "state", "Values": ["active"]}]
        if self.id:
            # By ID: EC2 refuses MaxResults with CapacityReservationIds.
            return {"Filters": filters, "CapacityReservationIds": [self.id]}
        if self.owner_id:
            filters.append({"Name": "owner-id", "Values": [self.owner_id]})
        for key, value in self.tags:
            if value == "*":
                filters.append({"Name": "tag-key", "Values": [key]})
            else:
                filters.append({"Name": f"tag:{key}", "Values": [value]})
        if self.instance_match_criteria:
            filters.append(
                {"Name": "instance-match-criteria", "Values": [self.instance_match_criteria]}
            )
        return {"Filters": filters, "MaxResults": MAX_RESULTS}


def queries_from_selector_terms(
    terms: Iterable[CapacityReservationSelectorTerm],
) -> list[Query]:
    """The queries of a node class's terms, in term order (Karpenter's
    `QueriesFromSelectorTerms`); terms are ORed: the union of the queries' answers."""
    queries: list[Query] = []
    for term in terms:
        if term.id:
            queries.append(Query(id=term.id))
        if term.tags or term.instance_match_criteria:
            queries.append(
                Query(
                    owner_id=term.owner_id or "",
                    tags=tuple(sorted((term.tags or {}).items())),
                    instance_match_criteria=term.instance_match_criteria or "",
                )
            )
    return queries


@dataclass(slots=True)
class _Entry:
    count: int
    synced: dt.datetime


class AvailabilityCache:
    """How many instances each reservation can still take, as Karpenter counts it between two
    DescribeCapacityReservations calls (types.go `availabilityCache`); on the injected clock.

    An ID the cache does not hold (never listed, or not refreshed for `AVAILABILITY_TTL`) has
    0 available, and marks on it do nothing."""

    def __init__(self, clock: Clock, ttl: dt.timedelta = AVAILABILITY_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._entries: dict[str, _Entry] = {}

    def _get(self, reservation_id: str) -> _Entry | None:
        entry = self._entries.get(reservation_id)
        if entry is not None and self._clock.now() - entry.synced > self._ttl:
            del self._entries[reservation_id]
            return None
        return entry

    def sync(self, availability: Mapping[str, int]) -> None:
        """EC2's counts replace the cache's (`syncAvailability`, after every query)."""
        now = self._clock.now()
        for reservation_id, count in availability.items():
            self._entries[reservation_id] = _Entry(count, now)

    def set_available_instance_count(self, reservation_id: str, count: int) -> None:
        """Set one count as if EC2 had just reported it (`SetAvailableInstanceCount`, tests)."""
        self.sync({reservation_id: count})

    def get_available_instance_count(self, reservation_id: str) -> int:
        """The count the offerings read (`GetAvailableInstanceCount`); 0 when unknown."""
        entry = self._get(reservation_id)
        return 0 if entry is None else entry.count

    def mark_launched(self, reservation_id: str) -> None:
        """One instance launched into the reservation (`MarkLaunched`, called by the cloud
        provider's Create for a reserved launch): one less available, never below 0. A launch
        stamped before the last sync would already be in EC2's count; Karpenter skips it, and
        so does this (with one clock both are "now", so every launch counts)."""
        entry = self._get(reservation_id)
        if entry is None or entry.synced > self._clock.now():
            return
        if entry.count != 0:
            entry.count -= 1

    def mark_terminated(self, reservation_id: str) -> None:
        """One instance of the reservation is gone (`MarkTerminated`, called by the cloud
        provider's Delete once the instance is not found): one more available. No time check:
        Karpenter would rather overestimate availability than underestimate it."""
        entry = self._get(reservation_id)
        if entry is not None:
            entry.count += 1

    def mark_unavailable(self, reservation_ids: Sequence[str]) -> None:
        """The reservations are full (`MarkUnavailable`, called after CreateFleet refused a
        reserved override for insufficient capacity, and for a capacity-reservation
        interruption): 0 available until the next query says otherwise."""
        for reservation_id in reservation_ids:
            entry = self._get(reservation_id)
            if entry is not None:
                entry.count = 0
