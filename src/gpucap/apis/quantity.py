"""Kubernetes resource quantities as exact integers.

A `Quantity` is what a manifest writes for a resource amount (`500m`, `16Gi`, `1e3`, `0.5`). It is
parsed once, at the manifest boundary, into an exact integer count of nano-units, the finest
precision Kubernetes keeps (apimachinery `resource.Quantity` rounds anything finer *up* to 1n).
Everything downstream works on plain integers in base units:

- `cpu` in millicores (`Quantity.milli_value()`),
- every other resource (memory and ephemeral-storage in bytes, `pods`, `nvidia.com/gpu`, ...) in
  whole units (`Quantity.value()`),

both rounded up exactly as Kubernetes' `MilliValue()` / `Value()` round up. `base_units` does that
conversion for a whole resource list. Called by the manifest models (`apis/`), the scheduler and
the capacity model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import total_ordering
from typing import Annotated, Any

from pydantic import BeforeValidator, GetCoreSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "CRD_QUANTITY_PATTERN",
    "MAX_UNITS",
    "MILLI_RESOURCES",
    "CRDQuantity",
    "CRDResourceList",
    "Quantity",
    "QuantityError",
    "base_units",
    "format_base_units",
    "format_resource_value",
    "parse_resource_value",
]

NANO = 10**9

# The largest magnitude gpucap accepts, in whole units: Go's math.MaxInt64. It is the range of
# Kubernetes' int64 accessors (`Value()`), the cap its parser puts on binary-suffixed values
# (`maxAllowed` in apimachinery `pkg/api/resource/math.go`), and what every component that reads
# a request as a number (kube-scheduler, kubelet) can hold. Larger decimal values Kubernetes keeps
# as an `inf.Dec` (or an int64 with a huge scale) that those accessors cannot return; gpucap
# rejects them instead of modelling a value no component reads faithfully (docs/design/apis.md).
MAX_UNITS = 2**63 - 1
_MAX_NANOS = MAX_UNITS * NANO
# A decimal exponent is an int32 in Kubernetes (`Scale`); wider ones are rejected (kubernetes PR
# #141203) rather than truncated as older releases did.
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
# log10(2), to place a binary-suffixed value's order of magnitude without computing it.
_LOG10_2 = 0.30103

# Kubernetes' scanner (apimachinery `parseQuantityString`), ASCII digits only: a sign, digits,
# an optional fraction, then suffix letters, an optional sign and digits. Which suffixes exist
# is decided afterwards, as Kubernetes does.
# The scanner never gives a character back: the suffix's digits follow a suffix letter or sign
# (the mantissa took every digit before them), written so that a run of digits has one split
# only; `[0-9]*...[0-9]*` against 100,000 digits and a stray letter would backtrack
# quadratically (minutes). Possessive quantifiers would say it shorter, from Python 3.11 on.
_SCAN = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>(?:(?:[eEinumkKMGTP]+[+-]?|[+-])[0-9]*)?)"
)
_EXPONENT = re.compile(r"[+-]?[0-9]+")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_BINARY_BITS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# decimal SI suffix -> power of ten
_DECIMAL = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Go's `strings.TrimSpace` (unicode.IsSpace), which Kubernetes applies before parsing.
_GO_SPACE = (
    " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# Resources whose natural unit is the milli-unit. Kubernetes itself only treats cpu this way.
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message says which and why."""


_TOO_LARGE = f"larger than {MAX_UNITS} (2^63-1, the int64 range of Kubernetes' quantities)"


def _show(text: str) -> str:
    """The input for an error message, shortened: a hostile value may be megabytes long."""
    return repr(text) if len(text) <= 200 else f"{text[:100]!r}... ({len(text)} characters)"


def _show_int(n: int) -> str:
    return str(n) if n.bit_length() <= 256 else f"an integer of {n.bit_length()} bits"


def _parse_nanos(text: str) -> int:
    """Nano-units of a quantity string (see `Quantity.parse`)."""
    # Kubernetes trims surrounding whitespace when it decodes a quantity from JSON/YAML.
    s = text.strip(_GO_SPACE)
    if s == "0":
        return 0
    m = _SCAN.fullmatch(s)
    if not s or m is None:
        raise QuantityError(f"{_show(text)} is not a valid quantity")
    exp10, bits = _suffix(text, m.group("suffix"))
    int_part, frac = m.group("int"), m.group("frac") or ""
    if not int_part and not frac:
        return _digitless(text, exp10, bits)
    # value = digits * 10**exp10 * 2**bits, with no leading or trailing zeros in digits
    digits = (int_part + frac).lstrip("0")
    significant = digits.rstrip("0")
    exp10 += len(digits) - len(significant) - len(frac)
    if not significant:
        return 0
    # 10**(order - 1) <= value < 10**order, in whole units
    order = len(significant) + exp10 + bits * _LOG10_2
    if order - 1 > 19.5:  # at least 10**19.5 > 2**63
        nanos = _MAX_NANOS + 1
    elif order < -9.5:  # below 1n: Kubernetes rounds any non-zero value up to 1n
        nanos = 1
    else:
        nanos = _magnitude_nanos(significant, exp10, bits)
    if nanos > _MAX_NANOS:
        if not bits:
            raise QuantityError(f"{_show(text)} is {_TOO_LARGE}")
        nanos = _MAX_NANOS  # Kubernetes caps a binary-suffixed value there, silently
    return -nanos if m.group("sign") == "-" else nanos


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _round_away(a: int, b: int) -> int:
    """a / b rounded away from zero, as Kubernetes rounds `Value()` and `MilliValue()`."""
    return _ceil_div(a, b) if a >= 0 else -_ceil_div(-a, b)


