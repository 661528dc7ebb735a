"""GPU sharing rules: time-slicing and MIG against Karpenter's capacity model (landscape.md §3.2).

Karpenter sizes instance types by their *physical* GPUs (`nvidia.com/gpu` from EC2), but once a
node initializes it counts what the node *advertises*, and the NVIDIA device plugin advertises
time-sliced replicas, renamed `<name>.shared` resources or MIG devices. These rules find where the
two disagree.

Which device-plugin config applies to a NodePool's GPU nodes (`applied_config`):
- With a GPU Operator ClusterPolicy in the input (device plugin enabled): the ConfigMap named by
  `spec.devicePlugin.config.name`, key = the pool's template label
  `nvidia.com/device-plugin.config` if set, else `spec.devicePlugin.config.default`. No name, no
  key, or a key the ConfigMap lacks means no config (TS005 reports the last two); a ConfigMap that
  is not in the input cannot be checked (TS005 says so at info level).
- On a Bottlerocket EC2NodeClass (alias `bottlerocket@...`) the NVIDIA variant runs its own
  plugin, configured by the userData's `settings.kubelet-device-plugins.nvidia` table
  (`apis/bottlerocket.py`); that config applies, whatever ConfigMaps the input holds.
- Without a ClusterPolicy (the plain device-plugin DaemonSet or its Helm chart): the device-plugin
  configs in the input are assumed to be the plugin's. The key is the pool's
  `nvidia.com/device-plugin.config` label if one matches, else the only config in the input; with
  several configs and no label gpucap cannot tell which applies and assumes none.

The effective MIG strategy is the ClusterPolicy's `mig.strategy` (the operator passes it to the
plugin, overriding the config file), else the applied config's `flags.migStrategy`. MIG is taken
to be in use on a pool when its template sets `nvidia.com/mig.config` to a profile other than
`all-disabled` (the MIG manager's default), or, without a ClusterPolicy, when the applied config
sets `migStrategy: single` itself; and only on GPUs that support MIG.

NodeOverlays are as `plan` applies them: the pools' instance types come from the operator stack
with the accepted overlays applied (`LintContext.pools`), so a type's `nvidia.com/gpu` is what
Karpenter sizes the node by; the physical count the device plugin multiplies is
`PoolView.physical_gpus` (the AWS provider's count, before the overlays). Which overlay set a
capacity is found among the overlays the stack accepted, in Karpenter's order
(`scheduling/nodeoverlay.py` `capacity_overlay`: the overlay's requirements must be compatible
with the type's requirements plus the pool's name and template labels, and allow one of its
offerings).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpucap.apis.bottlerocket import NVIDIA_SETTINGS
from gpucap.apis.core import ConfigMap, Container, Pod
from gpucap.apis.gpu import MIG_GPUS
from gpucap.apis.gpuoperator import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    ClusterPolicy,
    DevicePluginConfig,
    choose_config,
)
from gpucap.apis.labels import INSTANCE_GPU_MEMORY, INSTANCE_GPU_NAME
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.quantity import Quantity
from gpucap.apis.serde import Manifest
from gpucap.lint.context import GPU_RESOURCE, LintContext, PodRef, PoolView, pool_types
from gpucap.lint.queries import container_resources
from gpucap.lint.registry import Finding, Registry, Severity
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeoverlay import capacity_overlay
from gpucap.scheduling.poddata import pod_requirements

__all__ = [
    "DEVICE_PLUGIN_CONFIG_LABEL",
    "MIG_CONFIG_LABEL",
    "RULES",
    "AppliedConfig",
    "applied_config",
    "operator_policy",
    "overlay_capacity",
]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(\d+)g\.(\d+)gb", re.ASCII)
MIG_PROFILE_LABEL = re.compile(r"^all-(\d+)g\.(\d+)gb$", re.ASCII)


# ---- which config applies where -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AppliedConfig:
    """The device-plugin config a pool's GPU nodes get, where it is written (`manifest` and
    `path`: a ConfigMap's data key, or a Bottlerocket EC2NodeClass's userData) and how gpucap
    chose it."""

    manifest: Manifest
    path: tuple[str | int, ...]
    config: DevicePluginConfig
    chosen_by: str

    @property
    def where(self) -> str:
        name = self.manifest.obj.metadata.name
        if self.manifest.obj.kind == "EC2NodeClass":
            return f"EC2NodeClass {name} userData ({NVIDIA_SETTINGS})"
        return f"ConfigMap {name} key {self.path[-1]!r}"

    @property
    def replicas(self) -> int:
        return self.config.replicas_for(GPU_RESOURCE)

    @property
    def advertised(self) -> str:
        return self.config.advertised_resource(GPU_RESOURCE)

    @property
    def sharing(self) -> str:
        sharing = self.config.sharing
        for name, policy in (
            ("time-slicing", sharing.time_slicing if sharing else None),
            ("MPS", sharing.mps if sharing else None),
        ):
            if policy is not None and any(r.name == GPU_RESOURCE for r in policy.resources):
                return name
        return "sharing"


def operator_policy(ctx: LintContext) -> tuple[Manifest, ClusterPolicy] | None:
    """The GPU Operator ClusterPolicy that runs the device plugin (a cluster has one), with its
    manifest."""
    for m, policy in ctx.cluster_policies:
        if policy.spec.device_plugin.enabled:
            return m, policy
    return None


def applied_config(ctx: LintContext, pool: PoolView) -> AppliedConfig | None:
    """The device-plugin config the pool's GPU nodes get (see the module docstring)."""
    if pool.nodeclass is not None and pool.is_bottlerocket:
        # Bottlerocket's NVIDIA variant runs its own plugin, configured by the userData.
        cfg = ctx.bottlerocket_configs.get(pool.nodeclass.obj.metadata.name)
        if not isinstance(cfg, DevicePluginConfig):
            return None
        return AppliedConfig(
            pool.nodeclass,
            ("spec", "userData"),
            cfg,
            f"the Bottlerocket {NVIDIA_SETTINGS} settings in its userData",
        )
    label = pool.template.labels.get(DEVICE_PLUGIN_CONFIG_LABEL)
    operator = operator_policy(ctx)
    policy = operator[1] if operator is not None else None
    configs = ctx.device_plugin_configs
    chosen = choose_config(
        [(m.obj.metadata.name, k) for m, k, _ in configs], label=label, policy=policy
    )
    if chosen is None:
        return None
    index, how = chosen
    m, k, cfg = configs[index]
    if how == "label":
        by = f"NodePool label {DEVICE_PLUGIN_CONFIG_LABEL}"
    elif how == "policy-default" and policy is not None:
        by = f"ClusterPolicy {policy.metadata.name} devicePlugin.config.default"
    else:
        by = "the only device-plugin config in the input"
    return AppliedConfig(m, ("data", k), cfg, by)


