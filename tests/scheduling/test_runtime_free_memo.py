"""`without_runtime_labels` with the run's `RUNTIME_FREE` memo keeps one variant per pod and
known runtime keys; the law: for random pods (node selectors and required terms on runtime and
other keys) and random known-key sets asked in turn against one memo, every answer equals the
reference (`memo=None`)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Pod
from gpucap.runtime.memo import Memos
from gpucap.scheduling.daemonsets import RUNTIME_FREE, without_runtime_labels

_KEYS = [
    "nvidia.com/gpu.present",
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/cpu-model.vendor_id",
    "karpenter.sh/nodepool",
    "kubernetes.io/arch",
]

_expr = st.fixed_dictionaries(
    {
        "key": st.sampled_from(_KEYS),
        "operator": st.sampled_from(["In", "NotIn"]),
        "values": st.lists(st.sampled_from(["true", "NVIDIA", "gpu"]), min_size=1, max_size=2),
    }
)


@st.composite
def _pods(draw: st.DrawFn) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    selector = draw(st.dictionaries(st.sampled_from(_KEYS), st.just("true"), max_size=2))
    if selector:
        spec["nodeSelector"] = selector
    terms = draw(st.lists(st.lists(_expr, max_size=3), max_size=3))
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    return Pod.model_validate({"metadata": {"name": "d"}, "spec": spec})


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_pods(), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), st.sets(st.sampled_from(_KEYS))), max_size=8),
)
def test_the_memoised_runtime_free_variant_is_the_reference_one(
    pods: list[Pod], asks: list[tuple[int, set[str]]]
) -> None:
    memo = Memos()[RUNTIME_FREE]
    for index, known in asks:
        pod = pods[index % len(pods)]
        assert without_runtime_labels(pod, known, memo) == without_runtime_labels(pod, known)


def test_the_memo_makes_a_pods_variant_once_per_known_runtime_keys() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "d"},
            "spec": {
                "containers": [{"name": "c"}],
                "nodeSelector": {"nvidia.com/gpu.present": "x"},
            },
        }
    )
    memo = Memos()[RUNTIME_FREE]
    first = without_runtime_labels(pod, {"karpenter.sh/nodepool"}, memo)
    # Another node with other non-runtime labels: the same variant.
    assert without_runtime_labels(pod, {"kubernetes.io/arch"}, memo) is first
    known = without_runtime_labels(pod, {"nvidia.com/gpu.present"}, memo)
    assert known is not first
    assert known.spec.node_selector == {"nvidia.com/gpu.present": "x"}
    assert first.spec.node_selector == {}
