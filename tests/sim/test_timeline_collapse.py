"""Repeated timeline lines are told once with a count and a span (`sim/timeline.py`
`collapse`): a bad day's thousands of launch failures are one line, in the terminal, `--watch`
and the report, while the JSON keeps every event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.sim.timeline import COLLAPSE_WINDOW, TimelineLine, collapse

GOOD = Path(__file__).parent / "scenarios" / "good"


def _failed(t: float, n: int) -> TimelineLine:
    return TimelineLine(t, f"NodeClaim cpu-{n} launch failed: no capacity", "LaunchFailed")


def test_three_lines_of_one_series_are_one_line_with_count_and_span() -> None:
    lines = [_failed(1, 1), _failed(11, 2), _failed(21, 3)]
    assert collapse(lines) == [
        TimelineLine(
            1,
            "NodeClaim cpu-N launch failed ×3 between 00:00:01 and 00:00:21: no capacity",
            "LaunchFailed",
        )
    ]


@pytest.mark.parametrize(
    "lines",
    [
        [_failed(1, 1), _failed(11, 2)],  # two are not a run
        [_failed(1, 1), _failed(2, 2), _failed(3 + COLLAPSE_WINDOW, 3)],  # too far apart
        [  # different words
            _failed(1, 1),
            TimelineLine(2, "NodeClaim cpu-2 launch failed: quota", "LaunchFailed"),
            _failed(3, 3),
        ],
        [  # the same words, told by different events
            _failed(1, 1),
            TimelineLine(2, "NodeClaim cpu-2 launch failed: no capacity", "Other"),
            _failed(3, 3),
        ],
    ],
    ids=["two", "far-apart", "other-words", "other-type"],
)
def test_lines_that_are_not_a_run_of_three_stay_as_they_are(lines: list[TimelineLine]) -> None:
    assert collapse(lines) == lines


def test_a_collapsed_line_takes_the_first_ones_place_among_the_others() -> None:
    other = TimelineLine(5, "pod default/a ready after 5s", "PodReady")
    lines = [_failed(1, 1), other, _failed(11, 2), _failed(21, 3)]
    assert [line.t for line in collapse(lines)] == [1, 5]


def test_the_same_line_repeated_keeps_its_names_and_says_at_for_one_instant() -> None:
    line = TimelineLine(7, "pod default/web-0 cannot be scheduled: limit", "PodUnschedulable")
    assert collapse([line] * 4)[0].text == (
        "pod default/web-0 cannot be scheduled ×4 at 00:00:07: limit"
    )


def test_zones_and_versions_are_not_series_indexes() -> None:
    lines = [
        TimelineLine(t, f"spot g5.xlarge in us-east-1{z} unavailable", "OfferingUnavailable")
        for t, z in ((1, "a"), (2, "b"), (3, "c"))
    ]
    assert collapse(lines) == lines


def test_a_two_hour_outage_is_a_handful_of_lines_and_the_json_keeps_every_event(
    tmp_path: Path,
) -> None:
    for name in ("nodeclass.yaml", "nodepool.yaml", "vllm.yaml"):
        (tmp_path / name).write_text((GOOD / name).read_text())
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: storm}\nspec:\n"
        "  duration: 3h\n  manifests: [nodeclass.yaml, nodepool.yaml]\n"
        "  addons: [{name: nvidia-device-plugin}]\n  events:\n"
        "    - {at: 1m, capacity: {instanceFamily: g5, available: false, for: 2h}}\n"
        "    - {at: 1m, capacity: {instanceFamily: g6, available: false, for: 2h}}\n"
        "    - {at: 5m, apply: {file: vllm.yaml}}\n"
    )
    runner = CliRunner()
    table = runner.invoke(app, ["simulate", str(scenario)]).stdout
    timeline = table[: table.index("Simulated ")].strip().splitlines()[1:]
    assert len(timeline) < 20
    assert any("cannot be scheduled ×37 between 00:05:31 and 01:59:31" in x for x in timeline)
    events = json.loads(runner.invoke(app, ["simulate", str(scenario), "-o", "json"]).stdout)
    assert sum(e["type"] == "PodUnschedulable" for e in events["events"]) >= 37
