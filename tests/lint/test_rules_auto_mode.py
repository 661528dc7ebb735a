"""Lint on NodePools another Karpenter serves.

An EKS Auto Mode pool is resolved against Auto Mode's instance types: its
`eks.amazonaws.com/instance-*` requirements select types as their `karpenter.k8s.aws`
counterparts do (GPU pool detection, NP009's unknown values), pods match it with Auto Mode's
labels, and NP012 says when it is written with self-managed Karpenter's labels or asks for
Windows. A KWOK pool (fake nodes of the KWOK provider's own types) gets no AWS or GPU finding.
"""

from __future__ import annotations

from typing import Any

from gpucap.apis.serde import load_text
from gpucap.lint.config import LintConfig
from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding
from gpucap.lint.runner import run
from tests.builders import DELETE, GPU_TOLERATION, edit, nodepool, pod, to_yaml
from tests.lint.builders import CATALOG, FILE

REF = "spec.template.spec.nodeClassRef"
REQS = "spec.template.spec.requirements"


def findings(*docs: dict[str, Any]) -> list[Finding]:
    result = load_text(to_yaml(*docs), FILE)
    assert not result.errors, [str(e) for e in result.errors]
    return run(LintContext(result.manifests, CATALOG), LintConfig()).findings


def context(*docs: dict[str, Any]) -> LintContext:
    result = load_text(to_yaml(*docs), FILE)
    return LintContext(result.manifests, CATALOG)


