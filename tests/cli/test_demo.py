"""`gpucap demo`'s story: the bundled acts run on the workshop manifests, and what the demo
says about them agrees with the run's own events and summary (numbers recomputed here from the
events, not copied)."""

from __future__ import annotations

import itertools
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpucap.cli.demo import ACTS, act1_sentences, act2_sentences, run_act, story_tree
from gpucap.cli.main import app
from gpucap.cli.simulate_render import clock_time, format_duration, format_timeline
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.runtime.clock import EPOCH
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import LoadedScenario
from gpucap.sim.world import SimulationResult

ACT1, ACT2, ACT3 = ACTS


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("story")
    story_tree(root)
    return root


@pytest.fixture(scope="module")
def act1(tree: Path, catalog: Catalog) -> tuple[LoadedScenario, SimulationResult]:
    return run_act(tree, ACT1, catalog)


@pytest.fixture(scope="module")
def act2(tree: Path, catalog: Catalog) -> tuple[LoadedScenario, SimulationResult]:
    return run_act(tree, ACT2, catalog)


@pytest.fixture(scope="module")
def demo_output() -> str:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    return str(result.stdout)


def of(events: list[Event], type_: str, /, **match: Any) -> list[Event]:
    return [e for e in events if e.type == type_ and all(e.get(k) == v for k, v in match.items())]


def at(t: float) -> str:
    return clock_time(t, EPOCH)


# ---- the command ---------------------------------------------------------------------------------
def test_the_demo_keeps_validate_lint_and_plan_then_tells_three_acts(demo_output: str) -> None:
    parts = ["gpucap validate", "gpucap lint", "gpucap plan", ACT1.title, ACT2.title, ACT3.title]
    positions = [demo_output.index(p) for p in parts]
    assert positions == sorted(positions)


def test_the_demo_fits_on_two_screens_and_a_bit(demo_output: str) -> None:
    # Two acts fitted two screens (110 lines); act 3 adds its table and two sentences.
    assert len(demo_output.splitlines()) <= 125


def test_act1_shows_the_on_demand_fallback_and_the_cost(
    demo_output: str, act1: tuple[LoadedScenario, SimulationResult]
) -> None:
    _, result = act1
    fallback = [line for line in demo_output.splitlines() if "unavailable" in line]
    assert fallback
    assert "→ on-demand g6.xlarge in us-east-1a launched" in fallback[0]
    assert f"The fleet cost ${result.summary['costUSD']:.2f} over 4h00m00s" in demo_output


def test_act2_shows_the_node_waiting_then_initializing_after_the_plugin(demo_output: str) -> None:
    act2_text = demo_output[demo_output.index(ACT2.title) :]
    lines = act2_text.splitlines()
    waiting = next(i for i, line in enumerate(lines) if "no device plugin yet" in line)
    applied = next(i for i, line in enumerate(lines) if "apply" in line and "plugin" in line)
    initialized = next(i for i, line in enumerate(lines) if "initialized" in line)
    assert waiting < applied < initialized
    assert "node gpu-1 registered; GPU not advertised" in lines[waiting]


# ---- act 1: the scenario is what the story says --------------------------------------------------
def test_spot_runs_out_in_the_zone_the_first_node_launched_in(
    act1: tuple[LoadedScenario, SimulationResult],
) -> None:
    _, result = act1
    first = of(result.events, "NodeClaimLaunched")[0]
    gone = [e for e in of(result.events, "CapacityChanged") if not e.get("available")]
    assert first.get("capacityType") == "spot"
    assert {e.get("zone") for e in gone} == {first.get("zone")}
    assert {e.get("capacityType") for e in gone} == {"spot"}
    # every instance type the NodePool can launch, so no spot is left in that zone
    assert {e.get("instanceType") for e in gone} == {
        "g5.xlarge",
        "g5.2xlarge",
        "g6.xlarge",
        "g6.2xlarge",
    }


def test_the_scale_up_falls_back_to_on_demand_in_the_same_zone(
    act1: tuple[LoadedScenario, SimulationResult],
) -> None:
    _, result = act1
    ice = of(result.events, "OfferingUnavailable")[0]
    later = [e for e in of(result.events, "NodeClaimLaunched") if e.t >= ice.t]
    assert len(later) == 2
    assert {(e.get("capacityType"), e.get("zone")) for e in later} == {
        ("on-demand", ice.get("zone"))
    }
    assert result.summary["pods"]["ready"] == 3
    assert result.summary["pendingAtEnd"] == []


def test_act1_sentences_agree_with_the_events(
    act1: tuple[LoadedScenario, SimulationResult],
) -> None:
    scenario, result = act1
    words = act1_sentences(result, scenario)
    launches = of(result.events, "NodeClaimLaunched")
    ice = of(result.events, "OfferingUnavailable")[0]
    on_demand = [e for e in launches if e.get("capacityType") == "on-demand"]
    spot = [e for e in launches if e.get("capacityType") == "spot"]
    end = result.end

    stopped = {e.get("nodeClaim"): e.t for e in of(result.events, "NodeTerminated")}

    def billed(e: Event, since: float = 0.0) -> float:
        stop = min(stopped.get(e.get("nodeClaim"), end), end)
        return float(e.get("pricePerHour")) * (stop - max(e.t, since)) / 3600

    assert f"at {at(ice.t)} the scale-up found none there" in words[0]
    assert f"{len(on_demand)} nodes at ${on_demand[0].get('pricePerHour'):.4f}/h" in words[0]
    total = sum(billed(e) for e in launches)
    assert f"The fleet cost ${total:.2f}" in words[1]
    assert f"${sum(billed(e) for e in on_demand):.2f} on-demand" in words[1]
    assert f"${sum(billed(e) for e in spot):.2f} spot" in words[1]
    created = {e.get("pod"): e.t for e in of(result.events, "PodCreated")}
    waits = sorted(e.t - created[e.get("pod")] for e in of(result.events, "PodReady"))
    assert f"ready {format_duration(waits[(len(waits) + 1) // 2 - 1])} after" in words[2]
    assert f"{format_duration(waits[-1])} at worst" in words[2]
    zero = next(
        e.t for e in of(result.events, "ScenarioEvent", kind="scale") if e.get("replicas") == 0
    )
    idle = sum(billed(e, zero) for e in launches)
    assert f"After the scale to 0 at {at(zero)}, {len(launches)} nodes stood empty" in words[3]
    assert f"billed ${idle:.2f}" in words[3]
    assert "consolidateAfter of 2h" in words[3]


