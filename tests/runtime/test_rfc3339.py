"""RFC 3339 times read alike on Python 3.10 and 3.11+ (issue 23): `Z`, any fraction, offsets."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.runtime.rfc3339 import parse_rfc3339

UTC = dt.timezone.utc


def test_a_trailing_z_is_utc() -> None:
    assert parse_rfc3339("2026-07-14T00:00:00Z") == dt.datetime(2026, 7, 14, tzinfo=UTC)


def test_ec2s_creation_date_with_milliseconds_and_z_is_read() -> None:
    assert parse_rfc3339("2026-07-14T00:00:00.250Z") == dt.datetime(
        2026, 7, 14, 0, 0, 0, 250_000, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("fraction", "micros"),
    [(".5", 500_000), (".12", 120_000), (".1234", 123_400), (".1234567", 123_456)],
)
def test_a_fraction_of_any_length_is_read_to_the_microsecond(fraction: str, micros: int) -> None:
    assert parse_rfc3339(f"2026-01-01T10:00:00{fraction}+02:00") == dt.datetime(
        2026, 1, 1, 10, 0, 0, micros, tzinfo=dt.timezone(dt.timedelta(hours=2))
    )


def test_a_time_without_an_offset_stays_naive() -> None:
    assert parse_rfc3339("2026-01-01T00:00:00").tzinfo is None


@pytest.mark.parametrize("text", ["", "yesterday", "2026-01-01T00:00:00ZZ", "2026-13-01T00:00:00Z"])
def test_what_is_not_a_time_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (each caller turns it into its own message)
        parse_rfc3339(text)


@given(
    st.datetimes(
        min_value=dt.datetime(1970, 1, 1),
        max_value=dt.datetime(2100, 1, 1),
        timezones=st.just(UTC),
    ),
    st.integers(min_value=1, max_value=9),
)
def test_a_utc_time_written_with_z_and_any_number_of_digits_reads_back_cut_to_them(
    when: dt.datetime, digits: int
) -> None:
    fraction = f"{when.microsecond:06d}000"[:digits]
    text = when.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction}Z"
    kept = int(fraction[:6].ljust(6, "0"))
    assert parse_rfc3339(text) == when.replace(microsecond=kept)
