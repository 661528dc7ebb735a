"""`Nominations`: the pods' nominations (pod key -> NodeClaim and end), and the ones in force,
kept from change to change.

Every trigger of the simulator's kube-scheduler bind pass (`sim/binder.py`) and every snapshot
asks the `Cluster` for the nominations in force (NodeClaim and pod present, end not reached),
and a launch or expiry wave has as many nominations as NodeClaims, each bind ending one: a scan
of every nomination on each ask would be work per nomination and pass. So the answer is kept
and brought up to date by the changes that can alter it, as Karpenter's cluster state applies
each informer event to what it holds instead of listing the cluster again
(kubernetes-sigs/karpenter `pkg/controllers/state/cluster.go` @ 2266468104f3: `UpdatePod`,
`DeletePod`, `UpdateNodeClaim`, `DeleteNodeClaim` each touch the one object's entries):
- a nomination written (`set`) or ended (`pop`, `release`: bound, deleted, its NodeClaim gone)
  puts it in, replaces it where it stood, or takes it out;
- a pod deleted takes its nomination out (`pod_removed`);
- the clock: the nominations in force with an end are kept in a heap by end; an ask pops those
  the clock reached (the clock only moves on, so an ended one stays ended).
The answer keeps the nominations' order (the dict's): an entry put in is new at the end of both,
one replaced keeps its place in both. The rare changes that would put one in at an earlier
place (a nomination rewritten after it ended, a pod re-created while a nomination of its key
stayed, a NodeClaim added or removed that a nomination names) make the next ask compute it
again (`in_force`). The keys put in force are logged (`log`, per `epoch`: a whole computation
starts a new one), so a reader holding an earlier answer finds what is new against it without
comparing the two (the bind queue, `sim/bindqueue.py`). Owned by `Cluster`
(`Cluster.kept_nominations`, asked by `Cluster._active_nominations`); with `on` false every ask
computes `in_force` (the reference tests/state/test_cluster_nominations.py compares after every
change of random histories).
"""

from __future__ import annotations

import heapq
from collections.abc import Container, Mapping
from dataclasses import dataclass

__all__ = ["Nomination", "Nominations", "in_force"]

# At most this many keys in `Nominations.log`; then a new epoch (its readers compare whole).
_LOG_SIZE = 1 << 16


@dataclass(slots=True, eq=False)
class Nomination:
    """A pod's nomination: the NodeClaim and when it ends (the clock's seconds; None: never by
    itself). Each write is a new object (the heap of ends tells them apart by identity)."""

    claim: str
    until: float | None


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


def _live(
    n: Nomination, key: str, claims: Container[str], pods: Container[str], now: float | None
) -> bool:
    return n.claim in claims and key in pods and (n.until is None or now is None or n.until > now)


class Nominations:
    """Every nomination (`all`, in the order written) and the ones in force, kept (see the
    module docstring). The writers are `Cluster`'s; `claims` and `pods` are its maps (read for
    membership only)."""

    __slots__ = (
        "_active",
        "_claims",
        "_ends",
        "_naming",
        "_pods",
        "_serial",
        "_stale",
        "all",
        "epoch",
        "log",
        "on",
    )

    def __init__(self, claims: Container[str], pods: Container[str]) -> None:
        self.on = True
        self.all: dict[str, Nomination] = {}
        self._claims, self._pods = claims, pods
        self._active: dict[str, str] = {}
        # (end, serial, pod key, nomination) of the nominations put in force with an end.
        self._ends: list[tuple[float, int, str, Nomination]] = []
        self._serial = 0
        # NodeClaim name -> how many nominations name it (a NodeClaim added or removed that
        # none names leaves the answer as it is).
        self._naming: dict[str, int] = {}
        self._stale = False
        # The pod keys put in force or moved to another NodeClaim (`set`), in order, since the
        # answer was last computed whole (`epoch` counts those): a reader that kept the answer
        # of an earlier ask finds what is new against it here (`sim/bindqueue.py`).
        self.epoch = 0
        self.log: list[str] = []

    # ---- the writers (Cluster's) ---------------------------------------------------------------
    def set(self, key: str, claim: str, until: float | None, now: float | None) -> None:
        """Nominate pod `key` to NodeClaim `claim` until `until` (`now`: the clock)."""
        old = self.all.get(key)
        new = self.all[key] = Nomination(claim, until)
        if old is not None:
            self._name(old.claim, -1)
        self._name(claim, 1)
        if self._stale:
            return
        live = _live(new, key, self._claims, self._pods, now)
        if old is not None and key not in self._active:
            # In force again at its old place in the order: computed on the next ask.
            self._stale = self._stale or live
            return
        if not live:
            self._active.pop(key, None)
            return
        self._active[key] = claim  # new: at the end of both; replaced: where it stood in both
        self.log.append(key)
        if len(self.log) > _LOG_SIZE:
            self._new_epoch()
        if until is not None and now is not None:
            self._serial += 1
            heapq.heappush(self._ends, (until, self._serial, key, new))

    def pop(self, key: str) -> Nomination | None:
        """End pod `key`'s nomination (bound, deleted); the nomination, None when it had none."""
        old = self.all.pop(key, None)
        if old is not None:
            self._name(old.claim, -1)
            self._active.pop(key, None)
        return old

    def release(self, claim: str) -> tuple[str, ...]:
        """End every nomination to NodeClaim `claim` (deleted); their pod keys, in order."""
        if not self._naming.get(claim):
            return ()
        released = tuple(k for k, n in self.all.items() if n.claim == claim)
        for key in released:
            self.pop(key)
        return released

    def pod_added(self, key: str) -> None:
        """Pod `key` was created (a nomination of its key that stayed may be in force again)."""
        if key in self.all:
            self._stale = True

    def pod_removed(self, key: str) -> None:
        """Pod `key` was deleted (its nomination, if it stayed, is out of force)."""
        self._active.pop(key, None)

    def claim_changed(self, name: str) -> None:
        """NodeClaim `name` was added or removed."""
        if self._naming.get(name):
            self._stale = True

    # ---- the readers ---------------------------------------------------------------------------
    def in_force(self, now: float | None) -> dict[str, str]:
        """`in_force(all, claims, pods, now)`, kept (callers only read it)."""
        if not self.on:
            self._stale = True  # the kept answer is not kept up to date meanwhile
            self._new_epoch()
            return in_force(self.all, self._claims, self._pods, now)
        if self._stale:
            self._rebuild(now)
        elif now is not None:
            ends, active, every = self._ends, self._active, self.all
            while ends and ends[0][0] <= now:
                _, _, key, n = heapq.heappop(ends)
                if every.get(key) is n:
                    active.pop(key, None)
        return self._active

    def _rebuild(self, now: float | None) -> None:
        self._active = in_force(self.all, self._claims, self._pods, now)
        self._ends = []
        if now is not None:
            for key in self._active:
                n = self.all[key]
                if n.until is not None:
                    self._serial += 1
                    self._ends.append((n.until, self._serial, key, n))
            heapq.heapify(self._ends)
        self._stale = False
        self._new_epoch()

    def _new_epoch(self) -> None:
        self.epoch += 1
        self.log = []

    def _name(self, claim: str, delta: int) -> None:
        count = self._naming.get(claim, 0) + delta
        if count:
            self._naming[claim] = count
        else:
            self._naming.pop(claim, None)