# ---- NodeOverlays ---------------------------------------------------------------------------
def overlay_capacity(
    ctx: LintContext, pool: PoolView, it: InstanceType, resource: str
) -> tuple[NodeOverlay, int] | None:
    """The NodeOverlay that sets `resource` capacity on `it` in `pool`, and the value the
    stack's overlaid type carries (the first accepted overlay that sets it, in Karpenter's
    order: `scheduling/nodeoverlay.py`)."""
    found = capacity_overlay(ctx.accepted_overlays, pool_types(pool), it, resource)
    if found is None:
        return None
    return found[0], it.capacity.get(resource, found[1])


def _overlay_sets_anywhere(ctx: LintContext, resource: str) -> bool:
    return any(resource in (o.spec.capacity or {}) for o in ctx.overlays)


# ---- pods -----------------------------------------------------------------------------------
def _requested(c: Container, resource: str) -> int:
    q = c.resources.limits.get(resource) or c.resources.requests.get(resource) or Quantity(0)
    return q.value()


def _first_request(ref: PodRef, resource: str) -> tuple[tuple[str | int, ...], int] | None:
    """Path of the first container limit for `resource`, and the amount."""
    for path, c in container_resources(ref):
        amount = _requested(c, resource)
        if amount > 0:
            return (*path, "resources", "limits", resource), amount
    return None


