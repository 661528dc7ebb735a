"""Cron schedules of disruption budgets (`spec.disruption.budgets[].schedule`).

Karpenter parses a schedule with robfig/cron's standard parser in UTC: five fields (minute,
hour, day of month, month, day of week) or one of the descriptors `@yearly`/`@annually`,
`@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`. Each field is a comma list of `*`/`?`,
`n`, `a-b`, each optionally `/step`; months and weekdays also accept three-letter names.
As in cron, when both day-of-month and day-of-week are restricted a time matches either.
Called by validation (syntax) and by the disruption budgets (whether a window is active).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from gpucap.apis.goparse import atoi

__all__ = ["CronError", "CronSchedule", "parse_cron"]

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (name, lowest, highest, names)
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)


class CronError(ValueError):
    """A schedule robfig/cron's standard parser would reject."""


@dataclass(frozen=True, slots=True)
class CronSchedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    dom_any: bool
    dow_any: bool

    def matches(self, t: dt.datetime) -> bool:
        """Whether the minute containing `t` (UTC) is a hit of this schedule."""
        t = t.astimezone(dt.timezone.utc)
        if t.minute not in self.minutes or t.hour not in self.hours or t.month not in self.months:
            return False
        dom = t.day in self.days_of_month
        dow = (t.isoweekday() % 7) in self.days_of_week
        if self.dom_any or self.dow_any:
            return dom and dow
        return dom or dow

    def last_hit_at_or_before(self, t: dt.datetime, horizon: dt.timedelta) -> dt.datetime | None:
        """The latest hit h with t - horizon < h <= t (minute resolution), or None."""
        now = t.astimezone(dt.timezone.utc)
        limit = now - horizon
        t = now.replace(second=0, microsecond=0)
        while t > limit:
            if self.matches(t):
                return t
            t -= dt.timedelta(minutes=1)
        return None


def parse_cron(text: str) -> CronSchedule:
    expr = _DESCRIPTORS.get(text.strip(), text)
    fields = expr.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: {text!r}")
    parsed = [
        _parse_field(f, name, lo, hi, names)
        for f, (name, lo, hi, names) in zip(fields, _FIELDS, strict=True)
    ]
    return CronSchedule(
        minutes=parsed[0][0],
        hours=parsed[1][0],
        days_of_month=parsed[2][0],
        months=parsed[3][0],
        days_of_week=parsed[4][0],
        dom_any=parsed[2][1],
        dow_any=parsed[4][1],
    )


def _parse_field(
    text: str, name: str, lo: int, hi: int, names: dict[str, int]
) -> tuple[frozenset[int], bool]:
    """The field's values, and robfig's "star bit": whether some part is `*`/`?` with a step of
    at most 1 (such a day field counts as unrestricted when combining day-of-month/-week)."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        rng, slash, step_text = part.partition("/")
        step = 1
        if slash:
            parsed = atoi(step_text)
            if parsed is None or parsed <= 0:
                raise CronError(f"{name}: bad step {_show(step_text)}")
            step = parsed
        if rng in ("*", "?"):
            star = star or step <= 1
            start, end = lo, hi
        else:
            a, dash, b = rng.partition("-")
            start = _value(a, name, lo, hi, names)
            end = _value(b, name, lo, hi, names) if dash else (hi if slash else start)
            if start > end:
                raise CronError(f"{name}: range {rng!r} starts after it ends")
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def _show(text: str) -> str:
    return repr(text) if len(text) <= 200 else f"{text[:100]!r}... ({len(text)} characters)"


def _value(text: str, name: str, lo: int, hi: int, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    # robfig/cron reads numbers with Go's strconv.Atoi: ASCII digits (`str.isdigit` would take
    # `²` or Arabic-Indic digits and `int()` then fails), an optional sign, within int64.
    v = atoi(text)
    if v is None:
        raise CronError(f"{name}: {_show(text)} is not a number")
    if v < 0:
        raise CronError(f"{name}: negative number {v} not allowed")
    if not lo <= v <= hi:
        raise CronError(f"{name}: {v} is outside {lo}-{hi}")
    return v
