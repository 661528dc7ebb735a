"""The spot market (`sim/spotmarket.py`): EC2 reclaiming spot pools by itself at the configured
rate, one pool's warnings within minutes of each other, the pool closed for an outage (launches
there get InsufficientInstanceCapacity and fall back), every draw from the seed alone; without a
world, or with `model: none`, today's bytes."""

from __future__ import annotations

import math
import statistics
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instance.launch import FleetOverride
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.cloudprovider.aws.simulated.fleet import seeded_pick
from gpucap.sim.recorder import Event, json_line
from gpucap.sim.scenario import load_scenario
from gpucap.sim.spotmarket import (
    MEASURED_LIFETIME_G,
    MEASURED_OUTAGE,
    Lifetime,
    PoolProcess,
    fleet_random,
    pool_lifetime,
    pool_random,
)
from gpucap.sim.world import SimulationResult, simulate
from gpucap.sim.worldspec import SpotWorld

STORIES = Path(__file__).parent / "stories"
DATA = Path(__file__).parents[2] / "src/gpucap/data/world"


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    return load_catalog(region)


def _run(
    tmp_path: Path,
    *,
    world: str | None,
    seed: int = 1,
    duration: str = "6h",
    replicas: int = 1,
    pods: bool = True,
    name: str = "s",
    zones: str | None = None,
) -> SimulationResult:
    """A story scenario (one g5.xlarge NodePool, spot or on-demand) under `world`."""
    manifests = [STORIES / "nodeclass.yaml", STORIES / "nodepool.yaml"]
    if zones is not None:
        nodepool = (
            (STORIES / "nodepool.yaml")
            .read_text()
            .replace(
                "      taints:",
                "        - {key: topology.kubernetes.io/zone, operator: In, values: ["
                + zones
                + "]}\n"
                "      taints:",
            )
        )
        (tmp_path / f"{name}-nodepool.yaml").write_text(nodepool)
        manifests[1] = tmp_path / f"{name}-nodepool.yaml"
    if pods:
        manifests += [STORIES / "device-plugin.yaml", STORIES / "vllm.yaml"]
    events = ""
    if replicas != 1:
        events = (
            "  events:\n    - {at: 1s, scale: {kind: Deployment, name: vllm, "
            f"replicas: {replicas}}}}}\n"
        )
    text = (
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
        f"  duration: {duration}\n  seed: {seed}\n"
        f"  manifests: [{', '.join(str(m) for m in manifests)}]\n{events}"
        + (f"  world: {world}\n" if world is not None else "")
    )
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return simulate(load_scenario(str(path), _catalog), _catalog())


def _of(result: SimulationResult, type_: str) -> list[Event]:
    return [e for e in result.events if e.type == type_]


def _outages(result: SimulationResult) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(type, zone) -> the market's outage intervals (seconds), clipped to the run."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for e in _of(result, "SpotPoolReclaimed"):
        key = (e.get("instanceType"), e.get("zone"))
        out.setdefault(key, []).append((e.t, min(e.t + e.get("outage"), result.end)))
    return out


# ---- the rate -----------------------------------------------------------------------------------
def test_reclaims_arrive_at_the_configured_rate_per_available_pool_hour() -> None:
    # 300 pools x 200 h at 0.5 reclaims per available hour: ~16,000 reclaims, so the estimate's
    # standard error is ~0.8 %; a 3 % tolerance is ~4 of them (fixed seeds: not flaky).
    rate = 0.5
    # Available time: from an outage's end (or the start) to the next reclaim.
    reclaims, available = 0, 0.0
    for zone in range(300):
        process = PoolProcess(Lifetime(rate=rate), pool_random(7, "g5.xlarge", f"z{zone}", "m"))
        last_end = 0.0
        for at, end in process:
            if end > 200 * 3600:
                break
            reclaims += 1
            available += at - last_end
            last_end = end
    assert reclaims > 10_000
    assert reclaims / (available / 3600) == pytest.approx(rate, rel=0.03)


def test_a_run_reclaims_at_the_configured_rate_over_many_seeds(tmp_path: Path) -> None:
    # The whole world, no pods (the market alone): g5.xlarge in every us-east-1 zone at one
    # reclaim per available pool-hour, 20 seeds x 72 h: ~1,600 reclaims (standard error ~2.5 %);
    # tolerance 10 %.
    reclaims, available = 0, 0.0
    for seed in range(1, 21):
        result = _run(
            tmp_path,
            world="{spot: {ratePerHour: {g5: 1}}}",
            seed=seed,
            duration="72h",
            pods=False,
        )
        for spells in _outages(result).values():
            reclaims += len(spells)
            available += result.end - sum(b - a for a, b in spells)
        # pools never reclaimed were available the whole run
        zones = {e.get("zone") for e in _of(result, "SpotPoolReclaimed")}
        available += result.end * (len(_catalog().zones) - len(zones))
    assert reclaims > 1_000
    assert reclaims / (available / 3600) == pytest.approx(1.0, rel=0.10)


