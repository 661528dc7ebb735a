"""The cloud provider seam: Karpenter's `CloudProvider` interface, its closed error tree, and a
fake for fast controller tests (`kubernetes-sigs/karpenter:pkg/cloudprovider/types.go`,
`pkg/cloudprovider/fake`).

Contract (every implementation; one test suite checks all of them, tests/cloudprovider):

- `create(node_claim)` launches one instance for a NodeClaim (its requirements, requests and
  node class) and returns the NodeClaim as launched: `status.providerID`, `imageID`,
  `capacity`/`allocatable` of the launched type (zero values removed), and labels for the
  instance type, zone and capacity type actually used. It raises
  `InsufficientCapacityError` when nothing can be launched right now (Karpenter deletes the
  NodeClaim and the pods are scheduled again), `NodeClassNotReadyError` when the node class is
  not ready, and `CreateError` for anything else (Karpenter retries).
- `delete(node_claim)` terminates its instance; `NodeClaimNotFoundError` once it is gone.
- `get(provider_id)` / `list()` return what exists (`NodeClaimNotFoundError` for an unknown id).
- `get_instance_types(nodepool)` returns the instance types the pool's node class may launch,
  with current offering availability (insufficient-capacity marks included) and prices.
- `is_drifted(node_claim)` returns a drift reason (e.g. `AMIDrift`) or "".
- `name()` is the provider's name (`aws`, `fake`).

Exceptions name the caller's next action:

    CloudProviderError
     ├── NodeClaimNotFoundError   the instance is gone: forget the NodeClaim
     ├── InsufficientCapacityError no capacity now: delete the NodeClaim, reschedule its pods
     ├── NodeClassNotReadyError    the node class cannot launch yet: delete, retry later
     └── CreateError               anything else: keep the NodeClaim, retry (launch timeout)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from gpucap.apis.core import Taint
from gpucap.apis.labels import CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL, RESERVATION_KEYS, ZONE
from gpucap.apis.meta import ObjectMeta
from gpucap.apis.nodepool import NodeClaim, NodeClaimStatus, NodePool
from gpucap.apis.quantity import Quantity, base_units
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements

__all__ = [
    "CloudProvider",
    "CloudProviderError",
    "CreateError",
    "FakeCloudProvider",
    "InsufficientCapacityError",
    "NodeClaimNotFoundError",
    "NodeClassNotReadyError",
    "launched_node_claim",
]


class CloudProviderError(Exception):
    """Base of the closed error tree (see the module docstring)."""


class NodeClaimNotFoundError(CloudProviderError):
    """The NodeClaim's instance does not exist (any more)."""


class InsufficientCapacityError(CloudProviderError):
    """No instance could be launched now. `str()` is Karpenter's message ("insufficient
    capacity, ..."); `reason` the part after it; `unmet_min_values` the minValues keys a launch
    could not meet (key -> values still offered)."""

    def __init__(self, reason: str, *, unmet_min_values: Mapping[str, int] | None = None) -> None:
        super().__init__(f"insufficient capacity, {reason}")
        self.reason = reason
        self.unmet_min_values: dict[str, int] = dict(sorted((unmet_min_values or {}).items()))


class NodeClassNotReadyError(CloudProviderError):
    """The node class exists but is not ready (e.g. its AMI does not resolve)."""


class CreateError(CloudProviderError):
    """A launch failed for a reason other than capacity; Karpenter keeps the NodeClaim and
    retries until the launch timeout. `reason` is a CamelCase condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@runtime_checkable
class CloudProvider(Protocol):
    """Karpenter's CloudProvider interface (see the module docstring for the contract)."""

    def create(self, node_claim: NodeClaim) -> NodeClaim: ...

    def delete(self, node_claim: NodeClaim) -> None: ...

    def get(self, provider_id: str) -> NodeClaim: ...

    def list(self) -> list[NodeClaim]: ...

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]: ...

    def is_drifted(self, node_claim: NodeClaim) -> str: ...

    def name(self) -> str: ...


