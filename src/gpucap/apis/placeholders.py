"""`${VAR}` / `$VAR` placeholders in manifests, and their substitution (what envsubst does).

Unlike envsubst, which silently writes an empty string for an unset variable, `substitute`
reports every missing name so the caller can refuse to write a half-filled manifest (an
EC2NodeClass with `alias: al2023@` is exactly the mistake this prevents).
Called by the loader (warns about placeholders left in a manifest), `gpucap render` and
`gpucap demo`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PLACEHOLDER", "Substitution", "placeholders", "substitute"]

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True, slots=True)
class Substitution:
    text: str
    missing: tuple[str, ...]  # sorted, each once


def placeholders(text: str, *, braced_only: bool = False) -> list[str]:
    """Variable names referenced in `text`, in order of first appearance."""
    seen: dict[str, None] = {}
    for m in PLACEHOLDER.finditer(text):
        name = m.group(1) or ("" if braced_only else m.group(2))
        if name:
            seen.setdefault(name, None)
    return list(seen)


def substitute(text: str, values: Mapping[str, str]) -> Substitution:
    """Replace `${VAR}` and `$VAR` with `values[VAR]`; unknown names are kept and reported."""
    missing: set[str] = set()

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in values:
            return values[name]
        missing.add(name)
        return m.group(0)

    return Substitution(PLACEHOLDER.sub(repl, text), tuple(sorted(missing)))
