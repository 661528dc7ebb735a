"""Karpenter's capacity-reservation provider (`cloudprovider/aws/capacityreservation/`).

The selection rules mirror aws `pkg/controllers/nodeclass/capacityreservation_test.go` (the
reservations below are that test's: two owners, tagged and untagged, targeted and open, a
Capacity Block, an interruptible one, one without `Interruptible`); the availability rules
mirror aws `pkg/providers/capacityreservation/suite_test.go`. Reservations come from a
reservations file through `FileReservationsAPI`, EC2's answer at the clock's time.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.capacityreservation import (
    CAPACITY_RESERVATION_STATES,
    Reservations,
    parse_reservations,
)
from gpucap.apis.ec2nodeclass import CapacityReservationSelectorTerm
from gpucap.cloudprovider.aws.capacityreservation.describe import (
    FileReservationsAPI,
    describe_capacity_reservations,
    ec2_wildcard,
    state_at,
)
from gpucap.cloudprovider.aws.capacityreservation.provider import (
    CapacityReservationProvider,
    select,
)
from gpucap.cloudprovider.aws.capacityreservation.status import (
    CapacityReservationStatus,
    nodeclass_capacity_reservations,
    requeue_after,
)
from gpucap.cloudprovider.aws.capacityreservation.types import Query, queries_from_selector_terms
from gpucap.cloudprovider.aws.ec2.api import EC2APIError
from gpucap.runtime.clock import FakeClock

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
SELF, ALT = "012345678901", "123456789012"
DISCOVERY = {"karpenter.sh/discovery": "test"}


def cr(rid: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "CapacityReservationId": rid,
        "AvailabilityZone": "test-zone-1a",
        "InstanceType": "m5.large",
        "OwnerId": SELF,
        "InstanceMatchCriteria": "targeted",
        "TotalInstanceCount": 20,
        "AvailableInstanceCount": 10,
        "State": "active",
        "ReservationType": "default",
        "Interruptible": False,
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def tags(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in values.items()]


def karpenter_reservations(**changes: dict[str, Any]) -> Reservations:
    """The reservations of nodeclass/capacityreservation_test.go's BeforeEach."""
    items = [
        cr("cr-m5.large-1a-1"),
        cr("cr-m5.large-1a-2", Tags=tags(DISCOVERY)),
        cr(
            "cr-p5.48xlarge-1a",
            InstanceType="p5.48xlarge",
            OwnerId=ALT,
            AvailableInstanceCount=2,
            Tags=tags({"reservation-type": "capacity-block"}),
            ReservationType="capacity-block",
            EndDate=(NOW + dt.timedelta(hours=24)).isoformat(),
        ),
        cr("cr-m5.large-1b-1", AvailabilityZone="test-zone-1b", AvailableInstanceCount=15),
        cr(
            "cr-m5.large-1b-2",
            AvailabilityZone="test-zone-1b",
            OwnerId=ALT,
            AvailableInstanceCount=15,
            Tags=tags(DISCOVERY),
        ),
        cr("cr-m5.large-1a-3", InstanceMatchCriteria="open", AvailableInstanceCount=5),
        cr(
            "cr-i-m5.large-1a-1",
            InstanceMatchCriteria="open",
            Tags=tags({"reservation-interruptible": "true"}),
            Interruptible=True,
        ),
        cr("cr-nil-interruptible", AvailableInstanceCount=5, Interruptible=None),
    ]
    items = [{**i, **changes.get(i["CapacityReservationId"], {})} for i in items]
    return parse_reservations({"CapacityReservations": items}, source="test")


def ids(
    reservations: Reservations | None = None,
    now: dt.datetime = NOW,
    **term: Any,
) -> list[str]:
    chosen = select(
        [CapacityReservationSelectorTerm(**term)],
        reservations or karpenter_reservations(),
        now,
    )
    return sorted(r.id for r in chosen)


# ---- selection (nodeclass/capacityreservation_test.go) ----------------------------------------


def test_a_term_with_an_id_selects_only_that_reservation() -> None:
    # "should resolve capacity reservations by ID"
    (r,) = select(
        [CapacityReservationSelectorTerm(id="cr-m5.large-1a-1")], karpenter_reservations(), NOW
    )
    assert (r.id, r.instance_match_criteria, r.owner_id, r.instance_type, r.zone) == (
        "cr-m5.large-1a-1",
        "targeted",
        SELF,
        "m5.large",
        "test-zone-1a",
    )
    assert (r.end, r.reservation_type, r.state) == (None, "default", "active")


