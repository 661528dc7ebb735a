"""Pure formatting for the CLI: objects and issues in, text out (no printing, no I/O).

`describe` gives the one-line summary `gpucap validate` prints per object; `format_issue` the
one-line error/warning; `format_list` the defaulted objects as a re-loadable `kind: List`.
Called by the command modules (`cli/validate.py`, `cli/plan.py`, `cli/lint.py`, ...).

Text for a terminal is returned as a list of lines, never as one string with newlines: the CLI's
`Terminal` (`runtime/terminal.py`) escapes each line whole, so a user string holding a newline
or an escape sequence is shown escaped inside its line instead of starting one. Nothing here
escapes (a string escaped twice would show its backslashes doubled); tables pad each cell to the
width it will have once escaped.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from gpucap.apis.core import ConfigMap, Node, Pod, PodDisruptionBudget, PodSpec, Toleration
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.expansion import PodCreator, expand, sample_pods
from gpucap.apis.gpu import GPU_RESOURCES
from gpucap.apis.gpuoperator import ClusterPolicy, device_plugin_configs
from gpucap.apis.horizontalpodautoscaler import HorizontalPodAutoscaler, describe_hpa
from gpucap.apis.jobset import JobSet
from gpucap.apis.kuberay import RayCluster, RayJob, RayService
from gpucap.apis.labels import NODEPOOL
from gpucap.apis.leaderworkerset import LeaderWorkerSet
from gpucap.apis.meta import dump
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodeClaim, NodePool
from gpucap.apis.quantity import base_units, format_base_units, format_resource_value
from gpucap.apis.scenario import Scenario
from gpucap.apis.serde import Issue, KubeObject, Manifest, Manifests
from gpucap.apis.workloads import (
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    StatefulSet,
    Workload,
    expand_workload,
    replica_count,
)
from gpucap.cli.table import format_table
from gpucap.runtime.collector import collector_paused
from gpucap.scheduling.resources import pod_requests

if TYPE_CHECKING:  # only in annotations: `validate` does not load the scheduler (start-up)
    from gpucap.controllers.provisioning import Plan, PlannedNodeClaim
    from gpucap.operator.plan import ReservationsUse
    from gpucap.scheduling.explanation import PoolExplanation

__all__ = [
    "describe",
    "format_explanation",
    "format_issue",
    "format_list",
    "format_plan",
    "format_resources",
    "format_table",
    "limits_held",
    "plan_document",
    "plan_lines",
    "write_plan",
]


def format_resources(resources: Mapping[str, int]) -> str:
    """`cpu=3 memory=12Gi nvidia.com/gpu=1` (sorted, canonical quantities)."""
    return " ".join(f"{k}={v}" for k, v in format_base_units(resources).items()) or "nothing"


def format_issue(issue: Issue) -> str:
    return f"{issue.severity}: {issue}"


def format_list(objects: Iterable[Manifest], output: str) -> str:
    doc = {"apiVersion": "v1", "kind": "List", "items": [dump(m.obj) for m in objects]}
    if output == "yaml":
        return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
    return json.dumps(doc, indent=2) + "\n"


def _tolerations(tolerations: list[Toleration]) -> str:
    parts = []
    for t in tolerations:
        key = t.key or "*"
        if t.operator == "Equal":
            key += f"={t.value or ''}"
        parts.append(f"{key}:{t.effect or '*'}")
    return ", ".join(parts)


def _pod_spec_summary(spec: PodSpec) -> str:
    text = f"requests {format_resources(pod_requests(spec))}"
    if spec.tolerations:
        text += f"; tolerates {_tolerations(spec.tolerations)}"
    if spec.node_selector:
        text += "; nodeSelector " + ",".join(f"{k}={v}" for k, v in spec.node_selector.items())
    return text


def _short_key(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def _describe_nodepool(obj: NodePool) -> str:
    s = obj.spec
    reqs = " ".join(
        f"{_short_key(r.key)} {r.operator} {','.join(r.values)}".rstrip()
        for r in s.template.spec.requirements
    )
    taints = ", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in s.template.spec.taints)
    limits = " ".join(f"{k}={v}" for k, v in sorted(s.limits.items())) if s.limits else "none"
    budgets = ", ".join(
        f"nodes={b.nodes}" + (f" @ {b.schedule} for {b.duration}" if b.schedule else "")
        for b in s.disruption.budgets
    )
    weight = f"; weight {s.weight}" if s.weight is not None else ""
    return (
        f"requirements [{reqs}]; taints {taints or 'none'}; limits {limits}; "
        f"{s.disruption.consolidation_policy} after {s.disruption.consolidate_after} "
        f"(budgets {budgets}); expireAfter {s.template.spec.expire_after}{weight}"
    )


def _describe_nodeclass(obj: EC2NodeClass) -> str:
    s = obj.spec
    term = obj.alias
    ami = f"alias {term.alias}" if term else f"{len(s.ami_selector_terms)} AMI selector terms"
    who = f"role {s.role}" if s.role is not None else f"instanceProfile {s.instance_profile}"
    root = "default root volume (20Gi)"
    for b in s.block_device_mappings or []:
        if b.ebs is not None and (b.root_volume or b.device_name in ("/dev/xvda", "/dev/xvdb")):
            size = b.ebs.volume_size or "from snapshot"
            root = f"root volume {size} {b.ebs.volume_type or ''}".rstrip()
            break
    return f"{ami} (family {obj.ami_family}); {who}; {root}"


def _describe_workload(obj: Workload) -> str:
    n = replica_count(obj)
    names = [p.metadata.name for p in expand_workload(obj)]
    shown = ", ".join(names[:3]) + (", ..." if n > 3 else "")
    return (
        f"{n} pod{'s' if n != 1 else ''}{f' ({shown})' if n else ''}; "
        f"per pod {_pod_spec_summary(obj.spec.template.spec)}"
    )


def _describe_operator(obj: PodCreator) -> str:
    """An operator kind: its pods in all, then per pod template how many and what each asks."""
    pods = expand(obj)
    names = [p.metadata.name for p in pods]
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    parts = [f"{len(names)} pod{'s' if len(names) != 1 else ''}" + (f" ({shown})" if names else "")]
    for group, sample in sample_pods(obj):
        parts.append(f"{group.count} like {sample.metadata.name}: {_pod_spec_summary(sample.spec)}")
    return "; ".join(parts)


def _describe_configmap(obj: ConfigMap) -> str:
    configs = device_plugin_configs(obj)
    if not configs:
        return f"{len(obj.data)} keys (no device-plugin config)"
    parts = []
    for key, cfg in configs.items():
        replicas = cfg.replicas_for()
        sharing = f"time-sliced x{replicas}" if replicas > 1 else "not shared"
        parts.append(f"{key}: nvidia.com/gpu {sharing}, MIG {cfg.flags.mig_strategy}")
    return "device-plugin config " + "; ".join(parts)


def _describe_cluster_policy(obj: ClusterPolicy) -> str:
    s = obj.spec
    dp = "device plugin " + ("enabled" if s.device_plugin.enabled else "DISABLED")
    cfg = s.device_plugin.config
    if cfg is not None:
        dp += f" (config {cfg.name}, default {cfg.default})"
    return (
        f"{dp}; driver {'on' if s.driver.enabled else 'off'}; "
        f"toolkit {'on' if s.toolkit.enabled else 'off'}; MIG {s.mig.strategy}"
    )


def _describe_pdb(obj: PodDisruptionBudget) -> str:
    if obj.spec.min_available is not None:
        return f"minAvailable {obj.spec.min_available}"
    return f"maxUnavailable {obj.spec.max_unavailable}"


def _describe_pod(obj: Pod) -> str:
    where = f"bound to {obj.spec.node_name}" if obj.spec.node_name else "pending"
    return f"{where}; {_pod_spec_summary(obj.spec)}"


def _describe_node(obj: Node) -> str:
    capacity = format_resources(base_units(obj.status.capacity))
    return f"capacity {capacity}; {len(obj.spec.taints)} taints"


def _describe_nodeclaim(obj: NodeClaim) -> str:
    node = obj.status.node_name or "not registered"
    return f"{len(obj.spec.requirements)} requirements; node {node}"


def _describe_overlay(obj: NodeOverlay) -> str:
    price = obj.spec.price or obj.spec.price_adjustment or "unchanged"
    return f"{len(obj.spec.requirements)} requirements; price {price}"


def _describe_scenario(obj: Scenario) -> str:
    return f"{len(obj.spec.events)} events over {obj.spec.duration}; seed {obj.spec.seed}"


_DESCRIBE: dict[type[Any], Callable[[Any], str]] = {
    NodePool: _describe_nodepool,
    EC2NodeClass: _describe_nodeclass,
    Deployment: _describe_workload,
    StatefulSet: _describe_workload,
    ReplicaSet: _describe_workload,
    Job: _describe_workload,
    RayCluster: _describe_operator,
    RayService: _describe_operator,
    RayJob: _describe_operator,
    LeaderWorkerSet: _describe_operator,
    JobSet: _describe_operator,
    DaemonSet: lambda obj: f"per node {_pod_spec_summary(obj.spec.template.spec)}",
    Pod: _describe_pod,
    Node: _describe_node,
    NodeClaim: _describe_nodeclaim,
    ConfigMap: _describe_configmap,
    ClusterPolicy: _describe_cluster_policy,
    HorizontalPodAutoscaler: describe_hpa,
    PodDisruptionBudget: _describe_pdb,
    NodeOverlay: _describe_overlay,
    Scenario: _describe_scenario,
}


def describe(obj: KubeObject) -> str:
    """A one-line summary of what gpucap understood from an object (after defaults)."""
    return _DESCRIBE[type(obj)](obj)


# ---- plan ---------------------------------------------------------------------------------------
def _gpus(plan: Plan) -> dict[str, int]:
    total: dict[str, int] = {}
    for claim in plan.node_claims:
        chosen = claim.launched_type
        if chosen is None:
            continue
        for resource in GPU_RESOURCES:
            n = chosen.capacity.get(resource, 0)
            if n:
                total[resource] = total.get(resource, 0) + n
    return dict(sorted(total.items()))


def _claim_entry(claim: PlannedNodeClaim) -> dict[str, Any]:
    launch = claim.launch
    entry: dict[str, Any] = {
        "name": claim.name,
        "nodePool": claim.nodepool,
        "pass": claim.pass_number,
        "static": claim.static,
        "instanceTypeOptions": [it.name for it in claim.instance_types],
        "launch": None,
        "pods": [p.key for p in claim.pods],
        "requests": format_base_units(claim.requests),
        "labels": claim.node_labels(),
        "taints": [
            {k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v}
            for t in claim.taints
        ],
    }
    if launch is not None:
        entry["launch"] = {
            "instanceType": launch.instance_type,
            "zone": launch.zone,
            "capacityType": launch.capacity_type,
            "pricePerHour": launch.price,
        }
        # Only for a launch into a reservation: plans without one keep their document.
        if launch.reservation_id:
            entry["launch"]["reservationId"] = launch.reservation_id
    else:
        entry["launchError"] = claim.launch_error or ""
    return entry


def plan_document(plan: Plan, reservations: ReservationsUse | None = None) -> dict[str, Any]:
    """The `Plan` JSON of contract.md (stable keys; `pass` and `static` per NodeClaim and
    `passes` in the summary added for the provisioning loop; `notPlanned` and its count in the
    summary when some pod is left to EKS Auto Mode or the KWOK provider; `reservations` and a
    launch's `reservationId` with `--reservations`)."""
    claims = [_claim_entry(c) for c in plan.node_claims]
    existing = [{"name": name, "pods": pods} for name, pods in sorted(plan.existing.items())]
    unschedulable = [
        {"pod": key, "reason": reason} for key, reason in sorted(plan.pod_errors.items())
    ]
    scheduled = sum(len(c.pods) for c in plan.node_claims) + sum(len(e["pods"]) for e in existing)
    price = round(sum(launch.price for launch in plan.launches.values()), 6)
    doc: dict[str, Any] = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Plan",
        "nodeClaims": claims,
        "existingNodes": existing,
        "unschedulable": unschedulable,
    }
    # Only when some pod is another Karpenter's (EKS Auto Mode, KWOK): plans without such pods
    # keep the document they always had.
    if plan.not_planned:
        doc["notPlanned"] = [
            {
                "pod": key,
                "servedBy": np.served_by,
                "nodePools": list(np.nodepools),
                "reason": np.reason,
            }
            for key, np in sorted(plan.not_planned.items())
        ]
    if reservations is not None:
        doc["reservations"] = _reservations_section(reservations)
        doc["reservationsNotSelected"] = [
            {"id": rid, "reason": why} for rid, why in reservations.unselected
        ]
    doc["notes"] = list(plan.notes)
    doc["summary"] = {
        "nodeClaims": len(claims),
        "pods": scheduled,
        "unschedulable": len(unschedulable),
        "pricePerHour": price,
        "gpus": _gpus(plan),
        "passes": plan.passes,
    }
    if plan.not_planned:
        doc["summary"]["notPlanned"] = len(plan.not_planned)
    return doc


