"""What the simulator's law tests share (tests/sim/test_laws.py and the stories built on it):
the `Story` (a scenario built in memory and run), the random-scenario strategy `stories`, the
builders of its NodePools, EC2NodeClasses and Deployments, and `Laws`, the oracle that checks a
run's event log against the six laws `test_laws.py` states. Not a test module: the other
tests import it instead of importing a test module.
"""

from __future__ import annotations

import copy
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from gpucap.apis.admission import admitted_tolerations
from gpucap.apis.core import PodSpec, Taint, Toleration
from gpucap.apis.duration import parse_go_duration
from gpucap.cloudprovider.aws.instance.provider import NODECLAIM_TAG
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog, load_catalog
from gpucap.runtime.clock import EPOCH
from gpucap.scheduling.taints import untolerated
from gpucap.sim.recorder import Event
from gpucap.sim.scenario import load_scenario
from gpucap.sim.world import SimulationResult, World

EXAMPLES = int(os.environ.get("GPUCAP_LAW_EXAMPLES", "12"))
GRACEFUL = ("Empty", "Drifted", "Underutilized")
# Karpenter's podevents dedupe: a lastPodEventTime written less than 10 s ago is kept.
DEDUPE_S = 10.0
GPU_TYPES = ("g5.xlarge", "g5.2xlarge", "g6.xlarge", "g6.2xlarge")
CPU_TYPES = ("m5.large", "m5.xlarge", "c6i.large", "c6i.xlarge")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CPU_TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
DISRUPTED_TAINT = Taint(key="karpenter.sh/disrupted", effect="NoSchedule")
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


@cache
def _catalog(region: str = "us-east-1") -> Catalog:
    """The region's catalog cut to the eight types the templates name. Every NodePool here
    allows only instance types from that list (`node.kubernetes.io/instance-type In`), so the
    scheduler's choices are those it makes over the whole catalog; the cut only spares each
    consolidation simulation filtering ~900 types it would discard (a 24 h run with
    WhenEmptyOrUnderutilized takes ~20 s over the whole catalog, <1 s over these)."""
    full = load_catalog(region)
    keep = set(GPU_TYPES + CPU_TYPES)
    return Catalog(
        region=full.region,
        zones=full.zones,
        infos=tuple(i for i in full.infos if i.name in keep),
        pricing={name: p for name, p in full.pricing.items() if name in keep},
    )


# ---- a scenario as data ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Story:
    """One random scenario: the Scenario document and the manifests it loads (one file)."""

    scenario: dict[str, Any]
    manifests: tuple[dict[str, Any], ...]

    def to_yaml(self) -> str:
        docs = [self.scenario, *self.manifests]
        return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=None, width=100)

    @classmethod
    def from_yaml(cls, text: str) -> Story:
        scenario, *manifests = yaml.safe_load_all(text)
        return cls(scenario, tuple(manifests))

    def run(self) -> tuple[World, SimulationResult]:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "objects.yaml").write_text(
                yaml.safe_dump_all(list(self.manifests), sort_keys=False)
            )
            scenario = {**self.scenario}
            scenario["spec"] = {**scenario["spec"], "manifests": ["objects.yaml"]}
            (root / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
            loaded = load_scenario(str(root / "scenario.yaml"), _catalog)
        world = World(loaded, _catalog())
        return world, world.run()


def _nodepool(
    name: str,
    gpu: bool,
    *,
    types: Sequence[str],
    capacity: Sequence[str],
    tainted: bool,
    policy: str,
    after: str,
    budgets: list[dict[str, Any]] | None,
    limit: int | None,
    expire: str,
) -> dict[str, Any]:
    disruption: dict[str, Any] = {"consolidationPolicy": policy, "consolidateAfter": after}
    if budgets is not None:
        disruption["budgets"] = budgets
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [*capacity]},
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": [*types],
                    },
                ],
                "expireAfter": expire,
                **({"taints": [GPU_TAINT if gpu else CPU_TAINT]} if tainted else {}),
            }
        },
        "disruption": disruption,
    }
    if limit is not None:
        spec["limits"] = {"nvidia.com/gpu": str(limit)} if gpu else {"cpu": str(limit)}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def _nodeclass(alias: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-sim",
            "amiSelectorTerms": [{"alias": alias}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "sim"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "sim"}}],
        },
    }


