"""Which NodePools are Ready, and why the others are not: the one decision `plan`, `lint` and
the simulator share (review-2026-12-b.md §3.1).

Read from kubernetes-sigs/karpenter @ 2266468104f3:
- `pkg/controllers/nodepool/readiness/controller.go`: a NodePool whose `nodeClassRef` names a
  kind the cloud provider serves gets the condition NodeClassReady: False `NodeClassNotFound`
  ("NodeClass not found on cluster") when no such class exists, False `NodeClassTerminating`
  while it is being deleted, False `NodeClassReadinessUnknown` when the class's Ready condition
  is Unknown, False with the class's own reason and message when it is False, else True. The
  NodePool is Ready only when that condition (and its validation) is.
- `pkg/utils/nodepool/nodepool.go: ListManaged`: NodePools of a kind the provider does not
  serve (EKS Auto Mode's `eks.amazonaws.com/NodeClass`) are not its to manage at all.

NodePools of EKS Auto Mode and of Karpenter's KWOK provider (`apis/automode.py`) are another
Karpenter's: they are in `unmanaged` (`UnmanagedNodePool`, with who serves them), so `plan` and
the simulator can say which pending pods such a pool would take ("served by EKS Auto Mode, not
planned") instead of calling them Pending. Other node class kinds are only noted.
- `pkg/controllers/provisioning/provisioner.go: NewScheduler`: static NodePools are left to the
  static controller; a NodePool that is not Ready is dropped with the log line "ignoring
  nodepool, not ready" (on every pass); so are deleting ones. A pod that only such a pool could
  take gets no NodeClaim: it stays Pending, with the other pools' reasons or "no dynamic
  nodepools found".

An EC2NodeClass's own readiness comes from the AWS provider (`AWSCloudProvider.
nodeclass_readiness`: AMIsReady, from the AMIs its selector resolves), given here by name as
any object with `status`, `condition`, `reason` and `message` (`NodeClassCondition`).

`ready_nodepools(nodepools, nodeclasses, *, missing_class, notes)` takes a policy for a
NodePool whose EC2NodeClass is not in the input: `"skip"` is Karpenter's (not Ready,
`NodeClassNotFound`; the simulator and lint), `"default"` is `plan`'s (planned with a default
EC2NodeClass, said in a note, because people plan a NodePool file alone). A class present but
not Ready makes its NodePools not Ready under both. Not modelled: a class being deleted
(`NodeClassTerminating`) and the NodePool's own validation condition (the loader rejects what
it would).

Called by `plan` (`operator/plan.py`), lint (`lint/context.py`) and the
simulator (`World._ready_nodepools`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from gpucap.apis.automode import (
    AUTO_MODE,
    AUTO_MODE_COMPUTE_TYPE,
    AUTO_MODE_WELL_KNOWN_LABELS,
    KWOK_WELL_KNOWN_LABELS,
)
from gpucap.apis.core import Pod
from gpucap.apis.nodepool import NodePool
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirement
from gpucap.scheduling.resources import add, fits, pod_requests
from gpucap.scheduling.taints import untolerated

__all__ = [
    "NODECLASS_NOT_FOUND",
    "NODECLASS_READINESS_UNKNOWN",
    "NodeClassCondition",
    "NodePoolReadiness",
    "NotReadyNodePool",
    "UnmanagedNodePool",
    "ready_nodepools",
    "with_not_ready",
]

NODECLASS_NOT_FOUND = "NodeClassNotFound"
NODECLASS_READINESS_UNKNOWN = "NodeClassReadinessUnknown"
# difflib's ratio a present class name needs to be offered for a missing one ("gpus" -> "gpu").
_CLOSE = 0.6


class NodeClassCondition(Protocol):
    """A node class's readiness as its cloud provider reports it (`status` of Ready: "True",
    "False" or "Unknown"; the condition that decides it, with its reason and message)."""

    @property
    def status(self) -> str: ...

    @property
    def condition(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def message(self) -> str: ...


@dataclass(frozen=True, slots=True)
class NotReadyNodePool:
    """A NodePool the provisioner ignores: its NodeClassReady `reason` (Karpenter's) and, in
    `message`, why in gpucap's words (the class, the condition, what it said)."""

    nodepool: NodePool
    nodeclass: str
    reason: str
    message: str
    # A present class whose name is close to a missing one's (a typo), else None.
    suggestion: str | None = None
    template: NodeClaimTemplate = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "template", NodeClaimTemplate.from_nodepool(self.nodepool))

    @property
    def name(self) -> str:
        return self.nodepool.name

    @property
    def pod_reason(self) -> str:
        """The part of a pending pod's reason this pool adds (`nodepool "NAME": ...`, as the
        scheduler writes each pool's part)."""
        return f'nodepool "{self.name}": not ready, {self.message}'

    def could_take(self, pod: Pod) -> bool:
        """Whether the scheduler would try this pool for `pod` were it Ready: the pod tolerates
        its taints and its node selector and required affinity meet its requirements."""
        reqs = pod_requirements(pod, strict=True)
        return untolerated(
            self.template.taints, pod.spec.tolerations
        ) is None and self.template.requirements.is_compatible(reqs, ALLOW_UNDEFINED_WELL_KNOWN)


