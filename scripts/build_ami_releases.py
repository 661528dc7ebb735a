"""Build gpucap's bundled EKS-optimized AMI release list from the shared release data.

Reads `eks-ami-releases.json` (default `../shared/data`, provenance and field meanings in its
README) and writes `src/gpucap/data/ami/eks-ami-releases.json`, which
`gpucap.cloudprovider.aws.amifamily.releases` loads. Run by hand when the shared data changes;
`--check` exits 1 when the committed file is stale (for CI).

What is kept, per release: `version`, `date`, `status`, `kubernetes` (minor -> EKS release
version string) and, per family (`al2023`, `al2`) and Kubernetes minor, one row per AMI variant
present (`x86_64/standard`, `x86_64/nvidia`, `x86_64/neuron`, `arm64/standard`,
`arm64/nvidia`; AL2: `x86_64/standard`, `arm64/standard`, `x86_64/gpu`). A row is a list in
the order of the top-level `fields` (kernel, kernel series, containerd, NVIDIA driver, CUDA
version the driver supports, CUDA toolkit, NVIDIA container toolkit, Neuron driver); `null`
where the release notes do not state the value. Also kept: the Karpenter SSM parameter
templates (verbatim) and a short provenance block.

Dropped or changed on the way:

- package tables, source AMIs, artifacts, notices, tags and changelog commits (provenance that
  gpucap does not use);
- an AMI name is kept only where it differs from the name Karpenter builds for a pinned alias
  (`amiNames`; four early AL2023 NVIDIA releases);
- AL2 GPU rows of releases whose notes share one package column between the three AL2 AMIs
  (`sharedPackageColumn`) lose their kernel and kernel series: those notes say the GPU AMI's
  kernel was held back, so the column's kernel is not known to be the GPU AMI's;
- a release the shared file knows only from an SSM answer (its `al2023` and `al2` are both
  null) gets `"contentsKnown": false`, its `note`, and `seenIn`: for each (minor, family) of an
  EKS SSM parameter path named in its `source` text, every variant key of that family
  (`VARIANT_KEYS`), x86_64 and arm64. EKS publishes a release's standard, NVIDIA and Neuron
  AMIs for both architectures together (one build, one `releaseVersion`; the release notes
  list them in one table), so a release seen for one variant exists for all of them; the
  header's `variants` says so (the provenance of the expansion).

Output: header keys, then one release per line, newest first as in the input; keys sorted, so
a rebuild from the same input is byte-identical.

Usage: `.venv/bin/python scripts/build_ami_releases.py [--source DIR] [--out DIR] [--check]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "src" / "gpucap" / "data" / "ami"
SOURCE_NAME = "eks-ami-releases.json"
OUTPUT_NAME = "eks-ami-releases.json"
FORMAT = "gpucap.dev/eks-ami-releases/v1"

# (bundled field name, shared-file variant-entry key), in row order.
FIELDS = (
    ("kernel", "kernel"),
    ("kernelSeries", "kernelSeries"),
    ("containerd", "containerd"),
    ("nvidiaDriver", "nvidiaDriver"),
    ("cudaFromDriver", "cudaFromDriver"),
    ("cudaToolkit", "cuda"),
    ("nvidiaContainerToolkit", "nvidiaContainerToolkit"),
    ("neuronDriver", "neuronDriver"),
)
FAMILIES = ("al2023", "al2")
VARIANT_KEYS = {
    "al2023": (
        "x86_64/standard",
        "x86_64/nvidia",
        "x86_64/neuron",
        "arm64/standard",
        "arm64/nvidia",
    ),
    "al2": ("x86_64/standard", "arm64/standard", "x86_64/gpu"),
}
STATUSES = ("released", "abandoned")
# The provenance of `seenIn`'s expansion (written into the header as `variants`).
VARIANTS_TOGETHER = (
    "EKS publishes every variant of a release together: standard, NVIDIA and Neuron, x86_64 "
    "and arm64 (one build and one releaseVersion per Kubernetes minor; the release notes list "
    "them in one table). A release known only from an SSM answer for one variant (seenIn) is "
    "therefore known for every variant of that family and Kubernetes minor."
)
# An EKS-optimized AL2023 SSM path quoted in a release's `source` text.
SSM_PATH = re.compile(
    r"/aws/service/eks/optimized-ami/(?P<k8s>\d+\.\d+)/amazon-linux-2023/"
    r"(?P<arch>x86_64|arm64)/(?P<variant>standard|nvidia|neuron)/"
)


def karpenter_ami_name(family: str, k8s: str, variant_key: str, version: str) -> str:
    """The AMI name Karpenter puts in the SSM path of a pinned alias (al2023.go, al2.go)."""
    arch, variant = variant_key.split("/")
    if family == "al2023":
        return f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
    prefix = {
        "x86_64/standard": "amazon-eks-node",
        "arm64/standard": "amazon-eks-arm64-node",
        "x86_64/gpu": "amazon-eks-gpu-node",
    }[variant_key]
    return f"{prefix}-{k8s}-{version}"


def _family_rows(
    release: dict[str, Any], family: str
) -> tuple[dict[str, dict[str, list[Any]]], dict[str, dict[str, str]]]:
    data = release[family]
    rows: dict[str, dict[str, list[Any]]] = {}
    names: dict[str, dict[str, str]] = {}
    shared_column = bool(data.get("sharedPackageColumn"))
    for k8s, minor in data["byKubernetes"].items():
        for key, entry in minor["variants"].items():
            if key not in VARIANT_KEYS[family]:
                raise SystemExit(f"{release['version']} {family} {k8s}: unknown variant {key!r}")
            row = [entry.get(src) for _, src in FIELDS]
            if family == "al2" and key == "x86_64/gpu" and shared_column:
                # The shared column's kernel (and its series) is not known to be the GPU AMI's.
                row[0] = row[1] = None
            rows.setdefault(k8s, {})[key] = row
            name = entry.get("amiName")
            if name and name != karpenter_ami_name(family, k8s, key, release["version"]):
                names.setdefault(k8s, {})[key] = name
    return rows, names


def compact_release(release: dict[str, Any]) -> dict[str, Any]:
    """One shared-data release -> one bundled release."""
    version = release["version"]
    if release["status"] not in STATUSES:
        raise SystemExit(f"{version}: unknown status {release['status']!r}")
    out: dict[str, Any] = {
        "version": version,
        "date": release["date"],
        "status": release["status"],
        "kubernetes": dict(release["kubernetes"]),
    }
    ami_names: dict[str, Any] = {}
    for family in FAMILIES:
        if release.get(family):
            rows, names = _family_rows(release, family)
            out[family] = rows
            if names:
                ami_names[family] = names
    if ami_names:
        out["amiNames"] = ami_names
    if not any(release.get(f) for f in FAMILIES):
        note = release.get("source") or ""
        out["contentsKnown"] = False
        out["note"] = note
        out["seenIn"] = seen_in(note)
    return out


def seen_in(note: str) -> list[dict[str, str]]:
    """Every image a release known only from SSM answers has: all the variants of each
    (Kubernetes minor, family) an SSM path in `note` names (see the module docstring)."""
    seen = dict.fromkeys((m["k8s"], "al2023") for m in SSM_PATH.finditer(note))
    return [
        {"kubernetes": k8s, "family": family, "arch": arch, "variant": variant}
        for k8s, family in seen
        for arch, variant in (key.split("/") for key in VARIANT_KEYS[family])
    ]


def build(source: Path) -> str:
    raw = (source / SOURCE_NAME).read_bytes()
    doc = json.loads(raw)
    if doc.get("schemaVersion") != 1:
        raise SystemExit(f"{SOURCE_NAME}: unsupported schemaVersion {doc.get('schemaVersion')!r}")
    releases = [compact_release(r) for r in doc["releases"]]
    versions = [r["version"] for r in releases]
    if len(set(versions)) != len(versions):
        raise SystemExit(f"{SOURCE_NAME}: duplicate release versions")
    if versions != sorted(versions, reverse=True):
        raise SystemExit(f"{SOURCE_NAME}: releases are not newest first")
    src = doc["source"]
    header = {
        "format": FORMAT,
        "source": {
            "file": f"shared/data/{SOURCE_NAME}",
            "sha256": hashlib.sha256(raw).hexdigest(),
            "repo": src["repo"],
            "path": src["path"],
            "commit": src["commit"],
            "commitDate": src["commitDate"],
        },
        "fields": [name for name, _ in FIELDS],
        "variants": VARIANTS_TOGETHER,
        "ssmParameterTemplates": doc["ssmParameterTemplates"],
    }
    head = ",\n".join(
        f"{json.dumps(k)}:{json.dumps(v, sort_keys=True, separators=(',', ':'))}"
        for k, v in header.items()
    )
    lines = [json.dumps(r, sort_keys=True, separators=(",", ":")) for r in releases]
    text = "{" + head + ',\n"releases":[\n' + ",\n".join(lines) + "\n]}\n"
    if json.loads(text)["releases"] != releases:
        raise SystemExit("bundled release list does not read back as built")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="shared data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--check", action="store_true", help="exit 1 if the output is stale")
    args = parser.parse_args(argv)
    text = build(args.source)
    target = args.out / OUTPUT_NAME
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(f"{target} is stale: run scripts/build_ami_releases.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    releases = text.count("\n") - 7  # 6 header lines and the closing one
    print(f"wrote {target} ({len(text.encode())} bytes, {releases} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
