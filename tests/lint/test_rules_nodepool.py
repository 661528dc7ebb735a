"""NP001-NP011 (lint/rules/nodepool.py), on builder manifests and on the workshop's files."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucap.apis.placeholders import substitute
from gpucap.apis.serde import load_text
from gpucap.cloudprovider.aws.instancetype.catalog import load_catalog
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from gpucap.lint.runner import run
from tests.builders import (
    DELETE,
    GPU_TOLERATION,
    deployment,
    edit,
    nodeclass,
    nodepool,
    pod,
    to_yaml,
)

CATALOG = load_catalog("us-east-1")
WORKSHOP = resources.files("gpucap") / "data/examples/workshop"
VALUES = {"AMI_VERSION": "v20260714", "CLUSTER_NAME": "c", "KARPENTER_NODE_ROLE": "r"}
MINE = ("NP", "DIS", "SPOT", "STG", "AMI")
FAMILY = "spec.template.spec.requirements[2]"  # karpenter.k8s.aws/instance-family in nodepool()


def lint(*docs: dict[str, Any], select: str) -> tuple[list[Finding], str]:
    text = to_yaml(*docs)
    loaded = load_text(text, "test.yaml")
    assert not loaded.errors, loaded.errors
    ctx = LintContext(loaded.manifests, CATALOG)
    return run(ctx, LintConfig(select=(select,))).findings, text


def line_of(text: str, needle: str, after: str | None = None) -> int:
    """1-based line of the first line containing `needle` (after the line containing `after`)."""
    lines = text.splitlines()
    start = 0
    if after is not None:
        start = next(i for i, line in enumerate(lines) if after in line) + 1
    return next(i + 1 for i in range(start, len(lines)) if needle in lines[i])


def workshop(**replace: tuple[str, str]) -> dict[str, str]:
    """The workshop's files (placeholders filled), with `file=(old, new)` text replacements."""
    out = {}
    for f in sorted(WORKSHOP.iterdir(), key=lambda f: f.name):
        if not f.name.endswith(".yaml"):
            continue
        text = substitute(f.read_text(encoding="utf-8"), VALUES).text
        key = f.name.removesuffix(".yaml").replace("-", "_")
        if key in replace:
            old, new = replace[key]
            assert old in text, (f.name, old)
            text = text.replace(old, new)
        out[f.name] = text
    return out


def lint_files(files: dict[str, str], select: tuple[str, ...]) -> list[Finding]:
    manifests = []
    for name, text in files.items():
        loaded = load_text(text, name)
        assert not loaded.errors, loaded.errors
        manifests += loaded.manifests
    return run(LintContext(manifests, CATALOG), LintConfig(select=select)).findings


def only(findings: list[Finding], rule: str) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, findings
    return hits[0]


GPU_POD = pod("gpu-0", gpu=1, tolerations=[GPU_TOLERATION])


# ==== NP001 ====================================================================================


def test_np001_gpu_pool_without_taint() -> None:
    findings, text = lint(
        edit(nodepool(), "spec.template.spec.taints", DELETE), nodeclass(), select="NP001"
    )
    f = only(findings, "NP001")
    assert f.severity == "warning"
    assert f.line == line_of(text, "  spec:", after="template:")
    assert "has no NoSchedule taint" in f.message
    assert "g5." in f.message


def test_np001_prefer_no_schedule_is_not_enough() -> None:
    soft = {"key": "nvidia.com/gpu", "value": "present", "effect": "PreferNoSchedule"}
    findings, text = lint(
        edit(nodepool(), "spec.template.spec.taints[0]", soft), nodeclass(), select="NP001"
    )
    f = only(findings, "NP001")
    assert f.line == line_of(text, "taints:")
    assert "nvidia.com/gpu=present:PreferNoSchedule is only a preference" in f.message


def test_np001_quiet_for_tainted_gpu_pool_and_untainted_cpu_pool() -> None:
    cpu = edit(
        edit(nodepool("cpu"), f"{FAMILY}.values", ["m5", "c5"]),
        "spec.template.spec.taints",
        DELETE,
    )
    findings, _ = lint(nodepool(), cpu, nodeclass(), select="NP001")
    assert findings == []


