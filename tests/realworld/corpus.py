"""The corpus of real public manifests under tests/realworld/ and its PROVENANCE.yaml.

Every test module of this directory names its files through `real` (one file) or `group`
(the files an upstream example applies together), so a file that is not listed in
PROVENANCE.yaml, or a listed file that is gone, fails the test that asks for it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent
PROVENANCE: list[dict[str, str]] = yaml.safe_load((ROOT / "PROVENANCE.yaml").read_text())["files"]
LISTED = {f["file"] for f in PROVENANCE}


def real(file: str) -> Path:
    """The path of one corpus file, named as PROVENANCE.yaml names it (`<owner>__<repo>/<path>`)."""
    assert file in LISTED, f"{file} is not in PROVENANCE.yaml"
    return ROOT / file


def group(name: str) -> tuple[str, ...]:
    """The files of one PROVENANCE group, relative to this directory, in sorted order."""
    files = tuple(sorted(f["file"] for f in PROVENANCE if f["group"] == name))
    assert files, f"no group {name!r} in PROVENANCE.yaml"
    return files
