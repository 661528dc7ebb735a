"""The simulated world, scenario by scenario: small YAML stories (tests/sim/stories/) run end to
end, asserting on the event log and the summary (issue 10's "Done when" list)."""

from __future__ import annotations

import dataclasses
import io
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpucap.apis.serde import load_paths
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.operator.plan import plan
from gpucap.sim.kubelet import image_pull_seconds, pull_bounds
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import LoadedScenario, ScenarioError, load_scenario
from gpucap.sim.world import SimulationResult, simulate

STORIES = Path(__file__).parent / "stories"


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    return load_catalog(region)


def _load(path: Path | str) -> LoadedScenario:
    return load_scenario(str(path), _catalog)


@cache
def _run_story(name: str) -> SimulationResult:
    return simulate(_load(STORIES / f"{name}.yaml"), _catalog())


def run(name: str) -> SimulationResult:
    return _run_story(name)


def of_type(result: SimulationResult, type_: str, **match: Any) -> list[Event]:
    return [
        e for e in result.events if e.type == type_ and all(e.get(k) == v for k, v in match.items())
    ]


def launches(result: SimulationResult) -> list[Event]:
    return of_type(result, "NodeClaimLaunched")


# ---- nodes appear only for pending pods that fit a NodePool ------------------------------------
def test_a_pod_no_nodepool_tolerates_gets_no_node_and_stays_pending_with_karpenters_reason() -> (
    None
):
    result = run("pending-only")
    created = of_type(result, "NodeClaimCreated")
    assert [e.get("nodePool") for e in created] == ["gpu"]  # the GPU pod's, not the web pod's
    (unschedulable,) = of_type(result, "PodUnschedulable", pod="default/web")
    assert "did not tolerate taint nvidia.com/gpu=present:NoSchedule" in unschedulable.get("reason")
    assert [p["pod"] for p in result.summary.get("pendingAtEnd")] == ["default/web"]


def test_no_node_is_launched_before_a_pod_is_pending() -> None:
    result = run("pending-only")
    first_gpu_pod = of_type(result, "PodCreated", pod="default/vllm-0")[0]
    (launch,) = launches(result)
    # The batch window: 1 s of idle after the pod became pending.
    assert launch.t == pytest.approx(first_gpu_pod.t + 1.0)


# ---- spot first, on-demand after spot ICE, spot again once the ICE cache expires ---------------
def test_spot_is_tried_before_on_demand() -> None:
    assert launches(run("spot-ice"))[0].get("capacityType") == "spot"


def test_spot_ice_falls_back_to_on_demand_in_the_next_batch() -> None:
    result = run("spot-ice")
    (failed,) = of_type(result, "LaunchFailed")
    assert failed.t == pytest.approx(15 * 60 + 1)
    marked = of_type(result, "OfferingUnavailable")
    assert {(e.get("instanceType"), e.get("capacityType")) for e in marked} == {
        ("g5.xlarge", "spot")
    }
    (g5,) = (it for it in _catalog().instance_types(None) if it.name == "g5.xlarge")
    spot_zones = {o.zone for o in g5.offerings if o.capacity_type == "spot" and o.available}
    assert {e.get("zone") for e in marked} == spot_zones  # every zone EC2 tried, refused
    fallback = launches(result)[1]
    assert fallback.get("capacityType") == "on-demand"
    assert fallback.t > failed.t
    assert fallback.t - failed.t <= 10  # the next batch, not the next retry of the pod


def test_spot_is_used_again_once_the_ice_marks_expire() -> None:
    result = run("spot-ice")
    last = launches(result)[-1]
    assert last.t == pytest.approx(50 * 60 + 1)
    assert last.get("capacityType") == "spot"


# ---- no device plugin: the node never initializes and its pod never starts ---------------------
def test_without_a_device_plugin_the_gpu_node_registers_but_never_initializes() -> None:
    result = run("no-plugin")
    (registered,) = of_type(result, "NodeRegistered")
    assert registered.get("devicePlugin") is None
    assert of_type(result, "NodeInitialized") == []
    assert of_type(result, "PodBound") == []
    assert of_type(result, "PodReady") == []


def test_a_node_that_never_initializes_is_billed_for_the_whole_run() -> None:
    result = run("no-plugin")
    (launch,) = launches(result)
    hours = (result.end - launch.t) / 3600
    assert result.summary.get("costUSD") == pytest.approx(
        launch.get("pricePerHour") * hours, abs=1e-4
    )
    assert of_type(result, "NodeClaimCreated")
    assert len(of_type(result, "NodeClaimCreated")) == 1


# ---- limits ---------------------------------------------------------------------------------------
def test_the_limit_of_six_gpus_stops_the_seventh_single_gpu_pod() -> None:
    result = run("limits")
    assert len(launches(result)) == 6
    (limit,) = of_type(result, "LimitReached")
    assert limit.get("nodePool") == "gpu"
    pending = result.summary.get("pendingAtEnd")
    assert [p["pod"] for p in pending] == ["default/vllm-6"]
    assert "exceed limits" in pending[0]["reason"]


