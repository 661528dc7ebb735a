"""Budget schedules: robfig/cron's standard parser semantics, evaluated in UTC."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.cron import CronError, CronSchedule, parse_cron

UTC = dt.timezone.utc
# 2026-01-01 is a Thursday; 2026-01-04 a Sunday; 2026-01-05 a Monday; 2026-02-13 a Friday.
THU = dt.datetime(2026, 1, 1, tzinfo=UTC)
SAT = dt.datetime(2026, 1, 3, tzinfo=UTC)
SUN = dt.datetime(2026, 1, 4, tzinfo=UTC)
MON = dt.datetime(2026, 1, 5, tzinfo=UTC)


def at(day: dt.datetime, hour: int = 0, minute: int = 0, second: int = 0) -> dt.datetime:
    return day.replace(hour=hour, minute=minute, second=second)


def cron_weekday(t: dt.datetime) -> int:
    """Sunday = 0, as cron counts."""
    return t.isoweekday() % 7


# Every minute of 2026-2027, as aware UTC datetimes.
minutes = st.datetimes(
    min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2027, 12, 31, 23, 59)
).map(lambda t: t.replace(second=0, microsecond=0, tzinfo=UTC))


# ----- descriptors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("descriptor", "rule"),
    [
        ("@daily", lambda t: (t.hour, t.minute) == (0, 0)),
        ("@midnight", lambda t: (t.hour, t.minute) == (0, 0)),
        ("@hourly", lambda t: t.minute == 0),
        ("@weekly", lambda t: (cron_weekday(t), t.hour, t.minute) == (0, 0, 0)),
        ("@monthly", lambda t: (t.day, t.hour, t.minute) == (1, 0, 0)),
        ("@yearly", lambda t: (t.month, t.day, t.hour, t.minute) == (1, 1, 0, 0)),
        ("@annually", lambda t: (t.month, t.day, t.hour, t.minute) == (1, 1, 0, 0)),
    ],
)
@given(t=minutes)
def test_descriptors_match_their_rule(
    descriptor: str, rule: Callable[[dt.datetime], bool], t: dt.datetime
) -> None:
    assert parse_cron(descriptor).matches(t) == rule(t)


@pytest.mark.parametrize(
    ("descriptor", "hit", "misses"),
    [
        ("@daily", at(THU), [at(THU, 0, 1), at(THU, 12), at(THU, 23, 59)]),
        ("@hourly", at(THU, 13), [at(THU, 13, 1), at(THU, 13, 59)]),
        ("@weekly", at(SUN), [at(MON), at(SAT), at(SUN, 0, 1), at(SUN, 1)]),
        ("@monthly", at(THU.replace(month=2)), [at(THU.replace(day=2)), at(THU, 1)]),
        ("@yearly", at(THU), [at(THU.replace(month=2)), at(THU.replace(day=2))]),
        ("@annually", at(THU), [at(THU.replace(month=2)), at(THU, 0, 1)]),
    ],
)
def test_descriptor_examples(descriptor: str, hit: dt.datetime, misses: list[dt.datetime]) -> None:
    schedule = parse_cron(descriptor)
    assert schedule.matches(hit)
    assert not any(schedule.matches(t) for t in misses)


def test_a_match_is_for_the_whole_minute() -> None:
    schedule = parse_cron("@daily")
    assert schedule.matches(at(THU, 0, 0, 59).replace(microsecond=999_999))


# ----- fields: numbers, ranges, steps, names --------------------------------------------------------


def test_weekday_business_hours_match_monday_not_saturday() -> None:
    schedule = parse_cron("0 9 * * mon-fri")
    assert schedule.matches(at(MON, 9))
    assert schedule.matches(at(THU, 9))
    assert not schedule.matches(at(SAT, 9))
    assert not schedule.matches(at(SUN, 9))
    assert not schedule.matches(at(MON, 9, 1))
    assert not schedule.matches(at(MON, 10))


@pytest.mark.parametrize(
    ("expr", "field", "values"),
    [
        ("*/15 * * * *", "minutes", {0, 15, 30, 45}),
        ("5/15 * * * *", "minutes", {5, 20, 35, 50}),  # N/step means N-max/step
        ("1-10/3 * * * *", "minutes", {1, 4, 7, 10}),
        ("0,30 * * * *", "minutes", {0, 30}),
        ("0-5,58-59 * * * *", "minutes", {0, 1, 2, 3, 4, 5, 58, 59}),
        ("? * * * *", "minutes", set(range(60))),
        ("0 */6 * * *", "hours", {0, 6, 12, 18}),
        ("0 22-23 * * *", "hours", {22, 23}),
        ("0 0 1,15 * *", "days_of_month", {1, 15}),
        ("0 0 31 * *", "days_of_month", {31}),
        ("0 0 * jan-mar *", "months", {1, 2, 3}),
        ("0 0 * JAN,Dec *", "months", {1, 12}),
        ("0 0 * */4 *", "months", {1, 5, 9}),
        ("0 0 * * sun", "days_of_week", {0}),
        ("0 0 * * MON-FRI", "days_of_week", {1, 2, 3, 4, 5}),
        ("0 0 * * sat,sun", "days_of_week", {0, 6}),
        ("0 0 * * 1-5/2", "days_of_week", {1, 3, 5}),
        ("0 0 * * *", "days_of_week", {0, 1, 2, 3, 4, 5, 6}),
    ],
)
def test_field_values(expr: str, field: str, values: set[int]) -> None:
    assert getattr(parse_cron(expr), field) == frozenset(values)


def test_fields_may_be_separated_by_any_whitespace() -> None:
    assert parse_cron(" 0\t9  * *\n1 ") == parse_cron("0 9 * * 1")


# ----- day of month OR day of week ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "day", "hit"),
    [
        # both restricted: either matches
        ("0 0 13 * fri", dt.datetime(2026, 2, 13, tzinfo=UTC), True),  # Friday the 13th
        ("0 0 13 * fri", dt.datetime(2026, 1, 2, tzinfo=UTC), True),  # a Friday, the 2nd
        ("0 0 13 * fri", dt.datetime(2026, 1, 13, tzinfo=UTC), True),  # a Tuesday, the 13th
        ("0 0 13 * fri", dt.datetime(2026, 1, 14, tzinfo=UTC), False),  # neither
        # day of week unrestricted: only the day of month decides
        ("0 0 13 * *", dt.datetime(2026, 1, 13, tzinfo=UTC), True),
        ("0 0 13 * *", dt.datetime(2026, 1, 2, tzinfo=UTC), False),
        ("0 0 13 * ?", dt.datetime(2026, 1, 2, tzinfo=UTC), False),
        # day of month unrestricted: only the day of week decides
        ("0 0 * * fri", dt.datetime(2026, 1, 2, tzinfo=UTC), True),
        ("0 0 * * fri", dt.datetime(2026, 1, 13, tzinfo=UTC), False),
        ("0 0 ? * fri", dt.datetime(2026, 1, 13, tzinfo=UTC), False),
        # a step is a restriction (robfig clears the star bit for step > 1)
        ("0 0 */2 * fri", dt.datetime(2026, 1, 2, tzinfo=UTC), True),  # Friday, even day
        ("0 0 */2 * fri", dt.datetime(2026, 1, 3, tzinfo=UTC), True),  # odd day
        ("0 0 */2 * fri", dt.datetime(2026, 1, 4, tzinfo=UTC), False),  # Sunday, even day
    ],
)
def test_restricted_day_of_month_and_day_of_week_match_either(
    expr: str, day: dt.datetime, hit: bool
) -> None:
    assert parse_cron(expr).matches(day) == hit


def test_day_of_month_star_step_one_is_unrestricted() -> None:
    # Mondays only in robfig/cron; 2026-01-01 is a Thursday.
    assert not parse_cron("0 0 */1 * mon").matches(THU)


# ----- time zones -----------------------------------------------------------------------------------


def test_aware_datetimes_in_other_zones_are_converted_to_utc() -> None:
    schedule = parse_cron("0 9 * * mon-fri")
    cet = dt.timezone(dt.timedelta(hours=1))
    assert schedule.matches(dt.datetime(2026, 1, 5, 10, 0, tzinfo=cet))  # 09:00 UTC Monday
    assert not schedule.matches(dt.datetime(2026, 1, 5, 9, 0, tzinfo=cet))  # 08:00 UTC
    # Saturday 01:00 at UTC+14 is Friday 11:00 UTC: weekday comes from UTC, not local time.
    kiribati = dt.timezone(dt.timedelta(hours=14))
    assert parse_cron("0 11 * * fri").matches(dt.datetime(2026, 1, 3, 1, 0, tzinfo=kiribati))


@given(t=minutes, offset_minutes=st.integers(-14 * 60, 14 * 60))
def test_matching_is_independent_of_the_time_zone_it_is_given_in(
    t: dt.datetime, offset_minutes: int
) -> None:
    local = t.astimezone(dt.timezone(dt.timedelta(minutes=offset_minutes)))
    for expr in ("0 9 * * mon-fri", "30 */2 1,15 * *", "@weekly"):
        schedule = parse_cron(expr)
        assert schedule.matches(local) == schedule.matches(t)


# ----- rejections -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "0 9 * *",
        "0 9 * * * *",  # no seconds field in the standard parser
        "@daily 0",
        "@fortnightly",
        "0 25 * * *",
        "60 * * * *",
        "0 0 0 * *",
        "0 0 32 * *",
        "0 0 * 0 *",
        "0 0 * 13 *",
        "0 0 * * 7",
        "*/0 * * * *",
        "*/x * * * *",
        "*/-1 * * * *",
        "5-1 * * * *",
        "fri-mon * * * *",
        "0 0 * * fri-mon",
        "0 0 * dec-jan *",
        "1-2-3 * * * *",
        "x * * * *",
        "-1 * * * *",
        "0 0 * * monday",
        "0 0 * * 1/2/3",
        "0 0 jan * *",  # month names are not days of month
    ],
)
def test_invalid_schedules_are_rejected(bad: str) -> None:
    with pytest.raises(CronError):
        parse_cron(bad)


def test_cron_error_is_a_value_error_that_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="hour: 25 is outside 0-23"):
        parse_cron("0 25 * * *")
    with pytest.raises(ValueError, match="expected exactly 5 fields, found 4"):
        parse_cron("0 9 * *")


def test_an_empty_step_is_rejected() -> None:
    with pytest.raises(CronError):
        parse_cron("*/ * * * *")


# ----- budget windows: last_hit_at_or_before -------------------------------------------------------


NINE_DAILY = "0 9 * * *"


@pytest.mark.parametrize(
    ("now", "horizon", "expected"),
    [
        (at(MON, 12), dt.timedelta(hours=8), at(MON, 9)),
        (at(MON, 18), dt.timedelta(hours=8), None),
        (at(MON, 9), dt.timedelta(hours=8), at(MON, 9)),  # a hit at now counts
        (at(MON, 9, 0, 59), dt.timedelta(hours=8), at(MON, 9)),
        (at(MON, 16, 59), dt.timedelta(hours=8), at(MON, 9)),
        (at(MON, 16, 59, 59), dt.timedelta(hours=8), at(MON, 9)),
        (at(MON, 17), dt.timedelta(hours=8), None),  # now - duration is excluded
        (at(MON, 8, 59), dt.timedelta(hours=8), None),
        (at(MON, 8, 59), dt.timedelta(hours=24), at(SUN, 9)),  # yesterday's hit
        (at(MON, 9, 30), dt.timedelta(minutes=31), at(MON, 9)),
        (at(MON, 9, 30), dt.timedelta(minutes=30), None),
        (at(MON, 9), dt.timedelta(0), None),  # a zero-length window is never active
    ],
)
def test_nine_to_five_window(
    now: dt.datetime, horizon: dt.timedelta, expected: dt.datetime | None
) -> None:
    assert parse_cron(NINE_DAILY).last_hit_at_or_before(now, horizon) == expected


def test_the_latest_of_several_hits_in_the_window_is_returned() -> None:
    schedule = parse_cron("*/10 * * * *")
    assert schedule.last_hit_at_or_before(at(MON, 9, 37), dt.timedelta(hours=1)) == at(MON, 9, 30)


def test_window_start_is_reported_in_utc_for_a_non_utc_now() -> None:
    cet = dt.timezone(dt.timedelta(hours=1))
    hit = parse_cron(NINE_DAILY).last_hit_at_or_before(
        dt.datetime(2026, 1, 5, 13, 0, tzinfo=cet), dt.timedelta(hours=8)
    )
    assert hit == at(MON, 9)
    assert hit is not None
    assert hit.utcoffset() == dt.timedelta(0)


def test_a_weekly_window_spans_the_week_boundary() -> None:
    # Karpenter: active iff some hit h with now - duration < h <= now.
    schedule = parse_cron("@weekly")
    assert schedule.last_hit_at_or_before(at(MON, 23), dt.timedelta(hours=48)) == at(SUN)
    assert schedule.last_hit_at_or_before(at(MON, 23), dt.timedelta(hours=23)) is None


def test_a_hit_exactly_at_now_minus_horizon_is_excluded_for_sub_minute_horizons() -> None:
    schedule = parse_cron("59 11 * * *")
    now = at(MON, 12, 0, 30)
    assert schedule.last_hit_at_or_before(now, dt.timedelta(seconds=90)) is None


SCHEDULES = [
    parse_cron(e) for e in ("0 9 * * *", "*/20 8-17 * * mon-fri", "@hourly", "0 0 13 * fri")
]


@settings(max_examples=60)
@given(
    schedule=st.sampled_from(SCHEDULES),
    now=st.datetimes(
        min_value=dt.datetime(2026, 1, 1),
        max_value=dt.datetime(2026, 12, 31),
        timezones=st.just(UTC),
    ),
    horizon_minutes=st.integers(0, 600),
)
def test_last_hit_is_the_latest_matching_minute_in_the_window(
    schedule: CronSchedule, now: dt.datetime, horizon_minutes: int
) -> None:
    horizon = dt.timedelta(minutes=horizon_minutes)
    # Every whole minute m with now - horizon < m <= now, latest first.
    candidates = []
    m = now.replace(second=0, microsecond=0)
    while m > now - horizon:
        candidates.append(m)
        m -= dt.timedelta(minutes=1)
    expected = next((c for c in candidates if schedule.matches(c)), None)
    assert schedule.last_hit_at_or_before(now, horizon) == expected


# ----- numbers as Go reads them (issue 9) -------------------------------------------------------
# robfig/cron reads every number with strconv.Atoi (parser.go mustParseInt): ASCII digits, an
# optional sign, within int64, then rejects negatives. Python's str.isdigit took `²` (which int()
# then refused: an internal error).


@pytest.mark.parametrize(
    "schedule",
    [
        "\u00b2 * * * *",  # superscript two
        "\u0663 * * * *",  # Arabic-Indic three
        "0 \uff15 * * *",  # fullwidth five
        "*/\u00b2 * * * *",
        "0 0 * * \u0663",
        "1" * 5000 + " * * * *",
        "99999999999999999999 * * * *",
        "-5 * * * *",
    ],
    ids=[
        "superscript",
        "arabic_indic",
        "fullwidth",
        "step",
        "weekday",
        "5000_digits",
        "int64",
        "neg",
    ],
)
def test_a_cron_number_go_cannot_read_is_a_cron_error(schedule: str) -> None:
    with pytest.raises(CronError):
        parse_cron(schedule)


def test_a_cron_number_may_carry_a_plus_sign_as_atoi_allows() -> None:
    assert parse_cron("+5 * * * *").minutes == frozenset({5})
    assert parse_cron("*/+20 * * * *").minutes == frozenset({0, 20, 40})
