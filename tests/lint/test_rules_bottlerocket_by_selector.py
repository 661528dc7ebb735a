"""Bottlerocket chosen by AMI id, name or tags (issue 21, class 7): an EC2NodeClass with
`amiFamily: Bottlerocket` is Bottlerocket whatever its AMI selector, so on a GPU type its nodes
run the NVIDIA device plugin themselves, as with the `bottlerocket@` alias: no GPU001 advice
to install one, and its userData time-slicing settings count like the alias's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import edit, nodeclass, nodepool
from tests.lint.builders import TIME_SLICING, lint

SELECTORS: dict[str, dict[str, Any]] = {
    "id": {"id": "ami-0123456789abcdef0"},
    "name": {"name": "bottlerocket-aws-k8s-1.33-nvidia-x86_64-v1.42.0-*"},
    "tags": {"tags": {"team": "ml", "os": "bottlerocket"}},
}


def bottlerocket_by(selector: str, user_data: str | None = None) -> dict[str, Any]:
    doc = edit(nodeclass(), "spec.amiSelectorTerms", [SELECTORS[selector]])
    doc = edit(doc, "spec.amiFamily", "Bottlerocket")
    return edit(doc, "spec.userData", user_data) if user_data is not None else doc


@pytest.mark.parametrize("selector", sorted(SELECTORS))
def test_bottlerocket_by_any_selector_on_gpu_types_brings_its_own_device_plugin(
    selector: str,
) -> None:
    assert lint("GPU001", nodepool(), bottlerocket_by(selector)).findings == []


def test_a_custom_ami_by_id_on_gpu_types_still_gets_the_install_advice() -> None:
    # The same selector without amiFamily Bottlerocket: AL2023-like or Custom, no plugin.
    custom = edit(nodeclass(), "spec.amiSelectorTerms", [SELECTORS["id"]])
    custom = edit(custom, "spec.amiFamily", "Custom")
    (f,) = lint("GPU001", nodepool(), custom).findings
    assert "Install it" in f.message


def test_bottlerocket_by_id_time_slicing_in_user_data_counts_for_ts001() -> None:
    f = lint("TS001", nodepool(), bottlerocket_by("id", TIME_SLICING)).only
    assert (f.object_ref, f.path) == ("EC2NodeClass/gpu", "spec.userData")
    assert "time-slicing with replicas 4" in f.message