@dataclass(frozen=True, slots=True)
class UnmanagedNodePool:
    """A NodePool another Karpenter serves (`served_by`: EKS Auto Mode or the KWOK provider):
    not planned here, but a pod it would take is that Karpenter's, not Pending."""

    nodepool: NodePool
    served_by: str
    template: NodeClaimTemplate = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        template = NodeClaimTemplate.from_nodepool(self.nodepool)
        if self.served_by == AUTO_MODE:
            # Every Auto Mode node carries it; pods select Auto Mode with it.
            auto = Requirement.new(AUTO_MODE_COMPUTE_TYPE, "In", ["auto"])
            template.requirements = template.requirements.add(auto)
        object.__setattr__(self, "template", template)

    @property
    def name(self) -> str:
        return self.nodepool.name

    def could_take(self, pod: Pod, types: Sequence[InstanceType] | None = None) -> bool:
        """Whether that Karpenter would give `pod` a node from this pool: the pod tolerates its
        taints, its node selector and required affinity meet the pool's requirements (the
        serving provider's labels are its well-known ones) and, with `types` (the instance
        types that provider chooses from), some type meets both, is offered, and holds the
        pod's requests. Without `types` (KWOK) requirements and taints decide."""
        reqs = pod_requirements(pod, strict=True)
        template = self.template
        known = (
            AUTO_MODE_WELL_KNOWN_LABELS if self.served_by == AUTO_MODE else KWOK_WELL_KNOWN_LABELS
        )
        if untolerated(template.taints, pod.spec.tolerations) is not None:
            return False
        if not template.requirements.is_compatible(reqs, known):
            return False
        if types is None:
            return True
        both = template.requirements.add(*reqs.values())
        requests = add(pod_requests(pod.spec), {"pods": 1})
        return any(
            it.is_compatible(both)
            and it.has_available_offering(both)
            and fits(requests, it.allocatable)
            for it in types
        )


@dataclass(frozen=True, slots=True)
class NodePoolReadiness:
    """`ready`: the NodePools the provisioner uses, in input order (static ones included: the
    provisioner leaves those out itself); `not_ready`: those it ignores, with why;
    `defaulted`: the names of Ready pools planned with the default EC2NodeClass (`plan`);
    `unmanaged`: those another Karpenter serves (EKS Auto Mode, KWOK), in input order."""

    ready: list[NodePool]
    not_ready: list[NotReadyNodePool]
    defaulted: list[str]
    unmanaged: list[UnmanagedNodePool] = field(default_factory=list)


