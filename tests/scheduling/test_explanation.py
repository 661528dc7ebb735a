"""scheduling/explanation.py and `Scheduler.explain`: the cause named when a filter of
`plan --explain` leaves nothing."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.serde import load_text
from gpucap.scheduling.explanation import (
    limit_causes,
    offering_causes,
    requirement_causes,
    resource_causes,
)
from gpucap.scheduling.requirements import Requirement, Requirements
from gpucap.scheduling.scheduler import PoolInput, Scheduler
from tests.builders import daemonset, pod, to_yaml
from tests.scheduling.builders import CPU_TYPES, GIB, GPU_TYPES, cpu_pool, instance_type

GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
FAMILY = "karpenter.k8s.aws/instance-family"


def reqs(*triples: tuple[str, str, list[str]]) -> Requirements:
    return Requirements.of(*(Requirement.new(k, op, v) for k, op, v in triples))


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (
            reqs((GPU_NAME, "In", ["h100"])),
            [f"{GPU_NAME} In [h100]: the 3 instance types left have a10g"],
        ),
        (
            reqs((FAMILY, "In", ["p5"]), (GPU_NAME, "In", ["h100"])),
            [
                f"{FAMILY} In [p5]: the 3 instance types left have g5",
                f"{GPU_NAME} In [h100]: the 3 instance types left have a10g",
            ],
        ),
        (
            reqs(("kubernetes.io/arch", "In", ["arm64"])),
            ["kubernetes.io/arch In [arm64]: the 3 instance types left have amd64"],
        ),
    ],
)
def test_the_pod_requirement_no_type_meets_is_named_with_the_values_the_types_have(
    pod: Requirements, expected: list[str]
) -> None:
    assert requirement_causes(GPU_TYPES, pod) == expected


def test_a_requirement_on_a_label_the_types_do_not_define_is_not_blamed() -> None:
    pod = reqs(("example.com/team", "In", ["ml"]), (GPU_NAME, "In", ["h100"]))
    assert requirement_causes(GPU_TYPES, pod) == [
        f"{GPU_NAME} In [h100]: the 3 instance types left have a10g"
    ]


def test_requirements_that_only_fail_together_say_so() -> None:
    # g5.xlarge is a g5 with 4 vCPUs, m5.2xlarge an m5 with 8: each requirement alone is met.
    types = [GPU_TYPES[0], CPU_TYPES[2]]
    pod = reqs((FAMILY, "In", ["g5"]), ("karpenter.k8s.aws/instance-cpu", "In", ["8"]))
    assert requirement_causes(types, pod) == [
        "each pod requirement is met by some instance type, but no single type meets all of "
        "them together"
    ]


def test_a_too_large_request_names_the_resource_and_the_largest_allocatable() -> None:
    causes = resource_causes(GPU_TYPES, {"nvidia.com/gpu": 8, "memory": GIB, "cpu": 1000})
    assert causes == [
        "nvidia.com/gpu: needs 8 with DaemonSet overhead; the largest allocatable among the 3 "
        "instance types left is 4"
    ]


def test_resources_that_only_fail_together_say_so() -> None:
    # x1.a has the CPUs but not the memory, x1.b the memory but not the CPUs.
    types = [
        instance_type("x1.a", cpu=64, memory_gib=8),
        instance_type("x1.b", cpu=2, memory_gib=512),
    ]
    causes = resource_causes(types, {"cpu": 32000, "memory": 256 * GIB})
    assert causes == [
        "each requested resource fits some instance type, but no single type holds all of "
        "them together"
    ]


def test_offerings_are_listed_against_the_allowed_zones_and_capacity_types() -> None:
    types = [instance_type("g5.xlarge", gpu=1, zones=("us-east-1a",), capacity_types=("spot",))]
    allowed = reqs(
        ("topology.kubernetes.io/zone", "In", ["us-east-1b"]),
        ("karpenter.sh/capacity-type", "In", ["on-demand"]),
    )
    assert offering_causes(types, allowed) == [
        "the only instance type left is offered in us-east-1a as spot; allowed: "
        "topology.kubernetes.io/zone In [us-east-1b]; karpenter.sh/capacity-type In [on-demand]"
    ]


def test_types_with_every_offering_unavailable_say_so() -> None:
    unavailable = tuple((z, ct) for z in ("us-east-1a",) for ct in ("spot", "on-demand"))
    types = [instance_type("g5.xlarge", gpu=1, zones=("us-east-1a",), unavailable=unavailable)]
    assert offering_causes(types, Requirements()) == [
        "the only instance type left has no available offering at all"
    ]


def test_a_limit_below_the_smallest_type_is_named() -> None:
    assert limit_causes(GPU_TYPES, {"nvidia.com/gpu": 0, "cpu": 100_000}) == [
        "limit nvidia.com/gpu=0: the smallest among the 3 instance types left has 1"
    ]


def test_limits_that_only_fail_together_say_so() -> None:
    types = [CPU_TYPES[0], GPU_TYPES[0]]  # m5.large: 2 vCPUs, no GPU; g5.xlarge: 4 vCPUs, 1 GPU
    assert limit_causes(types, {"cpu": 3000, "nvidia.com/gpu": 0}) == [
        "each instance type is within some limits, but none within all of them"
    ]


def _with_host_port(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc["spec"]["template"]["spec"] if doc["kind"] == "DaemonSet" else doc["spec"]
    spec["containers"][0]["ports"] = [{"containerPort": 9100, "hostPort": 9100}]
    return doc


def test_explain_names_the_daemonset_pod_that_holds_the_pods_host_port() -> None:
    # The scheduler refuses the pod on every type (the DaemonSet pod runs on each and holds
    # port 9100); explain's fit step runs the same filter, so it says so rather than "usable".
    docs = [cpu_pool(), _with_host_port(daemonset("exporter")), _with_host_port(pod("p"))]
    loaded = load_text(to_yaml(*docs), "t.yaml").objects
    pools = [PoolInput(np, CPU_TYPES) for np in loaded.nodepools]
    scheduler = Scheduler(pools, daemonsets=loaded.daemonsets, pending_pods=loaded.pods)
    (the_pod,) = loaded.pods
    assert scheduler.solve(loaded.pods).pod_errors
    (explained,) = scheduler.explain(the_pod, pools)
    assert explained.steps == [
        ("offered by the node class", 3),
        ("meet the NodePool's requirements", 3),
        ("meet the pod's requirements", 3),
        ("fit the pod plus DaemonSet overhead", 0),
        ("have an available offering in an allowed zone", 0),
        ("fit within the NodePool's limits (if it were empty)", 0),
    ]
    assert explained.verdict == "no instance type left"
    (cause,) = explained.causes
    assert cause.startswith("pod hostport conflicts with existing hostport configuration")
    assert "9100/TCP used by kube-system/exporter" in cause
