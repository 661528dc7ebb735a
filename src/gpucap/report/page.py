"""The report as one self-contained HTML file: Jinja2 renders the page, plotly.js is inlined,
nothing is fetched when it is opened (no CDN, no fonts, no images from elsewhere).

- `SimulationSection` / `PlanSection` / `SimulationSetSection`: what one part of the page shows
  (a run of the simulator, a plan, or a set of runs: `simulate --runs`, `report/runset.py`;
  `SweepSection`, a sweep's variants: `report/sweep.py`),
  with its title and the sentences said above it.
- `render_page(title, sections)`: the HTML text. Each figure (`report/figures.py`) goes in as
  JSON inside `<script type="application/json">` with `<`, `>` and `&` escaped, so a name from a
  manifest cannot close the script; every other text goes through Jinja2's HTML autoescape.
  A run's section shows the summary's tables and facts from `report/summary.py`, the view the
  terminal's `format_summary` prints, so both say the same numbers in the same words.
- `write_report(path, title, sections)`: writes it; an `OSError` names the problem.
- `plotly_js()`: plotly.js as the `plotly` package ships it (read once, not imported).

Called by the CLI's `simulate --report`, `plan --report` and `demo --report`, and by the tests.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from gpucap import __version__
from gpucap.report.figures import CAPACITY_COLORS, plan_figure, simulation_figure
from gpucap.report.optimal import OptimalSection
from gpucap.report.plan import PlanView
from gpucap.report.runset import SET_HEADER, SetView, set_figures, set_table
from gpucap.report.simulation import SimulationView
from gpucap.report.summary import summary_view
from gpucap.report.sweep import SweepSection
from gpucap.runtime.clock import EPOCH
from gpucap.sim.timeline import clock_time, format_duration

__all__ = [
    "PlanSection",
    "SimulationSection",
    "SimulationSetSection",
    "SweepSection",
    "figure_json",
    "plotly_js",
    "render_page",
    "write_report",
]


@dataclass(frozen=True, slots=True)
class SimulationSection:
    title: str
    view: SimulationView
    sentences: Sequence[str] = ()
    start: dt.datetime = EPOCH
    subtitle: str = ""


@dataclass(frozen=True, slots=True)
class PlanSection:
    title: str
    view: PlanView
    sentences: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class SimulationSetSection:
    title: str
    view: SetView
    sentences: Sequence[str] = ()
    start: dt.datetime = EPOCH
    subtitle: str = ""


Section = SimulationSection | PlanSection | SimulationSetSection | OptimalSection | SweepSection


@functools.cache
def plotly_js() -> str:
    """plotly.min.js from the installed `plotly` package (its `package_data`), read as text
    without importing the package (its import costs more than the file)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        raise RuntimeError("the plotly package is not installed (pip install plotly)")
    path = Path(spec.origin).parent / "package_data" / "plotly.min.js"
    text = path.read_text(encoding="utf-8")
    if "</script" in text.lower():  # never the case; checked because the page inlines it
        raise RuntimeError(f"{path} contains '</script' and cannot be inlined")
    return text


def figure_json(figure: dict[str, Any]) -> str:
    """`figure` as JSON safe inside a `<script>` element (`<`, `>`, `&` as \\u escapes)."""
    text = json.dumps(figure, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpucap.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["duration"] = format_duration
    env.filters["money"] = lambda d: "-" if d is None else f"${d:,.2f}"
    env.filters["price"] = lambda p: "-" if p is None else f"${p:.4f}/h"
    return env


def _context(title: str, sections: Sequence[Section]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for i, s in enumerate(sections):
        anchor = f"section-{i + 1}"
        if isinstance(s, SimulationSection):
            parts.append(
                {
                    "kind": "simulation",
                    "anchor": anchor,
                    "section": s,
                    "figure": figure_json(simulation_figure(s.view, start=s.start)),
                    "summary": summary_view(s.view.summary, start=s.start),
                    "rows": [
                        {"at": clock_time(r.t, s.start), "category": r.category, "text": r.text}
                        for r in s.view.timeline
                    ],
                    "categories": sorted({r.category for r in s.view.timeline}),
                }
            )
        elif isinstance(s, SimulationSetSection):
            parts.append(
                {
                    "kind": "set",
                    "anchor": anchor,
                    "section": s,
                    "figures": [figure_json(f) for f in set_figures(s.view, start=s.start)],
                    "header": SET_HEADER,
                    "rows": set_table(s.view.summary),
                }
            )
        elif isinstance(s, OptimalSection):
            parts.append({"kind": "optimal", "anchor": anchor, "section": s})
        elif isinstance(s, SweepSection):
            parts.append(
                {
                    "kind": "sweep",
                    "anchor": anchor,
                    "section": s,
                    "figures": [figure_json(f) for f in s.figures],
                }
            )
        else:
            parts.append(
                {
                    "kind": "plan",
                    "anchor": anchor,
                    "section": s,
                    "figure": figure_json(plan_figure(s.view)) if s.view.claims else None,
                }
            )
    return {
        "title": _page_title(title, sections),
        "version": __version__,
        "parts": parts,
        "colors": CAPACITY_COLORS,
        "plotly_js": plotly_js(),
    }


def _page_title(title: str, sections: Sequence[Section]) -> str:
    """The page's `<title>` and heading. A page of one run (`simulate --report`) also says its
    section's subtitle, which names the scenario and its file (`Scenario NAME (PATH): ...`), so a
    browser tab or a bookmark tells two scenarios' reports apart."""
    one = sections[0] if len(sections) == 1 else None
    if isinstance(one, SimulationSection | SimulationSetSection | SweepSection) and one.subtitle:
        return f"{title}: {one.subtitle}"
    return title


def render_page(title: str, sections: Sequence[Section]) -> str:
    """The report's HTML (see the module docstring)."""
    return _environment().get_template("report.html.j2").render(**_context(title, sections))


def write_report(path: str, title: str, sections: Sequence[Section]) -> None:
    """Write the report to `path` (UTF-8); raises OSError (or ValueError for a NUL in the
    name) for the caller to say in one line."""
    html = render_page(title, sections)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(html)
