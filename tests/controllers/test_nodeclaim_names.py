"""NodeClaim names (`controllers/provisioning/names.py`): numbered per NodePool, never a name
in use, never one given before; the one namer of plan's loop, the simulator and disruption."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpucap.controllers.provisioning.names import NodeClaimNames


def test_names_are_numbered_per_nodepool_and_skip_names_in_use() -> None:
    names = NodeClaimNames({"gpu-2"}.__contains__)
    assert [names.next("gpu"), names.next("cpu"), names.next("gpu")] == ["gpu-1", "cpu-1", "gpu-3"]


def test_the_disruption_controllers_names_carry_its_infix() -> None:
    names = NodeClaimNames(lambda _: False, infix="disruption-")
    assert names.next("gpu") == "gpu-disruption-1"


@given(
    st.lists(st.sampled_from(["gpu", "cpu", "gpu-1"]), max_size=30),
    st.sets(st.sampled_from([f"{p}-{n}" for p in ("gpu", "cpu", "gpu-1") for n in range(1, 8)])),
)
def test_no_name_is_given_twice_nor_one_in_use(pools: list[str], in_use: set[str]) -> None:
    names = NodeClaimNames(in_use.__contains__)
    given_names = [names.next(p) for p in pools]
    assert len(set(given_names)) == len(given_names)
    assert not set(given_names) & in_use
