"""Cold-start timings and the image-pull model shared by lint and the simulator."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.coldstart import (
    GIB,
    KNOWN_IMAGE_SIZES,
    NETWORK_MIB_S,
    TIMING_FIELDS,
    TIMING_KEYS,
    Timings,
    lookup_image_size,
    mbits_to_mib_s,
    pull_seconds,
)


def test_the_defaults_are_the_typical_budget_of_landscape_4_5() -> None:
    t = Timings()
    assert (t.launch, t.registration, t.device_plugin, t.gpu_operator) == (20, 30, 30, 120)
    assert (t.daemonset_start, t.model_load, t.container_start, t.termination) == (5, 0, 2, 30)


def test_the_scenario_keys_are_camel_case_and_map_to_every_field() -> None:
    assert TIMING_KEYS == (
        "launch",
        "registration",
        "daemonsetStart",
        "devicePlugin",
        "gpuOperator",
        "modelLoad",
        "containerStart",
        "termination",
    )
    assert TIMING_FIELDS["daemonsetStart"] == "daemonset_start"


def test_overrides_replace_only_what_they_name() -> None:
    t = Timings().with_overrides({"device_plugin": 90, "launch": 45.5})
    assert (t.device_plugin, t.launch, t.registration) == (90.0, 45.5, 30.0)
    assert isinstance(t.device_plugin, float)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"devicePlugin": 1.0}, "unknown timing 'devicePlugin'"),
        ({"launch": -1.0}, "timing 'launch' must not be negative"),
    ],
)
def test_a_bad_override_is_refused(overrides: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Timings().with_overrides(overrides)


@pytest.mark.parametrize(
    ("disk", "ebs", "network", "expected"),
    [
        # (compressed 9 GiB, unpacked 18 GiB) ; download at min(disk, ebs, network), unpack at
        # min(disk, ebs)
        (125, None, None, 27 * 1024 / 125),
        (125, None, NETWORK_MIB_S, 27 * 1024 / 125),  # lint: the disk is slower than 10 Gbps
        (500, 400, None, 27 * 1024 / 400),  # the type's EBS bandwidth below the volume's
        (500, None, 250, 9 * 1024 / 250 + 18 * 1024 / 500),  # a slow network: the download
    ],
)
def test_the_pull_is_bound_by_the_slowest_path(
    disk: float, ebs: float | None, network: float | None, expected: float
) -> None:
    seconds = pull_seconds(9 * GIB, 18 * GIB, disk_mib_s=disk, ebs_mib_s=ebs, network_mib_s=network)
    assert seconds == pytest.approx(expected)


@given(
    st.integers(1, 64 * GIB),
    st.integers(0, 64 * GIB),
    st.floats(125, 1000),
    st.floats(125, 1000),
)
def test_a_faster_disk_never_makes_the_pull_slower(
    compressed: int, unpacked: int, slow: float, fast: float
) -> None:
    slow, fast = min(slow, fast), max(slow, fast)
    kw = {"ebs_mib_s": 600.0, "network_mib_s": 300.0}
    assert pull_seconds(compressed, unpacked, disk_mib_s=fast, **kw) <= pull_seconds(
        compressed, unpacked, disk_mib_s=slow, **kw
    )


def test_ec2_megabits_are_decimal() -> None:
    assert mbits_to_mib_s(8 * 2**20 / 1e6) == pytest.approx(1.0)


def test_image_sizes_match_with_or_without_the_tag() -> None:
    assert lookup_image_size("vllm/vllm-openai:v0.6.0", KNOWN_IMAGE_SIZES) == (9 * GIB, 18 * GIB)
    assert lookup_image_size("localhost:5000/vllm", {}) is None
    assert lookup_image_size("localhost:5000/vllm:1", {"localhost:5000/vllm": (1, 2)}) == (1, 2)