def launched_node_claim(
    node_claim: NodeClaim,
    *,
    instance_type: InstanceType,
    zone: str,
    capacity_type: str,
    provider_id: str,
    image_id: str,
    extra_labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> NodeClaim:
    """The NodeClaim as Karpenter writes it back after a launch (aws `instanceToNodeClaim`,
    core `PopulateNodeClaimDetails`): the type's single-valued labels, the zone and capacity
    type used, then the NodeClaim's own labels on top; capacity and allocatable of the type with
    zero-valued resources removed. The reservation labels are not taken from the type (one
    reservation makes them single-valued on it, and a spot or on-demand launch of the type is
    in none): a reserved launch passes them in `extra_labels`."""
    labels: dict[str, str] = {}
    for key, req in sorted(instance_type.requirements.items()):
        if req.operator == "In" and len(req.values) == 1 and key not in RESERVATION_KEYS:
            labels[key] = next(iter(req.values))
    labels[ZONE] = zone
    labels[CAPACITY_TYPE] = capacity_type
    labels[INSTANCE_TYPE] = instance_type.name
    labels.update(extra_labels or {})
    labels.update(node_claim.metadata.labels)

    def nonzero(resources: Mapping[str, int]) -> dict[str, Quantity]:
        out = {}
        for k, v in sorted(resources.items()):
            if v:
                out[k] = Quantity.from_milli(v) if k == "cpu" else Quantity.from_value(v)
        return out

    status = NodeClaimStatus(
        provider_id=provider_id,
        image_id=image_id,
        capacity=nonzero(instance_type.capacity),
        allocatable=nonzero(instance_type.allocatable),
    )
    meta = node_claim.metadata.model_copy(
        update={
            "labels": labels,
            "annotations": {**node_claim.metadata.annotations, **(annotations or {})},
        }
    )
    return node_claim.model_copy(update={"metadata": meta, "status": status})


# ---- the fake ---------------------------------------------------------------------------------
@dataclass(slots=True)
class FakeCloudProvider:
    """An in-memory cloud provider for controller tests.

    Launches the cheapest allowed offering of the claim's instance types; records every call
    (`calls`); `fail_next(error)` makes the next `create` raise it once (scripted one-shot
    failures); `drifted` maps provider IDs to a drift reason.
    """

    instance_types: Sequence[InstanceType]
    calls: list[tuple[str, str]] = field(default_factory=list)
    created: dict[str, NodeClaim] = field(default_factory=dict)
    drifted: dict[str, str] = field(default_factory=dict)
    _failures: list[CloudProviderError] = field(default_factory=list)
    _next_id: int = 0

    def fail_next(self, *errors: CloudProviderError) -> None:
        self._failures.extend(errors)

    def name(self) -> str:
        return "fake"

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        self.calls.append(("get_instance_types", nodepool.name))
        return self.instance_types

    def create(self, node_claim: NodeClaim) -> NodeClaim:
        self.calls.append(("create", node_claim.name))
        if self._failures:
            raise self._failures.pop(0)
        reqs = Requirements.from_node_selector(node_claim.spec.requirements)
        requests = base_units(node_claim.spec.resources.requests)
        best: tuple[float, str, str, InstanceType, str] | None = None
        for it in self.instance_types:
            if not it.is_compatible(reqs) or not _fits(requests, it.allocatable):
                continue
            for o in it.offerings:
                if o.available and o.allowed_by(reqs):
                    candidate = (o.price, it.name, o.zone, it, o.capacity_type)
                    if best is None or candidate[:3] < best[:3]:
                        best = candidate
        if best is None:
            raise InsufficientCapacityError(
                "all requested instance types were unavailable during launch"
            )
        _, _, zone, it, capacity_type = best
        self._next_id += 1
        provider_id = f"fake:///{zone}/i-{self._next_id:017x}"
        launched = launched_node_claim(
            node_claim,
            instance_type=it,
            zone=zone,
            capacity_type=capacity_type,
            provider_id=provider_id,
            image_id="ami-fake",
        )
        self.created[provider_id] = launched
        return launched

    def delete(self, node_claim: NodeClaim) -> None:
        provider_id = node_claim.status.provider_id or ""
        self.calls.append(("delete", provider_id))
        if provider_id not in self.created:
            raise NodeClaimNotFoundError(f"no instance {provider_id!r}")
        del self.created[provider_id]

    def get(self, provider_id: str) -> NodeClaim:
        self.calls.append(("get", provider_id))
        try:
            return self.created[provider_id]
        except KeyError:
            raise NodeClaimNotFoundError(f"no instance {provider_id!r}") from None

    def list(self) -> list[NodeClaim]:
        self.calls.append(("list", ""))
        return [self.created[k] for k in sorted(self.created)]

    def is_drifted(self, node_claim: NodeClaim) -> str:
        return self.drifted.get(node_claim.status.provider_id or "", "")


def _fits(requests: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    return all(v <= allocatable.get(k, 0) for k, v in requests.items())


def node_claim_for(
    name: str,
    nodepool: str,
    requirements: Requirements,
    requests: Mapping[str, int],
    *,
    node_class: str = "default",
    taints: Iterable[Taint] = (),
    labels: Mapping[str, str] | None = None,
    extra: Callable[[dict[str, object]], None] | None = None,
) -> NodeClaim:
    """Build a NodeClaim manifest model from scheduling results (used by provisioning and tests)."""
    spec: dict[str, object] = {
        "requirements": [
            {"key": k, "operator": r.operator, "values": r.sorted_values()}
            if r.gte is None and r.lte is None
            else {
                "key": k,
                "operator": "Gte" if r.gte is not None else "Lte",
                "values": [str(r.gte if r.gte is not None else r.lte)],
            }
            for k, r in sorted(requirements.items())
        ],
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": node_class},
        "taints": [t.model_dump(by_alias=True, exclude_none=True) for t in taints],
        "resources": {
            "requests": {
                k: str(Quantity.from_milli(v) if k == "cpu" else Quantity.from_value(v))
                for k, v in sorted(requests.items())
            }
        },
    }
    if extra is not None:
        extra(spec)
    meta = ObjectMeta(name=name, labels={NODEPOOL: nodepool, **(labels or {})})
    return NodeClaim.model_validate({"metadata": meta.model_dump(by_alias=True), "spec": spec})