DEVICE_PLUGIN: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
        "template": {
            "metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
            "spec": {
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
                                            "operator": "In",
                                            "values": ["nvidia"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                },
                "containers": [
                    {
                        "name": "nvidia-device-plugin-ctr",
                        "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                        "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                    }
                ],
            },
        },
    },
}


def _deployment(
    name: str,
    *,
    gpu: bool,
    cpu: str,
    replicas: int,
    tolerations: list[dict[str, Any]],
    pinned: bool,
) -> dict[str, Any]:
    annotations = {"gpucap.dev/startup-seconds": "30"}
    if pinned:
        annotations[DO_NOT_DISRUPT] = "true"
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if gpu:
        resources["limits"] = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {
                    "tolerations": tolerations,
                    "containers": [{"name": "main", "image": "nginx:1.27", "resources": resources}],
                },
            },
        },
    }


# ---- the strategy ---------------------------------------------------------------------------------
AFTERS = ("0s", "30s", "5m", "20m", "1h", "Never")
EXPIRES = ("720h", "1h", "2h", "3h")


@st.composite
def _pool(draw: st.DrawFn, name: str, gpu: bool) -> dict[str, Any]:
    catalog_types = GPU_TYPES if gpu else CPU_TYPES
    types = draw(st.lists(st.sampled_from(catalog_types), min_size=1, max_size=2, unique=True))
    capacity = draw(st.sampled_from([["spot"], ["on-demand"], ["spot", "on-demand"]]))
    budget_nodes = draw(st.sampled_from([None, "1", "10%", "0", "2", "50%"]))
    budgets: list[dict[str, Any]] | None = None
    if budget_nodes is not None:
        budgets = [{"nodes": budget_nodes}]
        reason = draw(st.sampled_from([None, "Empty", "Drifted", "Underutilized"]))
        if reason is not None:
            budgets[0]["reasons"] = [reason]
            if draw(st.booleans()):
                budgets.append({"nodes": draw(st.sampled_from(["1", "0", "10%"]))})
    limit = draw(st.one_of(st.none(), st.integers(1, 6) if gpu else st.integers(2, 16)))
    return _nodepool(
        name,
        gpu,
        types=sorted(types),
        capacity=capacity,
        tainted=draw(st.booleans()) if not gpu else draw(st.sampled_from([True, True, False])),
        policy=draw(st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"])),
        after=draw(st.sampled_from(AFTERS)),
        budgets=budgets,
        limit=limit,
        expire=draw(st.sampled_from(EXPIRES)),
    )


@st.composite
def stories(draw: st.DrawFn) -> Story:
    kinds = draw(st.sampled_from([("gpu",), ("cpu",), ("gpu", "cpu"), ("gpu", "gpu2")]))
    pools = [draw(_pool(name, name.startswith("gpu"))) for name in kinds]
    alias = draw(st.sampled_from(["al2023@v20260827", "al2023@latest"]))
    plugin = draw(st.sampled_from(["daemonset", "addon", "addon-sliced", "none"]))
    hours = draw(st.integers(2, 30))
    deployments: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 3))):
        gpu = draw(st.booleans())
        tolerations = []
        if draw(st.sampled_from([True, True, False])):
            taint = GPU_TAINT if gpu else CPU_TAINT
            tolerations.append({"key": taint["key"], "operator": "Exists", "effect": "NoSchedule"})
        deployments.append(
            _deployment(
                f"d{i}",
                gpu=gpu,
                cpu=draw(st.sampled_from(["250m", "1", "3"])),
                replicas=draw(st.integers(1, 3)),
                tolerations=tolerations,
                pinned=draw(st.integers(0, 3)) == 0,
            )
        )
    events: list[dict[str, Any]] = []
    all_types = sorted(
        {t for p in pools for t in p["spec"]["template"]["spec"]["requirements"][1]["values"]}
    )
    for _ in range(draw(st.integers(2, 8))):
        at = f"{draw(st.integers(1, hours * 60 - 1))}m"
        kind = draw(
            st.sampled_from(
                ["scale", "scale", "scale", "capacity", "interrupt", "amiRelease", "drift"]
            )
        )
        if kind == "scale":
            d = draw(st.sampled_from(deployments))["metadata"]["name"]
            replicas = draw(st.sampled_from([0, 0, 1, 2, 3, 5]))  # scale-downs empty nodes
            events.append(
                {
                    "at": at,
                    "scale": {
                        "kind": "Deployment",
                        "name": d,
                        "namespace": "default",
                        "replicas": replicas,
                    },
                }
            )
        elif kind == "capacity":
            window = {
                "instanceType": draw(st.sampled_from(all_types)),
                "available": False,
                "for": f"{draw(st.integers(10, 120))}m",
            }
            ct = draw(st.sampled_from([None, "spot", "on-demand"]))
            if ct is not None:
                window["capacityType"] = ct
            events.append({"at": at, "capacity": window})
        elif kind == "interrupt":
            events.append({"at": at, "interrupt": {"nodeClaim": f"{kinds[0]}-1"}})
        elif kind == "drift":
            # The NodePool's template gains a label: its hash changes, its nodes drift.
            pool = copy.deepcopy(draw(st.sampled_from(pools)))
            pool["spec"]["template"]["metadata"] = {"labels": {"revision": at}}
            events.append({"at": at, "apply": {"manifest": pool}})
        else:
            events.append(
                {"at": at, "amiRelease": {"kubernetesVersion": "1.36", "version": "v20261001"}}
            )
    spec: dict[str, Any] = {"duration": f"{hours}h", "events": events}
    manifests: list[dict[str, Any]] = [_nodeclass(alias), *pools]
    if plugin == "daemonset":
        manifests.append(DEVICE_PLUGIN)
    elif plugin == "addon":
        spec["addons"] = [{"name": "nvidia-device-plugin"}]
    elif plugin == "addon-sliced":
        spec["addons"] = [{"name": "nvidia-device-plugin", "timeSlicing": {"replicas": 2}}]
    manifests.extend(deployments)
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "law"},
        "spec": spec,
    }
    return Story(scenario, tuple(manifests))


