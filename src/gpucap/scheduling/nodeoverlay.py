"""NodeOverlays applied to a NodePool's instance types: capacity and offering-price overrides.

Karpenter's overlay controller (kubernetes-sigs/karpenter `pkg/controllers/nodeoverlay/`, with
the decorator in `pkg/cloudprovider/overlay/`), read at v1.14:

- Matching is per NodePool. The type's requirements plus `karpenter.sh/nodepool In [pool]` and
  the pool's template labels must be compatible with the overlay's requirements (no undefined
  keys allowed), and at least one offering (zone, capacity type; available or not) must be
  allowed by them.
- Order: higher weight first (unset = 0); at equal weight the name later in the alphabet first.
- Price is per offering: the first overlay in that order that matches the offering sets it
  (`price` replaces it; `priceAdjustment` `+0.5`/`-0.5` adds, `+10%`/`-10%` scales the
  provider's price; floored at 0). Overlays never stack.
- Capacity is per instance type and per resource: the first overlay that sets a resource wins
  it, lower ones may still add other resources. The value replaces the provider's (e.g.
  `nvidia.com/gpu` for time-slicing) and is allocatable in full (overhead covers only cpu,
  memory, ephemeral storage and pods, which overlays may not set).
- An overlay that sets the same offering price or capacity resource as an earlier overlay of the
  same weight is a conflict: Karpenter rejects it everywhere (ValidationSucceeded=False, reason
  Conflict) and applies the rest.

Karpenter runs overlays only behind the `NodeOverlay` feature gate (off by default); gpucap
applies the overlays it is given and says so in a note. Called by `cloudprovider/overlay.py`
(the decoration `plan` and the simulator use) and the lint rules on time-slicing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gpucap.apis.labels import NODEPOOL
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = [
    "OverlayConflict",
    "PoolTypes",
    "adjusted_price",
    "apply_overlays",
    "capacity_overlay",
    "evaluate_overlays",
    "ordered",
]


@dataclass(frozen=True, slots=True)
class PoolTypes:
    """A NodePool's name, template labels and the instance types its node class offers."""

    name: str
    labels: Mapping[str, str]
    types: Sequence[InstanceType]


@dataclass(frozen=True, slots=True)
class OverlayConflict:
    """An overlay Karpenter rejects: it sets what an earlier overlay of the same weight set."""

    overlay: str
    earlier: str
    weight: int
    what: str  # e.g. "nvidia.com/gpu capacity of g5.xlarge in NodePool gpu"

    def __str__(self) -> str:
        return (
            f"NodeOverlay {self.overlay} conflicts with {self.earlier} (both weight "
            f"{self.weight}) on the {self.what}; Karpenter rejects it (ValidationSucceeded=False, "
            "reason Conflict), so it is not applied"
        )


def _weight(overlay: NodeOverlay) -> int:
    return overlay.spec.weight or 0


def ordered(overlays: Iterable[NodeOverlay]) -> list[NodeOverlay]:
    """Karpenter's `OrderByWeight`: higher weight first, then names in descending order."""
    by_name = sorted(overlays, key=lambda o: o.metadata.name, reverse=True)
    return sorted(by_name, key=lambda o: -_weight(o))  # stable: keeps names descending


def _requirements(overlay: NodeOverlay) -> Requirements:
    return Requirements.from_node_selector(overlay.spec.requirements)


def _pool_requirements(pool: PoolTypes) -> Requirements:
    return Requirements.of(
        Requirement.new(NODEPOOL, "In", [pool.name]),
        *Requirements.from_labels(pool.labels).values(),
    )