def test_a_term_with_tags_selects_every_reservation_with_those_tags() -> None:
    # "should resolve capacity reservations by tags"
    assert ids(tags=DISCOVERY) == ["cr-m5.large-1a-2", "cr-m5.large-1b-2"]


def test_owner_id_narrows_a_tags_term_to_that_account() -> None:
    # "should resolve capacity reservations by tags + owner"
    assert ids(tags=DISCOVERY, ownerID=SELF) == ["cr-m5.large-1a-2"]


def test_instance_match_criteria_open_selects_the_open_reservations() -> None:
    # "should resolve capacity reservations by instance match criteria 'open'"
    assert ids(instanceMatchCriteria="open") == ["cr-i-m5.large-1a-1", "cr-m5.large-1a-3"]


def test_instance_match_criteria_targeted_selects_the_targeted_reservations() -> None:
    # "should resolve capacity reservations by instance match criteria 'targeted'"
    assert ids(instanceMatchCriteria="targeted") == [
        "cr-m5.large-1a-1",
        "cr-m5.large-1a-2",
        "cr-m5.large-1b-1",
        "cr-m5.large-1b-2",
        "cr-nil-interruptible",
        "cr-p5.48xlarge-1a",
    ]


def test_match_criteria_tags_and_owner_are_anded_in_one_term() -> None:
    # "... by instance match criteria with tags" and "... with tags and owner"
    assert ids(instanceMatchCriteria="targeted", tags=DISCOVERY) == [
        "cr-m5.large-1a-2",
        "cr-m5.large-1b-2",
    ]
    assert ids(instanceMatchCriteria="targeted", tags=DISCOVERY, ownerID=SELF) == [
        "cr-m5.large-1a-2"
    ]


def test_terms_are_ored_and_a_reservation_two_terms_select_is_listed_once() -> None:
    chosen = select(
        [
            CapacityReservationSelectorTerm(id="cr-m5.large-1a-2"),
            CapacityReservationSelectorTerm(tags=DISCOVERY),
            CapacityReservationSelectorTerm(id="cr-m5.large-1a-3"),
        ],
        karpenter_reservations(),
        NOW,
    )
    assert [r.id for r in chosen] == ["cr-m5.large-1a-2", "cr-m5.large-1b-2", "cr-m5.large-1a-3"]


def test_a_tag_value_of_star_selects_any_value_of_that_key() -> None:
    # types.go: a "*" value becomes a tag-key filter.
    assert ids(tags={"reservation-type": "*"}) == ["cr-p5.48xlarge-1a"]
    assert ids(tags={"karpenter.sh/discovery": "*"}) == ["cr-m5.large-1a-2", "cr-m5.large-1b-2"]


def test_an_owner_id_alone_selects_nothing() -> None:
    # QueriesFromSelectorTerms makes no query for it (the CRD refuses such a term).
    assert queries_from_selector_terms([CapacityReservationSelectorTerm(ownerID=SELF)]) == []
    assert ids(ownerID=SELF) == []


def test_an_unknown_id_selects_nothing() -> None:
    # EC2 answers InvalidCapacityReservationId.NotFound; provider.go treats it as no result.
    assert ids(id="cr-0doesnotexist") == []


def test_expired_reservations_are_not_selected() -> None:
    # "should exclude expired capacity reservations": selected before its EndDate, not after.
    ends_in_an_hour = karpenter_reservations(
        **{"cr-m5.large-1a-1": {"EndDate": (NOW + dt.timedelta(hours=1)).isoformat()}}
    )
    assert ids(ends_in_an_hour, id="cr-m5.large-1a-1") == ["cr-m5.large-1a-1"]
    assert ids(ends_in_an_hour, NOW + dt.timedelta(hours=2), id="cr-m5.large-1a-1") == []


def test_a_reservation_is_not_selected_at_its_end_date() -> None:
    # filterReservations keeps only EndDate.After(now).
    end = NOW + dt.timedelta(hours=1)
    ending = karpenter_reservations(**{"cr-m5.large-1a-1": {"EndDate": end.isoformat()}})
    assert ids(ending, end - dt.timedelta(seconds=1), id="cr-m5.large-1a-1") != []
    assert ids(ending, end, id="cr-m5.large-1a-1") == []


