"""Bottlerocket userData: the NVIDIA device-plugin settings read as a device-plugin config."""

from __future__ import annotations

import pytest

from gpucap.apis.bottlerocket import BottlerocketUserDataError, device_plugin_config

NVIDIA = "[settings.kubelet-device-plugins.nvidia]\n"


def test_no_userdata_means_one_unit_per_gpu() -> None:
    assert device_plugin_config(None).replicas_for() == 1
    assert device_plugin_config("[settings.kubernetes]\nmax-pods = 20\n").replicas_for() == 1


def test_time_slicing_replicas_multiply_the_gpu() -> None:
    cfg = device_plugin_config(
        NVIDIA + 'device-sharing-strategy = "time-slicing"\n'
        "[settings.kubelet-device-plugins.nvidia.time-slicing]\nreplicas = 4\n"
    )
    assert cfg.replicas_for() == 4
    assert cfg.advertised_resource() == "nvidia.com/gpu"
    assert cfg.sharing is not None
    assert cfg.sharing.time_slicing is not None


def test_rename_by_default_advertises_the_shared_resource() -> None:
    cfg = device_plugin_config(
        NVIDIA + 'device-sharing-strategy = "time-slicing"\n'
        "[settings.kubelet-device-plugins.nvidia.time-slicing]\n"
        "replicas = 2\nrename-by-default = true\nfail-requests-greater-than-one = true\n"
    )
    assert cfg.advertised_resource() == "nvidia.com/gpu.shared"
    assert cfg.sharing is not None
    assert cfg.sharing.time_slicing is not None
    assert cfg.sharing.time_slicing.fail_requests_greater_than_one


def test_mps_replicas_count_like_time_slicing() -> None:
    cfg = device_plugin_config(
        NVIDIA + 'device-sharing-strategy = "mps"\n'
        "[settings.kubelet-device-plugins.nvidia.mps]\nreplicas = 3\n"
    )
    assert cfg.replicas_for() == 3
    assert cfg.sharing is not None
    assert cfg.sharing.mps is not None


def test_replicas_without_a_sharing_strategy_do_not_share() -> None:
    cfg = device_plugin_config(
        NVIDIA + "[settings.kubelet-device-plugins.nvidia.time-slicing]\nreplicas = 4\n"
    )
    assert cfg.replicas_for() == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#!/bin/bash\necho hello\n", "not valid TOML"),
        (NVIDIA + 'device-sharing-strategy = "sliced"\n', "'sliced' is not one of"),
        (
            NVIDIA + 'device-sharing-strategy = "time-slicing"\n'
            '[settings.kubelet-device-plugins.nvidia.time-slicing]\nreplicas = "4"\n',
            "time-slicing.replicas: '4' is not a positive integer",
        ),
        (
            NVIDIA + 'device-sharing-strategy = "mps"\n'
            '[settings.kubelet-device-plugins.nvidia.mps]\nrename-by-default = "yes"\n',
            "mps.rename-by-default: 'yes' is not true or false",
        ),
    ],
)
def test_unreadable_settings_raise_one_line_naming_the_setting(text: str, message: str) -> None:
    with pytest.raises(BottlerocketUserDataError, match=message):
        device_plugin_config(text)