def of(rule: str, found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def auto_mode(*requirements: tuple[str, str, list[str]], tainted: bool = False) -> dict[str, Any]:
    """An untainted Auto Mode pool with the given (key, operator, values) requirements."""
    doc = edit(
        nodepool("auto"),
        REF,
        {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"},
    )
    doc = edit(doc, REQS, [{"key": k, "operator": op, "values": v} for k, op, v in requirements])
    return doc if tainted else edit(doc, "spec.template.spec.taints", DELETE)


def kwok() -> dict[str, Any]:
    doc = edit(
        nodepool("kwok"),
        REF,
        {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
    )
    doc = edit(doc, REQS, [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}])
    return edit(doc, "spec.template.spec.taints", DELETE)


CATEGORY = "eks.amazonaws.com/instance-category"
FAMILY = "eks.amazonaws.com/instance-family"


def test_an_auto_mode_pool_of_inf_and_trn_is_not_a_gpu_pool() -> None:
    (pool,) = context(auto_mode((CATEGORY, "In", ["inf", "trn"]))).pools
    assert pool.instance_types
    assert not pool.can_launch_gpus
    assert not pool.is_gpu_pool


def test_an_auto_mode_pool_of_category_g_launches_only_gpu_types() -> None:
    (pool,) = context(auto_mode((CATEGORY, "In", ["g"]))).pools
    assert pool.gpu_pool == "every instance type it can launch has NVIDIA GPUs"


def test_an_auto_mode_gpu_name_requirement_selects_gpu_types() -> None:
    pool_doc = auto_mode(
        (CATEGORY, "In", ["g", "c"]), ("eks.amazonaws.com/instance-gpu-name", "In", ["l4"])
    )
    (pool,) = context(pool_doc).pools
    assert {it.name.split(".")[0] for it in pool.instance_types} == {"g6"}


def test_an_auto_mode_pool_launches_only_the_families_auto_mode_supports() -> None:
    # p3 is not in the user guide's list (p3dn is); t3.small is below Auto Mode's minimum size.
    (pool,) = context(auto_mode((FAMILY, "In", ["p3", "p3dn", "t3"]))).pools
    names = {it.name for it in pool.instance_types}
    assert names
    assert all(n.startswith(("p3dn.", "t3.")) for n in names)
    assert not {"t3.nano", "t3.micro", "t3.small"} & names


def test_np009_flags_an_auto_mode_family_that_does_not_exist() -> None:
    (np009,) = of("NP009", findings(auto_mode((FAMILY, "In", ["g4", "g4dn"]))))
    assert np009.severity == "warning"
    assert "eks.amazonaws.com/instance-family In g4: no instance type" in np009.message


def test_np009_knows_auto_mode_families() -> None:
    assert of("NP009", findings(auto_mode((FAMILY, "In", ["g5", "g6e", "inf2"])))) == []


def test_np012_names_auto_modes_key_for_a_karpenter_label() -> None:
    pool_doc = auto_mode(
        (CATEGORY, "In", ["g"]), ("karpenter.k8s.aws/instance-family", "In", ["g5"])
    )
    (np012,) = of("NP012", findings(pool_doc))
    assert np012.path == "spec.template.spec.requirements[1].key"
    assert "use eks.amazonaws.com/instance-family" in np012.message


def test_np012_says_a_karpenter_label_without_counterpart_has_none() -> None:
    pool_doc = auto_mode(
        (CATEGORY, "In", ["g"]), ("karpenter.k8s.aws/instance-tenancy", "In", ["default"])
    )
    (np012,) = of("NP012", findings(pool_doc))
    assert "EKS Auto Mode has no counterpart" in np012.message


def test_np012_says_auto_mode_runs_linux_only() -> None:
    windows = auto_mode((CATEGORY, "In", ["m"]), ("kubernetes.io/os", "In", ["windows"]))
    (np012,) = of("NP012", findings(windows))
    assert "runs Linux only" in np012.message
    linux = auto_mode((CATEGORY, "In", ["m"]), ("kubernetes.io/os", "In", ["linux"]))
    assert of("NP012", findings(linux)) == []


def test_np012_leaves_self_managed_pools_alone() -> None:
    assert of("NP012", findings(nodepool())) == []


def test_a_pod_selecting_auto_modes_gpu_label_lands_on_the_auto_mode_pool() -> None:
    trainer = pod(
        "t",
        gpu=1,
        tolerations=[GPU_TOLERATION],
        nodeSelector={"eks.amazonaws.com/instance-gpu-name": "l4"},
    )
    ctx = context(auto_mode((CATEGORY, "In", ["g"]), tainted=True), trainer)
    assert [p.name for p in ctx.pools_for_pod(ctx.pods[0].pod)] == ["auto"]


def test_a_pod_selecting_the_aws_providers_gpu_label_does_not_land_on_auto_mode() -> None:
    trainer = pod(
        "t",
        gpu=1,
        tolerations=[GPU_TOLERATION],
        nodeSelector={"karpenter.k8s.aws/instance-gpu-name": "l4"},
    )
    ctx = context(auto_mode((CATEGORY, "In", ["g"]), tainted=True), trainer)
    assert ctx.pools_for_pod(ctx.pods[0].pod) == []


def test_a_kwok_pool_gets_no_aws_or_gpu_finding() -> None:
    found = findings(kwok(), pod("web"))
    assert [f.rule for f in found if f.rule.startswith(("NP", "GPU", "DIS"))] == []
    assert context(kwok()).pools == []


def test_np009_on_an_auto_mode_family_offered_only_elsewhere_names_the_regions() -> None:
    # trn2 is an Auto Mode family, not offered in us-east-1: a region to change, not a typo.
    found = of("NP009", findings(auto_mode(("eks.amazonaws.com/instance-family", "In", ["trn2"]))))
    assert any("trn2 is not offered in us-east-1; it is in" in f.message for f in found), found
    assert not any("did you mean" in f.message for f in found)


def test_np009_on_a_family_auto_mode_never_launches_names_no_region() -> None:
    # p3 exists in other regions, but Auto Mode launches it nowhere.
    found = of("NP009", findings(auto_mode(("eks.amazonaws.com/instance-family", "In", ["p3"]))))
    assert found
    assert not any("is not offered in" in f.message for f in found), found
