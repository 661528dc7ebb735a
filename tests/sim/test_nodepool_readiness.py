"""NodePool readiness in the simulator, `plan` and `lint` (issue 20, "AMIs and node classes that
cannot be resolved"): a release has all its variants; a NodePool whose EC2NodeClass resolves no
AMI, or is missing, is announced not Ready once and the provisioner ignores it; the summary
counts the pods that never became Ready. Minimal scenarios written next to copies of the
stories' manifests (tests/sim/stories/)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.serde import load_text
from gpucap.cli.simulate_render import format_summary, format_timeline
from gpucap.cloudprovider.aws.amifamily.releases import bundled_releases
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run
from gpucap.operator.plan import plan
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import SimulationResult, World
from tests.builders import edit, nodeclass, nodepool, to_yaml
from tests.sim.readiness_stories import (
    BAD_CLASS,
    CPU_POOL,
    STORIES,
    _catalog,
    of_type,
    story,
)


def test_a_cpu_nodepool_on_the_workshops_pinned_release_launches(tmp_path: Path) -> None:
    result = story(
        tmp_path,
        ["nodeclass.yaml", "cpu.yaml", "web.yaml"],
        duration="10m",
        **{"cpu.yaml": CPU_POOL.replace("CLASS", "gpu")},
    )
    assert of_type(result, "LaunchFailed") == []
    assert len(of_type(result, "NodeClaimLaunched", nodePool="cpu")) == 1
    (resolved,) = of_type(result, "AMIResolved")
    assert resolved.get("version") == "v20260827"
    assert of_type(result, "PodReady", pod="default/web")
    assert of_type(result, "NodePoolNotReady") == []


# ---- an alias that really cannot resolve --------------------------------------------------------
def test_a_nodepool_whose_alias_resolves_nothing_is_not_ready_once_and_gets_no_nodeclaim(
    tmp_path: Path,
) -> None:
    result = story(
        tmp_path,
        ["old.yaml", "cpu.yaml", "web.yaml"],
        events=[{"at": "10m", "apply": {"file": "web2.yaml"}}],
        **{
            "old.yaml": BAD_CLASS,
            "cpu.yaml": CPU_POOL.replace("CLASS", "gpu"),
            "web2.yaml": (STORIES / "web.yaml").read_text().replace("name: web,", "name: web2,"),
        },
    )
    (not_ready,) = of_type(result, "NodePoolNotReady")
    assert (not_ready.get("nodePool"), not_ready.get("nodeClass")) == ("cpu", "gpu")
    assert not_ready.get("reason") == "NodeClassReadinessUnknown"
    message = not_ready.get("message")
    assert "AMIsReady Unknown, failed to discover any AMIs for alias al2023@v20250101" in message
    assert "al2023 releases gpucap knows for Kubernetes 1.36: v20260827, v20260714" in message
    # The provisioner ignores the pool: no NodeClaim, no failed launch, batch after batch.
    assert of_type(result, "NodeClaimCreated") == []
    assert of_type(result, "LaunchFailed") == []
    pending = [p["pod"] for p in result.summary["pendingAtEnd"]]
    assert pending == ["default/web", "default/web2"]
    lines = format_timeline(result.events)
    assert any(
        "NodePool cpu is not Ready (node class readiness unknown): EC2NodeClass gpu: AMIsReady Unknown"
        in line
        and line.endswith("Karpenter ignores it, so its pods get no NodeClaim")
        for line in lines
    )


def test_a_pod_only_a_not_ready_nodepool_could_take_waits_with_a_reason_naming_it(
    tmp_path: Path,
) -> None:
    result = story(
        tmp_path,
        ["old.yaml", "cpu.yaml", "web.yaml"],
        duration="5m",
        **{"old.yaml": BAD_CLASS, "cpu.yaml": CPU_POOL.replace("CLASS", "gpu")},
    )
    (pending,) = result.summary["pendingAtEnd"]
    assert 'nodepool "cpu": not ready, EC2NodeClass gpu: AMIsReady Unknown' in pending["reason"]


# ---- a NodePool whose EC2NodeClass is not in the input ------------------------------------------
def typo_story(tmp_path: Path, events: list[Any]) -> SimulationResult:
    typo = (STORIES / "nodepool.yaml").read_text().replace("name: gpu}", "name: gpus}")
    assert "name: gpus}" in typo
    return story(
        tmp_path,
        ["nodeclass.yaml", "typo.yaml", "device-plugin.yaml", "vllm.yaml"],
        events=events,
        **{"typo.yaml": typo},
    )


def test_a_nodepool_naming_a_missing_class_is_not_ready_and_its_pods_never_ready_are_counted(
    tmp_path: Path,
) -> None:
    scale = {"kind": "Deployment", "name": "vllm", "namespace": "default", "replicas": 0}
    result = typo_story(tmp_path, [{"at": "20m", "scale": scale}])
    (not_ready,) = of_type(result, "NodePoolNotReady")
    assert (not_ready.get("nodePool"), not_ready.get("reason")) == ("gpu", "NodeClassNotFound")
    assert not_ready.get("message") == "EC2NodeClass gpus not found (did you mean gpu?)"
    assert of_type(result, "NodeClaimCreated") == []
    s = result.summary
    assert s["pendingAtEnd"] == []  # scaled to 0: nothing pending at the end...
    assert s["pods"]["neverReady"] == 1  # ...but the pod never ran
    (deleted,) = s["deletedBeforeReady"]
    assert (deleted["pod"], deleted["created"], deleted["deleted"]) == (
        "default/vllm-0",
        0.0,
        1200.0,
    )
    lines = format_summary(s)
    assert "Pending at the end: none" in lines
    assert "Never Ready: 1 of 1 pod created (1 deleted before they were Ready)" in lines
    assert any(
        line.startswith("  default/vllm-0 (created 00:00:00, deleted 00:20:00): ") for line in lines
    )


def test_a_nodepool_whose_missing_class_is_applied_is_ready_again_and_launches(
    tmp_path: Path,
) -> None:
    late = (STORIES / "nodeclass.yaml").read_text().replace("name: gpu\n", "name: gpus\n")
    assert "name: gpus\n" in late
    (tmp_path / "story").mkdir(parents=True)
    shutil.copytree(STORIES, tmp_path / "story", dirs_exist_ok=True)
    (tmp_path / "story" / "late.yaml").write_text(late)
    result = typo_story(tmp_path, [{"at": "5m", "apply": {"file": "late.yaml"}}])
    (not_ready,) = of_type(result, "NodePoolNotReady")
    (ready,) = of_type(result, "NodePoolReady", nodePool="gpu")
    assert not_ready.t < 300.0 <= ready.t
    (launch,) = of_type(result, "NodeClaimLaunched")
    assert launch.t >= ready.t
    assert any(
        line.endswith("NodePool gpu is Ready again") for line in format_timeline(result.events)
    )


# ---- plan, lint and simulate agree on what an alias resolves to --------------------------------
def _lint_not_ready(alias: str, k8s: str) -> bool:
    loaded = load_text(to_yaml(nodeclass("gpu") | _alias(alias), nodepool("gpu")), "t.yaml")
    ctx = LintContext(loaded.manifests, _catalog(), kubernetes_version=k8s)
    findings = run(ctx, LintConfig(select=("AMI002",))).findings
    return any(f.severity == "error" and "is not Ready" in f.message for f in findings)


def _plan_not_ready(alias: str, k8s: str) -> bool:
    loaded = load_text(to_yaml(nodeclass("gpu") | _alias(alias), nodepool("gpu")), "t.yaml")
    out = plan(loaded.objects, _catalog(), kubernetes_version=k8s)
    return any(n.startswith("NodePool gpu: not Ready") for n in out.notes)


def _simulate_not_ready(alias: str, k8s: str, tmp: Path) -> bool:
    (tmp / "m.yaml").write_text(to_yaml(nodeclass("gpu") | _alias(alias), nodepool("gpu")))
    doc = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "agree"},
        "spec": {"duration": "1m", "kubernetesVersion": k8s, "manifests": ["m.yaml"]},
    }
    (tmp / "s.yaml").write_text(yaml.safe_dump(doc))
    world = World(load_scenario(str(tmp / "s.yaml"), _catalog), _catalog())
    for m in world.scenario.initial:
        world._apply(m.obj)
    return not world.pod_controller.ready_nodepools()


def _alias(alias: str) -> dict[str, Any]:
    doc = nodeclass("gpu")
    return edit(doc, "spec.amiSelectorTerms", [{"alias": alias}])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    version=st.one_of(
        st.sampled_from([r.version for r in bundled_releases()]),  # real releases, any state
        st.dates(dt.date(2023, 10, 1), dt.date(2027, 3, 1)).map(lambda d: f"v{d:%Y%m%d}"),
        st.just("latest"),
    ),
    k8s=st.sampled_from(["1.22", "1.28", "1.32", "1.33", "1.35", "1.36"]),
    family=st.sampled_from(["al2023", "al2"]),
)
def test_law_plan_lint_and_simulate_agree_whether_an_alias_resolves(
    tmp_path: Path, version: str, k8s: str, family: str
) -> None:
    alias = f"{family}@{version}"
    verdicts = (
        _lint_not_ready(alias, k8s),
        _plan_not_ready(alias, k8s),
        _simulate_not_ready(alias, k8s, tmp_path),
    )
    assert len(set(verdicts)) == 1, (alias, k8s, verdicts)
