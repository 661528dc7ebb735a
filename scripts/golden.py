"""Record every output users and scripts rely on, and compare two recordings byte for byte.

Who calls it: developers before and after a change that must keep behaviour (a restructuring,
a speed-up), or that changes it on purpose (then the differing files are the change, named in
the note). Not a test: it runs the installed `gpucap` command on the repository's own inputs,
which takes a few minutes on two cores.

    python scripts/golden.py record DIR [--jobs 2] [--only SUBSTRING]
    python scripts/golden.py compare BASE NEW      # exit 1 when any file differs
    python scripts/golden.py check BASE [--jobs 2] # record into a temporary dir, then compare
    python scripts/golden.py sums DIR > tests/golden/outputs.sha256  # a recording's fingerprint

BASE is a recording (a directory) or a fingerprint file of one (`sums`: one SHA-256 per recorded
file). `make test` runs `check tests/golden/outputs.sha256`, so a change that moves any recorded
output fails CI until the fingerprint is updated in the same commit, on purpose and named in its
message. A fingerprint says which files differ, not how: record both commits to see the bytes.

What is recorded (one file per command: its exit code, stdout and stderr; plus the event log of
each simulation):
- `simulate -o json` and `--events` of every story (tests/sim/stories, and the reserved-capacity
  story in tests/sim/stories/reserved), every good scenario (tests/sim/scenarios/good), the HPA
  scenarios (tests/sim/scenarios/hpa), the bundled example stories (the demo's day under the
  spot market included) and both 24-hour bench days (bench/simulate.py's generator, disruption
  off and on);
- `simulate -o json` and `--events` of the demo's day as `gpucap demo` runs it (placeholders
  filled), and `simulate --runs 3 --workers 2 -o json` of it (a SimulationSet);
- `plan -o json|table`, `lint -o json` and one `--explain` of the reserved-capacity example
  (examples/reserved-capacity.yaml with its reservations file);
- `sweep` (table and JSON) of the README's small grid (tests/sweep/data/grid.yaml);
- `plan --optimal` (table and JSON) of the README's Cost floor examples (the two-pod g5 case,
  the workshop, the node-overlay blueprint);
- `plan -o json|yaml|table`, `plan --explain` of every unschedulable pod and of the first
  placed pod (at most 4 a input), `validate -o json` and `lint -o json` of the workshop, every
  realworld group and file (tests/realworld/PROVENANCE.yaml) and the bench's 1,000- and
  10,000-pod files (bench/plan.py's generator).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))


@dataclass(frozen=True)
class Run:
    """One command to record: `name` is the file it is recorded in (and `name.events`)."""

    name: str
    args: tuple[str, ...]
    events: bool = False


def gpucap() -> str:
    found = shutil.which("gpucap", path=str(Path(sys.executable).parent)) or shutil.which("gpucap")
    if found is None:
        sys.exit("golden: no installed gpucap command (make .venv/bin/.installed)")
    return found


def _slug(text: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    if len(keep) > 120:
        keep = keep[:100] + "-" + hashlib.sha1(text.encode()).hexdigest()[:10]
    return keep


def _realworld() -> Iterator[tuple[str, tuple[str, ...]]]:
    """(name, paths) of every realworld group and every realworld file."""
    import yaml  # noqa: PLC0415

    rw = ROOT / "tests" / "realworld"
    files = yaml.safe_load((rw / "PROVENANCE.yaml").read_text())["files"]
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(f["group"], []).append(f["file"])
    for name, members in sorted(groups.items()):
        yield f"rw-group-{name}", tuple(_rel(rw / m) for m in sorted(members))
    for f in sorted(x["file"] for x in files):
        yield f"rw-file-{f}", (_rel(rw / f),)


def plan_inputs(work: Path) -> list[tuple[str, tuple[str, ...]]]:
    """The manifest sets `plan`, `validate` and `lint` are recorded on."""
    import plan as bench_plan  # noqa: PLC0415 - bench/plan.py

    bench_plan.write_workload(work, [1000, 10000], ["json", "yaml"])
    inputs = [("workshop", ("src/gpucap/data/examples/workshop",))]
    inputs += list(_realworld())
    inputs += [
        (f"bench-{fmt}-{n}", (_rel(work / f"pods-{n}.{fmt}"),))
        for n in (1000, 10000)
        for fmt in ("json", "yaml")
    ]
    return inputs


def scenarios(work: Path) -> list[tuple[str, Path]]:
    """The scenarios `simulate` is recorded on."""
    import simulate as bench_sim  # noqa: PLC0415 - bench/simulate.py

    found = [(f"story-{p.stem}", p) for p in sorted((ROOT / "tests/sim/stories").glob("*.yaml"))]
    good = ROOT / "tests/sim/scenarios/good"
    found += [(f"scenario-{p.stem}", p) for p in sorted(good.glob("*.yaml"))]
    examples = ROOT / "src/gpucap/data/examples/story"
    found += [(f"example-{p.stem}", p) for p in sorted(examples.glob("*.yaml"))]
    reserved = ROOT / "tests/sim/stories/reserved"
    found += [(f"story-reserved-{p.stem}", p) for p in sorted(reserved.glob("*.yaml"))]
    hpa = ROOT / "tests/sim/scenarios/hpa"
    found += [(f"scenario-hpa-{p.stem}", p) for p in sorted(hpa.glob("*.yaml"))]
    for disruption in (False, True):
        tag = "on" if disruption else "off"
        out = work / f"bench-{tag}"
        out.mkdir()
        found.append((f"bench-day-{tag}", bench_sim.generate(out, disruption=disruption)))
    return [(n, p) for n, p in found if _is_scenario(p)]


def _rel(path: Path) -> str:
    """Paths relative to the checkout, so that recordings of two checkouts compare equal."""
    return str(path.resolve().relative_to(ROOT))


def _is_scenario(path: Path) -> bool:
    return "kind: Scenario" in path.read_text()


def _execute(exe: str, out: Path, run: Run) -> None:
    args = list(run.args)
    if run.events:
        args += ["--events", str(out / f"{run.name}.events")]
    proc = subprocess.run(
        [exe, *args], capture_output=True, text=True, check=False, cwd=ROOT, env=_environment()
    )
    text = f"exit: {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"
    (out / f"{run.name}.out").write_text(text)


def _environment() -> dict[str, str]:
    """The commands' environment without what styles terminal output, so recordings compare."""
    styling = ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE")
    return {k: v for k, v in os.environ.items() if k not in styling}