def test_np001_workshop_without_taint() -> None:
    files = workshop(
        nodepool=(
            "      taints:\n        - key: nvidia.com/gpu\n          value: present\n"
            "          effect: NoSchedule\n",
            "",
        )
    )
    f = only(lint_files(files, ("NP001",)), "NP001")
    assert (f.file, f.severity) == ("nodepool.yaml", "warning")
    assert f.line == line_of(files["nodepool.yaml"], "    spec:", after="template:")
    assert "g5.xlarge" in f.message


# ==== NP002 ====================================================================================


def test_np002_equal_weights_name_the_winner() -> None:
    findings, text = lint(
        nodepool("gpu-a"), nodepool("gpu-b"), nodeclass(), GPU_POD, select="NP002"
    )
    f = only(findings, "NP002")
    assert f.severity == "warning"
    assert f.object_ref == "NodePool/gpu-b"
    assert f.line == line_of(text, "spec:", after="name: gpu-b")
    assert "NodePools gpu-a, gpu-b (no weight) can all serve default/gpu-0" in f.message
    assert "Karpenter will use gpu-b (weights tie, names descending)" in f.message


def test_np002_distinct_weights_or_exclusive_pools_are_quiet() -> None:
    weighted = nodepool("gpu-a", weight=10)
    findings, _ = lint(weighted, nodepool("gpu-b"), nodeclass(), GPU_POD, select="NP002")
    assert findings == []
    # gpu-b can serve the pod only if it tolerates a taint it does not: mutually exclusive.
    other = edit(nodepool("gpu-b"), "spec.template.spec.taints[0].key", "team-b")
    findings, _ = lint(nodepool("gpu-a"), other, nodeclass(), GPU_POD, select="NP002")
    assert findings == []


def test_np002_equal_explicit_weights() -> None:
    findings, text = lint(
        nodepool("a", weight=5), nodepool("b", weight=5), nodeclass(), GPU_POD, select="NP002"
    )
    f = only(findings, "NP002")
    assert f.line == line_of(text, "weight: 5", after="name: b")
    assert "(weight 5)" in f.message
    assert "Karpenter will use b" in f.message


# ==== NP003 ====================================================================================


def test_np003_no_limits() -> None:
    findings, text = lint(edit(nodepool(), "spec.limits", DELETE), nodeclass(), select="NP003")
    f = only(findings, "NP003")
    assert f.severity == "warning"
    assert f.line == line_of(text, "spec:")
    assert "has no spec.limits" in f.message


def test_np003_limits_without_gpu() -> None:
    findings, text = lint(
        edit(nodepool(), "spec.limits", {"cpu": "100"}), nodeclass(), select="NP003"
    )
    f = only(findings, "NP003")
    assert f.line == line_of(text, "limits:")
    assert "limits only cpu, not nvidia.com/gpu" in f.message


def test_np003_quiet_with_gpu_limit() -> None:
    findings, _ = lint(nodepool(), nodeclass(), select="NP003")
    assert findings == []


def test_np003_workshop_without_limits() -> None:
    files = workshop(nodepool=('  limits:\n    nvidia.com/gpu: "6"\n', ""))
    f = only(lint_files(files, ("NP003",)), "NP003")
    assert (f.file, f.severity) == ("nodepool.yaml", "warning")
    assert f.line == line_of(files["nodepool.yaml"], "spec:")
    assert "no spec.limits" in f.message


# ==== NP004 ====================================================================================

FOUR_GPU = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["4"]}


def test_np004_gpu_limit_below_smallest_type() -> None:
    np = edit(
        edit(nodepool(), "spec.template.spec.requirements[3]", FOUR_GPU),
        "spec.limits",
        {"nvidia.com/gpu": "2"},
    )
    findings, text = lint(np, nodeclass(), select="NP004")
    f = only(findings, "NP004")
    assert f.severity == "warning"
    assert f.line == line_of(text, "nvidia.com/gpu: '2'")
    assert "limit nvidia.com/gpu: 2 is below the smallest allowed instance type" in f.message
    assert "has 4): the pool can never launch a node with GPUs" in f.message


def test_np004_gpu_limit_partly_reachable() -> None:
    np = edit(
        edit(nodepool(), "spec.template.spec.requirements[3]", FOUR_GPU),
        "spec.limits",
        {"nvidia.com/gpu": "6"},
    )
    findings, _ = lint(np, nodeclass(), select="NP004")
    f = only(findings, "NP004")
    assert "cannot be reached with the allowed GPU counts per node (4): at most 4 GPUs" in f.message