# ---- the oracles ------------------------------------------------------------------------------------
def allowance(budgets: list[dict[str, Any]] | None, reason: str, total: int) -> float:
    """Karpenter's `GetAllowedDisruptionsByReason` for the budgets generated here (no schedules):
    the minimum over the budgets that apply to `reason` (no `reasons`: every reason) of `nodes`,
    a count taken literally or a percentage of `total` rounded up; no budget applying: no limit.
    An omitted `budgets` is the API default `[{nodes: 10%}]`."""
    allowed = math.inf
    for budget in [{"nodes": "10%"}] if budgets is None else budgets:
        if "reasons" in budget and reason not in budget["reasons"]:
            continue
        nodes = str(budget["nodes"])
        value = math.ceil(int(nodes[:-1]) * total / 100) if nodes.endswith("%") else int(nodes)
        allowed = min(allowed, value)
    return allowed


def _seconds(value: str) -> float | None:
    return None if value == "Never" else parse_go_duration(value)


@dataclass
class _Pool:
    budgets: list[dict[str, Any]] | None
    after: float | None
    limits: dict[str, int]
    taints: list[Taint]


@dataclass
class Laws:
    """Walks a run's event log once, in order, and collects every broken law."""

    story: Story
    pools: dict[str, _Pool] = field(default_factory=dict)
    tolerations: dict[str, list[Toleration]] = field(default_factory=dict)  # deployment ->
    broken: list[str] = field(default_factory=list)
    terminating: dict[str, float] = field(default_factory=dict)  # claim -> instance terminated

    def __post_init__(self) -> None:
        for doc in self.story.manifests:
            if doc["kind"] == "NodePool":
                spec = doc["spec"]
                limits = {
                    k: int(v) * (1000 if k == "cpu" else 1)
                    for k, v in spec.get("limits", {}).items()
                }
                self.pools[doc["metadata"]["name"]] = _Pool(
                    spec["disruption"].get("budgets"),
                    _seconds(spec["disruption"]["consolidateAfter"]),
                    limits,
                    [Taint(**t) for t in spec["template"]["spec"].get("taints", [])],
                )
            elif doc["kind"] == "Deployment":
                # As the API server stores its pods (apis/admission.py): a GPU pod also
                # tolerates nvidia.com/gpu:NoSchedule.
                spec = PodSpec.model_validate(doc["spec"]["template"]["spec"])
                self.tolerations[doc["metadata"]["name"]] = [
                    *(Toleration(**t) for t in doc["spec"]["template"]["spec"]["tolerations"]),
                    *admitted_tolerations(spec),
                ]

    def check(self, events: Sequence[Event], terminating: dict[str, float]) -> list[str]:
        """`terminating`: when each NodeClaim's instance was terminated (Karpenter then sets
        `InstanceTerminating` and stops counting the node in budgets); no event says it."""
        catalog = {it.name: it for it in _catalog().instance_types(None)}
        self.terminating = terminating
        pool_of: dict[str, str] = {}  # NodeClaim -> NodePool
        claim_of_node: dict[str, str] = {}
        initialized: dict[str, float] = {}  # claim -> when (until deleted)
        launched: dict[str, dict[str, int]] = {}  # claim -> physical capacity (until deleted)
        deciding: dict[str, str] = {}  # claim -> reason of its open DisruptionDecision
        held: dict[str, str] = {}  # claim -> the DisruptionBlocked message in force
        last_pod_event: dict[str, float] = {}  # claim -> lastPodEventTime, deduplicated
        pod_on: dict[str, str] = {}  # pod -> claim it is bound to

        def pod_event(claim: str | None, t: float) -> None:
            if claim is None:
                return
            last = last_pod_event.get(claim)
            if last is None or t - last >= DEDUPE_S:
                last_pod_event[claim] = t

        for i, e in enumerate(events):
            claim = e.get("nodeClaim")
            if e.type == "NodeClaimCreated":
                pool_of[claim] = e.get("nodePool")
            elif e.type == "NodeRegistered":
                claim_of_node[e.get("node")] = claim
            elif e.type == "NodeInitialized":
                initialized[claim] = e.t
                advertised = sum((e.get("gpusAdvertised") or {}).values())
                if claim in launched and advertised < launched[claim]["nvidia.com/gpu"]:
                    # Initialized before its GPUs were advertised (a NodeClaim that asked for
                    # no GPU): Karpenter counts an initialized node by the Node's capacity
                    # (state/statenode.go `Capacity`), without the GPUs, and may launch past
                    # the limit. When they appear is not in the log: stop counting them.
                    launched[claim] = {**launched[claim], "nvidia.com/gpu": 0}
            elif e.type == "NodeClaimLaunched":
                it = catalog[e.get("instanceType")]
                launched[claim] = {"nvidia.com/gpu": e.get("gpus"), "cpu": it.capacity["cpu"]}
            elif e.type in ("NodeClaimDeleted", "NodeTerminated"):
                initialized.pop(claim, None)
                launched.pop(claim, None)
                deciding.pop(claim, None)
                held.pop(claim, None)
            elif e.type == "DisruptionBlocked" and claim is not None:
                self._blocked_on_change(e, held)
            elif e.type == "DisruptionUnblocked" and claim is not None:
                held.pop(claim, None)
            elif e.type == "DisruptionAbandoned":
                deciding.pop(claim, None)
            elif e.type == "DisruptionDecision":
                self._not_held(e, held)
                deciding[claim] = e.get("reason")
                if e.get("reason") in GRACEFUL:
                    self._budget(e, pool_of[claim], initialized, deciding, pool_of)
                if e.get("reason") in ("Empty", "Underutilized"):
                    self._consolidate_after(e, pool_of[claim], initialized, last_pod_event)
            elif e.type == "PodBound":
                self._tolerated(e, pool_of.get(claim), claim in deciding)
                pod_on[e.get("pod")] = claim
                pod_event(claim, e.t)
            elif e.type == "PodEvicted":
                pod_event(claim_of_node.get(e.get("node")), e.t)
                pod_on.pop(e.get("pod"), None)
            elif e.type == "PodDeleted":
                pod_event(pod_on.pop(e.get("pod"), None), e.t)
            if i + 1 == len(events) or events[i + 1].t > e.t:
                # Limits hold between instants: within one, a replacement is launched just
                # before its candidates are marked (Karpenter's queue does the same).
                self._limits(e.t, launched, deciding, pool_of)
        return self.broken

    # law 1
    def _budget(
        self,
        e: Event,
        pool: str,
        initialized: dict[str, float],
        deciding: dict[str, str],
        pool_of: dict[str, str],
    ) -> None:
        # Karpenter's BuildDisruptionBudgetMapping: the pool's initialized nodes whose instance
        # is not terminating are the total; those already being deleted (for any reason) use up
        # the allowance. The decision must fit what is left.
        nodes = [
            c for c in initialized if pool_of[c] == pool and self.terminating.get(c, math.inf) > e.t
        ]
        disrupting = [c for c in nodes if c in deciding]
        allowed = allowance(self.pools[pool].budgets, e.get("reason"), len(nodes))
        if len(disrupting) > allowed:
            self.broken.append(
                f"budget exceeded at t={e.t:.0f}s: NodePool {pool} has {len(disrupting)} of "
                f"{len(nodes)} nodes disrupting ({sorted(disrupting)}, reasons "
                f"{sorted({deciding[c] for c in disrupting})}) after a {e.get('reason')} decision "
                f"on {e.get('nodeClaim')}; the budget allows {allowed}"
            )

    # law 6
    def _blocked_on_change(self, e: Event, held: dict[str, str]) -> None:
        claim, message = e.get("nodeClaim"), e.get("message")
        if held.get(claim) == message:
            self.broken.append(
                f"DisruptionBlocked said twice at t={e.t:.0f}s: {claim} was already blocked "
                f"with {message!r} and nothing freed it in between"
            )
        held[claim] = message

    def _not_held(self, e: Event, held: dict[str, str]) -> None:
        # A command's candidate is no node a DisruptionBlocked holds; drift, bounded by the
        # NodeClaim's terminationGracePeriod, may take a node its pods hold.
        claim, message = e.get("nodeClaim"), held.get(e.get("nodeClaim"))
        if e.get("reason") not in GRACEFUL or message is None:
            return
        if e.get("reason") == "Drifted" and message.startswith(("Pod ", "Pdb ", "Eviction ")):
            return
        self.broken.append(
            f"{claim} disrupted as {e.get('reason')} at t={e.t:.0f}s while blocked: {message!r}"
        )

    # law 2
    def _limits(
        self,
        t: float,
        launched: dict[str, dict[str, int]],
        deciding: dict[str, str],
        pool_of: dict[str, str],
    ) -> None:
        # Karpenter's NodePool usage (state/cluster.go `updateNodePoolResources`, and the
        # provisioner schedules against `nodes.Active()`): the capacity of its NodeClaims that
        # are not marked for deletion. A node being deleted stops counting at once, so its
        # replacement may run beside it: that overrun of launched capacity is Karpenter's.
        for pool, spec in self.pools.items():
            active = [c for c in launched if pool_of[c] == pool and c not in deciding]
            for resource, limit in spec.limits.items():
                used = sum(launched[c][resource] for c in active)
                if used > limit:
                    self.broken.append(
                        f"limit exceeded at t={t:.0f}s: NodePool {pool} has {used} {resource} "
                        f"on NodeClaims launched and not being deleted ({sorted(active)}), "
                        f"limit {limit}"
                    )

    # law 3
    def _tolerated(self, e: Event, pool: str | None, disrupting: bool) -> None:
        deployment = e.get("pod").split("/", 1)[1].rsplit("-", 1)[0]
        if pool is None or deployment not in self.tolerations:
            return
        taints = [t for t in self.pools[pool].taints if t.effect in ("NoSchedule", "NoExecute")]
        if disrupting:
            taints.append(DISRUPTED_TAINT)
        bad = untolerated(taints, self.tolerations[deployment])
        if bad is not None:
            self.broken.append(
                f"untolerated taint at t={e.t:.0f}s: {e.get('pod')} bound to {e.get('node')} "
                f"(NodePool {pool}) whose taint {bad} it does not tolerate"
            )

    # law 4
    def _consolidate_after(
        self, e: Event, pool: str, initialized: dict[str, float], last_pod_event: dict[str, float]
    ) -> None:
        claim = e.get("nodeClaim")
        after = self.pools[pool].after
        since = last_pod_event.get(claim, initialized.get(claim))
        if after is None:
            self.broken.append(
                f"consolidation disabled but at t={e.t:.0f}s {claim} (NodePool {pool}) was "
                f"disrupted as {e.get('reason')}"
            )
        elif since is None:
            self.broken.append(f"{claim} disrupted as {e.get('reason')} before it initialized")
        elif e.t - since < after:
            self.broken.append(
                f"inside consolidateAfter at t={e.t:.0f}s: {claim} (NodePool {pool}, "
                f"consolidateAfter {after:.0f}s) disrupted as {e.get('reason')} "
                f"{e.t - since:.0f}s after its last pod event or initialization (t={since:.0f}s)"
            )


