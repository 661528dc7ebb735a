"""The long fuzz run: the CI fuzzer (`tests/fuzz/`) for N minutes instead of a fixed case count.

Run: `python bench/fuzz.py [--minutes 20] [--seed 9] [--out DIR]`. Cases come from the seed
alone (case i is the same in every run with that seed), so a longer run is the CI run's case list
continued (`--start` skips ahead). Prints progress every 30 s, then executions, cases, mutation
classes, time and each distinct failure (count, signature, the first case, its shrunk reproducer,
written under `--out`). Exit 1 when anything failed. Not a unit test; record the figures in the
issue note.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.fuzz.driver import (  # noqa: E402 - after the path is set
    BOUND_SECONDS,
    Fuzzer,
    reproducer_text,
    write_reproducer,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--start", type=int, default=0, help="first case index")
    parser.add_argument("--bound", type=int, default=BOUND_SECONDS, help="seconds per command")
    parser.add_argument("--shrink-runs", type=int, default=60, help="runs per shrink")
    parser.add_argument(
        "--shrink-minutes", type=float, default=10.0, help="after this, failures stay unshrunk"
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/gpucap-fuzz-findings"))
    args = parser.parse_args()

    fuzzer = Fuzzer(seed=args.seed, bound=args.bound)
    began = time.monotonic()
    last = [began]

    def progress(f: Fuzzer) -> None:
        now = time.monotonic()
        if now - last[0] >= 30:
            last[0] = now
            print(
                f"  {now - began:6.0f}s  {f.cases} cases  {f.executions} executions  "
                f"{len(f.findings)} distinct failures",
                flush=True,
            )

    fuzzer.run(seconds=args.minutes * 60, start=args.start, progress=progress)
    elapsed = time.monotonic() - began
    print(
        f"\nseed {args.seed}: {fuzzer.cases} cases (+{fuzzer.skipped} oracle cases skipped: seed "
        f"not valid), {fuzzer.executions} executions in {elapsed:.0f}s "
        f"({fuzzer.executions / elapsed:.1f}/s), bound {args.bound}s per command; "
        f"{fuzzer.hang_skips} commands skipped after a hang"
    )
    print(
        "mutation classes (cases): "
        + ", ".join(f"{c} {n}" for c, n in sorted(fuzzer.classes.items()))
    )
    print(f"\n{len(fuzzer.findings)} distinct failure(s)")
    for finding in sorted(fuzzer.findings.values(), key=lambda f: f.failure.signature):
        print(f"  {finding.count:5d}x  {finding.failure.signature}  [{finding.command}]")
    shrink_until = time.monotonic() + args.shrink_minutes * 60
    first = ("internal-error", "memory", "crash", "hang", "exit-code")  # shrunk first
    order = sorted(
        fuzzer.findings.values(),
        key=lambda f: (f.failure.kind not in first, f.failure.signature),
    )
    for finding in order:
        in_time = time.monotonic() < shrink_until
        try:
            shrunk = fuzzer.shrink(finding, max_runs=args.shrink_runs) if in_time else finding.case
            path = write_reproducer(finding, shrunk, args.out)
            shown = reproducer_text(shrunk, finding.command)
        except Exception as e:  # a fuzzer bug must not lose the other findings
            print(f"\n== {finding.failure.signature}: could not write the reproducer: {e!r}")
            continue
        print(
            f"\n== {finding.failure.signature}  ({finding.count}x; classes {dict(finding.classes)})"
        )
        print(f"   first: {finding.case.describe()[:300]}")
        print(f"   reproducer: {path}")
        print("   " + shown.replace("\n", "\n   "))
    return 1 if fuzzer.findings else 0


if __name__ == "__main__":
    sys.exit(main())