def _suffix(text: str, suffix: str) -> tuple[int, int]:
    """(power of ten, power of two) of a quantity suffix, or QuantityError (Kubernetes'
    `ErrSuffix`). An exponent is checked against int32 on its digits, before any arithmetic."""
    if suffix in _DECIMAL:
        return _DECIMAL[suffix], 0
    if suffix in _BINARY_BITS:
        return 0, _BINARY_BITS[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix[1:]):
        digits = suffix[1:].lstrip("+-").lstrip("0") or "0"
        # Go's ParseInt takes at most 19 digits for an int64; anything wider is out of int32.
        if len(digits) <= 10:
            exponent = -int(digits) if suffix[1] == "-" else int(digits)
            if _INT32_MIN <= exponent <= _INT32_MAX:
                return exponent, 0
        raise QuantityError(
            f"{_show(text)} is not a valid quantity: "
            "the exponent is outside -2147483648..2147483647 (int32)"
        )
    raise QuantityError(f"{_show(text)} is not a valid quantity: unknown suffix {_show(suffix)}")


def _digitless(text: str, exp10: int, bits: int) -> int:
    """Nanos of a quantity with no digits at all (`-`, `.`, `Ki`, `e5`): Kubernetes' parser
    reads these as 0 on its int64 fast path and rejects them on its `inf.Dec` path (no digits to
    read). The fast path is taken for a decimal scale of at least -9 and, for a binary suffix,
    while `15 - 1 - exponent*3/10 - 1 >= 0` (Ki..Ti)."""
    # binary: 13 - bits*3/10 >= 0 holds up to Ti (40 bits)
    fast = bits <= 40 if bits else exp10 >= -9
    if not fast:
        raise QuantityError(f"{_show(text)} is not a valid quantity: no digits")
    return 0


def _magnitude_nanos(digits: str, exp10: int, bits: int) -> int:
    """ceil(digits * 10**exp10 * 2**bits * 10**9) for a value whose order of magnitude the
    caller has bounded: `digits` has no leading or trailing zeros and `len(digits) + exp10` is
    within a few dozen of zero, so the integer part is short and the remaining digits only
    decide whether to round up. Linear in len(digits); never raises a power of the exponent."""
    shift = exp10 + 9  # the value is digits * 2**bits * 10**shift nanos
    if shift >= 0:
        scale: int = 10**shift
        return (int(digits) << bits) * scale
    m = -shift
    if m < bits:  # short: len(digits) = cut + m with m < 60
        fives: int = 5**m
        whole, rest = divmod(int(digits) << (bits - m), fives)
        return whole + (1 if rest else 0)
    # digits * 2**bits / 10**m = (digits / 10**(m - bits)) / 5**bits: split off the last
    # m - bits digits as a fraction that can only round up.
    cut = len(digits) - (m - bits)
    head, tail = digits[: max(cut, 0)], digits[max(cut, 0) :]
    divisor: int = 5**bits
    whole, rest = divmod(int(head or "0"), divisor)
    return whole + (1 if rest or tail.strip("0") else 0)


# Quantities parsed from manifest strings by the model validator, at most this many (an input
# of distinct values should not grow the memo without bound).
_PARSED_LIMIT = 4096
_PARSED: dict[str, Quantity] = {}


