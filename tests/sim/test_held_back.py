"""`gpucap simulate` says why something did not happen, through the real entry point on the
minimal scenarios of tests/sim/held: Karpenter's DisruptionBlocked for a node its pods hold and
for a NodePool its budget holds, Unconsolidatable for a node with nothing cheaper (each once,
when it first appears), and the eviction a PodDisruptionBudget held during a drain, with how
long (kubernetes-sigs/karpenter `pkg/controllers/disruption/types.go: NewCandidate`,
`helpers.go: BuildDisruptionBudgetMapping`, `consolidation.go`, `terminator/eviction.go`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli import main as cli_main

HELD = Path(__file__).resolve().parent / "held"


def ok(args: list[str], capsys: Any, monkeypatch: Any) -> str:
    """The console script in-process: its stdout, after checking it exits 0 without a word on
    stderr."""
    monkeypatch.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    captured = capsys.readouterr()
    assert (exit_info.value.code or 0, captured.err) == (0, "")
    return captured.out


def _events(name: str, capsys: Any, monkeypatch: Any) -> list[dict[str, Any]]:
    doc = json.loads(
        ok(["simulate", str(HELD / f"{name}.yaml"), "-o", "json"], capsys, monkeypatch)
    )
    events: list[dict[str, Any]] = doc["events"]
    return events


def _timeline(name: str, capsys: Any, monkeypatch: Any) -> list[str]:
    return ok(["simulate", str(HELD / f"{name}.yaml")], capsys, monkeypatch).splitlines()


def _of(events: list[dict[str, Any]], kind: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and all(e.get(k) == v for k, v in match.items())]


def _pod_held(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The node-level DisruptionBlocked events of a pod's doing (not a node's ordinary life)."""
    return [
        e
        for e in _of(events, "DisruptionBlocked", nodeClaim="gpu-1")
        if e["message"].startswith(("Pdb", "Pod", "Eviction"))
    ]


def test_a_pdb_allowing_no_disruption_over_the_only_pod_blocks_its_underutilized_node(
    capsys: Any, monkeypatch: Any
) -> None:
    events = _events("pdb-zero", capsys, monkeypatch)
    (blocked,) = _pod_held(events)
    assert blocked["message"] == "Pdb prevents pod evictions"
    assert blocked["pdb"] == "default/sliced"
    assert blocked["node"] == "gpu-1"
    assert _of(events, "DisruptionDecision") == []
    lines = _timeline("pdb-zero", capsys, monkeypatch)
    assert any(
        "node gpu-1 cannot be disrupted: Pdb prevents pod evictions (default/sliced)" in line
        for line in lines
    )


def test_a_do_not_disrupt_pod_blocks_its_underutilized_node(capsys: Any, monkeypatch: Any) -> None:
    events = _events("do-not-disrupt", capsys, monkeypatch)
    (blocked,) = _pod_held(events)
    assert blocked["message"] == 'Pod has "karpenter.sh/do-not-disrupt" annotation'
    assert blocked["pod"] == "default/sliced-0"
    assert _of(events, "DisruptionDecision") == []


def test_a_budget_of_no_node_blocks_the_nodepool_for_the_reason_once(
    capsys: Any, monkeypatch: Any
) -> None:
    events = _events("budget-zero", capsys, monkeypatch)
    (blocked,) = _of(events, "DisruptionBlocked", nodePool="gpu")
    assert blocked["reason"] == "Underutilized"
    assert blocked["message"] == (
        "No allowed disruptions for disruption reason Underutilized due to blocking budget"
    )
    assert _of(events, "DisruptionDecision") == []
    lines = _timeline("budget-zero", capsys, monkeypatch)
    assert any(
        "NodePool gpu: no disruptions allowed for underutilized: its budget allows none" in line
        for line in lines
    )


def test_a_node_with_nothing_cheaper_is_said_unconsolidatable_once(
    capsys: Any, monkeypatch: Any
) -> None:
    events = _events("nothing-cheaper", capsys, monkeypatch)
    (said,) = _of(events, "Unconsolidatable", nodeClaim="gpu-1")
    assert said["message"] == "Can't replace with a cheaper node"
    assert _of(events, "DisruptionDecision") == []
    lines = _timeline("nothing-cheaper", capsys, monkeypatch)
    said_lines = [line for line in lines if "not consolidated" in line]
    assert said_lines == ["00:03:26 node gpu-1 not consolidated: Can't replace with a cheaper node"]


