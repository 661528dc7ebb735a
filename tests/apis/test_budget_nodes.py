"""Disruption budget `nodes` as Karpenter reads it: a count, a percentage, or (unreadable) 0."""

from __future__ import annotations

import pytest

from gpucap.apis.nodepool import Budget


@pytest.mark.parametrize(
    ("nodes", "readable", "none_allowed"),
    [
        ("10%", True, False),
        ("1", True, False),
        ("0", True, True),
        ("00", True, True),  # strconv.Atoi reads 0
        ("0%", True, True),
        ("000%", True, True),
        ("9223372036854775807", True, False),
        # The CRD pattern [0-9]+ takes it, strconv.Atoi does not, and it is no percentage:
        # GetScaledValueFromIntOrPercent errors and Karpenter fails closed (0 disruptions).
        ("9223372036854775808", False, True),
        ("9" * 5000, False, True),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_budget_nodes_are_read_as_karpenter_reads_them(
    nodes: str, readable: bool, none_allowed: bool
) -> None:
    budget = Budget(nodes=nodes)
    assert budget.readable_nodes is readable
    assert budget.allows_no_disruption is none_allowed
