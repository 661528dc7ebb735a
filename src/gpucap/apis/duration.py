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
    "NILLABLE_DURATION_PATTERN",
    "TERMINATION_GRACE_PERIOD_PATTERN",
    "DurationError",
    "format_seconds",
    "parse_go_duration",
    "parse_karpenter_duration",
]

# Use these with `fullmatch`: Python's `$` also matches before a trailing newline, Go's does not.
# karpenter.sh_nodepools.yaml: expireAfter and consolidateAfter
NILLABLE_DURATION_PATTERN = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
# karpenter.sh_nodepools.yaml: terminationGracePeriod (no `Never`)
TERMINATION_GRACE_PERIOD_PATTERN = re.compile(r"^([0-9]+(s|m|h))+$")
# karpenter.sh_nodepools.yaml: budgets[].duration (hours and/or minutes, optional trailing 0s)
BUDGET_DURATION_PATTERN = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")

_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}
_GO_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_GO_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """A duration string that does not match its grammar."""


def parse_karpenter_duration(text: str) -> int | None:
    """Seconds of a CRD duration such as `720h` or `1h30m`; `None` for `Never`.

    The caller has already checked the field's pattern; this accepts the union of them.
    """
    if text == "Never":
        return None
    if not re.fullmatch(r"([0-9]+(s|m|h))+", text):
        raise DurationError(f"{text!r} is not a duration of whole h/m/s units")
    return sum(int(n) * _UNIT_SECONDS[u] for n, u in re.findall(r"([0-9]+)(s|m|h)", text))


def parse_go_duration(text: str) -> float:
    """Seconds of a Go duration (`90s`, `1h30m`, `1.5h`, `300ms`, `0`); negative allowed."""
    s = text.strip()
    sign = Decimal(1)
    if s[:1] in "+-" and s:
        sign = Decimal(-1) if s[0] == "-" else Decimal(1)
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise DurationError(f"{text!r} is not a duration (e.g. 90s, 5m, 1h30m)")
    pos = 0
    total = Decimal(0)
    while pos < len(s):
        m = _GO_TERM.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            raise DurationError(f"{text!r} is not a duration (e.g. 90s, 5m, 1h30m)")
        total += Decimal(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    return float(sign * total)


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
