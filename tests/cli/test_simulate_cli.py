"""`gpucap simulate SCENARIO` through the real entry point (`gpucap.cli.main:main`): what a person
reads, what a script reads, the determinism law on bytes, and bad input as one line and exit 2.
The wall clock of `--watch` and of the progress bar is injected (`cli/simulate.run`), so pacing
is tested exactly and fast."""

from __future__ import annotations

import io
import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from gpucap.cli import main as cli_main
from gpucap.cli.simulate import FRAME_SECONDS, ProgressBar, SimulateOptions, Watch, run
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.data import unpack_catalog_columns
from gpucap.runtime.terminal import Terminal
from gpucap.sim.recorder import Event

STORIES = Path(__file__).resolve().parents[1] / "sim" / "stories"
BAD = Path(__file__).resolve().parents[1] / "sim" / "scenarios" / "bad"
SPOT_ICE = str(STORIES / "spot-ice.yaml")
# The stories whose runs exercise the most: an ICE and its fallback, a spot interruption and the
# pods provisioned again, time-slicing and a NodePool limit.
DETERMINISM_STORIES = ("spot-ice.yaml", "interrupt.yaml", "timeslicing.yaml")


def gpucap(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, list[str]]:
    """The console script in-process: (exit status, stdout, stderr lines)."""
    monkeypatch.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    code = exit_info.value.code
    captured = capsys.readouterr()
    return (code if isinstance(code, int) else 0), captured.out, captured.err.splitlines()


def ok(args: list[str], capsys: Any, monkeypatch: Any) -> str:
    code, out, err = gpucap(args, capsys, monkeypatch)
    assert (code, err) == (0, [])
    return out


# ---- what a person reads -------------------------------------------------------------------------
def test_the_table_tells_the_spot_ice_and_the_fallback_to_on_demand_in_one_line(
    capsys: Any, monkeypatch: Any
) -> None:
    out = ok(["simulate", SPOT_ICE], capsys, monkeypatch).splitlines()
    assert out[0] == (
        f"Scenario spot-ice ({SPOT_ICE}): 1h00m00s in us-east-1, Kubernetes 1.36, seed 1"
    )
    fallback = [line for line in out if "→" in line]
    assert fallback == [
        "00:15:01 spot g5.xlarge in us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1f "
        "unavailable (gpu-2 not launched) → 10s later on-demand g5.xlarge in us-east-1a "
        "launched (gpu-3, $1.0060/h)"
    ]
    # The timeline comes first, then the summary.
    assert out.index(fallback[0]) < out.index("Simulated 1h00m00s: $1.21 for 3 nodes")
    assert "Pending at the end: none" in out


def test_a_node_without_device_plugin_is_said_plainly(capsys: Any, monkeypatch: Any) -> None:
    out = ok(["simulate", str(STORIES / "no-plugin.yaml")], capsys, monkeypatch)
    assert "node gpu-1 registered; GPU never advertised: no device plugin in the cluster" in out
    assert "Pending at the end (1):" in out


# ---- what a script reads -------------------------------------------------------------------------
def test_json_holds_the_events_and_the_summary(capsys: Any, monkeypatch: Any) -> None:
    doc = json.loads(ok(["simulate", SPOT_ICE, "-o", "json"], capsys, monkeypatch))
    assert (doc["apiVersion"], doc["kind"]) == ("gpucap.dev/v1alpha1", "Simulation")
    types = [e["type"] for e in doc["events"]]
    assert types.count("NodeClaimLaunched") == 3
    assert "LaunchFailed" in types
    assert all(set(e) >= {"t", "type"} for e in doc["events"])
    assert doc["summary"]["costUSD"] == pytest.approx(1.21, abs=0.005)
    assert doc["summary"]["nodes"]["g5.xlarge"] == {"on-demand": 1, "spot": 2}


def test_yaml_is_the_same_document_as_json(capsys: Any, monkeypatch: Any) -> None:
    as_json = json.loads(ok(["simulate", SPOT_ICE, "-o", "json"], capsys, monkeypatch))
    as_yaml = yaml.safe_load(ok(["simulate", SPOT_ICE, "-o", "yaml"], capsys, monkeypatch))
    assert as_yaml == as_json


