"""Everything a lint rule may look at, computed once per run.

Built from the loaded manifests (with their files and lines), the catalog and the options of
`gpucap lint`: each NodePool resolved (which instance types it can launch, which of them have
NVIDIA GPUs, which AMI family and alias), which NodePools are Ready (`nodepool_readiness`:
Karpenter's readiness rules over the EC2NodeClasses as the stack resolves their AMIs), the
pods with the manifest they come from (a Deployment's pods point at the Deployment's pod
template), the DaemonSets, the GPU Operator's ClusterPolicy and device-plugin configs, and
known image sizes. `finding()` turns a rule's verdict into a `Finding` at the right `file:line`.
Called by the lint runner; rules only read it.

Lint stands on `plan`'s provider stack (`operator/plan.py` `plan_stack`, built once per run,
`LintContext.stack`): the AWS cloud provider over a simulated EC2 with the bundled AMI releases,
the NodeOverlay decorator over it, its overlays judged against the NodePools `plan` plans
(`judge_overlays`). A NodePool's instance types are what that stack answers for it, overlaid
prices and capacities included, so a rule and `plan` never disagree about which types a pool
offers or what an overlay did; the types the AWS provider answers before the decorator give
what is physical (`PoolView.physical_gpus`, GPUs that come only from an overlay).

NodePools another Karpenter serves (`apis/automode.py`): an EKS Auto Mode pool is resolved
against Auto Mode's instance types (`cloudprovider/aws/automode.py`: the catalog's supported
families with `eks.amazonaws.com/instance-*` labels), so its requirements on those keys select
types as their `karpenter.k8s.aws` counterparts do for self-managed Karpenter (an `inf, trn`
pool is no GPU pool; a family `g4` is NP009), and pods match it with Auto Mode's labels
(`PoolView.well_known`). A KWOK pool is left out of `pools`: its nodes are fake, of the KWOK
provider's own types, and none of the AWS or GPU rules apply to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from gpucap.apis.admission import admit
from gpucap.apis.automode import AUTO_MODE, AUTO_MODE_GROUP, AUTO_MODE_WELL_KNOWN_LABELS
from gpucap.apis.bottlerocket import BottlerocketUserDataError
from gpucap.apis.bottlerocket import device_plugin_config as bottlerocket_device_plugin_config
from gpucap.apis.capacityreservation import Reservations
from gpucap.apis.core import ConfigMap, Pod
from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.apis.errors import format_path
from gpucap.apis.expansion import POD_CREATORS, sample_pods
from gpucap.apis.gpu import NVIDIA_GPU, is_device_plugin, runs_feature_discovery
from gpucap.apis.gpuoperator import ClusterPolicy, DevicePluginConfig, device_plugin_configs
from gpucap.apis.labels import CAPACITY_TYPE
from gpucap.apis.nodeoverlay import NodeOverlay
from gpucap.apis.nodepool import NodePool
from gpucap.apis.quantity import Quantity
from gpucap.apis.serde import KubeObject, Manifest, Manifests, Source
from gpucap.apis.workloads import DaemonSet
from gpucap.cloudprovider.aws.amifamily.images import NODECLASS_READY, NodeClassReadiness
from gpucap.cloudprovider.aws.automode import auto_mode_instance_types
from gpucap.cloudprovider.aws.coldstart import KNOWN_IMAGE_SIZES, lookup_image_size
from gpucap.cloudprovider.aws.ec2.api import EC2API
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings, node_class_settings
from gpucap.controllers.nodepool.readiness import (
    NodePoolReadiness,
    UnmanagedNodePool,
    ready_nodepools,
)
from gpucap.controllers.provisioning.loop import Plan
from gpucap.lint.registry import Finding, Severity
from gpucap.operator.plan import (
    DEFAULT_KUBERNETES_VERSION,
    judge_overlays,
    nodeclass_readiness,
    plan_stack,
)
from gpucap.operator.plan import plan as run_plan
from gpucap.operator.plan import ready_nodepools as plan_readiness
from gpucap.operator.stack import AWSStack
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.nodeclaimtemplate import NodeClaimTemplate
from gpucap.scheduling.nodeoverlay import PoolTypes, ordered
from gpucap.scheduling.requirements import ALLOW_UNDEFINED_WELL_KNOWN, Requirements

__all__ = ["KNOWN_IMAGE_SIZES", "LintContext", "PodRef", "PoolView", "pool_types"]

# The API class of a kind (`NodePool`, `DaemonSet`, ...), for `LintContext.of_kind`.
K = TypeVar("K")

GPU_RESOURCE = NVIDIA_GPU
EC2NODECLASS_GROUP = "karpenter.k8s.aws"
# Requirement keys whose In / Exists / Gt ask for GPU instance types explicitly.
GPU_REQUIREMENT_KEYS = frozenset(
    f"{prefix}/instance-gpu-{what}"
    for prefix in (EC2NODECLASS_GROUP, AUTO_MODE_GROUP)
    for what in ("count", "name", "manufacturer", "memory")
)


@dataclass(frozen=True, slots=True)
class PodRef:
    """A pod and the manifest that makes it; `base` is the path of its pod spec there."""

    pod: Pod
    manifest: Manifest
    base: tuple[str | int, ...]  # ("spec",) for a Pod, ("spec", "template", "spec") for workloads


@dataclass(eq=False)
class PoolView:
    """A NodePool resolved on the operator stack (compared by identity).

    `instance_types` are the launchable types as `plan` sees them (the NodeOverlays applied);
    `gpu_types` those of them with `nvidia.com/gpu` capacity, which includes a type whose GPUs
    come only from an overlay (a fractional-GPU type the catalog counts as 0, such as g6f).
    `provider_gpus` holds, for each launchable type whose `nvidia.com/gpu` an overlay changed,
    the count the AWS provider gives it before the overlays (`physical_gpus`). `gpu_pool` says
    why the pool counts as a GPU pool (see `LintContext.pools`), None when it does not.
    """

    manifest: Manifest
    nodepool: NodePool
    nodeclass: Manifest | None
    template: NodeClaimTemplate
    instance_types: list[InstanceType]  # launchable: meet the pool's requirements, offered
    gpu_types: list[InstanceType] = field(default_factory=list)
    gpu_pool: str | None = None
    provider_gpus: Mapping[str, int] = field(default_factory=dict)

    @property
    def overlay_gpu_names(self) -> set[str]:
        """The launchable types whose GPUs come only from a NodeOverlay (none from AWS)."""
        return {name for name, own in self.provider_gpus.items() if own == 0}

    def physical_gpus(self, it: InstanceType) -> int:
        """The NVIDIA GPUs of `it` as AWS counts them, before a NodeOverlay's capacity (a
        time-slicing overlay's 4 on a 1-GPU type is 1); for a type whose GPUs come only from
        an overlay, the overlay's count, since AWS gives it none."""
        own = self.provider_gpus.get(it.name)
        return own if own else it.capacity.get(GPU_RESOURCE, 0)

    @property
    def name(self) -> str:
        return self.nodepool.name

    @property
    def can_launch_gpus(self) -> bool:
        """Some launchable type has NVIDIA GPUs (the pool may still not be a GPU pool)."""
        return bool(self.gpu_types)

    @property
    def is_gpu_pool(self) -> bool:
        """The pool is meant for GPUs (`gpu_pool` has the reason); the GPU rules check these."""
        return self.gpu_pool is not None

    @property
    def is_static(self) -> bool:
        """A static NodePool (`spec.replicas`): Karpenter keeps that many nodes and never
        consolidates them (only drift replaces them)."""
        return self.nodepool.is_static

    @property
    def is_auto_mode(self) -> bool:
        """The pool's nodes come from an EKS Auto Mode NodeClass (eks.amazonaws.com)."""
        return self.nodepool.spec.template.spec.node_class_ref.is_auto_mode

    @property
    def well_known(self) -> frozenset[str]:
        """The labels a pod may require of the pool without the pool declaring them: Karpenter's
        well-known labels, or EKS Auto Mode's (`eks.amazonaws.com/instance-*`, compute-type)
        for an Auto Mode pool."""
        return AUTO_MODE_WELL_KNOWN_LABELS if self.is_auto_mode else ALLOW_UNDEFINED_WELL_KNOWN

    @property
    def alias_family(self) -> str | None:
        nc = self.ec2nodeclass
        term = nc.alias if nc is not None else None
        return term.alias_family if term is not None else None

    @property
    def is_bottlerocket(self) -> bool:
        """The pool's EC2NodeClass is of the Bottlerocket family: `amiFamily: Bottlerocket`
        with any AMI selector (an id, a name, tags), or the `bottlerocket@` alias."""
        nc = self.ec2nodeclass
        return nc is not None and nc.ami_family == "Bottlerocket"

    def ami_ships_device_plugin(self, it: InstanceType) -> bool:
        """Whether the node's AMI runs the NVIDIA device plugin itself: EKS Auto Mode, or a
        Bottlerocket node class on a type with catalog NVIDIA GPUs. With the alias Karpenter
        picks the `aws-k8s-<k8s>-nvidia` variant for those
        (`cloudprovider/aws/amifamily/resolver.py`);
        with an AMI chosen by id, name or tags the user picked it, and a Bottlerocket AMI meant
        for a GPU type is that variant (the standard one has no NVIDIA driver at all, which no
        device plugin would fix). A type whose GPUs come only from an overlay gets the
        standard variant from the alias, without the plugin."""
        if self.is_auto_mode:
            return True
        return self.is_bottlerocket and self.provider_gpus.get(it.name) != 0

    @property
    def capacity_types(self) -> set[str]:
        req = self.template.requirements.get(CAPACITY_TYPE)
        offered = {
            o.capacity_type for it in self.instance_types for o in it.offerings if o.available
        }
        return {ct for ct in offered if req is None or req.has(ct)}

    @property
    def ec2nodeclass(self) -> EC2NodeClass | None:
        obj = self.nodeclass.obj if self.nodeclass is not None else None
        return obj if isinstance(obj, EC2NodeClass) else None


