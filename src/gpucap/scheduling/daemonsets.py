"""Where a DaemonSet's pod runs: node selector, required node affinity and taints.

The DaemonSet controller places its pod on every node whose labels meet the pod's node selector
and one of its required node-affinity terms (ORed) and whose NoSchedule / NoExecute taints the
pod tolerates (PreferNoSchedule does not keep a daemon off). Also the device-plugin specifics
that GPU001/GPU002 (`lint/rules/gpu.py`) and the kubelet model (`sim/kubelet.py`) share:
labels that only appear on a GPU node at run time, and the GPU Operator's default tolerations.
Pure; called by those two.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from gpucap.apis.core import NodeSelector, NodeSelectorTerm, Pod, Taint, Toleration
from gpucap.apis.gpu import NVIDIA_GPU
from gpucap.apis.gpuoperator import ClusterPolicy
from gpucap.apis.labels import normalize_label
from gpucap.runtime.memo import IdentityMemo, Memo
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.preferences import drop_required_node_term
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.taints import untolerated

__all__ = [
    "OPERATOR_DEFAULT_TOLERATIONS",
    "RUNTIME_FREE",
    "RUNTIME_LABEL_PREFIXES",
    "blocking_taint",
    "lands_on",
    "lands_on_all_labels",
    "operator_tolerations",
    "without_runtime_labels",
]

# Labels that node-feature-discovery, GPU Feature Discovery and the GPU Operator put on nodes at
# run time (feature.node.kubernetes.io/pci-10de.present, nvidia.com/gpu.present, ...): a node
# does not have them when it registers but a GPU node gets them, so a device plugin's node
# selector or required affinity on them is unknown, not a mismatch (the NVIDIA Helm chart's
# DaemonSet has exactly such an affinity).
RUNTIME_LABEL_PREFIXES = ("feature.node.kubernetes.io/", "nvidia.com/")
# The GPU Operator's default `daemonsets.tolerations` (its Helm values): used when the
# ClusterPolicy does not set them.
OPERATOR_DEFAULT_TOLERATIONS = (Toleration(key=NVIDIA_GPU, operator="Exists", effect="NoSchedule"),)


# Per run (`Cluster.memos`): a pod -> the runtime-label keys its node selector and required
# affinity name, and its runtime-label-free variants by which of those keys are known. The
# simulator asks for the same DaemonSet pod on every node it registers (the device plugin's
# three times a node); the variant depends only on the pod and those known keys.
RUNTIME_FREE: Memo[IdentityMemo[Pod, tuple[frozenset[str], dict[frozenset[str], Pod]]]] = (
    Memo.identity(lambda pod: (_runtime_keys(pod), {}), size=64)
)


def _runtime_keys(pod: Pod) -> frozenset[str]:
    spec = pod.spec
    keys = set(spec.node_selector)
    na = spec.affinity.node_affinity if spec.affinity else None
    required = na.required_during_scheduling_ignored_during_execution if na else None
    if required is not None:
        for term in required.node_selector_terms:
            keys.update(e.key for e in term.match_expressions)
    return frozenset(k for k in keys if k.startswith(RUNTIME_LABEL_PREFIXES))


def without_runtime_labels(
    pod: Pod,
    known: Collection[str],
    memo: IdentityMemo[Pod, tuple[frozenset[str], dict[frozenset[str], Pod]]] | None = None,
) -> Pod:
    """The pod with its node selector and required node-affinity expressions on runtime labels
    (RUNTIME_LABEL_PREFIXES) dropped, unless the label is in `known` (the node or pool sets it);
    a required term made only of such expressions may match, so the required affinity is then
    dropped. With `memo` (the run's `RUNTIME_FREE`), the variant made once per pod and known
    runtime keys (`_without_runtime_labels` is the reference; the law in
    tests/scheduling/test_daemonsets.py compares them)."""
    if memo is None:
        return _without_runtime_labels(pod, known)
    keys, variants = memo.lookup(pod)
    seen = frozenset(k for k in keys if k in known)
    variant = variants.get(seen)
    if variant is None:
        variant = variants[seen] = _without_runtime_labels(pod, known)
    return variant


def _without_runtime_labels(pod: Pod, known: Collection[str]) -> Pod:
    def runtime(key: str) -> bool:
        return key.startswith(RUNTIME_LABEL_PREFIXES) and key not in known

    spec = pod.spec
    selector = {k: v for k, v in spec.node_selector.items() if not runtime(k)}
    affinity = spec.affinity
    na = affinity.node_affinity if affinity else None
    required = na.required_during_scheduling_ignored_during_execution if na else None
    if affinity is not None and na is not None and required is not None:
        terms: list[NodeSelectorTerm] | None = []
        for term in required.node_selector_terms:
            kept = [e for e in term.match_expressions if not runtime(e.key)]
            if term.match_expressions and not kept and not term.match_fields:
                terms = None  # this term may match: the required affinity is satisfiable
                break
            terms.append(term.model_copy(update={"match_expressions": kept}))  # type: ignore[union-attr]
        new_required = NodeSelector(node_selector_terms=terms) if terms is not None else None
        na = na.model_copy(
            update={"required_during_scheduling_ignored_during_execution": new_required}
        )
        affinity = affinity.model_copy(update={"node_affinity": na})
    new_spec = spec.model_copy(update={"node_selector": selector, "affinity": affinity})
    return pod.model_copy(update={"spec": new_spec})


def blocking_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint that keeps a daemon off (PreferNoSchedule aside: the DaemonSet
    controller ignores it) that `tolerations` do not tolerate; None when the daemon may run."""
    return untolerated((t for t in taints if t.effect != "PreferNoSchedule"), tolerations)


def operator_tolerations(policy: ClusterPolicy) -> list[Toleration]:
    """The tolerations of the GPU Operator's DaemonSets (device plugin included)."""
    daemonsets = policy.spec.daemonsets
    if "tolerations" in daemonsets.model_fields_set:
        return list(daemonsets.tolerations)
    return list(OPERATOR_DEFAULT_TOLERATIONS)


def lands_on(pod: Pod, labels: Mapping[str, str], taints: Sequence[Taint]) -> bool:
    """A DaemonSet's pod runs on a node with `labels` and `taints`: no blocking taint, and its
    node selector with one of its required node-affinity terms (tried one by one, as the
    scheduler ORs them) meets the labels."""
    if blocking_taint(taints, pod.spec.tolerations) is not None:
        return False
    current: Pod | None = pod
    while current is not None:
        wanted = pod_requirements(current, strict=True)
        # `is_compatible` reads the node's requirements only at the keys the pod's define: the
        # node's labels at those keys (normalised, as requirements are) answer as all of them
        # would (`lands_on_all_labels`), and a GPU node has some forty labels where a daemon
        # pod asks for a few.
        node = Requirements.from_labels(
            {k: v for k, v in labels.items() if normalize_label(k) in wanted}
        )
        if node.is_compatible(wanted):
            return True
        current = drop_required_node_term(current)
    return False


def lands_on_all_labels(pod: Pod, labels: Mapping[str, str], taints: Sequence[Taint]) -> bool:
    """`lands_on` with every node label made a requirement (the reference its law,
    tests/scheduling/test_daemon_lands_on.py, compares with)."""
    if blocking_taint(taints, pod.spec.tolerations) is not None:
        return False
    node = Requirements.from_labels(labels)
    current: Pod | None = pod
    while current is not None:
        if node.is_compatible(pod_requirements(current, strict=True)):
            return True
        current = drop_required_node_term(current)
    return False
