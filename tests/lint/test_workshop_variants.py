"""The workshop's manifests are the good example: they lint with no error. Each variant below
changes one thing the workshop got right, and the matching rule must catch it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.runner import run

WORKSHOP = Path(__file__).resolve().parents[2] / "src" / "gpucap" / "data" / "examples" / "workshop"
VALUES = {
    "AMI_VERSION": "v20260714",
    "CLUSTER_NAME": "demo",
    "KARPENTER_NODE_ROLE": "KarpenterNodeRole-demo",
}
CATALOG = load_catalog("us-east-1")

Edit = Callable[[dict[str, str]], None]


def files() -> dict[str, str]:
    return {p.name: substitute(p.read_text(), VALUES).text for p in sorted(WORKSHOP.glob("*.yaml"))}


def lint(texts: dict[str, str]) -> list[tuple[str, str, str]]:
    manifests = []
    for name, text in texts.items():
        loaded = load_text(text, name)
        assert loaded.errors == [], [str(e) for e in loaded.errors]
        manifests += loaded.manifests
    result = run(LintContext(manifests, CATALOG), LintConfig())
    return [(f.rule, f.severity, f.file or "") for f in result.findings]


def test_the_workshop_lints_with_no_error() -> None:
    findings = lint(files())
    assert [f for f in findings if f[1] == "error"] == []
    # Its one deliberate trade-off: a GPU limit of 6 with time-slicing x4 (TS002, a warning).
    assert ("TS002", "warning", "nodepool.yaml") in findings


def replace(name: str, old: str, new: str) -> Edit:
    def edit(texts: dict[str, str]) -> None:
        assert old in texts[name], (name, old)
        texts[name] = texts[name].replace(old, new)

    return edit


def drop(name: str) -> Edit:
    def edit(texts: dict[str, str]) -> None:
        del texts[name]

    return edit


# The workshop runs the device plugin twice (its DaemonSet and the GPU Operator's): a variant
# that breaks the DaemonSet switches the operator's off too.
OPERATOR_PLUGIN_OFF = replace(
    "time-slicing.yaml", "devicePlugin:\n    enabled: true", "devicePlugin:\n    enabled: false"
)

VARIANTS: list[tuple[str, Edit, str, str]] = [
    (
        "@latest",
        replace("ec2nodeclass.yaml", "al2023@v20260714", "al2023@latest"),
        "AMI001",
        "ec2nodeclass.yaml",
    ),
    (
        "no taint",
        replace(
            "nodepool.yaml",
            "      taints:\n        - key: nvidia.com/gpu\n          value: present\n          effect: NoSchedule\n",
            "",
        ),
        "NP001",
        "nodepool.yaml",
    ),
    (
        "no limits",
        replace("nodepool.yaml", '  limits:\n    nvidia.com/gpu: "6"\n', ""),
        "NP003",
        "nodepool.yaml",
    ),
    (
        "spot only",
        replace("nodepool.yaml", '["spot", "on-demand"]', '["spot"]'),
        "NP006",
        "nodepool.yaml",
    ),
    (
        "one instance type",
        lambda t: (
            replace("nodepool.yaml", '["g5", "g6"]', '["g5"]')(t),
            replace("nodepool.yaml", '["xlarge", "2xlarge"]', '["xlarge"]')(t),
        ),
        "NP005",
        "nodepool.yaml",
    ),
    (
        "WhenEmptyOrUnderutilized with a short consolidateAfter",
        lambda t: (
            replace(
                "nodepool.yaml",
                "consolidationPolicy: WhenEmpty\n",
                "consolidationPolicy: WhenEmptyOrUnderutilized\n",
            )(t),
            replace("nodepool.yaml", "consolidateAfter: 2h", "consolidateAfter: 5m")(t),
        ),
        "DIS001",
        "nodepool.yaml",
    ),
    ("limit 6 with time-slicing x4", lambda t: None, "TS002", "nodepool.yaml"),
    (
        "20Gi root volume with a 9 GB image",
        replace("ec2nodeclass.yaml", "volumeSize: 200Gi", "volumeSize: 20Gi"),
        "STG001",
        "ec2nodeclass.yaml",
    ),
    (
        # (Without its nvidia.com/gpu toleration the pod is fine: EKS's admission adds it.)
        "GPU pool with a second taint the pod does not tolerate",
        replace(
            "nodepool.yaml",
            "          effect: NoSchedule\n",
            "          effect: NoSchedule\n        - key: team\n          value: ml\n"
            "          effect: NoSchedule\n",
        ),
        "POD002",
        "vllm.yaml",
    ),
    (
        "no device plugin",
        lambda t: (drop("nvidia-device-plugin.yaml")(t), drop("time-slicing.yaml")(t)),
        "GPU001",
        "nodepool.yaml",
    ),
    (
        "device plugin pinned to AMD GPUs, the operator's plugin off",
        lambda t: (
            replace("nvidia-device-plugin.yaml", 'values: ["nvidia"]', 'values: ["amd"]')(t),
            OPERATOR_PLUGIN_OFF(t),
        ),
        "GPU001",
        "nodepool.yaml",
    ),
    (
        "device plugin without the GPU toleration, the operator's plugin off",
        lambda t: (
            replace(
                "nvidia-device-plugin.yaml",
                "      tolerations:\n        - key: nvidia.com/gpu\n          operator: Exists\n"
                "          effect: NoSchedule\n",
                "",
            )(t),
            OPERATOR_PLUGIN_OFF(t),
        ),
        "GPU002",
        "nvidia-device-plugin.yaml",
    ),
]

# Variants whose mistake the input proves and that break the cluster: lint must exit 1. The
# others are warnings, and "no device plugin" is an info: the plugin may be installed outside
# the input (Helm, kubectl apply -f <url>).
ERRORS = {
    "GPU pool with a second taint the pod does not tolerate",
    "device plugin pinned to AMD GPUs, the operator's plugin off",
    "device plugin without the GPU toleration, the operator's plugin off",
}


@pytest.mark.parametrize(
    ("edit", "rule", "file"), [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS]
)
def test_a_workshop_variant_triggers_its_rule(edit: Edit, rule: str, file: str) -> None:
    texts = files()
    edit(texts)
    assert rule in {f[0] for f in lint(texts) if f[2] == file}


@pytest.mark.parametrize(
    ("edit", "rule", "file"),
    [v[1:] for v in VARIANTS if v[0] in ERRORS],
    ids=[v[0] for v in VARIANTS if v[0] in ERRORS],
)
def test_a_workshop_variant_that_breaks_the_cluster_is_an_error(
    edit: Edit, rule: str, file: str
) -> None:
    texts = files()
    edit(texts)
    assert (rule, "error", file) in lint(texts)


def test_a_workshop_without_its_device_plugin_gets_an_info_not_an_error() -> None:
    texts = files()
    drop("nvidia-device-plugin.yaml")(texts)
    drop("time-slicing.yaml")(texts)
    findings = lint(texts)
    assert ("GPU001", "info", "nodepool.yaml") in findings
    assert [f for f in findings if f[1] == "error"] == []