# law 5
def orphans(world: World) -> list[str]:
    """Running instances without a NodeClaim, and launched NodeClaims not being deleted whose
    instance is not running, at the end of the run."""
    now = world.clock.now()
    claims = world.cluster.node_claims()
    instance_of = {
        c.name: (c.status.provider_id or "").rsplit("/", 1)[-1]
        for c in claims
        if c.status.provider_id
    }
    claimed = set(instance_of.values())
    broken = [
        f"instance {i.instance_id} ({i.instance_type}) is {i.advance(now)} at the end without a NodeClaim"
        for i in sorted(world.ec2.instances.values(), key=lambda i: i.instance_id)
        if i.advance(now) in ("pending", "running") and i.instance_id not in claimed
    ]
    for c in claims:
        if c.metadata.deletion_timestamp is not None or c.name not in instance_of:
            continue
        instance = world.ec2.instances.get(instance_of[c.name])
        state = instance.advance(now) if instance is not None else "absent"
        if state not in ("pending", "running"):
            broken.append(f"NodeClaim {c.name} is not being deleted but its instance is {state}")
    return broken


def terminations(world: World) -> dict[str, float]:
    """NodeClaim -> when its instance was terminated (seconds since the start)."""
    out: dict[str, float] = {}
    for i in world.ec2.instances.values():
        claim = i.tags.get(NODECLAIM_TAG)
        if claim is not None and i.terminated_at is not None:
            out[claim] = (i.terminated_at - EPOCH).total_seconds()
    return out


