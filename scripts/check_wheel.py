"""Build gpucap's wheel (not editable) into a temporary directory, install it into a fresh
virtualenv, and run `gpucap demo` from there: the package data must travel with the wheel.

`gpucap demo --report` too: the report's template must travel with it.

Run by `make test` (the `wheel` target). Exits non-zero with a one-line reason on failure.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*cmd: str | Path, cwd: Path = ROOT) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], check=False, cwd=cwd, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"check_wheel: {' '.join(map(str, cmd))} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dist = Path(tmp) / "dist"
        run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, ROOT)
        wheel = next(dist.glob("gpucap-*.whl"))
        env = Path(tmp) / "venv"
        venv.create(env, with_pip=False)
        py = env / "bin" / "python"
        purelib = Path(
            run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
        )
        # Borrow the dependencies (not gpucap) from this environment: a path in a .pth file is
        # added to sys.path, but the .pth files inside it (the editable install) are not read.
        here = sysconfig.get_paths()["purelib"]
        (purelib / "gpucap-deps.pth").write_text(here + "\n")
        run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", purelib, wheel)
        where = run(py, "-c", "import gpucap; print(gpucap.__file__)", cwd=Path(tmp))
        if not where.startswith(str(purelib)):
            sys.exit(f"check_wheel: gpucap was imported from {where.strip()}, not the wheel")
        out = run(py, "-m", "gpucap", "demo", cwd=Path(tmp))
        if "new node(s)" not in out:
            sys.exit(f"check_wheel: `gpucap demo` from the wheel printed no result:\n{out}")
        if "fell back to on-demand" not in out or "before the device plugin arrived" not in out:
            sys.exit(f"check_wheel: `gpucap demo` from the wheel told no story:\n{out}")
        # The report's template is package data too (src/gpucap/report/templates/).
        report = Path(tmp) / "demo.html"
        run(py, "-m", "gpucap", "demo", "--report", report, cwd=Path(tmp))
        html = report.read_text(encoding="utf-8") if report.exists() else ""
        if "Act 1" not in html or "Plotly.newPlot" not in html:
            sys.exit("check_wheel: `gpucap demo --report` from the wheel wrote no report")
    print(f"check_wheel: {wheel.name} installs and runs `gpucap demo`")


if __name__ == "__main__":
    main()
