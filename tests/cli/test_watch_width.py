"""`--watch` fits the terminal: columns that do not fit are dropped (the least needed first),
timeline lines wrap at words, never a word cut; the pending pods are named."""

from __future__ import annotations

import pytest

from gpucap.cli.simulate_render import NodeRow, fit_lines, format_watch

ROWS = [
    NodeRow("gpu-1", "g6e.48xlarge", "on-demand", "us-east-1a", 3600.0, "Ready", 8, 8),
    NodeRow("gpu-2", "g6e.24xlarge", "spot", "us-east-1b", 60.0, "Registered", 0, 0),
]


def _words(lines: list[str]) -> set[str]:
    return {w for line in lines for w in line.split()}


@pytest.mark.parametrize("width", [100, 80, 60, 40, 30])
def test_the_watch_table_fits_the_width_by_dropping_whole_columns(width: int) -> None:
    wide = format_watch(3600, ROWS, pending=0, cost=1.0)
    narrow = format_watch(3600, ROWS, pending=0, cost=1.0, width=width)
    table = narrow[1:]
    assert all(len(line) <= width for line in table) or table[0].split() == ["NAME", "STATUS"]
    assert _words(table) <= _words(wide)  # nothing cut: every word is a whole word of the wide pane
    assert table[0].startswith("NAME")
    assert "STATUS" in table[0]


def test_age_goes_first_and_name_and_status_stay() -> None:
    narrow = format_watch(3600, ROWS, pending=0, cost=1.0, width=70)
    assert "AGE" not in narrow[1]
    assert narrow[1].split()[0] == "NAME"
    assert "STATUS" in narrow[1]


def test_the_pending_pods_are_named_as_many_as_fit() -> None:
    names = [f"default/vllm-{i}" for i in range(20)]
    lines = format_watch(60, [], pending=names, cost=0.0, width=60)
    assert lines[0].startswith("00:01:00  0 nodes  20 pods pending")
    assert lines[1].startswith("pending: default/vllm-0, default/vllm-1")
    assert lines[1].endswith("more")
    assert len(lines[1]) <= 60


def test_timeline_lines_wrap_at_words_under_the_time() -> None:
    line = "00:05:01 spot g5.xlarge in us-east-1a, us-east-1b unavailable (gpu-2 not launched)"
    wrapped = fit_lines([line], 40)
    assert all(len(x) <= 40 for x in wrapped)
    assert " ".join(x.strip() for x in wrapped) == line
    assert all(x.startswith(" " * 9) for x in wrapped[1:])
