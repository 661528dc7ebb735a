"""What an engine of many runs says when it cannot run (issue 26): shared by the executors of
`runtime/executor.py` and `runtime/ray_executor.py`, and caught by the CLI (one line, exit 2)."""

from __future__ import annotations

__all__ = ["EngineUnavailableError"]


class EngineUnavailableError(Exception):
    """The engine asked for cannot run here (Ray not installed, a cluster not reachable)."""
