"""The provisioning loop of `plan`: what Karpenter's provisioner ends with for the pending pods.

Karpenter's `Provisioner.Reconcile` (kubernetes-sigs/karpenter
`pkg/controllers/provisioning/provisioner.go`) runs one scheduling pass (`Schedule`: the Ready
dynamic NodePools with the instance types their node class offers, the cluster state and the
DaemonSets, then `Scheduler.Solve`), creates the NodeClaims it decided, and loops. The next
pass waits until every NodeClaim has launched (`Cluster.Synced`), so it sees them as in-flight
state nodes with the instance type they became (`state/inflight.py`): they count against
their NodePool's limits with that type's capacity, not with the largest option the first pass
reserved (`subtractMax`), and the pods the first pass could not place for limits can now go to
new NodeClaims. `plan` runs these passes until one creates no NodeClaim (nothing more can be
placed: the next would see the same state), nothing is pending, or `max_passes` is reached.
Each pass places at least one new pod, so the loop also ends within (pending pods) passes.

Where gpucap differs:
- the pods of a pass's NodeClaims stay on them in later passes, as bound (what kube-scheduler
  does with Karpenter's nomination once the node registers); Karpenter re-solves them each
  pass, existing and in-flight capacity first, which puts them back on the same in-flight
  capacity unless a pod left pending by an earlier pass takes the room first;
- a NodeClaim whose launch fails is shown with the error and its pods stay on it (Karpenter
  deletes it and retries its pods with the failed offerings marked unavailable);
- a NodePool whose EC2NodeClass is not in the input is planned with a default EC2NodeClass
  (AL2023, 20Gi root volume) and a note, instead of being ignored as not Ready, because people
  often plan with a NodePool alone; NodeOverlays are applied (`scheduling/nodeoverlay.py`)
  although Karpenter needs a feature gate for them, and a note says so;
- static NodePools' NodeClaims (`controllers/static.py`) are created before the first pass and
  are capacity from it on (Karpenter's static controller and provisioner run independently);
  with no dynamic NodePool the pods that fit no existing or static node get Karpenter's
  "no dynamic nodepools found", and those that fit are placed (kube-scheduler's part).
The loop is `plan`'s (one run, no time); each pass is the Provisioner's (`provisioner.py`):
the same pools (instance types from the cloud provider), the same scheduler, the NodeClaims the
simulator creates. Launches are previewed (`launchpreview.py`), not created: see
docs/design/scheduling.md "One provisioning path" for why. Called by `plan` (`operator/plan.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpucap.apis.automode import AUTO_MODE
from gpucap.apis.core import Pod, Taint
from gpucap.apis.labels import OS
from gpucap.apis.workloads import DaemonSet
from gpucap.cloudprovider.types import InsufficientCapacityError
from gpucap.controllers.launchpreview import (
    LaunchPreviewer,
    PreviewedLaunch,
    reservation_labels,
)
from gpucap.controllers.nodepool.readiness import UnmanagedNodePool
from gpucap.controllers.provisioning.names import NodeClaimNames
from gpucap.controllers.provisioning.provisioner import new_scheduler
from gpucap.controllers.provisioning.spotties import spot_tie_notes
from gpucap.controllers.static import static_node_claims
from gpucap.runtime.collector import collector_paused
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.explanation import PoolExplanation
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.reservationmanager import with_reservations_used
from gpucap.scheduling.resources import Resources, add, pod_requests
from gpucap.scheduling.scheduler import PoolInput, Results, Scheduler
from gpucap.state.inflight import launched_labels, launched_node

__all__ = [
    "DEFAULT_MAX_PASSES",
    "FirstPass",
    "NotPlanned",
    "Plan",
    "PlannedNodeClaim",
    "explain_first_pass",
    "not_planned",
    "run_passes",
]

# A bound on the loop for `plan` (each pass places at least one pod, so it ends anyway).
DEFAULT_MAX_PASSES = 20


@dataclass(slots=True, eq=False)
class PlannedNodeClaim:
    """A NodeClaim the plan creates: from provisioning pass `pass_number` (1, 2, ...) or, with
    `static` and pass 0, kept by a static NodePool. `instance_types` are its options (for a
    static NodeClaim, the types CreateFleet is offered); `labels` are the NodeClaim's own,
    before launch; `launch` is what CreateFleet would start, or `launch_error` why not;
    `requirements` are the scheduler NodeClaim's, which its types were filtered with (None for a
    static NodeClaim: the report reads them)."""

    name: str
    nodepool: str
    pass_number: int
    instance_types: list[InstanceType]
    pods: list[Pod]
    requests: Resources
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...] = ()
    static: bool = False
    launch: PreviewedLaunch | None = None
    launch_error: str | None = None
    requirements: Requirements | None = None

    @property
    def launched_type(self) -> InstanceType | None:
        """The instance type the NodeClaim became (None when its launch fails)."""
        if self.launch is None:
            return None
        return next(
            (it for it in self.instance_types if it.name == self.launch.instance_type), None
        )

    def node_labels(self) -> dict[str, str]:
        """The labels the node would carry once launched (the NodeClaim's own before that)."""
        it = self.launched_type
        if it is None or self.launch is None:
            return dict(sorted(self.labels.items()))
        return launched_labels(
            self.labels,
            it,
            self.launch.zone,
            self.launch.capacity_type,
            reservation_labels(self.launch),
        )


@dataclass(frozen=True, slots=True)
class NotPlanned:
    """A pod left to another Karpenter: `served_by` (EKS Auto Mode, the KWOK provider) would
    give it a node from one of `nodepools`, which `plan` does not plan."""

    served_by: str
    nodepools: tuple[str, ...]

    @property
    def reason(self) -> str:
        pools = ", ".join(self.nodepools)
        noun = "NodePool" if len(self.nodepools) == 1 else "NodePools"
        return f"served by {self.served_by} ({noun} {pools}), not planned"


def not_planned(
    pod: Pod, unmanaged: Sequence[UnmanagedNodePool], auto_mode_types: Sequence[InstanceType]
) -> NotPlanned | None:
    """Who serves `pod` instead of the AWS provider: the provider of the first NodePool of
    `unmanaged` (EKS Auto Mode's, the KWOK provider's) that would take it, with every pool of
    that provider that would; None when none would. `auto_mode_types` are the instance types
    Auto Mode chooses from (KWOK pools decide by taints and requirements). Read by `plan` and
    the simulator's pod controller."""
    taking = [
        u
        for u in unmanaged
        if u.could_take(pod, auto_mode_types if u.served_by == AUTO_MODE else None)
    ]
    if not taking:
        return None
    by = taking[0].served_by
    return NotPlanned(by, tuple(u.name for u in taking if u.served_by == by))


@dataclass(frozen=True, slots=True)
class FirstPass:
    """What the loop started from: the pools (each NodePool with its instance types), the
    launch preview, the input's state nodes, the pending pods, the DaemonSets and the options.
    Kept by the `Plan` so that `--explain` and the report explain from the very inputs the plan
    used (`explain_first_pass`), without building the provider stack and the pools again."""

    pools: Sequence[PoolInput]
    preview: LaunchPreviewer
    state_nodes: Sequence[StateNode]
    pending: Sequence[Pod]
    daemonsets: Sequence[DaemonSet]
    options: SchedulingOptions


@dataclass(slots=True)
class Plan:
    """What the provisioning loop ends with: the NodeClaims of every pass (and of static
    NodePools), the pods placed on existing nodes, and why the others stay pending; the pods
    another Karpenter would serve (`not_planned`) are not pending."""

    node_claims: list[PlannedNodeClaim] = field(default_factory=list)
    existing: dict[str, list[str]] = field(default_factory=dict)  # node -> pod keys placed
    # pod key -> reason, as printed (the last pass's `PodError`s as text, which `plan` may
    # complete with the not Ready NodePools that could take the pod).
    pod_errors: dict[str, str] = field(default_factory=dict)
    not_planned: dict[str, NotPlanned] = field(default_factory=dict)  # pod key -> who serves it
    pods: dict[str, Pod] = field(default_factory=dict)  # every pod considered
    notes: list[str] = field(default_factory=list)
    passes: int = 0
    # Each pass's results (the first pass's scheduler is rebuilt by `explain_first_pass`).
    pass_results: list[Results] = field(default_factory=list)
    # What the first pass started from (None for a `Plan` the loop did not make).
    first_pass: FirstPass | None = field(default=None, repr=False, compare=False)

    @property
    def launches(self) -> dict[str, PreviewedLaunch]:
        return {c.name: c.launch for c in self.node_claims if c.launch is not None}

    @property
    def launch_errors(self) -> dict[str, str]:
        return {c.name: c.launch_error for c in self.node_claims if c.launch_error is not None}

    def where(self, pod_key: str) -> str | None:
        """The NodeClaim or existing node `pod_key` was placed on, if any."""
        for claim in self.node_claims:
            if any(p.key == pod_key for p in claim.pods):
                return claim.name
        return next((n for n, keys in self.existing.items() if pod_key in keys), None)


class _Loop:
    """The state the passes share: NodeClaim names, the launched (in-flight) NodeClaims and
    the pods placed on existing nodes."""

    def __init__(
        self,
        pools: Sequence[PoolInput],
        *,
        preview: LaunchPreviewer,
        state_nodes: Sequence[StateNode],
        daemonsets: Sequence[DaemonSet],
        options: SchedulingOptions,
    ) -> None:
        self.pools = pools
        self.preview = preview
        self.state_nodes = state_nodes
        self.daemonsets = daemonsets
        self.options = options
        taken = {n.name for n in state_nodes}
        self.names = NodeClaimNames(taken.__contains__)
        self.inflight: dict[str, PlannedNodeClaim] = {}
        self.bound: dict[str, list[Pod]] = {}  # existing node -> pods the plan placed there

    def static(self, out: Plan) -> None:
        """Static NodePools' NodeClaims, created before the first pass."""
        for group in static_node_claims(self.pools, self.state_nodes, preview=self.preview):
            out.notes.append(
                f"NodePool {group.nodepool}: static (spec.replicas); Karpenter creates its "
                f"{group.count} NodeClaim{'' if group.count == 1 else 's'} only with the "
                "StaticCapacity feature gate on (off by default)"
            )
            if group.launch_error is not None:
                out.notes.append(
                    f"NodePool {group.nodepool}: static NodeClaims cannot launch: "
                    f"{group.launch_error}"
                )
            for _ in range(group.count):
                claim = PlannedNodeClaim(
                    name=self.names.next(group.nodepool),
                    nodepool=group.nodepool,
                    pass_number=0,
                    instance_types=list(group.instance_types),
                    pods=[],
                    requests={},
                    labels=dict(group.labels),
                    taints=group.taints,
                    startup_taints=group.startup_taints,
                    static=True,
                    launch=group.launch,
                    launch_error=group.launch_error,
                )
                out.node_claims.append(claim)
                if claim.launch is not None:
                    self.inflight[claim.name] = claim

    def scheduler(self, queue: Sequence[Pod]) -> Scheduler:
        """The scheduler of the next pass: the input's nodes with what earlier passes placed,
        and every launched NodeClaim so far."""
        nodes = _cluster(self.state_nodes, self.bound, self.inflight.values())
        return new_scheduler(
            self.pools,
            state_nodes=nodes,
            daemonsets=self.daemonsets,
            pending=queue,
            options=self.options,
        )


def run_passes(
    pools: Sequence[PoolInput],
    *,
    preview: LaunchPreviewer,
    state_nodes: Sequence[StateNode] = (),
    pending: Sequence[Pod] = (),
    daemonsets: Sequence[DaemonSet] = (),
    options: SchedulingOptions | None = None,
    max_passes: int = DEFAULT_MAX_PASSES,
) -> Plan:
    """The provisioning loop over `pools`: static NodeClaims first, then up to `max_passes`
    scheduling passes, each launched NodeClaim an in-flight node of the next
    (see the module docstring). `max_passes=1` is one scheduling pass."""
    if max_passes < 1:
        raise ValueError(f"max_passes must be >= 1, got {max_passes}")
    # Without the cyclic collector: a pass makes many short-lived objects (requirements, masks,
    # candidate claims) that reference counting frees, and no garbage cycles (none are left to
    # collect after a 10,000-pod plan), so the collector's passes over them were pure cost
    # (about a tenth of the loop). It runs again afterwards.
    with collector_paused():
        return _run_passes(
            pools,
            preview=preview,
            state_nodes=state_nodes,
            pending=pending,
            daemonsets=daemonsets,
            options=options or SchedulingOptions(),
            max_passes=max_passes,
        )


def _run_passes(
    pools: Sequence[PoolInput],
    *,
    preview: LaunchPreviewer,
    state_nodes: Sequence[StateNode],
    pending: Sequence[Pod],
    daemonsets: Sequence[DaemonSet],
    options: SchedulingOptions,
    max_passes: int,
) -> Plan:
    # The provisioner's passes run in the strict reserved-offering mode (`Provisioner`).
    opts = replace(options, reserved_offering_mode="Strict")
    out = Plan(first_pass=FirstPass(pools, preview, state_nodes, pending, daemonsets, opts))
    loop = _Loop(
        pools, preview=preview, state_nodes=state_nodes, daemonsets=daemonsets, options=opts
    )
    loop.static(out)
    inflight, bound, names = loop.inflight, loop.bound, loop.names
    queue = list(pending)
    last: Results | None = None
    # A NodeClaim's options are some of its NodePool's types: the launch preview reuses what
    # it derived from those (a hint; the launch is the same without it).
    pool_types = {p.nodepool.name: p.instance_types for p in pools}
    used: dict[str, int] = {}  # launches into each reservation so far
    while out.passes < max_passes:
        out.passes += 1
        results = loop.scheduler(queue).solve(queue)
        if not out.pass_results:
            out.pods = dict(results.pods)
        out.pass_results.append(results)
        last = results
        for existing in results.existing_nodes:
            if not existing.pods:
                continue
            target = inflight.get(existing.name)
            if target is not None:
                target.pods.extend(existing.pods)
                if not target.static:
                    target.requests = add(target.requests, *map(_requests, existing.pods))
            else:
                bound.setdefault(existing.name, []).extend(existing.pods)
        launched = 0
        for new in results.new_node_claims:
            claim = PlannedNodeClaim(
                name=names.next(new.nodepool),
                nodepool=new.nodepool,
                pass_number=out.passes,
                instance_types=list(new.instance_types),
                pods=list(new.pods),
                requests=dict(new.requests),
                labels=dict(new.labels),
                taints=new.template.taints,
                startup_taints=new.template.startup_taints,
                requirements=new.requirements,
            )
            try:
                claim.launch = preview.launch(
                    new.instance_types,
                    new.requirements,
                    new.requests,
                    among=pool_types.get(new.nodepool),
                )
            except InsufficientCapacityError as err:
                claim.launch_error = str(err)
            out.node_claims.append(claim)
            if claim.launch is not None:
                inflight[claim.name] = claim
                launched += 1
                if claim.launch.reservation_id:
                    used[claim.launch.reservation_id] = used.get(claim.launch.reservation_id, 0) + 1
        if used:
            # The next pass sees the reservations' counts after these launches (Karpenter's
            # `MarkLaunched`): a reservation with no instance left is no longer offered.
            loop.pools = [
                PoolInput(p.nodepool, with_reservations_used(p.instance_types, used)) for p in pools
            ]
            pool_types = {p.nodepool.name: p.instance_types for p in loop.pools}
        pending_keys = results.pod_errors
        queue = [p for p in queue if p.key in pending_keys] if pending_keys else []
        if not queue or launched == 0:
            break
    else:
        if results.limited_pools():
            out.notes.append(
                f"stopped after {max_passes} pass{'' if max_passes == 1 else 'es'}: pods left "
                "pending for NodePool limits may fit in a later pass, once this pass's "
                "NodeClaims count with the instance type they launch as (raise --passes)"
            )
    assert last is not None
    out.pod_errors = {key: str(error) for key, error in last.pod_errors.items()}
    out.existing = {name: [p.key for p in pods] for name, pods in sorted(bound.items())}
    _static_requests(out.node_claims, last)
    first = out.pass_results[0]
    out.notes.extend(f"NodePool {pool}: {note}" for pool, note in sorted(first.pool_notes.items()))
    out.notes.extend(_windows_notes(out.node_claims))
    out.notes.extend(spot_tie_notes(out.node_claims))
    return out


def explain_first_pass(pod_key: str, first: FirstPass) -> list[PoolExplanation] | None:
    """Why each NodePool can or cannot take pod `pod_key`, as the loop's first pass sees it
    (static NodeClaims in flight); None when the first pass does not consider that pod.
    `first` is what that pass started from (`Plan.first_pass`). A pure call: it rebuilds that
    pass's scheduler over those inputs rather than keeping it in the `Plan`, and does not
    solve: `Scheduler.explain` reads only what the scheduler is built with (its templates,
    pool notes and options), and the pods a pass considers are its queue, the last of a key
    winning as in `Scheduler.solve` (tests/cli/test_plan.py compares with a solved pass)."""
    pod = {p.key: p for p in first.pending}.get(pod_key)
    if pod is None:
        return None
    loop = _Loop(
        first.pools,
        preview=first.preview,
        state_nodes=first.state_nodes,
        daemonsets=first.daemonsets,
        options=first.options,
    )
    loop.static(Plan())
    queue = list(first.pending)
    return loop.scheduler(queue).explain(pod, first.pools)


def _requests(pod: Pod) -> Resources:
    return add(pod_requests(pod.spec), {"pods": 1})


def _cluster(
    state_nodes: Sequence[StateNode],
    bound: Mapping[str, list[Pod]],
    inflight: Iterable[PlannedNodeClaim],
) -> list[StateNode]:
    """The state nodes a pass sees: the input's, with the pods earlier passes placed on them,
    and every launched NodeClaim so far with its pods."""
    nodes = [
        replace(n, pods=(*n.pods, *bound[n.name])) if n.name in bound else n for n in state_nodes
    ]
    for claim in inflight:
        it = claim.launched_type
        assert it is not None
        nodes.append(
            launched_node(
                claim.name,
                claim.node_labels(),
                it,
                taints=claim.taints,
                startup_taints=claim.startup_taints,
                pods=claim.pods,
            )
        )
    return nodes


def _static_requests(claims: Sequence[PlannedNodeClaim], last: Results) -> None:
    """A static NodeClaim requests nothing itself; show what its node would hold: the
    DaemonSet pods that run there and the pods placed on it (its allocatable minus what the
    last pass left)."""
    remaining = {e.name: e for e in last.existing_nodes}
    for claim in claims:
        it = claim.launched_type
        node = remaining.get(claim.name)
        if not claim.static or it is None or node is None:
            continue
        claim.requests = {
            k: v - node.remaining.get(k, 0)
            for k, v in sorted(node.state.allocatable.items())
            if v - node.remaining.get(k, 0) > 0
        }


def _windows_notes(claims: Sequence[PlannedNodeClaim]) -> list[str]:
    """Karpenter ranks and reports offerings by Linux prices (its pricing provider reads only
    `operatingSystem: Linux` and `Linux/UNIX` spot prices); a Windows node's bill adds the
    Windows license."""
    pools = sorted(
        {
            c.nodepool
            for c in claims
            if (it := c.launched_type) is not None
            and (req := it.requirements.get(OS)) is not None
            and req.operator == "In"
            and set(req.values) == {"windows"}
        }
    )
    return [
        f"NodePool {pool}: Windows nodes are priced here at the Linux rate, which is what "
        "Karpenter ranks offerings by; the real bill adds the Windows license"
        for pool in pools
    ]
