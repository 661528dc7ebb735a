"""NodePool readiness (`controllers/nodepool/readiness.py`): Karpenter's NodeClassReady reasons,
the missing-class policies of the simulator/lint ("skip") and `plan` ("default"), and the part
a not-Ready NodePool adds to a pending pod's reason."""

from __future__ import annotations

from dataclasses import dataclass

from gpucap.apis.core import Pod
from gpucap.apis.nodepool import NodePool
from gpucap.controllers.nodepool.readiness import (
    NODECLASS_NOT_FOUND,
    NODECLASS_READINESS_UNKNOWN,
    ready_nodepools,
    with_not_ready,
)
from tests.builders import GPU_TOLERATION, edit, load, nodepool, pod


@dataclass(frozen=True)
class Condition:
    status: str
    condition: str = "Ready"
    reason: str = ""
    message: str = ""


READY = Condition("True")


def pools(*docs: dict[str, object]) -> list[NodePool]:
    return load(*docs).objects.nodepools


def pod_of(doc: dict[str, object]) -> Pod:
    (p,) = load(doc).objects.pods
    return p


def refers_to(name: str, pool: str = "gpu") -> dict[str, object]:
    return edit(nodepool(pool), "spec.template.spec.nodeClassRef.name", name)


def test_a_nodepool_whose_class_is_missing_is_not_ready_node_class_not_found() -> None:
    r = ready_nodepools(pools(refers_to("gpus")), {"gpu": READY}, missing_class="skip")
    assert r.ready == []
    (entry,) = r.not_ready
    assert (entry.name, entry.nodeclass, entry.reason) == ("gpu", "gpus", NODECLASS_NOT_FOUND)
    assert (entry.suggestion, entry.message) == (
        "gpu",
        "EC2NodeClass gpus not found (did you mean gpu?)",
    )


def test_no_class_name_close_enough_suggests_nothing() -> None:
    r = ready_nodepools(pools(refers_to("zzzzzz")), {"gpu": READY}, missing_class="skip")
    assert r.not_ready[0].suggestion is None
    assert r.not_ready[0].message == "EC2NodeClass zzzzzz not found"


def test_plan_plans_a_nodepool_without_its_class_with_the_default_one_and_a_note() -> None:
    notes: list[str] = []
    r = ready_nodepools(pools(refers_to("gpus")), {}, missing_class="default", notes=notes)
    assert [np.name for np in r.ready] == ["gpu"]
    assert (r.not_ready, r.defaulted) == ([], ["gpu"])
    assert notes == [
        "NodePool gpu: EC2NodeClass gpus is not in the input; planned with a default one "
        "(AL2023, 20Gi root volume)"
    ]


def test_a_class_whose_readiness_is_unknown_makes_its_nodepools_not_ready_readiness_unknown() -> (
    None
):
    unknown = Condition("Unknown", "AMIsReady", message="failed to discover any AMIs for alias x")
    for policy in ("skip", "default"):
        r = ready_nodepools(pools(nodepool()), {"gpu": unknown}, missing_class=policy)
        (entry,) = r.not_ready
        assert entry.reason == NODECLASS_READINESS_UNKNOWN
        assert entry.message == (
            "EC2NodeClass gpu: AMIsReady Unknown, failed to discover any AMIs for alias x"
        )


def test_a_class_that_is_not_ready_gives_its_nodepools_its_own_reason() -> None:
    false = Condition("False", "AMIsReady", "UnsupportedAlias", "AL2 aliases are no longer ...")
    r = ready_nodepools(pools(nodepool()), {"gpu": false}, missing_class="skip")
    assert r.not_ready[0].reason == "UnsupportedAlias"
    assert r.not_ready[0].message.startswith("EC2NodeClass gpu: AMIsReady False (UnsupportedAlias)")


def test_nodepools_of_node_classes_the_provider_does_not_serve_are_not_managed() -> None:
    auto = edit(
        nodepool("auto"),
        "spec.template.spec.nodeClassRef",
        {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"},
    )
    r = ready_nodepools(pools(auto), {}, missing_class="skip")
    assert (r.ready, r.not_ready) == ([], [])


def test_a_pending_pods_reason_names_a_not_ready_pool_only_if_the_pool_could_take_it() -> None:
    r = ready_nodepools(pools(refers_to("gpus")), {"gpu": READY}, missing_class="skip")
    gpu_pod = pod_of(pod("vllm-0", gpu=1, tolerations=[GPU_TOLERATION]))
    web = pod_of(pod("web"))  # does not tolerate the pool's GPU taint
    by_key = {gpu_pod.key: gpu_pod, web.key: web}
    errors = {gpu_pod.key: "no dynamic nodepools found", web.key: "no dynamic nodepools found"}
    out = with_not_ready(errors, by_key.get, r.not_ready)
    assert out[gpu_pod.key] == (
        'no dynamic nodepools found; nodepool "gpu": not ready, EC2NodeClass gpus not found '
        "(did you mean gpu?)"
    )
    assert out[web.key] == "no dynamic nodepools found"


def test_plans_note_for_a_missing_class_asks_about_a_close_name() -> None:
    notes: list[str] = []
    ready_nodepools(pools(refers_to("gpus")), {"gpu": READY}, missing_class="default", notes=notes)
    assert notes == [
        "NodePool gpu: EC2NodeClass gpus is not in the input (did you mean gpu? Karpenter would "
        "leave it not Ready); planned with a default one (AL2023, 20Gi root volume)"
    ]