def test_the_advisor_bucket_is_read_as_a_monthly_frequency() -> None:
    # g5.xlarge in us-east-1 is in the >20 % bucket: p = 0.20 a month (its lower edge).
    lifetime = pool_lifetime(SpotWorld("advisor"), "us-east-1", "g5.xlarge", "g5")
    assert lifetime is not None
    assert lifetime.rate == pytest.approx(-math.log(0.8) / 720)
    assert lifetime.mean_hours == pytest.approx(3226.6, abs=0.1)


def test_an_explicit_rate_overrides_the_model_type_before_family() -> None:
    world = SpotWorld("measured", {"g5": 2.0, "g5.xlarge": 0.25})
    assert pool_lifetime(world, "us-east-1", "g5.xlarge", "g5") == Lifetime(rate=0.25)
    assert pool_lifetime(world, "us-east-1", "g5.2xlarge", "g5") == Lifetime(rate=2.0)
    assert pool_lifetime(world, "us-east-1", "g6.xlarge", "g6") == MEASURED_LIFETIME_G
    assert pool_lifetime(SpotWorld("none", {"g5": 0.0}), "us-east-1", "g5.xlarge", "g5") is None
    # measured covers the GPU families only
    assert pool_lifetime(SpotWorld("measured"), "us-east-1", "m5.large", "m5", gpu=False) is None


def test_the_measured_g_lifetime_is_the_fit_of_the_bundled_g4dn_trace() -> None:
    added: dict[str, int] = {}
    hours = []
    for line in (DATA / "spotserve-g4dn.csv").read_text().split():
        ms, what, node = line.split(",")
        if what == "add":
            added[node] = int(ms)
        else:
            hours.append((int(ms) - added.pop(node)) / 3_600_000)
    logs = [math.log(h) for h in hours]
    assert len(hours) == 74
    assert statistics.fmean(logs) == pytest.approx(MEASURED_LIFETIME_G.mu, abs=1e-4)
    assert statistics.pstdev(logs) == pytest.approx(MEASURED_LIFETIME_G.sigma, abs=1e-4)
    assert statistics.median(hours) == pytest.approx(61 / 60)


def test_outages_have_a_median_of_half_an_hour() -> None:
    rng = pool_random(1, "g5.xlarge", "us-east-1a", "outage-law")
    draws = sorted(MEASURED_OUTAGE.draw(rng) for _ in range(20_001))
    assert 0.4 <= draws[10_000] <= 0.7


# ---- batches, outages and fallback --------------------------------------------------------------
def test_one_pools_warnings_come_within_minutes_of_each_other(tmp_path: Path) -> None:
    # Four spot nodes in one pool (the NodePool allows one zone); every reclaim of it warns
    # each of them, all but a few within 3 minutes of the reclaim.
    delays: list[float] = []
    batches = 0
    for seed in range(1, 9):
        result = _run(
            tmp_path,
            world="{spot: {ratePerHour: {g5: 1}}}",
            seed=seed,
            replicas=4,
            zones="us-east-1a",
        )
        warnings = _of(result, "SpotInterruptionWarning")
        for reclaim in _of(result, "SpotPoolReclaimed"):
            n = reclaim.get("instances")
            if n < 2:
                continue
            batches += 1
            mine = [w.t - reclaim.t for w in warnings if 0 <= w.t - reclaim.t <= 600][:n]
            assert len(mine) == n
            delays += mine
    assert batches >= 5
    within = sum(1 for d in delays if d <= 180) / len(delays)
    assert within > 0.92
    assert max(delays) <= 600


def test_no_spot_launches_into_a_pool_during_its_outage_and_ice_falls_back(
    tmp_path: Path,
) -> None:
    ice = 0
    for seed in range(1, 9):
        result = _run(tmp_path, world="{spot: {ratePerHour: {g5: 1}}}", seed=seed, replicas=2)
        outages = _outages(result)
        for launch in _of(result, "NodeClaimLaunched"):
            if launch.get("capacityType") != "spot":
                continue
            key = (launch.get("instanceType"), launch.get("zone"))
            assert not any(a <= launch.t < b for a, b in outages.get(key, [])), (seed, launch)
        for e in _of(result, "OfferingUnavailable"):
            key = (e.get("instanceType"), e.get("zone"))
            if any(a <= e.t < b for a, b in outages.get(key, [])):
                ice += 1
    assert ice > 0  # a launch met a pool in its outage, and went elsewhere


