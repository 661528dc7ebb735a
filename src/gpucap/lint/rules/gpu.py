"""GPU rules: device plugin, initialization and the GPU Operator (landscape.md §3.1).

GPU001/GPU002: a device plugin runs on GPU pools' nodes (absent from the input is info, since
it may be installed outside it; present but unable to run there is an error). GPU003: every
startup taint has a remover (heuristic in its `why`). GPU004: the GPU Operator does not install
a driver or toolkit on EKS accelerated AMIs. GPU005: a custom (non-alias) AMI is not shared by
GPU and CPU types. GPU006: GPU Feature Discovery (same image as the device plugin, not the
plugin) tolerates the GPU pools' taints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gpucap.apis.core import Pod, PodTemplateSpec, Taint, Toleration, TopologySpreadConstraint
from gpucap.apis.gpuoperator import ComponentSpec
from gpucap.apis.labels import HOSTNAME, ZONE
from gpucap.apis.leaderworkerset import EXCLUSIVE_TOPOLOGY, LeaderWorkerSet
from gpucap.apis.leaderworkerset import GROUP_INDEX as LWS_GROUP_INDEX
from gpucap.apis.leaderworkerset import SET_NAME as LWS_SET_NAME
from gpucap.apis.meta import LabelSelector, NamespacedObjectMeta
from gpucap.apis.serde import Manifest
from gpucap.apis.workloads import DaemonSet, Deployment, StatefulSet
from gpucap.controllers.provisioning.loop import Plan, PlannedNodeClaim
from gpucap.lint.context import LintContext, PoolView, pod_gpus
from gpucap.lint.registry import Finding, Registry
from gpucap.scheduling.daemonsets import (
    blocking_taint,
    operator_tolerations,
    without_runtime_labels,
)
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import daemon_pod
from gpucap.scheduling.poddata import pod_requirements
from gpucap.scheduling.preferences import drop_required_node_term, tolerate_prefer_no_schedule
from gpucap.scheduling.taints import format_taint, is_known_ephemeral, untolerated

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()


# ---- GPU001 / GPU002 ------------------------------------------------------------------------
NVDP_INSTALL = (
    "helm repo add nvdp https://nvidia.github.io/k8s-device-plugin && helm upgrade -i nvdp "
    "nvdp/nvidia-device-plugin --namespace nvidia-device-plugin --create-namespace"
)


def _selects_pool(pod: Pod, pool: PoolView) -> bool:
    """The pod's node selector and one of its required node-affinity terms can match the
    pool's GPU nodes (runtime labels unknown, so allowed)."""
    known = set(pool.template.labels) | {k for k, _ in pool.template.requirements.items()}
    return _node_terms_match(without_runtime_labels(pod, known), pool, pool.gpu_types)


def _node_terms_match(pod: Pod, pool: PoolView, types: Sequence[InstanceType]) -> bool:
    """The pod's node selector with one of its required node-affinity terms (tried one by one,
    as the scheduler ORs them) meets the pool's labels and one of `types` (any, when empty)."""
    current: Pod | None = pod
    while current is not None:
        reqs = pod_requirements(current, strict=True)
        if pool.template.requirements.is_compatible(reqs, pool.well_known) and (
            not types or any(it.is_compatible(reqs) for it in types)
        ):
            return True
        current = drop_required_node_term(current)
    return False