@total_ordering
class Quantity:
    """An exact resource amount, held as integer nano-units; immutable, hashable, ordered."""

    __slots__ = ("_nanos",)

    def __init__(self, nanos: int) -> None:
        object.__setattr__(self, "_nanos", int(nanos))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[type[Quantity], tuple[int]]:
        # Rebuilt through __init__ (pickle would set the slot, which __setattr__ refuses): a
        # loaded scenario's manifests hold quantities, and go pickled to a Ray engine (issue 26).
        return (Quantity, (self.nanos,))

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse a manifest value. Numbers are accepted as JSON/YAML numbers are by Kubernetes.

        Accepts what Kubernetes' `ParseQuantity` accepts, with the value it gives, within
        |value| <= `MAX_UNITS`; raises `QuantityError` otherwise. The work is linear in the
        length of the text: exponents are range-checked on their digits and the order of
        magnitude is placed before any arithmetic, so no power of a written exponent is computed.
        """
        if isinstance(text, bool):
            raise QuantityError(f"{text!r} is not a quantity")
        if isinstance(text, int):
            if abs(text) > MAX_UNITS:
                raise QuantityError(f"{_show_int(text)} is {_TOO_LARGE}")
            return cls(text * NANO)
        if isinstance(text, float):
            if not math.isfinite(text):  # YAML's .inf/.nan, or a number past a float64
                raise QuantityError(f"{text!r} (not a finite number) is not a quantity")
            # YAML floats (`0.5`) arrive as Python floats; repr gives the shortest exact decimal.
            text = repr(text)
        if not isinstance(text, str):
            raise QuantityError(f"{text!r} is not a quantity")
        return cls(_parse_nanos(text))

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        return cls(milli * 10**6)

    @classmethod
    def from_value(cls, value: int) -> Quantity:
        return cls(value * NANO)

    # ----- access -------------------------------------------------------------------------
    @property
    def nanos(self) -> int:
        nanos: int = object.__getattribute__(self, "_nanos")
        return nanos

    def value(self) -> int:
        """Whole units, rounded away from zero (Kubernetes `Quantity.Value()`)."""
        return _round_away(self.nanos, NANO)

    def milli_value(self) -> int:
        """Milli-units, rounded away from zero (Kubernetes `Quantity.MilliValue()`)."""
        return _round_away(self.nanos, 10**6)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def is_integer(self) -> bool:
        return self.nanos % NANO == 0

    # ----- canonical text -----------------------------------------------------------------
    def __str__(self) -> str:
        return _format_nanos(self.nanos)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    # ----- value semantics ----------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.nanos == self.nanos

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    # ----- pydantic integration -------------------------------------------------------------
    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: Any) -> Quantity:
            if type(value) is str:
                # Manifests repeat the same few quantities ("100m", "1Gi") on every pod, and a
                # Quantity is immutable: one parse per distinct text.
                known = _PARSED.get(value)
                if known is not None:
                    return known
            elif isinstance(value, Quantity):
                return value
            try:
                parsed = cls.parse(value)
            except QuantityError as err:
                raise PydanticCustomError("quantity", "{msg}", {"msg": str(err)}) from err
            if type(value) is str and len(_PARSED) < _PARSED_LIMIT:
                _PARSED[value] = parsed
            return parsed

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )


def _format_nanos(nanos: int) -> str:
    """Shortest canonical suffix form that parses back to exactly `nanos`."""
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n == 0:
        return "0"
    if n % NANO == 0:
        return sign + _format_whole(n // NANO)
    for suffix, scale in (("m", 10**6), ("u", 10**3), ("n", 1)):
        if n % scale == 0:
            return f"{sign}{n // scale}{suffix}"
    raise AssertionError("unreachable: every integer is a multiple of 1")


def _format_whole(v: int) -> str:
    # The shortest of the binary-suffixed, decimal-suffixed and plain forms; binary wins ties
    # because memory is almost always written in Mi/Gi.
    candidates = [str(v)]
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        if v % _BINARY[suffix] == 0:
            candidates.insert(0, f"{v // _BINARY[suffix]}{suffix}")
            break
    for suffix in ("E", "P", "T", "G", "M", "k"):
        scale = 10 ** _DECIMAL[suffix]
        if v % scale == 0:
            candidates.append(f"{v // scale}{suffix}")
            break
    return min(candidates, key=len)


def parse_resource_value(resource: str, text: str | int | float) -> int:
    """A manifest value for `resource` in base units (cpu: millicores; others: whole units)."""
    q = Quantity.parse(text)
    return q.milli_value() if resource in MILLI_RESOURCES else q.value()


def format_resource_value(resource: str, value: int) -> str:
    """Inverse of `parse_resource_value`: base units back to canonical quantity text."""
    if resource in MILLI_RESOURCES:
        return str(Quantity.from_milli(value))
    return str(Quantity.from_value(value))


def base_units(resources: Mapping[str, Quantity]) -> dict[str, int]:
    """A resource list in base units, the form the scheduler and capacity model compute with."""
    return {
        name: (q.milli_value() if name in MILLI_RESOURCES else q.value())
        for name, q in resources.items()
    }


def format_base_units(resources: Mapping[str, int]) -> dict[str, str]:
    """A base-unit resource list as canonical quantity strings, sorted by name (for output)."""
    return {name: format_resource_value(name, resources[name]) for name in sorted(resources)}


# controller-gen's pattern for a `resource.Quantity` field of a CRD (Karpenter's NodePool
# `limits`, NodeClaim `resources.requests` and `status`, NodeOverlay `capacity`; aws
# `hack/validation/kubelet.sh` adds it to the EC2NodeClass reserved maps). The API server checks
# it on a string before Karpenter parses it; unlike the parser it wants digits, so `-`, `.` and
# `Ki`, which Kubernetes' parser reads as 0, are rejected in these fields. Use with `fullmatch`.
CRD_QUANTITY_PATTERN = re.compile(
    r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?"
)


def _crd_pattern(value: Any) -> Any:
    if isinstance(value, str) and not CRD_QUANTITY_PATTERN.fullmatch(value):
        raise PydanticCustomError(
            "quantity", "{msg}", {"msg": f"{_show(value)} is not a valid quantity"}
        )
    return value


# A quantity in a Karpenter CRD: the CRD's pattern, then Kubernetes' parser.
CRDQuantity = Annotated[Quantity, BeforeValidator(_crd_pattern)]
CRDResourceList = dict[str, CRDQuantity]
