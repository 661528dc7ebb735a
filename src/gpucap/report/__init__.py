"""The HTML report (issue 13): one self-contained page people can look at rather than read.

- `simulation.py`: what a simulated run shows (node bars and phases, pods, GPUs, cost, events),
  from its event log and summary alone.
- `plan.py`: what a plan shows (NodeClaims, their options and why the cheaper ones were not
  taken, pending pods with `plan --explain`'s reasons).
- `summary.py`: the run's summary as tables and facts, shared with the terminal's summary.
- `figures.py`: those as Plotly figures (JSON-ready dicts).
- `page.py`: the page, rendered by Jinja2 (`templates/report.html.j2`) with plotly.js inlined.

Above the simulator and the linter, below the CLI (`pyproject.toml`'s layers): the CLI's
`simulate --report`, `plan --report` and `demo --report` call it.
"""
