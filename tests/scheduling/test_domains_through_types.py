"""`_domains_through_types` (what `build_domain_groups` adds through a pool's types) against
Karpenter's construction as written: merge the pool into every type and read each key's
values, type by type. The fast path reads each shared requirement object once; the order of
keys and of domains must be the same."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.topology import _domains_through_types

KEYS = ["k1", "k2", "k3", "kubernetes.io/arch", "topology.kubernetes.io/zone"]
VALUES = ["a", "b", "c", "1", "2", "10"]


def _reference(pool: Requirements, types: list[Requirements]) -> list[tuple[str, list[str]]]:
    found: dict[str, dict[str, None]] = {}
    for it_reqs in types:
        for key, req in pool.merge(it_reqs).items():
            domains = found.setdefault(key, {})
            if not req.complement:
                for domain in sorted(req.values):
                    domains[domain] = None
    return [(key, list(domains)) for key, domains in found.items()]


@st.composite
def _requirement(draw: st.DrawFn, key: str) -> Requirement:
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    if operator in ("In", "NotIn"):
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=3))
    elif operator in ("Gt", "Lt"):
        values = [draw(st.sampled_from(["0", "1", "5"]))]
    else:
        values = []
    return Requirement.new(key, operator, values)


@st.composite
def _requirements(draw: st.DrawFn, shared: list[Requirement]) -> Requirements:
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=4))
    reqs = []
    for key in keys:
        pool = [r for r in shared if r.key == key]
        # Often one of a few shared objects, as the catalog's types share them.
        if pool and draw(st.booleans()):
            reqs.append(draw(st.sampled_from(pool)))
        else:
            reqs.append(draw(_requirement(key)))
    return Requirements.of(*reqs)


@st.composite
def _case(draw: st.DrawFn) -> tuple[Requirements, list[Requirements]]:
    shared = [draw(_requirement(key)) for key in KEYS for _ in range(2)]
    pool = draw(_requirements([]))
    types = draw(st.lists(_requirements(shared), max_size=8))
    return pool, types


@settings(max_examples=300, deadline=None)
@given(_case())
def test_domains_through_types_are_the_merge_of_the_pool_into_each_type_in_order(
    case: tuple[Requirements, list[Requirements]],
) -> None:
    pool, types = case
    assert _domains_through_types(pool, types) == _reference(pool, types)


@pytest.mark.parametrize(
    "pool",
    [
        Requirements(),
        Requirements.of(Requirement.new("kubernetes.io/arch", "In", ["amd64"])),
        Requirements.of(
            Requirement.new("karpenter.k8s.aws/instance-family", "In", ["g5", "g6", "p4d"]),
            Requirement.new("topology.kubernetes.io/zone", "NotIn", ["us-east-1a"]),
            Requirement.new("karpenter.sh/capacity-type", "In", ["spot"]),
        ),
    ],
)
def test_domains_through_the_bundled_catalogs_types_are_the_merge_in_order(
    pool: Requirements,
) -> None:
    types = [it.requirements for it in load_catalog("us-east-1").instance_types()]
    assert _domains_through_types(pool, types) == _reference(pool, types)
