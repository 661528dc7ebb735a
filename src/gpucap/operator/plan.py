"""`plan`: the provisioning loop over the provider stack, once and without time.

`plan` takes what `simulate` runs on (`operator/stack.py` `simulated_aws`: a throwaway
`SimulatedEC2` over the catalog on a `FakeClock` with the bundled EKS AMI releases published,
the `AWSCloudProvider` over it with the input's EC2NodeClasses and `DEFAULT_EC2NODECLASS` for a
NodePool whose class is missing, the NodeOverlay decoration, the Provisioner), then the Ready
NodePools (`controllers/nodepool/readiness.py`: an EC2NodeClass whose alias resolves no AMI
makes its NodePools not Ready, and `plan` says so in a note with the pods that then stay
Pending, as `simulate` ignores them), `Provisioner.pools` (each Ready NodePool's instance types
from that provider) and the provisioning loop (`controllers/provisioning/loop.py`) with the AWS
launch preview (`launch.LaunchPreview`: the launch filters and `fleet_pick` that the provider's
`create` and the simulated CreateFleet run).

The `Plan` keeps what its first pass started from (`Plan.first_pass`: the pools, the state
nodes, the pending pods): `explain` reads why a pod stays pending from those, as `gpucap plan
--explain` does, instead of building the stack and the pools again.

Called by `gpucap plan` (and `--explain`), the report, the demo, bench and tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpucap.apis.automode import AUTO_MODE
from gpucap.apis.capacityreservation import CapacityReservationItem
from gpucap.apis.core import Pod
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, ZONE
from gpucap.apis.nodepool import NodePool
from gpucap.apis.serde import Manifests
from gpucap.apis.workloads import DaemonSet
from gpucap.cloudprovider.aws.amifamily.images import NodeClassReadiness
from gpucap.cloudprovider.aws.automode import auto_mode_instance_types
from gpucap.cloudprovider.aws.capacityreservation.describe import state_at
from gpucap.cloudprovider.aws.capacityreservation.provider import CapacityReservation, select
from gpucap.cloudprovider.aws.capacityreservation.status import CapacityReservationStatus
from gpucap.cloudprovider.aws.cloudprovider import (
    DEFAULT_EC2NODECLASS,
    AWSCloudProvider,
    alias_readiness,
)
from gpucap.cloudprovider.aws.instance.launch import LaunchPreview
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.overlay import OverlaidCloudProvider, OverlayEvaluation
from gpucap.controllers.nodepool.readiness import (
    NodePoolReadiness,
    NotReadyNodePool,
    UnmanagedNodePool,
    with_not_ready,
)
from gpucap.controllers.nodepool.readiness import ready_nodepools as nodepool_readiness
from gpucap.controllers.provisioning.loop import (
    DEFAULT_MAX_PASSES,
    FirstPass,
    Plan,
    explain_first_pass,
    not_planned,
    run_passes,
)
from gpucap.controllers.provisioning.provisioner import Provisioner
from gpucap.operator.stack import AWSStack, simulated_aws
from gpucap.runtime.clock import EPOCH, FakeClock
from gpucap.runtime.rfc3339 import format_rfc3339
from gpucap.scheduling.existingnode import StateNode
from gpucap.scheduling.explanation import PoolExplanation
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate
from gpucap.scheduling.options import SchedulingOptions
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.requirements import Requirements
from gpucap.scheduling.scheduler import PoolInput
from gpucap.scheduling.taints import untolerated
from gpucap.state.snapshot import snapshot

__all__ = [
    "ReservationUse",
    "ReservationsUse",
    "explain",
    "explain_pod",
    "judge_overlays",
    "nodeclass_readiness",
    "plan",
    "plan_provider",
    "plan_stack",
    "pools_for",
    "provision",
    "ready_nodepools",
    "reservation_causes",
    "reservations_use",
]

# The Kubernetes minor `plan` resolves AMI aliases for (the CLI's `--kubernetes-version` default).
DEFAULT_KUBERNETES_VERSION = "1.36"
# A not Ready NodePool's note names at most this many of the pods it leaves pending.
_PODS_NAMED = 5


def plan_provider(
    manifests: Manifests,
    catalog: Catalog,
    *,
    options: SchedulingOptions | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> OverlaidCloudProvider:
    """The provider stack `plan` asks for instance types: AWS over a fresh simulated EC2 (no
    capacity closed, no insufficient-capacity marks, the bundled AMI releases of
    `kubernetes_version` published), with the input's NodeOverlays."""
    return plan_stack(
        manifests, catalog, options=options, kubernetes_version=kubernetes_version
    ).cloud