@dataclass
class LintContext:
    """The whole input, resolved (see the module docstring)."""

    manifests: Sequence[Manifest]
    catalog: Catalog
    kubernetes_version: str = "1.36"
    image_sizes: Mapping[str, tuple[int, int]] = field(
        default_factory=lambda: dict(KNOWN_IMAGE_SIZES)
    )
    # `--ami-previous vYYYYMMDD`: the release the pinned aliases are compared with (AMI003).
    previous_ami_release: str | None = None
    # `--aws`: real AWS (SSM) answers which AMI releases exist (AMI002); None = bundled data.
    ec2api: EC2API | None = None
    # `cluster` from the lint configuration: components installed outside the input.
    cluster: frozenset[str] = frozenset()
    # `--reservations FILE`: the account's capacity reservations; None when not given (the
    # account's reservations are unknown, RES005; the stack then has none).
    reservations: Reservations | None = None
    _keys_cache: dict[int, frozenset[str]] = field(default_factory=dict, repr=False)
    # Per-run memo for rules (e.g. which pools a pod can land on): rules ask the same questions
    # about the same pods many times.
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)
    # (id of a type list, requirements) -> (that list, held so the id stays its, the launchable)
    _launchable: dict[
        tuple[int, Requirements], tuple[Sequence[InstanceType], list[InstanceType]]
    ] = field(default_factory=dict, repr=False)
    # Whether the stack resolved AMIs for `kubernetes_version` (False: not a version the data
    # can be asked about; every EC2NodeClass then counts as Ready).
    _versioned: bool = field(default=True, repr=False)
    _classes: dict[str, NodeClassReadiness] | None = field(default=None, repr=False)
    # The NodeOverlays the stack's overlay pass rejected (same-weight conflicts), by name.
    _rejected: frozenset[str] = field(default=frozenset(), repr=False)

    @property
    def known_reservations(self) -> Reservations:
        """The reservations given (none without `--reservations`)."""
        return self.reservations if self.reservations is not None else Reservations()

    # ---- objects by kind ------------------------------------------------------------------
    def of_kind(self, cls: type[K]) -> list[K]:
        """The objects of one kind, given by its API class (`of_kind(NodePool)`), in input
        order (each kind loads as its own class, `apis/serde.KINDS`)."""
        return [m.obj for m in self.manifests if isinstance(m.obj, cls)]

    def located(self, cls: type[K]) -> list[tuple[Manifest, K]]:
        """`of_kind` with each object's manifest, which places the findings about it."""
        return [(m, m.obj) for m in self.manifests if isinstance(m.obj, cls)]

    @cached_property
    def nodeclasses(self) -> dict[str, Manifest]:
        return {nc.metadata.name: m for m, nc in self.located(EC2NodeClass)}

    @cached_property
    def daemonsets(self) -> list[tuple[Manifest, DaemonSet]]:
        return self.located(DaemonSet)

    @cached_property
    def cluster_policies(self) -> list[tuple[Manifest, ClusterPolicy]]:
        return self.located(ClusterPolicy)

    @cached_property
    def overlays(self) -> list[NodeOverlay]:
        return self.of_kind(NodeOverlay)

    @cached_property
    def device_plugin_configs(self) -> list[tuple[Manifest, str, DevicePluginConfig]]:
        """(ConfigMap manifest, data key, config) for every device-plugin config in the input."""
        out = []
        for m, cm in self.located(ConfigMap):
            for key, cfg in device_plugin_configs(cm).items():
                out.append((m, key, cfg))
        return out

    @cached_property
    def device_plugin_daemonsets(self) -> list[tuple[Manifest, DaemonSet]]:
        """DaemonSets that run the NVIDIA device plugin (by image or name); GPU Feature
        Discovery, shipped in the same image, is not the plugin (`feature_discovery_daemonsets`)."""
        out = []
        for m, ds in self.daemonsets:
            containers = [
                c for c in ds.spec.template.spec.containers if not runs_feature_discovery(c)
            ]
            if not containers:
                continue
            images = [c.image or "" for c in containers]
            if is_device_plugin(ds.metadata.name, images):
                out.append((m, ds))
        return out

    @cached_property
    def feature_discovery_daemonsets(self) -> list[tuple[Manifest, DaemonSet]]:
        """DaemonSets whose every container runs GPU Feature Discovery (it labels GPU nodes
        `nvidia.com/gpu.product`, ...; it advertises no `nvidia.com/gpu`)."""
        out = []
        for m, ds in self.daemonsets:
            containers = ds.spec.template.spec.containers
            if containers and all(runs_feature_discovery(c) for c in containers):
                out.append((m, ds))
        return out

    @property
    def has_device_plugin(self) -> bool:
        """A device plugin will run: its DaemonSet, or a ClusterPolicy with it enabled."""
        if self.device_plugin_daemonsets:
            return True
        return any(p.spec.device_plugin.enabled for _, p in self.cluster_policies)

    @cached_property
    def pods(self) -> list[PodRef]:
        out: list[PodRef] = []
        for m in self.manifests:
            obj = m.obj
            if isinstance(obj, Pod):
                # As the API server stores it (`apis/admission.py`), as workloads' pods are.
                out.append(PodRef(admit(obj), m, ("spec",)))
            elif isinstance(obj, POD_CREATORS):
                # One pod per template (a RayCluster's head and each worker group, ...).
                out += [PodRef(admit(p), m, g.path) for g, p in sample_pods(obj)]
        return out

    # ---- the operator stack ------------------------------------------------------------------
    @cached_property
    def _objects(self) -> Manifests:
        return Manifests(tuple(self.manifests), self.known_reservations)

    def plan(self, replace: Mapping[int, KubeObject] | None = None) -> Plan:
        """`gpucap plan` over this input (`operator/plan.py` `plan`), or over it with some
        objects replaced (`replace`: `id(manifest)` -> the object in its place), for rules
        that compare what `plan` does with the input as written and with a fix (GPU007). The
        plan of the input as written is made once per run."""
        if not replace:
            cached: Plan | None = self.memo.get(("plan",))
            if cached is None:
                cached = self.memo[("plan",)] = self._plan(self._objects)
            return cached
        items = tuple(
            dataclasses.replace(m, obj=replace[id(m)]) if id(m) in replace else m
            for m in self.manifests
        )
        return self._plan(Manifests(items, self.known_reservations))

    def _plan(self, objects: Manifests) -> Plan:
        try:
            return run_plan(objects, self.catalog, kubernetes_version=self.kubernetes_version)
        except ValueError:  # not a Kubernetes version the data can be asked about
            return run_plan(objects, self.catalog, kubernetes_version=DEFAULT_KUBERNETES_VERSION)

    @cached_property
    def stack(self) -> AWSStack:
        """`plan`'s provider stack over this input (`operator/plan.py` `plan_stack`), built
        once per run, its NodeOverlays judged against the NodePools `plan` plans (its Ready
        ones, `judge_overlays`). An EC2NodeClass whose capacity settings cannot be read is left
        out of it, so its NodePools get the default class's types (the loader rejects such a
        class first; this only keeps lint from failing on one)."""
        objects = Manifests(
            tuple(m for m in self.manifests if _settings_readable(m)), self.known_reservations
        )
        try:
            stack = plan_stack(objects, self.catalog, kubernetes_version=self.kubernetes_version)
        except ValueError:  # not a Kubernetes version the data can be asked about
            self._versioned = False
            stack = plan_stack(objects, self.catalog, kubernetes_version=DEFAULT_KUBERNETES_VERSION)
        if stack.cloud.overlays:
            self._judge_overlays(stack)
        return stack

    def _judge_overlays(self, stack: AWSStack) -> None:
        """The NodeOverlay verdict `plan` reaches (`judge_overlays`, against its Ready
        NodePools), whose rejected overlays lint keeps, with the decorator's store holding every
        NodePool lint resolves when that costs no other verdict. A pool the decorator did not
        judge is matched on its own when asked, so lint first judges all its pools in one pass
        (which shares the matching between pools alike: a thousand not Ready pools would
        otherwise be a thousand matchings of the catalog). No conflict among all pools means
        none among the Ready ones, so that pass is `plan`'s verdict; with conflicts, `plan`'s
        pass decides, and the wide pass is kept only if it rejects the same overlays."""
        classes = self._classes_on(stack)
        ready = plan_readiness(self._objects, stack.cloud, [], classes=classes).ready
        judged = {id(np) for np in ready}
        others = [
            np
            for np in self.of_kind(NodePool)
            if id(np) not in judged and np.spec.template.spec.node_class_ref.served_by is None
        ]
        if others and not stack.cloud.evaluate([*ready, *others]).conflicts:
            return
        evaluation = judge_overlays(stack.cloud, ready, [])
        assert evaluation is not None  # the stack has overlays
        self._rejected = frozenset(c.overlay for c in evaluation.conflicts)
        if others:
            wider = stack.cloud.evaluate([*ready, *others])
            if frozenset(c.overlay for c in wider.conflicts) != self._rejected:
                stack.cloud.evaluate(ready)  # back to plan's verdict; the others one by one

    def _classes_on(self, stack: AWSStack) -> dict[str, NodeClassReadiness]:
        """Each EC2NodeClass's readiness as `stack` resolves it (once per run)."""
        if self._classes is None:
            if self._versioned:
                self._classes = nodeclass_readiness(self._objects, stack.cloud)
            else:
                names = (nc.metadata.name for nc in self.of_kind(EC2NodeClass))
                self._classes = dict.fromkeys(names, NODECLASS_READY)
        return self._classes

    # ---- readiness ---------------------------------------------------------------------------
    @cached_property
    def nodeclass_readiness(self) -> dict[str, NodeClassReadiness]:
        """Each EC2NodeClass's readiness by name, as `plan` and `simulate` see it: its alias
        resolved by the stack's AWS provider over the bundled releases of the cluster's
        Kubernetes version (`alias_readiness`; a class with its own AMIs counts as Ready, and
        every class does when the version is not one the data knows)."""
        return self._classes_on(self.stack)

    @cached_property
    def nodepool_readiness(self) -> NodePoolReadiness:
        """Which NodePools Karpenter would use, and why not the others (`ready_nodepools`,
        Karpenter's policy: a missing EC2NodeClass makes its NodePools not Ready)."""
        nodepools = self.of_kind(NodePool)
        return ready_nodepools(nodepools, self.nodeclass_readiness, missing_class="skip")

    # ---- NodePools resolved -----------------------------------------------------------------
    def types_for(self, pool: PoolView) -> Sequence[InstanceType]:
        """The instance types `pool` chooses from: EKS Auto Mode's for an Auto Mode pool, else
        what the operator stack answers for its NodePool (its EC2NodeClass's types, or the
        default class's when the class is missing, as `plan` plans it; NodeOverlays applied).
        Kept for the run, so rules may memoise by the object."""
        if pool.is_auto_mode:
            return self._auto_mode_types()
        return self.stack.cloud.get_instance_types(pool.nodepool)

    def _auto_mode_types(self) -> Sequence[InstanceType]:
        key = ("auto_mode_types",)
        cached: Sequence[InstanceType] | None = self.memo.get(key)
        if cached is None:
            cached = self.memo[key] = auto_mode_instance_types(self.catalog)
        return cached

    def settings_for(self, nodeclass: Manifest | None) -> NodeClassSettings:
        if nodeclass is None:
            return NodeClassSettings()
        try:
            return node_class_settings(nodeclass.obj)  # type: ignore[arg-type]
        except ValueError:
            return NodeClassSettings()

    @cached_property
    def pools(self) -> list[PoolView]:
        """Every NodePool resolved, with its GPU types and whether it is a GPU pool.

        A pool is a GPU pool when it can launch a type with NVIDIA GPUs and (a) every type it
        can launch has them, or (b) it asks for them explicitly: a requirement that selects GPU
        types (`instance-gpu-count|name|manufacturer|memory` In / Exists / Gt), a taint or a
        template label whose key starts with `nvidia.com/gpu`, or an `nvidia.com/gpu` limit, or
        (c) a pod in the input that requests `nvidia.com/gpu` can get a node from it. Other
        pools that merely do not exclude GPU families (a "large instances" pool) are not: the
        AWS provider launches a GPU type for a GPU-less NodeClaim only when no other type is
        left (its exotic-instance filter, `cloudprovider/aws/instance/launch.py`), and Karpenter
        then initializes the node without waiting for `nvidia.com/gpu`, which the NodeClaim did not
        request.
        """
        out = []
        for m, np in self.located(NodePool):
            ref = np.spec.template.spec.node_class_ref
            if ref.is_kwok:
                continue  # the KWOK provider's fake nodes (see the module docstring)
            if ref.is_auto_mode:
                nc = None
                template = UnmanagedNodePool(np, AUTO_MODE).template
                types = self._auto_mode_types()
                provider_types = types
            else:
                nc = self.nodeclasses.get(ref.name)
                template = NodeClaimTemplate.from_nodepool(np)
                types = self.stack.cloud.get_instance_types(np)
                provider_types = self.stack.aws.get_instance_types(np)
            reqs = template.requirements
            # Only keys the instance types define can rule one out (intersection ignores the
            # rest), so checking the reduced set gives the same answer and shares the memo
            # across pools that differ only in their own labels. Overlays change no
            # requirement or availability, so the provider's list decides for the overlaid one.
            keys = self._type_keys(provider_types)
            reduced = Requirements({k: r for k, r in reqs.items() if k in keys})
            memo_key = (id(types), reduced)
            found = self._launchable.get(memo_key)
            if found is None:
                found = self._launchable[memo_key] = (
                    types,
                    [
                        it
                        for it in types
                        if it.is_compatible(reduced) and it.has_available_offering(reqs)
                    ],
                )
            launchable = found[1]
            gpu_types = [it for it in launchable if it.capacity.get(GPU_RESOURCE, 0) > 0]
            own: Mapping[str, int] = {}
            if types is not provider_types:  # NodeOverlays changed some type of this pool
                own_key = ("provider_gpus", id(types), id(launchable))
                own = self.memo.get(own_key, own)
                if own_key not in self.memo:
                    own = self.memo[own_key] = _provider_gpus(types, provider_types, launchable)
            out.append(PoolView(m, np, nc, template, launchable, gpu_types, provider_gpus=own))
        gpu_pods = self._gpu_pods()
        for pool in out:
            pool.gpu_pool = _gpu_pool_reason(pool, gpu_pods)
        return out

    @cached_property
    def accepted_overlays(self) -> list[NodeOverlay]:
        """The NodeOverlays Karpenter accepts, in application order: all but those the stack's
        overlay pass rejected for a same-weight conflict (`judge_overlays`)."""
        _ = self.stack  # the pass runs when the stack is built
        return [o for o in ordered(self.overlays) if o.metadata.name not in self._rejected]

    def _gpu_pods(self) -> list[Pod]:
        return [ref.pod for ref in self.pods if pod_gpus(ref.pod) > 0]

    @cached_property
    def bottlerocket_configs(self) -> dict[str, DevicePluginConfig | BottlerocketUserDataError]:
        """Bottlerocket EC2NodeClasses (`amiFamily: Bottlerocket` or alias `bottlerocket@...`)
        by name: the NVIDIA device-plugin config their userData sets, or why the userData
        cannot be read."""
        out: dict[str, DevicePluginConfig | BottlerocketUserDataError] = {}
        for name, m in self.nodeclasses.items():
            nc = m.obj
            if not isinstance(nc, EC2NodeClass) or nc.ami_family != "Bottlerocket":
                continue
            try:
                out[name] = bottlerocket_device_plugin_config(nc.spec.user_data)
            except BottlerocketUserDataError as err:
                out[name] = err
        return out

    def _type_keys(self, types: Sequence[InstanceType]) -> frozenset[str]:
        key = id(types)
        cached = self._keys_cache.get(key)
        if cached is None:
            cached = frozenset(k for it in types for k in it.requirements)
            self._keys_cache[key] = cached
        return cached

    def pools_for_pod(self, pod: Pod) -> list[PoolView]:
        """Pools whose requirements a pod's node selector and required affinity can meet
        (taints not considered)."""
        from gpucap.scheduling.poddata import pod_requirements  # noqa: PLC0415

        reqs = pod_requirements(pod, strict=True)
        # The answer depends on the requirements alone: pods that share them (the replicas of
        # one workload, or many workloads alike) share one pass over the pools.
        key = ("pools_for_pod", reqs)
        cached: list[PoolView] | None = self.memo.get(key)
        if cached is not None:
            return cached
        result = [
            p
            for p in self.pools
            if p.template.requirements.is_compatible(reqs, p.well_known)
            and any(it.is_compatible(reqs) for it in p.instance_types)
        ]
        self.memo[key] = result
        return result

    # ---- findings -----------------------------------------------------------------------------
    def finding(
        self,
        rule: str,
        severity: Severity,
        manifest: Manifest | None,
        path: Sequence[str | int],
        message: str,
    ) -> Finding:
        """A finding at the line of `path` in `manifest` (nearest ancestor that has a line)."""
        if manifest is None:
            return Finding(rule, severity, message)
        source: Source = manifest.source
        return Finding(
            rule,
            severity,
            message,
            file=source.file,
            line=source.line_of(tuple(path)),
            object_ref=manifest.ref,
            path=format_path(path),
        )


