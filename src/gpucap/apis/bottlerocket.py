"""Bottlerocket's NVIDIA device-plugin settings, read from an EC2NodeClass's `userData` TOML.

Bottlerocket's NVIDIA variants run the NVIDIA Kubernetes device plugin as part of the OS; it is
configured by the `settings.kubelet-device-plugins.nvidia` table of the user data (Bottlerocket
docs, "kubelet-device-plugins" settings, bottlerocket.dev/en/os/1.54.x/api/settings/
kubelet-device-plugins):

    [settings.kubelet-device-plugins.nvidia]
    device-sharing-strategy = "time-slicing"        # or "mps"; default: no sharing
    [settings.kubelet-device-plugins.nvidia.time-slicing]
    replicas = 4
    rename-by-default = false                        # true: advertise nvidia.com/gpu.shared
    fail-requests-greater-than-one = false
    [settings.kubelet-device-plugins.nvidia.mps]     # for device-sharing-strategy = "mps"
    replicas = 4
    rename-by-default = false

`device_plugin_config` turns these into the same `DevicePluginConfig` the plugin's ConfigMap
gives (`apis/gpuoperator.py`), so the time-slicing rules treat both alike. Called by the lint
context for Bottlerocket EC2NodeClasses.
"""

from __future__ import annotations

import sys
from typing import Any

from gpucap.apis.gpu import NVIDIA_GPU
from gpucap.apis.gpuoperator import (
    DevicePluginConfig,
    ReplicatedResource,
    Sharing,
    TimeSlicing,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomllib is tomli, added to the standard library in 3.11
    import tomli as tomllib

__all__ = ["NVIDIA_SETTINGS", "BottlerocketUserDataError", "device_plugin_config"]

NVIDIA_SETTINGS = "settings.kubelet-device-plugins.nvidia"
GPU_RESOURCE = NVIDIA_GPU
SHARING_STRATEGIES = ("none", "time-slicing", "mps")


class BottlerocketUserDataError(ValueError):
    """userData that Bottlerocket cannot read as its settings (not TOML, or a wrong value)."""


def _table(doc: dict[str, Any], dotted: str) -> dict[str, Any]:
    node: Any = doc
    for part in dotted.split("."):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _replicas(table: dict[str, Any], where: str) -> int:
    value = table.get("replicas", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BottlerocketUserDataError(f"{where}.replicas: {value!r} is not a positive integer")
    return value


def _flag(table: dict[str, Any], key: str, where: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise BottlerocketUserDataError(f"{where}.{key}: {value!r} is not true or false")
    return value


def device_plugin_config(user_data: str | None) -> DevicePluginConfig:
    """The device-plugin config Bottlerocket's NVIDIA plugin runs with, given the userData.

    No userData, or no sharing strategy, is the plugin's default (one unit per GPU). Raises
    BottlerocketUserDataError when the userData is not TOML or a sharing setting has the wrong
    type (the message names the setting).
    """
    if not user_data:
        return DevicePluginConfig(version="v1")
    try:
        doc = tomllib.loads(user_data)
    except RecursionError:
        raise BottlerocketUserDataError("not valid TOML: nested too deeply") from None
    except ValueError as err:  # TOMLDecodeError, or an integer past Python's 4,300 digits
        raise BottlerocketUserDataError(f"not valid TOML: {str(err).split(';')[0]}") from None
    nvidia = _table(doc, NVIDIA_SETTINGS)
    strategy = nvidia.get("device-sharing-strategy", "none")
    if strategy not in SHARING_STRATEGIES:
        raise BottlerocketUserDataError(
            f"{NVIDIA_SETTINGS}.device-sharing-strategy: {strategy!r} is not one of "
            + ", ".join(SHARING_STRATEGIES)
        )
    if strategy == "none":
        return DevicePluginConfig(version="v1")
    where = f"{NVIDIA_SETTINGS}.{strategy}"
    table = _table(nvidia, strategy)
    policy = TimeSlicing(
        rename_by_default=_flag(table, "rename-by-default", where),
        fail_requests_greater_than_one=(
            _flag(table, "fail-requests-greater-than-one", where)
            if strategy == "time-slicing"
            else False
        ),
        resources=[ReplicatedResource(name=GPU_RESOURCE, replicas=_replicas(table, where))],
    )
    sharing = Sharing(time_slicing=policy) if strategy == "time-slicing" else Sharing(mps=policy)
    return DevicePluginConfig(version="v1", sharing=sharing)