@pytest.mark.parametrize("state", [s for s in CAPACITY_RESERVATION_STATES if s != "active"])
def test_expired_and_cancelled_reservations_are_not_selected(state: str) -> None:
    # "should exclude non-active capacity reservations" (a table over every other EC2 state):
    # the query asks EC2 for state=active only.
    changed = karpenter_reservations(**{"cr-m5.large-1a-1": {"State": state}})
    assert ids(changed, id="cr-m5.large-1a-1") == []


def test_a_capacity_block_is_selected_from_its_start_date() -> None:
    # EC2 moves a Capacity Block bought ahead from scheduled to active at its StartDate.
    start = NOW + dt.timedelta(days=1)
    scheduled = karpenter_reservations(
        **{
            "cr-p5.48xlarge-1a": {
                "State": "scheduled",
                "StartDate": start.isoformat(),
                "EndDate": (start + dt.timedelta(days=7)).isoformat(),
            }
        }
    )
    term = {"id": "cr-p5.48xlarge-1a"}
    assert ids(scheduled, start - dt.timedelta(seconds=1), **term) == []
    assert ids(scheduled, start, **term) == ["cr-p5.48xlarge-1a"]
    assert ids(scheduled, start + dt.timedelta(days=7), **term) == []


def test_capacity_blocks_and_interruptible_reservations_are_discovered() -> None:
    # "should discover capacity block reservations", "should discover interruptible reservations"
    # and "should handle capacity reservations with nil Interruptible field".
    reservations = karpenter_reservations()
    (block,) = select(
        [CapacityReservationSelectorTerm(tags={"reservation-type": "capacity-block"})],
        reservations,
        NOW,
    )
    assert (block.id, block.reservation_type, block.is_capacity_block) == (
        "cr-p5.48xlarge-1a",
        "capacity-block",
        True,
    )
    (interruptible,) = select(
        [CapacityReservationSelectorTerm(tags={"reservation-interruptible": "true"})],
        reservations,
        NOW,
    )
    assert (interruptible.id, interruptible.interruptible) == ("cr-i-m5.large-1a-1", True)
    (nil,) = select([CapacityReservationSelectorTerm(id="cr-nil-interruptible")], reservations, NOW)
    assert nil.interruptible is False


# ---- the node class status (ec2nodeclass_status.go, nodeclass/capacityreservation.go) ---------


def status_of(rid: str, now: dt.datetime, reservations: Reservations) -> CapacityReservationStatus:
    (entry,) = nodeclass_capacity_reservations(
        select([CapacityReservationSelectorTerm(id=rid)], reservations, now), now
    )
    return entry


def test_capacity_blocks_are_expiring_40_minutes_before_their_end() -> None:
    # "should mark capacity blocks as expiring 40 minutes prior to their endDate"
    end = NOW + dt.timedelta(minutes=40)
    reservations = karpenter_reservations(**{"cr-p5.48xlarge-1a": {"EndDate": end.isoformat()}})
    assert status_of("cr-p5.48xlarge-1a", NOW, reservations).state == "expiring"
    early = NOW - dt.timedelta(seconds=1)
    assert status_of("cr-p5.48xlarge-1a", early, reservations).state == "active"


def test_default_reservations_are_never_expiring() -> None:
    # "shouldn't mark default capacity reservations as expiring 40 minutes prior to their endDate"
    end = NOW + dt.timedelta(minutes=40)
    reservations = karpenter_reservations(**{"cr-m5.large-1a-2": {"EndDate": end.isoformat()}})
    assert status_of("cr-m5.large-1a-2", NOW, reservations).state == "active"


def test_the_status_lists_reservations_by_id_in_karpenters_fields() -> None:
    chosen = select(
        [CapacityReservationSelectorTerm(tags={"reservation-type": "*"})],
        karpenter_reservations(),
        NOW,
    )
    chosen += select(
        [CapacityReservationSelectorTerm(id="cr-m5.large-1a-1")], karpenter_reservations(), NOW
    )
    entries = nodeclass_capacity_reservations(reversed(chosen), NOW)
    assert [e.to_status() for e in entries] == [
        {
            "availabilityZone": "test-zone-1a",
            "id": "cr-m5.large-1a-1",
            "instanceMatchCriteria": "targeted",
            "instanceType": "m5.large",
            "ownerID": SELF,
            "reservationType": "default",
            "interruptible": False,
            "state": "active",
        },
        {
            "availabilityZone": "test-zone-1a",
            "endTime": "2026-01-02T00:00:00Z",
            "id": "cr-p5.48xlarge-1a",
            "instanceMatchCriteria": "targeted",
            "instanceType": "p5.48xlarge",
            "ownerID": ALT,
            "reservationType": "capacity-block",
            "interruptible": False,
            "state": "active",
        },
    ]


