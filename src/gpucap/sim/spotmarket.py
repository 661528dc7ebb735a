"""The spot market: EC2 reclaiming spot capacity by itself (`spec.world.spot`).

Without it (no `world`, or `model: none` and no `ratePerHour`) spot is reclaimed only where
the scenario's `interrupt` events say so. With it, every spot capacity pool (instance type x
zone) a NodePool could launch into runs its own renewal process on the virtual clock: the pool
is available for a drawn lifetime, then EC2 reclaims it, and it stays without spot capacity
for a drawn outage, then the next lifetime begins.

- **Per pool, not per node.** When a pool is reclaimed, every running spot instance of it gets
  EC2's two-minute warning within minutes of the others: the first at once, each other one
  after an exponential delay of mean `WARNING_SPREAD_MEAN_S` (capped at
  `WARNING_SPREAD_MAX_S`), so about 99 % come within 3 minutes of the first (Spot-and-Scoot
  measured over 92 % of one type and zone's interruptions within 3 minutes;
  ../shared/design/world-data.md §1.4). The warning takes the path a scripted `interrupt`
  event takes (`World._spot_warning`: `SimulatedEC2.interrupt`, the interruption
  controller's reading of it, the kubelet's end of the node when the notice runs out).
- **The outage.** The pool closes for spot (`SimulatedEC2.set_capacity(..., until=...)`), so
  CreateFleet answers InsufficientInstanceCapacity there and Karpenter's unavailable-offerings
  cache and fallback take over, as after a scripted `capacity` event. A pool the scenario has
  closed already is not reclaimed again (the market draws its next lifetime).
- **Rates.** `ratePerHour` for the type, else for its family, overrides the model: an
  exponential lifetime of that rate (0: never). `advisor`: the Spot Instance Advisor's bucket of
  the type in the scenario's region read as a monthly interruption probability p (the middle
  of its range; `>20%` its lower edge), so the rate is -ln(1-p)/720 per hour. That is the
  optimistic reading: the buckets rank types, they are not hazards; the >20 % bucket gives a
  mean lifetime of 3,227 h where p3.2xlarge pools were measured at 1.4-3.1 h (world-data.md
  §1.1). A type the extract lacks for the region is not reclaimed. `measured`: the log-normal
  fits below (docs/design/sim.md "The spot market"), for the families with GPUs only (the traces
  are of GPU pools; a CPU family is reclaimed only at a `ratePerHour` the scenario gives).
- **Determinism.** Each pool draws from its own `random.Random`, seeded by a SHA-256 of
  (scenario seed, type, zone, stream): its reclaims and outages (stream `market`) and its
  warnings' spread (stream `warnings`) depend on the seed alone, not on which other pools exist,
  on the order pools are found or on how many instances a design runs there, so two NodePool
  designs under one seed see the same market. A pool found after the start (a NodePool applied
  later) replays its process from the start and joins it where it is.

With the market on, the simulated CreateFleet also breaks ties between equal-price spot zones
with a random source from the seed (`fleet_random`; `cloudprovider/aws/simulated/fleet.py`),
so spot nodes of one type spread over the zones as EC2's price-capacity-optimized choice
spreads them, instead of all landing in the first zone by name.

Created by `sim/world.py` when the scenario's world is on; `World.run` calls `start`, the
World calls `refresh` when NodePools or EC2NodeClasses change, and `summary` for the result's
`world` block.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpucap.apis.labels import CAPACITY_TYPE
from gpucap.apis.nodepool import NodePool
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.cloudprovider.types import CloudProvider
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements
from gpucap.sim.bus import PRIORITY_SCENARIO, Bus
from gpucap.sim.worldspec import SpotWorld, advisor_buckets
from gpucap.state.cluster import Cluster

__all__ = [
    "ADVISOR_MONTHLY_P",
    "MEASURED_LIFETIME_G",
    "MEASURED_LIFETIME_OTHER",
    "MEASURED_OUTAGE",
    "WARNING_SPREAD_MAX_S",
    "WARNING_SPREAD_MEAN_S",
    "Lifetime",
    "PoolProcess",
    "SpotMarket",
    "fleet_random",
    "pool_lifetime",
    "pool_random",
]

# The advisor's buckets (`<5%`, `5-10%`, `10-15%`, `15-20%`, `>20%`) as monthly probabilities:
# the middle of each range, the open one's lower edge.
ADVISOR_MONTHLY_P = (0.025, 0.075, 0.125, 0.175, 0.20)
MONTH_HOURS = 720.0
# The spread of one reclaim's warnings over the pool's instances (see the module docstring).
WARNING_SPREAD_MEAN_S = 40.0
WARNING_SPREAD_MAX_S = 600.0


@dataclass(frozen=True, slots=True)
class Lifetime:
    """A distribution of hours: exponential of `rate` per hour, or log-normal (`mu`, `sigma`
    of the natural log of the hours)."""

    rate: float = 0.0
    mu: float = 0.0
    sigma: float = 0.0
    lognormal: bool = False

    def draw(self, rng: random.Random) -> float:
        if self.lognormal:
            return rng.lognormvariate(self.mu, self.sigma)
        return rng.expovariate(self.rate)

    @property
    def mean_hours(self) -> float:
        if self.lognormal:
            return math.exp(self.mu + self.sigma**2 / 2)
        return 1 / self.rate


# The `measured` model (scripts/fit_spot_market.py; sources in data/world/SPOT-SOURCES.md).
# G families (T4, A10G, L4, L40S): lifetimes of 74 g4dn spot nodes, Hsword/SpotServe
# `elastic-switch/trace/trace_full/g4dn.csv` (median 1.02 h, mean 1.65 h).
MEASURED_LIFETIME_G = Lifetime(mu=-0.1058, sigma=1.2183, lognormal=True)
# Every other family: 2,559 available spells of 1-GPU pools (p3.2xlarge, p2.xlarge) in 17
# skypilot-org/spot-traces files (median 0.65 h, mean 3.14 h).
MEASURED_LIFETIME_OTHER = Lifetime(mu=-0.2083, sigma=1.4978, lognormal=True)
# Outages, every model: 2,561 unavailable spells of the same files (median 0.38 h, mean 1.67 h).
MEASURED_OUTAGE = Lifetime(mu=-0.5319, sigma=1.2956, lognormal=True)


def pool_lifetime(
    world: SpotWorld, region: str, instance_type: str, family: str, *, gpu: bool = True
) -> Lifetime | None:
    """How long a pool of `instance_type` stays available between reclaims (None: never
    reclaimed), by the rules of the module docstring. `gpu`: whether the type's family has
    GPUs (the measured fits are of GPU pools only)."""
    rate = world.rates.get(instance_type, world.rates.get(family))
    if rate is not None:
        return Lifetime(rate=rate) if rate > 0 else None
    if world.model == "advisor":
        bucket = advisor_buckets(region).get(instance_type)
        if bucket is None:
            return None
        p = ADVISOR_MONTHLY_P[min(bucket, len(ADVISOR_MONTHLY_P) - 1)]
        return Lifetime(rate=-math.log(1 - p) / MONTH_HOURS)
    if world.model == "measured" and gpu:
        return MEASURED_LIFETIME_G if family.startswith("g") else MEASURED_LIFETIME_OTHER
    return None


def pool_random(seed: int, instance_type: str, zone: str, stream: str) -> random.Random:
    """The pool's own random source for `stream` (see the module docstring)."""
    return _seeded(f"{seed}\0{instance_type}\0{zone}\0{stream}")


