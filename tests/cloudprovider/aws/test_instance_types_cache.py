"""`AWSCloudProvider.instance_types_for` keeps its answer while the marks in force are the same.

The answer is kept from the instant it is built until the first insufficient-capacity mark then
in force expires, unless a mark is made. Law: on random runs of clock moves (landing before, on
and after the 3-minute expiries), offering marks, capacity-type marks and lookups, every answer
equals the one built from scratch at that instant (the catalog's types with each offering
available unless a mark in force covers it).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.cloudprovider.aws.cloudprovider import AWSCloudProvider
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.settings import node_class_settings
from gpucap.cloudprovider.aws.simulated.ec2 import SimulatedEC2
from gpucap.runtime.clock import FakeClock
from tests.builders import load, nodeclass

CATALOG = load_catalog("us-east-1")
TYPES = ["g5.xlarge", "g6.xlarge", "m5.large"]
ZONES = ["us-east-1a", "us-east-1b"]
CAPACITY_TYPES = ["spot", "on-demand"]

_step = st.one_of(
    st.tuples(st.just("advance"), st.sampled_from([0, 1, 59, 60, 120, 179, 180, 181, 400])),
    st.tuples(
        st.just("mark"),
        st.tuples(st.sampled_from(CAPACITY_TYPES), st.sampled_from(TYPES), st.sampled_from(ZONES)),
    ),
    st.tuples(st.just("mark-type"), st.sampled_from(CAPACITY_TYPES)),
    st.tuples(st.just("look"), st.none()),
)


def _provider() -> tuple[AWSCloudProvider, EC2NodeClass, FakeClock]:
    nc: EC2NodeClass = load(nodeclass("gpu")).objects.nodeclasses[0]
    clock = FakeClock()
    api = SimulatedEC2(CATALOG, clock)
    return AWSCloudProvider(api, CATALOG, clock, {"gpu": nc}), nc, clock


def _from_scratch(cp: AWSCloudProvider, nc: EC2NodeClass) -> list[tuple[str, tuple[bool, ...]]]:
    base = CATALOG.instance_types(node_class_settings(nc))
    return [
        (
            it.name,
            tuple(
                o.available and not cp.unavailable.is_unavailable(o.capacity_type, it.name, o.zone)
                for o in it.offerings
            ),
        )
        for it in base
    ]


def _seen(cp: AWSCloudProvider, nc: EC2NodeClass) -> list[tuple[str, tuple[bool, ...]]]:
    return [(it.name, tuple(o.available for o in it.offerings)) for it in cp.instance_types_for(nc)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, min_size=1, max_size=30))
def test_kept_instance_types_are_the_ones_built_from_scratch(
    steps: list[tuple[str, object]],
) -> None:
    cp, nc, clock = _provider()
    for kind, arg in steps:
        if kind == "advance":
            assert isinstance(arg, int)
            clock.advance(arg)
        elif kind == "mark":
            assert isinstance(arg, tuple)
            cp.unavailable.mark_unavailable(*arg)
        elif kind == "mark-type":
            assert isinstance(arg, str)
            cp.unavailable.mark_capacity_type_unavailable(arg)
        assert _seen(cp, nc) == _from_scratch(cp, nc)


def test_the_answer_is_kept_across_instants_until_a_mark_in_force_expires() -> None:
    cp, nc, clock = _provider()
    cp.unavailable.mark_unavailable("spot", "g6.xlarge", "us-east-1a")
    marked = cp.instance_types_for(nc)
    clock.advance(179)
    assert cp.instance_types_for(nc) is marked
    clock.advance(1)
    cleared = cp.instance_types_for(nc)
    assert cleared is not marked
    assert cleared == CATALOG.instance_types(node_class_settings(nc))
    clock.advance(86_400)
    assert cp.instance_types_for(nc) is cleared
