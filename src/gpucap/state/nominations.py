"""`KeptNominations`: the nominations in force, as `Cluster` last computed them, handed out again
while nothing they read changed.

Every trigger of the simulator's kube-scheduler bind pass (`sim/binder.py`) and every snapshot
asks the `Cluster` for the nominations in force (NodeClaim and pod present, end not reached),
and a launch or expiry wave has as many nominations as NodeClaims: a scan of every nomination
on each ask. The answer is kept with the cluster's counters it was computed at (pods,
NodeClaims, nominations) and the soonest end among the nominations in force; the clock only
moves on, so one that ended stays ended, and the answer holds while the counters are the same
and the clock is before that end. Owned by `Cluster` (`Cluster.kept_nominations`, asked by
`Cluster._active_nominations`); with `on` false every ask computes `in_force` (the reference
tests/state/test_cluster_nominations.py compares).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Protocol

__all__ = ["KeptNominations", "in_force"]


class Nomination(Protocol):
    """A pod's nomination: the NodeClaim and when it ends (None: never by itself)."""

    @property
    def claim(self) -> str: ...

    @property
    def until(self) -> float | None: ...


def in_force(
    nominations: Mapping[str, Nomination],
    claims: Container[str],
    pods: Container[str],
    now: float | None,
) -> dict[str, str]:
    """Pod key -> NodeClaim name of the nominations whose NodeClaim and pod exist and whose
    end is after `now` (no clock: ends are not read). The plain computation."""
    return {
        key: n.claim
        for key, n in nominations.items()
        if n.claim in claims and key in pods and (n.until is None or now is None or n.until > now)
    }


class KeptNominations:
    """The last answer, its counters and the soonest end (see the module docstring)."""

    __slots__ = ("_active", "_key", "_soonest", "on")

    def __init__(self) -> None:
        self.on = True
        self._key: tuple[int, ...] | None = None
        self._active: dict[str, str] = {}
        self._soonest: float | None = None

    def answer(
        self,
        key: tuple[int, ...],
        now: float | None,
        nominations: Mapping[str, Nomination],
        claims: Container[str],
        pods: Container[str],
    ) -> dict[str, str]:
        """`in_force(nominations, claims, pods, now)`, computed at the cluster's counters
        `key`: the kept answer while it holds (see the module docstring)."""
        kept = self.get(key, now) if self.on else None
        if kept is not None:
            return kept
        return self.put(key, in_force(nominations, claims, pods, now), nominations, now)

    def get(self, key: tuple[int, ...], now: float | None) -> dict[str, str] | None:
        """The kept answer when it was computed at `key` and `now` is before the soonest end
        (no clock: ends are not read); else None."""
        if self._key != key:
            return None
        if self._soonest is not None and now is not None and now >= self._soonest:
            return None
        return self._active

    def put(
        self,
        key: tuple[int, ...],
        active: dict[str, str],
        nominations: Mapping[str, Nomination],
        now: float | None,
    ) -> dict[str, str]:
        """Keep `active` (`in_force` of `nominations` at `key`, `now`) and hand it back."""
        self._key, self._active = key, active
        found = (
            [u for k in active if (u := nominations[k].until) is not None]
            if now is not None
            else []
        )
        self._soonest = min(found, default=None)
        return active
