"""Lint's rule vocabulary under its old name, for the callers outside `lint/` (`gpucap lint`'s
command and `scripts/gen_rules_doc.py`): `Finding`, `Rule` and the severities are
`lint/registry.py`'s, and `all_rules()` is `lint.rules.ALL` as a list. Code inside `lint/`
imports those two modules directly.
"""

from __future__ import annotations

from gpucap.lint.context import LintContext
from gpucap.lint.registry import SEVERITIES, Finding, Rule, Severity
from gpucap.lint.rules import ALL

__all__ = ["SEVERITIES", "Finding", "Rule", "Severity", "all_rules"]


def all_rules() -> list[Rule[LintContext]]:
    """Every rule, in id order (`lint.rules.ALL`)."""
    return list(ALL)
