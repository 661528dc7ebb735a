"""Pods another Karpenter serves, in the simulator: a pod that a NodePool of EKS Auto Mode or of
Karpenter's KWOK provider would take gets one `PodNotPlanned` event (not `PodUnschedulable`), is
not pending at the end, and the summary lists it under `notPlanned` (the text: "Not simulated,
another Karpenter serves them"). A pod that no such pool takes is pending as before, and a
summary without such pods has no `notPlanned` key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpucap.cli.simulate_render import format_summary, format_timeline
from gpucap.sim.world import SimulationResult
from tests.builders import GPU_TOLERATION, edit, nodepool, pod, to_yaml
from tests.sim.readiness_stories import of_type, story

REF = "spec.template.spec.nodeClassRef"


def unmanaged(group: str, kind: str) -> dict[str, Any]:
    doc = edit(nodepool("other"), REF, {"group": group, "kind": kind, "name": "default"})
    if group != "eks.amazonaws.com":  # an untainted KWOK pool without requirements
        doc = edit(doc, "spec.template.spec.taints", [])
        return edit(doc, "spec.template.spec.requirements", [])
    reqs = [{"key": "eks.amazonaws.com/instance-category", "operator": "In", "values": ["g"]}]
    return edit(doc, "spec.template.spec.requirements", reqs)  # tainted nvidia.com/gpu


def run(tmp_path: Path, pool: dict[str, Any], *pods: dict[str, Any]) -> SimulationResult:
    return story(
        tmp_path,
        ["pool.yaml"],
        events=[{"at": "1m", "apply": {"file": "pods.yaml"}}],
        **{"pool.yaml": to_yaml(pool), "pods.yaml": to_yaml(*pods)},
    )


TRAINER = pod("trainer", gpu=1, tolerations=[GPU_TOLERATION])


def test_a_pod_an_auto_mode_pool_takes_is_not_planned_once_and_not_pending(tmp_path: Path) -> None:
    result = run(tmp_path, unmanaged("eks.amazonaws.com", "NodeClass"), TRAINER)
    (event,) = of_type(result, "PodNotPlanned")
    assert event.get("pod") == "default/trainer"
    assert event.get("servedBy") == "EKS Auto Mode"
    assert event.get("reason") == "served by EKS Auto Mode (NodePool other), not planned"
    assert of_type(result, "PodUnschedulable") == []
    assert result.summary["pendingAtEnd"] == []
    assert [p["pod"] for p in result.summary["notPlanned"]] == ["default/trainer"]


def test_the_summary_and_timeline_text_say_who_serves_it(tmp_path: Path) -> None:
    result = run(tmp_path, unmanaged("eks.amazonaws.com", "NodeClass"), TRAINER)
    summary = format_summary(result.summary)
    at = summary.index("Not simulated, another Karpenter serves them (1):")
    assert summary[at + 1].endswith(": served by EKS Auto Mode (NodePool other), not planned")
    assert "Pending at the end: none" in summary
    assert any(
        line.endswith(
            "pod default/trainer not simulated: served by EKS Auto Mode (NodePool "
            "other), not planned"
        )
        for line in format_timeline(result.events)
    )


def test_a_pod_a_kwok_pool_takes_is_the_kwok_providers(tmp_path: Path) -> None:
    result = run(tmp_path, unmanaged("karpenter.kwok.sh", "KWOKNodeClass"), pod("web"))
    (event,) = of_type(result, "PodNotPlanned")
    assert event.get("servedBy") == "the KWOK provider"
    assert result.summary["pendingAtEnd"] == []


def test_a_pod_no_such_pool_takes_stays_pending(tmp_path: Path) -> None:
    # The Auto Mode pool is tainted nvidia.com/gpu; the web pod does not tolerate it.
    result = run(tmp_path, unmanaged("eks.amazonaws.com", "NodeClass"), pod("web"))
    assert of_type(result, "PodNotPlanned") == []
    assert [p["pod"] for p in result.summary["pendingAtEnd"]] == ["default/web"]
    assert "notPlanned" not in result.summary
