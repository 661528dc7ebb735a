"""The lint rules, one module per family, and `ALL`: every rule, in id order.

Each module registers its rules in its own `RULES` registry (`lint/registry.py`) and imports no
other rule module (an import-linter contract): what several families share is in
`lint/queries.py`. Read by the lint runner, `gpucap lint --explain` and the rules-doc generator.
"""

from gpucap.lint.context import LintContext
from gpucap.lint.registry import Registry, Rule

from . import (
    ami,
    disruption,
    gpu,
    limits,
    nodepool,
    pods,
    reservations,
    schema,
    sharing,
    spot,
    storage,
)

__all__ = [
    "ALL",
    "ami",
    "disruption",
    "gpu",
    "limits",
    "nodepool",
    "pods",
    "reservations",
    "schema",
    "sharing",
    "spot",
    "storage",
]

ALL: tuple[Rule[LintContext], ...] = Registry.joined(
    ami.RULES,
    disruption.RULES,
    gpu.RULES,
    limits.RULES,
    nodepool.RULES,
    pods.RULES,
    reservations.RULES,
    schema.RULES,
    sharing.RULES,
    spot.RULES,
    storage.RULES,
).rules
