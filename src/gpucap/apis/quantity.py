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

import re
from collections.abc import Mapping
from functools import total_ordering
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "MILLI_RESOURCES",
    "Quantity",
    "QuantityError",
    "base_units",
    "format_base_units",
    "format_resource_value",
    "parse_resource_value",
]

NANO = 10**9

# Kubernetes' grammar (apimachinery/pkg/api/resource/quantity.go): a signed decimal number, then
# one suffix: binary SI, decimal SI or a decimal exponent (matched with fullmatch).
_QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-])?(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]))?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
# decimal SI suffix -> power of ten
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# Resources whose natural unit is the milli-unit. Kubernetes itself only treats cpu this way.
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message says which and why."""


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _round_away(a: int, b: int) -> int:
    """a / b rounded away from zero, as Kubernetes rounds `Value()` and `MilliValue()`."""
    return _ceil_div(a, b) if a >= 0 else -_ceil_div(-a, b)


@total_ordering
class Quantity:
    """An exact resource amount, held as integer nano-units; immutable, hashable, ordered."""

    __slots__ = ("_nanos",)

    def __init__(self, nanos: int) -> None:
        object.__setattr__(self, "_nanos", int(nanos))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse a manifest value. Numbers are accepted as JSON/YAML numbers are by Kubernetes."""
        if isinstance(text, bool):
            raise QuantityError(f"{text!r} is not a quantity")
        if isinstance(text, int):
            return cls(text * NANO)
        if isinstance(text, float):
            # YAML floats (`0.5`) arrive as Python floats; repr gives the shortest exact decimal.
            text = repr(text)
        if not isinstance(text, str):
            raise QuantityError(f"{text!r} is not a quantity")
        # Kubernetes trims surrounding whitespace when it decodes a quantity from JSON/YAML.
        m = _QUANTITY_RE.fullmatch(text.strip())
        if m is None or (not m.group("int") and not m.group("frac")):
            raise QuantityError(f"{text!r} is not a valid quantity")
        digits = (m.group("int") or "") + (m.group("frac") or "")
        mantissa = int(digits or "0")
        exp10 = -len(m.group("frac") or "")
        multiplier = 1
        if m.group("bin"):
            multiplier = _BINARY[m.group("bin")]
        elif m.group("exp"):
            exp10 += int(m.group("exp")[1:])
        elif m.group("dec"):
            exp10 += _DECIMAL[m.group("dec")]
        # value = mantissa * multiplier * 10**exp10; in nanos: * 10**9, rounded up like Kubernetes.
        exp10 += 9
        if exp10 >= 0:
            nanos = mantissa * multiplier * 10**exp10
        else:
            nanos = _ceil_div(mantissa * multiplier, 10**-exp10)
        if m.group("sign") == "-":
            nanos = -nanos
        return cls(nanos)

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
            if isinstance(value, Quantity):
                return value
            try:
                return cls.parse(value)
            except QuantityError as err:
                raise PydanticCustomError("quantity", "{msg}", {"msg": str(err)}) from err

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
