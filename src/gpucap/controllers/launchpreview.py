"""What the provisioning loop of `plan` needs to show a launch without launching.

`plan` previews each new NodeClaim's launch (its launch column) instead of calling
`CloudProvider.create`; the decision itself is the cloud provider's (for AWS,
`cloudprovider/aws/instance/launch.py`: the launch filters, the capacity type and `fleet_pick`,
the same functions its `create` and the simulated EC2 run). `controllers/` may not import
`cloudprovider.aws`, so the loop is handed an object of this shape by its composition root
(`operator/plan.py`). Called by `controllers/provisioning/loop.py` and
`controllers/static.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from gpucap.apis.labels import reservation_labels as labels_of_reservation
from gpucap.scheduling.instancetypes import InstanceType
from gpucap.scheduling.requirements import Requirements

__all__ = ["LaunchPreviewer", "PreviewedLaunch", "reservation_labels"]


class PreviewedLaunch(Protocol):
    """What CreateFleet would launch (aws `launch.Launch` has this shape)."""

    @property
    def instance_type(self) -> str: ...

    @property
    def zone(self) -> str: ...

    @property
    def capacity_type(self) -> str: ...

    @property
    def price(self) -> float: ...

    @property
    def reservation_id(self) -> str: ...  # "" unless a reserved launch

    @property
    def reservation_type(self) -> str: ...

    @property
    def interruptible(self) -> bool: ...


def reservation_labels(launch: PreviewedLaunch) -> dict[str, str]:
    """The reservation labels a reserved launch gives its node (aws `instanceToNodeClaim`);
    none for spot and on-demand."""
    return labels_of_reservation(
        launch.reservation_id, launch.reservation_type, launch.interruptible
    )


class LaunchPreviewer(Protocol):
    """The provider's launch decision for a NodeClaim's options (aws `launch.LaunchPreview`).
    Both raise `cloudprovider.types.InsufficientCapacityError` when nothing can launch.
    `among`, when given, is the sequence `instance_types` were drawn from (the NodePool's
    instance types from the provider): a hint that lets the provider reuse what it derived
    from that sequence; the answer is the same without it."""

    def offered(
        self,
        instance_types: Iterable[InstanceType],
        requirements: Requirements,
        requests: Mapping[str, int] | None = None,
        *,
        among: Sequence[InstanceType] | None = None,
    ) -> list[InstanceType]: ...

    def launch(
        self,
        instance_types: Iterable[InstanceType],
        requirements: Requirements,
        requests: Mapping[str, int] | None = None,
        *,
        among: Sequence[InstanceType] | None = None,
    ) -> PreviewedLaunch: ...
