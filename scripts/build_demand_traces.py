"""Build gpucap's bundled demand traces (`src/gpucap/data/world/trace-*.csv`).

Two kinds, both per minute, with a `time` column in seconds since the trace's start (what a
scenario's `spec.metrics[].trace: bundled:NAME` reads, `sim/metrics.py`):

- `azure-llm-code`, `azure-llm-conv`: requests per minute of the Azure LLM inference trace 2023
  (Azure/AzurePublicDataset `data/AzureLLMInferenceTrace_{code,conv}.csv`, CC-BY-4.0; Patel et
  al., "Splitwise", ISCA 2024). Each request's TIMESTAMP is binned to the minute, counted from
  the minute of the first request; minutes with no request are written as 0. Columns:
  `requests_per_second` (the minute's count / 60) and `requests_per_minute`. `--source` is a git
  directory of the dataset (a clone or mirror; the file is read at `--commit`) or a directory
  holding the two CSVs.
- `diurnal-24h`: a synthetic day, made here and deterministic (no random numbers): a trough of
  20 req/s at 04:00 and a peak of 100 req/s at 16:00 (a raised cosine; the ripple adds up to
  +-5 req/s around them), with a small lunchtime
  dip and a ripple of two faster harmonics so that consecutive minutes differ, as real traffic
  does. Column `requests_per_second`.

The provenance (repository, path, commit, licence, attribution) is written to
`src/gpucap/data/world/trace-PROVENANCE.md`. Run: `python scripts/build_demand_traces.py
--source /path/to/AzurePublicDataset`.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import math
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "gpucap" / "data" / "world"
REPOSITORY = "Azure/AzurePublicDataset"
COMMIT = "b469a113cedca53ddc3bdea71a143dc4b7d8700c"
TRACES = {"azure-llm-code": "data/AzureLLMInferenceTrace_code.csv"}
TRACES["azure-llm-conv"] = "data/AzureLLMInferenceTrace_conv.csv"


def read_source(source: Path, path: str, commit: str) -> str:
    if (source / path).is_file():
        return (source / path).read_text(encoding="utf-8")
    return subprocess.run(
        ["git", "--git-dir", str(source), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def per_minute(text: str) -> list[int]:
    """Requests per minute from the first request's minute to the last's."""
    minutes: list[dt.datetime] = []
    for row in csv.DictReader(io.StringIO(text.lstrip("\ufeff"))):
        stamp = row["TIMESTAMP"].strip()
        when = dt.datetime.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")
        minutes.append(when.replace(second=0))
    first = min(minutes)
    counts = [0] * (int((max(minutes) - first).total_seconds()) // 60 + 1)
    for m in minutes:
        counts[int((m - first).total_seconds()) // 60] += 1
    return counts


def write_azure(name: str, counts: list[int]) -> None:
    lines = ["time,requests_per_second,requests_per_minute"]
    lines += [f"{60 * i},{round(n / 60, 3):g},{n}" for i, n in enumerate(counts)]
    (OUT / f"trace-{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def diurnal_rate(minute: int) -> float:
    hours = minute / 60
    # A raised cosine: 0 at 04:00, 1 at 16:00.
    base = 0.5 - 0.5 * math.cos(2 * math.pi * (hours - 4) / 24)
    lunch = -0.06 * math.exp(-(((hours - 12.5) / 0.6) ** 2))
    ripple = 0.03 * math.sin(2 * math.pi * minute / 47) + 0.02 * math.sin(2 * math.pi * minute / 13)
    return max(0.0, 20 + 80 * (base + lunch + ripple))


def write_diurnal() -> None:
    lines = ["time,requests_per_second"]
    lines += [f"{60 * m},{round(diurnal_rate(m), 1):g}" for m in range(24 * 60)]
    (OUT / "trace-diurnal-24h.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


PROVENANCE = """# Demand traces bundled with gpucap (`trace-*.csv`)

Read by a scenario's `spec.metrics[].trace: bundled:NAME` (docs/scenario.md). Built by
`scripts/build_demand_traces.py`.

## azure-llm-code, azure-llm-conv

Requests per minute of the **Azure LLM inference trace 2023**, counted from each request's
TIMESTAMP (binned to the minute from the first request's minute; a minute with no request is 0).
Columns: `time` (seconds since the trace's start), `requests_per_second` (the minute's count /
60), `requests_per_minute`.

- Source: {repo}, `{code}` and `{conv}` at commit `{commit}`
  (https://github.com/{repo}).
- Licence: Creative Commons Attribution 4.0 International (CC-BY-4.0), the repository's
  `LICENSE`; described in its `AzureLLMInferenceDataset2023.md`.
- Attribution: Pratyush Patel, Esha Choukse, Chaojie Zhang, Aashaka Shah, Íñigo Goiri, Saeed
  Maleki, Ricardo Bianchini. "Splitwise: Efficient generative LLM inference using phase
  splitting", ISCA 2024. Data: Microsoft Azure, Azure Public Dataset.
- Changes: only the per-minute counts are kept (no token counts, no individual requests).

## diurnal-24h

Synthetic, made by `scripts/build_demand_traces.py` (deterministic, no random numbers): 24 h
per minute, a trough of about 20 req/s at 04:00 and a peak of about 100 req/s at 16:00 (a raised
cosine; 16-104 req/s with the ripple),
a small lunchtime dip and a ripple of two harmonics. Column `requests_per_second`. No licence
constraint (part of gpucap).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--commit", default=COMMIT)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, path in TRACES.items():
        write_azure(name, per_minute(read_source(args.source, path, args.commit)))
    write_diurnal()
    text = PROVENANCE.format(
        repo=REPOSITORY,
        code=TRACES["azure-llm-code"],
        conv=TRACES["azure-llm-conv"],
        commit=args.commit,
    )
    (OUT / "trace-PROVENANCE.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
