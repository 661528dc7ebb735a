"""The reports through the installed command, in process (`CliRunner` on the app): the simulate
report carries the summary the terminal prints for the same run, table for table and fact for
fact, and names its scenario; the plan report's price axis keeps a $0.04/h CPU node visible
beside a $12.59/h GPU node."""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpucap.cli.main import app
from gpucap.report.figures import dollars_per_hour, price_ticks
from tests.report.runs import STORIES

runner = CliRunner()


class _Page(HTMLParser):
    """The report's summary as the page shows it: each `data-table` table's header and rows,
    each `data-fact` paragraph's text, the `<title>`, the `<h1>`, and the figures' JSON."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.facts: dict[str, str] = {}
        self.title = ""
        self.h1 = ""
        self.figures: list[dict[str, Any]] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._text: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("data-table"):
            self._table = a["data-table"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "p" and a.get("data-fact"):
            self._text = (f"fact:{a['data-fact']}", [])
        elif tag == "title" and not self.title:
            self._text = ("title", [])
        elif tag == "h1":
            self._text = ("h1", [])
        elif tag == "script" and a.get("class") == "figure":
            self._text = ("figure", [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif self._text is not None and tag in ("p", "title", "h1", "script"):
            key, parts = self._text
            text = "".join(parts)
            if key.startswith("fact:"):
                self.facts[key[5:]] = text
            elif key == "figure":
                self.figures.append(json.loads(text))
            else:
                setattr(self, key, text)
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._text is not None:
            self._text[1].append(data)


def page(path: Path) -> _Page:
    parsed = _Page()
    parsed.feed(path.read_text(encoding="utf-8"))
    return parsed


def terminal_table(out: list[str], first_header: str) -> list[list[str]]:
    """The terminal's table whose header starts with `first_header`, cut at its header's column
    starts (a blank cell, the total row's capacity, stays a blank cell)."""
    start = next(i for i, line in enumerate(out) if line.startswith(first_header + " "))
    header = out[start]
    cuts = [0] + [m.end() for m in re.finditer(r"  +", header)]
    rows = []
    for line in out[start:]:
        if not line.strip() or line.startswith("("):
            break
        cells = [line[a:b].strip() for a, b in zip(cuts, [*cuts[1:], None], strict=True)]
        rows.append(cells)
    return rows


def simulate(story: str, tmp_path: Path) -> tuple[list[str], _Page]:
    report = tmp_path / "run.html"
    result = runner.invoke(app, ["simulate", str(STORIES / story), "--report", str(report)])
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    return out[next(i for i, line in enumerate(out) if line.startswith("Simulated ")) :], page(
        report
    )


@pytest.mark.parametrize("story", ["limits.yaml", "spot-ice.yaml", "no-plugin.yaml"])
def test_the_simulate_report_shows_the_terminals_summary_tables_with_the_same_numbers(
    story: str, tmp_path: Path
) -> None:
    out, html = simulate(story, tmp_path)
    cost = terminal_table(out, "INSTANCE TYPE")
    assert html.tables["cost"] == cost  # cost, node-hours, GPU-hours per type and the total
    assert cost[-1][0] == "total"
    assert html.tables["latency"] == terminal_table(out, "TIME FROM CREATION TO")  # the p95s
    if any(line.startswith("GPU RESOURCE ") for line in out):
        assert html.tables["gpu-hours"] == terminal_table(out, "GPU RESOURCE")
    else:
        assert "gpu-hours" not in html.tables


@pytest.mark.parametrize("story", ["limits.yaml", "no-plugin.yaml", "spot-ice.yaml"])
def test_the_simulate_report_says_the_terminals_facts_in_the_same_words(
    story: str, tmp_path: Path
) -> None:
    out, html = simulate(story, tmp_path)
    prose = [line for line in out if re.match(r"[A-Z][a-zA-Z ]+(:| \()", line)]
    prose = [line for line in prose if not line.startswith("Simulated ")]
    assert sorted(prose) == sorted(html.facts.values())


def test_the_simulate_report_lists_the_pods_pending_at_the_end_with_why(tmp_path: Path) -> None:
    out, html = simulate("limits.yaml", tmp_path)
    at = out.index("Pending at the end (1):")
    pod, since, why = html.tables["pending"][1]
    assert out[at + 1] == f"  {pod} (since {since}): {why}"
    assert why.startswith('nodepool "gpu": all available instance types exceed limits')


def test_the_simulate_reports_title_and_heading_name_the_scenario_and_its_file(
    tmp_path: Path,
) -> None:
    _, html = simulate("spot-ice.yaml", tmp_path)
    for text in (html.title, html.h1):
        assert "spot-ice" in text  # its metadata.name
        assert str(STORIES / "spot-ice.yaml") in text  # its file


_MANIFESTS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: cpu}
spec:
  template:
    metadata: {labels: {pool: cpu}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [t3a.medium]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    metadata: {labels: {pool: gpu}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [g6e.48xlarge]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeSelector: {pool: cpu}
  containers:
    - {name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: default}
spec:
  nodeSelector: {pool: gpu}
  containers:
    - name: train
      image: trainer
      resources: {limits: {nvidia.com/gpu: 8}}
"""


def test_the_plan_reports_log_price_axis_keeps_a_cheap_cpu_node_visible_beside_a_gpu_node(
    tmp_path: Path,
) -> None:
    manifests = tmp_path / "fleet.yaml"
    manifests.write_text(_MANIFESTS, encoding="utf-8")
    report = tmp_path / "plan.html"
    result = runner.invoke(app, ["plan", str(manifests), "--report", str(report)])
    assert result.exit_code == 0, result.output
    (figure,) = page(report).figures
    xaxis = figure["layout"]["xaxis"]
    assert xaxis["type"] == "log"
    assert "log scale" in xaxis["title"]["text"]
    assert all(label.startswith("$") and label.endswith("/h") for label in xaxis["ticktext"])
    launched = next(t for t in figure["data"] if t["name"] == "launched")
    prices = dict(zip(launched["y"], launched["x"], strict=True))
    cpu = next(p for label, p in prices.items() if label.endswith("t3a.medium"))
    gpu = next(p for label, p in prices.items() if label.endswith("g6e.48xlarge"))
    assert (round(cpu, 4), round(gpu, 4)) == (0.0376, 12.5919)
    lo, hi = xaxis["range"]
    place = (math.log10(cpu) - lo) / (hi - lo)  # where the dot sits across the plot, 0 to 1
    assert 0.02 < place < 0.2  # on the plot, clear of its edge: not squashed onto zero
    assert (math.log10(gpu) - lo) / (hi - lo) > 0.8
    assert launched["type"] == "scatter"
    assert launched["marker"]["size"] >= 10  # the same dot for the cheap node as the dear one
    labels = dict(zip(xaxis["tickvals"], xaxis["ticktext"], strict=True))
    assert (labels[0.05], labels[10]) == ("$0.05/h", "$10/h")


@given(
    st.lists(st.floats(min_value=0.0001, max_value=500.0), min_size=1, max_size=6),
)
def test_the_price_ticks_bracket_every_price_in_1_2_5_steps_labelled_in_dollars_per_hour(
    prices: list[float],
) -> None:
    lo, hi = min(prices), max(prices)
    ticks = price_ticks(lo, hi)
    assert ticks == sorted(ticks)
    assert ticks[0] <= lo
    assert ticks[-1] >= hi
    assert ticks[0] > lo / 10  # and starts no further than one step of ten below it
    for tick in ticks:
        mantissa = tick / 10 ** math.floor(math.log10(tick) + 1e-9)
        assert round(mantissa, 6) in (1, 2, 5)
        label = dollars_per_hour(tick)
        assert label.startswith("$")
        assert label.endswith("/h")
        assert math.isclose(float(label[1:-2].replace(",", "")), tick)
