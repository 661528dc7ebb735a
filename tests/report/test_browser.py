"""Each report opened in a real headless Chromium (Debian's `chromium`, driven by Playwright with
that system browser; never a downloaded one), with every request that is not the file itself
aborted and recorded: no console errors, nothing requested, every chart drawn with its node rows
and series, a real mouse hover over a node naming its instance type and why it went away, and
the event filter working. A screenshot of each goes to pytest's tmp dir and to
`build/report-screenshots/`.

Without a browser (or Playwright) the tests skip and say why; in CI (`CI=true`) they fail instead,
since `.ci/run` installs Chromium there.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gpucap.cli import main as cli_main
from tests.report.runs import STORIES

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "report-screenshots"
WORKSHOP = str(resources.files("gpucap.data").joinpath("examples", "workshop"))


def _chromium() -> str | None:
    for candidate in (os.environ.get("GPUCAP_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401, PLC0415
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if _chromium() is None:
        return "no chromium on PATH (Debian: apt-get install -y chromium)"
    return None


MISSING = _missing()
if MISSING is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run in CI: {MISSING}", pytrace=False)
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)

from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Route, sync_playwright  # noqa: E402


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["gpucap", *args])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    assert exit_info.value.code in (0, None)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three reports, written by the CLI: a small story, the workshop plan, the demo."""
    out = tmp_path_factory.mktemp("reports")
    made = {
        "simulate": (["simulate", str(STORIES / "underutilized.yaml")], out / "simulate.html"),
        "plan": (["plan", WORKSHOP], out / "plan.html"),
        "demo": (["demo"], out / "demo.html"),
    }
    with pytest.MonkeyPatch.context() as mp:
        for args, path in made.values():
            _run([*args, "--report", str(path)], mp)
    return {name: path for name, (_, path) in made.items()}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Opened:
    """A report open in a page, with what it asked the network for and what it logged."""

    def __init__(self, browser: Browser, path: Path) -> None:
        self.requested: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.route("**/*", self._route)
        self.page: Page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("request", self._request)
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-charts=drawn]", timeout=20_000)

    def _route(self, route: Route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    def _request(self, request: Request) -> None:
        if not request.url.startswith("file://"):
            self.requested.append(request.url)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def shot(self, name: str, tmp_path: Path) -> Path:
        path = tmp_path / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SHOTS / path.name)
        return path

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def opened(browser: Browser, reports: dict[str, Path]) -> Iterator[Any]:
    """`opened(name)`: the report `name` open in its own page, opened once for the module (the
    page keeps recording requests and console errors for every test that uses it)."""
    pages: dict[str, Opened] = {}

    def open_(name: str) -> Opened:
        if name not in pages:
            pages[name] = Opened(browser, reports[name])
        return pages[name]

    yield open_
    for p in pages.values():
        p.close()


def _figure_counts(page: Page, chart: str) -> dict[str, int]:
    """What plotly drew in the chart `chart` (its SVG) against what its figure holds."""
    return page.evaluate(
        """(id) => {
          const gd = document.getElementById(id);
          return {
            svg: gd.querySelectorAll('svg.main-svg').length,
            figure: gd.data.length,
            drawn: gd.querySelectorAll('.barlayer .trace, .scatterlayer .trace').length,
            rows: gd.querySelectorAll('.yaxislayer-above .ytick').length,
            legend: gd.querySelectorAll('.legend .traces').length,
          };
        }""",
        chart,
    )


def _hover_node(page: Page, chart: str, row: str, phase: str) -> str:
    """Move the mouse onto the bar of `row` in the trace `phase` and read plotly's hover label."""
    box = page.evaluate(
        """([id, row, phase]) => {
          const gd = document.getElementById(id);
          for (const el of gd.querySelectorAll('.barlayer g.point')) {
            const trace = el.parentNode.__data__[0].trace;
            if (trace.name === phase && trace.y[el.__data__.i] === row) {
              const r = el.getBoundingClientRect();
              return {x: r.x + r.width / 2, y: r.y + r.height / 2};
            }
          }
          return null;
        }""",
        [chart, row, phase],
    )
    assert box is not None, f"no bar for {row} in {phase}"
    page.mouse.move(box["x"], box["y"])
    label = page.wait_for_selector(f"#{chart} .hoverlayer .hovertext", timeout=5_000)
    assert label is not None
    return label.text_content() or ""


