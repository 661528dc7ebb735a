"""Go's number parsing, for the strings in manifests that Karpenter and Kubernetes read with it.

Python's `int()`, `float()` and `str.isdigit()` accept what Go does not: Unicode digits (`²`,
Arabic-Indic `٣`, fullwidth digits), underscores, surrounding whitespace, and integers of any size
(up to Python's 4,300-digit limit, past which `int()` raises). A manifest number read that way
is either accepted where Karpenter rejects it or turns into an internal error. These helpers
answer exactly what Go answers, in time linear in the text and without converting a huge digit
string. Called by the cron parser, validation (requirement values, NodeOverlay prices) and the
scheduler's requirement bounds.
"""

from __future__ import annotations

import math
import re

__all__ = ["INT64_MAX", "INT64_MIN", "atoi", "parse_float"]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

_DIGITS = re.compile(r"[0-9]+")
# strconv.ParseFloat's decimal form (the only one the CRD patterns that reach it allow):
# digits with an optional fraction and exponent, ASCII only.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def atoi(text: str) -> int | None:
    """Go's `strconv.Atoi` (int is 64 bits): an optional sign, then ASCII digits, within int64;
    `None` where Go returns an error."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not _DIGITS.fullmatch(digits):
        return None
    if len(digits.lstrip("0")) > 19:  # beyond int64 whatever the digits: no huge conversion
        return None
    value = -int(digits) if text[:1] == "-" else int(digits)
    return value if INT64_MIN <= value <= INT64_MAX else None


def parse_float(text: str) -> float | None:
    """Go's `strconv.ParseFloat(text, 64)` for decimal text: the nearest float64 (Python rounds
    the same way), or `None` where Go returns an error, including a value too large for a float64
    (Go's ErrRange, where Python would give inf). Go also reads `inf`/`nan` and hex floats; the
    CRD patterns in front of every caller let none through, so they are `None` here."""
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None
