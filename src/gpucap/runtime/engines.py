"""What an engine of many runs says when it cannot run (issue 26), and the addresses of the Ray
engine: shared by the executors of `runtime/executor.py` and `runtime/ray_executor.py`, and by
the CLI's `--ray [ADDRESS]` (`cli/options.py`), which prints the error as one line (exit 2).
Imports nothing: the CLI reads the addresses without loading an engine."""

from __future__ import annotations

import re

__all__ = ["LOCAL", "RAY_ADDRESSES", "EngineUnavailableError", "is_ray_address"]

# `--ray` without a value: a Ray instance on this machine, started for the call.
LOCAL = "local"
RAY_ADDRESSES = "local, auto or ray://HOST:PORT"
# The addresses of `--ray`: this machine, the cluster this machine is in (`auto`: RAY_ADDRESS,
# else the Ray started on this node, as in a KubeRay head pod), a Ray Client URL.
_ADDRESS = re.compile(r"(local|auto|ray://[^\s/:]+:[0-9]{1,5})")


class EngineUnavailableError(Exception):
    """The engine asked for cannot run here (Ray not installed, a cluster not reachable)."""


def is_ray_address(text: str) -> bool:
    """`text` is an address `--ray` takes: `local`, `auto` or `ray://host:port`. A bare GCS
    `host:port` is not taken: Ray waits minutes on one it cannot reach, logging as it waits."""
    return _ADDRESS.fullmatch(text) is not None