def test_np004_pod_requests_more_gpus_than_any_type() -> None:
    one = dict(FOUR_GPU, values=["1"])
    np = edit(nodepool(), "spec.template.spec.requirements[3]", one)
    big = deployment("train", gpu=2, tolerations=[GPU_TOLERATION])
    findings, text = lint(np, nodeclass(), big, select="NP004")
    f = only(findings, "NP004")
    assert f.object_ref == "Deployment/default/train"
    assert f.line == line_of(text, "nvidia.com/gpu: '2'")
    # Provably never scheduled (issue 23): an error, not a warning.
    assert f.severity == "error"
    assert "requests 2 nvidia.com/gpu but no NodePool it can use can launch a node" in f.message
    assert "gpu allows at most 1 per node" in f.message


def test_np004_pod_held_by_a_limit_below_the_smallest_type_that_fits_is_an_error() -> None:
    # 3 GPUs fit only a 4-GPU type; the limit of 3 lets no 4-GPU node launch, though the
    # limit is at least the request.
    np = edit(
        edit(nodepool(), "spec.template.spec.requirements[3]", FOUR_GPU),
        "spec.limits",
        {"nvidia.com/gpu": "3"},
    )
    pod3 = deployment("train", replicas=1, gpu=3, tolerations=[GPU_TOLERATION])
    findings, _ = lint(np, nodeclass(), pod3, select="NP004")
    pod_findings = [f for f in findings if f.object_ref == "Deployment/default/train"]
    (f,) = pod_findings
    assert f.severity == "error"
    assert "gpu is limited to 3 and its smallest type that holds them has 4" in f.message


def test_np004_pod_another_pool_can_take_is_not_reported() -> None:
    one = dict(FOUR_GPU, values=["1"])
    small = edit(nodepool("small"), "spec.template.spec.requirements[3]", one)
    big = deployment("train", gpu=2, tolerations=[GPU_TOLERATION])
    findings, _ = lint(small, nodepool("big"), nodeclass(), big, select="NP004")
    assert [f for f in findings if f.object_ref == "Deployment/default/train"] == []


def test_np004_quiet_when_reachable() -> None:
    findings, _ = lint(nodepool(), nodeclass(), GPU_POD, select="NP004")
    assert findings == []


# ==== NP005 ====================================================================================


def test_np005_one_instance_type() -> None:
    np = edit(
        nodepool(),
        "spec.template.spec.requirements[2]",
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]},
    )
    findings, text = lint(np, nodeclass(), select="NP005")
    f = only(findings, "NP005")
    assert f.severity == "warning"
    assert f.line == line_of(text, "requirements:")
    assert "allows spot but only 1 instance type can launch (g5.xlarge)" in f.message


def test_np005_one_zone() -> None:
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
    findings, text = lint(
        edit(nodepool(), "spec.template.spec.requirements[3]", zone), nodeclass(), select="NP005"
    )
    f = only(findings, "NP005")
    assert f.line == line_of(text, "topology.kubernetes.io/zone")
    assert "allows spot in one zone only (us-east-1a)" in f.message


def test_np005_quiet_for_wide_or_on_demand_pools() -> None:
    findings, _ = lint(nodepool(), nodeclass(), select="NP005")
    assert findings == []
    on_demand = edit(
        edit(nodepool(), f"{FAMILY}.values", ["g5"]),
        "spec.template.spec.requirements[1].values",
        ["on-demand"],
    )
    findings, _ = lint(
        edit(on_demand, "spec.template.spec.requirements[3]", dict(FOUR_GPU, values=["1"])),
        nodeclass(),
        select="NP005",
    )
    assert findings == []


def test_np005_workshop_one_instance_type() -> None:
    files = workshop(nodepool=('values: ["g5", "g6"]', 'values: ["g5"]'))
    files["nodepool.yaml"] = files["nodepool.yaml"].replace(
        'values: ["xlarge", "2xlarge"]', 'values: ["xlarge"]'
    )
    f = only(lint_files(files, ("NP005",)), "NP005")
    assert (f.file, f.severity) == ("nodepool.yaml", "warning")
    assert f.line == line_of(files["nodepool.yaml"], "requirements:")
    assert "only 1 instance type can launch (g5.xlarge)" in f.message


def test_np005_workshop_as_published_has_four_types() -> None:
    f = only(lint_files(workshop(), ("NP005",)), "NP005")
    assert "only 4 instance types" in f.message


