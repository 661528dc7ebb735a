"""`lands_on` makes requirements of the node's labels at the keys the daemon pod asks about
only; the law: it answers as `lands_on_all_labels` (every label a requirement) for random pods
(node selectors, required node-affinity terms with every operator, tolerations) and nodes
(labels under deprecated and current keys, taints)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucap.apis.core import Pod, Taint
from gpucap.scheduling.daemonsets import lands_on, lands_on_all_labels

# Keys a deprecated and a current spelling of which normalise to one requirement, and others.
_KEYS = [
    "kubernetes.io/arch",
    "beta.kubernetes.io/arch",
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
    "karpenter.sh/nodepool",
    "example.com/gpus",
]
_VALUES = ["amd64", "arm64", "a", "b", "gpu", "1", "4"]

_expr = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(_KEYS),
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(st.sampled_from(_VALUES), min_size=1, max_size=2),
        }
    ),
    st.fixed_dictionaries(
        {"key": st.sampled_from(_KEYS), "operator": st.sampled_from(["Exists", "DoesNotExist"])}
    ),
    st.fixed_dictionaries(
        {
            "key": st.just("example.com/gpus"),
            "operator": st.sampled_from(["Gt", "Lt"]),
            "values": st.sampled_from([["0"], ["2"], ["8"]]),
        }
    ),
)


@st.composite
def _pods(draw: st.DrawFn) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    selector = draw(st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=2))
    if selector:
        spec["nodeSelector"] = selector
    terms = draw(st.lists(st.lists(_expr, min_size=1, max_size=3), max_size=3))
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    return Pod.model_validate({"metadata": {"name": "d"}, "spec": spec})


@settings(max_examples=400, deadline=None)
@given(
    _pods(),
    st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=6),
    st.lists(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]), max_size=2),
)
def test_a_daemon_lands_on_a_node_as_with_every_label_a_requirement(
    pod: Pod, labels: dict[str, str], effects: list[str]
) -> None:
    taints = [Taint(key="nvidia.com/gpu", effect=e) for e in effects]
    assert lands_on(pod, labels, taints) == lands_on_all_labels(pod, labels, taints)


def test_a_deprecated_label_and_its_current_key_are_one_requirement() -> None:
    """Both spellings on the node, disagreeing: the pod's requirement meets neither value's
    intersection, as with every label a requirement."""
    pod = Pod.model_validate(
        {
            "metadata": {"name": "d"},
            "spec": {
                "containers": [{"name": "c"}],
                "nodeSelector": {"kubernetes.io/arch": "amd64"},
            },
        }
    )
    labels = {"beta.kubernetes.io/arch": "arm64", "kubernetes.io/arch": "amd64"}
    assert lands_on(pod, labels, []) is lands_on_all_labels(pod, labels, []) is False
    assert lands_on(pod, {"beta.kubernetes.io/arch": "amd64"}, [])
