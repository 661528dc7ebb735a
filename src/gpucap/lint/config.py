"""Lint configuration: which rules run and how severe they are.

Read from `--config FILE`, else the nearest `.gpucap.toml` (table `[lint]`) or `pyproject.toml`
(table `[tool.gpucap.lint]`) from the working directory upwards:

    [tool.gpucap.lint]
    select = ["GPU", "NP001"]     # rule ids or id prefixes; default: every rule
    ignore = ["NP006"]            # ids or prefixes to skip
    severity = { NP005 = "error", DIS002 = "info" }
    cluster = ["nvidia-device-plugin"]  # what the cluster runs that the input does not hold

`cluster` declares components installed outside the linted files (Helm, `kubectl apply -f
<url>`, an EKS add-on): `nvidia-device-plugin` (the NVIDIA device plugin DaemonSet or Helm
chart) or `gpu-operator` (the NVIDIA GPU Operator, which runs the device plugin). Either tells
GPU001 that GPU nodes get a device plugin even though the input has none.

Called by the CLI before running the rules.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucap.apis.meta import json_kind
from gpucap.apis.quantity import Quantity
from gpucap.apis.reading import InputError, int_message, read_path
from gpucap.lint.registry import SEVERITIES, Rule, Severity
from gpucap.runtime.errors import GpucapInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomllib is tomli, added to the standard library in 3.11
    import tomli as tomllib

__all__ = [
    "CLUSTER_COMPONENTS",
    "ConfigError",
    "LintConfig",
    "find_config",
    "load_config",
    "parse_image_size",
]

# Values of `cluster`: components the cluster may run outside the linted files.
CLUSTER_COMPONENTS = ("nvidia-device-plugin", "gpu-operator")


class ConfigError(GpucapInputError, ValueError):
    """A lint configuration gpucap cannot use; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class LintConfig:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    source: str | None = None
    cluster: frozenset[str] = frozenset()

    def enabled(self, rule: Rule[Any]) -> bool:
        def matches(patterns: Sequence[str]) -> bool:
            return any(rule.id == p or rule.id.startswith(p) or rule.name == p for p in patterns)

        if self.select and not matches(self.select):
            return False
        return not matches(self.ignore)

    def severity_of(self, rule: Rule[Any]) -> Severity:
        return self.severity.get(rule.id, rule.severity)


def find_config(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        for name in (".gpucap.toml", "pyproject.toml"):
            candidate = directory / name
            if candidate.is_file() and _table(candidate) is not None:
                return candidate
    return None


def _table(path: Path) -> dict[str, Any] | None:
    try:
        text = read_path(str(path))
    except InputError as err:
        raise ConfigError(str(err)) from None
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from None
    except ValueError:  # tomllib converts integers with int(), which stops at 4,300 digits
        raise ConfigError(f"{path}: not valid TOML: {int_message(4301)}") from None
    names = ("tool", "gpucap", "lint") if path.name == "pyproject.toml" else ("lint",)
    table: Any = doc
    for depth, name in enumerate(names):
        table = table.get(name)
        if table is None:
            return None
        if not isinstance(table, dict):
            key = ".".join(names[: depth + 1])
            raise ConfigError(f"{path}: {key}: expected a table, got {json_kind(table)}")
    found: dict[str, Any] = table
    return found


def load_config(path: Path | None, known: Sequence[Rule[Any]]) -> LintConfig:
    if path is None:
        return LintConfig()
    table = _table(path)
    if table is None:
        if path.name == "pyproject.toml":
            return LintConfig(source=str(path))
        raise ConfigError(f"{path}: no [lint] table")
    where = "[tool.gpucap.lint]" if path.name == "pyproject.toml" else "[lint]"
    ids = {r.id for r in known} | {r.name for r in known}
    prefixes = {r.category for r in known}

    def patterns(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: {where}.{key}: expected a list of rule ids")
        for v in value:
            if v not in ids and v not in prefixes:
                raise ConfigError(f"{path}: {where}.{key}: unknown rule {v!r}")
        return tuple(value)

    unknown_keys = sorted(set(table) - {"select", "ignore", "severity", "cluster"})
    if unknown_keys:
        raise ConfigError(f"{path}: {where}: unknown key {unknown_keys[0]!r}")
    severity = table.get("severity", {})
    if not isinstance(severity, dict):
        raise ConfigError(f"{path}: {where}.severity: expected a table of rule id = severity")
    for rule_id, level in severity.items():
        if rule_id not in {r.id for r in known}:
            raise ConfigError(f"{path}: {where}.severity: unknown rule {rule_id!r}")
        if level not in SEVERITIES:
            raise ConfigError(
                f"{path}: {where}.severity.{rule_id}: {level!r} is not one of "
                + ", ".join(SEVERITIES)
            )
    cluster = table.get("cluster", [])
    if not isinstance(cluster, list) or not all(isinstance(v, str) for v in cluster):
        raise ConfigError(
            f"{path}: {where}.cluster: expected a list of component names ("
            + ", ".join(CLUSTER_COMPONENTS)
            + ")"
        )
    for v in cluster:
        if v not in CLUSTER_COMPONENTS:
            raise ConfigError(
                f"{path}: {where}.cluster: unknown component {v!r} (known: "
                + ", ".join(CLUSTER_COMPONENTS)
                + ")"
            )
    return LintConfig(
        patterns("select"),
        patterns("ignore"),
        dict(severity),
        str(path),
        frozenset(cluster),
    )


def parse_image_size(item: str) -> tuple[str, tuple[int, int]]:
    """One `--image-size IMAGE=COMPRESSED[/UNCOMPRESSED]` value (`my/img=9Gi/18Gi`) as
    `(image, (compressed bytes, uncompressed bytes))`, the entries the cold-start rules read
    next to `KNOWN_IMAGE_SIZES`. Without an uncompressed size the image counts as twice its
    compressed size. Raises ConfigError with the one line the CLI prints. Called by `gpucap
    lint` (`cli/lint.py`) for each `--image-size`."""
    name, eq, value = item.partition("=")
    try:
        if not eq:
            raise ValueError(item)
        compressed, _, uncompressed = value.partition("/")
        c = Quantity.parse(compressed).value()
        return name, (c, Quantity.parse(uncompressed).value() if uncompressed else 2 * c)
    except ValueError:
        raise ConfigError(
            f"--image-size '{item}' must be IMAGE=SIZE[/SIZE], e.g. a/b=9Gi/18Gi"
        ) from None