# ==== NP006 ====================================================================================

SPOT_ONLY = "spec.template.spec.requirements[1].values"


def test_np006_spot_only() -> None:
    findings, text = lint(
        edit(nodepool(), SPOT_ONLY, ["spot"]), nodeclass(), GPU_POD, select="NP006"
    )
    f = only(findings, "NP006")
    assert f.severity == "info"
    assert f.line == line_of(text, "karpenter.sh/capacity-type")
    assert "spot only, with no on-demand fallback for default/gpu-0" in f.message


def test_np006_quiet_with_on_demand_fallback_pool() -> None:
    spot = edit(nodepool("gpu-spot", weight=50), SPOT_ONLY, ["spot"])
    od = edit(nodepool("gpu-od"), SPOT_ONLY, ["on-demand"])
    findings, _ = lint(spot, od, nodeclass(), GPU_POD, select="NP006")
    assert findings == []
    findings, _ = lint(nodepool(), nodeclass(), GPU_POD, select="NP006")
    assert findings == []


def test_np006_workshop_spot_only() -> None:
    files = workshop(nodepool=('values: ["spot", "on-demand"]', 'values: ["spot"]'))
    f = only(lint_files(files, ("NP006",)), "NP006")
    assert (f.file, f.severity) == ("nodepool.yaml", "info")
    assert f.line == line_of(files["nodepool.yaml"], "key: karpenter.sh/capacity-type")
    assert "default/vllm-0" in f.message


# ==== NP007 ====================================================================================


def test_np007_legacy_annotation() -> None:
    doc = edit(GPU_POD, "metadata.annotations", {"karpenter.sh/do-not-evict": "true"})
    findings, text = lint(nodepool(), nodeclass(), doc, select="NP007")
    f = only(findings, "NP007")
    assert f.severity == "error"
    assert f.line == line_of(text, "karpenter.sh/do-not-evict")
    assert "pre-v1 name that Karpenter v1 ignores" in f.message
    assert "karpenter.sh/do-not-disrupt" in f.message


def test_np007_provisioner_name_selector() -> None:
    doc = edit(GPU_POD, "spec.nodeSelector", {"karpenter.sh/provisioner-name": "gpu"})
    findings, text = lint(nodepool(), nodeclass(), doc, select="NP007")
    f = only(findings, "NP007")
    assert f.line == line_of(text, "karpenter.sh/provisioner-name")
    assert "matches no NodePool; use karpenter.sh/nodepool" in f.message


def test_np007_legacy_node_annotation_on_pool() -> None:
    np = edit(
        nodepool(),
        "spec.template.metadata.annotations",
        {"karpenter.sh/do-not-consolidate": "true"},
    )
    findings, text = lint(np, nodeclass(), select="NP007")
    f = only(findings, "NP007")
    assert f.line == line_of(text, "karpenter.sh/do-not-consolidate")


def test_np007_quiet_for_v1_names() -> None:
    doc = edit(GPU_POD, "metadata.annotations", {"karpenter.sh/do-not-disrupt": "true"})
    doc = edit(doc, "spec.nodeSelector", {"karpenter.sh/nodepool": "gpu"})
    findings, _ = lint(nodepool(), nodeclass(), doc, select="NP007")
    assert findings == []


def test_np007_misplaced_expire_after_is_a_loader_error_not_np007() -> None:
    """spec.disruption.expireAfter never reaches the rules: the loader rejects the NodePool
    (SCHEMA001), which is why NP007 covers only what still loads."""
    loaded = load_text(to_yaml(edit(nodepool(), "spec.disruption.expireAfter", "720h")), "t.yaml")
    assert [i.path for i in loaded.errors] == [("spec", "disruption", "expireAfter")]
    assert loaded.manifests == []


# ==== NP008 ====================================================================================


def test_np008_min_values_met() -> None:
    np = edit(nodepool(), f"{FAMILY}.minValues", 2)
    findings, text = lint(np, nodeclass(), select="NP008")
    f = only(findings, "NP008")
    assert f.severity == "info"
    assert f.line == line_of(text, "minValues: 2")
    assert "karpenter.k8s.aws/instance-family minValues 2" in f.message
    assert "met by the" in f.message


