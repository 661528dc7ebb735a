"""bench/disruption_scale.py loaded as a module, for its scenario generator: the fast-path laws
(tests/sim/test_expiry_fast_path.py, test_bind_fast_path.py) run whole generated fleets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def disruption_bench() -> ModuleType:
    """bench/disruption_scale.py, loaded once per process."""
    name = "disruption_scale_bench"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench/disruption_scale.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