def plan_stack(
    manifests: Manifests,
    catalog: Catalog,
    *,
    options: SchedulingOptions | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> AWSStack:
    """`plan`'s whole stack (see `plan_provider`), its Provisioner under `options`."""
    return simulated_aws(
        catalog,
        FakeClock(),
        nodeclasses={nc.name: nc for nc in manifests.nodeclasses},
        overlays=manifests.nodeoverlays,
        nodepools=manifests.nodepools,
        kubernetes_version=kubernetes_version,
        default_nodeclass=DEFAULT_EC2NODECLASS,
        options=options,
        reservations=manifests.reservations,
    )


def nodeclass_readiness(
    manifests: Manifests, provider: OverlaidCloudProvider
) -> dict[str, NodeClassReadiness]:
    """Each EC2NodeClass of `manifests` by name, Ready or not as the AWS provider under
    `provider` resolves its AMIs (`alias_readiness`): what `plan` and lint decide which
    NodePools are Ready from."""
    aws = provider.inner
    assert isinstance(aws, AWSCloudProvider)
    return alias_readiness(aws, manifests.nodeclasses)


def ready_nodepools(
    manifests: Manifests,
    provider: OverlaidCloudProvider,
    notes: list[str],
    *,
    classes: Mapping[str, NodeClassReadiness] | None = None,
) -> NodePoolReadiness:
    """The NodePools `plan` plans (`readiness.ready_nodepools` with the default-class policy,
    the EC2NodeClasses as `provider` resolves them, or `classes` when the caller has them
    already), with a note for each one it leaves out or plans with the default EC2NodeClass
    (input order)."""
    readiness = nodeclass_readiness(manifests, provider) if classes is None else classes
    return nodepool_readiness(manifests.nodepools, readiness, missing_class="default", notes=notes)


def judge_overlays(
    provider: OverlaidCloudProvider, nodepools: Sequence[NodePool], notes: list[str]
) -> OverlayEvaluation | None:
    """The NodeOverlay controller's pass over the NodePools `plan` plans (its Ready ones):
    which overlays Karpenter accepts, with a note for each conflict it rejects and each pool
    whose types they change; None without overlays. Lint runs the same pass on the same pools,
    so the types its rules read are those `plan` schedules on."""
    if not provider.overlays:
        return None
    evaluation = provider.evaluate(nodepools)
    notes.extend(str(c) for c in evaluation.conflicts)
    for name, changed in evaluation.changed:
        if changed:
            notes.append(
                f"NodePool {name}: NodeOverlays change {changed} instance type"
                f"{'' if changed == 1 else 's'} (Karpenter applies them only with the "
                "NodeOverlay feature gate on; it is off by default)"
            )
    return evaluation


def _pools(
    manifests: Manifests,
    provider: OverlaidCloudProvider,
    provisioner: Provisioner,
    notes: list[str],
) -> tuple[list[PoolInput], NodePoolReadiness]:
    readiness = ready_nodepools(manifests, provider, notes)
    nodepools = readiness.ready
    judge_overlays(provider, nodepools, notes)
    return provisioner.pools(nodepools), readiness


def pools_for(
    manifests: Manifests,
    catalog: Catalog,
    notes: list[str],
    *,
    options: SchedulingOptions | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> list[PoolInput]:
    """Each Ready NodePool with the instance types `plan`'s provider stack answers for it."""
    return _pools_and_readiness(
        manifests, catalog, notes, options=options, kubernetes_version=kubernetes_version
    )[0]


def _pools_and_readiness(
    manifests: Manifests,
    catalog: Catalog,
    notes: list[str],
    *,
    options: SchedulingOptions | None,
    kubernetes_version: str,
) -> tuple[list[PoolInput], NodePoolReadiness]:
    stack = plan_stack(manifests, catalog, options=options, kubernetes_version=kubernetes_version)
    return _pools(manifests, stack.cloud, stack.provisioner, notes)


def plan(
    manifests: Manifests,
    catalog: Catalog,
    *,
    options: SchedulingOptions | None = None,
    max_passes: int = DEFAULT_MAX_PASSES,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> Plan:
    """Schedule the pending pods of `manifests` as Karpenter's provisioning loop would, and
    preview each new NodeClaim's launch. A pod that only a not Ready NodePool could take stays
    Pending, its reason naming that pool, and the pool's note lists such pods; a pod that a
    NodePool of EKS Auto Mode or the KWOK provider would take is not planned (`not_planned`)."""
    notes: list[str] = list(manifests.notes)
    pools, readiness = _pools_and_readiness(
        manifests, catalog, notes, options=options, kubernetes_version=kubernetes_version
    )
    snap = snapshot(manifests.pods, manifests.nodes, manifests.nodeclaims)
    for pod in snap.unknown_node_pods:
        notes.append(
            f"pod {pod.key} is bound to node {pod.spec.node_name}, which is not in the input; "
            "it is not counted"
        )
    out = provision(
        pools,
        state_nodes=snap.nodes,
        pending=snap.pending,
        daemonsets=manifests.daemonsets,
        options=options,
        max_passes=max_passes,
    )
    if readiness.unmanaged:
        _not_planned(out, readiness.unmanaged, catalog)
    not_ready = readiness.not_ready
    if not_ready:
        out.pod_errors = with_not_ready(out.pod_errors, out.pods.get, not_ready)
        _name_pending_pods(notes, not_ready, out)
    out.notes[:0] = notes
    return out


def _not_planned(out: Plan, unmanaged: Sequence[UnmanagedNodePool], catalog: Catalog) -> None:
    """Move each pending pod that a NodePool of another Karpenter would take from
    `out.pod_errors` to `out.not_planned` (the first such pool's provider, with every pool of
    that provider that would take it)."""
    auto_types: Sequence[InstanceType] = ()
    if any(u.served_by == AUTO_MODE for u in unmanaged):
        auto_types = auto_mode_instance_types(catalog)
    for key in list(out.pod_errors):
        pod = out.pods.get(key)
        served = not_planned(pod, unmanaged, auto_types) if pod is not None else None
        if served is not None:
            del out.pod_errors[key]
            out.not_planned[key] = served


def _name_pending_pods(notes: list[str], not_ready: list[NotReadyNodePool], out: Plan) -> None:
    """Complete each not Ready NodePool's note (`NodePool X: not Ready (...), ...`) with the
    pending pods it could have taken."""
    for pool in not_ready:
        head = f"NodePool {pool.name}: not Ready ("
        at = next((i for i, n in enumerate(notes) if n.startswith(head)), None)
        if at is None:
            continue
        pods = [k for k in out.pod_errors if (p := out.pods.get(k)) and pool.could_take(p)]
        if pods:
            shown = ", ".join(pods[:_PODS_NAMED])
            more = f" and {len(pods) - _PODS_NAMED} more" if len(pods) > _PODS_NAMED else ""
            count = "1 pod stays" if len(pods) == 1 else f"{len(pods)} pods stay"
            notes[at] += f"; Karpenter ignores it, so {count} Pending: {shown}{more}"
        else:
            notes[at] += "; Karpenter ignores it (no pending pod needs it)"


def provision(
    pools: Sequence[PoolInput],
    *,
    state_nodes: Sequence[StateNode] = (),
    pending: Sequence[Pod] = (),
    daemonsets: Sequence[DaemonSet] = (),
    options: SchedulingOptions | None = None,
    max_passes: int = DEFAULT_MAX_PASSES,
) -> Plan:
    """The provisioning loop (`loop.run_passes`) over pools already resolved, with the AWS
    launch preview under the options' minValues policy."""
    opts = options or SchedulingOptions()
    return run_passes(
        pools,
        preview=LaunchPreview(opts.min_values_policy),
        state_nodes=state_nodes,
        pending=pending,
        daemonsets=daemonsets,
        options=opts,
        max_passes=max_passes,
    )


def explain(made: Plan, pod_key: str) -> list[PoolExplanation] | None:
    """`plan --explain`: why each Ready NodePool can or cannot take `pod_key` in `made`'s
    first pass, from the inputs that pass started from (None when it did not consider such a
    pending pod)."""
    if made.first_pass is None:
        raise ValueError("explain needs a Plan made by the provisioning loop")
    return explain_first_pass(pod_key, made.first_pass)


def explain_pod(
    manifests: Manifests,
    catalog: Catalog,
    pod_key: str,
    *,
    options: SchedulingOptions | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> list[PoolExplanation] | None:
    """`explain` without a plan at hand: the first pass's inputs built from `manifests` (what
    `plan` builds); None when the input has no such pending pod. A caller holding the `Plan`
    calls `explain` instead."""
    opts = options or SchedulingOptions()
    pools = pools_for(manifests, catalog, [], options=opts, kubernetes_version=kubernetes_version)
    snap = snapshot(manifests.pods, manifests.nodes, manifests.nodeclaims)
    first = FirstPass(
        pools,
        LaunchPreview(opts.min_values_policy),
        snap.nodes,
        snap.pending,
        manifests.daemonsets,
        opts,
    )
    return explain_first_pass(pod_key, first)


# ---- reservations --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ReservationUse:
    """One reservation some EC2NodeClass of the input selects, and what the plan puts in it:
    `available` is its free count when the plan starts (the file's AvailableInstanceCount),
    `node_claims` the planned NodeClaims launched into it (never more than `available`: the
    provider's count goes down with each launch, `loop.py`)."""

    id: str
    instance_type: str
    zone: str
    reservation_type: str  # "default" (an ODCR) or "capacity-block"
    interruptible: bool
    available: int
    node_claims: tuple[str, ...]
    nodeclasses: tuple[str, ...]  # the EC2NodeClasses whose terms select it

    @property
    def used(self) -> int:
        return len(self.node_claims)

    @property
    def kind(self) -> str:
        """`default`, `capacity-block` or `interruptible` (an interruptible ODCR)."""
        return "interruptible" if self.interruptible else self.reservation_type


@dataclass(frozen=True, slots=True)
class ReservationsUse:
    """`plan --reservations`: the selected reservations' use (`uses`, by id) and, per
    reservation of the file that no EC2NodeClass selects, why (`unselected`: id -> words)."""

    uses: tuple[ReservationUse, ...]
    unselected: tuple[tuple[str, str], ...]


def reservations_use(manifests: Manifests, made: Plan) -> ReservationsUse:
    """What `made` does with the reservations of `manifests` (`plan`'s RESERVATIONS table):
    each EC2NodeClass's `capacityReservationSelectorTerms` select among them as Karpenter's
    provider would at the plan's time (`FakeClock`'s start, which `plan_stack` runs on)."""
    by_claim = {
        c.name: c.launch.reservation_id
        for c in made.node_claims
        if c.launch is not None and c.launch.reservation_id
    }
    selected: dict[str, list[str]] = {}
    first: dict[str, ReservationUse] = {}
    termed = [nc for nc in manifests.nodeclasses if nc.spec.capacity_reservation_selector_terms]
    for nc in termed:
        terms = nc.spec.capacity_reservation_selector_terms or []
        for r in select(terms, manifests.reservations, EPOCH):
            selected.setdefault(r.id, []).append(nc.name)
            if r.id not in first:
                first[r.id] = ReservationUse(
                    r.id,
                    r.instance_type,
                    r.zone,
                    r.reservation_type,
                    r.interruptible,
                    r.available_instance_count,
                    tuple(sorted(n for n, rid in by_claim.items() if rid == r.id)),
                    (),
                )
    uses = tuple(
        ReservationUse(
            u.id,
            u.instance_type,
            u.zone,
            u.reservation_type,
            u.interruptible,
            u.available,
            u.node_claims,
            tuple(selected[u.id]),
        )
        for u in sorted(first.values(), key=lambda u: u.id)
    )
    unselected = tuple(
        (item.capacity_reservation_id, _unselected_why(item, [nc.name for nc in termed]))
        for item in manifests.reservations.capacity_reservations
        if item.capacity_reservation_id not in first
    )
    return ReservationsUse(uses, unselected)


def _unselected_why(item: CapacityReservationItem, termed: Sequence[str]) -> str:
    """Why no EC2NodeClass selects `item`: Karpenter lists `active` reservations only, drops
    one at or past its end, and otherwise only what some class's terms match."""
    state = state_at(item, EPOCH)
    if state == "scheduled" and item.start_date is not None:
        start = format_rfc3339(item.start_date)
        return f"not started: it starts at {start} (Karpenter lists active ones)"
    if item.end_date is not None and item.end_date <= EPOCH:
        return f"ended at {format_rfc3339(item.end_date)}"
    if state != "active":
        return f"state {state} (Karpenter selects active reservations only)"
    if not termed:
        return "no EC2NodeClass has capacityReservationSelectorTerms"
    return (
        "matched by no capacityReservationSelectorTerms "
        f"(of EC2NodeClass {', '.join(termed)}: ids, tags and owner)"
    )


def reservation_causes(manifests: Manifests, made: Plan, pod_key: str) -> list[tuple[str, str]]:
    """`plan --explain POD --reservations`: per reservation of the file that the pod does not
    get, why, NodePool by NodePool (id, words): not selected by the pool's EC2NodeClass (or by
    any: not started, ended, not active, no term matches), `reserved` not allowed, its instance
    type or zone excluded by the pool or the pod, the pod not tolerating the pool's taints, a
    Capacity Block in its last 40 minutes (`expiring`), or full (none free, or all held by the
    plan's other NodeClaims). A reservation the pod's NodeClaim launched into is said so."""
    pod = made.pods.get(pod_key)
    if pod is None or not manifests.reservations.capacity_reservations:
        return []
    use = reservations_use(manifests, made)
    uses = {u.id: u for u in use.uses}
    unselected = dict(use.unselected)
    pod_reqs = pod_requirements(pod, strict=True)
    where = made.where(pod_key)
    # The NodePools the pod could get a node from: their requirements meet the pod's and the
    # pod tolerates their taints (what the scheduler checks before offerings).
    pools = [
        np
        for np in manifests.nodepools
        if (t := NodeClaimTemplate.from_nodepool(np)).requirements.intersects(pod_reqs) is None
        and untolerated(t.taints, pod.spec.tolerations) is None
    ]
    selected: dict[str, dict[str, CapacityReservation]] = {}
    for nc in manifests.nodeclasses:
        name = nc.name
        terms = nc.spec.capacity_reservation_selector_terms or []
        selected[name] = {r.id: r for r in select(terms, manifests.reservations, EPOCH)}
    out: list[tuple[str, str]] = []
    for item in manifests.reservations.capacity_reservations:
        rid = item.capacity_reservation_id
        u = uses.get(rid)
        if u is not None and where is not None and where in u.node_claims:
            out.append((rid, f"the pod's NodeClaim {where} launches into it"))
            continue
        if rid in unselected:
            out.append((rid, unselected[rid]))
            continue
        pod_cause = _requirements_exclude(pod_reqs, item.instance_type, item.availability_zone)
        if pod_cause is not None:
            out.append((rid, f"the pod's requirements exclude {pod_cause}"))
            continue
        why = [_pool_cause(np, selected.get(_class(np), {}), rid) for np in pools]
        if any(w == "" for w in why) and u is not None:
            said = [_full(u, where)]
        else:
            said = [w for w in why if w] or [
                "no NodePool the pod can use (its requirements and tolerations) selects it"
            ]
        out.append((rid, "; ".join(said) or "usable by the pod"))
    return out


def _class(np: NodePool) -> str:
    return np.spec.template.spec.node_class_ref.name


def _pool_cause(np: NodePool, selected: Mapping[str, CapacityReservation], rid: str) -> str:
    """Why NodePool `np` cannot give the pod reservation `rid` ("" when it can)."""
    name = _class(np)
    r = selected.get(rid)
    if r is None:
        return f"NodePool {np.name}: not selected by its EC2NodeClass {name}"
    template = NodeClaimTemplate.from_nodepool(np)
    reqs = template.requirements
    ct = reqs.get(CAPACITY_TYPE)
    if ct is not None and not ct.has("reserved"):
        return f"NodePool {np.name} does not allow capacity type reserved"
    excluded = _requirements_exclude(reqs, r.instance_type, r.zone)
    if excluded is not None:
        return f"NodePool {np.name} excludes {excluded}"
    if CapacityReservationStatus.of(r, EPOCH).state == "expiring":
        return "expiring: a Capacity Block in its last 40 minutes is not offered"
    return ""


def _requirements_exclude(reqs: Requirements, instance_type: str, zone: str) -> str | None:
    for key, value, what in ((INSTANCE_TYPE, instance_type, "instance type"), (ZONE, zone, "zone")):
        req = reqs.get(key)
        if req is not None and not req.has(value):
            return f"{what} {value}"
    return None


def _full(u: ReservationUse, where: str | None) -> str:
    if u.available == 0:
        return "full: no instance free"
    if u.used >= u.available:
        return f"full: all {u.available} held by NodeClaim(s) {', '.join(u.node_claims)}"
    on = f" (the pod went to {where})" if where else ""
    return f"usable by the pod: {u.available - u.used} of {u.available} left{on}"
