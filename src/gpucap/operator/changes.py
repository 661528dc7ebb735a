"""`plan --optimal`'s "what to change": one-line edits that let Karpenter itself launch a
cheaper fleet, each re-planned with Karpenter's algorithm (`operator/plan.plan` on the edited
manifests) and kept only when that plan costs less and places no fewer pods.

The candidates come from the gap between Karpenter's fleet and the optimum
(`controllers/provisioning/optimal`): per NodePool with nodes in either fleet, narrow
`karpenter.k8s.aws/instance-gpu-count`, `karpenter.k8s.aws/instance-family` or
`node.kubernetes.io/instance-type` to what the optimum launches there (Karpenter packs pods
created together onto the cheapest type that holds them all, which is often one large type);
allow `spot` when the pool excludes it; double the limits of a pool with limits that has nodes
in either fleet or left pods pending; and for a Deployment or StatefulSet whose pods Karpenter
put together where the optimum spreads them, a hostname topology spread (maxSkew 1). Called by
`gpucap plan --optimal` and the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from gpucap.apis.core import TopologySpreadConstraint
from gpucap.apis.labels import CAPACITY_TYPE, HOSTNAME, INSTANCE_FAMILY, INSTANCE_GPU_COUNT
from gpucap.apis.labels import INSTANCE_TYPE as INSTANCE_TYPE_LABEL
from gpucap.apis.meta import LabelSelector
from gpucap.apis.nodepool import NodePool, NodeSelectorRequirementWithMinValues
from gpucap.apis.quantity import Quantity
from gpucap.apis.serde import Manifest, Manifests
from gpucap.apis.workloads import Deployment, StatefulSet
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.controllers.provisioning.loop import Plan
from gpucap.controllers.provisioning.optimal import (
    DEFAULT_TIME_LIMIT,
    FleetNode,
    OptimalFleet,
    optimise,
)
from gpucap.operator.plan import DEFAULT_KUBERNETES_VERSION
from gpucap.operator.plan import plan as make_plan

__all__ = ["Change", "OptimalReport", "karpenter_cost", "optimal_report", "suggest"]

_EPS = 1e-6
# At most this many candidates are re-planned (each is a whole plan).
_MOST_CANDIDATES = 24


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One edit: `object` (`NodePool/gpu`, `Deployment/default/vllm`), the `field` it sets and
    its new `value` (as YAML would hold it), in words (`what`), and Karpenter's plan with it:
    `cost` against `before` ($/hour)."""

    object: str
    field: str
    value: Any
    what: str
    before: float
    cost: float
    # The edit itself: the manifests with this change (what the re-plan planned).
    apply: Callable[[Manifests], Manifests] = dataclasses.field(
        default=lambda m: m, repr=False, compare=False
    )

    @property
    def saving(self) -> float:
        return self.before - self.cost

    @property
    def percent(self) -> float:
        return 100.0 * self.saving / self.before if self.before > _EPS else 0.0

    def line(self) -> str:
        return (
            f"{self.what} → Karpenter's plan ${self.cost:.2f}/h instead of "
            f"${self.before:.2f}/h, \N{MINUS SIGN}{self.percent:.0f} %"
        )


@dataclasses.dataclass(slots=True)
class OptimalReport:
    """`plan --optimal`: the fleet comparison and the changes that save."""

    fleet: OptimalFleet
    changes: list[Change]


def karpenter_cost(made: Plan) -> float:
    """What Karpenter's plan launches on dynamic NodePools ($/hour)."""
    return round(
        sum(c.launch.price for c in made.node_claims if not c.static and c.launch is not None), 6
    )


def _placed(made: Plan) -> int:
    return sum(len(c.pods) for c in made.node_claims if c.launch is not None) + sum(
        len(v) for v in made.existing.values()
    )


def optimal_report(
    manifests: Manifests,
    catalog: Catalog,
    made: Plan,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_passes: int | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
    changes: bool = True,
) -> OptimalReport:
    """The optimum of `made` and, with `changes`, the edits whose re-plan saves."""
    fleet = optimise(made, time_limit)
    found = (
        suggest(
            manifests,
            catalog,
            made,
            fleet,
            max_passes=max_passes if max_passes is not None else max(made.passes, 1),
            kubernetes_version=kubernetes_version,
        )
        if changes
        else []
    )
    return OptimalReport(fleet, found)