def test_an_eviction_a_pdb_holds_during_an_expiration_drain_is_told_with_its_duration(
    capsys: Any, monkeypatch: Any
) -> None:
    events = _events("pdb-expiring", capsys, monkeypatch)
    (held,) = _of(events, "EvictionBlocked")
    assert (held["pod"], held["node"], held["pdb"], held["maxUnavailable"]) == (
        "default/llm-1",
        "gpu-2",
        "default/llm",
        1,
    )
    assert held["evicted"] is True
    # Refused from the drain's start until the pod evicted first is back on a new node.
    (first,) = _of(events, "PodEvicted", pod="default/llm-0")
    (evicted,) = _of(events, "PodEvicted", pod="default/llm-1")
    assert held["since"] == first["t"]
    assert held["t"] == evicted["t"]
    assert held["for"] == round(evicted["t"] - first["t"], 3) > 60
    lines = _timeline("pdb-expiring", capsys, monkeypatch)
    assert any(
        line.endswith("eviction of default/llm-1 blocked by PDB llm (maxUnavailable 1) for 1m32s")
        for line in lines
    )


def test_a_node_is_said_blocked_even_when_no_nodepool_consolidates(
    capsys: Any, monkeypatch: Any
) -> None:
    """Karpenter builds candidates every pass whatever the methods find (`GetCandidates` ->
    `NewCandidate` publishes DisruptionBlocked): with consolidateAfter Never everywhere the
    simulator skips the passes, but still says what they would have held back."""
    events = _events("never-consolidates", capsys, monkeypatch)
    (blocked,) = _pod_held(events)
    assert blocked["message"] == 'Pod has "karpenter.sh/do-not-disrupt" annotation'
    assert blocked["pod"] == "default/sliced-0"


def test_consolidation_disabled_is_said_unconsolidatable_per_node_and_once_per_pool(
    capsys: Any, monkeypatch: Any
) -> None:
    """consolidation.go `ShouldDisrupt`: a candidate of a NodePool whose consolidateAfter is
    Never gets Unconsolidatable "NodePool "gpu" has consolidation disabled" (the node its
    do-not-disrupt pod holds is no candidate, so not it); the timeline tells the setting once
    for the NodePool."""
    events = _events("never-consolidates", capsys, monkeypatch)
    said = _of(events, "Unconsolidatable")
    assert [(e["nodeClaim"], e["message"]) for e in said] == [
        ("gpu-2", 'NodePool "gpu" has consolidation disabled')
    ]
    lines = _timeline("never-consolidates", capsys, monkeypatch)
    told = [line for line in lines if "never consolidated" in line]
    assert len(told) == 1
    assert "NodePool gpu: consolidateAfter is Never" in told[0]


def test_a_non_empty_node_of_a_when_empty_pool_is_said_unconsolidatable(
    capsys: Any, monkeypatch: Any
) -> None:
    """consolidation.go `ShouldDisrupt`: WhenEmpty pools only allow empty nodes to go."""
    events = _events("drift-no-room", capsys, monkeypatch)
    said = _of(events, "Unconsolidatable", nodeClaim="gpu-1")
    assert said[0]["message"] == (
        'NodePool "gpu" has consolidation policy WhenEmpty, but node is not empty'
    )


def test_a_drifted_node_whose_pods_cannot_move_is_held_with_the_schedulers_errors(
    capsys: Any, monkeypatch: Any
) -> None:
    """drift.go `ComputeCommands`: a drifted candidate whose pods would not all schedule is
    skipped with DisruptionBlocked naming each pod and its error
    (`NonPendingPodSchedulingErrors`); the node stays and no replacement is made."""
    events = _events("drift-no-room", capsys, monkeypatch)
    held = [
        e
        for e in _of(events, "DisruptionBlocked", nodeClaim="gpu-1")
        if e["message"].startswith("Not all pods would schedule")
    ]
    assert len(held) == 1
    assert held[0]["message"].startswith(
        'Not all pods would schedule, default/vllm-0 => nodepool "gpu": '
    )
    assert held[0]["t"] >= 1800
    assert _of(events, "DisruptionDecision") == []
    lines = _timeline("drift-no-room", capsys, monkeypatch)
    (line,) = [x for x in lines if "cannot be disrupted: Not all pods would schedule" in x]
    assert line == line.rstrip()