def test_the_controller_lists_again_when_a_reservation_ends_before_the_poll() -> None:
    # capacityreservation.go requeueAfter: the poll period, or the nearest end if sooner.
    reservations = karpenter_reservations(
        **{"cr-m5.large-1a-1": {"EndDate": (NOW + dt.timedelta(seconds=20)).isoformat()}}
    )
    chosen = select(
        [CapacityReservationSelectorTerm(instanceMatchCriteria="targeted")], reservations, NOW
    )
    assert requeue_after(chosen, NOW) == dt.timedelta(seconds=20)
    assert requeue_after(chosen[1:2], NOW) == dt.timedelta(minutes=1)
    assert requeue_after([], NOW) == dt.timedelta(minutes=1)


# ---- availability (providers/capacityreservation/suite_test.go) --------------------------------


def provider(
    reservations: Reservations | None = None,
) -> tuple[CapacityReservationProvider, FakeClock, FileReservationsAPI]:
    clock = FakeClock(NOW)
    api = FileReservationsAPI(reservations or karpenter_reservations(), clock)
    return CapacityReservationProvider(api, clock), clock, api


def test_listing_syncs_the_availability_counts() -> None:
    # "should sync availability cache when listing reservations"
    p, _, _ = provider()
    listed = p.list([CapacityReservationSelectorTerm(tags=DISCOVERY)])
    assert {r.id: p.get_available_instance_count(r.id) for r in listed} == {
        "cr-m5.large-1a-2": 10,
        "cr-m5.large-1b-2": 15,
    }
    assert p.get_available_instance_count("cr-m5.large-1a-1") == 0  # never listed


def test_a_launch_takes_one_from_its_reservation_only() -> None:
    # "should decrement availability when reservation is marked as launched"
    p, _, _ = provider()
    p.availability.set_available_instance_count("cr-test", 5)
    p.mark_launched("cr-test-2")
    assert p.get_available_instance_count("cr-test") == 5
    p.mark_launched("cr-test")
    assert p.get_available_instance_count("cr-test") == 4


def test_a_termination_gives_one_back_to_its_reservation_only() -> None:
    # "should increment availability when reservation is marked as terminated"
    p, _, _ = provider()
    p.availability.set_available_instance_count("cr-test", 5)
    p.mark_terminated("cr-test-2")
    assert p.get_available_instance_count("cr-test") == 5
    p.mark_terminated("cr-test")
    assert p.get_available_instance_count("cr-test") == 6


def test_a_full_reservation_never_goes_below_zero() -> None:
    p, _, _ = provider()
    p.availability.set_available_instance_count("cr-test", 1)
    p.mark_launched("cr-test")
    p.mark_launched("cr-test")
    assert p.get_available_instance_count("cr-test") == 0


def test_a_launch_error_marks_the_reservation_unavailable_until_the_next_query() -> None:
    # MarkUnavailable (instance.go after an ICE on a reserved override; interruption/utils.go).
    p, clock, _ = provider()
    term = [CapacityReservationSelectorTerm(id="cr-m5.large-1b-1")]
    p.list(term)
    p.mark_unavailable("cr-m5.large-1b-1", "cr-unknown")
    assert p.get_available_instance_count("cr-m5.large-1b-1") == 0
    p.list(term)  # still the cached answer: no new count
    assert p.get_available_instance_count("cr-m5.large-1b-1") == 0
    clock.advance(61)
    p.list(term)
    assert p.get_available_instance_count("cr-m5.large-1b-1") == 15


def test_a_query_is_answered_from_the_cache_for_a_minute() -> None:
    # provider.go reservationCache with pkg/cache DefaultTTL (1 minute).
    p, clock, api = provider()
    terms = [CapacityReservationSelectorTerm(tags=DISCOVERY)]
    p.list(terms)
    clock.advance(60)
    p.list(terms)
    assert len(api.calls) == 1
    clock.advance(1)
    p.list(terms)
    assert len(api.calls) == 2