def _requested_names(pod: Pod) -> set[str]:
    names: set[str] = set()
    for c in (*pod.spec.containers, *pod.spec.init_containers):
        names |= {k for k, v in c.resources.limits.items() if not v.is_zero()}
        names |= {k for k, v in c.resources.requests.items() if not v.is_zero()}
    return names


def _pod_pools(ctx: LintContext, pod: Pod, gpus_only: bool = True) -> list[PoolView]:
    reqs = pod_requirements(pod, strict=True)
    key = ("pod_pools", reqs, gpus_only)  # alike pods share one pass over the pools
    cached: list[PoolView] | None = ctx.memo.get(key)
    if cached is not None:
        return cached
    out = []
    for pool in ctx.pools_for_pod(pod):
        types = pool.gpu_types if gpus_only else pool.instance_types
        if any(it.is_compatible(reqs) for it in types):
            out.append(pool)
    ctx.memo[key] = out
    return out


def _ratio(limit: int, replicas: int) -> str:
    value = limit / replicas
    return f"{value:g}" if value == int(value) else f"{value:.2g}"


def _types(types: Sequence[str], n: int = 3) -> str:
    head = ", ".join(types[:n])
    return f"{head} and {len(types) - n} more" if len(types) > n else head


def _min_gpus(pool: PoolView) -> int:
    return min(pool.physical_gpus(it) for it in pool.gpu_types)


def _max_nodes(limit: int, gpus: int, units_per_gpu: int, counted_at_launch: int) -> int:
    """How many `gpus`-GPU nodes a pool limit admits once they initialize: Karpenter launches
    one while remaining >= what a new node counts (`counted_at_launch`), and an initialized node
    uses `gpus * units_per_gpu`."""
    if limit < counted_at_launch:
        return 0
    return (limit - counted_at_launch) // (gpus * units_per_gpu) + 1


