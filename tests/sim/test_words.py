"""What `gpucap simulate` says, read as a user reads it: words that fit the node they are about."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpucap.cli.main import app

WORDS = Path(__file__).parent / "scenarios" / "words"
runner = CliRunner()


def test_a_node_without_gpus_is_never_told_its_gpu_is_not_advertised() -> None:
    table = runner.invoke(app, ["simulate", str(WORDS / "cpu-late.yaml")])
    assert table.exit_code == 0, table.stderr
    assert "registered; not initialized by the end of the run" in table.stdout
    assert "advertised" not in table.stdout
    doc = json.loads(
        runner.invoke(app, ["simulate", str(WORDS / "cpu-late.yaml"), "-o", "json"]).stdout
    )
    (stuck,) = doc["summary"]["uninitializedAtEnd"]
    assert stuck["gpus"] == 0


def test_reasons_in_prose_are_words_and_the_json_keeps_karpenters_codes() -> None:
    from gpucap.sim.timeline import reason_words  # noqa: PLC0415

    assert [
        reason_words(r)
        for r in (
            "SpotInterruption",
            "launch_timeout",
            "insufficient_capacity",
            "AMINotFound",
            "EC2NodeClassNotReady",
            "already prose: kept",
        )
    ] == [
        "spot interruption",
        "launch timeout",
        "insufficient capacity",
        "AMI not found",
        "EC2 node class not ready",
        "already prose: kept",
    ]


def test_a_failed_launch_says_its_reason_once() -> None:
    from gpucap.sim.recorder import Event  # noqa: PLC0415
    from gpucap.sim.timeline import format_timeline  # noqa: PLC0415

    failed = Event(
        5.0,
        "LaunchFailed",
        {
            "nodeClaim": "gpu-1",
            "nodePool": "gpu",
            "reason": "LaunchFailed",
            "message": "LaunchFailed: UnauthorizedOperation: not allowed",
        },
    )
    assert format_timeline([failed]) == [
        "00:00:05 NodeClaim gpu-1 launch failed: UnauthorizedOperation: not allowed"
    ]