def test_the_events_file_equals_the_documents_events_line_by_line(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    events = tmp_path / "events.jsonl"
    doc = json.loads(
        ok(["simulate", SPOT_ICE, "-o", "json", "--events", str(events)], capsys, monkeypatch)
    )
    lines = events.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(doc["events"]) > 0
    for line, event in zip(lines, doc["events"], strict=True):
        assert json.loads(line) == event


def test_events_to_stdout_replace_the_table(capsys: Any, monkeypatch: Any) -> None:
    out = ok(["simulate", SPOT_ICE, "--events", "-"], capsys, monkeypatch)
    doc = json.loads(ok(["simulate", SPOT_ICE, "-o", "json"], capsys, monkeypatch))
    assert [json.loads(line) for line in out.splitlines()] == doc["events"]


@pytest.mark.parametrize("story", DETERMINISM_STORIES)
def test_the_same_scenario_twice_gives_the_same_bytes(
    story: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    runs = []
    for i in range(2):
        events = tmp_path / f"events-{i}.jsonl"
        args = ["simulate", str(STORIES / story), "-o", "json", "--events", str(events)]
        runs.append((ok(args, capsys, monkeypatch), events.read_bytes()))
    assert runs[0] == runs[1]
    assert runs[0][1]  # events were written


def test_a_region_that_agrees_with_the_scenario_is_accepted(capsys: Any, monkeypatch: Any) -> None:
    args = ["simulate", SPOT_ICE, "--region", "us-east-1", "--kubernetes-version", "1.36"]
    assert "Simulated 1h00m00s: $1.21 for 3 nodes" in ok(args, capsys, monkeypatch)


def test_the_scenarios_region_is_the_one_that_runs(capsys: Any, monkeypatch: Any) -> None:
    # spec.region eu-west-1 (no capacity event, nothing pending): eu-west-1's catalog is loaded.
    out = ok(["simulate", str(BAD / "region-mismatch.yaml")], capsys, monkeypatch)
    assert "in eu-west-1, Kubernetes 1.36" in out.splitlines()[0]


def test_a_catalog_file_replaces_the_bundled_one(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    # Only g5.xlarge, on-demand only, at a price of our own: the launch says so.
    ref = resources.files("gpucap.data.catalog").joinpath("instance-types.json")
    entries = unpack_catalog_columns(json.loads(ref.read_text(encoding="utf-8")))
    entry = {
        **next(e for e in entries if e["name"] == "g5.xlarge"),
        "on_demand_price_usd_per_hour": 2.0,
        "capacity_types": ["on-demand"],
    }
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps([entry]), encoding="utf-8")
    args = ["simulate", str(STORIES / "interrupt.yaml"), "--catalog", str(catalog)]
    out = ok(args, capsys, monkeypatch)
    assert "on-demand g5.xlarge in us-east-1a launched (gpu-1, $2.0000/h)" in out


# ---- bad input -----------------------------------------------------------------------------------
BAD_SCENARIOS = sorted(p.name for p in BAD.glob("*.yaml") if p.name != "region-mismatch.yaml")


@pytest.mark.parametrize("name", BAD_SCENARIOS)
def test_a_bad_scenario_is_one_line_and_exit_2(name: str, capsys: Any, monkeypatch: Any) -> None:
    code, out, err = gpucap(["simulate", str(BAD / name)], capsys, monkeypatch)
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith(f"error: {BAD / name}: ")


def _scenario(where: Path, body: str, **files: str) -> str:
    for name, text in files.items():
        (where / name).write_text(text, encoding="utf-8")
    path = where / "scenario.yaml"
    path.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n" + body,
        encoding="utf-8",
    )
    return str(path)


def _story(name: str) -> str:
    return (STORIES / name).read_text(encoding="utf-8")


def test_a_bad_startup_annotation_found_at_run_time_is_one_line(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    vllm = _story("vllm.yaml").replace('startup-seconds: "84"', 'startup-seconds: "soon"')
    path = _scenario(
        tmp_path,
        "  duration: 30m\n  manifests: [nc.yaml, np.yaml, dp.yaml, vllm.yaml]\n",
        **{
            "nc.yaml": _story("nodeclass.yaml"),
            "np.yaml": _story("nodepool.yaml"),
            "dp.yaml": _story("device-plugin.yaml"),
            "vllm.yaml": vllm,
        },
    )
    events = tmp_path / "events.jsonl"
    code, out, err = gpucap(["simulate", path, "--events", str(events)], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert err == [
        f"error: {path}: pod default/vllm-0: annotation gpucap.dev/startup-seconds: 'soon' is "
        "not a number of seconds >= 0"
    ]
    assert "PodBound" in events.read_text()  # what happened before it stays in the file


def test_loader_warnings_print_as_plan_prints_them(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {}\n"
    path = _scenario(tmp_path, "  duration: 5m\n  manifests: [svc.yaml]\n", **{"svc.yaml": service})
    code, out, err = gpucap(["simulate", path], capsys, monkeypatch)
    assert code == 0
    assert len(err) == 1
    assert err[0].startswith("warning: ")
    assert "Service" in err[0]
    assert "Simulated 5m00s: $0.00 for 0 nodes" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["/nonexistent/s.yaml"],
            "error: /nonexistent/s.yaml: cannot read: No such file or directory",
        ),
        ([str(STORIES)], f"error: {STORIES}: cannot read: Is a directory"),
        (["-"], "error: SCENARIO: a scenario is read from a file"),
        (
            [SPOT_ICE, "--region", "us-west-2"],
            "error: --region us-west-2: the scenario runs in spec.region us-east-1",
        ),
        (
            [SPOT_ICE, "--kubernetes-version", "1.35"],
            "error: --kubernetes-version 1.35: the scenario runs Kubernetes 1.36",
        ),
        ([SPOT_ICE, "--region", "nowhere"], "error: --region: 'nowhere' is not an AWS region"),
        ([SPOT_ICE, "--zones", "eu-west-1a"], "error: zone eu-west-1a is not a zone of us-east-1"),
        ([SPOT_ICE, "-o", "wide"], "error: --output 'wide' is not one of table, json, yaml"),
        ([SPOT_ICE, "-o", "json", "--events", "-"], "error: --events -: stdout already carries"),
        ([SPOT_ICE, "-o", "json", "--watch"], "error: --watch: the watch pane is a table"),
        ([SPOT_ICE, "--watch", "--events", "-"], "error: --watch: stdout shows the watch pane"),
        ([SPOT_ICE, "--watch", "--speed", "0"], "error: --speed: 0.0 is not a positive"),
        ([SPOT_ICE, "--speed", "nan"], "error: --speed: nan is not a positive"),
        ([SPOT_ICE, "--events", str(STORIES)], f"error: --events {STORIES}: cannot write"),
        ([SPOT_ICE, "--catalog", "/nonexistent.json"], "error: /nonexistent.json: cannot read"),
    ],
)
def test_bad_input_and_conflicting_options_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: Any, monkeypatch: Any
) -> None:
    code, out, err = gpucap(["simulate", *args], capsys, monkeypatch)
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith(message)