def check_laws(story: Story) -> tuple[list[str], SimulationResult]:
    world, result = story.run()
    broken = Laws(story).check(result.events, terminations(world)) + orphans(world)
    return broken, result


# ---- the property -----------------------------------------------------------------------------------
def _rolling_story() -> Story:
    """Two GPU nodes, then the NodePool's template changes at 1 h: drift replaces them one at a
    time under the default 10% budget (the first node's instance is terminating when the
    second is decided, so it no longer counts)."""
    pool = _nodepool(
        "gpu",
        True,
        types=["g5.xlarge"],
        capacity=["on-demand"],
        tainted=True,
        policy="WhenEmpty",
        after="1h",
        budgets=None,
        limit=2,
        expire="720h",
    )
    changed = copy.deepcopy(pool)
    changed["spec"]["template"]["metadata"] = {"labels": {"revision": "2"}}
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "law"},
        "spec": {
            "duration": "4h",
            "addons": [{"name": "nvidia-device-plugin"}],
            "events": [
                {"at": "60m", "apply": {"manifest": changed}},
                {
                    "at": "150m",
                    "scale": {
                        "kind": "Deployment",
                        "name": "d0",
                        "namespace": "default",
                        "replicas": 0,
                    },
                },
            ],
        },
    }
    deployment = _deployment(
        "d0", gpu=True, cpu="1", replicas=2, tolerations=[toleration], pinned=False
    )
    return Story(scenario, (_nodeclass("al2023@v20260827"), pool, deployment))


