"""What a lint rule is, what it reports, and the registries that hold rules.

A `Rule` has a stable id (`GPU001`), a kebab-case name (`gpu-pool-without-device-plugin`), a
default severity, one line saying what it checks, why it matters, how to fix it and where the
practice comes from, and a `check` function over the whole input. A `Finding` is one problem at
one place: rule, severity, message, file, line, object and field path.

Each rule module owns a `Registry` (`RULES`) and registers its checks with `@RULES.rule(...)`;
`lint/rules/__init__.py` joins the modules' registries into the explicit `rules.ALL`, which the
lint runner, `gpucap lint --explain` and the rules-doc generator read. Nothing is registered
globally, so a test may build its own `Registry`.

This module is the bottom of `lint/`: it imports nothing of lint. The input a check reads is a
type parameter (`Rule[LintContext]` for the shipped rules) so that this module need not know
`lint/context.py`, which builds findings and so sits above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Generic, Literal, TypeVar

__all__ = ["SEVERITIES", "Check", "Finding", "Registry", "Rule", "Severity", "rule_sort_key"]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

# What a check reads: `LintContext` for every shipped rule (see the module docstring).
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    object_ref: str | None = None
    path: str = ""
    column: int | None = None

    def with_severity(self, severity: Severity) -> Finding:
        return replace(self, severity=severity)

    @property
    def location(self) -> str:
        if self.file is None:
            return "<input>"
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        where = f"{self.object_ref}: " if self.object_ref else ""
        return f"{self.location}: {self.rule} {self.severity} {where}{self.message}"


Check = Callable[[C], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class Rule(Generic[C]):
    id: str
    name: str
    severity: Severity
    summary: str  # what it checks, one line
    why: str
    fix: str
    source: str
    check: Check[C] = field(compare=False, repr=False)
    # The other severities the rule prints, each with the case it prints it in (docs/rules.md
    # and `--list-rules` state them; a test holds the findings to them).
    other: tuple[tuple[Severity, str], ...] = ()

    @property
    def severities(self) -> tuple[Severity, ...]:
        """Every severity the rule can print, the declared (default) one first."""
        return (self.severity, *(s for s, _ in self.other))

    @property
    def category(self) -> str:
        return self.id.rstrip("0123456789")


class Registry(Generic[C]):
    """Rules by id. A rule module fills its own with the `rule` decorator; `joined` merges the
    modules' registries into one (an id registered twice is a programming error)."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule[C]] = {}

    def add(self, rule: Rule[C]) -> None:
        if rule.id in self._rules:
            raise ValueError(f"rule {rule.id} registered twice")
        self._rules[rule.id] = rule

    def rule(
        self,
        id: str,
        name: str,
        severity: Severity,
        *,
        summary: str,
        why: str,
        fix: str,
        source: str,
        other: tuple[tuple[Severity, str], ...] = (),
    ) -> Callable[[Check[C]], Check[C]]:
        """Register a check as a rule (decorator); the function is returned unchanged. `other`:
        the severities it prints besides `severity`, each with its case."""

        def register(check: Check[C]) -> Check[C]:
            self.add(Rule(id, name, severity, summary, why, fix, source, check, other))
            return check

        return register

    @property
    def rules(self) -> tuple[Rule[C], ...]:
        """Every rule, in id order (by family, then number: NP2 before NP10)."""
        return tuple(self._rules[k] for k in sorted(self._rules, key=rule_sort_key))

    @classmethod
    def joined(cls, *registries: Registry[C]) -> Registry[C]:
        out: Registry[C] = cls()
        for registry in registries:
            for r in registry._rules.values():
                out.add(r)
        return out


def rule_sort_key(rule_id: str) -> tuple[str, int]:
    """`GPU010` sorts as ("GPU", 10): by family, then by number."""
    prefix = rule_id.rstrip("0123456789")
    number = rule_id[len(prefix) :]
    return (prefix, int(number) if number else 0)
