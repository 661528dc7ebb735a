"""PodDisruptionBudgets, as Karpenter reads them when it picks and simulates disruption
candidates (kubernetes-sigs/karpenter `pkg/utils/pdb/pdb.go` @ 2266468104f3) and as the Eviction
API applies them when a node drains (kubernetes `pkg/registry/core/pod/storage/eviction.go`).
Below the controllers, where Karpenter keeps it (`pkg/utils/pdb`): provisioning, disruption and
termination all ask it, and none of them imports another for it.

`Limits` is Karpenter's `pdb.Limits`, built once per question from the applied PDBs and the
cluster's pods (`Limits.of(cluster)`):
- A PDB selects the pods of its namespace its label selector matches (a PDB without a selector
  selects none, an empty selector all).
- `disruptions_allowed`: what the kube-controller-manager's disruption controller would write
  to `status.disruptionsAllowed`. gpucap runs no such controller, so it is computed live from
  the pods the PDB selects: expected = those that exist and are not finished (an evicted pod
  pends again, so this is the workload's replicas), healthy = those bound and not finished (and
  Ready when the pod carries a Ready condition), desired = `minAvailable`, or expected minus
  `maxUnavailable` (percentages of expected, rounded up), allowed = healthy - desired, and 0
  when that is negative or nothing is expected (`updatePdbStatus`). A `status` given in the
  manifest is not read: the controller would overwrite it.
- `can_evict_pods(pods, now)` (`CanEvictPods`, asked by candidate selection for every pod bound
  to a node): only evictable pods count (`pods.is_evictable`: active, not tolerating the
  disrupted taint, not mirror pods, no active do-not-disrupt; DaemonSet pods do count); a pod
  two PDBs select blocks ("eviction does not support multiple PDBs"); a pod whose PDB allows no
  disruption now blocks ("pdb prevents pod evictions"), unless the PDB says
  `unhealthyPodEvictionPolicy: AlwaysAllow` and the pod is `Ready=False`. Each pod is held to
  its PDB alone: two pods of one PDB on one node pass while the PDB allows one.
- `fully_blocked(pod, now)` (`isFullyBlocked`): the pod's PDB never lets a pod go
  (`maxUnavailable: 0` or `"0%"`, `minAvailable: "100%"`, exactly as written), or two PDBs
  select it; the same exemptions. `is_currently_reschedulable` (`IsCurrentlyReschedulable`):
  reschedulable, no active do-not-disrupt and not fully blocked: the scheduling simulation
  makes capacity only for these.
- `eviction_refusal(pod)`: the Eviction API's check during the drain ("multiple pdbs",
  "pdb <ns/name>", or None): a Ready pod goes while its PDB allows a disruption; an unready one
  when the PDB says `AlwaysAllow`, or (`IfHealthyBudget`, the default) while the PDB has the
  healthy pods it wants.
Called by candidate selection (`controllers/disruption/candidates.py`), the scheduling
simulation (`controllers/disruption/simulation.py`), the provisioner (the pods of deleting
nodes that move, `controllers/provisioning/provisioner.py`), the drain
(`controllers/nodeclaim/termination.py`) and the simulator's pod controller.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpucap.apis.core import Pod, PodDisruptionBudget
from gpucap.apis.meta import matches_selector
from gpucap.state.cluster import Cluster
from gpucap.utils.pod import (
    do_not_disrupt_active,
    is_evictable,
    is_reschedulable,
    is_terminal,
)

__all__ = [
    "MULTIPLE_PDBS",
    "PDB_PREVENTS",
    "Limits",
    "Verdict",
    "fully_blocking",
    "pdb_key",
    "pod_healthy",
    "scaled",
]

# statenode.go `ValidatePodsDisruptable`: the errors a PDB makes (the DisruptionBlocked
# event says them as a sentence, the PDBs go in the error's values).
PDB_PREVENTS = "pdb prevents pod evictions"
MULTIPLE_PDBS = "eviction does not support multiple PDBs"


def pdb_key(pdb: PodDisruptionBudget) -> str:
    """`namespace/name`, as Karpenter names a PDB (`client.ObjectKeyFromObject`)."""
    return f"{pdb.metadata.namespace}/{pdb.metadata.name}"


def scaled(value: int | str, total: int) -> int:
    """`intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)`, as the disruption
    controller scales `minAvailable` and `maxUnavailable`; an unreadable string counts 0 (the
    API server rejects it first)."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            return 0
        return -(-pct * total // 100)
    try:
        return int(text)
    except ValueError:
        return 0


def fully_blocking(pdb: PodDisruptionBudget) -> bool:
    """pdb.go `newPdb`'s `isFullyBlocking`: `maxUnavailable` the integer 0 or the string "0%",
    or `minAvailable` the string "100%" (other spellings, such as `minAvailable` equal to the
    replicas, block only while they do: `disruptions_allowed`)."""
    spec = pdb.spec
    unavailable, available = spec.max_unavailable, spec.min_available
    return (
        (isinstance(unavailable, int) and unavailable == 0)
        or unavailable == "0%"
        or available == "100%"
    )


def pod_healthy(pod: Pod) -> bool:
    """Healthy for a PDB: bound, not finished, and Ready when the pod says (gpucap's pods
    carry no Ready condition until something sets one; then bound counts as healthy)."""
    if not pod.spec.node_name or is_terminal(pod):
        return False
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    return ready is None or ready.status == "True"


def _not_ready(pod: Pod) -> bool:
    """The pod has a `Ready=False` condition (what `AlwaysAllow` lets go in Karpenter's
    check; a pod without a Ready condition is not unready there)."""
    return any(c.type == "Ready" and c.status == "False" for c in pod.status.conditions)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why a node's pods keep it: Karpenter's error (`PDB_PREVENTS` or `MULTIPLE_PDBS`), the
    PDBs it names (`namespace/name`) and the pod that met them."""

    message: str
    pdbs: tuple[str, ...]
    pod: str


@dataclass(slots=True)
class _Status:
    """What the disruption controller would compute for one PDB (see the module docstring)."""

    expected: int
    healthy: int
    desired: int

    @property
    def disruptions_allowed(self) -> int:
        allowed = self.healthy - self.desired
        return allowed if self.expected > 0 and allowed > 0 else 0


@dataclass(slots=True)
class Limits:
    """`pdb.Limits` over `pdbs`, with `pods` the cluster's pods (what the PDBs' statuses are
    computed from, per PDB when first needed). See the module docstring."""

    pdbs: Sequence[PodDisruptionBudget]
    pods: Sequence[Pod]
    _status: dict[int, _Status] = field(default_factory=dict)

    @classmethod
    def of(cls, cluster: Cluster) -> Limits:
        """The cluster's applied PDBs over its pods now (no pod list is made without a PDB)."""
        pdbs = cluster.pdbs()
        return cls(pdbs, cluster.pods() if pdbs else ())

    def __bool__(self) -> bool:
        """Whether any PDB exists: without one every question here answers "go"."""
        return bool(self.pdbs)

    def selecting(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The PDBs that select `pod` (its namespace, the selector matching its labels)."""
        namespace = pod.metadata.namespace
        labels = pod.metadata.labels
        return [
            b
            for b in self.pdbs
            if b.metadata.namespace == namespace and matches_selector(b.spec.selector, labels)
        ]

    def status(self, pdb: PodDisruptionBudget) -> _Status:
        """The PDB's expected, healthy and desired pods now (see the module docstring)."""
        hit = self._status.get(id(pdb))
        if hit is not None:
            return hit
        namespace = pdb.metadata.namespace
        selected = [
            p
            for p in self.pods
            if p.metadata.namespace == namespace
            and not is_terminal(p)
            and matches_selector(pdb.spec.selector, p.metadata.labels)
        ]
        expected = len(selected)
        spec = pdb.spec
        if spec.max_unavailable is not None:
            desired = max(expected - scaled(spec.max_unavailable, expected), 0)
        elif spec.min_available is not None:
            desired = scaled(spec.min_available, expected)
        else:
            desired = 0
        hit = self._status[id(pdb)] = _Status(
            expected, sum(1 for p in selected if pod_healthy(p)), desired
        )
        return hit

    def disruptions_allowed(self, pdb: PodDisruptionBudget) -> int:
        """`status.disruptionsAllowed` as the disruption controller would write it now."""
        return self.status(pdb).disruptions_allowed

    def can_evict_pods(self, pods: Iterable[Pod], now: dt.datetime) -> Verdict | None:
        """`CanEvictPods`: None when every evictable pod of `pods` may go now as far as its PDB
        is concerned, else why the first that may not is held (see the module docstring)."""
        if not self.pdbs:
            return None
        for pod in pods:
            verdict = self._held(pod, now, fully=False)
            if verdict is not None:
                return verdict
        return None

    def fully_blocked(self, pod: Pod, now: dt.datetime) -> Verdict | None:
        """`isFullyBlocked`: why no eviction of `pod` can ever pass (its PDB is fully blocking,
        or two PDBs select it), or None."""
        if not self.pdbs:
            return None
        return self._held(pod, now, fully=True)

    def is_currently_reschedulable(self, pod: Pod, now: dt.datetime) -> bool:
        """`IsCurrentlyReschedulable`: the pod would move if its node went now, so the
        simulation makes room for it: reschedulable, no active do-not-disrupt, not fully
        blocked by a PDB."""
        return (
            is_reschedulable(pod)
            and not do_not_disrupt_active(pod, now)
            and (not self.pdbs or self._held(pod, now, fully=True) is None)
        )

    def _held(self, pod: Pod, now: dt.datetime, *, fully: bool) -> Verdict | None:
        """pdb.go `isEvictable` for one pod: `fully` asks about fully blocking PDBs
        (`fullyBlockingPDBs`), else about PDBs allowing no disruption now (`zeroDisruptions`)."""
        if not is_evictable(pod, now):
            return None
        matching = self.selecting(pod)
        if not matching:
            return None
        if len(matching) > 1:
            return Verdict(MULTIPLE_PDBS, tuple(pdb_key(b) for b in matching), pod.key)
        pdb = matching[0]
        if pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow" and _not_ready(pod):
            return None
        blocks = fully_blocking(pdb) if fully else self.disruptions_allowed(pdb) == 0
        return Verdict(PDB_PREVENTS, (pdb_key(pdb),), pod.key) if blocks else None

    def eviction_refusal(self, pod: Pod) -> str | None:
        """The Eviction API's PDB check for `pod` during a drain: "multiple pdbs" when two PDBs
        select it, "pdb <namespace/name>" when its PDB refuses it now, else None (see the
        module docstring)."""
        if not self.pdbs:
            return None
        matching = self.selecting(pod)
        if not matching:
            return None
        if len(matching) > 1:
            return "multiple pdbs"
        pdb = matching[0]
        status = self.status(pdb)
        name = f"pdb {pdb_key(pdb)}"
        if not pod_healthy(pod):
            # eviction.go: an unready pod may go when the policy says AlwaysAllow, or
            # (IfHealthyBudget) while the PDB has its healthy pods.
            always = pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow"
            if always or (status.desired > 0 and status.healthy >= status.desired):
                return None
            return name
        return None if status.healthy - status.desired > 0 else name
