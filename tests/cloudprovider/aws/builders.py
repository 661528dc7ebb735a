"""Builders the catalog tests share: a minimal catalog-file entry and the catalog build script
loaded as a module (`scripts/build_catalog.py` is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.builders import DELETE

REPO = Path(__file__).resolve().parents[3]


def catalog_entry(**fields: Any) -> dict[str, Any]:
    """A minimal valid catalog-file entry (a g9.xlarge with one GPU, which the bundled data does
    not have), `fields` set over it; `DELETE` removes a field."""
    doc: dict[str, Any] = {
        "name": "g9.xlarge",
        "family": "g9",
        "size": "xlarge",
        "architecture": "amd64",
        "vcpus": 4,
        "memory_mib": 16384,
        "gpu_count": 1,
        "max_pods_eni": 58,
        "on_demand_price_usd_per_hour": {"us-east-1": 1.0},
    }
    doc.update(fields)
    return {k: v for k, v in doc.items() if v is not DELETE}


def build_script() -> ModuleType:
    """`scripts/build_catalog.py`, loaded."""
    spec = importlib.util.spec_from_file_location(
        "build_catalog", REPO / "scripts/build_catalog.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