class _Matcher:
    """Which offerings of a type an overlay applies to in a pool (empty: it does not apply).

    Karpenter checks the overlay against the type's requirements plus the pool's name and
    labels. The keys split cleanly when no pool label is also a type key: the pool part is
    checked once per pool and the type part once per type, whatever the number of pools.
    """

    def __init__(self) -> None:
        self._pool_reqs: dict[str, Requirements] = {}
        self._overlap: dict[tuple[str, int], bool] = {}
        # Keyed by the overlay's requirements (not the overlay): overlays that differ only in
        # name, weight, price or capacity share the checks, so many overlays on few
        # requirement sets cost (requirement sets x types), not (overlays x types).
        self._pool_ok: dict[tuple[Requirements, str], bool] = {}
        # The type part leaves out the pool's keys, so it is keyed by them too.
        self._type_offerings: dict[
            tuple[Requirements, frozenset[str], int], list[tuple[str, str]]
        ] = {}
        self._matches: dict[
            tuple[Requirements, str], list[tuple[InstanceType, list[tuple[str, str]]]]
        ] = {}
        self._type_keys: dict[int, frozenset[str]] = {}
        self._pool_type_matches: dict[
            tuple[Requirements, frozenset[str], int],
            list[tuple[InstanceType, list[tuple[str, str]]]],
        ] = {}

    def offerings(
        self, overlay: NodeOverlay, reqs: Requirements, it: InstanceType, pool: PoolTypes
    ) -> list[tuple[str, str]]:
        pool_reqs = self._pool_reqs.get(pool.name)
        if pool_reqs is None:
            pool_reqs = self._pool_reqs[pool.name] = _pool_requirements(pool)
        overlap = self._overlap.get((pool.name, id(it)))
        if overlap is None:
            overlap = self._overlap[pool.name, id(it)] = any(
                key in it.requirements for key in pool_reqs
            )
        if overlap:
            # A template label that is also a type key: only the combined check is exact.
            combined = it.requirements.add(*pool_reqs.values())
            if not combined.is_compatible(reqs):
                return []
            return [(o.zone, o.capacity_type) for o in it.offerings if o.allowed_by(reqs)]
        if not self._pool_allows(reqs, pool.name, pool_reqs):
            return []
        type_key = (reqs, frozenset(pool_reqs), id(it))
        found = self._type_offerings.get(type_key)
        if found is None:
            part = Requirements({k: r for k, r in reqs.items() if k not in pool_reqs})
            found = (
                [(o.zone, o.capacity_type) for o in it.offerings if o.allowed_by(reqs)]
                if it.requirements.is_compatible(part)
                else []
            )
            self._type_offerings[type_key] = found
        return found

    def _pool_allows(self, reqs: Requirements, pool: str, pool_reqs: Requirements) -> bool:
        """The overlay's requirements on the pool's own keys (nodepool name, template labels)
        meet the pool's; memoised per overlay requirements and pool."""
        key = (reqs, pool)
        ok = self._pool_ok.get(key)
        if ok is None:
            part = Requirements({k: r for k, r in reqs.items() if k in pool_reqs})
            ok = self._pool_ok[key] = pool_reqs.is_compatible(part)
        return ok

    def matches(
        self, overlay: NodeOverlay, reqs: Requirements, pool: PoolTypes
    ) -> list[tuple[InstanceType, list[tuple[str, str]]]]:
        """The pool's types the overlay applies to, in pool order, with their offerings
        (one pass over the types per distinct overlay requirements and pool)."""
        key = (reqs, pool.name)
        found = self._matches.get(key)
        if found is None:
            found = self._shared_matches(overlay, reqs, pool)
            if found is None:
                found = self._walk(overlay, reqs, pool)
            self._matches[key] = found
        return found

    def _walk(
        self, overlay: NodeOverlay, reqs: Requirements, pool: PoolTypes
    ) -> list[tuple[InstanceType, list[tuple[str, str]]]]:
        found = []
        for it in pool.types:
            offerings = self.offerings(overlay, reqs, it, pool)
            if offerings:
                found.append((it, offerings))
        return found

    def _shared_matches(
        self, overlay: NodeOverlay, reqs: Requirements, pool: PoolTypes
    ) -> list[tuple[InstanceType, list[tuple[str, str]]]] | None:
        """When no key of the pool's name and labels is a type key, the pool part is one check
        and the type part is the same for every pool with those keys and these types: the walk
        over the types is shared by such pools (1,000 NodePools of one node class cost one).
        None when the pool's keys overlap the types' (then each pool walks its types)."""
        pool_reqs = self._pool_reqs.get(pool.name)
        if pool_reqs is None:
            pool_reqs = self._pool_reqs[pool.name] = _pool_requirements(pool)
        type_keys = self._type_keys.get(id(pool.types))
        if type_keys is None:
            type_keys = self._type_keys[id(pool.types)] = frozenset(
                k for it in pool.types for k in it.requirements
            )
        if any(k in type_keys for k in pool_reqs):
            return None
        if not self._pool_allows(reqs, pool.name, pool_reqs):
            return []
        shared_key = (reqs, frozenset(pool_reqs), id(pool.types))
        found = self._pool_type_matches.get(shared_key)
        if found is None:
            found = self._pool_type_matches[shared_key] = self._walk(overlay, reqs, pool)
        return found


def _capacity(overlay: NodeOverlay) -> dict[str, int]:
    return {k: q.value() for k, q in (overlay.spec.capacity or {}).items()}


def adjusted_price(price: float, overlay: NodeOverlay) -> float:
    """An offering's price under the overlay's `price` or `priceAdjustment` (never below 0)."""
    if overlay.spec.price is not None:
        return float(overlay.spec.price)
    text = overlay.spec.price_adjustment
    if text is None:
        return price
    if text.endswith("%"):  # a percentage of the provider's price
        return max(price * (1 + float(text[:-1]) / 100), 0.0)
    return max(price + float(text), 0.0)  # a signed amount


def _sets_price(overlay: NodeOverlay) -> bool:
    return overlay.spec.price is not None or overlay.spec.price_adjustment is not None


# What an overlay sets, one key each: ("price", pool, type, zone, capacity type) or
# ("capacity", pool, type, resource).
_Claim = tuple[str, ...]


