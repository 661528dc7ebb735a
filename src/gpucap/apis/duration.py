"""Durations as manifests write them.

Two grammars meet in gpucap's inputs:
- Karpenter's CRD durations (`expireAfter`, `consolidateAfter`, `terminationGracePeriod`, budget
  `duration`): a restricted pattern of whole `h`/`m`/`s` units, some fields also accepting `Never`.
  The patterns are copied from the CRDs (`karpenter.sh_nodepools.yaml`).
- Go `time.ParseDuration` for the Scenario's `at`/`for`/`duration` and pod annotations such as
  `karpenter.sh/do-not-disrupt: 5m`.

Called by the manifest models and validation (`apis/`), and by the simulator for scenario times.
Durations are returned as exact integers or `Fraction`-free floats of seconds where Go allows
fractions; `None` means `Never`.
"""

from __future__ import annotations

import re
from decimal import Decimal

__all__ = [
    "BUDGET_DURATION_PATTERN",
    "MAX_GO_DURATION",
    "NILLABLE_DURATION_PATTERN",
    "TERMINATION_GRACE_PERIOD_PATTERN",
    "DurationError",
    "format_seconds",
    "parse_go_duration",
    "parse_go_duration_ns",
    "parse_karpenter_duration",
]

# Use these with `fullmatch`: Python's `$` also matches before a trailing newline, Go's does not.
# karpenter.sh_nodepools.yaml: expireAfter and consolidateAfter
NILLABLE_DURATION_PATTERN = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
# karpenter.sh_nodepools.yaml: terminationGracePeriod (no `Never`)
TERMINATION_GRACE_PERIOD_PATTERN = re.compile(r"^([0-9]+(s|m|h))+$")
# karpenter.sh_nodepools.yaml: budgets[].duration (hours and/or minutes, optional trailing 0s)
BUDGET_DURATION_PATTERN = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")

# Go's time.ParseDuration units, in nanoseconds (`unitMap` in src/time/format.go).
_GO_UNIT_NS = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,  # micro sign
    "\u03bcs": 10**3,  # Greek small letter mu
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
# A Go time.Duration is an int64 count of nanoseconds: about 292 years either way.
_GO_LIMIT = 2**63
_DIGITS = re.compile(r"[0-9]*")
_UNIT = re.compile(r"[^0-9.]*")
_EXAMPLES = "(e.g. 90s, 5m, 1h30m)"
MAX_GO_DURATION = "2562047h47m16.854775807s"


class DurationError(ValueError):
    """A duration string that does not match its grammar, or is beyond Go's int64 range."""


def _show(text: str) -> str:
    return repr(text) if len(text) <= 200 else f"{text[:100]!r}... ({len(text)} characters)"


def _out_of_range(text: str) -> DurationError:
    return DurationError(
        f"{_show(text)} is out of range: a Go duration is at most {MAX_GO_DURATION} "
        "(about 292 years)"
    )


def parse_go_duration_ns(text: str) -> int:
    """Nanoseconds of a Go duration, exactly as Go's `time.ParseDuration` computes them: ASCII
    digits, units ns/us/µs/μs/ms/s/m/h, fractions through a float64, and an error (not a wrap)
    beyond int64 nanoseconds. Linear in the length of the text; no number grows past 2**63."""
    s = text  # Go does not trim: " 5m" is no duration
    negative = False
    if s[:1] in ("+", "-"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(f"{_show(text)} is not a duration {_EXAMPLES}")
    total = 0
    pos = 0
    while pos < len(s):
        if not (s[pos] == "." or "0" <= s[pos] <= "9"):
            raise DurationError(f"{_show(text)} is not a duration {_EXAMPLES}")
        whole_digits = _DIGITS.match(s, pos).group()  # type: ignore[union-attr]
        pos += len(whole_digits)
        whole = 0
        for c in whole_digits:  # Go's leadingInt: fails as soon as it passes 2**63
            if whole > _GO_LIMIT // 10:
                raise _out_of_range(text)
            whole = whole * 10 + ord(c) - 48
            if whole > _GO_LIMIT:
                raise _out_of_range(text)
        fraction, scale, fraction_digits = 0, 1.0, ""
        if pos < len(s) and s[pos] == ".":
            fraction_digits = _DIGITS.match(s, pos + 1).group()  # type: ignore[union-attr]
            pos += 1 + len(fraction_digits)
            for c in fraction_digits:  # Go's leadingFraction: stops adding precision near 2**63
                if fraction > (_GO_LIMIT - 1) // 10 or fraction * 10 + ord(c) - 48 > _GO_LIMIT:
                    break
                fraction = fraction * 10 + ord(c) - 48
                scale *= 10
        if not whole_digits and not fraction_digits:
            raise DurationError(f"{_show(text)} is not a duration {_EXAMPLES}")
        unit_text = _UNIT.match(s, pos).group()  # type: ignore[union-attr]
        pos += len(unit_text)
        if not unit_text:
            raise DurationError(f"{_show(text)} has a number without a unit {_EXAMPLES}")
        unit = _GO_UNIT_NS.get(unit_text)
        if unit is None:
            raise DurationError(
                f"{_show(text)}: unknown unit {_show(unit_text)} (ns, us, ms, s, m or h)"
            )
        if whole > _GO_LIMIT // unit:
            raise _out_of_range(text)
        value = whole * unit
        if fraction > 0:
            # Go adds the fraction through a float64 (nanosecond-accurate up to hours).
            value += int(float(fraction) * (float(unit) / scale))
            if value > _GO_LIMIT:
                raise _out_of_range(text)
        total += value
        if total > _GO_LIMIT:
            raise _out_of_range(text)
    if negative:
        return -total
    if total > _GO_LIMIT - 1:
        raise _out_of_range(text)
    return total


def parse_karpenter_duration(text: str) -> int | None:
    """Seconds of a CRD duration such as `720h` or `1h30m`; `None` for `Never`.

    The caller has already checked the field's pattern; this accepts the union of them, and
    rejects what Karpenter's `time.ParseDuration` would (a value beyond about 292 years).
    """
    if text == "Never":
        return None
    if not re.fullmatch(r"([0-9]+(s|m|h))+", text):
        raise DurationError(f"{_show(text)} is not a duration of whole h/m/s units")
    return parse_go_duration_ns(text) // 10**9


def parse_go_duration(text: str) -> float:
    """Seconds of a Go duration (`90s`, `1h30m`, `1.5h`, `300ms`, `0`); negative allowed."""
    return parse_go_duration_ns(text) / 10**9


def format_seconds(seconds: float) -> str:
    """Compact Go-duration form of a number of seconds (`2h`, `1h30m`, `45s`, `1m0.5s`), exact:
    `parse_go_duration(format_seconds(s)) == s`. Used for output."""
    if seconds < 0:
        return "-" + format_seconds(-seconds)
    exact = Decimal(repr(float(seconds)))
    whole = int(exact)
    fraction = exact - whole
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m")) if v]
    if fraction:
        parts.append(f"{format(secs + fraction, 'f')}s")
    elif secs or not parts:
        parts.append(f"{secs}s")
    return "".join(parts)
