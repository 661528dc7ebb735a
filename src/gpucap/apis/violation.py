"""A validation rule's finding: the field path and the message (`apis/validation.py` and
`apis/podvalidation.py` yield them; `apis/serde.py` attaches file, document and object)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["INT32_MAX", "Found", "Path", "Violation"]

# The largest int32: Kubernetes' bound on replica counts and their products.
INT32_MAX = 2**31 - 1

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where (the field path from the object's root) and why."""

    path: Path
    message: str
    severity: Literal["error", "warning"] = "error"
    rule: str | None = None


Found = Iterator[Violation]
