"""NodePool disruption budgets: counts, percentages rounded up, reasons, UTC cron windows,
fail-closed budgets, and the per-pool mapping that counts deleting and NotReady nodes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.nodepool import Budget, NodePool
from gpucap.controllers.disruption.budgets import (
    UNLIMITED,
    allowed_disruptions,
    budget_is_active,
    budget_mapping,
    pool_allowance,
)
from gpucap.controllers.nodeclaim.conditions import INSTANCE_TERMINATING, with_condition
from gpucap.controllers.nodeclaim.registering import advertise, registering_node, with_ready
from tests.builders import load, nodepool
from tests.controllers.lifecycle_builders import World, provisioned, world

# A Tuesday, 14:30 UTC.
TUESDAY = dt.datetime(2026, 3, 3, 14, 30, tzinfo=dt.timezone.utc)


def pool(*budgets: dict[str, Any]) -> NodePool:
    """NodePool `gpu` with `budgets` (none given: the CRD default, nodes: 10%)."""
    disruption: dict[str, Any] = {"budgets": list(budgets)} if budgets else {}
    loaded = load(nodepool(disruption=disruption))
    assert loaded.errors == [], [str(e) for e in loaded.errors]
    return loaded.objects.nodepools[0]


def raw(np: NodePool, *budgets: dict[str, Any]) -> NodePool:
    """`np` with budgets the CRD validation would have rejected (to check failing closed)."""
    spec = np.spec.model_copy(
        update={
            "disruption": np.spec.disruption.model_copy(
                update={"budgets": [Budget.model_validate(b) for b in budgets]}
            )
        }
    )
    return np.model_copy(update={"spec": spec})


def allowed(np: NodePool, total: int, reason: str = "Drifted", now: dt.datetime = TUESDAY) -> int:
    return allowed_disruptions(np, reason, now=now, total_nodes=total, disrupting=0)


# ---- counts and percentages ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("total", "expected"),
    [(n, 1) for n in range(1, 11)]
    + [(n, 2) for n in range(11, 21)]
    + [(n, 3) for n in range(21, 26)],
)
def test_the_default_ten_percent_rounds_up(total: int, expected: int) -> None:
    assert allowed(pool(), total) == expected


@pytest.mark.parametrize(
    ("nodes", "total", "expected"),
    [
        ("0%", 25, 0),
        ("100%", 25, 25),
        ("100%", 0, 0),
        ("10%", 0, 0),
        ("50%", 3, 2),
        ("34%", 3, 2),
        ("33%", 3, 1),
        ("1%", 1, 1),
        ("5%", 10, 1),
        ("20%", 19, 4),
        ("0", 25, 0),
        ("1", 25, 1),
        ("3", 2, 3),  # a count is not capped by the pool's size
        ("00", 5, 0),
    ],
)
def test_counts_are_literal_and_percentages_round_up(nodes: str, total: int, expected: int) -> None:
    assert allowed(pool({"nodes": nodes}), total) == expected


def test_a_pool_without_budgets_is_unlimited() -> None:
    np = raw(pool())
    assert pool_allowance(np, "Empty", now=TUESDAY, total_nodes=4) == UNLIMITED


def test_nodes_already_disrupting_use_up_the_budget_and_it_never_goes_below_zero() -> None:
    np = pool({"nodes": "2"})
    kw: dict[str, Any] = {"now": TUESDAY, "total_nodes": 10}
    assert allowed_disruptions(np, "Empty", disrupting=0, **kw) == 2
    assert allowed_disruptions(np, "Empty", disrupting=1, **kw) == 1
    assert allowed_disruptions(np, "Empty", disrupting=2, **kw) == 0
    assert allowed_disruptions(np, "Empty", disrupting=5, **kw) == 0


# ---- reasons and several budgets -------------------------------------------------------------
def test_the_strictest_budget_that_applies_wins() -> None:
    np = pool({"nodes": "50%"}, {"nodes": "2"}, {"nodes": "30%"})
    assert allowed(np, 10) == 2
    assert allowed(np, 4) == 2
    assert allowed(np, 2) == 1


def test_a_budget_with_reasons_limits_only_those_reasons() -> None:
    np = pool({"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "5"})
    assert allowed(np, 10, "Drifted") == 0
    assert allowed(np, 10, "Empty") == 5
    assert allowed(np, 10, "Underutilized") == 5


def test_a_budget_without_reasons_applies_to_every_reason() -> None:
    np = pool({"nodes": "1"}, {"nodes": "4", "reasons": ["Empty", "Underutilized"]})
    assert [allowed(np, 10, r) for r in ("Empty", "Drifted", "Underutilized")] == [1, 1, 1]


def test_an_unreadable_budget_zeroes_the_pool_even_for_other_reasons() -> None:
    np = raw(pool(), {"nodes": "5"}, {"nodes": "ten", "reasons": ["Drifted"]})
    assert allowed(np, 10, "Empty") == 0
    bad_cron = raw(
        pool(), {"nodes": "5"}, {"nodes": "0", "schedule": "61 * * * *", "duration": "1h"}
    )
    assert allowed(bad_cron, 10, "Empty") == 0
    no_duration = raw(pool(), {"nodes": "5"}, {"nodes": "0", "duration": "1h"})
    assert allowed(no_duration, 10, "Empty") == 0


# ---- schedules -------------------------------------------------------------------------------
def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    """March 2026: the 2nd is a Monday."""
    return dt.datetime(2026, 3, day, hour, minute, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("schedule", "duration", "now", "active"),
    [
        # business hours, 09:00 for 8h, Monday to Friday
        ("0 9 * * mon-fri", "8h", at(3, 9, 0), True),  # the hit itself
        ("0 9 * * mon-fri", "8h", at(3, 16, 59), True),
        ("0 9 * * mon-fri", "8h", at(3, 17, 0), False),  # now - 8h == hit: excluded
        ("0 9 * * mon-fri", "8h", at(3, 8, 59), False),
        ("0 9 * * mon-fri", "8h", at(7, 12, 0), False),  # Saturday
        ("0 9 * * mon-fri", "8h", at(8, 12, 0), False),  # Sunday
        ("0 9 * * mon-fri", "8h", at(6, 12, 0), True),  # Friday
        # a window crossing midnight: 22:00 for 4h
        ("0 22 * * *", "4h", at(3, 23, 30), True),
        ("0 22 * * *", "4h", at(4, 1, 59), True),
        ("0 22 * * *", "4h", at(4, 2, 0), False),
        ("0 22 * * *", "4h", at(4, 21, 59), False),
        # Saturday night into Sunday
        ("0 22 * * sat", "6h", at(8, 3, 0), True),
        ("0 22 * * sat", "6h", at(9, 3, 0), False),
        ("@daily", "1h30m", at(3, 1, 29), True),
        ("@daily", "1h30m", at(3, 1, 30), False),
    ],
)
def test_a_schedule_is_active_from_each_hit_for_its_duration_in_utc(
    schedule: str, duration: str, now: dt.datetime, active: bool
) -> None:
    budget = Budget.model_validate({"nodes": "0", "schedule": schedule, "duration": duration})
    assert budget_is_active(budget, now) is active


def test_schedules_are_read_in_utc_whatever_the_offset_of_now() -> None:
    budget = Budget.model_validate({"nodes": "0", "schedule": "0 9 * * *", "duration": "1h"})
    tokyo = dt.timezone(dt.timedelta(hours=9))
    assert budget_is_active(budget, dt.datetime(2026, 3, 3, 18, 30, tzinfo=tokyo))  # 09:30 UTC
    assert not budget_is_active(budget, dt.datetime(2026, 3, 3, 9, 30, tzinfo=tokyo))


def test_an_inactive_budget_sets_no_limit_and_an_active_one_does() -> None:
    np = pool(
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]},
        {"nodes": "3"},
    )
    assert allowed(np, 10, "Drifted", at(3, 10)) == 0
    assert allowed(np, 10, "Drifted", at(3, 18)) == 3
    assert allowed(np, 10, "Drifted", at(7, 10)) == 3  # Saturday


# ---- the per-pool mapping over a cluster -----------------------------------------------------
def running(w: World, n: int) -> list[str]:
    """NodeClaims gpu-1..gpu-n launched, registered and initialized (Nodes ip-1..ip-n)."""
    names = []
    for i in range(1, n + 1):
        provisioned(w, f"gpu-{i}")
        assert w.lifecycle.reconcile(f"gpu-{i}").launched
        nc = w.cluster.node_claim(f"gpu-{i}")
        assert nc is not None
        result = w.lifecycle.register(
            advertise(registering_node(nc, f"ip-{i}"), {"nvidia.com/gpu": 1})
        )
        assert result is not None
        assert result.initialized == f"ip-{i}"
        names.append(f"ip-{i}")
    return names


def test_the_mapping_counts_deleting_and_not_ready_nodes_against_the_budget() -> None:
    w = world(0, nodepool(disruption={"budgets": [{"nodes": "3"}]}))
    nodes = running(w, 5)
    assert budget_mapping(w.cluster, "Drifted", now=w.clock.now()) == {"gpu": 3}
    w.cluster.mark_for_deletion("gpu-1")  # a command in flight
    assert budget_mapping(w.cluster, "Drifted", now=w.clock.now()) == {"gpu": 2}
    w.lifecycle.termination.delete("gpu-2", "Expired")  # expiration also counts
    assert budget_mapping(w.cluster, "Drifted", now=w.clock.now()) == {"gpu": 1}
    node = w.cluster.node(nodes[2])
    assert node is not None
    w.cluster.update_node(with_ready(node, False))
    assert budget_mapping(w.cluster, "Drifted", now=w.clock.now()) == {"gpu": 0}
    w.cluster.mark_for_deletion("gpu-4")
    assert budget_mapping(w.cluster, "Drifted", now=w.clock.now()) == {"gpu": 0}  # not -1


def test_the_mapping_leaves_out_uninitialized_nodes_and_terminating_instances() -> None:
    w = world(0, nodepool(disruption={"budgets": [{"nodes": "50%"}]}))
    running(w, 3)
    provisioned(w, "gpu-4")  # in flight: not counted, so 50% of 3 nodes
    assert budget_mapping(w.cluster, "Empty", now=w.clock.now()) == {"gpu": 2}
    nc = w.cluster.node_claim("gpu-3")
    assert nc is not None
    w.cluster.update_node_claim(with_condition(nc, INSTANCE_TERMINATING, "True", w.clock.now()))
    # 50% of 2 -> 1; the terminating one neither counts nor disrupts
    assert budget_mapping(w.cluster, "Empty", now=w.clock.now()) == {"gpu": 1}


def test_a_pool_with_no_nodes_allows_nothing_under_a_percentage() -> None:
    w = world(0)
    assert budget_mapping(w.cluster, "Empty", now=w.clock.now()) == {"gpu": 0}


# ---- the law ---------------------------------------------------------------------------------
_BUDGET = st.fixed_dictionaries(
    {
        "nodes": st.one_of(st.integers(0, 30).map(str), st.integers(0, 100).map(lambda p: f"{p}%")),
    },
    optional={
        "reasons": st.lists(
            st.sampled_from(["Empty", "Drifted", "Underutilized"]), min_size=1, unique=True
        ),
        "window": st.tuples(st.integers(0, 23), st.sampled_from(["1h", "3h", "8h", "12h"])),
    },
)


def _budget(d: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in d.items() if k != "window"}
    if "window" in d:
        hour, duration = d["window"]
        out.update(schedule=f"0 {hour} * * *", duration=duration)
    return out


@given(
    budgets=st.lists(_BUDGET, min_size=1, max_size=4),
    total=st.integers(0, 60),
    disrupting=st.integers(0, 60),
    reason=st.sampled_from(["Empty", "Drifted", "Underutilized"]),
    minute=st.integers(0, 24 * 60 - 1),
)
def test_allowed_plus_disrupting_never_exceeds_the_strictest_active_budget(
    budgets: list[dict[str, Any]], total: int, disrupting: int, reason: str, minute: int
) -> None:
    disrupting = min(disrupting, total)
    now = TUESDAY.replace(hour=0, minute=0) + dt.timedelta(minutes=minute)
    np = pool(*(_budget(b) for b in budgets))
    got = allowed_disruptions(np, reason, now=now, total_nodes=total, disrupting=disrupting)
    assert got >= 0
    strictest = UNLIMITED
    for b in np.spec.disruption.budgets:
        applies = b.reasons is None or reason in b.reasons
        if applies and budget_is_active(b, now):
            n = b.nodes
            cap = -(-int(n[:-1]) * total // 100) if n.endswith("%") else int(n)
            strictest = min(strictest, cap)
    if got > 0:
        assert got + disrupting <= strictest
    else:
        assert strictest <= disrupting or strictest == 0


@given(
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
    window_minutes=st.integers(1, 36 * 60),
    offset=st.integers(0, 3 * 24 * 60 - 1),
)
def test_a_daily_window_is_active_exactly_for_its_duration_after_each_hit(
    hour: int, minute: int, window_minutes: int, offset: int
) -> None:
    budget = Budget.model_validate(
        {"nodes": "0", "schedule": f"{minute} {hour} * * *", "duration": f"{window_minutes}m"}
    )
    now = dt.datetime(2026, 3, 2, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=offset)
    # an independent oracle: the minutes since the latest hit at or before now
    since_hit = (now.hour * 60 + now.minute - (hour * 60 + minute)) % (24 * 60)
    assert budget_is_active(budget, now) is (since_hit < window_minutes)
