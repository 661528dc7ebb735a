"""Taints and tolerations as Karpenter's scheduler checks them (`pkg/scheduling/taints.go`).

Every taint must be tolerated, whatever its effect: Karpenter treats PreferNoSchedule like
NoSchedule until its last relaxation step adds a toleration for it. Uninitialized Karpenter
nodes ignore "known ephemeral" taints (not-ready, unreachable, the cloud provider's
uninitialized taint, Karpenter's unregistered taint, and `readiness.k8s.io/*`), which the node
is expected to lose. Called by the scheduler (new and existing nodes) and by DaemonSet overhead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpucap.apis.core import Taint, Toleration

__all__ = [
    "KNOWN_EPHEMERAL_TAINTS",
    "UNREGISTERED_TAINT",
    "is_known_ephemeral",
    "untolerated",
]

UNREGISTERED_TAINT = Taint(key="karpenter.sh/unregistered", effect="NoExecute")
DISRUPTED_TAINT = Taint(key="karpenter.sh/disrupted", effect="NoSchedule")

KNOWN_EPHEMERAL_TAINTS = (
    Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule"),
    Taint(key="node.kubernetes.io/not-ready", effect="NoExecute"),
    Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule"),
    Taint(key="node.cloudprovider.kubernetes.io/uninitialized", value="true", effect="NoSchedule"),
    UNREGISTERED_TAINT,
)
_EPHEMERAL_PREFIXES = ("readiness.k8s.io/",)


def is_known_ephemeral(taint: Taint) -> bool:
    """Whether a taint is one an initializing node is expected to lose (Karpenter's list)."""
    for known in KNOWN_EPHEMERAL_TAINTS:
        # Kubernetes MatchTaint: same key and effect (the value is not compared).
        if known.key == taint.key and known.effect == taint.effect:
            return True
    return taint.key.startswith(_EPHEMERAL_PREFIXES)


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint no toleration tolerates, or None when the pod tolerates them all."""
    for taint in taints:
        # (A loop rather than `any` over a generator: the scheduler asks this for every pod
        # it tries on a tainted node.)
        for toleration in tolerations:
            if toleration.tolerates(taint):
                break
        else:
            return taint
    return None


def format_taint(taint: Taint) -> str:
    """`key=value:Effect` (or `key:Effect`), as Karpenter prints a taint."""
    return (
        f"{taint.key}={taint.value}:{taint.effect}"
        if taint.value
        else f"{taint.key}:{taint.effect}"
    )