def _checked(o: Opened) -> None:
    assert o.errors == []
    assert o.requested == []


def test_the_simulation_report_draws_every_node_and_series_and_hovers_a_removed_node(
    opened: Any, tmp_path: Path
) -> None:
    o = opened("simulate")
    o.page.locator("#section-1-chart").scroll_into_view_if_needed()
    counts = _figure_counts(o.page, "section-1-chart")
    assert counts["svg"] >= 1
    assert counts["rows"] == 2  # gpu-1 and its replacement gpu-2
    assert counts["drawn"] == counts["figure"] == counts["legend"]
    # 7 bar traces (on-demand x 4 phases, 2 of them one bar long), pods 3, GPUs 3, cost 1
    assert counts["figure"] == 4 + 3 + 3 + 1
    text = _hover_node(o.page, "section-1-chart", "gpu-1 · g5.2xlarge", "on-demand · initialized")
    assert "type: g5.2xlarge" in text
    assert "removed: consolidation: its pods fit elsewhere for less" in text
    assert "created: for pending pod default/big-0" in text
    o.page.mouse.move(5, 5)
    o.shot("simulate", tmp_path)
    _checked(o)


def test_the_event_filter_keeps_the_matching_lines(opened: Any) -> None:
    o = opened("simulate")
    count = o.page.locator('[data-count="section-1"]')
    total = int((count.text_content() or "").split(" of ")[1])
    o.page.fill('input[data-filter="section-1"]', "gpu-2")
    shown = o.page.locator('table[data-events="section-1"] tbody tr:visible')
    assert 0 < shown.count() < total
    assert all("gpu-2" in (t or "") for t in shown.all_text_contents())
    assert count.text_content() == f"{shown.count()} of {total}"
    o.page.fill('input[data-filter="section-1"]', "")
    o.page.select_option('select[data-category="section-1"]', "disruption")
    rows = 'table[data-events="section-1"] tbody tr'
    disruption = o.page.locator(f'{rows}[data-category="disruption"]').count()
    assert disruption >= 1
    assert o.page.locator(f"{rows}:visible").count() == disruption
    o.page.select_option('select[data-category="section-1"]', "")
    assert o.page.locator('table[data-events="section-1"] tbody tr:visible').count() == total
    _checked(o)


def test_the_plan_report_draws_the_options_chart_and_the_tables(
    opened: Any, tmp_path: Path
) -> None:
    o = opened("plan")
    counts = _figure_counts(o.page, "section-1-chart")
    assert counts["svg"] >= 1
    assert counts["drawn"] == counts["figure"] == 2  # launched, dearer
    assert counts["rows"] == 4  # the NodeClaim's four options
    rows = o.page.locator('table[data-claims="section-1"] tbody tr')
    assert rows.count() == 1
    assert "g6.xlarge" in (rows.first.text_content() or "")
    o.shot("plan", tmp_path)
    _checked(o)


def test_the_demo_report_draws_the_acts_act3s_designs_and_both_plans(
    opened: Any, tmp_path: Path
) -> None:
    o = opened("demo")
    kinds = o.page.eval_on_selector_all("section", "els => els.map(e => e.dataset.kind)")
    assert kinds == ["simulation", "simulation", "set", "set", "plan", "plan"]
    for i in (1, 2, 5, 6):
        counts = _figure_counts(o.page, f"section-{i}-chart")
        assert counts["svg"] >= 1
        assert counts["drawn"] == counts["figure"] > 0
    rows = int(o.page.get_attribute("#section-1-chart", "data-rows") or 0)
    assert _figure_counts(o.page, "section-1-chart")["rows"] == rows == 4  # act 1's NodeClaims
    pending = o.page.locator('table[data-pending="section-6"] tbody tr')
    assert pending.count() == 2  # vLLM x 8: two pods past the 6-GPU limit
    assert "exceed limits" in (pending.first.text_content() or "")
    text = _hover_node(o.page, "section-1-chart", "gpu-3 · g6.xlarge", "on-demand · initialized")
    assert "type: g6.xlarge" in text
    assert "removed: consolidation: the node was empty" in text
    # The top of the page with the hover label showing: the README's picture (docs/).
    o.page.screenshot(path=str(tmp_path / "demo-hover.png"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tmp_path / "demo-hover.png", SHOTS / "demo-hover.png")
    o.page.mouse.move(5, 5)
    o.shot("demo", tmp_path)
    _checked(o)