def _reservations_section(use: ReservationsUse) -> list[dict[str, Any]]:
    """`reservations` of the plan document: each selected reservation (id order) with its free
    count when the plan starts and the NodeClaims launched into it."""
    return [
        {
            "id": u.id,
            "instanceType": u.instance_type,
            "zone": u.zone,
            "type": u.reservation_type,
            "interruptible": u.interruptible,
            "available": u.available,
            "used": u.used,
            "nodeClaims": list(u.node_claims),
            "nodeClasses": list(u.nodeclasses),
        }
        for u in use.uses
    ]


def format_plan(plan: Plan, output: str) -> str:
    """The plan as JSON or YAML (`output`), for machines; `plan_lines` is the table."""
    out = io.StringIO()
    write_plan(plan, output, out)
    return out.getvalue()


def write_plan(
    plan: Plan, output: str, stream: TextIO, reservations: ReservationsUse | None = None
) -> None:
    """`format_plan` written to `stream` piece by piece (`gpucap plan -o json|yaml`): the same
    text, without holding it whole, nor the JSON encoder's millions of pieces, at once."""
    # The document is a tree of fresh dicts and lists with no cycles, growing with the pods:
    # collector passes over it while it is built made JSON cost more per pod at 50,000 pods.
    with collector_paused():
        doc = plan_document(plan, reservations)
        if output != "json":
            yaml.safe_dump(doc, stream, sort_keys=False, default_flow_style=False)
            return
        write_json(doc, stream)
        stream.write("\n")