# ---- determinism --------------------------------------------------------------------------------
def _bytes(result: SimulationResult) -> str:
    return "\n".join(json_line(e) for e in result.events)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_differs(tmp_path: Path) -> None:
    world = "{spot: {model: measured}}"
    a = _run(tmp_path, world=world, seed=5, name="a")
    b = _run(tmp_path, world=world, seed=5, name="b")
    c = _run(tmp_path, world=world, seed=6, name="c")
    assert _bytes(a) == _bytes(b)
    assert a.summary == b.summary
    assert _bytes(a) != _bytes(c)


def test_a_pools_reclaims_do_not_depend_on_the_other_pools(tmp_path: Path) -> None:
    # The same seed with the NodePool in one zone or in all: us-east-1a's market is the same.
    world = "{spot: {ratePerHour: {g5: 1}}}"
    one = _run(tmp_path, world=world, seed=3, pods=False, zones="us-east-1a", name="one")
    every = _run(tmp_path, world=world, seed=3, pods=False, name="every")
    assert (
        _outages(one)[("g5.xlarge", "us-east-1a")] == _outages(every)[("g5.xlarge", "us-east-1a")]
    )
    assert set(_outages(one)) == {("g5.xlarge", "us-east-1a")}


def test_model_none_is_byte_identical_to_no_world(tmp_path: Path) -> None:
    plain = _run(tmp_path, world=None, name="plain", replicas=2)
    none = _run(tmp_path, world="{spot: {model: none}}", name="none", replicas=2)
    empty = _run(tmp_path, world="{}", name="empty", replicas=2)
    assert _bytes(plain) == _bytes(none) == _bytes(empty)
    assert plain.summary == none.summary == empty.summary
    assert "world" not in plain.summary


def test_the_summary_says_what_the_market_did(tmp_path: Path) -> None:
    result = _run(tmp_path, world="{spot: {ratePerHour: {g5: 1}}}", seed=2, replicas=2)
    spot = result.summary["world"]["spot"]
    assert spot["poolReclaims"] == len(_of(result, "SpotPoolReclaimed")) > 0
    assert spot["instancesWarned"] == len(_of(result, "SpotInterruptionWarning"))
    assert spot["pools"] == len(_catalog().zones)


# ---- ties between equal-price spot zones ---------------------------------------------------------
def _spot_zones(result: SimulationResult) -> list[str]:
    return [
        e.get("zone") for e in _of(result, "NodeClaimLaunched") if e.get("capacityType") == "spot"
    ]


def test_without_a_world_equal_price_spot_zones_go_to_the_first_by_name(tmp_path: Path) -> None:
    assert set(_spot_zones(_run(tmp_path, world=None, replicas=6))) == {"us-east-1a"}


def test_with_a_market_equal_price_spot_zones_are_drawn_from_the_seed(tmp_path: Path) -> None:
    # A tiny rate reclaims nothing in an hour but turns the stochastic world on.
    world = "{spot: {ratePerHour: {g5: 0.0001}}}"
    a = _spot_zones(_run(tmp_path, world=world, replicas=6, seed=4, name="a", duration="1h"))
    b = _spot_zones(_run(tmp_path, world=world, replicas=6, seed=4, name="b", duration="1h"))
    assert a == b
    assert len(a) == 6
    assert len(set(a)) > 1


def test_a_tie_break_keeps_price_then_type_first() -> None:
    overrides = [
        FleetOverride("g5.xlarge", "us-east-1b", 1.0),
        FleetOverride("g5.xlarge", "us-east-1a", 1.0),
        FleetOverride("g6.xlarge", "us-east-1a", 0.9),
        FleetOverride("g5.xlarge", "us-east-1c", 1.0),
    ]
    rng = fleet_random(1)
    for _ in range(50):
        pick = seeded_pick(overrides, rng, has_capacity=lambda o: True)
        assert pick.chosen == overrides[2]
    full = seeded_pick(overrides, rng, has_capacity=lambda o: o.instance_type == "g5.xlarge")
    assert full.passed_over == (overrides[2],)
    chosen = {
        seeded_pick(overrides, rng, has_capacity=lambda o: o.price == 1.0).chosen for _ in range(50)
    }
    assert {c.zone for c in chosen if c is not None} == {"us-east-1a", "us-east-1b", "us-east-1c"}


