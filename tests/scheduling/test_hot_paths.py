"""The scheduler's hot paths give the answers of their plain definitions (issue 12, branch
`solve2`): `InstanceTypeTable.fits` is Karpenter's per-type Fits, and `Topology.register`,
which skips a hostname it already registered, still registers it with a group created since."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpucap.apis.core import Pod
from gpucap.scheduling.instancetypes import InstanceType, InstanceTypeTable
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.topology import Topology

HOST = "kubernetes.io/hostname"
RESOURCES = ("cpu", "memory", "pods", "nvidia.com/gpu")
# Values around the edges: negative, zero, and past int64 (capped as Karpenter's int64 is).
values = st.one_of(st.integers(-3, 40), st.sampled_from([2**63 - 1, 2**63, 2**70, -(2**70)]))
allocatables = st.lists(
    st.dictionaries(st.sampled_from(RESOURCES[:3]), st.integers(-2, 40)), min_size=0, max_size=6
)
requests = st.dictionaries(st.sampled_from(RESOURCES), values)


def _karpenter_fits(allocatable: dict[str, int], wanted: dict[str, int]) -> bool:
    # resources.Fits: any negative allocatable fails; else every request is within it (a
    # resource the type lacks counts as 0).
    if any(v < 0 for v in allocatable.values()):
        return False
    return all(min(v, 2**63 - 1) <= allocatable.get(k, 0) for k, v in wanted.items())


@given(allocatables, requests)
def test_fits_is_karpenters_fits_for_every_type(
    types: list[dict[str, int]], wanted: dict[str, int]
) -> None:
    table = InstanceTypeTable(
        [InstanceType(f"t{i}", Requirements(), a, a, ()) for i, a in enumerate(types)]
    )
    got = table.fits(wanted).tolist()
    assert got == [_karpenter_fits(a, wanted) for a in types]


def _spread_pod(name: str) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"a": "b"}},
            "spec": {
                "containers": [{"name": "c"}],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": HOST,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"a": "b"}},
                    }
                ],
            },
        }
    )


def test_a_hostname_registered_again_reaches_a_group_created_since() -> None:
    topology = Topology({})
    topology.register(HOST, "node-1")  # no group yet: nothing to register with
    topology.update(_spread_pod("p"))
    (group,) = topology.groups.values()
    assert "node-1" not in group.domains
    topology.register(HOST, "node-1")  # a planned NodeClaim taking its next pod
    assert group.domains == {"node-1": 0}
    topology.register(HOST, "node-1")  # again: nothing changes
    assert group.domains == {"node-1": 0}