def ready_nodepools(
    nodepools: Sequence[NodePool],
    nodeclasses: Mapping[str, NodeClassCondition],
    *,
    missing_class: Literal["skip", "default"],
    notes: list[str] | None = None,
) -> NodePoolReadiness:
    """Which of `nodepools` are Ready given their EC2NodeClasses' readiness (by name; see the
    module docstring for the rules and the `missing_class` policy). With `notes`, `plan`'s
    notes are added for each pool it does not plan as given (EKS Auto Mode, another node class
    kind, a default EC2NodeClass, not Ready)."""
    ready: list[NodePool] = []
    not_ready: list[NotReadyNodePool] = []
    defaulted: list[str] = []
    unmanaged: list[UnmanagedNodePool] = []
    say = notes.append if notes is not None else _silent
    for np in nodepools:
        ref = np.spec.template.spec.node_class_ref
        if ref.served_by is not None:
            unmanaged.append(UnmanagedNodePool(np, ref.served_by))
            if ref.is_auto_mode:
                say(
                    f"NodePool {np.name}: an EKS Auto Mode NodeClass; not planned (EKS's managed "
                    "Karpenter serves it, with its own instance selection)"
                )
            else:
                say(
                    f"NodePool {np.name}: a KWOK NodeClass; not planned (Karpenter's KWOK "
                    "provider serves it, with fake nodes)"
                )
            continue
        if not ref.is_ec2nodeclass:
            say(
                f"NodePool {np.name}: node class {ref.group}/{ref.kind} is not an EC2NodeClass; "
                "ignored (it would never become Ready)"
            )
            continue
        condition = nodeclasses.get(ref.name)
        if condition is None and missing_class == "default":
            close = _closest(ref.name, nodeclasses)
            typo = f" (did you mean {close}? Karpenter would leave it not Ready)" if close else ""
            say(
                f"NodePool {np.name}: EC2NodeClass {ref.name} is not in the input{typo}; "
                "planned with a default one (AL2023, 20Gi root volume)"
            )
            defaulted.append(np.name)
            ready.append(np)
            continue
        if condition is not None and condition.status == "True":
            ready.append(np)
            continue
        entry = _not_ready(np, ref.name, condition, nodeclasses)
        not_ready.append(entry)
        say(f"NodePool {np.name}: not Ready ({entry.reason}), {entry.message}")
    return NodePoolReadiness(ready, not_ready, defaulted, unmanaged)


def with_not_ready(
    errors: Mapping[str, str],
    pod_of: Callable[[str], Pod | None],
    not_ready: Sequence[NotReadyNodePool],
) -> dict[str, str]:
    """Pending pods' reasons (pod key -> the scheduler's reason) with a part for each not Ready
    NodePool that could take the pod (`NotReadyNodePool.could_take`): Karpenter says nothing
    of those pools to the pod, gpucap names them so a typo or a release that does not exist is
    seen where the pod waits."""
    if not not_ready:
        return dict(errors)
    out: dict[str, str] = {}
    for key, reason in errors.items():
        pod = pod_of(key)
        parts = [p.pod_reason for p in not_ready if pod is not None and p.could_take(pod)]
        out[key] = "; ".join([reason, *parts])
    return out


def _not_ready(
    np: NodePool, name: str, condition: NodeClassCondition | None, present: Iterable[str]
) -> NotReadyNodePool:
    if condition is None:
        suggestion = _closest(name, present)
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        return NotReadyNodePool(
            np, name, NODECLASS_NOT_FOUND, f"EC2NodeClass {name} not found{hint}", suggestion
        )
    said = f"EC2NodeClass {name}: {condition.condition} {condition.status}"
    if condition.reason:
        said += f" ({condition.reason})"
    if condition.message:
        said += f", {condition.message}"
    if condition.status == "False":
        return NotReadyNodePool(np, name, condition.reason or "NodeClassNotReady", said)
    return NotReadyNodePool(np, name, NODECLASS_READINESS_UNKNOWN, said)


def _closest(name: str, present: Iterable[str]) -> str | None:
    """The present class name closest to a missing one, if close enough to be a typo."""
    close = difflib.get_close_matches(name, sorted(present), n=1, cutoff=_CLOSE)
    return close[0] if close else None


def _silent(_: str) -> None:
    """`notes` not given: nothing to say."""
