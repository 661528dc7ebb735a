"""Pod requests as Kubernetes' PodRequests computes them, plus Karpenter's pods:1 and Fits."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.core import PodSpec
from gpucap.scheduling.passcache import PassCache
from gpucap.scheduling.resources import (
    add,
    fits,
    merge_max,
    pod_requests,
    requests_for_pods,
    subtract,
)

GI = 2**30


def ctr(name: str, restart_policy: str | None = None, **resources: Any) -> dict[str, Any]:
    """A container dict; `requests=` / `limits=` are resource lists as a manifest writes them."""
    doc: dict[str, Any] = {"name": name, "image": "app", "resources": resources}
    if restart_policy is not None:
        doc["restartPolicy"] = restart_policy
    return doc


def spec(
    containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, **extra: Any
) -> PodSpec:
    doc: dict[str, Any] = {"containers": containers, **extra}
    if init is not None:
        doc["initContainers"] = init
    return PodSpec.model_validate(doc)


def sidecar(name: str, **requests: str) -> dict[str, Any]:
    return ctr(name, restart_policy="Always", requests=requests)


def init(name: str, **requests: str) -> dict[str, Any]:
    return ctr(name, requests=requests)


# ----- pod_requests -----------------------------------------------------------------------------


def test_containers_are_summed() -> None:
    pod = spec(
        [
            ctr("a", requests={"cpu": "500m", "memory": "1Gi"}),
            ctr("b", requests={"cpu": "1.5", "memory": "512Mi", "nvidia.com/gpu": "1"}),
        ]
    )
    assert pod_requests(pod) == {"cpu": 2000, "memory": GI + GI // 2, "nvidia.com/gpu": 1}


def test_a_pod_without_requests_requests_nothing() -> None:
    assert pod_requests(spec([ctr("a")])) == {}


def test_an_init_container_larger_than_the_containers_sets_the_peak() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1"}), ctr("b", requests={"cpu": "1"})],
        init=[init("migrate", cpu="3"), init("warm", cpu="2")],
    )
    # max(containers 2, largest init 3), not the sum 2 + 3 + 2
    assert pod_requests(pod) == {"cpu": 3000}


def test_init_containers_smaller_than_the_containers_change_nothing() -> None:
    pod = spec([ctr("a", requests={"cpu": "2", "memory": "4Gi"})], init=[init("i", cpu="1")])
    assert pod_requests(pod) == {"cpu": 2000, "memory": 4 * GI}


def test_init_container_peak_is_taken_per_resource() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "2", "memory": "1Gi"})],
        init=[init("i", cpu="1", memory="8Gi")],
    )
    assert pod_requests(pod) == {"cpu": 2000, "memory": 8 * GI}


def test_a_resource_only_an_init_container_requests_is_requested() -> None:
    pod = spec([ctr("a", requests={"cpu": "1"})], init=[init("i", **{"nvidia.com/gpu": "1"})])
    assert pod_requests(pod) == {"cpu": 1000, "nvidia.com/gpu": 1}


def test_a_sidecar_is_added_to_the_containers() -> None:
    pod = spec([ctr("a", requests={"cpu": "1"})], init=[sidecar("proxy", cpu="250m")])
    assert pod_requests(pod) == {"cpu": 1250}


def test_a_sidecar_is_added_to_every_later_init_containers_peak() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1"})],
        init=[sidecar("proxy", cpu="500m"), init("migrate", cpu="2")],
    )
    # containers 1 + sidecar 0.5 = 1.5; migrate runs next to the sidecar: 2 + 0.5 = 2.5
    assert pod_requests(pod) == {"cpu": 2500}


def test_a_sidecar_is_not_added_to_earlier_init_containers() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1"})],
        init=[init("migrate", cpu="2"), sidecar("proxy", cpu="500m")],
    )
    # migrate runs alone: 2; steady state 1 + 0.5 = 1.5
    assert pod_requests(pod) == {"cpu": 2000}


def test_sidecars_accumulate_for_later_init_containers() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "100m"})],
        init=[
            sidecar("s1", cpu="1"),
            init("i1", cpu="1"),
            sidecar("s2", cpu="1"),
            init("i2", cpu="1"),
        ],
    )
    # steady 0.1 + 1 + 1 = 2.1; i1 peak 1 + 1 = 2; i2 peak 1 + 2 = 3
    assert pod_requests(pod) == {"cpu": 3000}


@pytest.mark.parametrize("policy", ["OnFailure", "Never"])
def test_only_restart_policy_always_makes_a_sidecar(policy: str) -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1"})],
        init=[ctr("i", restart_policy=policy, requests={"cpu": "500m"})],
    )
    assert pod_requests(pod) == {"cpu": 1000}


def test_pod_overhead_is_added() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1", "memory": "1Gi"})],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert pod_requests(pod) == {"cpu": 1250, "memory": GI + 120 * 2**20}


def test_pod_overhead_is_added_on_top_of_the_init_peak() -> None:
    pod = spec([ctr("a", requests={"cpu": "1"})], init=[init("i", cpu="4")], overhead={"cpu": "1"})
    assert pod_requests(pod) == {"cpu": 5000}


def test_pod_level_requests_override_cpu_and_memory() -> None:
    pod = spec(
        [
            ctr("a", requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}),
            ctr("b", requests={"cpu": "1", "memory": "1Gi"}),
        ],
        resources={"requests": {"cpu": "1500m", "memory": "8Gi", "nvidia.com/gpu": "4"}},
    )
    # cpu and memory come from the pod level, even when lower; the GPU is not a pod-level resource
    assert pod_requests(pod) == {"cpu": 1500, "memory": 8 * GI, "nvidia.com/gpu": 1}


def test_pod_level_requests_leave_unset_resources_to_the_containers() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1", "memory": "1Gi"})], resources={"requests": {"cpu": "4"}}
    )
    assert pod_requests(pod) == {"cpu": 4000, "memory": GI}


def test_pod_level_limits_default_the_pod_level_requests() -> None:
    pod = spec([ctr("a", requests={"cpu": "1"})], resources={"limits": {"cpu": "2"}})
    assert pod_requests(pod) == {"cpu": 2000}


def test_overhead_is_added_after_the_pod_level_override() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1"})],
        resources={"requests": {"cpu": "2"}},
        overhead={"cpu": "100m"},
    )
    assert pod_requests(pod) == {"cpu": 2100}


def test_a_gpu_given_only_in_limits_is_requested() -> None:
    pod = spec([ctr("a", requests={"cpu": "1"}, limits={"nvidia.com/gpu": "2"})])
    assert pod_requests(pod) == {"cpu": 1000, "nvidia.com/gpu": 2}


def test_an_explicit_request_wins_over_the_limit() -> None:
    pod = spec([ctr("a", requests={"cpu": "500m"}, limits={"cpu": "2", "memory": "4Gi"})])
    assert pod_requests(pod) == {"cpu": 500, "memory": 4 * GI}


def test_an_init_sidecar_gpu_limit_is_requested_as_well() -> None:
    pod = spec(
        [ctr("a", requests={"cpu": "1"})],
        init=[ctr("s", restart_policy="Always", limits={"nvidia.com/gpu": "1"})],
    )
    assert pod_requests(pod) == {"cpu": 1000, "nvidia.com/gpu": 1}


def test_fractional_requests_round_up_to_base_units() -> None:
    pod = spec([ctr("a", requests={"cpu": "0.1m", "memory": "1.5"})])
    assert pod_requests(pod) == {"cpu": 1, "memory": 2}


@settings(max_examples=50)
@given(
    st.lists(st.integers(0, 64_000), min_size=1, max_size=4),
    st.lists(st.integers(0, 64_000), max_size=4),
)
def test_ordinary_init_containers_count_as_a_maximum(
    containers: list[int], inits: list[int]
) -> None:
    pod = spec(
        [ctr(f"c{i}", requests={"cpu": f"{m}m"}) for i, m in enumerate(containers)],
        init=[init(f"i{i}", cpu=f"{m}m") for i, m in enumerate(inits)],
    )
    assert pod_requests(pod) == {"cpu": max([sum(containers), *inits])}


# ----- requests_for_pods --------------------------------------------------------------------------


def test_requests_for_pods_adds_one_pod_slot_per_pod() -> None:
    gpu_pod = spec([ctr("a", requests={"cpu": "1", "nvidia.com/gpu": "1"})])
    assert requests_for_pods([gpu_pod, gpu_pod, gpu_pod]) == {
        "cpu": 3000,
        "nvidia.com/gpu": 3,
        "pods": 3,
    }


def test_requests_for_a_pod_without_requests_is_one_pod_slot() -> None:
    assert requests_for_pods([spec([ctr("a")])]) == {"pods": 1}


def test_requests_for_no_pods_is_empty() -> None:
    assert requests_for_pods([]) == {}


def test_requests_for_pods_accepts_any_iterable() -> None:
    pods = (spec([ctr("a", requests={"memory": "1Gi"})]) for _ in range(2))
    assert requests_for_pods(pods) == {"memory": 2 * GI, "pods": 2}


# ----- fits ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "allocatable", "expected"),
    [
        ({}, {}, True),
        ({}, {"cpu": 4000}, True),
        ({"cpu": 1000}, {"cpu": 1000}, True),  # equal fits
        ({"cpu": 1001}, {"cpu": 1000}, False),
        ({"cpu": 1}, {}, False),  # a missing allocatable counts as 0
        ({"cpu": 0}, {}, True),
        ({"nvidia.com/gpu": 1}, {"cpu": 64_000, "memory": 256 * GI}, False),
        ({"nvidia.com/gpu": 1, "pods": 1}, {"nvidia.com/gpu": 1, "pods": 110}, True),
        ({}, {"cpu": -1}, False),  # any negative allocatable: nothing fits
        ({"memory": GI}, {"memory": 2 * GI, "cpu": -1}, False),
        ({"cpu": 500, "memory": 3 * GI}, {"cpu": 1000, "memory": 2 * GI}, False),
    ],
)
def test_fits(requests: dict[str, int], allocatable: dict[str, int], expected: bool) -> None:
    assert fits(requests, allocatable) == expected


# ----- arithmetic --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({}, {}, {}),
        ({"cpu": 1000}, {}, {"cpu": 1000}),
        ({"cpu": 1000, "memory": GI}, {"cpu": 250}, {"cpu": 750, "memory": GI}),
        ({"cpu": 1000}, {"cpu": 3000}, {"cpu": -2000}),  # may go negative
        ({"cpu": 1000}, {"nvidia.com/gpu": 1}, {"cpu": 1000}),  # keys only in b are ignored
        ({}, {"cpu": 1}, {}),
    ],
)
def test_subtract(a: dict[str, int], b: dict[str, int], expected: dict[str, int]) -> None:
    assert subtract(a, b) == expected


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        ([], {}),
        ([{"cpu": 1}], {"cpu": 1}),
        ([{"cpu": 1}, {"cpu": 2, "memory": 3}], {"cpu": 3, "memory": 3}),
        ([{"cpu": 1}, {"memory": 3}, {"cpu": -1, "pods": 1}], {"cpu": 0, "memory": 3, "pods": 1}),
    ],
)
def test_add(lists: list[dict[str, int]], expected: dict[str, int]) -> None:
    assert add(*lists) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({}, {}, {}),
        ({"cpu": 1}, {}, {"cpu": 1}),
        ({}, {"cpu": 1}, {"cpu": 1}),
        ({"cpu": 1, "memory": 5}, {"cpu": 3, "pods": 2}, {"cpu": 3, "memory": 5, "pods": 2}),
        ({"cpu": 4}, {"cpu": 3}, {"cpu": 4}),
    ],
)
def test_merge_max(a: dict[str, int], b: dict[str, int], expected: dict[str, int]) -> None:
    assert merge_max(a, b) == expected


def test_arithmetic_does_not_mutate_its_inputs() -> None:
    a, b = {"cpu": 1, "memory": 2}, {"cpu": 5, "pods": 1}
    add(a, b)
    subtract(a, b)
    merge_max(a, b)
    assert (a, b) == ({"cpu": 1, "memory": 2}, {"cpu": 5, "pods": 1})


def test_pod_requests_does_not_leak_state_between_pods() -> None:
    pod = spec([ctr("a", requests={"cpu": "1"})], init=[sidecar("s", cpu="1")])
    assert pod_requests(pod) == pod_requests(pod) == {"cpu": 2000}


def test_pod_requests_keeps_no_spec_alive() -> None:
    # A memo of it is the run's (issue 22 §7): a module-level table would keep the spec.
    pod = spec([ctr("a", requests={"cpu": "1"})])
    assert pod_requests(pod) == {"cpu": 1000}
    ref = weakref.ref(pod)
    del pod
    gc.collect()
    assert ref() is None


def test_a_pass_cache_sums_a_spec_once_and_hands_out_copies() -> None:
    cache = PassCache()
    pod = spec([ctr("a", requests={"cpu": "1"})])
    first = cache.pod_requests(pod)
    first["pods"] = 1  # the scheduler adds Karpenter's `pods: 1` in place
    assert cache.pod_requests(pod) == {"cpu": 1000}
    assert len(cache.spec_requests) == 1


# ----- laws ------------------------------------------------------------------------------------------

NAMES = st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage"])
non_negative = st.dictionaries(NAMES, st.integers(0, 10**15))
resources = st.dictionaries(NAMES, st.integers(-(10**15), 10**15))


@given(non_negative, non_negative)
def test_a_request_fits_in_itself_plus_anything_non_negative(
    a: dict[str, int], b: dict[str, int]
) -> None:
    assert fits(a, add(a, b))


@given(non_negative, non_negative)
def test_both_lists_fit_in_their_merged_maximum(a: dict[str, int], b: dict[str, int]) -> None:
    assert fits(a, merge_max(a, b))
    assert fits(b, merge_max(a, b))


@given(resources, resources)
def test_add_is_commutative(a: dict[str, int], b: dict[str, int]) -> None:
    assert add(a, b) == add(b, a)


@given(resources, resources)
def test_subtract_undoes_add_on_the_keys_of_the_first_list(
    a: dict[str, int], b: dict[str, int]
) -> None:
    back = subtract(add(a, b), b)
    assert {k: back[k] for k in a} == a
    assert all(v == 0 for k, v in back.items() if k not in a)


@given(non_negative, non_negative)
def test_fits_iff_nothing_left_is_negative(requests: dict[str, int], alloc: dict[str, int]) -> None:
    left = subtract(add(alloc, dict.fromkeys(requests, 0)), requests)
    assert fits(requests, alloc) == all(v >= 0 for v in left.values())
