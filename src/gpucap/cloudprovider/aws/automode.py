"""EKS Auto Mode's instance types, as gpucap models them from the catalog.

EKS Auto Mode (`eks.amazonaws.com/NodeClass`) is EKS's managed Karpenter; gpucap does not plan
its NodePools (`controllers/nodepool/readiness.py`), but lint checks their requirements and
`plan` says which pending pods such a pool would take. Both need the instance types Auto Mode
chooses from: the catalog's types of the families EKS lists as supported, with more than 1
vCPU and a size other than nano, micro or small (`apis/automode.py` has the sources), labelled
as Auto Mode labels them:

- every `karpenter.k8s.aws/instance-*` key that Auto Mode mirrors becomes its
  `eks.amazonaws.com/instance-*` key, with the same values; the other `karpenter.k8s.aws` keys
  (accelerator, tenancy, capability-flex, ...) are dropped: Auto Mode's types do not carry them,
  so a requirement on one selects nothing among them (lint's NP012 says so);
- `kubernetes.io/os` is `linux` only and `node.kubernetes.io/windows-build` is dropped (Auto
  Mode runs Linux only); `eks.amazonaws.com/compute-type` is `auto` on every type.

Capacity and allocatable are the catalog's for a Bottlerocket node class (Auto Mode's nodes run
a Bottlerocket-based OS); offerings and prices are the catalog's (Auto Mode's management fee is
not in them). Called by lint's context and `plan`'s composition root.
"""

from __future__ import annotations

from dataclasses import replace

from gpucap.apis.automode import (
    AUTO_MODE_COMPUTE_TYPE,
    AUTO_MODE_EXCLUDED_SIZES,
    AUTO_MODE_FAMILIES,
    AUTO_MODE_INSTANCE_LABELS,
    AUTO_MODE_UNSUPPORTED_LABELS,
)
from gpucap.apis.labels import AWS, INSTANCE_FAMILY, INSTANCE_SIZE, OS
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.settings import NodeClassSettings
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirement, Requirements

__all__ = ["AUTO_MODE_SETTINGS", "auto_mode_instance_types"]

# The node class settings Auto Mode's capacity is modelled with.
AUTO_MODE_SETTINGS = NodeClassSettings(ami_family="Bottlerocket")
# The AWS provider's key -> Auto Mode's key.
_RENAMED = {aws: auto for auto, aws in AUTO_MODE_INSTANCE_LABELS.items()}
_LINUX = Requirement.new(OS, "In", ["linux"])
_AUTO = Requirement.new(AUTO_MODE_COMPUTE_TYPE, "In", ["auto"])


def auto_mode_instance_types(catalog: Catalog) -> tuple[InstanceType, ...]:
    """The instance types an EKS Auto Mode NodePool chooses from in `catalog`'s region (see
    the module docstring), in the catalog's order. Built anew on each call: callers keep it
    for their run."""
    return tuple(
        _relabelled(it) for it in catalog.instance_types(AUTO_MODE_SETTINGS) if _supported(it)
    )


def _supported(it: InstanceType) -> bool:
    """A type Auto Mode launches: a listed family, more than 1 vCPU, not nano/micro/small."""
    family = it.requirements.get(INSTANCE_FAMILY)
    size = it.requirements.get(INSTANCE_SIZE)
    return (
        family is not None
        and bool(family.values & AUTO_MODE_FAMILIES)
        and size is not None
        and not size.values & AUTO_MODE_EXCLUDED_SIZES
        and it.capacity.get("cpu", 0) > 1000
    )


def _relabelled(it: InstanceType) -> InstanceType:
    """`it` with Auto Mode's labels instead of the AWS provider's."""
    reqs: list[Requirement] = [_AUTO]
    for key, req in it.requirements.items():
        if key in AUTO_MODE_UNSUPPORTED_LABELS:
            if key == OS:
                reqs.append(_LINUX)
            continue
        if key.startswith(AWS):
            renamed = _RENAMED.get(key)
            if renamed is not None:
                reqs.append(replace(req, key=renamed))
            continue
        reqs.append(req)
    return InstanceType(
        name=it.name,
        requirements=Requirements.of(*reqs),
        capacity=it.capacity,
        allocatable=it.allocatable,
        offerings=it.offerings,
    )
