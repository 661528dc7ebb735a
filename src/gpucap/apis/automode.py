"""NodePools another Karpenter serves: EKS Auto Mode's and Karpenter's KWOK provider's labels.

A NodePool whose `nodeClassRef` is not the AWS provider's EC2NodeClass is not self-managed
Karpenter's to serve (`ListManaged`, kubernetes-sigs/karpenter `pkg/utils/nodepool/nodepool.go`).
Two such node classes are common in public manifests, and gpucap names who serves them:

- **EKS Auto Mode** (`eks.amazonaws.com/NodeClass`): EKS's managed Karpenter. Its instance
  types carry the AWS provider's instance labels under its own domain: `eks.amazonaws.com/
  instance-family` where self-managed Karpenter has `karpenter.k8s.aws/instance-family`, and so
  on (`AUTO_MODE_INSTANCE_LABELS`, the EKS user guide's "EKS Auto Mode Supported Labels",
  awsdocs/amazon-eks-user-guide `latest/ug/automode/create-node-pool.adoc` @ 0138560), and every
  node is labelled `eks.amazonaws.com/compute-type: auto`. It launches Linux only (no
  `kubernetes.io/os` choice, no `node.kubernetes.io/windows-build`), only the families the
  guide lists (`AUTO_MODE_FAMILIES`, `automode-learn-instances.adoc` @ 06faff1, "EKS Auto Mode
  supported instance reference"), and only types with more than 1 vCPU whose size is not nano,
  micro or small. Its nodes run the NVIDIA and Neuron device plugins themselves.
  `karpenter.k8s.aws/*` keys are self-managed Karpenter's: Auto Mode's types do not carry them
  (the user guide's own sample used them by mistake and was corrected, awsdocs PR 1250).
- **Karpenter's KWOK provider** (`karpenter.kwok.sh/KWOKNodeClass`, kubernetes-sigs/karpenter
  `kwok/`): fake nodes for tests and benchmarks. Its well-known labels are
  `karpenter.kwok.sh/instance-family|size|cpu|memory` (`kwok/apis/v1alpha1/labels.go`); its
  bundled instance types (`kwok/cloudprovider/instance_types.json`) have no GPUs.

Only the labels live here (`apis` is below the scheduler); the Auto Mode instance types are
built from the catalog in `cloudprovider/aws/automode.py`. Read by the NodePool readiness
(`controllers/nodepool/readiness.py`), lint and `plan`.
"""

from __future__ import annotations

from gpucap.apis.labels import AWS, CORE_WELL_KNOWN_LABELS, OS, WINDOWS_BUILD, ZONE_ID

__all__ = [
    "AUTO_MODE",
    "AUTO_MODE_COMPUTE_TYPE",
    "AUTO_MODE_FAMILIES",
    "AUTO_MODE_GROUP",
    "AUTO_MODE_INSTANCE_LABELS",
    "AUTO_MODE_UNSUPPORTED_LABELS",
    "AUTO_MODE_WELL_KNOWN_LABELS",
    "KWOK",
    "KWOK_GROUP",
    "KWOK_WELL_KNOWN_LABELS",
    "auto_mode_key",
    "served_by",
]

AUTO_MODE_GROUP = "eks.amazonaws.com"
KWOK_GROUP = "karpenter.kwok.sh"
# Who serves such a pool, in the words `plan` and lint print ("served by ...").
AUTO_MODE = "EKS Auto Mode"
KWOK = "the KWOK provider"

_AM = AUTO_MODE_GROUP + "/"
# Set on every Auto Mode node (user guide: "Identifies EKS Auto Mode managed nodes").
AUTO_MODE_COMPUTE_TYPE = _AM + "compute-type"

# Auto Mode's instance labels and the AWS provider's key each one mirrors (same values).
AUTO_MODE_INSTANCE_LABELS: dict[str, str] = {
    _AM + name: AWS + name
    for name in (
        "instance-hypervisor",
        "instance-encryption-in-transit-supported",
        "instance-category",
        "instance-generation",
        "instance-family",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-local-nvme",
    )
}

# Labels an Auto Mode pod or NodePool may require without a pool declaring them: the core
# ones (Linux only: no OS or Windows build choice) and Auto Mode's own.
AUTO_MODE_UNSUPPORTED_LABELS = frozenset({OS, WINDOWS_BUILD})
AUTO_MODE_WELL_KNOWN_LABELS = (
    (CORE_WELL_KNOWN_LABELS - AUTO_MODE_UNSUPPORTED_LABELS)
    | frozenset(AUTO_MODE_INSTANCE_LABELS)
    | {AUTO_MODE_COMPUTE_TYPE, ZONE_ID}
)

_KWOK = KWOK_GROUP + "/"
KWOK_WELL_KNOWN_LABELS = CORE_WELL_KNOWN_LABELS | frozenset(
    _KWOK + name for name in ("instance-family", "instance-size", "instance-cpu", "instance-memory")
)

# The families the user guide lists as supported (accelerated: p6-b200 ... trn2).
AUTO_MODE_FAMILIES = frozenset(
    # One string as the guide's table reads (by category), split into names.
    """
    c8id c8i c8i-flex c8gd c8gn c8g c8a c8gb c7a c7g c7gn c7gd c7i c7i-flex c6a c6g c6i c6gn
    c6id c6in c6gd c5 c5a c5d c5ad c5n c4
    m8id m8i m8i-flex m8a m8azn m8gn m8gb m8gd m8g m7i m7a m7g m7gd m7i-flex m6a m6i m6in m6g
    m6idn m6id m6gd m5 m5a m5ad m5n m5dn m5d m5zn m4
    r8id r8i r8i-flex r8gn r8gb r8gd r8g r8a r7a r7iz r7gd r7i r7g r6a r6i r6id r6in r6idn r6g
    r6gd r5 r5n r5a r5dn r5b r5ad r5d r4
    t4g t3 t3a t2
    z1d x8aedz x8g x8i x2gd
    i8ge i7i i8g i7ie i4g i4i i3 i3en is4gen d3 d3en im4gn
    p6-b200 p6-b300 p5 p5e p5en p4d p4de p3dn g7e g6 gr6 g6e g5g g5 g4dn g4ad inf2 inf1 trn1
    trn1n trn2
    hpc8a x2iezn x2iedn x2idn
    """.split()  # noqa: SIM905
)
# Sizes Auto Mode never launches (it also needs more than 1 vCPU).
AUTO_MODE_EXCLUDED_SIZES = frozenset({"nano", "micro", "small"})


def auto_mode_key(key: str) -> str:
    """The AWS provider's key an Auto Mode requirement key mirrors (itself when none)."""
    return AUTO_MODE_INSTANCE_LABELS.get(key, key)


def served_by(group: str, kind: str) -> str | None:
    """Who serves a NodePool whose nodeClassRef is `group`/`kind` when self-managed Karpenter
    with the AWS provider does not: EKS Auto Mode, the KWOK provider, else None."""
    if group == AUTO_MODE_GROUP and kind == "NodeClass":
        return AUTO_MODE
    if group == KWOK_GROUP and kind == "KWOKNodeClass":
        return KWOK
    return None