def test_act1_ends_with_the_workshops_consolidation_one_node_at_a_time(
    act1: tuple[LoadedScenario, SimulationResult],
) -> None:
    """WhenEmpty, consolidateAfter 2h, budget 1: each empty node goes no earlier than 2 h after
    the scale to 0, and the next is decided only after the previous one is deleted."""
    scenario, result = act1
    zero = next(
        e.t for e in of(result.events, "ScenarioEvent", kind="scale") if e.get("replicas") == 0
    )
    decided = [e for e in of(result.events, "DisruptionDecision") if e.get("reason") == "Empty"]
    deleted = {e.get("nodeClaim"): e.t for e in of(result.events, "NodeClaimDeleted")}
    assert len(decided) == len(of(result.events, "NodeClaimLaunched"))
    assert all(e.t >= zero + 2 * 3600 for e in decided)
    for first, second in itertools.pairwise(decided):
        assert second.t >= deleted[first.get("nodeClaim")]
    words = act1_sentences(result, scenario)
    assert 'as the budget of nodes: "1" allows' in words[3]
    assert ", ".join(at(e.t) for e in decided) in words[3]


# ---- act 2: the wrong order ----------------------------------------------------------------------
def test_without_the_plugin_the_node_registers_and_waits_then_initializes_once_it_comes(
    act2: tuple[LoadedScenario, SimulationResult],
) -> None:
    _, result = act2
    registered = of(result.events, "NodeRegistered")[0]
    applied = of(result.events, "ScenarioEvent", kind="apply")[0]
    initialized = of(result.events, "NodeInitialized")[0]
    bound = of(result.events, "PodBound")[0]
    assert registered.get("devicePlugin") is None
    assert registered.t < applied.t < initialized.t <= bound.t
    assert "nvidia-device-plugin" in applied.get("source")


def test_act2_sentences_agree_with_the_events(
    act1: tuple[LoadedScenario, SimulationResult],
    act2: tuple[LoadedScenario, SimulationResult],
) -> None:
    scenario, result = act2
    first_ready_act1 = of(act1[1].events, "PodReady")[0].t - of(act1[1].events, "PodCreated")[0].t
    words = act2_sentences(result, scenario, plugin_first=first_ready_act1)
    launch = of(result.events, "NodeClaimLaunched")[0]
    registered = of(result.events, "NodeRegistered")[0]
    applied = of(result.events, "ScenarioEvent", kind="apply")[0]
    initialized = of(result.events, "NodeInitialized")[0]
    waited = of(result.events, "PodReady")[0].t - of(result.events, "PodCreated")[0].t
    price = float(launch.get("pricePerHour"))
    assert f"registered at {at(registered.t)} with no device plugin" in words[0]
    before = applied.t - launch.t
    assert (
        f"billed {format_duration(before)} (${price * before / 3600:.2f}) before the device "
        f"plugin arrived at {at(applied.t)}" in words[1]
    )
    assert f"initialized {format_duration(initialized.t - applied.t)} later" in words[1]
    extra = waited - first_ready_act1
    assert f"The pod waited {format_duration(waited)} to be ready" in words[2]
    assert (
        f"the wrong order cost {format_duration(extra)} and ${price * extra / 3600:.2f}" in words[2]
    )
    assert extra > 20 * 60  # the plugin came 30 minutes late: most of that is lost


def test_without_any_plugin_the_node_is_billed_for_nothing_and_the_pod_never_starts(
    tree: Path, catalog: Catalog
) -> None:
    text = (tree / "story" / ACT2.file).read_text()
    cut = text[: text.index("  events:")]
    (tree / "story" / "never.yaml").write_text(cut)
    scenario, result = run_act(tree, type(ACT2)("never.yaml", "", ""), catalog)
    assert [n["nodeClaim"] for n in result.summary["uninitializedAtEnd"]] == ["gpu-1"]
    assert [p["pod"] for p in result.summary["pendingAtEnd"]] == ["default/vllm-0"]
    words = act2_sentences(result, scenario)
    launch = of(result.events, "NodeClaimLaunched")[0]
    assert f"billed {format_duration(result.end - launch.t)}" in words[1]
    assert "for nothing" in words[1]
    assert len(words) == 2  # no pod got ready: nothing to say about its wait
    assert any("GPU never advertised" in line for line in format_timeline(result.events))


# ---- the files ---------------------------------------------------------------------------------
def test_the_story_is_package_data_next_to_the_workshop() -> None:
    story = resources.files("gpucap.data").joinpath("examples", "story")
    names = {p.name for p in story.iterdir()}
    assert {a.file for a in ACTS} <= names
    for act in ACTS:
        assert "../workshop/" in story.joinpath(act.file).read_text(encoding="utf-8")