def test_the_availability_count_is_forgotten_after_a_day_without_a_query() -> None:
    # pkg/cache CapacityReservationAvailabilityTTL = 24h.
    p, clock, _ = provider()
    p.availability.set_available_instance_count("cr-test", 3)
    clock.advance(24 * 3600)
    assert p.get_available_instance_count("cr-test") == 3
    clock.advance(1)
    assert p.get_available_instance_count("cr-test") == 0


# ---- the EC2 requests (types.go) ---------------------------------------------------------------


def test_the_queries_ask_ec2_for_active_reservations_with_karpenters_filters() -> None:
    by_id, by_tags = queries_from_selector_terms(
        [
            CapacityReservationSelectorTerm(id="cr-1"),
            CapacityReservationSelectorTerm(
                tags={"team": "ml", "any": "*"}, ownerID=SELF, instanceMatchCriteria="open"
            ),
        ]
    )
    assert by_id.request() == {
        "Filters": [{"Name": "state", "Values": ["active"]}],
        "CapacityReservationIds": ["cr-1"],
    }
    assert by_tags == Query(
        owner_id=SELF, tags=(("any", "*"), ("team", "ml")), instance_match_criteria="open"
    )
    assert by_tags.request() == {
        "Filters": [
            {"Name": "state", "Values": ["active"]},
            {"Name": "owner-id", "Values": [SELF]},
            {"Name": "tag-key", "Values": ["any"]},
            {"Name": "tag:team", "Values": ["ml"]},
            {"Name": "instance-match-criteria", "Values": ["open"]},
        ],
        "MaxResults": 1000,
    }


def test_ec2_refuses_max_results_with_ids_and_pages_by_next_token() -> None:
    items = karpenter_reservations().capacity_reservations
    with pytest.raises(EC2APIError) as info:
        describe_capacity_reservations(
            items, NOW, {"CapacityReservationIds": ["cr-m5.large-1a-1"], "MaxResults": 5}
        )
    assert info.value.code == "InvalidParameterCombination"
    first = describe_capacity_reservations(items, NOW, {"MaxResults": 5})
    second = describe_capacity_reservations(
        items, NOW, {"MaxResults": 5, "NextToken": first["NextToken"]}
    )
    assert len(first["CapacityReservations"]) == 5
    assert "NextToken" not in second
    assert len(first["CapacityReservations"] + second["CapacityReservations"]) == len(items)


def test_ec2_tag_filters_match_wildcards() -> None:
    assert ec2_wildcard("team-*", "team-ml")
    assert ec2_wildcard("t?am", "team")
    assert not ec2_wildcard("t?am", "tam")
    assert ec2_wildcard("a\\*", "a*")
    assert not ec2_wildcard("a\\*", "ab")


# ---- laws ---------------------------------------------------------------------------------------

_state = st.sampled_from(CAPACITY_RESERVATION_STATES)
_offset = st.integers(min_value=-72, max_value=72).map(lambda h: NOW + dt.timedelta(hours=h))


@st.composite
def _reservations(draw: st.DrawFn) -> Reservations:
    items = []
    for n in range(draw(st.integers(min_value=0, max_value=6))):
        start = draw(_offset)
        end = draw(st.none() | st.integers(min_value=1, max_value=96))
        items.append(
            cr(
                f"cr-{n}",
                State=draw(_state),
                StartDate=start.isoformat(),
                EndDate=None if end is None else (start + dt.timedelta(hours=end)).isoformat(),
                InstanceMatchCriteria=draw(st.sampled_from(["open", "targeted"])),
                Tags=tags({"team": draw(st.sampled_from(["ml", "web"]))}),
            )
        )
    return parse_reservations({"CapacityReservations": items}, source="law")


@given(_reservations(), _offset, st.sampled_from(["ml", "web", "*"]))
def test_only_reservations_active_and_not_ended_at_now_are_ever_selected(
    reservations: Reservations, now: dt.datetime, team: str
) -> None:
    chosen = select([CapacityReservationSelectorTerm(tags={"team": team})], reservations, now)
    by_id = reservations.by_id()
    expected = sorted(
        r.capacity_reservation_id
        for r in reservations.capacity_reservations
        if state_at(r, now) == "active"
        and (r.end_date is None or r.end_date > now)
        and (team == "*" or r.tag_map["team"] == team)
    )
    assert sorted(r.id for r in chosen) == expected
    assert all(by_id[r.id].instance_match_criteria == r.instance_match_criteria for r in chosen)