def test_time_sliced_nodes_overrun_the_gpu_limit_while_coming_up_then_stop() -> None:
    result = run("timeslicing")
    # While in flight each node counts its one physical GPU: six launch against a limit of 6.
    assert len(launches(result)) == 6
    initialized = of_type(result, "NodeInitialized")
    assert {tuple(e.get("gpusAdvertised").items()) for e in initialized} == {
        (("nvidia.com/gpu", 4),)
    }
    # Once they advertise 4 each, the pool uses 24 of 6: the later scale-up launches nothing.
    limits = of_type(result, "LimitReached")
    assert "nvidia.com/gpu 24/6" in limits[-1].get("message")
    assert all(e.t < 30 * 60 for e in launches(result))
    # ... and the pods that fit the advertised GPUs run on the six nodes.
    bound = {e.get("pod") for e in of_type(result, "PodBound")}
    assert len(bound) == 24
    assert len(result.summary.get("pendingAtEnd")) == 30 - 24


# ---- image pull bounded by the root volume ---------------------------------------------------------
def _with_throughput(tmp_path: Path, throughput: int) -> LoadedScenario:
    folder = tmp_path / str(throughput)
    if not folder.exists():
        shutil.copytree(STORIES, folder)
    nodeclass = folder / "nodeclass.yaml"
    nodeclass.write_text(
        nodeclass.read_text().replace("throughput: 125", f"throughput: {throughput}")
    )
    return _load(folder / "pending-only.yaml")


def test_raising_root_volume_throughput_from_125_to_500_shortens_time_to_ready_by_the_pull_saved(
    tmp_path: Path,
) -> None:
    slow = simulate(_with_throughput(tmp_path, 125), _catalog())
    fast = simulate(_with_throughput(tmp_path, 500), _catalog())
    saved = slow.summary.get("timeToReady")["max"] - fast.summary.get("timeToReady")["max"]
    scenario = _with_throughput(tmp_path, 125)
    nodeclasses = [m.obj for m in scenario.initial if m.obj.kind == "EC2NodeClass"]
    image, sizes = "vllm/vllm-openai:v0.11.0", scenario.images
    slow_pull = image_pull_seconds(
        image, pull_bounds("g5.xlarge", nodeclasses[0], _catalog()), sizes
    )
    fast_nc = next(
        m.obj for m in _with_throughput(tmp_path, 500).initial if m.obj.kind == "EC2NodeClass"
    )
    fast_pull = image_pull_seconds(image, pull_bounds("g5.xlarge", fast_nc, _catalog()), sizes)
    assert saved == pytest.approx(slow_pull - fast_pull, abs=0.002)
    assert saved == pytest.approx(146.08, abs=0.01)  # 221.18 s at 125 MiB/s, 75.10 s at 500


# ---- spot interruption -------------------------------------------------------------------------------
def test_an_interrupted_spot_nodes_pod_runs_again_on_another_node() -> None:
    result = run("interrupt")
    (warning,) = of_type(result, "SpotInterruptionWarning")
    assert warning.get("nodeClaim") == "gpu-1"
    (evicted,) = of_type(result, "PodEvicted")
    assert evicted.get("pod") == "default/vllm-0"
    (marked,) = of_type(result, "OfferingUnavailable")
    first, second = launches(result)
    assert (marked.get("instanceType"), marked.get("zone")) == (
        first.get("instanceType"),
        first.get("zone"),
    )
    assert second.t > warning.t
    assert second.get("zone") != first.get("zone")
    ready = of_type(result, "PodReady", pod="default/vllm-0")
    assert ready[-1].t > second.t
    assert ready[-1].get("node") == second.get("nodeClaim")
    assert of_type(result, "NodeTerminated", nodeClaim="gpu-1")
    assert result.summary.get("disruptions") == {"Interrupted": 1}


# ---- determinism ------------------------------------------------------------------------------------
def test_the_same_scenario_and_seed_give_a_byte_identical_event_log() -> None:
    scenario = _load(STORIES / "spot-ice.yaml")
    first, second = io.StringIO(), io.StringIO()
    simulate(scenario, _catalog(), sink=first)
    simulate(_load(STORIES / "spot-ice.yaml"), _catalog(), sink=second)
    assert first.getvalue() == second.getvalue()
    assert first.getvalue().count("\n") == len(run("spot-ice").events)