def test_np008_min_values_unmet() -> None:
    names = {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "Exists", "minValues": 3}
    np = edit(nodepool(), "spec.template.spec.requirements[3]", names)
    findings, _ = lint(np, nodeclass(), select="NP008")
    f = only(findings, "NP008")
    assert "karpenter.k8s.aws/instance-gpu-name has 2 distinct values" in f.message
    assert "--min-values-policy=Strict (the default) the pool launches nothing" in f.message


def test_np008_quiet_without_min_values() -> None:
    findings, _ = lint(nodepool(), nodeclass(), select="NP008")
    assert findings == []


# ==== the workshop as published ================================================================


@pytest.mark.parametrize("ami", ["v20260714", "v20260827"])
def test_workshop_has_no_errors_from_these_rules(ami: str) -> None:
    files = workshop()
    if ami != VALUES["AMI_VERSION"]:
        files["ec2nodeclass.yaml"] = files["ec2nodeclass.yaml"].replace(VALUES["AMI_VERSION"], ami)
    findings = lint_files(files, MINE)
    assert [f for f in findings if f.severity == "error"] == []


# ==== NP009 ====================================================================================

ALL_TYPE_NAMES = sorted({it.name for it in CATALOG.instance_types(NodeClassSettings())})


@pytest.mark.parametrize(
    ("key", "typo", "suggestion"),
    [
        ("node.kubernetes.io/instance-type", "g5.xlage", "g5.xlarge"),
        ("karpenter.k8s.aws/instance-family", "g6ee", "g6e"),
        ("karpenter.k8s.aws/instance-size", "12xlage", "12xlarge"),
        ("karpenter.k8s.aws/instance-gpu-name", "a10gg", "a10g"),
        ("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidai", "nvidia"),
    ],
)
def test_np009_a_value_no_instance_type_has_is_a_warning_naming_the_closest_known_value(
    key: str, typo: str, suggestion: str
) -> None:
    # The typo sits next to a real value, so the pool still has something to launch.
    real = {
        "node.kubernetes.io/instance-type": "g5.2xlarge",
        "karpenter.k8s.aws/instance-family": "g5",
        "karpenter.k8s.aws/instance-size": "2xlarge",
        "karpenter.k8s.aws/instance-gpu-name": "a10g",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
    }[key]
    np = edit(
        nodepool(),
        "spec.template.spec.requirements[3]",
        {"key": key, "operator": "In", "values": [real, typo]},
    )
    findings, text = lint(np, nodeclass(), select="NP009")
    f = only(findings, "NP009")
    assert f.severity == "warning"
    assert f.line == line_of(text, f"- {typo}")
    assert f"{key} In {typo}: no instance type in the catalog (us-east-1," in f.message
    assert f"(did you mean {suggestion}?)" in f.message
    assert f.message.endswith("Karpenter drops it silently")


def test_np009_a_pool_whose_requirements_leave_nothing_to_launch_is_an_error() -> None:
    # Every value exists, but no g5 has an H100: the intersection is empty.
    np = edit(
        nodepool(),
        "spec.template.spec.requirements[3]",
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]},
    )
    findings, text = lint(np, nodeclass(), select="NP009")
    f = only(findings, "NP009")
    assert f.severity == "error"
    assert f.line == line_of(text, "requirements:")
    assert "Karpenter skips the pool and the pods that need it stay Pending" in f.message


def test_np009_an_unknown_only_value_gives_the_warning_and_the_error() -> None:
    np = edit(nodepool(), f"{FAMILY}.values", ["p9"])
    findings, _ = lint(np, nodeclass(), select="NP009")
    assert sorted(f.severity for f in findings) == ["error", "warning"]
    assert any("instance-family In p9" in f.message for f in findings)