ROLLING = _rolling_story()


def window_story(
    name: str,
    *,
    types: list[str],
    policy: str,
    after: str,
    replicas: int,
    window_at: str,
    scale_at: str,
    scale_to: int,
) -> Story:
    """One untainted on-demand GPU NodePool of `types` and a Deployment of 1-GPU pods
    (`replicas`); from `window_at` no g5.xlarge can be launched for 10 minutes, and at
    `scale_at` the Deployment scales to `scale_to`: what the world's idle shortcuts must see
    through (the insufficient-capacity marks ending change what a waiting controller reads)."""
    pool = _nodepool(
        "gpu",
        True,
        types=types,
        capacity=["on-demand"],
        tainted=False,
        policy=policy,
        after=after,
        budgets=None,
        limit=None,
        expire="720h",
    )
    scale = {"kind": "Deployment", "name": "d0", "namespace": "default", "replicas": scale_to}
    window = {"instanceType": "g5.xlarge", "available": False, "for": "10m"}
    scenario = {
        "apiVersion": "gpucap.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": name},
        "spec": {
            "duration": "1h",
            "addons": [{"name": "nvidia-device-plugin"}],
            "events": [{"at": window_at, "capacity": window}, {"at": scale_at, "scale": scale}],
        },
    }
    pods = _deployment("d0", gpu=True, cpu="1", replicas=replicas, tolerations=[], pinned=False)
    return Story(scenario, (_nodeclass("al2023@v20260827"), pool, pods))


def file_events(name: str, world_type: type[World]) -> list[dict[str, object]]:
    """The events, as JSON, of story file `tests/sim/stories/<name>.yaml` run in `world_type`."""
    scenario = load_scenario(str(Path(__file__).parent / "stories" / f"{name}.yaml"), load_catalog)
    return [e.to_json() for e in world_type(scenario, load_catalog(scenario.region)).run().events]


def story_events(story: Story, world_type: type[World]) -> list[dict[str, object]]:
    """The story's events as JSON when run in `world_type`, without the scenario file's path
    (a new temporary folder each run): what the shortcut-vs-reference laws compare."""
    global World  # noqa: PLW0603 - Story.run builds its world from this module's name
    saved = World
    World = world_type  # type: ignore[misc]
    try:
        events = story.run()[1].events
    finally:
        World = saved  # type: ignore[misc]
    return [{k: v for k, v in e.to_json().items() if k != "source"} for e in events]
