"""What a lint rule is and what it reports.

A `Rule` has a stable id (`GPU001`), a kebab-case name (`gpu-pool-without-device-plugin`), a
default severity, one line saying what it checks, why it matters, how to fix it and where the
practice comes from, and a `check` function over the whole input (`LintContext`). A `Finding`
is one problem at one place: rule, severity, message, file, line, object and field path.
Rules are registered with `@rule(...)` in the modules of `lint/rules/` and listed by
`all_rules()`. Called by the lint runner, `gpucap lint --explain` and the rules-doc generator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gpucap.lint.context import LintContext

__all__ = ["SEVERITIES", "Finding", "Rule", "Severity", "all_rules", "rule"]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


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


Check = Callable[["LintContext"], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    name: str
    severity: Severity
    summary: str  # what it checks, one line
    why: str
    fix: str
    source: str
    check: Check = field(compare=False, repr=False)

    @property
    def category(self) -> str:
        return self.id.rstrip("0123456789")


_RULES: dict[str, Rule] = {}


def rule(
    id: str,
    name: str,
    severity: Severity,
    *,
    summary: str,
    why: str,
    fix: str,
    source: str,
) -> Callable[[Check], Check]:
    """Register a check as a rule (decorator)."""

    def register(check: Check) -> Check:
        if id in _RULES:
            raise ValueError(f"rule {id} registered twice")
        _RULES[id] = Rule(id, name, severity, summary, why, fix, source, check)
        return check

    return register


def all_rules() -> list[Rule]:
    """Every registered rule, in id order (importing the rule modules registers them)."""
    import gpucap.lint.rules  # noqa: F401, PLC0415 - registration happens on import

    return [_RULES[k] for k in sorted(_RULES, key=_rule_sort_key)]


def _rule_sort_key(rule_id: str) -> tuple[str, int]:
    prefix = rule_id.rstrip("0123456789")
    number = rule_id[len(prefix) :]
    return (prefix, int(number) if number else 0)