def _pool_event(t: float, type_: str, instances: int | None = None) -> Event:
    fields: dict[str, object] = {"instanceType": "g5.xlarge", "zone": "us-east-1a"}
    if instances is not None:
        fields |= {"instances": instances, "outage": 600}
    return Event(t, type_, fields)


def test_the_timeline_leaves_out_the_reclaim_and_restore_of_an_empty_pool() -> None:
    from gpucap.sim.timeline import format_timeline  # noqa: PLC0415

    empty = [_pool_event(60, "SpotPoolReclaimed", 0), _pool_event(660, "SpotPoolRestored")]
    assert not [line for line in format_timeline(empty) if "spot pool" in line]
    busy = [_pool_event(60, "SpotPoolReclaimed", 2), _pool_event(660, "SpotPoolRestored")]
    said = [line for line in format_timeline(busy) if "spot pool" in line]
    assert len(said) == 2
    assert "2 instances warned; no spot there for 10m" in said[0]
    assert "has capacity again" in said[1]


def test_the_summary_counts_the_pools_the_timeline_left_out(tmp_path: Path) -> None:
    from gpucap.report.summary import Sentence, summary_view  # noqa: PLC0415

    result = _run(tmp_path, world="{spot: {ratePerHour: {g5.xlarge: 2}}}", duration="6h")
    spot = result.summary["world"]["spot"]
    quiet = spot["poolReclaims"] - spot["poolReclaimsWithInstances"]
    assert spot["poolReclaims"] > 0
    facts = summary_view(result.summary).facts
    words = [f.text for f in facts if isinstance(f, Sentence) and f.key == "spot-market"]
    assert len(words) == 1
    assert f"EC2 reclaimed {spot['poolReclaims']} spot pool" in words[0]
    assert (f"({quiet} of them empty" in words[0]) == (quiet > 0)


# ---- the pools a refresh starts: the NodePool applied alone, beside every NodePool each time ----
_TYPES = ("g5.xlarge", "g6.xlarge", "g5.2xlarge", "g4dn.xlarge")


def _pools_story(tmp_path: Path, types: list[str], later: int, seed: int) -> Path:
    """NodePools np-0.. (one instance type each, spot), the story's NodeClass applied after the
    first of them, the rest up front, and `later` more applied by events."""
    docs = []
    for i, t in enumerate(types):
        docs.append(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\n"
            f"metadata: {{name: np-{i}}}\nspec:\n  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}\n"
            "      requirements:\n"
            "        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}\n"
            f"        - {{key: node.kubernetes.io/instance-type, operator: In, values: [{t}]}}\n"
        )
    files = []
    for i, doc in enumerate(docs):
        f = tmp_path / f"np-{i}.yaml"
        f.write_text(doc)
        files.append(f)
    up_front = files[: len(files) - later]
    manifests = [*up_front[:1], STORIES / "nodeclass.yaml", *up_front[1:]]
    events = "".join(
        f"    - {{at: {10 * (k + 1)}m, apply: {{file: {f}}}}}\n"
        for k, f in enumerate(files[len(files) - later :])
    )
    text = (
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: pools}\nspec:\n"
        f"  duration: 2h\n  seed: {seed}\n  world: {{spot: {{model: measured}}}}\n"
        f"  manifests: [{', '.join(str(m) for m in manifests)}]\n"
        + (f"  events:\n{events}" if events else "")
    )
    path = tmp_path / "pools.yaml"
    path.write_text(text)
    return path


def _market_bytes(path: Path, *, indexed: bool) -> tuple[str, list[tuple[str, str]]]:
    from gpucap.sim.world import World  # noqa: PLC0415 - the world itself, to reach its market

    world = World(load_scenario(str(path), _catalog), _catalog())
    assert world.spot_market is not None
    world.spot_market.indexed = indexed
    result = world.run()
    return _bytes(result), list(world.spot_market.pools)


@settings(max_examples=6, deadline=None)
@given(
    types=st.lists(st.sampled_from(_TYPES), min_size=1, max_size=6),
    later=st.integers(0, 3),
    seed=st.integers(1, 50),
)
def test_a_refresh_of_the_nodepool_applied_starts_the_pools_a_look_at_every_nodepool_would(
    tmp_path_factory: pytest.TempPathFactory, types: list[str], later: int, seed: int
) -> None:
    path = _pools_story(tmp_path_factory.mktemp("pools"), types, min(later, len(types) - 1), seed)
    fast = _market_bytes(path, indexed=True)
    assert fast[1]  # pools started
    assert fast == _market_bytes(path, indexed=False)