def _plan_runs(name: str, paths: tuple[str, ...]) -> list[Run]:
    slug = _slug(name)
    return [
        Run(f"plan-{fmt}-{slug}", ("plan", *paths, "-o", fmt)) for fmt in ("json", "yaml", "table")
    ] + [
        Run(f"validate-{slug}", ("validate", *paths, "-o", "json")),
        Run(f"lint-{slug}", ("lint", *paths, "-o", "json")),
    ]


def _reserved_runs() -> list[Run]:
    """`plan` and `lint` of the bundled reserved-capacity example with its reservations."""
    given = (
        "examples/reserved-capacity.yaml",
        "--reservations",
        "examples/reserved-capacity-reservations.yaml",
    )
    return [
        Run(f"plan-{fmt}-reserved-capacity", ("plan", *given, "-o", fmt))
        for fmt in ("json", "table")
    ] + [
        Run("lint-reserved-capacity", ("lint", *given, "-o", "json")),
        Run("explain-reserved-capacity", ("plan", *given, "--explain", "default/vllm-2")),
    ]


def _optimal_runs() -> list[Run]:
    """`plan --optimal` (issue 27) on the README's Cost floor examples: the two-pod g5 case
    (table and JSON: its what-to-change list), the workshop and a real repository's NodePools."""
    blueprint = "tests/realworld/aws-samples__karpenter-blueprints/blueprints/node-overlay"
    two = "examples/g5-batch-2-pods.yaml"
    workshop = ("src/gpucap/data/examples/workshop/", "examples/vllm-3-replicas.yaml")
    return [
        Run("optimal-table-g5-batch-2-pods", ("plan", two, "--optimal")),
        Run("optimal-json-g5-batch-2-pods", ("plan", two, "--optimal", "-o", "json")),
        Run("optimal-json-workshop", ("plan", *workshop, "--optimal", "-o", "json")),
        Run("optimal-json-node-overlay", ("plan", blueprint, "--optimal", "-o", "json")),
    ]


def _sweep_runs() -> list[Run]:
    """`gpucap sweep` (issue 26) of the README's small grid: the table with a bound, and the
    SweepResult JSON on two workers (it must not depend on the worker count)."""
    grid = "tests/sweep/data/grid.yaml"
    return [
        Run("sweep-table-grid", ("sweep", grid, "--max-serving-lost", "1m")),
        Run("sweep-json-grid", ("sweep", grid, "--workers", "2", "-o", "json")),
    ]


def _cost_floor_runs() -> list[Run]:
    """`--cost-floor` (issue 27): the README's simulate story (events and summary), the small
    grid's sweep and a set of runs of the underutilized story."""
    story = "tests/sim/stories/spot-ice.yaml"
    grid = "tests/sweep/data/grid.yaml"
    under = "tests/sim/stories/underutilized.yaml"
    return [
        Run(
            "costfloor-simulate-spot-ice",
            ("simulate", story, "--cost-floor", "-o", "json"),
            events=True,
        ),
        Run("costfloor-simulate-table-spot-ice", ("simulate", story, "--cost-floor")),
        Run("costfloor-sweep-table-grid", ("sweep", grid, "--cost-floor", "--workers", "2")),
        Run(
            "costfloor-runs-underutilized",
            ("simulate", under, "--cost-floor", "--runs", "2", "--workers", "1", "-o", "json"),
        ),
    ]


