"""A scenario's metric traces (`sim/metrics.py`): what they read, and every bad input as one
line naming the file and the field."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.sim.metrics import Trace
from gpucap.sim.scenario import LoadedScenario, ScenarioError, load_scenario

GOOD = Path(__file__).parent / "scenarios" / "good"

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: vllm}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}
  maxReplicas: 8
  metrics:
  - type: External
    external:
      metric: {name: requests_per_second}
      target: {type: AverageValue, averageValue: "80"}
"""


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("us-east-1")


def scenario(tmp_path: Path, metrics: str, *, hpa: str = HPA, csv: str | None = None) -> str:
    for name in ("nodeclass.yaml", "nodepool.yaml", "vllm.yaml"):
        shutil.copy(GOOD / name, tmp_path / name)
    (tmp_path / "hpa.yaml").write_text(hpa)
    if csv is not None:
        (tmp_path / "demand.csv").write_text(textwrap.dedent(csv))
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: gpucap.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec:\n  duration: 1h\n"
        "  manifests: [nodeclass.yaml, nodepool.yaml, vllm.yaml, hpa.yaml]\n"
        f"  metrics:\n{textwrap.indent(textwrap.dedent(metrics), '    ')}"
    )
    return str(path)


def load(tmp_path: Path, catalog: Catalog, metrics: str, **kw: str) -> LoadedScenario:
    return load_scenario(scenario(tmp_path, metrics, **kw), catalog)


def problem(tmp_path: Path, catalog: Catalog, metrics: str, **kw: str) -> str:
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, catalog, metrics, **kw)
    (line,) = err.value.lines()
    return line.removeprefix(str(tmp_path / "s.yaml") + ": ")


CSV = """\
time,rps,other
0,100,1
60,200,2
120,50,3
"""


def test_a_csv_trace_feeds_the_hpa_named(tmp_path: Path, catalog: Catalog) -> None:
    s = load(tmp_path, catalog, "- {hpa: vllm, trace: demand.csv, scale: 2}\n", csv=CSV)
    (feed,) = s.metrics
    assert (feed.namespace, feed.name, feed.metric) == ("default", "vllm", None)
    assert feed.trace.column == "rps"  # the first value column
    assert feed.trace.values == (200, 400, 100)  # scaled
    assert str(tmp_path / "demand.csv") in s.inputs


def test_a_named_column_is_read(tmp_path: Path, catalog: Catalog) -> None:
    s = load(
        tmp_path, catalog, "- {hpa: default/vllm, trace: demand.csv, column: other}\n", csv=CSV
    )
    assert s.metrics[0].trace.values == (1, 2, 3)


def test_the_value_is_the_last_sample_at_or_before_t() -> None:
    trace = Trace("x", "rps", (0, 60, 120), (100, 200, 50))
    assert [trace.at(t) for t in (0, 59.9, 60, 119, 120, 10_000)] == [100, 100, 200, 200, 50, 50]


def test_before_the_first_sample_the_first_value_holds() -> None:
    assert Trace("x", "rps", (30, 60), (7, 9)).at(0) == 7


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=30, unique=True), st.floats(0, 2e6))
def test_the_trace_is_a_step_function(times: list[float], t: float) -> None:
    times.sort()
    trace = Trace("x", "v", tuple(times), tuple(range(len(times))))
    before = [i for i, s in enumerate(times) if s <= t]
    assert trace.at(t) == (before[-1] if before else 0)


def test_a_bundled_trace_is_read_from_the_package(tmp_path: Path, catalog: Catalog) -> None:
    s = load(tmp_path, catalog, "- {hpa: vllm, trace: 'bundled:azure-llm-conv'}\n")
    trace = s.metrics[0].trace
    assert trace.column == "requests_per_second"
    assert trace.times[:3] == (0, 60, 120)
    assert len(trace.times) == 60  # an hour, per minute


def test_the_diurnal_trace_is_a_day_per_minute(tmp_path: Path, catalog: Catalog) -> None:
    s = load(tmp_path, catalog, "- {hpa: vllm, trace: 'bundled:diurnal-24h'}\n")
    trace = s.metrics[0].trace
    assert len(trace.times) == 24 * 60
    assert trace.at(4 * 3600) < trace.at(16 * 3600)


