"""SCHEMA rules: what the loader found (invalid manifests, placeholders left in, kinds gpucap
ignores). Their findings come from loading (`apis/serde.py`); the rules exist so they have ids,
docs, severities and can be selected or ignored like any other."""

from __future__ import annotations

from collections.abc import Iterable

from gpucap.lint.context import LintContext
from gpucap.lint.registry import Finding, Registry

__all__ = ["RULES"]

# This family's rules; `lint/rules/__init__.py` joins every family's into `ALL`.
RULES: Registry[LintContext] = Registry()


def _from_loader(_: LintContext) -> Iterable[Finding]:
    return ()


RULES.rule(
    "SCHEMA001",
    "invalid-manifest",
    "error",
    summary="A manifest violates Karpenter's CRD rules or the Kubernetes API (field by field).",
    why="The API server would reject it (or Karpenter would never mark the NodePool Ready), "
    "so nothing it describes would run.",
    fix="Correct the field named in the message; `gpucap validate` prints every violation.",
    source="Karpenter CRDs (karpenter.sh_nodepools.yaml, karpenter.k8s.aws_ec2nodeclasses.yaml) "
    "and runtime validation; Kubernetes API validation",
)(_from_loader)

RULES.rule(
    "SCHEMA002",
    "unsubstituted-placeholder",
    "info",
    summary="A `${VAR}` placeholder is still in the manifest (or a bare `$VAR` where no `$` "
    "belongs: Karpenter's kinds, an image, an env value, a field whose syntax it breaks).",
    why="envsubst fills it with an empty string when the variable is unset: `alias: al2023@` "
    "resolves no AMI and the NodePool never becomes Ready; applied unfilled, `id: ${AMI_ID}` "
    "or `namespace: $NAMESPACE` is refused, and an env value reaches the program as written "
    "(the kubelet expands only `$(VAR)`).",
    fix="Fill it with `gpucap render` (fails on a missing variable) before applying.",
    source="kubernetes/kubernetes pkg/kubelet/container (env expansion, expand.go)",
)(_from_loader)

RULES.rule(
    "SCHEMA003",
    "ignored-kind",
    "info",
    summary="The input has kinds gpucap does not use; they are not checked.",
    why="Only the kinds that decide capacity are modelled; anything else is reported once so "
    "nothing is silently dropped.",
    fix="Nothing to fix; remove the files from the lint input to silence it.",
    source="Karpenter docs, concepts (NodePools, NodeClasses, NodeOverlays: the kinds that "
    "decide capacity)",
)(_from_loader)
