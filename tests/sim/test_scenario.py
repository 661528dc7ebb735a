"""Loading scenarios (`sim/scenario.py`): a good one resolves; every bad one is one line naming
the file, the event and the field."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.reading import InputError
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.scenario import (
    TIMING_KEYS,
    Addon,
    CapacityAction,
    ScenarioError,
    ami_release_problem,
    load_scenario,
)

HERE = Path(__file__).parent / "scenarios"
GOOD = HERE / "good"
BAD = HERE / "bad"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


def test_the_basic_scenario_loads_with_every_event_resolved(catalog: Catalog) -> None:
    s = load_scenario(str(GOOD / "basic.yaml"), catalog)
    assert (s.name, s.region, s.kubernetes_version, s.seed) == ("basic", "us-east-1", "1.36", 7)
    assert s.duration == 6 * 3600
    assert [m.ref for m in s.initial] == ["EC2NodeClass/gpu", "NodePool/gpu"]
    assert s.images == {"vllm/vllm-openai:v0.11.0": (9 << 30, 18 << 30)}
    assert s.ami_releases == {"1.36": ["v20260801", "v20260827"]}
    assert s.addons == (Addon("nvidia-device-plugin", 4, False),)
    assert s.timings == {"launch": 25.0, "device_plugin": 60.0}
    # Sorted by time, then by position in the file.
    assert [(a.t, a.index, a.kind) for a in s.actions] == [
        (300, 0, "apply"),
        (1200, 2, "capacity"),
        (3600, 1, "scale"),
        (7200, 3, "interrupt"),
        (10800, 4, "amiRelease"),
        (12600, 5, "apply"),
        (14400, 6, "delete"),
    ]
    apply, capacity, scale, interrupt, ami, inline, delete = s.actions
    assert [m.ref for m in apply.manifests] == ["Deployment/default/vllm"]
    assert apply.documents[0]["metadata"]["name"] == "vllm"
    assert apply.source == "vllm.yaml"
    assert capacity.capacity == CapacityAction(
        "g5.xlarge", "us-east-1a", "spot", False, 1800.0, instance_types=("g5.xlarge",)
    )
    assert (scale.ref, scale.replicas) == (("Deployment", "default", "vllm"), 3)
    assert interrupt.interrupt_node_claim == "gpu-1"
    assert ami.ami_release == ("1.36", "v20261001")
    assert [m.ref for m in inline.manifests] == ["Pod/default/probe"]
    assert inline.source.endswith("basic.yaml:events[5].apply.manifest")
    assert delete.ref == ("Deployment", "default", "vllm")


def _capacity_event(tmp_path: Path, catalog: Catalog, event: str) -> CapacityAction:
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
        f"  events:\n    - {{at: 1m, capacity: {event}}}\n"
    )
    action = load_scenario(str(f), catalog).actions[0].capacity
    assert action is not None
    return action


def test_a_capacity_event_may_name_a_family_and_a_zone_without_a_type(
    tmp_path: Path, catalog: Catalog
) -> None:
    cap = _capacity_event(tmp_path, catalog, "{instanceFamily: g6e, zone: us-east-1a, for: 2h}")
    family = [i.name for i in catalog.infos if i.family == "g6e"]
    assert set(cap.instance_types) == set(family)
    assert (cap.instance_type, cap.instance_family, cap.zone, cap.duration) == (
        None,
        "g6e",
        "us-east-1a",
        7200.0,
    )


def test_a_capacity_event_naming_only_a_zone_and_spot_names_every_type_offered_there(
    tmp_path: Path, catalog: Catalog
) -> None:
    cap = _capacity_event(tmp_path, catalog, "{zone: us-east-1e, capacityType: spot}")
    offered = [
        i.name
        for i in catalog.infos
        if i.offerings is None or "us-east-1e" in i.offerings.get("us-east-1", ())
    ]
    assert cap.instance_types == tuple(offered)
    assert "g6e.xlarge" not in cap.instance_types  # g6e is not offered in us-east-1e
    assert cap.capacity_type == "spot"


def test_the_catalog_may_be_given_as_a_function_of_the_scenarios_region() -> None:
    asked: list[str] = []

    def by_region(region: str) -> Catalog:
        asked.append(region)
        return load_catalog(region)

    load_scenario(str(GOOD / "basic.yaml"), by_region)
    assert asked == ["us-east-1"]


def test_an_image_without_an_uncompressed_size_counts_twice_the_compressed(
    tmp_path: Path, catalog: Catalog
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  images: {my/img: {compressed: 1Gi}}\n"
    )
    assert load_scenario(str(f), catalog).images == {"my/img": (1 << 30, 2 << 30)}


def test_the_timing_keys_are_the_camelcase_names_of_the_cold_start_timings() -> None:
    assert TIMING_KEYS == (
        "launch",
        "registration",
        "daemonsetStart",
        "devicePlugin",
        "gpuOperator",
        "modelLoad",
        "containerStart",
        "termination",
    )


def test_a_scale_after_a_reapply_is_fine(tmp_path: Path, catalog: Catalog) -> None:
    (tmp_path / "d.yaml").write_text((GOOD / "vllm.yaml").read_text())
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
        "  events:\n"
        "    - {at: 1m, apply: {file: d.yaml}}\n"
        "    - {at: 2m, delete: {kind: Deployment, name: vllm}}\n"
        "    - {at: 3m, apply: {file: d.yaml}}\n"
        "    - {at: 4m, scale: {kind: Deployment, name: vllm, replicas: 0}}\n"
    )
    assert [a.kind for a in load_scenario(str(f), catalog).actions] == [
        "apply",
        "delete",
        "apply",
        "scale",
    ]


# ---- bad scenarios: file -> the one line after "<path>: " ------------------------------------
LOOKED = str(BAD / "manifests")
BAD_CASES = {
    "unknown-event-kind": "events[0].scael: unknown event kind 'scael' (did you mean 'scale'?)",
    "unknown-event-kind-far": "events[0].reboot: unknown event kind 'reboot'; an event has 'at' "
    "and one of apply, scale, delete, capacity, interrupt, amiRelease, reclaim",
    "two-actions": "events[0]: an event needs exactly one action of apply, scale, delete, "
    "capacity, interrupt, amiRelease, reclaim; found 2",
    "no-action": "events[0]: an event needs exactly one action of apply, scale, delete, "
    "capacity, interrupt, amiRelease, reclaim; found 0",
    "bad-at": "events[0].at: '5 minutes': unknown unit ' minutes' (ns, us, ms, s, m or h)",
    "bad-for": "events[0].capacity.for: '30mins': unknown unit 'mins' (ns, us, ms, s, m or h)",
    "bad-duration": "duration: '2 hours': unknown unit ' hours' (ns, us, ms, s, m or h)",
    "duration-too-long": "duration: '1000h' is longer than 720h (30 days), the longest "
    "scenario gpucap runs",
    "event-after-duration": "events[0].at: '3h' is after the end of the scenario (2h)",
    "manifest-missing": "manifests[1]: 'manifests/nodepol.yaml' does not exist "
    f"(looked for {LOOKED}/nodepol.yaml)",
    "apply-file-missing": "events[0].apply.file: 'manifests/vlm.yaml' does not exist "
    f"(looked for {LOOKED}/vlm.yaml)",
    "apply-file-invalid": f"events[0].apply.file: {LOOKED}/invalid-deployment.yaml[0] "
    "Deployment/default/broken: spec.template.spec.containers[0].resources.limitz: unknown "
    "field 'limitz' (did you mean 'limits'?)",
    "apply-inline-invalid": "events[0].apply.manifest: Pod/default/p: spec.containerz: unknown "
    "field 'containerz' (did you mean 'containers'?)",
    "capacity-unknown-type": "events[0].capacity.instanceType: 'g5.xlarge2' is not in the "
    "catalog of us-east-1 (did you mean 'g5.xlarge'?)",
    "capacity-unknown-zone": "events[0].capacity.zone: 'us-east-1z' is not a zone of the "
    "catalog of us-east-1 (us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, "
    "us-east-1f)",
    "capacity-names-nothing": "events[0].capacity: names no offerings: give an instanceType or "
    "instanceFamily, a zone, a capacityType, or a combination",
    "capacity-unknown-family": "events[0].capacity.instanceFamily: 'g6ee' is not an instance "
    "family of the catalog of us-east-1 (did you mean 'g6e'?)",
    "capacity-type-outside-family": "events[0].capacity.instanceFamily: g5.xlarge is of family "
    "g5, not g6e",
    "capacity-family-not-in-zone": "events[0].capacity.zone: no instance type of family g6e is "
    "offered in us-east-1e",
    "scale-never-applied": "events[0].scale: Deployment/default/vllm is never applied before "
    "5m (not in spec.manifests nor an earlier apply event)",
    "delete-never-applied": "events[0].delete: NodePool/gpus is never applied before 5m (not "
    "in spec.manifests nor an earlier apply event); did you mean NodePool/gpu?",
    "delete-before-apply": "events[1].delete: Deployment/default/vllm is applied only later, "
    "by events[0] at 20m, not before this event at 10m",
    "scale-after-delete": "events[2].scale: Deployment/default/vllm was deleted by events[1] "
    "at 10m, before this event at 15m",
    "scale-wrong-namespace": "events[1].scale: Deployment/ml/vllm is never applied before 15m "
    "(not in spec.manifests nor an earlier apply event); did you mean Deployment/default/vllm?",
    "scale-unscalable-kind": "events[0].scale.kind: NodePool cannot be scaled; a scale event "
    "changes the replicas of a Deployment, ReplicaSet, StatefulSet, LeaderWorkerSet",
    "scale-unknown-kind": "events[0].scale.kind: unknown kind 'Deploymnet' (did you mean "
    "'Deployment'?)",
    "replicas-negative": "events[1].scale.replicas: -1 must be between 0 and 150,000 "
    "(gpucap's limit for one workload)",
    "replicas-too-many": "events[1].scale.replicas: 150001 must be between 0 and 150,000 "
    "(gpucap's limit for one workload)",
    "interrupt-bad-name": "events[0].interrupt.nodeClaim: not a NodeClaim name: 'GPU_1' must "
    "be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and "
    "ending with a letter or digit",
    "ami-release-bad-version": "events[0].amiRelease.version: 'latest' is not an EKS AMI "
    "release version (e.g. v20261001)",
    "unknown-timing": "timings.lanch: unknown timing 'lanch' (did you mean 'launch'?)",
    "bad-timing-value": "timings.launch: expected a string, got integer 30",
    "bad-timing-duration": "timings.registration: 'half a minute' is not a duration (e.g. 90s, "
    "5m, 1h30m)",
    "unknown-addon": "addons[0].name: unknown add-on 'nvidia-device-plugn' (did you mean "
    "'nvidia-device-plugin'?)",
    "addon-replicas-zero": "addons[0].timeSlicing.replicas: 0 must be between 1 (no sharing) "
    "and 150,000",
    "bad-kubernetes-version": "kubernetesVersion: 'v1.36' is not a Kubernetes minor version "
    '(e.g. "1.36")',
    "bad-ami-releases": "amiReleases[1.36][1]: '2026-08-27' is not an EKS AMI release version "
    "(e.g. v20261001)",
    "ami-release-not-a-date": "events[0].amiRelease.version: 'v20260230' is not an EKS AMI "
    "release version: 2026-02-30 is not a date",
    "ami-releases-not-a-date": "amiReleases[1.36][1]: 'v20261301' is not an EKS AMI release "
    "version: 2026-13-01 is not a date",
    "region-mismatch": "region: 'eu-west-1', but the catalog is for us-east-1",
    "not-a-scenario": "a scenario file holds one document of kind Scenario (apiVersion "
    "gpucap.dev/v1alpha1); found Deployment",
}


@pytest.mark.parametrize(("name", "message"), sorted(BAD_CASES.items()))
def test_a_bad_scenario_is_one_line_naming_file_event_and_field(
    name: str, message: str, catalog: Catalog
) -> None:
    path = str(BAD / f"{name}.yaml")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, catalog)
    assert str(caught.value) == f"{path}: {message}"
    assert "\n" not in str(caught.value)


def test_every_bad_scenario_file_has_its_expected_message() -> None:
    assert {p.stem for p in BAD.glob("*.yaml")} == set(BAD_CASES)


def test_a_scenario_error_is_an_input_error_so_the_cli_exits_2() -> None:
    assert issubclass(ScenarioError, InputError)


def test_a_missing_scenario_file_names_it(tmp_path: Path, catalog: Catalog) -> None:
    path = str(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match=r"nope\.yaml: cannot read: No such file"):
        load_scenario(path, catalog)


def test_a_manifest_file_over_the_size_limit_is_refused_naming_the_event(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, catalog: Catalog
) -> None:
    monkeypatch.setattr("gpucap.apis.reading.MAX_FILE_BYTES", 4096)
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * 5000 + "\n")
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  events: [{at: 1m, apply: {file: big.yaml}}]\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(str(f), catalog)
    assert str(caught.value).startswith(f"{f}: events[0].apply.file: {big}: larger than")


def test_scenario_errors_in_a_yaml_syntax_error_name_the_file(
    tmp_path: Path, catalog: Catalog
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nspec: [\n")
    with pytest.raises(ScenarioError, match=r"s\.yaml: line \d+ column \d+: invalid YAML"):
        load_scenario(str(f), catalog)


def test_a_directory_in_spec_manifests_loads_every_manifest_in_it(
    tmp_path: Path, catalog: Catalog
) -> None:
    d = tmp_path / "cluster"
    d.mkdir()
    for name in ("nodeclass.yaml", "nodepool.yaml"):
        (d / name).write_text((GOOD / name).read_text())
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  manifests: [cluster]\n"
        "  events: [{at: 1m, delete: {kind: NodePool, name: gpu}}]\n"
    )
    s = load_scenario(str(f), catalog)
    assert [m.ref for m in s.initial] == ["EC2NodeClass/gpu", "NodePool/gpu"]
    assert s.actions[0].ref == ("NodePool", "", "gpu")


def test_the_loaders_warnings_are_kept_for_the_cli_as_plan_prints_them(
    tmp_path: Path, catalog: Catalog
) -> None:
    (tmp_path / "nc.yaml").write_text(
        (GOOD / "nodeclass.yaml").read_text().replace("KarpenterNodeRole-sim", "${ROLE}")
    )
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  manifests: [nc.yaml]\n"
    )
    s = load_scenario(str(f), catalog)
    nc = tmp_path / "nc.yaml"
    assert s.warnings[0] == f"{nc}: ${{ROLE}} is not filled: [0] EC2NodeClass/gpu spec.role"


@settings(max_examples=300, deadline=None)
@given(digits=st.text("0123456789", min_size=8, max_size=8))
def test_an_ami_release_version_is_accepted_exactly_when_its_digits_are_a_date(
    digits: str,
) -> None:
    year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:])
    is_date = year >= 1 and 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]
    assert (ami_release_problem(f"v{digits}") is None) == is_date


def test_every_problem_of_a_scenario_is_reported_in_one_run(
    tmp_path: Path, catalog: Catalog
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
        "  duration: 2h\n  manifests: [missing.yaml]\n  timings: {lanch: 30s}\n  events:\n"
        "    - {at: 1m, capacity: {zone: us-east-1z}}\n"
        "    - {at: 5m, capacity: {instanceType: g5.xlarge2}}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(str(f), catalog)
    assert [line.removeprefix(f"{f}: ") for line in caught.value.lines()] == [
        f"manifests[0]: 'missing.yaml' does not exist (looked for {tmp_path}/missing.yaml)",
        "events[0].capacity.zone: 'us-east-1z' is not a zone of the catalog of us-east-1 "
        "(us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f)",
        "events[1].capacity.instanceType: 'g5.xlarge2' is not in the catalog of us-east-1 "
        "(did you mean 'g5.xlarge'?)",
        "timings.lanch: unknown timing 'lanch' (did you mean 'launch'?)",
    ]


def test_the_cli_prints_one_error_line_per_scenario_problem(tmp_path: Path) -> None:
    from typer.testing import CliRunner  # noqa: PLC0415 - the CLI only here

    from gpucap.cli.main import app  # noqa: PLC0415

    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
        "  duration: 2h\n  events:\n"
        "    - {at: 1h, capacity: {instanceFamily: g5e}}\n"
        "    - {at: 5m, capacity: {zone: us-east-1z}}\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(f)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {f}: events[0].capacity.instanceFamily: 'g5e' is not an instance family of "
        "the catalog of us-east-1 (did you mean 'g5'?)",
        f"error: {f}: events[1].capacity.zone: 'us-east-1z' is not a zone of the catalog of "
        "us-east-1 (us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f)",
    ]


def test_every_problem_with_the_documents_form_is_reported_in_one_run(
    tmp_path: Path, catalog: Catalog
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
        "  duration: 2 hours\n  events:\n"
        "    - {at: 5 minutes, scale: {kind: Deployment, name: d, replicas: 1}}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(str(f), catalog)
    assert [line.removeprefix(f"{f}: ") for line in caught.value.lines()] == [
        "duration: '2 hours': unknown unit ' hours' (ns, us, ms, s, m or h)",
        "events[0].at: '5 minutes': unknown unit ' minutes' (ns, us, ms, s, m or h)",
    ]
