"""The Ray engine of `--ray [ADDRESS]` (issue 26): the same runs as Ray tasks, behind the
`Executor` Protocol of `runtime/executor.py`. Placeholder until the engine lands: it says so.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import TypeVar

from gpucap.runtime.engines import EngineUnavailableError

__all__ = ["RayExecutor"]

T = TypeVar("T")
R = TypeVar("R")


class RayExecutor:
    """Runs on a Ray cluster at `address` (placeholder: refuses)."""

    def __init__(self, *, address: str, workers: int) -> None:
        raise EngineUnavailableError(f"--ray {address}: the Ray engine is not built yet")

    @property
    def workers(self) -> int:  # pragma: no cover - never constructed
        return 0

    def map(
        self, work: Callable[[T], R], items: Iterable[T]
    ) -> Generator[tuple[T, R], None, None]:  # pragma: no cover - never constructed
        raise NotImplementedError