# ---- TS001 ----------------------------------------------------------------------------------
@RULES.rule(
    "TS001",
    "time-slicing-without-karpenter-overlay",
    "warning",
    summary="A device-plugin config time-slices (or MPS-shares) nvidia.com/gpu with replicas > 1 "
    "on a NodePool's GPU nodes, and no NodeOverlay tells Karpenter the resulting capacity.",
    why="Karpenter sizes new nodes by physical GPUs. With replicas R a node advertises R per GPU "
    "once it initializes, so a batch of one-GPU pods gets one node each (then consolidated "
    "away), and a pod asking for more than the physical count finds no instance type. A "
    "NodeOverlay with capacity nvidia.com/gpu = GPUs x R for those instance types aligns the two "
    "(NodeOverlay is alpha: enable the NodeOverlay feature gate).",
    fix="Add a NodeOverlay per GPU count (requirement karpenter.k8s.aws/instance-gpu-count In "
    "[n]) with capacity nvidia.com/gpu = n x R (or the renamed resource), or drop time-slicing.",
    source="kubernetes-sigs/karpenter#729, #2140; NVIDIA GPU Operator time-slicing docs (a node "
    "with 8 GPUs and 10 replicas advertises 80); Karpenter docs, NodeOverlays",
)
def time_slicing_without_overlay(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_gpu_pool:
            continue
        applied = applied_config(ctx, pool)
        if applied is None or applied.replicas <= 1:
            continue
        r, resource = applied.replicas, applied.advertised
        missing: list[str] = []
        wrong: dict[tuple[str, int, int], list[str]] = {}
        for it in pool.gpu_types:
            expected = pool.physical_gpus(it) * r
            found = overlay_capacity(ctx, pool, it, resource)
            if found is None:
                missing.append(it.name)
            elif found[1] != expected:
                wrong.setdefault((found[0].metadata.name, found[1], expected), []).append(it.name)
        if missing:
            yield ctx.finding(
                "TS001",
                "warning",
                applied.manifest,
                applied.path,
                f"{applied.sharing} with replicas {r} makes every GPU of NodePool {pool.name} "
                f"advertise {r} {resource}, but no NodeOverlay sets {resource} capacity for "
                f"{_types(missing)}: Karpenter sizes those nodes by physical GPUs, so it launches "
                f"up to {r}x the nodes a batch needs and finds no instance type for a pod asking "
                "for more than the physical count",
            )
        for (overlay, value, expected), names in sorted(wrong.items()):
            yield ctx.finding(
                "TS001",
                "warning",
                applied.manifest,
                applied.path,
                f"{applied.sharing} with replicas {r} makes {_types(names)} of NodePool "
                f"{pool.name} advertise {expected} {resource}, but NodeOverlay {overlay} sets "
                f"{value}: Karpenter sizes those nodes with the overlay's value",
            )


# ---- TS002 ----------------------------------------------------------------------------------
@RULES.rule(
    "TS002",
    "limits-vs-advertised-gpus",
    "warning",
    summary="A NodePool limits nvidia.com/gpu while time-slicing (replicas R > 1) applies to its "
    "nodes; the effective physical-GPU cap is about limit / R.",
    why="Karpenter counts a pool's usage from node.status.capacity, the advertised value, once a "
    "node initializes (before that, from the instance type's physical count). With R replicas "
    "the limit binds at about 1/R of the GPUs it seems to allow, and the cap shifts as nodes "
    "initialize. (MIG single strategy, which also inflates nvidia.com/gpu, is MIG002.)",
    fix="Express the limit in advertised GPUs (physical GPUs wanted x R) and add a NodeOverlay so "
    "new nodes are counted the same way (TS001), or limit by nodes / cpu instead.",
    source="kubernetes-sigs/karpenter pkg/controllers/state/cluster.go and statenode.go; "
    "Karpenter docs, NodePools (spec.limits)",
)
def limits_vs_advertised_gpus(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        limits = pool.nodepool.spec.limits or {}
        if GPU_RESOURCE not in limits or not pool.is_gpu_pool:
            continue
        applied = applied_config(ctx, pool)
        if applied is None or applied.replicas <= 1 or applied.advertised != GPU_RESOURCE:
            continue
        limit, r = limits[GPU_RESOURCE].value(), applied.replicas
        g = _min_gpus(pool)
        smallest = next(it for it in pool.gpu_types if pool.physical_gpus(it) == g)
        overlaid = overlay_capacity(ctx, pool, smallest, GPU_RESOURCE) is not None
        nodes = _max_nodes(limit, g, r, g * r if overlaid else g)
        if nodes == 0:
            outcome = f"no {g}-GPU node can launch at all"
        else:
            outcome = (
                f"Karpenter stops after {nodes} node{'' if nodes == 1 else 's'} of {g} GPU"
                f"{'' if g == 1 else 's'}: {nodes * g} physical, advertising {nodes * g * r}"
            )
        shift = (
            ""
            if overlaid
            else "; until a node initializes it counts its physical GPUs, so the cap shifts as "
            "nodes come up"
        )
        yield ctx.finding(
            "TS002",
            "warning",
            pool.manifest,
            ("spec", "limits", GPU_RESOURCE),
            f"the limit {GPU_RESOURCE}={limit} counts advertised GPUs, and {applied.sharing} "
            f"({applied.where}, replicas {r}) makes each physical GPU advertise {r}: the "
            f"effective cap is about {limit}/{r} = {_ratio(limit, r)} physical GPUs, not {limit} "
            f"({outcome}){shift}",
        )


# ---- TS003 ----------------------------------------------------------------------------------
def _shared_names(ctx: LintContext) -> set[str]:
    names = {f"{GPU_RESOURCE}.shared"}
    for _, _, cfg in ctx.device_plugin_configs:
        if cfg.advertised_resource(GPU_RESOURCE) != GPU_RESOURCE:
            names.add(cfg.advertised_resource(GPU_RESOURCE))
    return names


@RULES.rule(
    "TS003",
    "rename-by-default-resource-mismatch",
    "error",
    summary="Pods request nvidia.com/gpu where the device plugin renames it (renameByDefault / "
    "rename), or request the renamed nvidia.com/gpu.shared with no NodeOverlay giving instance "
    "types that resource.",
    why="With renaming the node advertises <name>.shared instead of <name>. A pod asking for "
    "nvidia.com/gpu never fits there, and a node Karpenter launches for it never registers "
    "nvidia.com/gpu, so it never initializes. A pod asking for nvidia.com/gpu.shared finds no "
    "instance type unless a NodeOverlay adds that resource.",
    fix="Request the resource the nodes advertise (nvidia.com/gpu.shared) and add a NodeOverlay "
    "with capacity nvidia.com/gpu.shared = GPUs x replicas for the GPU instance types; or set "
    "renameByDefault: false.",
    source="NVIDIA GPU Operator time-slicing docs; NVIDIA/k8s-device-plugin README (time-slicing, "
    "renameByDefault); Karpenter docs, NodeOverlays",
)
def rename_resource_mismatch(ctx: LintContext) -> Iterable[Finding]:
    shared = _shared_names(ctx)
    for ref in ctx.pods:
        requested = _requested_names(ref.pod)
        if GPU_RESOURCE in requested:
            yield from _gpu_on_renamed_pools(ctx, ref)
        for name in sorted(requested & shared | {n for n in requested if n.endswith(".shared")}):
            yield from _request_without_overlay(
                ctx, ref, name, "TS003", "which no EC2 instance type has"
            )


def _gpu_on_renamed_pools(ctx: LintContext, ref: PodRef) -> Iterable[Finding]:
    pools = _pod_pools(ctx, ref.pod)
    renamed = []
    for pool in pools:
        applied = applied_config(ctx, pool)
        if applied is None or applied.advertised == GPU_RESOURCE:
            return
        renamed.append((pool, applied))
    if not renamed:
        return
    found = _first_request(ref, GPU_RESOURCE)
    path = found[0] if found else ref.base
    detail = "; ".join(f"NodePool {p.name} gets {a.advertised} from {a.where}" for p, a in renamed)
    yield ctx.finding(
        "TS003",
        "error",
        ref.manifest,
        path,
        f"requests {GPU_RESOURCE} but the device plugin renames it on every GPU NodePool this pod "
        f"can use ({detail}): the pod never fits, and a node launched for it never registers "
        f"{GPU_RESOURCE}, so it never initializes",
    )


def _overlay_coverage(ctx: LintContext, ref: PodRef, name: str) -> tuple[bool, str]:
    """Whether a NodeOverlay gives `name` to an instance type the pod can use, and where it was
    looked for (the pod's GPU pools' types, or any type when no pool fits the pod)."""
    reqs = pod_requirements(ref.pod, strict=True)
    pools = _pod_pools(ctx, ref.pod)
    if pools:
        covered = any(
            overlay_capacity(ctx, p, it, name) is not None
            for p in pools
            for it in p.gpu_types
            if it.is_compatible(reqs)
        )
        return covered, "the GPU instance types of NodePool " + ", ".join(p.name for p in pools)
    return _overlay_sets_anywhere(ctx, name), "any instance type"


def _request_without_overlay(
    ctx: LintContext, ref: PodRef, name: str, rule_id: str, what: str
) -> Iterable[Finding]:
    """The error when a pod requests a resource `what` describes and no NodeOverlay adds it
    where the pod can land (TS003, MIG001)."""
    covered, where = _overlay_coverage(ctx, ref, name)
    if covered:
        return
    found = _first_request(ref, name)
    yield ctx.finding(
        rule_id,
        "error",
        ref.manifest,
        found[0] if found else ref.base,
        f"requests {name}, {what}: no NodeOverlay adds it to {where}, so Karpenter finds no "
        "instance type and the pod stays Pending",
    )


# ---- TS004 ----------------------------------------------------------------------------------
@RULES.rule(
    "TS004",
    "fail-requests-greater-than-one-off",
    "info",
    summary="A time-slicing config leaves failRequestsGreaterThanOne unset or false.",
    why="NVIDIA recommends failRequestsGreaterThanOne: true: asking for more than one time-sliced "
    "GPU does not buy a proportional share of compute (the replicas may all be the same GPU). "
    "With it true such pods fail at admission (UnexpectedAdmissionError) instead of silently "
    "getting less than they asked for.",
    fix="Set sharing.timeSlicing.failRequestsGreaterThanOne: true and have pods request 1.",
    source="NVIDIA GPU Operator time-slicing docs; NVIDIA/k8s-device-plugin README",
    other=(("warning", "a pod on a shared pool requests more than one shared GPU in a container"),),
)
def fail_requests_greater_than_one_off(ctx: LintContext) -> Iterable[Finding]:
    for m, key, cfg in ctx.device_plugin_configs:
        ts = cfg.sharing.time_slicing if cfg.sharing else None
        if ts is None or ts.fail_requests_greater_than_one:
            continue
        shared = {
            cfg.advertised_resource(r.name): r.replicas for r in ts.resources if r.replicas > 1
        }
        if not shared:
            continue
        state = (
            "is false"
            if "fail_requests_greater_than_one" in ts.model_fields_set
            else "is not set (false)"
        )
        applies_to = {p.name for p in ctx.pools if _applies(ctx, p, m, key)}
        offenders = []
        for ref in ctx.pods:
            if ctx.pools and not applies_to & {p.name for p in _pod_pools(ctx, ref.pod)}:
                continue
            for resource in shared:
                most = max(_requested(c, resource) for _, c in container_resources(ref))
                if most > 1:
                    offenders.append(f"{ref.manifest.ref} ({resource}: {most})")
        severity: Severity = "warning" if offenders else "info"
        tail = (
            f"; {', '.join(offenders[:3])} "
            f"{'requests' if len(offenders) == 1 else 'request'} more than one shared GPU and "
            f"would get less compute than asked"
            if offenders
            else ""
        )
        yield ctx.finding(
            "TS004",
            severity,
            m,
            ("data", key),
            f"timeSlicing.failRequestsGreaterThanOne {state}: a request for more than one "
            f"time-sliced {', '.join(shared)} is admitted without a proportional share of the "
            f"GPU{tail}",
        )


def _applies(ctx: LintContext, pool: PoolView, m: Manifest, key: str) -> bool:
    applied = applied_config(ctx, pool)
    return applied is not None and applied.manifest is m and applied.path == ("data", key)


# ---- TS005 ----------------------------------------------------------------------------------
@RULES.rule(
    "TS005",
    "time-slicing-config-not-applied",
    "warning",
    summary="The GPU Operator names a device-plugin ConfigMap (devicePlugin.config.name) but no "
    "config reaches a GPU NodePool's nodes: no default and no nvidia.com/device-plugin.config "
    "label, or the key is missing from the ConfigMap.",
    why="By default the GPU Operator does not apply the time-slicing configuration to any node: "
    "a node gets it only through devicePlugin.config.default or its "
    "nvidia.com/device-plugin.config label, and only if the ConfigMap has that key. Otherwise "
    "GPUs are not shared and capacity plans built on the replicas are wrong.",
    fix="Set devicePlugin.config.default to a key of the ConfigMap, or label the NodePool "
    "template nvidia.com/device-plugin.config=<key>; include the ConfigMap in the lint input.",
    source="NVIDIA GPU Operator time-slicing docs (Applying the Default Configuration / Per Node)",
    other=(("info", "the config's ConfigMap is not in the input, so nothing is checked"),),
)
def time_slicing_config_not_applied(ctx: LintContext) -> Iterable[Finding]:
    operator = operator_policy(ctx)
    if operator is None:
        return
    m, policy = operator
    ref = policy.spec.device_plugin.config
    if ref is None or not ref.name:
        return
    base = ("spec", "devicePlugin", "config")
    maps = [cm for cm in ctx.of_kind(ConfigMap) if cm.metadata.name == ref.name]
    if not maps:
        yield ctx.finding(
            "TS005",
            "info",
            m,
            (*base, "name"),
            f"devicePlugin.config.name {ref.name!r}: that ConfigMap is not in the input, so "
            "gpucap cannot check which device-plugin config GPU nodes get (nor its replicas)",
        )
        return
    cm = maps[0]
    keys = sorted(cm.data)
    listed = ", ".join(keys) or "none"
    if ref.default and ref.default not in cm.data:
        yield ctx.finding(
            "TS005",
            "warning",
            m,
            (*base, "default"),
            f"devicePlugin.config.default {ref.default!r} is not a key of ConfigMap {ref.name} "
            f"(keys: {listed}): nodes without their own label get no config, and the device "
            "plugin's config manager fails to start on them",
        )
    for pool in ctx.pools:
        if not pool.is_gpu_pool or pool.is_bottlerocket or pool.is_auto_mode:
            continue  # Bottlerocket and Auto Mode nodes run their own plugin, not the operator's
        label = pool.template.labels.get(DEVICE_PLUGIN_CONFIG_LABEL)
        if label is None:
            if not ref.default:
                yield ctx.finding(
                    "TS005",
                    "warning",
                    m,
                    base,
                    f"devicePlugin.config has no default and GPU NodePool {pool.name} does not "
                    f"label its nodes {DEVICE_PLUGIN_CONFIG_LABEL}: they get none of ConfigMap "
                    f"{ref.name}'s configs ({listed}), so their GPUs are not shared",
                )
        elif label not in cm.data:
            yield ctx.finding(
                "TS005",
                "warning",
                pool.manifest,
                ("spec", "template", "metadata", "labels", DEVICE_PLUGIN_CONFIG_LABEL),
                f"{DEVICE_PLUGIN_CONFIG_LABEL}={label} is not a key of ConfigMap {ref.name} "
                f"(keys: {listed}): the pool's GPU nodes get no device-plugin config",
            )


# ---- MIG001 ---------------------------------------------------------------------------------
@RULES.rule(
    "MIG001",
    "mig-mixed-resource-without-overlay",
    "error",
    summary="Pods request a MIG resource (nvidia.com/mig-<g>g.<m>gb) and no NodeOverlay adds it "
    "to the instance types they could get.",
    why="Under the mixed MIG strategy the device plugin advertises one resource per MIG profile. "
    "Karpenter's instance types only know nvidia.com/gpu, so it finds no instance type for the "
    "pod, which stays Pending, unless a NodeOverlay adds the MIG resource.",
    fix="Add a NodeOverlay for the MIG-partitioned instance types with capacity "
    "nvidia.com/mig-<g>g.<m>gb = GPUs x devices per GPU (NodeOverlay feature gate on), or use "
    "the single strategy (see MIG002).",
    source="NVIDIA/k8s-device-plugin README (MIG_STRATEGY); NVIDIA GPU feature discovery (mixed); "
    "Karpenter docs, NodeOverlays",
)
def mig_mixed_without_overlay(ctx: LintContext) -> Iterable[Finding]:
    for ref in ctx.pods:
        for name in sorted(n for n in _requested_names(ref.pod) if MIG_RESOURCE.match(n)):
            yield from _request_without_overlay(
                ctx, ref, name, "MIG001", "a MIG device Karpenter's instance types never have"
            )


# ---- MIG002 ---------------------------------------------------------------------------------
def _mig_devices_per_gpu(profile: str | None, gpu: str, memory_mib: int | None) -> int | None:
    """MIG devices per GPU for an `all-<g>g.<m>gb` profile (compute slices of 7, memory slices
    of 8), capped by the GPU's maximum; None when the profile does not say."""
    most = MIG_GPUS.get(gpu)
    match = MIG_PROFILE_LABEL.match(profile or "")
    if most is None or match is None or not memory_mib:
        return None
    compute, memory_gb = int(match.group(1)), int(match.group(2))
    memory_slices = max(1, round(memory_gb * 1024 / (memory_mib / 8)))
    return max(1, min(7 // compute, 8 // memory_slices, most))


def _mig_strategy(ctx: LintContext, pool: PoolView) -> tuple[str, str, bool] | None:
    """(strategy, where it comes from, whether it was written explicitly)."""
    operator = operator_policy(ctx)
    if operator is not None:
        policy = operator[1]
        return (
            policy.spec.mig.strategy,
            f"ClusterPolicy {policy.metadata.name} mig.strategy",
            "strategy" in policy.spec.mig.model_fields_set,
        )
    applied = applied_config(ctx, pool)
    if applied is None:
        return None
    return (
        applied.config.flags.mig_strategy,
        f"{applied.where} flags.migStrategy",
        "mig_strategy" in applied.config.flags.model_fields_set,
    )


def _label_value(it: InstanceType, key: str) -> str | None:
    req = it.requirements.get(key)
    return req.any() if req is not None and req.operator == "In" and len(req) == 1 else None


@RULES.rule(
    "MIG002",
    "mig-single-overloads-gpu-count",
    "warning",
    summary="The single MIG strategy applies to a NodePool with MIG-enabled GPUs that limits or "
    "serves nvidia.com/gpu.",
    why="Under single, nvidia.com/gpu counts MIG devices, not GPUs (8 GPUs x 7 = 56). Karpenter "
    "sizes instance types by physical GPUs and counts limits by what nodes advertise, so "
    "sizing and limits are off by the devices per GPU, as with time-slicing (TS002). "
    "Heuristic: MIG is in use when the pool's template labels nvidia.com/mig.config with a "
    "profile other than all-disabled, or, without a GPU Operator, the device-plugin config sets "
    "migStrategy: single; only GPUs that support MIG count.",
    fix="Express limits in MIG devices (GPUs x devices per GPU) and add a NodeOverlay with "
    "capacity nvidia.com/gpu = GPUs x devices per GPU for the MIG instance types; or use the "
    "mixed strategy with per-profile resources (MIG001).",
    source="NVIDIA GPU feature discovery (single strategy); NVIDIA GPU Operator MIG docs "
    "(nvidia.com/gpu.count: 7 after all-1g.5gb)",
)
def mig_single_overloads_gpu_count(ctx: LintContext) -> Iterable[Finding]:
    has_policy = operator_policy(ctx) is not None
    for pool in ctx.pools:
        mig_types = [
            it for it in pool.gpu_types if (_label_value(it, INSTANCE_GPU_NAME) or "") in MIG_GPUS
        ]
        if not mig_types:
            continue
        found = _mig_strategy(ctx, pool)
        if found is None or found[0] != "single":
            continue
        _, source, explicit = found
        profile = pool.template.labels.get(MIG_CONFIG_LABEL)
        in_use = (profile is not None and profile != "all-disabled") or (
            not has_policy and explicit
        )
        if not in_use:
            continue
        limits = pool.nodepool.spec.limits or {}
        pods = [
            ref
            for ref in ctx.pods
            if any(_requested(c, GPU_RESOURCE) for _, c in container_resources(ref))
            and pool.name in {p.name for p in _pod_pools(ctx, ref.pod)}
        ]
        if GPU_RESOURCE not in limits and not pods:
            continue
        it = max(mig_types, key=lambda t: (pool.physical_gpus(t), t.name))
        gpu = _label_value(it, INSTANCE_GPU_NAME) or "GPU"
        memory = _label_value(it, INSTANCE_GPU_MEMORY)
        per_gpu = _mig_devices_per_gpu(profile, gpu, int(memory) if memory else None)
        most = per_gpu or MIG_GPUS[gpu]
        physical = pool.physical_gpus(it)
        how = f" with {MIG_CONFIG_LABEL}={profile}" if profile else ""
        up_to = "" if per_gpu else "up to "
        head = (
            f"MIG strategy single ({source}){how}: nvidia.com/gpu counts MIG devices, so a "
            f"{it.name} ({physical} {gpu}) advertises {up_to}{physical * most} {GPU_RESOURCE} "
            f"({up_to}{most} per GPU) once it initializes, but Karpenter sizes it as {physical}"
        )
        if GPU_RESOURCE in limits:
            limit = limits[GPU_RESOURCE].value()
            cap = f"{'about' if per_gpu else 'as little as'} {limit}/{most} = "
            cap += f"{_ratio(limit, most)} physical GPUs"
            yield ctx.finding(
                "MIG002",
                "warning",
                pool.manifest,
                ("spec", "limits", GPU_RESOURCE),
                f"{head}: the limit {GPU_RESOURCE}={limit} caps the pool at {cap}, not {limit}",
            )
        else:
            names = ", ".join(ref.manifest.ref for ref in pods[:3])
            path = (
                ("spec", "template", "metadata", "labels", MIG_CONFIG_LABEL)
                if profile
                else ("spec", "template", "spec", "requirements")
            )
            yield ctx.finding(
                "MIG002",
                "warning",
                pool.manifest,
                path,
                f"{head}: pods requesting {GPU_RESOURCE} ({names}) are sized against physical "
                "GPUs, so Karpenter launches more nodes than needed and finds no instance type "
                "for a pod asking for more than the physical count",
            )
