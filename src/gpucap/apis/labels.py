"""Label keys Karpenter knows, and the Kubernetes syntax of label keys and values.

Sources: `kubernetes-sigs/karpenter:pkg/apis/v1/labels.go` (core well-known and restricted
labels, normalisation), `aws/karpenter-provider-aws:pkg/apis/v1/labels.go` (AWS labels) and the
label rules of the NodePool CRD shipped by the AWS provider
(`pkg/apis/crds/karpenter.sh_nodepools.yaml`). Used by validation (`apis/validation.py`), the
requirement algebra and the catalog.
"""

from __future__ import annotations

import re

__all__ = [
    "AWS_ALLOWED_KARPENTER_K8S_AWS_LABELS",
    "CAPACITY_RESERVATION_ID",
    "CAPACITY_RESERVATION_INTERRUPTIBLE",
    "CAPACITY_RESERVATION_TYPE",
    "CAPACITY_TYPE",
    "CAPACITY_TYPES",
    "CORE_WELL_KNOWN_LABELS",
    "NODEPOOL",
    "NORMALIZED_LABELS",
    "RESERVATION_KEYS",
    "WELL_KNOWN_LABELS",
    "is_label_value",
    "is_qualified_name",
    "label_value_problem",
    "normalize_label",
    "qualified_name_problem",
    "reservation_labels",
]

# ---- core (karpenter.sh) ------------------------------------------------------------------
NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INITIALIZED = "karpenter.sh/initialized"
REGISTERED = "karpenter.sh/registered"
DO_NOT_SYNC_TAINTS = "karpenter.sh/do-not-sync-taints"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
HOSTNAME = "kubernetes.io/hostname"

CAPACITY_TYPES = ("on-demand", "spot", "reserved")

CORE_WELL_KNOWN_LABELS = frozenset(
    {NODEPOOL, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE, WINDOWS_BUILD}
)

# ---- AWS (karpenter.k8s.aws) ----------------------------------------------------------------
AWS = "karpenter.k8s.aws/"
EC2NODECLASS = AWS + "ec2nodeclass"
INSTANCE_FAMILY = AWS + "instance-family"
INSTANCE_SIZE = AWS + "instance-size"
INSTANCE_CATEGORY = AWS + "instance-category"
INSTANCE_GENERATION = AWS + "instance-generation"
INSTANCE_CPU = AWS + "instance-cpu"
INSTANCE_MEMORY = AWS + "instance-memory"
INSTANCE_GPU_NAME = AWS + "instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = AWS + "instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = AWS + "instance-gpu-count"
INSTANCE_GPU_MEMORY = AWS + "instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = AWS + "instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = AWS + "instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = AWS + "instance-accelerator-count"
INSTANCE_TENANCY = AWS + "instance-tenancy"
ZONE_ID = "topology.k8s.aws/zone-id"
# A reserved node's reservation (aws `pkg/apis/v1/labels.go`): only reserved offerings and
# nodes have them (spot and on-demand offerings require them absent).
CAPACITY_RESERVATION_ID = AWS + "capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = AWS + "capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE = AWS + "capacity-reservation-interruptible"
RESERVATION_KEYS = (
    CAPACITY_RESERVATION_ID,
    CAPACITY_RESERVATION_TYPE,
    CAPACITY_RESERVATION_INTERRUPTIBLE,
)

# The karpenter.k8s.aws keys a NodePool may use (the CRD's "label domain karpenter.k8s.aws is
# restricted" rule lists exactly these).
AWS_ALLOWED_KARPENTER_K8S_AWS_LABELS = frozenset(
    AWS + k
    for k in (
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "capacity-reservation-type",
        "ec2nodeclass",
        "instance-accelerator-count",
        "instance-accelerator-manufacturer",
        "instance-accelerator-name",
        "instance-capability-flex",
        "instance-category",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-ebs-bandwidth",
        "instance-encryption-in-transit-supported",
        "instance-family",
        "instance-generation",
        "instance-gpu-count",
        "instance-gpu-manufacturer",
        "instance-gpu-memory",
        "instance-gpu-name",
        "instance-hypervisor",
        "instance-local-nvme",
        "instance-memory",
        "instance-network-bandwidth",
        "instance-size",
        "instance-tenancy",
        "nitro-sandbox",
        "placement-group-id",
        "placement-group-partition",
    )
)

# Well-known labels (core + AWS): pods may require them even when no NodePool mentions them.
WELL_KNOWN_LABELS = CORE_WELL_KNOWN_LABELS | AWS_ALLOWED_KARPENTER_K8S_AWS_LABELS | {ZONE_ID}

# Karpenter rewrites deprecated beta labels to their GA names before building requirements.
NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": REGION,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
}

# Keys whose values Karpenter knows; `In` with none of them valid is an error.
KNOWN_VALUES: dict[str, frozenset[str]] = {
    CAPACITY_TYPE: frozenset(CAPACITY_TYPES),
    INSTANCE_TENANCY: frozenset({"default", "dedicated"}),
}


def reservation_labels(
    reservation_id: str, reservation_type: str, interruptible: bool
) -> dict[str, str]:
    """The reservation labels of a node launched into reservation `reservation_id` (aws
    `instanceToNodeClaim`; `reservation_type` "" reads as `default`); none without one."""
    if not reservation_id:
        return {}
    return {
        CAPACITY_RESERVATION_ID: reservation_id,
        CAPACITY_RESERVATION_TYPE: reservation_type or "default",
        CAPACITY_RESERVATION_INTERRUPTIBLE: "true" if interruptible else "false",
    }


def normalize_label(key: str) -> str:
    return NORMALIZED_LABELS.get(key, key)


# ---- Kubernetes syntax (apimachinery/pkg/util/validation) -----------------------------------
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
# Matched with `fullmatch`: `$` would accept a trailing newline ("app\n").
_NAME_RE = re.compile(_NAME)
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
_LABEL_VALUE_RE = re.compile(f"({_NAME})?")


def qualified_name_problem(key: str) -> str | None:
    """Why `key` is not a Kubernetes qualified name (`[prefix/]name`), or None if it is."""
    if not key:
        return "name part must be non-empty"
    prefix, sep, name = key.rpartition("/")
    if sep:
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return (
                "prefix part must be a lowercase DNS subdomain "
                "(e.g. 'example.com', matching [a-z0-9]([-a-z0-9]*[a-z0-9])?(.[a-z0-9]...)*)"
            )
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME_RE.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def is_qualified_name(key: str) -> bool:
    return qualified_name_problem(key) is None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid label value (63 chars, alphanumerics, -_.), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE_RE.fullmatch(value):
        return (
            "must be empty or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def is_label_value(value: str) -> bool:
    return label_value_problem(value) is None


def restricted_label_problem(key: str) -> str | None:
    """The CRD rule a NodePool requirement or template label key breaks, or None.

    Mirrors the CEL rules of the AWS-shipped NodePool CRD, including its quirk of testing the
    domain with `endsWith` (so `foo-karpenter.sh/x` is restricted too).
    """
    domain = key.split("/", 1)[0]
    if key == NODEPOOL:
        return f'label "{NODEPOOL}" is restricted'
    if key == HOSTNAME:
        return f'label "{HOSTNAME}" is restricted'
    if key != CAPACITY_TYPE and domain.endswith("karpenter.sh"):
        return 'label domain "karpenter.sh" is restricted'
    if key not in AWS_ALLOWED_KARPENTER_K8S_AWS_LABELS and domain.endswith("karpenter.k8s.aws"):
        return 'label domain "karpenter.k8s.aws" is restricted'
    return None