def _demo_day_runs(work: Path) -> list[Run]:
    """The demo's day (spot market and HPA) as `gpucap demo` runs it, placeholders filled
    (`cli/demo.story_tree`): one run with its events, and `--runs 3` on two workers (the set's
    JSON must not depend on the worker count, so one recording covers it)."""
    from gpucap.cli.demo import story_tree  # noqa: PLC0415

    root = work / "demo"
    root.mkdir()
    story_tree(root)
    day = _rel(root / "story" / "act3-day.yaml")
    return [
        Run("simulate-demo-act3-day", ("simulate", day, "-o", "json"), events=True),
        Run(
            "simulate-runs-demo-act3-day",
            ("simulate", day, "--runs", "3", "--workers", "2", "-o", "json"),
        ),
    ]


def _explain_runs(exe: str, out: Path, name: str, paths: tuple[str, ...]) -> list[Run]:
    """`plan --explain` of the unschedulable pods and the first placed one (at most 4)."""
    recorded = (out / f"plan-json-{_slug(name)}.out").read_text()
    stdout = recorded.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]
    try:
        plan = json.loads(stdout)
    except json.JSONDecodeError:
        return []
    pods = [u["pod"] for u in plan.get("unschedulable", []) if "pod" in u]
    pods += [p for c in plan.get("nodeClaims", [])[:1] for p in c.get("pods", [])[:1]]
    del exe
    return [
        Run(f"explain-{_slug(name)}-{_slug(pod)}", ("plan", *paths, "--explain", pod))
        for pod in pods[:4]
    ]


def record(out: Path, jobs: int, only: str | None) -> None:
    exe = gpucap()
    out.mkdir(parents=True, exist_ok=True)
    # Generated inputs live in the checkout, named relative to it, so that the outputs that
    # name them are the same in every checkout (one recording at a time per checkout).
    work = ROOT / ".golden-inputs"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    work_out = out
    wanted = None if only is None else only.split(",")

    def chosen(name: str) -> bool:
        return wanted is None or any(w in name for w in wanted)

    inputs = [(n, p) for n, p in plan_inputs(work) if chosen(n)]
    sims = [(n, p) for n, p in scenarios(work) if chosen(n)]
    runs = [r for n, p in inputs for r in _plan_runs(n, p)]
    runs += [
        Run(f"simulate-{n}", ("simulate", _rel(p), "-o", "json"), events=True) for n, p in sims
    ]
    if chosen("reserved-capacity"):
        runs += _reserved_runs()
    if chosen("sweep"):
        runs += _sweep_runs()
    if chosen("optimal"):
        runs += _optimal_runs()
    if chosen("costfloor"):
        runs += _cost_floor_runs()
    if chosen("demo-act3-day"):
        runs += _demo_day_runs(work)
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda r: _execute(exe, work_out, r), runs))
        explains = [r for n, p in inputs for r in _explain_runs(exe, work_out, n, p)]
        list(pool.map(lambda r: _execute(exe, work_out, r), explains))
    shutil.rmtree(work)
    print(f"golden: recorded {len(list(out.iterdir()))} files in {out}")


def digests(recording: Path) -> dict[str, str]:
    """File name -> SHA-256 of a recording (a directory) or of a fingerprint file (`sums`)."""
    if recording.is_file():
        pairs = (line.split("  ", 1) for line in recording.read_text().splitlines() if line)
        return {name: digest for digest, name in pairs}
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(recording.iterdir())}


def compare(base: Path, new: Path) -> int:
    old, fresh = digests(base), digests(new)
    a, b = set(old), set(fresh)
    differ = sorted(n for n in a & b if old[n] != fresh[n])
    for n in sorted(a - b):
        print(f"only in {base}: {n}")
    for n in sorted(b - a):
        print(f"only in {new}: {n}")
    for n in differ:
        print(f"differs: {n}")
    same = len(a & b) - len(differ)
    print(f"golden: {same} identical, {len(differ)} differ, {len(a ^ b)} in one recording only")
    return 1 if differ or a ^ b else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("dir", type=Path)
    chk = sub.add_parser("check")
    chk.add_argument("base", type=Path)
    for p in (rec, chk):
        p.add_argument("--jobs", type=int, default=2)
        p.add_argument("--only", help="only the inputs whose name holds one of these (a,b,...)")
    sums = sub.add_parser("sums")
    sums.add_argument("dir", type=Path)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("base", type=Path)
    cmp_.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.cmd == "record":
        record(args.dir.resolve(), args.jobs, args.only)
        return 0
    if args.cmd == "compare":
        return compare(args.base, args.new)
    if args.cmd == "sums":
        for name, digest in sorted(digests(args.dir).items()):
            print(f"{digest}  {name}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        new = Path(tmp) / "new"
        record(new, args.jobs, args.only)
        base = args.base
        if args.only:
            # Compare only what was recorded.
            return compare_subset(base, new)
        return compare(base, new)


def compare_subset(base: Path, new: Path) -> int:
    old, fresh = digests(base), digests(new)
    names = set(fresh)
    differ = sorted(n for n in names if old.get(n) != fresh[n])
    for n in differ:
        print(f"differs: {n}")
    print(f"golden: {len(names) - len(differ)} identical, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
