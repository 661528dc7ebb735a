"""NodeClaim names: `<nodepool>-<n>` (or `<nodepool>-<infix><n>`), numbered per NodePool over
a run and never a name already in use.

Karpenter's NodeClaims are `generateName`d (`<nodepool>-` plus a random suffix); gpucap numbers
them instead so that its outputs are deterministic and readable. One namer for every caller:
`plan`'s provisioning loop (names taken: the input's nodes and NodeClaims), the simulator's
provisioner and the disruption controller's replacements (names taken: whatever the Cluster
holds now; the disruption controller's own default, outside the simulator, uses the infix
`disruption-`).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["NodeClaimNames"]


class NodeClaimNames:
    """`next(nodepool)`: the next free name of `nodepool`; `taken(name)` says a name is in use
    (a NodeClaim or Node of that name exists)."""

    def __init__(self, taken: Callable[[str], bool], *, infix: str = "") -> None:
        self._taken = taken
        self._infix = infix
        self._counters: dict[str, int] = {}

    def next(self, nodepool: str) -> str:
        while True:
            n = self._counters[nodepool] = self._counters.get(nodepool, 0) + 1
            name = f"{nodepool}-{self._infix}{n}"
            if not self._taken(name):
                return name
