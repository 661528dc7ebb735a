"""Karpenter APIs that Karpenter v1 does not serve, and kinds its API groups do not have, are
errors that name what replaces them or what was meant.

`kubectl apply` of a v1alpha5 Provisioner to a Karpenter v1 cluster fails (no such kind), so
gpucap rejects it with exit 2 rather than ignoring it as a kind it does not use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpucap.cli.main import app
from tests.builders import load, nodeclass, nodepool, to_yaml


def doc(api_version: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": {}}


@pytest.mark.parametrize(
    ("api_version", "kind", "replacement"),
    [
        ("karpenter.sh/v1alpha5", "Provisioner", "NodePool (karpenter.sh/v1)"),
        ("karpenter.sh/v1alpha5", "Machine", "NodeClaim (karpenter.sh/v1)"),
        ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate", "EC2NodeClass (karpenter.k8s.aws/v1)"),
    ],
)
def test_an_alpha_karpenter_kind_is_an_error_naming_its_v1_replacement(
    api_version: str, kind: str, replacement: str
) -> None:
    result = load(doc(api_version, kind))
    assert [str(e) for e in result.errors] == [
        f"test.yaml[0] {kind}/x: apiVersion: {kind} ({api_version}) is not served by Karpenter v1 "
        f"(v0.33 removed it): replace it with {replacement}; see Karpenter's migration guides "
        "https://karpenter.sh/v1.0/upgrading/v1beta1-migration/ and "
        "https://karpenter.sh/v1.0/upgrading/v1-migration/"
    ]
    assert result.warnings == []


@pytest.mark.parametrize(
    ("built", "api_version", "new_version"),
    [
        (nodepool(), "karpenter.sh/v1beta1", "karpenter.sh/v1"),
        (doc("karpenter.sh/v1", "NodeClaim"), "karpenter.sh/v1beta1", "karpenter.sh/v1"),
        (nodeclass(), "karpenter.k8s.aws/v1beta1", "karpenter.k8s.aws/v1"),
    ],
)
def test_a_v1beta1_karpenter_object_is_an_error_naming_the_v1_version(
    built: dict[str, Any], api_version: str, new_version: str
) -> None:
    kind, name = built["kind"], built["metadata"]["name"]
    result = load({**built, "apiVersion": api_version})
    assert [str(e) for e in result.errors] == [
        f"test.yaml[0] {kind}/{name}: apiVersion: {kind} {api_version} is not served by "
        f"Karpenter v1 (v1.1 removed the v1beta1 APIs): write it as {kind} {new_version}; see "
        "Karpenter's v1 migration guide https://karpenter.sh/v1.0/upgrading/v1-migration/"
    ]


def test_another_groups_provisioner_is_just_an_ignored_kind() -> None:
    result = load(doc("example.com/v1", "Provisioner"))
    assert result.errors == []
    assert [str(w) for w in result.warnings] == ["ignored kinds gpucap does not use: Provisioner"]


def test_an_unknown_version_of_a_kind_gpucap_reads_still_names_the_version_it_reads() -> None:
    result = load({**nodepool(), "apiVersion": "karpenter.sh/v2"})
    assert [str(e) for e in result.errors] == [
        "test.yaml[0] NodePool/gpu: apiVersion: 'karpenter.sh/v2' is not supported for NodePool; "
        "gpucap reads karpenter.sh/v1"
    ]


@pytest.mark.parametrize(
    ("api_version", "kind", "hint"),
    [
        ("karpenter.sh/v1", "Nodepool", "; did you mean NodePool?"),
        ("karpenter.sh/v1", "nodeclaim", "; did you mean NodeClaim?"),
        ("karpenter.k8s.aws/v1", "EC2NodeClas", "; did you mean EC2NodeClass?"),
        ("karpenter.k8s.aws/v1", "Ec2NodeClass", "; did you mean EC2NodeClass?"),
        ("karpenter.sh/v1", "Disruption", ""),
    ],
)
def test_a_kind_no_karpenter_crd_defines_is_an_error_naming_the_closest_kind(
    api_version: str, kind: str, hint: str
) -> None:
    group = api_version.partition("/")[0]
    served = "NodePool, NodeClaim, NodeOverlay" if group == "karpenter.sh" else "EC2NodeClass"
    result = load(doc(api_version, kind))
    assert [str(e) for e in result.errors] == [
        f"test.yaml[0] {kind}/x: kind: the API server has no kind {kind!r} in {group}: "
        f"Karpenter's CRDs serve {served}{hint}"
    ]
    assert result.warnings == []


def test_a_kind_of_another_group_is_still_ignored_with_a_warning() -> None:
    result = load(doc("eks.amazonaws.com/v1", "NodeClass"))
    assert result.errors == []
    assert [str(w) for w in result.warnings] == ["ignored kinds gpucap does not use: NodeClass"]


def test_validate_exits_2_on_a_misspelt_karpenter_kind(tmp_path: Path) -> None:
    f = tmp_path / "np.yaml"
    f.write_text(to_yaml({**nodepool(), "kind": "Nodepool"}), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(f)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {f}[0] Nodepool/gpu: kind: the API server has no kind 'Nodepool' in "
        "karpenter.sh: Karpenter's CRDs serve NodePool, NodeClaim, NodeOverlay; did you mean "
        "NodePool?"
    )