def _claims(overlay: NodeOverlay, pools: Sequence[PoolTypes], matcher: _Matcher) -> list[_Claim]:
    reqs = _requirements(overlay)
    resources = sorted(_capacity(overlay))
    out: list[_Claim] = []
    for pool in pools:
        for it, offerings in matcher.matches(overlay, reqs, pool):
            if _sets_price(overlay):
                out += [("price", pool.name, it.name, z, ct) for z, ct in offerings]
            out += [("capacity", pool.name, it.name, r) for r in resources]
    return out


def _describe(claim: _Claim) -> str:
    if claim[0] == "price":
        _, pool, name, zone, capacity_type = claim
        return f"price of {name} {capacity_type} in {zone} in NodePool {pool}"
    _, pool, name, resource = claim
    return f"{resource} capacity of {name} in NodePool {pool}"


def evaluate_overlays(
    overlays: Sequence[NodeOverlay], pools: Sequence[PoolTypes]
) -> tuple[list[NodeOverlay], list[OverlayConflict]]:
    """The overlays Karpenter accepts (in application order) and the conflicts it rejects."""
    owners: dict[_Claim, NodeOverlay] = {}
    accepted: list[NodeOverlay] = []
    conflicts: list[OverlayConflict] = []
    matcher = _Matcher()
    for overlay in ordered(overlays):
        claims = _claims(overlay, pools, matcher)
        clash = next(
            (
                (claim, owner)
                for claim in claims
                if (owner := owners.get(claim)) is not None and _weight(owner) == _weight(overlay)
            ),
            None,
        )
        if clash is not None:
            claim, owner = clash
            conflicts.append(
                OverlayConflict(
                    overlay.metadata.name, owner.metadata.name, _weight(overlay), _describe(claim)
                )
            )
            continue
        accepted.append(overlay)
        for claim in claims:
            owners.setdefault(claim, overlay)  # a higher weight, processed earlier, keeps it
    return accepted, conflicts


def capacity_overlay(
    overlays: Sequence[NodeOverlay], pool: PoolTypes, it: InstanceType, resource: str
) -> tuple[NodeOverlay, int] | None:
    """The overlay (of `overlays`, in application order) that sets `resource` on `it` in
    `pool`, with the value it sets; None if none does."""
    for overlay in overlays:
        capacity = _capacity(overlay)
        if resource in capacity and _Matcher().offerings(overlay, _requirements(overlay), it, pool):
            return overlay, capacity[resource]
    return None


def apply_overlays(
    accepted: Sequence[NodeOverlay], pools: Sequence[PoolTypes]
) -> list[tuple[tuple[InstanceType, ...], int]]:
    """Each pool's instance types with the accepted overlays applied (types no overlay touches
    are the same objects), and how many of them changed."""
    matcher = _Matcher()
    matched = [(o, _requirements(o), _capacity(o)) for o in accepted]
    # Pools whose types every overlay matches alike (the same types, the same offerings) get
    # the same result object, so the scheduler can share its work between them as it does for
    # pools of one node class (1,000 pools and one overlay would otherwise be 1,000 type lists).
    done: dict[tuple[object, ...], tuple[tuple[InstanceType, ...], int]] = {}
    out = []
    for pool in pools:
        key = (
            id(pool.types),
            *(
                tuple((id(it), tuple(offerings)) for it, offerings in matcher.matches(o, r, pool))
                for o, r, _ in matched
            ),
        )
        result = done.get(key)
        if result is None:
            result = done[key] = _apply(matched, pool, matcher)
        out.append(result)
    return out


def _apply(
    matched: Sequence[tuple[NodeOverlay, Requirements, dict[str, int]]],
    pool: PoolTypes,
    matcher: _Matcher,
) -> tuple[tuple[InstanceType, ...], int]:
    # Overlay by overlay in application order, over the types each applies to: the first
    # overlay to set a resource or an offering's price keeps it.
    capacities: dict[int, dict[str, int]] = {}
    all_prices: dict[int, dict[tuple[str, str], float]] = {}
    for overlay, reqs, overlay_capacity in matched:
        for it, offerings in matcher.matches(overlay, reqs, pool):
            capacity = capacities.setdefault(id(it), {})
            for resource, value in overlay_capacity.items():
                capacity.setdefault(resource, value)
            if _sets_price(overlay):
                prices = all_prices.setdefault(id(it), {})
                originals = {(o.zone, o.capacity_type): o.price for o in it.offerings}
                for key in offerings:
                    if key not in prices:
                        prices[key] = adjusted_price(originals[key], overlay)
    out: list[InstanceType] = []
    changed = 0
    for it in pool.types:
        capacity = capacities.get(id(it), {})
        prices = all_prices.get(id(it), {})
        if not capacity and not prices:
            out.append(it)
            continue
        changed += 1
        out.append(
            InstanceType(
                name=it.name,
                requirements=it.requirements,
                capacity={**it.capacity, **capacity},
                allocatable={**it.allocatable, **capacity},
                offerings=tuple(
                    replace(o, price=prices[(o.zone, o.capacity_type)])
                    if (o.zone, o.capacity_type) in prices
                    else o
                    for o in it.offerings
                ),
            )
        )
    return tuple(out), changed
