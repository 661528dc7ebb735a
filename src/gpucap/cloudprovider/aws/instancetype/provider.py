"""The instance-type provider: a node class's instance types as the scheduler gets them, with
the insufficient-capacity marks applied to their offerings (aws/karpenter-provider-aws
`pkg/providers/instancetype/instancetype.go`: `List`, whose cache is keyed on the node class and
on the unavailable-offerings cache's sequence number, `pkg/cache/unavailableofferings.go`).

The types come from the catalog, resolved once per node-class settings (`catalog.py`); an
offering a mark in force covers is unavailable in the answer, the catalog's own types are never
changed (a type with such an offering is a new `InstanceType`). Held by the AWS cloud provider
(`aws/cloudprovider.py`), which decides which node class a NodePool gets and asks `list`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from gpucap.apis.ec2nodeclass import EC2NodeClass
from gpucap.cloudprovider.aws.cache import UnavailableOfferings
from gpucap.cloudprovider.aws.instancetype.catalog import Catalog
from gpucap.cloudprovider.aws.instancetype.settings import node_class_settings
from gpucap.runtime.clock import Clock
from gpucap.scheduling.instancetypes import InstanceType, Offering

__all__ = ["InstanceTypeProvider"]

# Answers kept per (node-class key, marks in force) before the table is cleared: a run sees a
# few node classes and a few mark sets at a time.
_MAX_KEPT = 64


@dataclass(slots=True)
class InstanceTypeProvider:
    """Karpenter AWS's instance-type provider (see the module docstring)."""

    catalog: Catalog
    clock: Clock
    unavailable: UnavailableOfferings
    _types: dict[tuple[str, tuple[str, ...]], tuple[InstanceType, ...]] = field(
        default_factory=dict
    )
    # `list`'s last answer per node-class key, with the class object, the marks' sequence
    # number and the span of the clock it holds for: from the instant it was built until the
    # first mark then in force expires (None: none was). The answer reads only the class and
    # the marks in force; with no mark made since (same sequence number) those are the same at
    # every instant of that span (`expire` drops only marks no lookup sees), so the answer is
    # too. Drift asks it for every NodeClaim every 5 minutes, provisioning every pass.
    _types_now: dict[
        str,
        tuple[EC2NodeClass, int, dt.datetime, dt.datetime | None, tuple[InstanceType, ...]],
    ] = field(default_factory=dict)

    def list(self, nodeclass: EC2NodeClass, key: str) -> tuple[InstanceType, ...]:
        """The node class's instance types with insufficient-capacity marks applied, kept under
        `key` (the class's name, or the cloud provider's key for its default class) and rebuilt
        only when the set of active marks changes, as Karpenter keys its cache on them: a mark
        is made or one in force expires (see `_types_now`)."""
        now = self.clock.now()
        last = self._types_now.get(key)
        if (
            last is not None
            and last[0] is nodeclass
            and last[1] == self.unavailable.seq
            and last[2] <= now
            and (last[3] is None or now < last[3])
        ):
            return last[4]
        result = self._list(nodeclass, key)
        self._types_now[key] = (
            nodeclass,
            self.unavailable.seq,
            now,
            self.unavailable.next_expiry(),
            result,
        )
        return result

    def _list(self, nodeclass: EC2NodeClass, name: str) -> tuple[InstanceType, ...]:
        self.unavailable.expire()
        marks = tuple(self.unavailable.active())
        key = (name, marks)
        cached = self._types.get(key)
        if cached is not None:
            return cached
        base = self.catalog.instance_types(node_class_settings(nodeclass))
        if not marks:
            # The catalog's own list: node classes with equal settings share it, and so do
            # the scheduler's tables built from it.
            self._types[key] = base
            return base
        out = []
        for it in base:
            offerings = tuple(
                Offering(
                    o.zone,
                    o.capacity_type,
                    o.price,
                    o.available
                    and not self.unavailable.is_unavailable(o.capacity_type, it.name, o.zone),
                )
                for o in it.offerings
            )
            if offerings == it.offerings:
                out.append(it)
            else:
                out.append(
                    InstanceType(it.name, it.requirements, it.capacity, it.allocatable, offerings)
                )
        result = tuple(out)
        if len(self._types) > _MAX_KEPT:
            self._types.clear()
        self._types[key] = result
        return result