# ---- plan and simulate share the provisioner ------------------------------------------------------
def test_plan_and_simulate_create_the_same_first_node_claims_for_the_same_pending_pods() -> None:
    files = [str(STORIES / f) for f in ("nodeclass.yaml", "nodepool.yaml", "device-plugin.yaml")]
    loaded = load_paths([*files, str(STORIES / "vllm.yaml")])
    planned = plan(loaded.objects, _catalog(), max_passes=1)
    scenario = _load(STORIES / "limits.yaml")
    # The same pending pods at once: the Deployment at 7 replicas from the start.
    scaled = dataclasses.replace(
        scenario,
        actions=tuple(a for a in scenario.actions if a.kind == "apply"),
    )
    result = simulate(scaled, _catalog())
    created = of_type(result, "NodeClaimCreated")
    first_plan = planned.node_claims[0]
    assert created[0].get("nodePool") == first_plan.nodepool
    assert created[0].get("instanceTypes") == [it.name for it in first_plan.instance_types]
    nominated = [
        e.get("pod") for e in of_type(result, "PodNominated", nodeClaim=created[0].get("nodeClaim"))
    ]
    assert nominated == [p.key for p in first_plan.pods]
    launch = launches(result)[0]
    assert first_plan.launch is not None
    assert (launch.get("instanceType"), launch.get("zone"), launch.get("capacityType")) == (
        first_plan.launch.instance_type,
        first_plan.launch.zone,
        first_plan.launch.capacity_type,
    )
    assert launch.get("pricePerHour") == pytest.approx(first_plan.launch.price)


# ---- AMI releases --------------------------------------------------------------------------------
def test_an_ami_release_reaches_new_nodes_of_an_at_latest_alias_once_the_ssm_cache_expires() -> (
    None
):
    result = run("ami-release")
    resolved = of_type(result, "AMIResolved")
    assert [e.get("version") for e in resolved] == ["v20260827", "v20261001"]
    first, second, *later = launches(result)
    assert resolved[0].t == first.t
    # Read at 0 s, the alias is cached for 24 h: the node at 40m still gets the old release.
    assert 30 * 60 < second.t < 24 * 3600
    assert resolved[1].t == later[0].t
    assert later[0].t > 24 * 3600


def test_at_latest_plus_a_release_rolls_the_fleet_one_node_at_a_time_by_drift() -> None:
    result = run("ami-release")
    drifted = of_type(result, "DisruptionDecision", reason="Drifted")
    assert [e.get("nodeClaim") for e in drifted] == ["gpu-1", "gpu-2"]
    (replacement,) = drifted[0].get("replacements")
    ready = {e.get("nodeClaim"): e.t for e in of_type(result, "NodeInitialized")}
    # The default budget (10% of 2 nodes, rounded up: 1) lets one node go at a time: the second
    # is decided only once the first one's replacement is up and the first is draining.
    assert drifted[1].t > ready[replacement]
    assert all(e.get("decision") == "replace" for e in drifted)


def test_a_limit_of_gpu_small_is_not_blamed_on_gpu(tmp_path: Path) -> None:
    # `gpu-small` (the story's pool, renamed) stops the seventh pod with its limit of 6 GPUs;
    # `gpu`, a prefix of its name, refuses every pod for a taint they do not tolerate. The
    # pod's reason names both; only `gpu-small` reached its limit (commit e0ac8fb: a
    # substring test on the reason blamed `gpu` too).
    folder = tmp_path / "prefix"
    shutil.copytree(STORIES, folder)
    small = (folder / "nodepool.yaml").read_text().replace("name: gpu\n", "name: gpu-small\n")
    tainted = (
        (folder / "nodepool.yaml")
        .read_text()
        .replace("value: present", "value: reserved")
        .replace("key: nvidia.com/gpu, value", "key: dedicated, value")
    )
    (folder / "nodepool.yaml").write_text(f"{small}\n---\n{tainted}")
    result = simulate(_load(folder / "limits.yaml"), _catalog())
    assert len(launches(result)) == 6
    (limit,) = of_type(result, "LimitReached")
    assert limit.get("nodePool") == "gpu-small"
    (pending,) = result.summary.get("pendingAtEnd")
    assert 'nodepool "gpu": did not tolerate taint dedicated=reserved' in pending["reason"]
    assert 'nodepool "gpu-small": all available instance types exceed limits' in pending["reason"]


def test_scaling_past_the_pod_limit_of_a_run_is_one_line_naming_the_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gpucap.sim.world.MAX_PODS", 1000)  # 150,000 in the product
    folder = tmp_path / "big"
    shutil.copytree(STORIES, folder)
    second = (folder / "vllm.yaml").read_text().replace("name: vllm,", "name: other,")
    (folder / "other.yaml").write_text(second)
    (folder / "big.yaml").write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: big}\n"
        "spec:\n  duration: 1h\n  manifests: [nodeclass.yaml, nodepool.yaml, vllm.yaml, other.yaml]\n"
        "  events:\n"
        "    - {at: 1m, scale: {kind: Deployment, name: vllm, namespace: default, replicas: 501}}\n"
        "    - {at: 1m, scale: {kind: Deployment, name: other, namespace: default, replicas: 501}}\n"
    )
    scenario = _load(folder / "big.yaml")
    with pytest.raises(ScenarioError) as err:
        simulate(dataclasses.replace(scenario, duration=90.0 + 60), _catalog())
    assert str(err.value) == (
        f"{folder / 'big.yaml'}: events[1].scale.replicas: the cluster would hold 1,002 pods, "
        "more than gpucap simulates (1,000)"
    )
