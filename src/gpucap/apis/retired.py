"""Karpenter APIs that Karpenter v1 does not serve, and what replaces each.

`kubectl apply` of a v1alpha5 Provisioner to a Karpenter v1 cluster fails (the CRD is gone), so
the loader rejects such an object with a message naming its replacement and Karpenter's
migration guides, rather than ignoring it as a kind gpucap does not use. Read from
aws/karpenter-provider-aws `website/content/en/preview/upgrading/upgrade-guide.md`
@ 1d927085dd81. A kind of Karpenter's API groups that no CRD defines (`kind: Nodepool`) fails
the same way ("no matches for kind"): `unknown_karpenter_kind` names the kind it most likely
meant. Called by `apis/serde.py`.
"""

from __future__ import annotations

from gpucap.apis.errors import closest_name

__all__ = ["retired_karpenter_api", "unknown_karpenter_kind"]

# The kinds Karpenter v1.14's CRDs serve, per API group (kubernetes-sigs/karpenter
# `pkg/apis/crds/`, aws/karpenter-provider-aws `pkg/apis/crds/`).
KARPENTER_KINDS = {
    "karpenter.sh": ("NodePool", "NodeClaim", "NodeOverlay"),
    "karpenter.k8s.aws": ("EC2NodeClass",),
}

# Karpenter kinds and API versions that Karpenter v1 does not serve -> what replaces them.
# Provisioner, Machine (karpenter.sh/v1alpha5) and AWSNodeTemplate (karpenter.k8s.aws/v1alpha1):
# "0.33.0+ only supports Karpenter v1beta1 APIs" (upgrade guide); v1beta1 NodePool, NodeClaim and
# EC2NodeClass: "Karpenter 1.1.0 drops the support for v1beta1 APIs" (same guide).
_ALPHA_KINDS = {
    ("karpenter.sh", "Provisioner"): "NodePool (karpenter.sh/v1)",
    ("karpenter.sh", "Machine"): "NodeClaim (karpenter.sh/v1)",
    ("karpenter.k8s.aws", "AWSNodeTemplate"): "EC2NodeClass (karpenter.k8s.aws/v1)",
}
_BETA_KINDS = {
    ("karpenter.sh", "NodePool"): "karpenter.sh/v1",
    ("karpenter.sh", "NodeClaim"): "karpenter.sh/v1",
    ("karpenter.k8s.aws", "EC2NodeClass"): "karpenter.k8s.aws/v1",
}
_V1BETA1_GUIDE = "https://karpenter.sh/v1.0/upgrading/v1beta1-migration/"
_V1_GUIDE = "https://karpenter.sh/v1.0/upgrading/v1-migration/"


def retired_karpenter_api(api_version: str, kind: str) -> str | None:
    """Why an object of a Karpenter API that Karpenter v1 does not serve is rejected, or None."""
    group, _, version = api_version.rpartition("/")
    replacement = _ALPHA_KINDS.get((group, kind))
    if replacement is not None:
        return (
            f"{kind} ({api_version}) is not served by Karpenter v1 (v0.33 removed it): replace it "
            f"with {replacement}; see Karpenter's migration guides {_V1BETA1_GUIDE} and {_V1_GUIDE}"
        )
    new_version = _BETA_KINDS.get((group, kind))
    if new_version is not None and version == "v1beta1":
        return (
            f"{kind} {api_version} is not served by Karpenter v1 (v1.1 removed the v1beta1 APIs): "
            f"write it as {kind} {new_version}; see Karpenter's v1 migration guide {_V1_GUIDE}"
        )
    return None


def unknown_karpenter_kind(api_version: str, kind: str) -> str | None:
    """Why an object of a Karpenter API group whose kind no Karpenter CRD defines is refused,
    with the served kind it most likely meant; None for a served kind or another group (those
    are kinds gpucap does not use, a warning)."""
    group = api_version.rpartition("/")[0]
    served = KARPENTER_KINDS.get(group)
    if served is None or kind in served:
        return None
    hint = closest_name(kind, served)
    return (
        f"the API server has no kind {kind!r} in {group}: Karpenter's CRDs serve "
        f"{', '.join(served)}" + (f"; did you mean {hint}?" if hint else "")
    )