def suggest(
    manifests: Manifests,
    catalog: Catalog,
    made: Plan,
    fleet: OptimalFleet,
    *,
    max_passes: int,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> list[Change]:
    """The candidates (module docstring) whose re-plan costs less and places as many pods,
    the biggest saving first."""
    before = karpenter_cost(made)
    placed = _placed(made)
    out: list[Change] = []
    seen: set[tuple[str, str, str]] = set()
    for obj, field, value, what, edit in _candidates(manifests, made, fleet)[:_MOST_CANDIDATES]:
        key = (obj, field, repr(value))
        if key in seen:
            continue
        seen.add(key)
        edited = edit(manifests)
        replanned = make_plan(
            edited, catalog, max_passes=max_passes, kubernetes_version=kubernetes_version
        )
        cost = karpenter_cost(replanned)
        if (
            cost < before - _EPS
            and _placed(replanned) >= placed
            and not (len(replanned.pod_errors) > len(made.pod_errors))
        ):
            out.append(Change(obj, field, value, what, before, cost, edit))
    out.sort(key=lambda c: (c.cost, c.object, c.field))
    return out


_Edit = Callable[[Manifests], Manifests]
_Candidate = tuple[str, str, Any, str, _Edit]


def _candidates(manifests: Manifests, made: Plan, fleet: OptimalFleet) -> list[_Candidate]:
    out: list[_Candidate] = []
    optimum = fleet.nodes if fleet.source == "optimum" else []
    pools = made.first_pass.pools if made.first_pass is not None else ()
    types = {it.name: it for p in pools for it in p.instance_types}
    for pool in (p for p in manifests.nodepools if p.spec.replicas is None):
        name = pool.name
        mine = [n for n in optimum if n.nodepool == name]
        karp = [n for n in fleet.karpenter if n.nodepool == name]
        if mine and {n.instance_type for n in mine} != {n.instance_type for n in karp}:
            gpus = sorted({_label(types, n, INSTANCE_GPU_COUNT) for n in mine} - {""}, key=int)
            if gpus:
                out.append(_requirement(name, INSTANCE_GPU_COUNT, gpus, "instance-gpu-count"))
            families = sorted({_label(types, n, INSTANCE_FAMILY) for n in mine} - {""})
            if families:
                out.append(_requirement(name, INSTANCE_FAMILY, families, "instance-family"))
            out.append(
                _requirement(
                    name,
                    INSTANCE_TYPE_LABEL,
                    sorted({n.instance_type for n in mine}),
                    "instance-type",
                )
            )
        ct = _requirement_values(pool, CAPACITY_TYPE)
        if karp and ct is not None and "spot" not in ct:
            out.append(_requirement(name, CAPACITY_TYPE, sorted({*ct, "spot"}), "capacity-type"))
        # Limits that held pods pending, or sent them to another (dearer) NodePool.
        if pool.spec.limits and (karp or mine or name in made.pass_results[-1].limited_pools()):
            doubled = {k: Quantity(v.nanos * 2) for k, v in pool.spec.limits.items()}
            shown = {k: str(v) for k, v in doubled.items()}
            out.append(
                (
                    f"NodePool/{name}",
                    "spec.limits",
                    shown,
                    f"NodePool {name}: raise limits to "
                    + ", ".join(f"{k}={v}" for k, v in shown.items()),
                    _set_limits(name, doubled),
                )
            )
    out.extend(_spreads(manifests, fleet))
    return out


def _label(types: dict[str, Any], node: FleetNode, key: str) -> str:
    it = types.get(node.instance_type)
    if it is None:
        return ""
    req = it.requirements.get(key)
    return min(req.values) if req is not None and req.operator == "In" and req.values else ""


def _requirement_values(pool: NodePool, key: str) -> list[str] | None:
    for r in pool.spec.template.spec.requirements:
        if r.key == key and r.operator == "In":
            return list(r.values)
    return None


def _requirement(name: str, key: str, values: list[str], short: str) -> _Candidate:
    verb = "allow" if key == CAPACITY_TYPE else "require"
    value = {"key": key, "operator": "In", "values": values}
    what = f"NodePool {name}: {verb} {short} {', '.join(values)}"

    def edit(m: Manifests) -> Manifests:
        def change(pool: NodePool) -> NodePool:
            spec = pool.spec.template.spec
            kept = [r for r in spec.requirements if r.key != key]
            new = NodeSelectorRequirementWithMinValues(key=key, operator="In", values=values)
            return _with_requirements(pool, [*kept, new])

        return _replace_nodepool(m, name, change)

    return (f"NodePool/{name}", "spec.template.spec.requirements", value, what, edit)


def _with_requirements(
    pool: NodePool, reqs: Sequence[NodeSelectorRequirementWithMinValues]
) -> NodePool:
    spec = pool.spec.template.spec.model_copy(update={"requirements": list(reqs)})
    template = pool.spec.template.model_copy(update={"spec": spec})
    return pool.model_copy(update={"spec": pool.spec.model_copy(update={"template": template})})


def _set_limits(name: str, limits: dict[str, Quantity]) -> _Edit:
    def edit(m: Manifests) -> Manifests:
        return _replace_nodepool(
            m,
            name,
            lambda p: p.model_copy(
                update={"spec": p.spec.model_copy(update={"limits": dict(limits)})}
            ),
        )

    return edit


def _replace_nodepool(m: Manifests, name: str, change: Callable[[NodePool], NodePool]) -> Manifests:
    items = tuple(
        dataclasses.replace(i, obj=change(i.obj))
        if isinstance(i.obj, NodePool) and i.obj.name == name
        else i
        for i in m.items
    )
    return dataclasses.replace(m, items=items)


def _spreads(manifests: Manifests, fleet: OptimalFleet) -> list[_Candidate]:
    """A hostname spread for each Deployment or StatefulSet whose pods share a node in
    Karpenter's fleet but not in the optimum's."""
    if fleet.source != "optimum":
        return []
    out: list[_Candidate] = []
    for item in manifests.items:
        w = item.obj
        if not isinstance(w, (Deployment, StatefulSet)):
            continue
        spec = w.spec.template.spec
        if any(t.topology_key == HOSTNAME for t in spec.topology_spread_constraints):
            continue
        ns = w.metadata.namespace or "default"
        prefix = f"{ns}/{w.metadata.name}-"
        if not (_shares(fleet.karpenter, prefix) and not _shares(fleet.nodes, prefix)):
            continue
        labels = dict(w.spec.template.metadata.labels)
        tsc = TopologySpreadConstraint(
            max_skew=1,
            topology_key=HOSTNAME,
            when_unsatisfiable="DoNotSchedule",
            label_selector=LabelSelector(match_labels=labels),
        )
        value = {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
        out.append(
            (
                f"{w.kind}/{ns}/{w.metadata.name}",
                "spec.template.spec.topologySpreadConstraints",
                [value],
                f"{w.kind} {w.metadata.name}: spread its pods one per node (hostname, maxSkew 1)",
                _spread_edit(item, tsc),
            )
        )
    return out


def _shares(nodes: Sequence[FleetNode], prefix: str) -> bool:
    return any(sum(1 for p in n.pods if p.startswith(prefix)) > 1 for n in nodes)


def _spread_edit(item: Manifest, tsc: TopologySpreadConstraint) -> _Edit:
    w = item.obj
    assert isinstance(w, (Deployment, StatefulSet))

    def edit(m: Manifests) -> Manifests:
        pod_spec = w.spec.template.spec
        new_spec = pod_spec.model_copy(
            update={"topology_spread_constraints": [*pod_spec.topology_spread_constraints, tsc]}
        )
        template = w.spec.template.model_copy(update={"spec": new_spec})
        new = w.model_copy(update={"spec": w.spec.model_copy(update={"template": template})})
        items = tuple(dataclasses.replace(i, obj=new) if i is item else i for i in m.items)
        return dataclasses.replace(m, items=items)

    return edit
