"""Lint rules: pods (see landscape.md §3). Registered on import."""

from __future__ import annotations

__all__: list[str] = []