def fleet_random(seed: int) -> random.Random:
    """The simulated CreateFleet's tie-break between equal-price spot zones
    (`cloudprovider/aws/simulated/fleet.py`), from the seed alone."""
    return _seeded(f"{seed}\0fleet")


def _seeded(key: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


class PoolProcess:
    """One pool's reclaims: `next()` gives the next (reclaim time, outage end), in seconds from
    the run's start."""

    def __init__(self, lifetime: Lifetime, rng: random.Random) -> None:
        self.lifetime = lifetime
        self.rng = rng
        self.t = 0.0

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return self

    def __next__(self) -> tuple[float, float]:
        at = self.t + self.lifetime.draw(self.rng) * 3600
        end = at + MEASURED_OUTAGE.draw(self.rng) * 3600
        self.t = end
        return at, end


@dataclass(slots=True)
class _Pool:
    instance_type: str
    zone: str
    process: PoolProcess
    warnings: random.Random


class SpotMarket:
    """The spot market of one run (see the module docstring)."""

    def __init__(
        self,
        bus: Bus,
        cluster: Cluster,
        ec2: SimulatedEC2,
        *,
        cloud: CloudProvider,
        catalog: Catalog,
        world: SpotWorld,
        region: str,
        seed: int,
        clock: Clock,
        until: float,
        warn: Callable[[str, str], None],
    ) -> None:
        self.bus = bus
        self.cluster = cluster
        self.ec2 = ec2
        self.cloud = cloud
        self.catalog = catalog
        self.world = world
        self.region = region
        self.seed = seed
        self.clock = clock
        self.until = until
        self.warn = warn  # (NodeClaim name, provider ID): the two-minute warning
        self.pools: dict[tuple[str, str], _Pool | None] = {}
        # NodePool name -> (the object, its instance types) at `refresh`'s last look at it.
        self._looked: dict[str, tuple[NodePool, Sequence[InstanceType]]] = {}
        # Whether `refresh` skips what cannot add a pool; off: every NodePool looked at each
        # time (the reference tests/sim/test_spot_market.py compares runs with).
        self.indexed = True
        # The families with a GPU type (what `measured` and the advisor extract cover).
        self._gpu_families = {
            info.family for info in map(catalog.info, catalog.names) if info.gpu_count > 0
        }
        self.reclaims = 0
        self.reclaims_with_instances = 0
        self.warned = 0

    @property
    def now(self) -> float:
        return self.bus.engine.now

    def start(self) -> None:
        self.refresh()

    def refresh(self, nodepool_name: str | None = None) -> None:
        """Start the process of every spot pool a NodePool could now launch into; with
        `nodepool_name` (that NodePool applied), of that NodePool's pools alone. The spot pools
        of a NodePool are a function of its object and its node class's instance types (their
        offerings' zones and capacity types; never their availability), so another NodePool
        has none to add then, and one whose object and types are those of its last look is
        skipped: applying N NodePools one by one is not N passes over every NodePool's types.
        Called by the world when a NodePool or an EC2NodeClass is applied or deleted."""
        pools = self.cluster.nodepools()
        if nodepool_name is not None and self.indexed:
            pools = [np for np in pools if np.name == nodepool_name]
        for nodepool in pools:
            types = self.cloud.get_instance_types(nodepool)
            seen = self._looked.get(nodepool.name)
            if self.indexed and seen is not None and seen[0] is nodepool and seen[1] is types:
                continue
            self._looked[nodepool.name] = (nodepool, types)
            for key in self._pools_of(nodepool, types):
                if key not in self.pools:
                    self.pools[key] = self._join(*key)

    def _pools_of(self, nodepool: NodePool, types: Sequence[InstanceType]) -> list[tuple[str, str]]:
        reqs = Requirements.from_node_selector(nodepool.spec.template.spec.requirements)
        out = []
        for it in types:
            if not it.is_compatible(reqs):
                continue
            for o in it.offerings:
                if o.capacity_type == "spot" and not o.reservation_id and o.allowed_by(reqs):
                    out.append((it.name, o.zone))
        return sorted(out)

    def _join(self, instance_type: str, zone: str) -> _Pool | None:
        family = self.catalog.info(instance_type).family
        lifetime = pool_lifetime(
            self.world, self.region, instance_type, family, gpu=family in self._gpu_families
        )
        if lifetime is None:
            return None
        pool = _Pool(
            instance_type,
            zone,
            PoolProcess(lifetime, pool_random(self.seed, instance_type, zone, "market")),
            pool_random(self.seed, instance_type, zone, "warnings"),
        )
        self._schedule(pool)
        return pool

    def _schedule(self, pool: _Pool) -> None:
        """Schedule the pool's next reclaim that has not ended by now (replaying the past of a
        pool found late)."""
        at, end = next(pool.process)
        while end <= self.now:
            at, end = next(pool.process)
        if at > self.until:
            return
        self.bus.engine.at(
            max(at, self.now),
            lambda: self._reclaim(pool, end),
            priority=PRIORITY_SCENARIO,
            label=f"EC2 reclaims spot pool {pool.instance_type}/{pool.zone}",
        )

    def _reclaim(self, pool: _Pool, end: float) -> None:
        itype, zone = pool.instance_type, pool.zone
        if not self.ec2.has_capacity(itype, zone, "spot"):
            self._schedule(pool)  # closed by the scenario: nothing there to take back
            return
        victims = self._running(itype, zone)
        outage = end - self.now
        self.ec2.set_capacity(
            itype,
            zone,
            "spot",
            available=False,
            until=self.clock.now() + dt.timedelta(seconds=outage),
        )
        self.reclaims += 1
        self.reclaims_with_instances += bool(victims)
        self.bus.emit(
            "SpotPoolReclaimed",
            instanceType=itype,
            zone=zone,
            capacityType="spot",
            instances=len(victims),
            outage=round(outage),
        )
        for i, (name, provider_id) in enumerate(victims):
            delay = 0.0
            if i:
                spread = pool.warnings.expovariate(1 / WARNING_SPREAD_MEAN_S)
                delay = min(spread, WARNING_SPREAD_MAX_S)
            self.bus.engine.after(
                delay,
                lambda n=name, p=provider_id: self._warn(n, p),  # type: ignore[misc]
                priority=PRIORITY_SCENARIO,
                label=f"EC2 warns {name}",
            )
        if end <= self.until:
            self.bus.engine.at(
                end,
                lambda: self._restored(pool),
                priority=PRIORITY_SCENARIO,
                label=f"spot pool {itype}/{zone} back",
            )

    def _restored(self, pool: _Pool) -> None:
        self.bus.emit(
            "SpotPoolRestored",
            instanceType=pool.instance_type,
            zone=pool.zone,
            capacityType="spot",
        )
        self.ec2.ended("capacity")
        self.bus.trigger_provisioning()
        self._schedule(pool)

    def _running(self, instance_type: str, zone: str) -> list[tuple[str, str]]:
        """The pool's launched spot NodeClaims not yet warned: (name, provider ID), by name."""
        now = self.clock.now()
        out = []
        for claim in self.cluster.node_claims():
            pid = claim.status.provider_id
            labels = claim.metadata.labels
            if not pid or labels.get(CAPACITY_TYPE) != "spot":
                continue
            inst = self.ec2.instances.get(pid.rsplit("/", 1)[-1])
            if (
                inst is None
                or inst.instance_type != instance_type
                or inst.zone != zone
                or inst.interrupted_at is not None
                or inst.advance(now) not in ("pending", "running")
            ):
                continue
            out.append((claim.name, pid))
        return sorted(out)

    def _warn(self, name: str, provider_id: str) -> None:
        claim = self.cluster.node_claim(name)
        if claim is None or claim.status.provider_id != provider_id:
            return
        inst = self.ec2.instances.get(provider_id.rsplit("/", 1)[-1])
        if inst is None or inst.interrupted_at is not None:
            return  # warned already (a scripted interrupt in between)
        if inst.advance(self.clock.now()) not in ("pending", "running"):
            return
        self.warned += 1
        self.warn(name, provider_id)

    def summary(self) -> dict[str, Any]:
        """The result's `world.spot` block: the model and what the market did."""
        return {
            "model": self.world.model,
            "pools": sum(1 for p in self.pools.values() if p is not None),
            "poolReclaims": self.reclaims,
            "poolReclaimsWithInstances": self.reclaims_with_instances,
            "instancesWarned": self.warned,
        }
