"""GPU rules: device plugin, initialization and the GPU Operator (landscape.md §3.1)."""

from __future__ import annotations

from collections.abc import Iterable

from gpucap.apis.workloads import DaemonSet
from gpucap.lint.context import LintContext
from gpucap.lint.model import Finding, rule
from gpucap.scheduling.preferences import tolerate_prefer_no_schedule
from gpucap.scheduling.solver import daemon_pod
from gpucap.scheduling.taints import format_taint, untolerated

__all__: list[str] = []


@rule(
    "GPU001",
    "gpu-pool-without-device-plugin",
    "error",
    summary="A NodePool can launch NVIDIA GPU instances but no NVIDIA device plugin (DaemonSet or "
    "GPU Operator ClusterPolicy) is in the input.",
    why="EKS AL2023 NVIDIA AMIs ship the driver, not the device plugin. Without it the node never "
    "advertises nvidia.com/gpu, Karpenter never marks it initialized, GPU pods stay Pending and "
    "the node stays on the bill (it is never consolidated).",
    fix="Install the NVIDIA device plugin DaemonSet (or the GPU Operator) before the first GPU "
    "pod, tolerating the GPU pool's taints.",
    source="EKS Best Practices AI/ML (Use Kubernetes Device Plugin); Karpenter troubleshooting "
    "(Nodes not initialized); aws/karpenter-provider-aws#1914",
)
def gpu_pool_without_device_plugin(ctx: LintContext) -> Iterable[Finding]:
    if ctx.has_device_plugin:
        return
    for pool in ctx.pools:
        if pool.can_launch_gpus:
            names = ", ".join(it.name for it in pool.gpu_types[:3])
            more = f" and {len(pool.gpu_types) - 3} more" if len(pool.gpu_types) > 3 else ""
            yield ctx.finding(
                "GPU001",
                "error",
                pool.manifest,
                ("spec", "template", "spec", "requirements"),
                f"can launch GPU instances ({names}{more}) but no NVIDIA device plugin DaemonSet "
                "or GPU Operator ClusterPolicy is in the input: nodes would never initialize",
            )


@rule(
    "GPU002",
    "device-plugin-does-not-tolerate-pool-taints",
    "error",
    summary="The device-plugin DaemonSet does not tolerate every taint (and startup taint) of a "
    "GPU NodePool.",
    why="The plugin pod never lands on the GPU node, so nvidia.com/gpu never registers and the "
    "node is never initialized.",
    fix="Add tolerations for the pool's taints to the device plugin (GPU Operator: "
    "daemonsets.tolerations).",
    source="Karpenter troubleshooting; aws-samples/karpenter-blueprints nvidia-gpu-workload",
)
def device_plugin_does_not_tolerate(ctx: LintContext) -> Iterable[Finding]:
    for m in ctx.device_plugin_daemonsets:
        ds: DaemonSet = m.obj  # type: ignore[assignment]
        pod = daemon_pod(ds)
        # DaemonSet pods get a toleration for PreferNoSchedule automatically in Karpenter's model.
        pod = tolerate_prefer_no_schedule(pod) or pod
        for pool in ctx.pools:
            if not pool.can_launch_gpus:
                continue
            taints = (*pool.template.taints, *pool.template.startup_taints)
            taint = untolerated(taints, pod.spec.tolerations)
            if taint is not None:
                yield ctx.finding(
                    "GPU002",
                    "error",
                    m,
                    ("spec", "template", "spec", "tolerations"),
                    f"does not tolerate {format_taint(taint)} of GPU NodePool {pool.name}: the "
                    "device plugin would never run there",
                )