def _untolerated_taint(pool: PoolView, tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint or startup taint of the pool that keeps a daemon off and that
    `tolerations` do not tolerate."""
    return blocking_taint((*pool.template.taints, *pool.template.startup_taints), tolerations)


@dataclass(frozen=True, slots=True)
class _Blocked:
    """Why one device-plugin source in the input cannot run on a pool's GPU nodes."""

    manifest: Manifest
    reason: str
    taint: bool  # the cause is an untolerated taint of a DaemonSet (GPU002 reports it)


def _blocked(ctx: LintContext, pool: PoolView) -> list[_Blocked] | None:
    """Why each device plugin in the input (DaemonSets, ClusterPolicies) cannot run on the
    pool's GPU nodes; None when one of them can (or the input holds none: then `[]`)."""
    out: list[_Blocked] = []
    for m, ds in ctx.device_plugin_daemonsets:
        pod = daemon_pod(ds)
        if not _selects_pool(pod, pool):
            out.append(
                _Blocked(
                    m,
                    f"{m.ref} has a node selector / required node affinity that matches none "
                    "of the pool's GPU nodes",
                    taint=False,
                )
            )
            continue
        taint = _untolerated_taint(pool, pod.spec.tolerations)
        if taint is None:
            return None
        out.append(_Blocked(m, f"{m.ref} does not tolerate {format_taint(taint)}", taint=True))
    for m, policy in ctx.cluster_policies:
        if not policy.spec.device_plugin.enabled:
            out.append(_Blocked(m, f"{m.ref} has devicePlugin.enabled: false", taint=False))
            continue
        taint = _untolerated_taint(pool, operator_tolerations(policy))
        if taint is None:
            return None
        out.append(
            _Blocked(
                m,
                f"{m.ref} daemonsets.tolerations do not tolerate {format_taint(taint)}",
                taint=False,
            )
        )
    return out


def _needs_plugin(pool: PoolView) -> list[InstanceType]:
    """The pool's GPU types whose AMI does not run the device plugin itself."""
    if not pool.is_gpu_pool:
        return []
    return [it for it in pool.gpu_types if not pool.ami_ships_device_plugin(it)]


@RULES.rule(
    "GPU001",
    "gpu-pool-without-device-plugin",
    "error",
    summary="A GPU NodePool's nodes get no NVIDIA device plugin: the one in the input cannot run "
    "there (node selector / affinity, devicePlugin.enabled: false, the operator's tolerations), "
    "or none is in the input.",
    why="EKS AL2023 NVIDIA AMIs ship the driver, not the device plugin. Without it the node never "
    "advertises nvidia.com/gpu, Karpenter never marks it initialized, GPU pods stay Pending and "
    "the node stays on the bill (it is never consolidated). Bottlerocket's NVIDIA variants and "
    "EKS Auto Mode run the plugin themselves and are not checked. A device plugin absent from "
    "the input may still be in the cluster (Helm chart, GPU Operator, kubectl apply -f <url>): "
    "that is an info finding, which `cluster = [...]` in the lint configuration turns off. "
    "Untolerated taints of a device-plugin DaemonSet are GPU002.",
    fix="Install the NVIDIA device plugin (helm upgrade -i nvdp nvdp/nvidia-device-plugin "
    "--namespace nvidia-device-plugin --create-namespace) or the GPU Operator before the first "
    "GPU pod, able to run on the GPU pool's nodes; if the cluster has it, declare it: "
    '`cluster = ["nvidia-device-plugin"]` (or "gpu-operator") under [tool.gpucap.lint].',
    source="EKS Best Practices AI/ML (Use Kubernetes Device Plugin); Karpenter docs, "
    "troubleshooting (Nodes not initialized); aws/karpenter-provider-aws#1914; Bottlerocket "
    "settings (kubelet-device-plugins)",
    other=(
        (
            "info",
            "no device plugin or GPU Operator is in the input at all (it may run outside it)",
        ),
    ),
)
def gpu_pool_without_device_plugin(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        types = _needs_plugin(pool)
        if not types:
            continue
        blocked = _blocked(ctx, pool)
        if blocked is None:
            continue
        path = ("spec", "template", "spec", "requirements")
        names = ", ".join(it.name for it in types[:3])
        more = f" and {len(types) - 3} more" if len(types) > 3 else ""
        if not blocked:
            if ctx.cluster:
                continue
            yield ctx.finding(
                "GPU001",
                "info",
                pool.manifest,
                path,
                f"can launch GPU instances ({names}{more}) and no NVIDIA device plugin or GPU "
                "Operator is in the input: if the cluster does not run one, its nodes never "
                f"initialize. Install it (`{NVDP_INSTALL}`, or the GPU Operator) and declare it "
                'with cluster = ["nvidia-device-plugin"] under [tool.gpucap.lint]',
            )
            continue
        causes = [b for b in blocked if not b.taint]
        if not causes:
            continue  # only untolerated DaemonSet taints: GPU002 reports each
        also = [b.manifest.ref for b in blocked if b.taint]
        tail = f" (GPU002 reports {', '.join(also)})" if also else ""
        yield ctx.finding(
            "GPU001",
            "error",
            pool.manifest,
            path,
            f"GPU NodePool ({pool.gpu_pool}), but no NVIDIA device plugin in the input can "
            f"run on its GPU nodes ({names}{more}): "
            + "; ".join(b.reason for b in causes)
            + tail
            + "; nvidia.com/gpu never registers and the nodes never initialize",
        )


@RULES.rule(
    "GPU002",
    "device-plugin-does-not-tolerate-pool-taints",
    "error",
    summary="The device-plugin DaemonSet does not tolerate every taint (and startup taint) of a "
    "GPU NodePool whose nodes it selects, and no other device plugin in the input runs there.",
    why="The plugin pod never lands on the GPU node, so nvidia.com/gpu never registers and the "
    "node is never initialized.",
    fix="Add tolerations for the pool's taints to the device plugin (GPU Operator: "
    "daemonsets.tolerations).",
    source="Karpenter docs, troubleshooting; aws-samples/karpenter-blueprints nvidia-gpu-workload",
)
def device_plugin_does_not_tolerate(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not _needs_plugin(pool):
            continue
        for b in _blocked(ctx, pool) or []:
            if not b.taint:
                continue
            yield ctx.finding(
                "GPU002",
                "error",
                b.manifest,
                ("spec", "template", "spec", "tolerations"),
                f"{b.reason.removeprefix(b.manifest.ref + ' ')} of GPU NodePool {pool.name}: the "
                "device plugin would never run there",
            )


# ---- GPU006 --------------------------------------------------------------------------------------


@RULES.rule(
    "GPU006",
    "feature-discovery-does-not-tolerate-pool-taints",
    "warning",
    summary="A GPU Feature Discovery DaemonSet does not tolerate a taint (or startup taint) of a "
    "GPU NodePool whose nodes it selects: it cannot label them.",
    why="GPU Feature Discovery ships in the device plugin's image (nvcr.io/nvidia/k8s-device-"
    "plugin, command gpu-feature-discovery) but is not the device plugin: it advertises no "
    "nvidia.com/gpu and neither satisfies nor breaks GPU001. It labels GPU nodes "
    "(nvidia.com/gpu.product, nvidia.com/gpu.memory, ...); kept off a tainted node, it never "
    "labels it, and pods that select those labels never land there.",
    fix="Add a toleration for the pool's taints to the GPU Feature Discovery DaemonSet (the "
    "Helm chart's gfd tolerations), or drop it if no pod selects its labels.",
    source="NVIDIA/k8s-device-plugin deployments/static/gpu-feature-discovery-daemonset.yaml "
    "and cmd/gpu-feature-discovery",
)
def feature_discovery_does_not_tolerate(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        if not pool.is_gpu_pool:
            continue
        for m, ds in ctx.feature_discovery_daemonsets:
            pod = daemon_pod(ds)
            if not _selects_pool(pod, pool):
                continue
            taint = _untolerated_taint(pool, pod.spec.tolerations)
            if taint is None:
                continue
            yield ctx.finding(
                "GPU006",
                "warning",
                m,
                ("spec", "template", "spec", "tolerations"),
                f"GPU Feature Discovery does not tolerate {format_taint(taint)} of GPU NodePool "
                f"{pool.name}: it never labels those nodes (nvidia.com/gpu.product, ...), so pods "
                "that select its labels cannot land there; it is not the device plugin",
            )


# ---- GPU003 --------------------------------------------------------------------------------------
# Startup taints whose remover is a well-known DaemonSet that tolerates every taint (so it cannot
# be recognised by an explicit toleration): taint key -> markers looked for in the DaemonSet's
# name and container images.
KNOWN_STARTUP_TAINT_REMOVERS: dict[str, tuple[str, ...]] = {
    "node.cilium.io/agent-not-ready": ("cilium",),
    "ebs.csi.aws.com/agent-not-ready": ("ebs-csi",),
    "efs.csi.aws.com/agent-not-ready": ("efs-csi",),
    "cni.istio.io/not-ready": ("istio-cni",),
}


def _claims_startup_taint(ds: DaemonSet, taint: Taint) -> bool:
    """Whether a DaemonSet looks like the remover of `taint`: it tolerates it by its key (a
    blanket `operator: Exists` toleration does not count), or it is the known remover."""
    if any(t.key == taint.key and t.tolerates(taint) for t in ds.spec.template.spec.tolerations):
        return True
    markers = KNOWN_STARTUP_TAINT_REMOVERS.get(taint.key, ())
    images = [c.image or "" for c in ds.spec.template.spec.containers]
    text = " ".join([ds.metadata.name, *images])
    return any(marker in text for marker in markers)


def _why_daemon_cannot_run(pool: PoolView, ds: DaemonSet) -> str | None:
    """Why the DaemonSet's pod would not run on the pool's nodes, or None when it would.

    The DaemonSet controller ignores PreferNoSchedule taints; every other taint and startup
    taint must be tolerated, and the node selector with one of the required node-affinity terms
    must match the pool's labels and one of its instance types."""
    pod = daemon_pod(ds)
    pod = tolerate_prefer_no_schedule(pod) or pod
    taint = untolerated(
        (*pool.template.taints, *pool.template.startup_taints), pod.spec.tolerations
    )
    if taint is not None:
        return f"does not tolerate {format_taint(taint)}"
    if _node_terms_match(pod, pool, pool.instance_types):
        return None
    return "its node selector / required node affinity matches none of the pool's nodes"


@RULES.rule(
    "GPU003",
    "startup-taint-without-remover",
    "warning",
    summary="A NodePool sets startupTaints and no DaemonSet in the input is known to remove them.",
    why="Karpenter expects every startup taint to be removed (by a DaemonSet or controller on the "
    "node) before it marks the node initialized. A taint nobody removes keeps the node "
    "uninitialized for good: never consolidated, pods nominated to it stay Pending, and it runs "
    "until expireAfter. Heuristic: a remover is a DaemonSet that tolerates the taint by its key "
    "(a blanket `operator: Exists` does not count) or a known remover for it (Cilium agent for "
    "node.cilium.io/agent-not-ready, EBS/EFS CSI node for <driver>/agent-not-ready, Istio CNI for "
    "cni.istio.io/not-ready); it must also be able to run on the pool's nodes. Taints the node "
    "loses by itself (not-ready, uninitialized, readiness.k8s.io/*) are not checked.",
    fix="Deploy the component that removes the taint (tolerating the pool's taints and startup "
    "taints), or drop the startup taint; if the remover is deployed separately, include its "
    "DaemonSet in the lint input or ignore this rule for the line.",
    source="Karpenter docs, troubleshooting (NodePool startup taints); Karpenter docs, "
    "NodePools (spec.template.spec.startupTaints); kubernetes-sigs/karpenter "
    "pkg/controllers/nodeclaim/lifecycle/initialization.go",
)
def startup_taint_without_remover(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        for index, taint in enumerate(pool.template.startup_taints):
            if is_known_ephemeral(taint):
                continue
            path = ("spec", "template", "spec", "startupTaints", index)
            removers = [(m, ds) for m, ds in ctx.daemonsets if _claims_startup_taint(ds, taint)]
            if not removers:
                yield ctx.finding(
                    "GPU003",
                    "warning",
                    pool.manifest,
                    path,
                    f"startup taint {format_taint(taint)} has no remover in the input (no "
                    "DaemonSet tolerates it by key or is a known remover): Karpenter never "
                    "initializes a node that keeps it, so the pool's nodes would stay "
                    "uninitialized and never be consolidated",
                )
                continue
            reasons = {m.ref: _why_daemon_cannot_run(pool, ds) for m, ds in removers}
            if all(reason is not None for reason in reasons.values()):
                detail = "; ".join(f"{ref} {reason}" for ref, reason in reasons.items())
                yield ctx.finding(
                    "GPU003",
                    "warning",
                    pool.manifest,
                    path,
                    f"startup taint {format_taint(taint)} would be removed by a DaemonSet that "
                    f"cannot run on this pool's nodes ({detail}): the taint stays and the nodes "
                    "never initialize",
                )


# ---- GPU004 --------------------------------------------------------------------------------------
# EKS accelerated AMI families (alias family in `family@version`): the NVIDIA variants ship the
# driver and the NVIDIA container toolkit.
EKS_ACCELERATED_ALIASES = ("al2023", "bottlerocket", "al2")


@RULES.rule(
    "GPU004",
    "gpu-operator-manages-driver-on-eks-ami",
    "error",
    summary="The GPU Operator's ClusterPolicy installs the driver or the container toolkit "
    "(driver.enabled / toolkit.enabled true or unset) while a GPU NodePool boots an EKS "
    "accelerated AMI (EC2NodeClass alias al2023 / bottlerocket).",
    why="The EKS accelerated AMIs (AL2023 NVIDIA, Bottlerocket NVIDIA) ship the NVIDIA driver and "
    "container toolkit. The operator's driver and toolkit pods then install a second copy and "
    "rewrite the container runtime configuration on every new GPU node, which fails or delays "
    "the device plugin, so nvidia.com/gpu registers late or never and Karpenter cannot "
    "initialize the node.",
    fix="Set driver.enabled: false and toolkit.enabled: false in the ClusterPolicy (Helm: "
    "--set driver.enabled=false --set toolkit.enabled=false).",
    source="EKS Best Practices AI/ML (Use Kubernetes Device Plugin: pre-installed NVIDIA GPU "
    "drivers and NVIDIA container toolkit)",
)
def gpu_operator_manages_driver(ctx: LintContext) -> Iterable[Finding]:
    pools: list[tuple[PoolView, str]] = []
    for pool in ctx.pools:
        nc = pool.ec2nodeclass
        term = nc.alias if nc is not None else None
        if pool.is_gpu_pool and term and term.alias_family in EKS_ACCELERATED_ALIASES:
            pools.append((pool, term.alias or ""))
    if not pools:
        return
    names = ", ".join(
        f"{pool.name} (EC2NodeClass {pool.ec2nodeclass.name if pool.ec2nodeclass else '?'}, "
        f"alias {alias})"
        for pool, alias in pools
    )
    subject = f"GPU NodePool {names} boots" if len(pools) == 1 else f"GPU NodePools {names} boot"
    for m, policy in ctx.cluster_policies:
        for component, what in (("driver", "NVIDIA driver"), ("toolkit", "container toolkit")):
            spec: ComponentSpec = getattr(policy.spec, component)
            if not spec.enabled:
                continue
            explicit = "enabled" in spec.model_fields_set
            state = "is true" if explicit else "is unset (defaults to true)"
            yield ctx.finding(
                "GPU004",
                "error",
                m,
                ("spec", component, "enabled"),
                f"{component}.enabled {state} but {subject} an EKS accelerated AMI that "
                f"already ships the {what}: the operator would install a second one on every "
                "GPU node, delaying or blocking nvidia.com/gpu registration",
            )


# ---- GPU005 --------------------------------------------------------------------------------------
def _examples(names: Sequence[str], n: int = 3) -> str:
    head = ", ".join(names[:n])
    return f"{head} and {len(names) - n} more" if len(names) > n else head


@RULES.rule(
    "GPU005",
    "custom-ami-mixed-gpu-pool",
    "warning",
    summary="A NodePool whose EC2NodeClass selects AMIs without an alias (id, name, tags, SSM) can "
    "launch both NVIDIA GPU and non-GPU instance types.",
    why="Unless the AMI comes from an alias, Karpenter cannot tell which AMI suits which instance "
    "type beyond the architecture: a GPU instance may boot an AMI without the NVIDIA driver "
    "(nvidia.com/gpu never registers, the node never initializes) or a CPU instance the "
    "accelerated AMI. Karpenter's docs say to use a separate EC2NodeClass for accelerated AMIs.",
    fix="Split the pool: one NodePool + EC2NodeClass (accelerated AMI) restricted to GPU instance "
    "types, one for the rest; or restrict this pool to one kind of instance type.",
    source="Karpenter docs, NodeClasses (spec.amiSelectorTerms)",
)
def custom_ami_mixed_gpu_pool(ctx: LintContext) -> Iterable[Finding]:
    for pool in ctx.pools:
        nc = pool.ec2nodeclass
        if nc is None or nc.alias is not None or not pool.is_gpu_pool:
            continue
        gpu_names = {it.name for it in pool.gpu_types}  # overlay-only GPU types included
        cpu_types = [it.name for it in pool.instance_types if it.name not in gpu_names]
        if not cpu_types:
            continue
        gpu_types = [it.name for it in pool.gpu_types]
        yield ctx.finding(
            "GPU005",
            "warning",
            pool.manifest,
            ("spec", "template", "spec", "requirements"),
            f"EC2NodeClass {nc.name} selects its AMI without an alias and this pool can launch "
            f"both GPU ({_examples(gpu_types)}) and non-GPU ({_examples(cpu_types)}) instance "
            "types: Karpenter cannot match the AMI to the instance type, so GPU nodes may boot "
            "an AMI without the NVIDIA driver (or CPU nodes the GPU AMI)",
        )


# ---- GPU007 --------------------------------------------------------------------------------------
# The topology keys that make replicas separate failure domains: a node, or a zone.
_SPREAD_KEYS = frozenset({HOSTNAME, ZONE})

# A workload whose GPU replicas GPU007 checks: the pods of a Deployment or a StatefulSet, or
# the groups (a leader and its workers) of a LeaderWorkerSet.
Replicated = Deployment | StatefulSet | LeaderWorkerSet


def _spreads(pod: Pod) -> bool:
    """The pod has a topology spread, or a pod anti-affinity (required or preferred), on
    hostname or zone: its replicas are already kept apart (or asked to be)."""
    if any(c.topology_key in _SPREAD_KEYS for c in pod.spec.topology_spread_constraints):
        return True
    anti = pod.spec.affinity.pod_anti_affinity if pod.spec.affinity else None
    if anti is None:
        return False
    terms = [
        *anti.required_during_scheduling_ignored_during_execution,
        *(w.pod_affinity_term for w in anti.preferred_during_scheduling_ignored_during_execution),
    ]
    return any(t.topology_key in _SPREAD_KEYS for t in terms)


def _templates(workload: Replicated) -> list[PodTemplateSpec]:
    """The pod templates of `workload`: a Deployment's or StatefulSet's one; a
    LeaderWorkerSet's leader template (when it has its own) and worker template."""
    if isinstance(workload, LeaderWorkerSet):
        lwt = workload.spec.leader_worker_template
        leader = [lwt.leader_template] if lwt.leader_template is not None else []
        return [*leader, lwt.worker_template]
    return [workload.spec.template]


def _gpu_pods(workload: Replicated) -> list[Pod]:
    """A sample pod of each of `workload`'s templates that requests GPUs."""
    samples = (Pod(metadata=_SAMPLE_META, spec=t.spec) for t in _templates(workload))
    return [p for p in samples if pod_gpus(p) > 0]


def _kept_apart(workload: Replicated, gpu_pods: Sequence[Pod]) -> bool:
    """The replicas are already kept apart on hostname or zone: every GPU template spreads
    (`_spreads`), or a LeaderWorkerSet's exclusive-topology annotation names one of those keys
    (the LWS webhook gives each leader a required anti-affinity to the other groups on that
    key, and the workers follow their leader: `apis/leaderworkerset.py`)."""
    exclusive = isinstance(workload, LeaderWorkerSet) and (
        workload.metadata.annotations.get(EXCLUSIVE_TOPOLOGY) in _SPREAD_KEYS
    )
    return exclusive or all(_spreads(p) for p in gpu_pods)


def _replica_of(workload: Replicated) -> Callable[[Pod], str | None]:
    """Which replica a GPU pod of the plan belongs to: the pod itself for a Deployment or a
    StatefulSet, its group (`group-index` label) for a LeaderWorkerSet; None for a pod that is
    not one of `workload`'s or requests no GPU."""
    owned = _owned_by(workload)
    by_group = isinstance(workload, LeaderWorkerSet)

    def replica(pod: Pod) -> str | None:
        if not owned(pod) or pod_gpus(pod) <= 0:
            return None
        return pod.metadata.labels.get(LWS_GROUP_INDEX) if by_group else pod.key

    return replica


def _with_hostname_spread(workload: Replicated) -> Replicated:
    """`workload` with a hostname topology spread (maxSkew 1, DoNotSchedule) over its own pods
    added to its templates, the fix the finding prices (a LeaderWorkerSet's over every pod of
    the set, selected by the `leaderworkerset.sigs.k8s.io/name` label the LWS controller puts
    on them)."""
    if isinstance(workload, LeaderWorkerSet):
        selector = LabelSelector(match_labels={LWS_SET_NAME: workload.metadata.name})
        lwt = workload.spec.leader_worker_template
        update: dict[str, PodTemplateSpec] = {
            "worker_template": _add_spread(lwt.worker_template, selector)
        }
        if lwt.leader_template is not None:
            update["leader_template"] = _add_spread(lwt.leader_template, selector)
        spec = workload.spec.model_copy(
            update={"leader_worker_template": lwt.model_copy(update=update)}
        )
        return workload.model_copy(update={"spec": spec})
    template = _add_spread(workload.spec.template, workload.spec.selector)
    return workload.model_copy(
        update={"spec": workload.spec.model_copy(update={"template": template})}
    )


def _add_spread(template: PodTemplateSpec, selector: LabelSelector) -> PodTemplateSpec:
    """`template` with a hostname topology spread (maxSkew 1, DoNotSchedule) over `selector`."""
    spread = TopologySpreadConstraint(
        max_skew=1,
        topology_key=HOSTNAME,
        when_unsatisfiable="DoNotSchedule",
        label_selector=selector,
    )
    spec = template.spec.model_copy(
        update={"topology_spread_constraints": [*template.spec.topology_spread_constraints, spread]}
    )
    return template.model_copy(update={"spec": spec})


def _cost(plan: Plan) -> float:
    """$/h of the NodeClaims a plan launches."""
    return sum(c.launch.price for c in plan.node_claims if c.launch is not None)


@RULES.rule(
    "GPU007",
    "gpu-replicas-on-one-node",
    "warning",
    summary="A Deployment or StatefulSet of several GPU replicas, or a LeaderWorkerSet of "
    "several groups with GPU pods, has no pod anti-affinity or topology spread on hostname or "
    "zone, and `plan` puts two or more replicas (groups) on one node.",
    why="Karpenter packs pending pods onto as few NodeClaims as it can: two 4-GPU replicas get "
    "one 8-GPU node. That node is one failure domain (a spot interruption, a drain or a GPU "
    "fault takes every replica down at once), and the larger type is often dearer than two "
    "smaller ones. The finding prices both plans: as written and with a hostname spread.",
    fix="Add `topologySpreadConstraints` with `topologyKey: kubernetes.io/hostname` (or "
    "`topology.kubernetes.io/zone`), `maxSkew: 1`, `whenUnsatisfiable: DoNotSchedule` and the "
    "workload's selector, or a pod anti-affinity on the same key. For a LeaderWorkerSet, "
    "select its pods by `leaderworkerset.sigs.k8s.io/name`, or set the annotation "
    "`leaderworkerset.sigs.k8s.io/exclusive-topology` to one of those keys (one group per node "
    "or zone).",
    source="Karpenter docs, scheduling (Topology Spread; Pod Affinity/Anti-Affinity); EKS Best "
    "Practices reliability (spread replicas across nodes and zones); LeaderWorkerSet docs "
    "(exclusive placement)",
)
def gpu_replicas_on_one_node(ctx: LintContext) -> Iterable[Finding]:
    workloads: list[tuple[Manifest, Replicated]] = [
        *ctx.located(Deployment),
        *ctx.located(StatefulSet),
        *ctx.located(LeaderWorkerSet),
    ]
    candidates = [
        (m, w)
        for m, w in workloads
        if w.spec.replicas >= 2 and (gpu := _gpu_pods(w)) and not _kept_apart(w, gpu)
    ]
    if not candidates:
        return
    first = ctx.plan()
    as_is = _cost(first)
    for m, w in candidates:
        replica = _replica_of(w)
        crowded = [
            (c, n)
            for c in first.node_claims
            if c.launch is not None and (n := len({r for p in c.pods if (r := replica(p))})) >= 2
        ]
        if not crowded:
            continue
        claim, count = max(crowded, key=lambda cn: cn[1])
        assert claim.launch is not None
        if _shares_gpus(ctx, claim.launch.instance_type, [p for p in claim.pods if replica(p)]):
            # Time-sliced or MIG replicas asking for more GPUs than the node physically has:
            # packing them is the point of sharing, not an accident of the scheduler.
            continue
        yield _replicas_finding(ctx, m, w, claim, count, as_is)


def _replicas_finding(  # noqa: PLR0917 - the finding's parts, computed by the caller
    ctx: LintContext,
    m: Manifest,
    w: Replicated,
    claim: PlannedNodeClaim,
    count: int,
    as_is: float,
) -> Finding:
    """GPU007's finding for `w`, whose replicas (`count` of them) share `claim`: the plan as
    written and priced again with a hostname spread."""
    assert claim.launch is not None
    spread = ctx.plan(replace={id(m): _with_hostname_spread(w)})
    with_spread = _cost(spread)
    # Pods the plan as written leaves Pending too (a NodePool limit) are no fault of the spread.
    more = _pending(spread, w) - _pending(ctx.plan(), w)
    if more > 0:
        stays = "one more of its pods stays" if more == 1 else f"{more} more of its pods stay"
        after = f"with a hostname topology spread {stays} Pending"
    elif with_spread < as_is:
        after = (
            f"with a hostname topology spread (maxSkew 1, DoNotSchedule) the plan costs "
            f"${with_spread:.2f}/h, ${as_is - with_spread:.2f}/h less"
        )
    else:
        after = (
            f"with a hostname topology spread (maxSkew 1, DoNotSchedule) the plan costs "
            f"${with_spread:.2f}/h, ${with_spread - as_is:.2f}/h more"
        )
    node = (
        f"({claim.launch.instance_type}, ${claim.launch.price:.2f}/h; the whole plan "
        f"${as_is:.2f}/h): one failure domain; {after}"
    )
    if isinstance(w, LeaderWorkerSet):
        size = w.spec.leader_worker_template.size
        return ctx.finding(
            "GPU007",
            "warning",
            m,
            ("spec", "leaderWorkerTemplate"),
            f"{w.spec.replicas} groups of {size} pod{'' if size == 1 else 's'} with GPUs and "
            "no pod anti-affinity, topology spread or exclusive topology on hostname or zone: "
            f"the plan puts GPU pods of {count} groups on one node {node}",
        )
    return ctx.finding(
        "GPU007",
        "warning",
        m,
        ("spec", "template", "spec"),
        f"{w.spec.replicas} GPU replicas with no pod anti-affinity or topology spread on "
        f"hostname or zone: the plan puts {count} of them on one node {node}",
    )


_SAMPLE_META = NamespacedObjectMeta(name="sample", namespace="default")


def _shares_gpus(ctx: LintContext, instance_type: str, pods: Sequence[Pod]) -> bool:
    """Whether `pods` ask for more GPUs than `instance_type` physically has (the node
    advertises shared GPUs: time-slicing, MIG or an overlay)."""
    try:
        physical = ctx.catalog.info(instance_type).gpu_count
    except KeyError:
        return False
    return sum(pod_gpus(p) for p in pods) > physical


def _pending(plan: Plan, workload: Replicated) -> int:
    """How many of `workload`'s pods `plan` leaves Pending."""
    owned = _owned_by(workload)
    return sum(1 for k in plan.pod_errors if k in plan.pods and owned(plan.pods[k]))


def _owned_by(workload: Replicated) -> Callable[[Pod], bool]:
    """Whether a pod of the plan is one of `workload`'s (its controller owner)."""
    kind, ns, name = workload.kind, workload.metadata.namespace, workload.metadata.name

    def owned(pod: Pod) -> bool:
        return pod.metadata.namespace == ns and any(
            r.kind == kind and r.name == name and r.controller
            for r in pod.metadata.owner_references
        )

    return owned
