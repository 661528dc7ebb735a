"""Karpenter's unavailable-offerings ("ICE") cache (`aws/karpenter-provider-aws:pkg/cache/
unavailableofferings.go`, TTL in `pkg/cache/cache.go`).

When CreateFleet reports insufficient capacity for an override, Karpenter marks that offering
(`capacityType:instanceType:zone`) unavailable for 3 minutes; instance types list those
offerings as unavailable, so the next scheduling pass picks something else (spot in another
zone or type, and on-demand once no spot offering is left). Marking again refreshes the TTL.
`AuthFailure.ServiceLinkedRoleCreationNotPermitted` marks the whole `spot` capacity type. A
sequence number changes with every mark, so cached instance types can be rebuilt only then.
Time comes from the injected Clock. Called by the AWS cloud provider and the interruption
controller (a spot interruption marks its offering the same way).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from gpucap.runtime.clock import Clock

__all__ = ["ICE_ERROR_CODES", "UNAVAILABLE_OFFERINGS_TTL", "UnavailableOfferings"]

# pkg/cache/cache.go: UnavailableOfferingsTTL = 3 * time.Minute
UNAVAILABLE_OFFERINGS_TTL = dt.timedelta(minutes=3)

# pkg/errors/errors.go: unfulfillableCapacityErrorCodes
ICE_ERROR_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "MaxFleetCountExceeded",
        "ReservationCapacityExceeded",
    }
)

SERVICE_LINKED_ROLE_ERROR = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"


@dataclass(slots=True)
class UnavailableOfferings:
    """Offerings marked unavailable, each until its mark expires on the clock."""

    clock: Clock
    ttl: dt.timedelta = UNAVAILABLE_OFFERINGS_TTL
    _until: dict[str, dt.datetime] = field(default_factory=dict)
    _capacity_types: dict[str, dt.datetime] = field(default_factory=dict)
    seq: int = 0

    @staticmethod
    def key(capacity_type: str, instance_type: str, zone: str) -> str:
        return f"{capacity_type}:{instance_type}:{zone}"

    def mark_unavailable(self, capacity_type: str, instance_type: str, zone: str) -> None:
        self._until[self.key(capacity_type, instance_type, zone)] = self.clock.now() + self.ttl
        self.seq += 1

    def mark_capacity_type_unavailable(self, capacity_type: str) -> None:
        self._capacity_types[capacity_type] = self.clock.now() + self.ttl
        self.seq += 1

    def is_unavailable(self, capacity_type: str, instance_type: str, zone: str) -> bool:
        now = self.clock.now()
        until = self._capacity_types.get(capacity_type)
        if until is not None and now < until:
            return True
        until = self._until.get(self.key(capacity_type, instance_type, zone))
        return until is not None and now < until

    def active(self) -> list[str]:
        """Keys still marked now, sorted (for reports and cache keys)."""
        now = self.clock.now()
        keys = [k for k, until in self._until.items() if now < until]
        keys += [f"{ct}:*:*" for ct, until in self._capacity_types.items() if now < until]
        return sorted(keys)

    def next_expiry(self) -> dt.datetime | None:
        """When the first mark still in force now ends (None: none is): `active()` is the
        same until then unless a mark is made."""
        now = self.clock.now()
        ends = [u for u in (*self._until.values(), *self._capacity_types.values()) if now < u]
        return min(ends) if ends else None

    def expire(self) -> None:
        """Drop expired marks (Karpenter cleans up every 10 s; lookups already ignore them)."""
        now = self.clock.now()
        self._until = {k: v for k, v in self._until.items() if now < v}
        self._capacity_types = {k: v for k, v in self._capacity_types.items() if now < v}