_PIECES = 8192


def write_json(value: Any, stream: TextIO) -> None:
    """`json.dumps(value, indent=2)` written to `stream` a few thousand pieces at a time.

    The json module encodes in C only without indentation; with it, its Python encoder yields
    a piece per item, and a plan's instance-type options (hundreds per NodeClaim) and pod names
    are most of the document. This writes what that encoder writes, the same way (`_JsonText`),
    but a list of strings as one piece (its items through the json module's C string encoder)."""
    text = _JsonText(stream)
    text.value(value, 0)
    text.flush()


# json's float text: `float.__repr__` but for the three values JSON has no number for.
_NAN, _INF = "NaN", "Infinity"


class _JsonText:
    """The text `json.JSONEncoder(indent=2)` makes (ensure_ascii, allow_nan, insertion order),
    appended piece by piece and written to the stream every _PIECES pieces."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pieces: list[str] = []
        self.encode: Callable[[str], str] = json.encoder.encode_basestring_ascii

    def flush(self) -> None:
        self.stream.write("".join(self.pieces))
        self.pieces.clear()

    def scalar(self, value: Any) -> str | None:
        """A scalar's text as json's encoder writes it, or None for a list, dict or object."""
        if isinstance(value, str):
            return self.encode(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            if value != value:  # noqa: PLR0124 - NaN is the float not equal to itself
                return _NAN
            if value in (float("inf"), float("-inf")):
                return _INF if value > 0 else "-" + _INF
            return float.__repr__(value)
        return None

    def value(self, value: Any, level: int) -> None:
        pieces = self.pieces
        text = self.scalar(value)
        if text is not None:
            pieces.append(text)
        elif isinstance(value, (list, tuple)):
            self.array(value, level)
        elif isinstance(value, dict):
            self.object(value, level)
        else:
            raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")
        if len(pieces) >= _PIECES:
            self.flush()

    def array(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        if not items:
            self.pieces.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        close = "\n" + "  " * level + "]"
        if all(type(item) is str for item in items):
            self.pieces.append("[" + inner + ("," + inner).join(map(self.encode, items)) + close)
            return
        self.pieces.append("[" + inner)
        for i, item in enumerate(items):
            if i:
                self.pieces.append("," + inner)
            self.value(item, level + 1)
        self.pieces.append(close)

    def object(self, mapping: dict[Any, Any], level: int) -> None:
        if not mapping:
            self.pieces.append("{}")
            return
        inner = "\n" + "  " * (level + 1)
        close = "\n" + "  " * level + "}"
        encode = self.encode
        if all(type(k) is str and type(v) is str for k, v in mapping.items()):
            pairs = [encode(k) + ": " + encode(v) for k, v in mapping.items()]  # labels
            self.pieces.append("{" + inner + ("," + inner).join(pairs) + close)
            return
        self.pieces.append("{" + inner)
        first = True
        for key, item in mapping.items():
            if isinstance(key, str):
                name = key
            elif isinstance(key, (int, float)) or key is None:  # bool is an int
                name = self.scalar(key) or ""
            else:
                raise TypeError(
                    f"keys must be str, int, float, bool or None, not {key.__class__.__name__}"
                )
            if first:
                first = False
            else:
                self.pieces.append("," + inner)
            self.pieces.append(encode(name) + ": ")
            self.value(item, level + 1)
        self.pieces.append(close)


def plan_lines(plan: Plan, reservations: ReservationsUse | None = None) -> list[str]:
    """The plan for a terminal: new NodeClaims, existing nodes used, the reservations (with
    `--reservations`), pending pods, summary."""
    return _plan_table(plan_document(plan, reservations))


def _plan_table(doc: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    claims = doc["nodeClaims"]
    if claims:
        rows = [
            [
                "NODECLAIM",
                "NODEPOOL",
                "PASS",
                "INSTANCE TYPE",
                "ZONE",
                "CAPACITY",
                "$/HOUR",
                "OPTIONS",
                "PODS",
            ]
        ]
        for c in claims:
            launch = c["launch"] or {}
            rows.append(
                [
                    c["name"],
                    c["nodePool"],
                    "static" if c["static"] else str(c["pass"]),
                    launch.get("instanceType", "(launch fails)"),
                    launch.get("zone", "-"),
                    launch.get("capacityType", "-"),
                    _price_cell(launch),
                    str(len(c["instanceTypeOptions"])),
                    ", ".join(c["pods"]),
                ]
            )
        lines += format_table(rows)
    else:
        lines.append("No new nodes.")
    for c in claims:
        if c["launch"] is None:
            lines.append(f"{c['name']}: launch would fail: {c.get('launchError', '')}")
    if "reservations" in doc:
        lines += _reservations_table(doc)
    if doc["existingNodes"]:
        lines.append("")
        lines += format_table(
            [["EXISTING NODE", "PODS"]]
            + [[e["name"], ", ".join(e["pods"])] for e in doc["existingNodes"]]
        )
    if doc["unschedulable"]:
        lines.append("")
        lines.append("Pending (Karpenter would not launch for these):")
        lines += [f"  {u['pod']}: {u['reason']}" for u in doc["unschedulable"]]
        first = doc["unschedulable"][0]["pod"]
        lines.append(
            f"  (`gpucap plan FILES --explain {first}` shows what ruled each NodePool out)"
        )
    if doc.get("notPlanned"):
        lines.append("")
        lines.append("Not planned (another Karpenter serves these):")
        lines += [f"  {u['pod']}: {u['reason']}" for u in doc["notPlanned"]]
    if doc["notes"]:
        lines.append("")
        lines += [f"note: {n}" for n in doc["notes"]]
    s = doc["summary"]
    last = max((c["pass"] for c in claims), default=0)
    gpus = ", ".join(f"{v} {k}" for k, v in s["gpus"].items())
    lines.append("")
    lines.append(
        f"{s['nodeClaims']} new node(s), ${s['pricePerHour']:.4f}/hour"
        + (f", {gpus}" if gpus else "")
        + f"; {s['pods']} pod(s) scheduled, {s['unschedulable']} pending"
        + (f", {s['notPlanned']} not planned" if s.get("notPlanned") else "")
        + (f" (NodeClaims from {last} passes)" if last > 1 else "")
    )
    return lines


def _price_cell(launch: Mapping[str, Any]) -> str:
    """$/HOUR of a launch: a reserved node says `reserved`, as its cost is the reservation's
    (Karpenter's offering price, on-demand over 10,000,000, only orders it first)."""
    if not launch:
        return "-"
    if launch.get("reservationId"):
        return "reserved"
    return f"{launch['pricePerHour']:.4f}"


def _reservations_table(doc: dict[str, Any]) -> list[str]:
    """RESERVATIONS: per selected reservation, its free count when the plan starts, what the
    plan puts in it and what is left; then how many new nodes went into reservations and where
    the others went, and the file's reservations no EC2NodeClass selects."""
    selected = doc["reservations"]
    lines = [""]
    if selected:
        rows = [["RESERVATION", "INSTANCE TYPE", "ZONE", "KIND", "FREE", "USED", "LEFT"]]
        for r in selected:
            kind = "interruptible" if r["interruptible"] else r["type"]
            left = r["available"] - r["used"]
            rows.append(
                [
                    r["id"],
                    r["instanceType"],
                    r["zone"],
                    kind,
                    str(r["available"]),
                    str(r["used"]),
                    str(left),
                ]
            )
        lines += format_table(rows)
    else:
        lines.append("No reservation is selected by an EC2NodeClass of the input.")
    launched = [c["launch"] for c in doc["nodeClaims"] if c["launch"] is not None]
    if launched:
        reserved = sum(1 for launch in launched if launch.get("reservationId"))
        others: dict[str, int] = {}
        for launch in launched:
            if not launch.get("reservationId"):
                ct = launch["capacityType"]
                others[ct] = others.get(ct, 0) + 1
        rest = "".join(f"; {n} {ct}" for ct, n in sorted(others.items()))
        lines.append(f"{reserved} of {len(launched)} new node(s) in reservations{rest}")
    if any(launch.get("reservationId") for launch in launched):
        lines.append(
            "note: reserved nodes show `reserved` for $/HOUR: the reservation pays for them "
            "(Karpenter prices a reserved offering at on-demand/10,000,000, which orders "
            "reserved before spot and on-demand)"
        )
    lines += [
        f"note: reservation {r['id']} is not selected: {r['reason']}"
        for r in doc["reservationsNotSelected"]
    ]
    return lines


def format_explanation(
    pod_key: str,
    explanations: list[PoolExplanation],
    reason: str | None,
    where: str | None,
    not_planned: str | None = None,
    *,
    held: Mapping[str, str] | None = None,
    reservations: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """`gpucap plan --explain POD`: NodePool by NodePool, what survived each filter (for a pod
    another Karpenter serves, `not_planned` says which and the planned pools follow). `held`:
    per NodePool whose limits held the pod, what they are and who uses them (`limits_held`),
    said instead of a verdict that the pool could take it."""
    if not_planned is not None:
        head = not_planned
    else:
        head = f"scheduled on {where}" if where else f"pending: {reason}"
    lines = [f"pod {pod_key}: {head}"]
    for e in explanations:
        verdict = (held or {}).get(e.nodepool, e.verdict)
        lines.append(f"  NodePool {e.nodepool} (weight {e.weight}): {verdict}")
        for label, count in e.steps:
            lines.append(f"    {count:5d} instance types {label}")
        lines.extend(f"    because {cause}" for cause in e.causes)
    # With --reservations: each reservation of the file, and why the pod does not get it.
    if reservations:
        lines.append("  reservations:")
        lines.extend(f"    {rid}: {why}" for rid, why in reservations)
    return lines


def limits_held(plan: Plan, manifests: Manifests, pod_key: str) -> dict[str, str]:
    """Per NodePool whose limits held pending pod `pod_key` in the plan's last pass: each limit,
    how much of it is in use and by which NodeClaims and nodes (`limit nvidia.com/gpu 8: 8 in
    use by gpu-1..gpu-8`), from what the pass left of the limits (`Results.remaining`)."""
    if not plan.pass_results or plan.where(pod_key) is not None:
        return {}
    last = plan.pass_results[-1]
    error = last.pod_errors.get(pod_key)
    if error is None:
        return {}
    out: dict[str, str] = {}
    pools = {np.name: np for np in manifests.nodepools}
    for name in sorted(error.limited_pools()):
        nodepool, remaining = pools.get(name), last.remaining.get(name)
        if nodepool is None or nodepool.spec.limits is None or remaining is None:
            continue
        users = [c.name for c in plan.node_claims if c.nodepool == name] + [
            n.metadata.name for n in manifests.nodes if n.metadata.labels.get(NODEPOOL) == name
        ]
        by = f" by {_series(users)}" if users else ""
        limits = base_units(nodepool.spec.limits)
        said = [
            f"limit {r} {format_resource_value(r, v)}: "
            f"{format_resource_value(r, v - remaining.get(r, v))} in use"
            for r, v in sorted(limits.items())
        ]
        out[name] = "held by its limits: " + "; ".join(said) + by
    return out


def _series(names: Sequence[str]) -> str:
    """`gpu-1..gpu-6` for a run of one series, else the first three and how many more."""
    parts = [n.rsplit("-", 1) for n in names]
    if len(names) > 2 and all(len(p) == 2 and p[1].isdigit() for p in parts):
        prefixes = {p[0] for p in parts}
        numbers = sorted(int(p[1]) for p in parts)
        if len(prefixes) == 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            prefix = parts[0][0]
            return f"{prefix}-{numbers[0]}..{prefix}-{numbers[-1]}"
    from gpucap.sim.timeline import names_words  # noqa: PLC0415 - `validate` loads this module

    return names_words(names)