def test_an_hpa_not_in_the_manifests_is_an_error(tmp_path: Path, catalog: Catalog) -> None:
    assert problem(tmp_path, catalog, "- {hpa: vlm, trace: demand.csv}\n", csv=CSV) == (
        "metrics[0].hpa: no HorizontalPodAutoscaler 'vlm' in the scenario's manifests "
        "(did you mean 'vllm'?)"
    )


def test_a_missing_trace_file_is_an_error(tmp_path: Path, catalog: Catalog) -> None:
    line = problem(tmp_path, catalog, "- {hpa: vllm, trace: nope.csv}\n")
    assert line.startswith("metrics[0].trace: ")
    assert "nope.csv" in line


def test_an_unknown_bundled_trace_is_an_error(tmp_path: Path, catalog: Catalog) -> None:
    assert problem(tmp_path, catalog, "- {hpa: vllm, trace: 'bundled:azure-llm-con'}\n") == (
        "metrics[0].trace: no bundled trace 'azure-llm-con' (did you mean 'azure-llm-conv'?); "
        "gpucap bundles azure-llm-code, azure-llm-conv, diurnal-24h"
    )


def test_an_unknown_column_is_an_error(tmp_path: Path, catalog: Catalog) -> None:
    metrics = "- {hpa: vllm, trace: demand.csv, column: rpss}\n"
    assert problem(tmp_path, catalog, metrics, csv=CSV) == (
        "metrics[0].column: demand.csv has no column 'rpss' (did you mean 'rps'?)"
    )


@pytest.mark.parametrize(
    ("csv", "expected"),
    [
        (
            "time,rps\n0,1\n60,2\n30,3\n",
            "demand.csv line 4: time 30 is not after the row before (60); times must increase",
        ),
        ("t,rps\n0,1\n", "demand.csv: the header has no 'time' column (t, rps)"),
        ("time\n0\n", "demand.csv: no value column beside 'time'"),
        ("time,rps\n0,abc\n", "demand.csv line 2: rps 'abc' is not a number"),
        ("time,rps\n0,1,2\n", "demand.csv line 2: 3 fields, the header has 2"),
        ("time,rps\n0,-1\n", "demand.csv line 2: rps -1 is negative"),
        ("time,rps\n", "demand.csv: no rows under the header"),
        ("", "demand.csv: empty; a trace has a header with a time column"),
    ],
)
def test_a_bad_csv_is_one_line_naming_file_and_line(
    tmp_path: Path, catalog: Catalog, csv: str, expected: str
) -> None:
    metrics = "- {hpa: vllm, trace: demand.csv}\n"
    assert problem(tmp_path, catalog, metrics, csv=csv) == f"metrics[0].trace: {expected}"


def test_a_metric_the_hpa_lacks_is_an_error(tmp_path: Path, catalog: Catalog) -> None:
    metrics = "- {hpa: vllm, trace: demand.csv, metric: requests}\n"
    assert problem(tmp_path, catalog, metrics, csv=CSV) == (
        "metrics[0].metric: HorizontalPodAutoscaler vllm has no metric 'requests'; it has "
        "requests_per_second"
    )


def test_two_traces_for_one_metric_are_an_error(tmp_path: Path, catalog: Catalog) -> None:
    metrics = "- {hpa: vllm, trace: demand.csv}\n- {hpa: vllm, trace: demand.csv}\n"
    assert problem(tmp_path, catalog, metrics, csv=CSV) == (
        "metrics[1].hpa: metrics[0] already feeds HorizontalPodAutoscaler default/vllm"
    )


def test_a_cpu_metric_is_said_to_be_not_simulated(tmp_path: Path, catalog: Catalog) -> None:
    hpa = HPA + (
        "  - type: Resource\n"
        "    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}\n"
    )
    s = load(tmp_path, catalog, "- {hpa: vllm, trace: demand.csv}\n", hpa=hpa, csv=CSV)
    assert s.warnings == (
        "HorizontalPodAutoscaler default/vllm: metrics[1] (Resource cpu) is not simulated: "
        "the HPA leaves replicas alone for it",
    )
