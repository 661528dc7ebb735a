"""Where a DaemonSet's pod lands, and the device-plugin specifics GPU001 and the kubelet share."""

from __future__ import annotations

from typing import Any

import pytest

from gpucap.apis.core import Pod, Taint, Toleration
from gpucap.apis.gpuoperator import ClusterPolicy, choose_config
from gpucap.scheduling.daemonsets import (
    OPERATOR_DEFAULT_TOLERATIONS,
    blocking_taint,
    lands_on,
    operator_tolerations,
    without_runtime_labels,
)

GPU_TAINT = Taint(key="nvidia.com/gpu", effect="NoSchedule")
LABELS = {"karpenter.sh/nodepool": "gpu", "node.kubernetes.io/instance-type": "g5.xlarge"}


def daemon(**spec: Any) -> Pod:
    return Pod.model_validate(
        {"metadata": {"name": "d"}, "spec": {"containers": [{"name": "c"}], **spec}}
    )


def required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def expr(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def test_an_untolerated_no_schedule_taint_keeps_a_daemon_off() -> None:
    assert not lands_on(daemon(), LABELS, [GPU_TAINT])
    tolerant = daemon(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    assert lands_on(tolerant, LABELS, [GPU_TAINT])


def test_prefer_no_schedule_never_keeps_a_daemon_off() -> None:
    soft = Taint(key="spot", effect="PreferNoSchedule")
    assert blocking_taint([soft], []) is None
    assert lands_on(daemon(), LABELS, [soft])


def test_required_node_affinity_terms_are_ored() -> None:
    pod = daemon(
        affinity=required(
            [expr("karpenter.sh/nodepool", "cpu")], [expr("karpenter.sh/nodepool", "gpu")]
        )
    )
    assert lands_on(pod, LABELS, [])
    only_cpu = daemon(affinity=required([expr("karpenter.sh/nodepool", "cpu")]))
    assert not lands_on(only_cpu, LABELS, [])


def test_a_node_selector_on_a_label_the_node_lacks_keeps_a_daemon_off() -> None:
    assert not lands_on(daemon(nodeSelector={"accelerator": "nvidia"}), LABELS, [])
    assert lands_on(daemon(nodeSelector={"karpenter.sh/nodepool": "gpu"}), LABELS, [])


def test_runtime_gpu_labels_are_unknown_unless_the_node_sets_them() -> None:
    pod = daemon(
        nodeSelector={"nvidia.com/gpu.present": "true"},
        affinity=required([expr("feature.node.kubernetes.io/pci-10de.present", "true")]),
    )
    relaxed = without_runtime_labels(pod, set(LABELS))
    assert lands_on(relaxed, LABELS, [])
    # A node (or pool) that sets the label says what it is: then it must match.
    kept = without_runtime_labels(pod, {"nvidia.com/gpu.present"})
    assert kept.spec.node_selector == {"nvidia.com/gpu.present": "true"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, list(OPERATOR_DEFAULT_TOLERATIONS)),
        ({"daemonsets": {"tolerations": []}}, []),
        (
            {"daemonsets": {"tolerations": [{"key": "x", "operator": "Exists"}]}},
            [Toleration(key="x", operator="Exists")],
        ),
    ],
)
def test_operator_tolerations_default_only_when_unset(
    spec: dict[str, Any], expected: list[Toleration]
) -> None:
    policy = ClusterPolicy.model_validate({"metadata": {"name": "p"}, "spec": spec})
    assert operator_tolerations(policy) == expected


CONFIGS = [("cm", "a"), ("cm", "b"), ("other", "a")]


@pytest.mark.parametrize(
    ("configs", "label", "policy_config", "expected"),
    [
        (CONFIGS, "b", None, (1, "label")),
        (CONFIGS, None, None, None),  # several configs, nothing picks one
        (CONFIGS[:1], None, None, (0, "only")),
        (CONFIGS, "zzz", None, None),
        (CONFIGS, None, {"name": "other", "default": "a"}, (2, "policy-default")),
        (CONFIGS, "b", {"name": "cm", "default": "a"}, (1, "label")),
        (CONFIGS, "b", {"name": "other", "default": "a"}, None),  # only the policy's ConfigMap
        (CONFIGS[:1], None, {}, None),  # a policy without a config: the plugin's default
    ],
)
def test_which_device_plugin_config_a_node_gets(
    configs: list[tuple[str, str]],
    label: str | None,
    policy_config: dict[str, Any] | None,
    expected: tuple[int, str] | None,
) -> None:
    policy = (
        None
        if policy_config is None
        else ClusterPolicy.model_validate(
            {"metadata": {"name": "p"}, "spec": {"devicePlugin": {"config": policy_config}}}
        )
    )
    assert choose_config(configs, label=label, policy=policy) == expected