# ---- --watch and the progress bar ---------------------------------------------------------------
def test_watch_off_a_terminal_prints_the_last_pane_then_the_table(
    capsys: Any, monkeypatch: Any
) -> None:
    out = ok(["simulate", SPOT_ICE, "--watch", "--speed", "100000"], capsys, monkeypatch)
    lines = out.splitlines()
    assert lines[0] == "gpucap simulate spot-ice: 100000x"
    assert lines[1] == "01:00:00  3 nodes  0 pods pending  $1.21 so far"
    assert any(
        line.split()[:5] == ["gpu-4", "g5.xlarge", "spot", "us-east-1a", "9m59s"] for line in lines
    )
    assert "Simulated 1h00m00s: $1.21 for 3 nodes" in lines


class FakeWall:
    """A wall clock that moves only when slept on (and a little on each reading, so a loop
    that never sleeps would still end)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.slept = 0.0

    def now(self) -> Any:
        raise AssertionError("the CLI paces on monotonic time only")

    def monotonic(self) -> float:
        self.t += 1e-6
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept += seconds
        self.t += seconds


def _terminal() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=200, height=60), buffer


def _run(opts: SimulateOptions, wall: FakeWall, **consoles: Console) -> None:
    run(
        opts,
        catalog_for=load_catalog,
        out=Terminal(),
        err=Terminal(stderr=True),
        clock=wall,
        sleep=wall.sleep,
        **consoles,
    )


def test_watch_on_a_terminal_paces_the_run_at_the_speed_and_redraws(capsys: Any) -> None:
    wall = FakeWall()
    console, screen = _terminal()
    _run(SimulateOptions(SPOT_ICE, watch=True, speed=60), wall, stdout_console=console)
    # An hour at 60x is a minute of wall time, give or take a frame.
    assert 60 - FRAME_SECONDS <= wall.slept <= 60 + FRAME_SECONDS
    drawn = screen.getvalue()
    assert drawn.count("gpucap simulate spot-ice: 60x") > 100  # redrawn about 10 times a second
    assert re.search(r"00:3\d:\d\d  2 nodes", drawn)  # the clock moves between events too
    assert "01:00:00  3 nodes  0 pods pending  $1.21 so far" in drawn
    out = capsys.readouterr().out  # the table follows the pane
    assert "Simulated 1h00m00s: $1.21 for 3 nodes" in out


def test_the_watch_pane_at_a_time_shows_only_what_happened_by_then() -> None:
    events = json.loads(_json(SPOT_ICE))["events"]
    log = [Event.from_json(e) for e in events]
    console, _ = _terminal()
    wall = FakeWall()
    watch = Watch(log, name="s", speed=1, clock=wall, sleep=wall.sleep, console=console)
    at_10m = "\n".join(watch.frame(600))
    assert "gpu-1" in at_10m
    assert "gpu-3" not in at_10m  # launched at 15:11
    assert at_10m.endswith("scenario: spot g5.xlarge in every zone: no capacity")
    at_15m01 = watch.frame(15 * 60 + 1)  # the ICE, before the fallback
    assert at_15m01[-1].endswith("unavailable: gpu-2 not launched, its pods wait")
    # The pod controller's requeue at 15:10 and one batch later the on-demand fallback.
    assert "gpu-3" not in "\n".join(watch.frame(15 * 60 + 10))
    assert "gpu-3" in "\n".join(watch.frame(15 * 60 + 11))


def _json(path: str) -> str:
    buffer = io.StringIO()
    real, sys.stdout = sys.stdout, buffer
    try:
        _run(SimulateOptions(path, output="json"), FakeWall())
    finally:
        sys.stdout = real
    return buffer.getvalue()


def test_the_progress_bar_shows_on_a_terminal_for_a_long_run_only() -> None:
    console, screen = _terminal()
    wall = FakeWall()
    bar = ProgressBar(3600, console=console, clock=wall, after=0.5)
    bar.step(60)
    assert bar.progress is None  # a fast run shows nothing
    wall.sleep(1)
    bar.step(1800)
    assert bar.progress is not None
    assert bar.progress.tasks[0].completed == 1800
    bar.close()
    assert "simulating" in screen.getvalue()


@pytest.mark.parametrize(("output", "shown"), [("table", True), ("json", False), ("yaml", False)])
def test_the_progress_bar_is_never_part_of_machine_output(
    output: str, shown: bool, capsys: Any
) -> None:
    console, screen = _terminal()

    class Slow(FakeWall):
        def monotonic(self) -> float:  # every reading a second later: every run is long
            self.t += 1.0
            return self.t

    _run(SimulateOptions(SPOT_ICE, output=output), Slow(), stderr_console=console)
    assert ("simulating" in screen.getvalue()) is shown
    assert "simulating" not in capsys.readouterr().out