def test_np009_quiet_for_known_values_notin_and_pool_labels() -> None:
    reqs = nodepool()["spec"]["template"]["spec"]["requirements"] + [
        {"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["p9.huge"]},
        {"key": "example.com/team", "operator": "In", "values": ["ml"]},
        {"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["xlarge"]},
    ]
    findings, _ = lint(
        edit(nodepool(), "spec.template.spec.requirements", reqs), nodeclass(), select="NP009"
    )
    assert findings == []
    assert lint_files(workshop(), ("NP009",)) == []


def test_np009_the_beta_instance_type_label_is_checked_like_the_v1_one() -> None:
    np = edit(
        nodepool(),
        "spec.template.spec.requirements[3]",
        {
            "key": "beta.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["g5.2xlarge", "g5.xlage"],
        },
    )
    findings, _ = lint(np, nodeclass(), select="NP009")
    assert "did you mean g5.xlarge?" in only(findings, "NP009").message


def test_np009_a_real_family_not_offered_in_the_region_names_the_regions_that_offer_it() -> None:
    # trn2 exists (the bundled data offers it in us-east-2 and ap-south-2): not a typo of trn1.
    np = edit(nodepool(), f"{FAMILY}.values", ["g5", "trn2"])
    findings, text = lint(np, nodeclass(), select="NP009")
    f = only(findings, "NP009")
    assert f.severity == "warning"
    assert f.line == line_of(text, "- trn2")
    assert (
        "trn2 is not offered in us-east-1; it is in us-east-2, ap-south-2 (lint with --region)"
        in (f.message)
    )
    assert "did you mean" not in f.message


def test_np009_a_real_type_of_another_region_is_never_a_did_you_mean_of_a_close_name() -> None:
    # p5e.48xlarge is one letter from p5en.48xlarge (in us-east-1); it is itself real elsewhere.
    np = edit(
        nodepool(),
        "spec.template.spec.requirements[3]",
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["g5.2xlarge", "p5e.48xlarge"],
        },
    )
    f = only(lint(np, nodeclass(), select="NP009")[0], "NP009")
    assert "p5e.48xlarge is not offered in us-east-1; it is in us-east-2, us-west-2" in f.message
    assert "did you mean" not in f.message


def test_np009_a_catalog_of_the_callers_own_knows_no_other_region() -> None:
    # Only the bundled data says where else a type is offered; a custom catalog gets the hint.
    own = load_catalog("us-east-1", infos=CATALOG.infos)
    np = edit(nodepool(), f"{FAMILY}.values", ["g5", "trn2"])
    loaded = load_text(to_yaml(np, nodeclass()), "test.yaml")
    ctx = LintContext(loaded.manifests, own)
    (f,) = run(ctx, LintConfig(select=("NP009",))).findings
    assert "no instance type in the catalog (us-east-1," in f.message
    assert "not offered" not in f.message


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    known=st.lists(st.sampled_from(ALL_TYPE_NAMES), min_size=1, max_size=4, unique=True),
    unknown=st.lists(
        st.from_regex(r"[a-z][0-9][a-z]{0,3}\.[a-z0-9]{2,9}", fullmatch=True),
        max_size=3,
        unique=True,
    ),
)
def test_np009_flags_exactly_the_instance_types_the_catalog_lacks(
    known: list[str], unknown: list[str]
) -> None:
    missing = [v for v in unknown if v not in ALL_TYPE_NAMES]
    np = edit(
        edit(nodepool(), f"{FAMILY}", DELETE),
        "spec.template.spec.requirements[2]",
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": known + missing},
    )
    findings, _ = lint(np, nodeclass(), select="NP009")
    flagged = sorted(
        f.message.split(" In ", 1)[1].split(":", 1)[0] for f in findings if f.severity == "warning"
    )
    assert flagged == sorted(missing)


# ==== NP011 ====================================================================================


def test_np011_a_nodepool_naming_a_missing_class_beside_others_is_found_with_did_you_mean() -> None:
    typo = edit(nodepool("gpu"), "spec.template.spec.nodeClassRef.name", "gpus")
    findings, text = lint(nodeclass("gpu"), typo, select="NP011")
    (f,) = findings
    assert (f.rule, f.severity, f.object_ref) == ("NP011", "error", "NodePool/gpu")
    assert f.line == line_of(text, "name: gpus")
    assert "the input has no EC2NodeClass gpus (did you mean gpu?)" in f.message
    assert "not Ready (NodeClassNotFound)" in f.message


def test_np011_names_the_classes_there_are_when_none_is_close() -> None:
    other = edit(nodepool("gpu"), "spec.template.spec.nodeClassRef.name", "zzzzzz")
    (f,) = lint(nodeclass("gpu"), other, select="NP011")[0]
    assert "(it has gpu)" in f.message


def test_np011_quiet_for_a_nodepool_linted_without_any_ec2nodeclass() -> None:
    assert lint(nodepool("gpu"), select="NP011")[0] == []


def test_np011_quiet_when_the_class_is_there() -> None:
    assert lint(nodeclass("gpu"), nodepool("gpu"), select="NP011")[0] == []
