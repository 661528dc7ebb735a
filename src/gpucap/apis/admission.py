"""What EKS's API server does to a pod before storing it: the `ExtendedResourceToleration`
admission plugin.

Every EKS platform version enables it (EKS is the only platform gpucap models). For each extended
resource a pod's containers or init containers request (`nvidia.com/gpu`, `aws.amazon.com/neuron`,
...), the stored pod tolerates `{key: <resource>, operator: Exists, effect: NoSchedule}`: a pod
asking for GPUs tolerates the `nvidia.com/gpu` taint that keeps other pods off GPU nodes, without
writing it, and Karpenter and the scheduler see the stored pod. The plugin (kubernetes/kubernetes
`plugin/pkg/admission/extendedresourcetoleration/admission.go`) runs on pod create, so pods a
workload controller creates from its template get the toleration as bare pods do; the template
itself (and a DaemonSet's, which its controller and Karpenter's daemon overhead read as written)
is left as it is.

Called by `apis/expansion.py` on every pod a workload or operator kind creates, and where a bare
Pod of the input becomes a pod of the cluster (`Manifests.pods`, the lint context, the simulated
cluster's `apply`). The loaded manifest itself is never changed: `validate` and every output that
shows the user's own manifest show what was written.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpucap.apis.core import Container, Pod, PodSpec, Toleration

__all__ = ["admit", "admitted_tolerations", "is_extended_resource"]

# Resource names in these namespaces are Kubernetes' own, never extended (`IsNativeResource`).
_NATIVE_NAMESPACE = "kubernetes.io/"
# Quota's prefix: `requests.<name>` names a quota of <name>, not a resource a pod requests.
_QUOTA_REQUESTS_PREFIX = "requests."


def is_extended_resource(name: str) -> bool:
    """Kubernetes `helper.IsExtendedResourceName`: a domain-prefixed name (it has a `/`) outside
    the kubernetes.io namespace, and not a `requests.` quota name."""
    if name.startswith(_QUOTA_REQUESTS_PREFIX):
        return False
    return "/" in name and _NATIVE_NAMESPACE not in name


def _extended_requests(containers: Iterable[Container]) -> set[str]:
    # Requests only, as the plugin reads them: the API server has already defaulted a request
    # from each limit (gpucap's `ResourceRequirements` does the same on load).
    return {n for c in containers for n in c.resources.requests if is_extended_resource(n)}


def admitted_tolerations(spec: PodSpec) -> list[Toleration]:
    """The tolerations the plugin adds to a pod with this spec, in the order it adds them
    (resource names sorted); none that the pod already has exactly."""
    names = _extended_requests(spec.containers) | _extended_requests(spec.init_containers)
    out: list[Toleration] = []
    for name in sorted(names):
        added = Toleration(key=name, operator="Exists", effect="NoSchedule")
        # `AddOrUpdateTolerationInPod`: a toleration with the same key, operator, value and
        # effect stands for it (an Exists toleration has no value; tolerationSeconds is only
        # valid on NoExecute, so an equal NoSchedule one is the same toleration).
        if not any(_same(t, added) for t in spec.tolerations):
            out.append(added)
    return out


def _same(t: Toleration, added: Toleration) -> bool:
    return (t.key, t.operator, t.value or "", t.effect or "") == (
        added.key,
        added.operator,
        "",
        added.effect,
    )


def admit(pod: Pod) -> Pod:
    """`pod` as the API server stores it: with a toleration for each extended resource it
    requests (the same object when there is nothing to add, as for most pods)."""
    added = admitted_tolerations(pod.spec)
    if not added:
        return pod
    spec = pod.spec.model_copy(update={"tolerations": [*pod.spec.tolerations, *added]})
    return pod.model_copy(update={"spec": spec})