def _settings_readable(m: Manifest) -> bool:
    """Whether `m` is not an EC2NodeClass, or one whose capacity settings can be read."""
    if not isinstance(m.obj, EC2NodeClass):
        return True
    try:
        node_class_settings(m.obj)
    except ValueError:
        return False
    return True


def _provider_gpus(
    overlaid: Sequence[InstanceType],
    provider: Sequence[InstanceType],
    launchable: Sequence[InstanceType],
) -> dict[str, int]:
    """For each launchable type whose `nvidia.com/gpu` capacity the NodeOverlays changed, the
    count the provider gave it (the decorator keeps the provider's order, one type for one)."""
    wanted = {id(it) for it in launchable}
    out = {}
    for new, old in zip(overlaid, provider, strict=True):
        if new is old or id(new) not in wanted:
            continue
        before = old.capacity.get(GPU_RESOURCE, 0)
        if new.capacity.get(GPU_RESOURCE, 0) != before:
            out[new.name] = before
    return out


def pool_types(pool: PoolView) -> PoolTypes:
    """A pool as the overlay matcher sees it: name, template labels, launchable types."""
    return PoolTypes(pool.name, pool.nodepool.spec.template.metadata.labels, pool.instance_types)


def _gpu_pool_reason(pool: PoolView, gpu_pods: Sequence[Pod]) -> str | None:
    """Why `pool` is a GPU pool, or None (the rules are in `LintContext.pools`)."""
    if not pool.gpu_types:
        return None
    if len(pool.gpu_types) == len(pool.instance_types):
        return "every instance type it can launch has NVIDIA GPUs"
    for req in pool.nodepool.spec.template.spec.requirements:
        if req.key in GPU_REQUIREMENT_KEYS and req.operator in ("In", "Exists", "Gt"):
            return f"its requirement {req.key} {req.operator} selects GPU instance types"
    for taint in (*pool.template.taints, *pool.template.startup_taints):
        if taint.key.startswith(GPU_RESOURCE):
            return f"it taints its nodes {taint.key}"
    for label in pool.template.labels:
        if label.startswith(GPU_RESOURCE):
            return f"it labels its nodes {label}"
    if GPU_RESOURCE in (pool.nodepool.spec.limits or {}):
        return f"it limits {GPU_RESOURCE}"
    from gpucap.scheduling.poddata import pod_requirements  # noqa: PLC0415
    from gpucap.scheduling.taints import untolerated  # noqa: PLC0415

    for pod in gpu_pods:
        reqs = pod_requirements(pod, strict=True)
        if (
            untolerated(pool.template.taints, pod.spec.tolerations) is None
            and pool.template.requirements.is_compatible(reqs, pool.well_known)
            and any(it.is_compatible(reqs) for it in pool.gpu_types)
        ):
            return f"pod {pod.key} requests {GPU_RESOURCE} and can get a node from it"
    return None


def pod_gpus(pod: Pod, resource: str = GPU_RESOURCE) -> int:
    """GPUs a pod requests (containers summed; init containers' peak)."""
    total = sum(
        (
            c.resources.limits.get(resource) or c.resources.requests.get(resource) or Quantity(0)
        ).value()
        for c in pod.spec.containers
    )
    init = max(
        (
            (c.resources.limits.get(resource) or Quantity(0)).value()
            for c in pod.spec.init_containers
        ),
        default=0,
    )
    return max(total, init)


def image_size(ctx: LintContext, image: str) -> tuple[int, int] | None:
    """Known (compressed, uncompressed) size of an image, matched without its tag."""
    return lookup_image_size(image, ctx.image_sizes)
