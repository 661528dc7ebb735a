"""RFC 3339 times read the same on every supported Python.

`parse_rfc3339` is `datetime.fromisoformat` as Python 3.11 has it: a trailing `Z` and a fraction
of any number of digits (past microseconds cut off). Python 3.10's `fromisoformat` refuses both,
and `2026-07-14T00:00:00.000Z` is how EC2 writes an image's CreationDate; there the extended
form RFC 3339 uses is read (3.11's other ISO 8601 forms, `20260101T0000` say, are not).

`format_rfc3339` writes a time as Kubernetes' metav1.Time does: UTC, to the second, with `Z`.

Called wherever gpucap reads a time string: conditions and annotations of the input, EC2 and SSM
responses.
"""

from __future__ import annotations

import datetime as dt
import re
import sys

__all__ = ["format_rfc3339", "parse_rfc3339"]

# Python 3.10 only: the extended form (a date, then any one separator and a time, then `Z` or
# an offset); its `fromisoformat` would also skip a stray character before the offset, which
# 3.11 refuses. The fraction is put in the six digits 3.10 reads.
_EXTENDED = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:.[0-9]{2}(?::[0-9]{2}(?::[0-9]{2}(?P<fraction>\.[0-9]+)?)?)?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})?)?",
    re.ASCII | re.DOTALL,
)


def parse_rfc3339(text: str) -> dt.datetime:
    """`text` as a datetime (aware when it has `Z` or an offset); ValueError when it is not one."""
    if sys.version_info >= (3, 11):
        return dt.datetime.fromisoformat(text)
    m = _EXTENDED.fullmatch(text)
    if m is None:
        raise ValueError(f"Invalid isoformat string: {text!r}")
    if m["fraction"]:
        start, end = m.span("fraction")
        text = text[:start] + m["fraction"][:7].ljust(7, "0") + text[end:]
    return dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)


def format_rfc3339(when: dt.datetime) -> str:
    """`when` in UTC to the second with a `Z` (`2026-01-01T04:00:00Z`), as metav1.Time writes it."""
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
